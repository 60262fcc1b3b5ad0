//! `cosched demo`: argument errors, and a tiny end-to-end run whose report
//! holds every stage.

mod common;
use std::process::Command;

fn cosched() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c
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
/// second (the calibration of the kernel configurations dominates).
#[test]
fn a_tiny_demo_picks_a_workload_evaluates_best_match_against_noplan_and_writes_one_report() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let db = dir.path().join("d.db");
    let out = cosched()
        .args(["demo", "--repeats", "1", "--seconds", "0.06", "--budget", "1s", "--out"])
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
    // The workload follows the regime read at the start.
    let regime = stdout.lines().find_map(|l| l.strip_prefix("cache regime: ")).expect("the regime is printed");
    let workload = if regime.starts_with("shared cache") { "memory-half" } else { "io-half" };
    assert!(stdout.contains(&format!("workload {workload}: ")), "{regime} -> {workload}: {stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("Verdict: ")), "a verdict sentence: {stdout}");
    // The shipped dataset first: imported, and its predictions of the
    // workload's pairs labelled with its node and as another work amount.
    assert!(stdout.contains("shipped dataset data/io-half.bundle (io-half, io-half-long of node vm, exported "), "{stdout}");
    // Both workloads have a program the dataset measured (the core-bound loop).
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let label = if here.trim() == "vm" { "node vm" } else { "node vm, another node's" };
    assert!(stdout.contains(&format!("predicted from the shipped dataset ({label}, other work amount): ")), "{stdout}");
    assert!(stdout.contains("best-match against noplan, worst slowdown "), "{stdout}");
    let html = std::fs::read_to_string(&index).unwrap();
    for section in ["1. Cache regime", "2. Calibrate", "3. Shipped dataset", "4. Profile", "5. Pairs", "6. Predict", "7. Evaluate"] {
        assert!(html.contains(&format!(">{section}</h2>")), "no {section} section");
    }
    let calibrate = &html[html.find("<h2 id=\"2-calibrate\">").unwrap()..html.find("<h2 id=\"3-shipped-dataset\">").unwrap()];
    assert!(calibrate.contains("<table") && !calibrate.contains("<pre"), "calibration is an HTML table");
    let shipped = &html[html.find("<h2 id=\"3-shipped-dataset\">").unwrap()..html.find("<h2 id=\"4-profile\">").unwrap()];
    assert!(shipped.contains("data/io-half.bundle"), "{shipped}");
    assert!(html.contains("href=\"evaluate/index.html\""), "links the evaluation's own report");
    assert!(out_dir.join("evaluate/index.html").is_file());
    // The workload as the stages were handed it, kept beside the report and linked.
    let kept = format!("{workload}-demo.toml");
    assert!(html.contains(&format!("href=\"{kept}\"")), "links the workload it ran");
    let text = std::fs::read_to_string(out_dir.join(&kept)).unwrap();
    assert!(text.contains(&format!("name = \"{workload}-demo\"")), "{text}");
    // Each order: a solo pass, then noplan and best-match on the seed's
    // order; at least five orders, every job of every run ended.
    let store = cosched_store::Store::open(&db).unwrap();
    let runs = store.runs().unwrap();
    let count = |p: &str| runs.iter().filter(|r| r.policy.starts_with(p)).count();
    let orders = count("solo-pass");
    assert!(orders >= 5, "{:?}", runs.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>());
    assert_eq!(count("best-match"), orders, "best-match ran every order");
    // The oracle's schedules are replayed as fixed orders (recorded as noplan runs).
    assert!(count("noplan") > orders, "noplan ran every order and the oracle's replays");
    for r in runs.iter().filter(|r| r.policy.starts_with("noplan") || r.policy.starts_with("best-match")) {
        assert_eq!(store.run_jobs(r.id).unwrap().iter().filter(|j| j.end.is_some()).count(), 8, "run {}", r.policy);
    }
}
