//! `cosched djsb`: the ParaStation paper's benchmark in virtual time scores what the
//! policies do by hand, whatever the node's cores; bad sizes exit 2.

use std::process::Command;

fn cosched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
}

#[test]
fn in_virtual_time_surpass_keeps_the_analysis_whole_and_wait_makes_it_wait() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosched()
        .args(["djsb", "--simulate", "1", "--json", "--policy", "surpass", "--policy", "wait", "--simulation-s", "10"])
        .args(["--analysis-s", "2", "--sessions", "1", "--first-at", "2", "--normalisation", "8", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["policies"];
    assert_eq!(p[0]["policy"], "surpass");
    // Surpassed, the analysis runs alone at once: E_ana = 2 / 1, W = 1,
    // whatever the node's P cores (it expects 1 + P/P).
    assert_eq!(p[0]["e_analysis"]["median"], 2.0);
    assert_eq!(p[0]["w_analysis"]["median"], 1.0);
    // Waiting, it starts when the 10 s simulation ends: W = 8 / (8 + 8).
    assert_eq!(p[1]["w_analysis"]["median"], 0.5);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["djsb"]["sessions"][0]["suspended"], 2.0, "the simulation was suspended for the analysis' 2 s");
    assert!(dir.path().join("djsb.toml").is_file());
}

#[test]
fn bad_sizes_and_policies_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosched().args(["djsb", "--simulate", "1", "--analysis-s", "0", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--analysis-s 0"));
    let out = cosched().args(["djsb", "--simulate", "1", "--policy", "hurry", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown policy `hurry`"));
}
