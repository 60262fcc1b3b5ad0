//! Online detection and reaction with real processes (issue 38): two
//! pinned `compute` kernels on a 1-core pool. `react` wraps `overbook`,
//! which starts the second on the busy core (the pair the `blind`
//! predictor calls harmless): the two time-share one core, about 2x each
//! in either cache regime. Their own progress counters show it within a
//! couple of seconds, the pair settles (kept in `online_samples`), and the
//! newer job is suspended until the other has ended.

mod common;
use std::path::Path;
use std::process::Command;

#[test]
fn react_suspends_the_newer_of_two_kernels_sharing_a_core_and_keeps_the_pair() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    let job = |n: &str| format!("[[jobs]]\nname = \"{n}\"\nkernel = \"compute\"\nwork = 30000\n");
    std::fs::write(&wl, format!("[[pools]]\nname = \"host\"\ncores = 1\n{}{}", job("a"), job("b"))).unwrap();
    let kernel = Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    let db = dir.path().join("c.db");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "react:inner=overbook,threshold=1.3", "--predictor", "blind", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir.path())
        .env("COSCHED_KERNEL", kernel)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let react = runs.iter().find(|r| r["run"]["policy"].as_str().is_some_and(|p| p.starts_with("react"))).unwrap_or_else(|| panic!("{v}"));
    for j in react["jobs"].as_array().unwrap() {
        assert_eq!(j["end"]["status"], "ok", "{v}");
    }
    assert!(react["metrics"]["suspended"].as_f64().unwrap() > 0.0, "no job was suspended: {err}");
    assert!(err.contains(" settled: "), "{err}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM online_samples WHERE slowdown > 1.3 AND signal = 'progress'", [], |r| r.get(0)).unwrap();
    assert!(n >= 1, "no settled pair kept: {err}");
}

/// A command's `progress` regex (issue 38): a shell loop printing
/// `step N of 30`, pinned to a 1-core pool, has its output read while it
/// runs, and the run's trace gets its online estimates.
#[test]
fn a_commands_progress_regex_gives_its_run_estimate_lines_in_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n\n[[jobs]]\nname = \"steps\"\n\
         command = [\"sh\", \"-c\", \"for i in $(seq 1 30); do echo step $i of 30; sleep 0.1; done\"]\n\
         progress = 'step (\\d+) of (?P<total>\\d+)'\ntimeout = 60.0\n",
    )
    .unwrap();
    let report = dir.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "noplan", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .arg("--report")
        .arg(&report)
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("no online estimate"), "the regex matched nothing: {err}");
    let mut estimates = 0;
    for f in std::fs::read_dir(&report).unwrap() {
        let p = f.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("trace-run") {
            let text = std::fs::read_to_string(&p).unwrap();
            estimates += text.lines().filter(|l| l.contains(",estimate,") && l.ends_with(",progress")).count();
        }
    }
    assert!(estimates >= 2, "no estimate read from the job's output in its traces: {err}");
}
