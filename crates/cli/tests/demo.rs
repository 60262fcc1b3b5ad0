//! `cosched demo`: argument errors, and a tiny end-to-end run whose report
//! holds every stage.

use std::process::Command;

fn cosched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
}

#[test]
fn bad_demo_arguments_exit_2_and_measure_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    for args in [
        &["--repeats", "0"][..],
        &["--seconds", "0"],
        &["--seconds", "-1"],
        &["--seconds", "nan"],
        &["--seconds", "soon"],
        &["--no-such-flag"],
    ] {
        let out = cosched().arg("demo").args(args).arg("--db").arg(&db).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!db.exists(), "bad arguments never open the database");
}

/// Real processes end to end, each job sized to a few hundredths of a
/// second (the calibration of seven kernel configurations dominates).
#[test]
fn a_tiny_demo_writes_one_report_with_every_stage() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let db = dir.path().join("d.db");
    let out = cosched()
        .args(["demo", "--repeats", "1", "--seconds", "0.06", "--out"])
        .arg(&out_dir)
        .arg("--db")
        .arg(&db)
        .env("COSCHED_RUN_LOCK", dir.path().join("run.lock"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let index = out_dir.join("index.html");
    assert!(stdout.contains(&format!("report: {}", index.display())), "{stdout}");
    let html = std::fs::read_to_string(&index).unwrap();
    for section in ["1. Calibrate", "2. Profile", "3. Pairs", "4. Predict", "5. Simulate", "6. Real runs"] {
        assert!(html.contains(&format!(">{section}</h2>")), "no {section} section");
    }
    for policy in ["best-match:aging=4,window=8 repeat 1", "exclusive repeat 1", "noplan repeat 1"] {
        assert!(html.contains(policy), "no Gantt section of {policy}");
    }
    let calibrate = &html[html.find("<h2 id=\"1-calibrate\">").unwrap()..html.find("<h2 id=\"2-profile\">").unwrap()];
    assert!(calibrate.contains("<table") && !calibrate.contains("<pre"), "calibration is an HTML table");
    assert!(html.contains("Pairs each policy held apart"));
    assert!(html.contains("Predicted vs observed slowdown per job"));
    assert!(html.matches("<svg").count() >= 5, "heatmap, box plot and three Gantt charts");
    // A solo pass (the runs' solo references), then best-match, conflict-aware
    // when the measured pairs give it a threshold that bites, exclusive and
    // noplan, each job's start and end journaled.
    let store = cosched_store::Store::open(&db).unwrap();
    let runs = store.runs().unwrap();
    let policies: Vec<&str> = runs.iter().map(|r| r.policy.as_str()).collect();
    assert_eq!(policies[0], "solo-pass", "{policies:?}");
    assert!(policies[1].starts_with("best-match"), "{policies:?}");
    let conflict_aware = policies.iter().any(|p| p.starts_with("conflict-aware"));
    assert_eq!(runs.len(), if conflict_aware { 5 } else { 4 }, "{policies:?}");
    for r in runs {
        assert_eq!(store.run_jobs(r.id).unwrap().iter().filter(|j| j.end.is_some()).count(), 8, "run {}", r.policy);
    }
}
