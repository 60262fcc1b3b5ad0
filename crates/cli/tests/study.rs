//! `cosched study` with real short processes: a tiny study runs every
//! strategy through the node runner, stores its runs, and scores each set
//! with the best strategy at exactly 1.

mod common;
use std::path::Path;
use std::process::Command;

fn cosched(dir: &Path, args: &[&str]) -> std::process::Output {
    let kernel = Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(args)
        .arg("--db")
        .arg(dir.join("db"))
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir)
        .env("COSCHED_KERNEL", kernel)
        .output()
        .unwrap()
}

#[test]
fn a_tiny_study_runs_every_strategy_and_scores_the_best_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "name = \"tiny\"\n\
         [[jobs]]\nname = \"c\"\nkernel = \"compute\"\nseconds = 0.2\n\
         [[jobs]]\nname = \"s\"\nkernel = \"stream\"\nparams = { array_mib = 16 }\nseconds = 0.2\n",
    )
    .unwrap();
    let report = dir.path().join("report");
    let out = cosched(
        dir.path(),
        &["study", "--workload", wl.to_str().unwrap(), "--repeats", "1", "--cgroups", "none", "--json", "--report", report.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["strategies"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["exclusive", "oversub-idle", "oversub-busy", "static-coloc", "dynamic-coloc", "timeshare"]);
    assert_eq!(v["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(v["triples"].as_array().unwrap().len(), 0, "two programs have no triple");
    let set = &v["pairs"][0];
    let scores: Vec<f64> = set["scores"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap_or_else(|| panic!("a strategy has no score: {set}"))).collect();
    assert!(scores.iter().all(|&x| x > 0.0 && x <= 1.0), "{scores:?}");
    assert!(scores.contains(&1.0), "the best strategy scores exactly 1: {scores:?}");
    // Every strategy's one run is stored, under the set's workload of each
    // environment (its jobs' wait policy: `study`'s unit tests).
    let store = cosched_store::Store::open_existing(&dir.path().join("db")).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 6, "{:?}", runs.iter().map(|r| &r.policy).collect::<Vec<_>>());
    let mut workloads: Vec<&str> = runs.iter().map(|r| r.workload.as_str()).collect();
    workloads.sort();
    assert_eq!(
        workloads,
        ["tiny c+s as-written", "tiny c+s as-written", "tiny c+s as-written", "tiny c+s as-written", "tiny c+s omp-active", "tiny c+s omp-passive"]
    );
    for f in ["index.html", "study.json", "scores-pairs.svg", "heatmap-timeshare.svg"] {
        assert!(report.join(f).is_file(), "{f} missing");
    }
    assert!(!report.join("sets").exists(), "a set is handed to the runner parsed, never written to a file to be read back");
}

#[test]
fn a_study_of_one_program_is_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\ncommand = \"true\"\n").unwrap();
    let out = cosched(dir.path(), &["study", "--workload", wl.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least two jobs"));
    assert!(!dir.path().join("db").exists(), "bad input writes nothing");
}
