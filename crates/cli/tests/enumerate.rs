//! `cosched enumerate`: the Terrible Twins paper's counts and landscape from the command line.

use std::process::Command;

fn cosched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().unwrap()
}

#[test]
fn ten_programs_on_ten_nodes_have_the_papers_placement_counts() {
    let out = cosched(&["enumerate", "--programs", "10", "--nodes", "10", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schedules"], "1436714");
    assert_eq!(v["twin_free_schedules"], "499194");
}

#[test]
fn a_matrix_gives_the_landscape_the_optimum_and_a_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.csv");
    // Twins hurt (2.0), mixed pairs do not (1.0): the optimum is twin-free.
    std::fs::write(&m, "2.0,1.0\n1.0,2.0\n").unwrap();
    let svg = dir.path().join("h.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["enumerate", "--programs", "2", "--nodes", "2", "--json", "--matrix"])
        .arg(&m)
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Two placements: {(0,0),(1,1)} and {(0,1),(0,1)}.
    assert_eq!(v["schedules"], "2");
    assert_eq!(v["optimal"]["slowdown"]["average"], 1.0);
    assert_eq!(v["landscape"]["all"]["average"]["max"], 2.0);
    // Table 2's "all twins" column: the one placement holding twins.
    let twins = &v["landscape"]["twin_groups"][0];
    assert_eq!((twins["name"].as_str(), twins["population"]["count"].as_u64()), (Some("all twins"), Some(1)), "{v}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("twin-free"));
}

#[test]
fn bad_shapes_and_values_exit_2() {
    assert_eq!(cosched(&["enumerate", "--programs", "3", "--nodes", "4"]).status.code(), Some(2));
    assert_eq!(cosched(&["enumerate", "--programs", "3", "--nodes", "3", "--instances", "3"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.csv");
    std::fs::write(&m, "1.0,1.0\n1.0,oops\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["enumerate", "--programs", "2", "--nodes", "2", "--matrix"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("m.csv:2:5"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `scripts/papers.sh`, the one command behind docs/papers.md, on its
/// quickest experiment: it writes the Table 2 counts the page states,
/// marks the step done so a second run skips it, and refuses an unknown
/// experiment with exit 2 before running anything.
#[test]
fn papers_script_regenerates_the_twins_table_once_and_refuses_unknown_experiments() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("papers");
    let script = repo.join("scripts/papers.sh");
    let run = |only: &str| {
        Command::new("bash")
            .arg(&script)
            .arg(&out)
            .env("ONLY", only)
            .env("COSCHED", env!("CARGO_BIN_EXE_cosched"))
            .output()
            .unwrap()
    };
    let first = run("twins");
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let table = std::fs::read_to_string(out.join("twins/log.txt")).unwrap();
    // docs/papers.md's cosched column: all, twin-free, and the three groups.
    for row in ["1436714", "499194", "937520", "405589", "510650"] {
        assert!(table.contains(row), "{row} missing from\n{table}");
    }
    assert!(out.join("twins.done").exists());
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(index.contains("| twins | twins/log.txt | yes |"), "{index}");
    let again = run("twins");
    assert!(String::from_utf8_lossy(&again.stdout).contains("twins: done in an earlier run"));
    let bad = run("twins nosuch");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown experiment 'nosuch'"));
}
