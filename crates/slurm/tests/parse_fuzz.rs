//! The queue parser against any bytes a Slurm user can put in the fields
//! they set (name, comment, output path, working directory, command):
//! written as Slurm's JSON writer (json-c) writes them (quotes, backslashes,
//! slashes and control bytes escaped, bytes above 0x7f raw), no job's text
//! ever breaks the reading, adds or removes a job, or changes any field of
//! any job but its own; and the same for the tagged `squeue --Format`
//! reading serve uses (raw bytes, each field ended by an unguessable tag).

use cosched_slurm::parse::{parse_queue_json, JobState, QueueFormat, HELD};
use proptest::prelude::*;

/// A JSON string as json-c prints it: bytes, not necessarily UTF-8.
fn json_c_string(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![b'"'];
    for &b in bytes {
        match b {
            b'"' => out.extend(b"\\\""),
            b'\\' => out.extend(b"\\\\"),
            b'/' => out.extend(b"\\/"),
            b'\n' => out.extend(b"\\n"),
            b'\r' => out.extend(b"\\r"),
            b'\t' => out.extend(b"\\t"),
            0x08 => out.extend(b"\\b"),
            0x0c => out.extend(b"\\f"),
            0..=0x1f => out.extend(format!("\\u{:04x}", b).as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}

#[derive(Debug, Clone)]
struct Fields {
    name: Vec<u8>,
    comment: Vec<u8>,
    stdout: Vec<u8>,
    work_dir: Vec<u8>,
    command: Vec<u8>,
}

fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    // Any bytes (no NUL: a C string), biased towards the ones that have
    // broken Slurm parsers: separators, newlines, quotes, `=`, `;`, braces.
    let tricky = prop::sample::select(vec![b'\n', 0x1f, 0x1e, b'"', b'\\', b'=', b';', b'{', b'}', b'[', b']', b',', b' ', 0xff, 0xc3]);
    prop::collection::vec(prop_oneof![1u8..=255, tricky], 0..60)
}

fn fields() -> impl Strategy<Value = Fields> {
    (hostile_bytes(), hostile_bytes(), hostile_bytes(), hostile_bytes(), hostile_bytes())
        .prop_map(|(name, comment, stdout, work_dir, command)| Fields { name, comment, stdout, work_dir, command })
}

fn job_json(id: u64, f: &Fields, admin: &str, priority: u64) -> Vec<u8> {
    let mut out = format!(
        "{{\"job_id\": {id}, \"partition\": \"cosched\", \"job_state\": \"PENDING\", \"state_reason\": \"JobHeldUser\", \
         \"priority\": {priority}, \"cpus\": {}, \"nodes\": \"\", \"required_nodes\": \"c{id}\", \"submit_time\": {}, \
         \"start_time\": 0, \"end_time\": 0, \"user_id\": 1000, \"dependency\": \"\", \"admin_comment\": ",
        id % 4 + 1,
        1_700_000_000 + id
    )
    .into_bytes();
    out.extend(json_c_string(admin.as_bytes()));
    for (k, v) in [("name", &f.name), ("comment", &f.comment), ("standard_output", &f.stdout), ("current_working_directory", &f.work_dir), ("command", &f.command)] {
        out.extend(format!(", \"{k}\": ").as_bytes());
        out.extend(json_c_string(v));
    }
    out.push(b'}');
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_bytes_in_a_users_fields_break_the_reading_or_touch_another_job(jobs in prop::collection::vec(fields(), 1..8)) {
        let mut doc = b"{\"meta\": {}, \"errors\": [], \"jobs\": [".to_vec();
        for (k, f) in jobs.iter().enumerate() {
            if k > 0 {
                doc.extend(b", ");
            }
            let admin = if k % 2 == 0 { HELD.to_string() } else { format!("cosched;policy=noplan;node=c{k}") };
            doc.extend(job_json(k as u64 + 1, f, &admin, (k % 2) as u64 * 100));
        }
        doc.extend(b"]}");
        // As cosched reads a command's output: invalid UTF-8 replaced.
        let text = String::from_utf8_lossy(&doc);
        let (read, skipped) = parse_queue_json(&text).unwrap();
        prop_assert!(skipped.is_empty(), "{skipped:?}");
        prop_assert_eq!(read.len(), jobs.len());
        for (k, (j, f)) in read.iter().zip(&jobs).enumerate() {
            let id = k as u64 + 1;
            prop_assert_eq!(j.id, id);
            prop_assert_eq!(&j.partition, "cosched");
            prop_assert_eq!(&j.state, &JobState::Pending);
            prop_assert_eq!(j.priority, (k % 2) as u64 * 100);
            prop_assert_eq!(j.cpus as u64, id % 4 + 1);
            prop_assert_eq!(&j.requested, &vec![format!("c{id}")]);
            prop_assert_eq!(j.submit, Some(1_700_000_000 + id as i64));
            let admin = if k % 2 == 0 { HELD.to_string() } else { format!("cosched;policy=noplan;node=c{k}") };
            prop_assert_eq!(&j.admin_comment, &admin);
            prop_assert_eq!(j.held_for_cosched(), k % 2 == 0);
            let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            prop_assert_eq!(&j.name, &lossy(&f.name));
            prop_assert_eq!(&j.comment, &lossy(&f.comment));
            prop_assert_eq!(&j.stdout, &lossy(&f.stdout));
            prop_assert_eq!(&j.work_dir, &lossy(&f.work_dir));
            prop_assert_eq!(&j.command, &lossy(&f.command));
        }
    }
}

/// One record as `squeue --Format` prints it with `f`'s tags: the user's
/// bytes raw, as squeue prints them.
fn tagged_record(f: &QueueFormat, id: u64, u: &Fields, admin: &str, priority: u64) -> Vec<u8> {
    let fixed = [
        id.to_string(),
        "cosched".into(),
        "PENDING".into(),
        "JobHeldUser".into(),
        priority.to_string(),
        (id % 4 + 1).to_string(),
        String::new(),
        format!("c{id}"),
        "2026-11-27T15:43:00".into(),
        "N/A".into(),
        "N/A".into(),
        "0".into(),
        "(null)".into(),
        "1000".into(),
    ];
    let mut out = Vec::new();
    let mut k = 0;
    let mut field = |out: &mut Vec<u8>, v: &[u8]| {
        out.extend(v);
        out.extend(f.tag(k).as_bytes());
        k += 1;
    };
    for v in &fixed {
        field(&mut out, v.as_bytes());
    }
    for v in [&u.name, &u.comment, &admin.as_bytes().to_vec(), &u.stdout, &u.work_dir, &u.command] {
        field(&mut out, v);
    }
    for v in ["root", "(null)", "normal", "1", "1", "cpu=1,mem=100M,node=1,billing=1", "OK", "N/A", "0:00", "100M"] {
        field(&mut out, v.as_bytes());
    }
    out.push(b'\n');
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_bytes_in_a_users_fields_move_a_field_or_a_job_of_the_tagged_queue(jobs in prop::collection::vec(fields(), 1..8), nonce in "[0-9a-f]{32}") {
        let f = QueueFormat::new(&nonce);
        let mut out = Vec::new();
        for (k, u) in jobs.iter().enumerate() {
            let admin = if k % 2 == 0 { HELD.to_string() } else { format!("cosched;policy=noplan;node=c{k}") };
            out.extend(tagged_record(&f, k as u64 + 1, u, &admin, (k % 2) as u64 * 100));
        }
        let text = String::from_utf8_lossy(&out);
        let (read, skipped) = f.parse(&text).unwrap();
        prop_assert!(skipped.is_empty(), "{skipped:?}");
        prop_assert_eq!(read.len(), jobs.len());
        for (k, (j, u)) in read.iter().zip(&jobs).enumerate() {
            let id = k as u64 + 1;
            prop_assert_eq!(j.id, id);
            prop_assert_eq!(j.priority, (k % 2) as u64 * 100);
            prop_assert_eq!(j.cpus as u64, id % 4 + 1);
            prop_assert_eq!(&j.requested, &vec![format!("c{id}")]);
            prop_assert_eq!(j.held_for_cosched(), k % 2 == 0);
            // `(null)` is how squeue prints an unset text: read as empty.
            let lossy = |b: &[u8]| { let s = String::from_utf8_lossy(b).into_owned(); if s == "(null)" { String::new() } else { s } };
            prop_assert_eq!(&j.name, &lossy(&u.name));
            prop_assert_eq!(&j.comment, &lossy(&u.comment));
            prop_assert_eq!(&j.stdout, &lossy(&u.stdout));
            prop_assert_eq!(&j.work_dir, &lossy(&u.work_dir));
            prop_assert_eq!(&j.command, &lossy(&u.command));
        }
    }
}
