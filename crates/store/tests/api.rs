//! The typed API: what goes in comes out equal, bad records write nothing,
//! campaigns follow their life cycle.

mod common;

use common::*;
use cosched_model::placement::SharingLevel;
use cosched_store::{CampaignKind, CampaignStatus, ProfileRecord, Store, StoreError, DB_FILE};

fn store() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join("nested/dir").join(DB_FILE)).unwrap();
    (d, s)
}

fn count(s: &Store, table: &str) -> u64 {
    s.table_counts().unwrap().into_iter().find(|t| t.table == table).unwrap().rows
}

#[test]
fn calibrations_round_trip_exactly_and_the_latest_of_a_key_wins() {
    let (_d, mut s) = store();
    assert!(s.calibrations().unwrap().is_empty());
    let (a1, b, a2) = (cal("stream/t1", 1.0), cal("compute/t1", 2.0), cal("stream/t1", 3.0));
    s.put_calibrations(&[a1.clone(), b.clone()]).unwrap();
    s.put_calibrations(std::slice::from_ref(&a2)).unwrap();
    let all = s.calibrations().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all["stream/t1"], a2);
    assert_eq!(all["compute/t1"], b);
    assert_eq!(s.calibration("compute/t1").unwrap(), Some(b));
    assert_eq!(s.calibration("nope").unwrap(), None);
    assert_eq!(s.calibration_history("stream/t1").unwrap(), vec![a1, a2], "history is kept, oldest first");
}

#[test]
fn a_calibration_batch_with_one_bad_rate_stores_none_of_the_batch() {
    let (_d, mut s) = store();
    let mut bad = cal("compute/t1", 2.0);
    bad.rate.median = f64::NAN;
    let e = s.put_calibrations(&[cal("stream/t1", 1.0), bad]).unwrap_err();
    assert!(matches!(e, StoreError::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("compute/t1"), "{e}");
    assert_eq!(count(&s, "calibrations"), 0);
    assert_eq!(count(&s, "provenance"), 0);
}

#[test]
fn a_campaign_is_found_by_its_parameters_whatever_their_key_order() {
    let (_d, mut s) = store();
    let id = s
        .begin_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"repeats": 5, "target": {"b": 1, "a": 2}}"#, &prov(10))
        .unwrap();
    let found = s.find_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"target":{"a":2,"b":1},"repeats":5}"#).unwrap();
    assert_eq!(found, Some((id, CampaignStatus::Running)));
    assert_eq!(s.find_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"repeats": 6}"#).unwrap(), None);
    assert_eq!(s.find_campaign(CampaignKind::Probe, "mixed.toml", r#"{"repeats": 5}"#).unwrap(), None);
    let e = s.begin_campaign(CampaignKind::Pairs, "w", "{not json", &prov(10)).unwrap_err();
    assert!(e.to_string().contains("not JSON"), "{e}");
    assert_eq!(count(&s, "campaigns"), 1);
}

#[test]
fn the_latest_matching_campaign_is_the_one_found() {
    let (_d, mut s) = store();
    let first = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(1)).unwrap();
    s.finish_campaign(first, CampaignStatus::Done).unwrap();
    let second = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(2)).unwrap();
    assert_eq!(s.find_campaign(CampaignKind::Pairs, "w", "{}").unwrap(), Some((second, CampaignStatus::Running)));
}

#[test]
fn pair_runs_round_trip_and_a_campaign_counts_them() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    let runs = [pair("stream", "stream", 0), pair("stream", "stream", 1), pair("compute", "stream", 0)];
    for r in &runs {
        s.add_pair_run(id, r).unwrap();
    }
    assert_eq!(s.pair_runs(id).unwrap(), runs.to_vec());
    let c = s.campaign(id).unwrap().unwrap();
    assert_eq!((c.runs, c.status, c.finished_unix), (3, CampaignStatus::Running, None));
    assert_eq!(c.provenance, prov(10));
    assert_eq!(runs[0].fg_slowdown(), 0.5 / (1.0 / 3.0));
}

#[test]
fn runs_are_refused_once_a_campaign_finished_until_it_is_reopened() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    s.add_pair_run(id, &pair("a", "b", 0)).unwrap();
    s.finish_campaign(id, CampaignStatus::Interrupted).unwrap();
    let c = s.campaign(id).unwrap().unwrap();
    assert_eq!(c.status, CampaignStatus::Interrupted);
    assert!(c.finished_unix.is_some());
    let e = s.add_pair_run(id, &pair("a", "b", 1)).unwrap_err();
    assert!(matches!(e, StoreError::NotRunning { status: CampaignStatus::Interrupted, .. }), "{e}");
    assert_eq!(s.reopen_campaign(id).unwrap(), CampaignStatus::Interrupted);
    s.add_pair_run(id, &pair("a", "b", 1)).unwrap();
    s.finish_campaign(id, CampaignStatus::Done).unwrap();
    assert_eq!(s.campaign(id).unwrap().unwrap().runs, 2);
    assert!(s.finish_campaign(id, CampaignStatus::Running).is_err(), "running is not an end");
}

#[test]
fn a_run_of_the_wrong_kind_or_of_no_campaign_is_refused() {
    let (_d, mut s) = store();
    let probe_id = s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov(10)).unwrap();
    let e = s.add_pair_run(probe_id, &pair("a", "b", 0)).unwrap_err();
    assert!(matches!(e, StoreError::WrongKind { kind: CampaignKind::Probe, .. }), "{e}");
    let e = s.add_solo_run(probe_id, &solo("a", 0), &[]).unwrap_err();
    assert!(matches!(e, StoreError::WrongKind { .. }), "{e}");
    let e = s.add_probe_point(cosched_store::CampaignId(999), &probe(64, 0)).unwrap_err();
    assert!(matches!(e, StoreError::NoSuchCampaign(_)), "{e}");
    assert!(matches!(s.reopen_campaign(cosched_store::CampaignId(999)), Err(StoreError::NoSuchCampaign(_))));
    assert_eq!(count(&s, "pair_runs") + count(&s, "solo_runs") + count(&s, "probe_points"), 0);
}

#[test]
fn bad_pair_runs_and_repeats_stored_twice_write_nothing() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    let mut zero = pair("a", "b", 0);
    zero.fg_solo_s = 0.0;
    assert!(s.add_pair_run(id, &zero).unwrap_err().to_string().contains("fg_solo_s"));
    let mut nan = pair("a", "b", 0);
    nan.bg_corun_s = f64::NAN;
    assert!(s.add_pair_run(id, &nan).is_err());
    let mut unnamed = pair("a", "b", 0);
    unnamed.fg_job = " ".into();
    assert!(s.add_pair_run(id, &unnamed).is_err());
    assert_eq!(count(&s, "pair_runs"), 0);
    s.add_pair_run(id, &pair("a", "b", 0)).unwrap();
    let e = s.add_pair_run(id, &pair("a", "b", 0)).unwrap_err();
    assert!(e.to_string().contains("repeat 0"), "{e}");
    assert_eq!(count(&s, "pair_runs"), 1);
}

#[test]
fn a_solo_run_and_its_samples_round_trip_and_are_stored_all_or_nothing() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Profile, "w", "{\"interval_s\": 1}", &prov(10)).unwrap();
    let samples: Vec<_> = (0..50).map(sample).collect();
    let run = s.add_solo_run(id, &solo("triad", 0), &samples).unwrap();
    assert_eq!(s.solo_runs(id).unwrap(), vec![(run, solo("triad", 0))]);
    assert_eq!(s.samples(run).unwrap(), samples);

    let mut bad = samples.clone();
    bad[49].host_load = f64::INFINITY;
    let e = s.add_solo_run(id, &solo("triad", 1), &bad).unwrap_err();
    assert!(e.to_string().contains("sample 49"), "{e}");
    let mut no_exit = solo("triad", 1);
    no_exit.exit_code = None;
    assert!(s.add_solo_run(id, &no_exit, &samples).is_err());
    let mut nan_counter = solo("triad", 1);
    nan_counter.counters.insert("cycles".into(), f64::NAN);
    assert!(s.add_solo_run(id, &nan_counter, &samples).unwrap_err().to_string().contains("cycles"));
    assert_eq!((count(&s, "solo_runs"), count(&s, "samples")), (1, 50));
}

fn job_profile(solo_s: f64) -> cosched_model::profile::JobProfile {
    use cosched_model::profile::{JobProfile, ProfileSummary, SyscallSource};
    let s = ProfileSummary {
        wall_s: solo_s,
        host_load_mean: 0.98,
        host_load_peak: 0.98,
        cores_used: 0.98,
        syscall_rate: None,
        syscall_count: None,
        syscall_source: SyscallSource::ProcSyscrSyscw,
        vol_ctx_rate: 0.0,
        invol_ctx_rate: 0.0,
        read_bps: 0.0,
        write_bps: 0.0,
        max_rss_kib: 1,
        fault_rate: 0.0,
        counters: Default::default(),
        stall: None,
        collateral: None,
    };
    JobProfile::from_runs(&[(solo_s, s)], "process", None, Vec::new()).unwrap()
}

#[test]
fn a_profile_is_replaced_per_job_and_only_finished_campaigns_give_the_latest() {
    let (_d, mut s) = store();
    let program = "kernel stream threads=1";
    let profile =
        |median: f64| ProfileRecord { job: "triad".into(), program: program.into(), summary: job_profile(median) };
    let done = s.begin_campaign(CampaignKind::Profile, "w", "{}", &prov(1)).unwrap();
    s.put_profile(done, &profile(1.0)).unwrap();
    s.put_profile(done, &profile(2.0)).unwrap();
    assert_eq!(s.profiles(done).unwrap(), vec![profile(2.0)]);
    assert_eq!(s.latest_job_profile(program).unwrap(), None, "the campaign has not finished");
    s.finish_campaign(done, CampaignStatus::Done).unwrap();
    let partial = s.begin_campaign(CampaignKind::Profile, "w", "{}", &prov(2)).unwrap();
    s.put_profile(partial, &profile(9.0)).unwrap();
    s.finish_campaign(partial, CampaignStatus::Interrupted).unwrap();
    assert_eq!(s.latest_job_profile(program).unwrap(), Some((done, profile(2.0))));
}

#[test]
fn probe_points_round_trip() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov(10)).unwrap();
    let points = [probe(64, 0), probe(64, 1), probe(65_536, 0)];
    for p in &points {
        s.add_probe_point(id, p).unwrap();
    }
    assert_eq!(s.probe_points(id).unwrap(), points.to_vec());
    assert_eq!(points[2].job_slowdown(), (0.3 + 0.65536) / 0.3);
    let mut bad = probe(128, 0);
    bad.job_solo_s = -1.0;
    assert!(s.add_probe_point(id, &bad).is_err());
    assert_eq!(count(&s, "probe_points"), 3);
}

#[test]
fn identical_provenance_is_stored_once_and_a_64_bit_seed_survives() {
    let (_d, mut s) = store();
    let a = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov(10)).unwrap();
    s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov(11)).unwrap();
    assert_eq!(count(&s, "provenance"), 2);
    assert_eq!(s.campaign(a).unwrap().unwrap().provenance.seed, Some(u64::MAX));
    let no_seed = cosched_model::provenance::Provenance { seed: None, ..prov(10) };
    s.begin_campaign(CampaignKind::Probe, "w", "{}", &no_seed).unwrap();
    s.begin_campaign(CampaignKind::Probe, "w", "{}", &no_seed).unwrap();
    assert_eq!(count(&s, "provenance"), 3, "a missing seed matches a missing seed");
}

#[test]
fn info_lists_every_table_and_every_campaign() {
    let (_d, mut s) = store();
    s.put_calibrations(&[cal("stream/t1", 1.0)]).unwrap();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    s.add_pair_run(id, &pair("a", "b", 0)).unwrap();
    let info = s.info().unwrap();
    assert_eq!(info.schema_version, cosched_store::latest_version());
    assert!(info.size_bytes > 0);
    let tables: Vec<&str> = info.tables.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(tables, cosched_store::TABLES);
    let rows = |t: &str| info.tables.iter().find(|c| c.table == t).unwrap().rows;
    assert_eq!((rows("calibrations"), rows("campaigns"), rows("pair_runs"), rows("samples")), (1, 1, 1, 0));
    assert_eq!(info.campaigns.len(), 1);
    assert_eq!(info.campaigns[0].runs, 1);
}

#[test]
fn an_in_memory_store_works_like_a_file() {
    let mut s = Store::open_in_memory().unwrap();
    s.put_calibrations(&[cal("k", 1.0)]).unwrap();
    assert_eq!(s.calibrations().unwrap().len(), 1);
}

#[test]
fn a_repeats_cache_regime_needs_two_cpus_and_positive_round_trips() {
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    let mut one_cpu = pair("a", "b", 0);
    one_cpu.regime.cpus = vec![0];
    assert!(s.add_pair_run(id, &one_cpu).unwrap_err().to_string().contains("two CPUs"));
    let mut zero = pair("a", "b", 0);
    zero.regime.after_ns = Some(0.0);
    assert!(s.add_pair_run(id, &zero).unwrap_err().to_string().contains("c2c_after_ns"));
    let probe_id = s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov(10)).unwrap();
    let mut nan = probe(64, 0);
    nan.regime.before_ns = Some(f64::NAN);
    assert!(s.add_probe_point(probe_id, &nan).is_err());
    assert_eq!(count(&s, "pair_runs") + count(&s, "probe_points"), 0);
}

#[test]
fn per_level_medians_give_one_cell_per_ordered_pair_and_level() {
    use cosched_model::placement::SharingLevel::{SameLlc, SameNuma};
    let (_d, mut s) = store();
    let id = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov(10)).unwrap();
    // a's slowdowns 1.5, 1.7 at same-llc, 1.1 at same-numa; b's 1.2, 1.4, 1.0; one repeat unlevelled.
    for (repeat, level, fg, bg) in
        [(0, Some(SameLlc), 1.5, 1.2), (1, Some(SameLlc), 1.7, 1.4), (2, Some(SameNuma), 1.1, 1.0), (3, None, 2.0, 2.0)]
    {
        let mut r = pair("a", "b", repeat);
        (r.fg_solo_s, r.fg_corun_s, r.bg_solo_s, r.bg_corun_s, r.level) = (1.0, fg, 1.0, bg, level);
        s.add_pair_run(id, &r).unwrap();
    }
    let cells: Vec<(String, String, Option<SharingLevel>, usize, f64)> = s
        .pair_level_medians(id)
        .unwrap()
        .into_iter()
        .map(|c| (c.victim, c.aggressor, c.level, c.n, (c.median * 1e9).round() / 1e9))
        .collect();
    let cell = |v: &str, a: &str, l, n, m| (v.to_string(), a.to_string(), l, n, m);
    assert_eq!(
        cells,
        vec![
            cell("a", "b", Some(SameLlc), 2, 1.6),
            cell("a", "b", Some(SameNuma), 1, 1.1),
            cell("a", "b", None, 1, 2.0),
            cell("b", "a", Some(SameLlc), 2, 1.3),
            cell("b", "a", Some(SameNuma), 1, 1.0),
            cell("b", "a", None, 1, 2.0),
        ]
    );
}

#[test]
fn a_busy_database_is_waited_out_when_recording_finished_work_and_the_wait_is_told() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(DB_FILE);
    let mut s = Store::open(&path).unwrap();
    s.set_busy_timeout(std::time::Duration::from_millis(20)).unwrap();
    // Another process's open write transaction, ended a moment later.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        rx.recv().unwrap();
        other.execute_batch("COMMIT").unwrap();
    });
    let mut notes = Vec::new();
    let mut tries = 0;
    let patience = cosched_store::Patience { total: std::time::Duration::from_secs(600), pause: std::time::Duration::from_millis(10) };
    let id = cosched_store::patiently(
        "the end of job `a`",
        patience,
        || {
            tries += 1;
            if tries == 3 {
                tx.send(()).unwrap();
            }
            s.begin_run("s", "w", "noplan", 0, "{}", &prov(1))
        },
        &mut |m: &str| notes.push(m.to_string()),
    );
    holder.join().unwrap();
    assert!(id.is_ok(), "{id:?}");
    assert!(tries >= 3, "it tried {tries} times");
    assert!(!notes.is_empty() && notes[0].contains("another process holds the database"), "{notes:?}");
    assert!(notes[0].contains("waiting to record the end of job `a`"), "{notes:?}");
    assert_eq!(s.runs().unwrap().len(), 1);
}

#[test]
fn a_busy_database_past_the_patience_is_the_busy_error_and_other_errors_are_not_retried() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(DB_FILE);
    let mut s = Store::open(&path).unwrap();
    s.set_busy_timeout(std::time::Duration::from_millis(10)).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let none = cosched_store::Patience { total: std::time::Duration::ZERO, pause: std::time::Duration::from_millis(10) };
    let r = cosched_store::patiently("x", none, || s.begin_run("s", "w", "noplan", 0, "{}", &prov(1)), &mut |_| {});
    assert!(matches!(r, Err(StoreError::Busy { .. })), "{r:?}");
    other.execute_batch("ROLLBACK").unwrap();
    let mut tries = 0;
    let r = cosched_store::patiently("x", cosched_store::Patience::FINISHED_WORK, || {
        tries += 1;
        s.begin_run("s", "w", "", 0, "{}", &prov(1))
    }, &mut |_| {});
    assert!(r.is_err() && !r.as_ref().unwrap_err().is_transient(), "{r:?}");
    assert_eq!(tries, 1, "an invalid record is refused at once");
}

#[test]
fn runs_left_running_on_this_host_are_marked_interrupted_and_no_other_run_is_touched() {
    let (_d, mut s) = store();
    let here = prov(1);
    let mut there = prov(1);
    there.hostname = format!("{}-other", here.hostname);
    let orphan = s.begin_run("s", "w", "noplan", 0, "{}", &here).unwrap();
    s.run_note(orphan, 2.5, "policy", "a note").ok();
    let finished = s.begin_run("s", "w", "noplan", 1, "{}", &here).unwrap();
    s.finish_run(finished, cosched_store::RunStatus::Done, 3.0, "").unwrap();
    let elsewhere = s.begin_run("s", "w", "noplan", 2, "{}", &there).unwrap();
    assert_eq!(s.interrupt_orphaned_runs(&here.hostname).unwrap(), vec![orphan]);
    assert_eq!(s.run(orphan).unwrap().unwrap().status, cosched_store::RunStatus::Interrupted);
    assert_eq!(s.run(finished).unwrap().unwrap().status, cosched_store::RunStatus::Done);
    assert_eq!(s.run(elsewhere).unwrap().unwrap().status, cosched_store::RunStatus::Running);
    let last = s.run_journal(orphan).unwrap().pop().unwrap();
    assert_eq!((last.event.as_str(), last.detail.as_str()), ("interrupted", cosched_store::ORPHAN_NOTE));
    assert!(s.interrupt_orphaned_runs(&here.hostname).unwrap().is_empty(), "once only");
    assert_eq!(s.resume_run(orphan, 3.0).unwrap(), 0, "an interrupted run resumes");
}

#[test]
fn opening_to_read_an_empty_file_a_device_or_a_strangers_sqlite_file_refuses_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(Store::open_read_only(&empty), Err(StoreError::Missing { .. })));
    assert!(matches!(cosched_store::check_file(&empty), Err(StoreError::Missing { .. })));
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    assert!(matches!(Store::open_read_only(std::path::Path::new("/dev/null")), Err(StoreError::NotADatabase { .. })));
    let stranger = d.path().join("other.db");
    rusqlite::Connection::open(&stranger).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    let before = std::fs::read(&stranger).unwrap();
    assert!(matches!(Store::open_read_only(&stranger), Err(StoreError::NotADatabase { .. })));
    assert_eq!(std::fs::read(&stranger).unwrap(), before);
    let mut names: Vec<String> = std::fs::read_dir(d.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["empty.db", "other.db"], "no journal files");
}

#[test]
fn a_name_with_uri_characters_opens_to_read_as_itself() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("a?b#c%20d.db");
    drop(Store::open(&path).unwrap());
    let s = Store::open_read_only(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), cosched_store::latest_version());
    assert!(cosched_store::check_file(&path).unwrap().is_empty());
}
