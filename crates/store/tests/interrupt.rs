//! A process killed while it writes leaves a consistent database: every
//! stored run has all its samples, and the campaign can be resumed.
//!
//! The writer is this test binary run again with `WRITER_ENV` set, so the
//! kill hits a real process mid-transaction, not a dropped value.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cosched_store::{CampaignKind, CampaignStatus, Store};

const WRITER_ENV: &str = "COSCHED_STORE_TEST_WRITER_DB";
const SAMPLES_PER_RUN: u64 = 400;

/// Writes solo runs until killed (or a bound is reached). A no-op unless run
/// as the writer child.
#[test]
fn writer_child() {
    let Some(path) = std::env::var_os(WRITER_ENV) else { return };
    let mut s = Store::open(Path::new(&path)).unwrap();
    let id = s.begin_campaign(CampaignKind::Profile, "w", "{}", &prov(1)).unwrap();
    let samples: Vec<_> = (0..SAMPLES_PER_RUN).map(sample).collect();
    for r in 0..100_000 {
        s.add_solo_run(id, &solo("triad", r), &samples).unwrap();
    }
}

fn stored_runs(path: &Path) -> u64 {
    let Ok(conn) = rusqlite::Connection::open(path) else { return 0 };
    conn.query_row("SELECT count(*) FROM solo_runs", [], |r| r.get(0)).unwrap_or(0)
}

#[test]
fn a_writer_killed_mid_campaign_leaves_whole_runs_and_a_resumable_campaign() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("killed.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--test-threads=1", "--quiet"])
        .env(WRITER_ENV, &path)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Not a timing threshold: a bound on how long to wait for the child to
    // store a few runs, so a broken child fails the test instead of hanging it.
    let give_up = Instant::now() + Duration::from_secs(120);
    while stored_runs(&path) < 5 {
        assert!(Instant::now() < give_up, "the writer stored nothing");
        assert!(child.try_wait().unwrap().is_none(), "the writer ended on its own");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let mut s = Store::open(&path).unwrap();
    let (id, status) = s.find_campaign(CampaignKind::Profile, "w", "{}").unwrap().unwrap();
    assert_eq!(status, CampaignStatus::Running, "a killed process leaves its campaign running");
    let runs = s.solo_runs(id).unwrap();
    assert!(runs.len() >= 5);
    for (i, (run, rec)) in runs.iter().enumerate() {
        assert_eq!(rec.repeat as usize, i, "runs are stored in order, none missing");
        assert_eq!(s.samples(*run).unwrap().len() as u64, SAMPLES_PER_RUN, "run {i} lost samples");
    }
    let counts = s.table_counts().unwrap();
    let rows = |t: &str| counts.iter().find(|c| c.table == t).unwrap().rows;
    assert_eq!(rows("samples"), runs.len() as u64 * SAMPLES_PER_RUN, "no samples without their run");

    s.reopen_campaign(id).unwrap();
    s.add_solo_run(id, &solo("triad", runs.len() as u32), &[sample(0)]).unwrap();
    s.finish_campaign(id, CampaignStatus::Done).unwrap();
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

const JOURNAL_ENV: &str = "COSCHED_STORE_TEST_JOURNAL_DB";

/// Journals a run's job starts and ends as `cosched run` does while its
/// jobs run (commits not synced to disk), saying on stdout what each
/// returned commit holds, until killed. A no-op unless run as the child.
#[test]
fn journal_writer_child() {
    use cosched_model::run::JobStatus;
    use cosched_store::{Durability, RunJobEnd, RunJobStart};
    use std::io::Write;
    let Some(path) = std::env::var_os(JOURNAL_ENV) else { return };
    let mut s = Store::open(Path::new(&path)).unwrap();
    let run = s.begin_run("series", "w", "exclusive", 0, "{}", &prov(1)).unwrap();
    s.set_durability(Durability::Process).unwrap();
    let mut out = std::io::stdout();
    for i in 0..100_000u32 {
        let start = RunJobStart {
            job: format!("j{i}"),
            job_index: i,
            attempt: 0,
            arrival_s: 0.0,
            start_s: i as f64,
            cpus: vec![0],
            mems: vec![],
            pgid: 100,
            beside: vec![],
            predicted: 1.0,
            solo_s: None,
        };
        s.run_job_started(run, &start).unwrap();
        writeln!(out, "started {i}").unwrap();
        out.flush().unwrap();
        s.run_job_ended(run, i, 0, &RunJobEnd { end_s: i as f64 + 0.5, status: JobStatus::Ok, work_s: None, slowdown: None }).unwrap();
        writeln!(out, "ended {i}").unwrap();
        out.flush().unwrap();
    }
}

/// A runner journals with commits that wait for the log's write, not the
/// disk (`Durability::Process`); a SIGKILL must still find every start
/// and end whose commit returned, and `resume_run` must end the one
/// attempt left running.
#[test]
fn a_journal_written_without_syncs_keeps_every_returned_start_and_end_through_a_sigkill() {
    use std::io::BufRead;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("journal.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "journal_writer_child", "--test-threads=1", "--quiet"])
        .env(JOURNAL_ENV, &path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut started, mut ended) = (0u32, 0u32);
    // Enough commits that the kill lands mid-stream, not before the first.
    while ended < 200 {
        let l = lines.next().expect("the writer ended on its own").unwrap();
        if let Some(n) = l.strip_prefix("started ") {
            started = n.parse::<u32>().unwrap() + 1;
        } else if let Some(n) = l.strip_prefix("ended ") {
            ended = n.parse::<u32>().unwrap() + 1;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // What the child printed after the kill was never read: count only what it said before.
    let mut s = Store::open(&path).unwrap();
    let run = s.runs().unwrap()[0].id;
    let jobs = s.run_jobs(run).unwrap();
    assert!(jobs.len() as u32 >= started, "{} attempts stored, {started} reported started", jobs.len());
    for j in &jobs[..ended as usize] {
        assert!(j.end.is_some(), "job {} reported ended has no end", j.start.job);
    }
    let open = jobs.iter().filter(|j| j.end.is_none()).count();
    assert!(open <= 1, "{open} attempts left running; at most the one the kill interrupted");
    assert_eq!(s.resume_run(run, 1e6).unwrap(), open);
    assert!(s.run_jobs(run).unwrap().iter().all(|j| j.end.is_some()));
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}
