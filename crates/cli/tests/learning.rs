//! The learning loop end to end: `cosched run` decides with the chosen
//! predictor fitted on the store, records its prediction before each job
//! starts, and a job that ran beside one unchanged co-runner becomes a
//! measured pair sample that the next run's predictor uses.

mod common;
use common::{job_profile, prov};
use std::path::Path;
use std::process::Command;

use cosched_store::{CampaignKind, CampaignStatus, PairRunRecord, ProfileRecord, Store};


/// One repeat of `a` (on CPU 0) beside `b` (on CPU 1): each one's (solo, co-run) seconds.
fn pair_run(repeat: u32, a: (f64, f64), b: (f64, f64)) -> PairRunRecord {
    PairRunRecord {
        fg_job: "a".into(),
        bg_job: "b".into(),
        repeat,
        fg_cpus: vec![0],
        bg_cpus: vec![1],
        shared_cpus: false,
        fg_solo_s: a.0,
        fg_corun_s: a.1,
        bg_solo_s: b.0,
        bg_corun_s: b.1,
        fg_relaunches: 0,
        bg_relaunches: 0,
        fg_timing: "process".into(),
        bg_timing: "process".into(),
        regime: Default::default(),
        level: None,
    }
}

/// `a` (0.8 s) and `b` (0.1 s) on two cores; stored: both profiled with a
/// solo time of 0.1 s, and one pairs repeat where b beside a is 1.5.
fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let wl = dir.join("learn.toml");
    std::fs::write(
        &wl,
        "name = \"learn\"\n[[pools]]\nname = \"host\"\ncores = 2\n\
         [[jobs]]\nname = \"a\"\ncommand = \"sleep 0.8\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sleep 0.1\"\n",
    )
    .unwrap();
    let db = dir.join("l.db");
    let mut s = Store::open(&db).unwrap();
    let c = s.begin_campaign(CampaignKind::Profile, "learn", "{}", &prov()).unwrap();
    for (j, t, u) in [("a", "0.8", 0.5), ("b", "0.1", 0.3)] {
        // The program key `cosched run` looks a job's solo time up by.
        s.put_profile(c, &ProfileRecord { job: j.into(), program: format!("command sleep {t}"), summary: job_profile(0.1, u) })
            .unwrap();
    }
    s.finish_campaign(c, CampaignStatus::Done).unwrap();
    let p = s.begin_campaign(CampaignKind::Pairs, "learn", "{}", &prov()).unwrap();
    s.add_pair_run(p, &pair_run(0, (1.0, 1.2), (1.0, 1.5))).unwrap();
    s.finish_campaign(p, CampaignStatus::Done).unwrap();
    (wl, db)
}

fn run(wl: &Path, db: &Path, dir: &Path) -> String {
    run_with(wl, db, dir, &[])
}

fn run_with(wl: &Path, db: &Path, dir: &Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .arg("run")
        .args(extra)
        .arg("--workload")
        .arg(wl)
        .args(["--policy", "noplan", "--db"])
        .arg(db)
        .arg("--lock")
        .arg(dir.join("run.lock"))
        .env("COSCHED_DATA_DIR", dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}\n{}", String::from_utf8_lossy(&out.stdout));
    err
}

/// b's attempt in the newest run: (predicted at its start, measured).
fn b_of_last_run(db: &Path) -> (f64, Option<f64>) {
    let s = Store::open_existing(db).unwrap();
    let last = s.runs().unwrap().pop().unwrap();
    let b = s.run_jobs(last.id).unwrap().into_iter().find(|j| j.start.job == "b").unwrap();
    assert_eq!(b.start.beside, ["a"], "noplan starts a, then b beside it");
    (b.start.predicted, b.end.and_then(|e| e.slowdown))
}

#[test]
fn a_run_predicts_with_the_chosen_predictor_and_the_next_run_learns_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (wl, db) = setup(dir.path());
    let err = run(&wl, &db, dir.path());
    assert!(err.contains("predictor measured fitted on 2 ordered pairs"), "{err}");
    assert!(err.contains("0 pair sample(s) from real runs"), "{err}");
    let (predicted, measured) = b_of_last_run(&db);
    assert_eq!(predicted, 1.5, "the measured pair, as `measured` predicts it");
    let s1 = measured.expect("b has a stored solo time");
    let samples = Store::open_existing(&db).unwrap().run_pair_samples("learn").unwrap();
    assert_eq!(samples.len(), 1, "b ran its whole time beside a: {samples:?}");
    assert_eq!((samples[0].victim.as_str(), samples[0].co_runner.as_str(), samples[0].slowdown), ("b", "a", s1));

    let err = run(&wl, &db, dir.path());
    assert!(err.contains("1 pair sample(s) from real runs"), "{err}");
    let (predicted, _) = b_of_last_run(&db);
    assert!((predicted - (1.5 + s1) / 2.0).abs() < 1e-9, "median of the pairs repeat and the run's sample: {predicted} vs {s1}");
}

#[test]
fn with_stored_solo_times_a_run_takes_the_pairs_campaigns_solo_repeats_when_it_has_three() {
    let dir = tempfile::tempdir().unwrap();
    let (wl, db) = setup(dir.path());
    {
        // Two more repeats: b alone took 1.0 (repeat 0), 0.2 and 0.3 s.
        let mut s = Store::open_existing(&db).unwrap();
        let p = s.begin_campaign(CampaignKind::Pairs, "learn", "{}", &prov()).unwrap();
        for (repeat, b_solo) in [(0u32, 1.0), (1, 0.2), (2, 0.3)] {
            s.add_pair_run(p, &pair_run(repeat, (0.8, 0.9), (b_solo, 1.5 * b_solo))).unwrap();
        }
        s.finish_campaign(p, CampaignStatus::Done).unwrap();
    }
    let err = run_with(&wl, &db, dir.path(), &["--solo", "stored"]);
    assert!(err.contains("solo times from pairs campaign 3 (median of 3 solo runs each): all 2 jobs"), "{err}");
    let s = Store::open_existing(&db).unwrap();
    let last = s.runs().unwrap().pop().unwrap();
    let jobs = s.run_jobs(last.id).unwrap();
    let solo = |name: &str| jobs.iter().find(|j| j.start.job == name).unwrap().start.solo_s;
    assert_eq!(solo("b"), Some(0.3), "median of 1.0, 0.2, 0.3 rather than the profile's 0.1");
    assert_eq!(solo("a"), Some(0.8));
}
