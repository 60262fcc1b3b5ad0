//! Every verb documents itself with at least one example.

use std::process::Command;

fn cosched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("run cosched")
}

#[test]
fn every_verb_help_has_an_example() {
    for verb in [
        vec!["check"],
        vec!["node"],
        vec!["calibrate"],
        vec!["demo"],
        vec!["bench"],
        vec!["bench", "kernels"],
        vec!["bench", "profile"],
        vec!["bench", "simulate"],
        vec!["pairs"],
        vec!["db"],
        vec!["enumerate"],
        vec!["simulate"],
        vec!["profile"],
        vec!["probe"],
        vec!["classify"],
        vec!["predict"],
        vec!["evaluate-predictors"],
        vec!["evaluate"],
        vec!["run"],
        vec!["bench", "predictors"],
    ] {
        let mut args = verb.clone();
        args.push("--help");
        let out = cosched(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{verb:?} --help failed");
        assert!(text.contains("Example"), "{verb:?} --help has no example:\n{text}");
        assert!(text.contains("cosched "), "{verb:?} example does not show a command");
    }
}

#[test]
fn top_level_help_lists_every_verb() {
    let text = String::from_utf8_lossy(&cosched(&["--help"]).stdout).into_owned();
    for verb in ["check", "node", "calibrate", "demo", "bench"] {
        assert!(text.contains(verb), "--help does not list {verb}");
    }
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(cosched(&["calibrate", "--kernel", "nope"]).status.code(), Some(2));
    assert_eq!(cosched(&["calibrate", "--cpus", "0-999"]).status.code(), Some(2));
    assert_eq!(cosched(&["no-such-verb"]).status.code(), Some(2));
}

#[test]
fn a_bad_workload_is_rejected_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\nkernel = \"nope\"\nwork = 1\n").unwrap();
    let data = dir.path().join("data");
    let db = data.join("cosched.db");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["calibrate", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:3:10"), "{err}");
    assert!(!db.exists(), "a bad workload created the database");
    assert!(!data.exists(), "a bad workload created the database's directory");
}
