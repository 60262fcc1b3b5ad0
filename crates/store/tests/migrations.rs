//! The schema upgrades from an empty file and from every earlier version
//! with the rows it holds, and files the store does not understand are left
//! untouched.

mod common;

use std::path::Path;

use common::*;
use cosched_store::{latest_version, CampaignId, CampaignStatus, Store, StoreError, MIGRATIONS};
use rusqlite::Connection;

/// A database as a build that knew only the first `k` migrations left it.
fn database_at_version(path: &Path, k: usize) -> Connection {
    let conn = Connection::open(path).unwrap();
    for m in &MIGRATIONS[..k] {
        conn.execute_batch(m.sql).unwrap();
        conn.pragma_update(None, "user_version", m.version).unwrap();
    }
    conn
}

/// Rows written with the tables of version `k`, in that version's own
/// columns (not through today's API, which targets the latest schema),
/// named where a later step adds columns to the table.
fn fill(conn: &Connection, k: u32) {
    if k >= 1 {
        conn.execute_batch(
            r#"
INSERT INTO provenance VALUES (1, 'node-7', 'cpu', 2, '6.1', '0.1.0', 'abc', 'cosched calibrate', '18446744073709551615', 1700000000);
INSERT INTO calibrations VALUES (1, 'stream/t1', 'stream', '{"array_mib":"64"}', 1, 'sweeps', 12,
    3, 2.5, 2.0, 3.0, 2.0, 3.0, 'bandwidth_mb_s', '{"n":1,"median":1.5,"min":1.5,"max":1.5,"ci_lo":1.5,"ci_hi":1.5}', 1);
INSERT INTO campaigns VALUES (1, 'pairs', 'mixed.toml', '{"repeats":5}', 'interrupted', 1, 1700000000, 1700000100);
INSERT INTO pair_runs (id, campaign_id, provenance_id, fg_job, bg_job, repeat_index, fg_cpus, bg_cpus, shared_cpus,
    fg_solo_s, fg_corun_s, bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches, fg_timing, bg_timing) VALUES (1, 1, 1, 'stream', 'stream', 0, '0', '1', 0, 1.0, 1.5, 1.0, 1.25, 0, 2, 'work-phase', 'work-phase');
"#,
        )
        .unwrap();
    }
    if k >= 2 {
        conn.execute_batch(
            r#"
INSERT INTO campaigns VALUES (2, 'profile', 'mixed.toml', '{}', 'done', 1, 1700000200, 1700000300);
INSERT INTO solo_runs VALUES (1, 2, 1, 'triad', 'kernel stream threads=1', '0', 0, 1.0, 2.0, 1.9, 'work-phase', 0, NULL, NULL, NULL, '{}');
INSERT INTO samples VALUES (1, 0, 1.0, 0.99, 0.98, 0.01, 3, 4, NULL, 0, 0, 0, 0, 0, 0, 1024, 10, 0, 1);
INSERT INTO profiles VALUES (1, 2, 'triad', 'kernel stream threads=1', '{"solo_s":1.9}');
INSERT INTO campaigns VALUES (3, 'probe', 'mixed.toml', '{}', 'done', 1, 1700000400, 1700000500);
INSERT INTO probe_points (id, campaign_id, provenance_id, job, stressor, working_set_kib, intensity, repeat_index,
    job_solo_s, job_corun_s, stressor_solo_s, stressor_corun_s) VALUES (1, 3, 1, 'triad', 'distgen', 512, 1.0, 0, 1.0, 1.3, 2.0, 2.2);
"#,
        )
        .unwrap();
    }
    if k >= 4 {
        conn.execute_batch(
            r#"
INSERT INTO runs VALUES (1, 's1', 'mixed.toml', 'noplan', 0, '{}', 'done', 1, 1700000600, 1700000700);
INSERT INTO run_jobs (id, run_id, job, job_index, attempt, arrival_s, start_s, cpus, pgid, beside_json, predicted, solo_s)
    VALUES (1, 1, 'triad', 0, 0, 0.0, 0.5, '0-1', 4242, '[]', 1.25, 2.0);
"#,
        )
        .unwrap();
    }
    if k >= 6 {
        conn.execute(
            "INSERT INTO campaign_conditions (id, campaign_id, taken_unix, load1, load5, load15, c2c_cpus, c2c_round_trip_ns)
             VALUES (1, 1, 1700000001, 0.5, 0.25, 0.125, '0-1', 45.0)",
            [],
        )
        .unwrap();
    }
    if k >= 7 {
        conn.execute(
            "INSERT INTO run_conditions (id, run_id, taken_unix, load1, load5, load15, c2c_cpus, c2c_round_trip_ns)
             VALUES (1, 1, 1700000601, 0.5, 0.25, 0.125, NULL, NULL)",
            [],
        )
        .unwrap();
    }
}

/// What `fill(k)` wrote, read back through today's API.
fn check(s: &Store, k: u32) {
    let cals = s.calibrations().unwrap();
    let campaigns = s.campaigns().unwrap();
    if k == 0 {
        assert!(cals.is_empty() && campaigns.is_empty());
        return;
    }
    let c = &cals["stream/t1"];
    assert_eq!((c.rate.median, c.provenance.seed, c.params["array_mib"].as_str()), (2.5, Some(u64::MAX), "64"));
    assert_eq!(c.figure.as_ref().unwrap().1.median, 1.5);
    assert_eq!(campaigns[0].status, CampaignStatus::Interrupted);
    let runs = s.pair_runs(CampaignId(1)).unwrap();
    assert_eq!((runs.len(), runs[0].fg_slowdown(), runs[0].bg_relaunches), (1, 1.5, 2));
    let mut json = Vec::new();
    s.export_json("pair_runs", &mut json).unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(rows[0]["bg_slowdown"], 1.25, "a column added by a later step covers older rows");
    // Schema 10's readings are absent from older rows, not invented.
    assert_eq!((runs[0].regime.clone(), runs[0].level), (Default::default(), None));
    assert_eq!(rows[0]["c2c_before_ns"], serde_json::Value::Null);
    if k >= 2 {
        let (run, solo) = s.solo_runs(CampaignId(2)).unwrap().pop().unwrap();
        assert_eq!((solo.job.as_str(), solo.exit_code, solo.syscall_source), ("triad", Some(0), None));
        assert_eq!(s.samples(run).unwrap()[0].rss_kib, 1024);
        // The row survives; its hand-written summary is no whole JobProfile,
        // which the typed read reports by campaign and job.
        let e = s.latest_job_profile("kernel stream threads=1").unwrap_err().to_string();
        assert!(e.contains("`triad` in campaign 2"), "{e}");
        let p = &s.probe_points(CampaignId(3)).unwrap()[0];
        assert_eq!((p.working_set_kib, p.job_slowdown()), (512, 1.3));
        assert_eq!(p.regime.regime(), None);
    }
    if k >= 4 {
        let jobs = s.run_jobs(cosched_store::ExecRunId(1)).unwrap();
        assert_eq!((jobs[0].start.cpus.clone(), jobs[0].start.mems.clone(), jobs[0].start.pgid), (vec![0, 1], vec![], 4242));
    }
    if k >= 6 {
        // Schema 12's huge page policy is absent from older readings, not invented.
        let c = s.conditions(CampaignId(1)).unwrap();
        assert_eq!((c.len(), c[0].c2c.clone(), c[0].huge_pages.clone()), (1, Some((vec![0, 1], 45.0)), None));
    }
    if k >= 7 {
        let c = s.run_conditions(cosched_store::ExecRunId(1)).unwrap();
        assert_eq!((c.len(), c[0].c2c.clone(), c[0].huge_pages.clone()), (1, None, None));
    }
}

#[test]
fn every_earlier_version_migrates_with_its_rows() {
    for k in 0..latest_version() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("old.db");
        let conn = database_at_version(&path, k as usize);
        fill(&conn, k);
        drop(conn);
        let s = Store::open(&path).unwrap_or_else(|e| panic!("from version {k}: {e}"));
        assert_eq!(s.schema_version().unwrap(), latest_version(), "from version {k}");
        check(&s, k);
        drop(s);
        let again = Store::open(&path).unwrap();
        check(&again, k);
    }
}

#[test]
fn a_new_file_gets_the_latest_schema_in_wal_mode_with_foreign_keys() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("a/b/cosched.db");
    let s = Store::open(&path).unwrap();
    assert!(path.is_file(), "the directory and the file are created");
    assert_eq!(s.schema_version().unwrap(), latest_version());
    drop(s);
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal", "WAL is a property of the file, kept after close");
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("future.db");
    let conn = database_at_version(&path, MIGRATIONS.len());
    conn.pragma_update(None, "user_version", latest_version() + 1).unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::TooNew { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("future.db") && msg.contains("newer"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_untouched() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("calibration.json");
    std::fs::write(&path, "{\"not\": \"a database\"}").unwrap();
    for open in [Store::open, Store::open_existing] {
        let e = open(&path).unwrap_err();
        assert!(matches!(e, StoreError::NotADatabase { .. }), "{e}");
        assert!(e.to_string().contains("calibration.json"), "{e}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"not\": \"a database\"}");
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "no journal or WAL file beside it: {names:?}");
}

#[test]
fn a_sqlite_file_with_corrupt_pages_is_refused_and_left_untouched() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("torn.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend([0xA5; 4096]);
    std::fs::write(&path, &bytes).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(e.to_string().contains("torn.db"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_bad_path_is_named_in_the_error_and_nothing_is_created() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let under_a_file = file.join("cosched.db");
    let e = Store::open(&under_a_file).unwrap_err();
    assert!(e.to_string().contains("plain-file"), "{e}");

    let e = Store::open(d.path()).unwrap_err();
    assert!(e.to_string().contains("directory"), "{e}");

    let missing = d.path().join("missing/cosched.db");
    let e = Store::open_existing(&missing).unwrap_err();
    assert!(matches!(e, StoreError::Missing { .. }), "{e}");
    assert!(e.to_string().contains("missing/cosched.db"), "{e}");
    assert!(!d.path().join("missing").exists(), "reading created a directory");
}

#[test]
fn two_stores_on_one_file_see_each_others_writes() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("shared.db");
    let mut a = Store::open(&path).unwrap();
    let b = Store::open(&path).unwrap();
    a.put_calibrations(&[cal("k", 1.0)]).unwrap();
    assert_eq!(b.calibrations().unwrap().len(), 1);
}

/// Processes that open one new database at the same moment (`slurm serve`
/// and `slurm status` polled beside it, two campaigns started by one
/// script) each get it whole: the latest schema, in WAL mode, none refused
/// as busy. Threads stand for the processes: each holds its own connection,
/// and SQLite locks between connections of one process as between processes.
#[test]
fn a_new_database_opened_by_many_at_once_is_set_up_once_for_all() {
    for round in 0..20 {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("new.db");
        let start = std::sync::Arc::new(std::sync::Barrier::new(6));
        let openers: Vec<_> = (0..6)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let s = Store::open(&path).map_err(|e| e.to_string())?;
                    s.schema_version().map_err(|e| e.to_string())
                })
            })
            .collect();
        for o in openers {
            assert_eq!(o.join().unwrap(), Ok(latest_version()), "round {round}");
        }
        let conn = Connection::open(&path).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal", "round {round}");
    }
}
