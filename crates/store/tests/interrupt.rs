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
