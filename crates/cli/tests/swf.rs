//! `cosched simulate --swf`: a real-format trace replayed end to end, and
//! bad traces refused with their file and line, exit code 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("run cosched")
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

#[test]
fn the_example_trace_is_replayed_with_a_report_batsim_jobs_and_swf() {
    let dir = tempfile::tempdir().unwrap();
    let trace = repo("examples/traces/small.swf");
    let out = dir.path().join("r");
    let o = cosched(&[
        "simulate",
        "--swf",
        trace.to_str().unwrap(),
        "--policy",
        "conflict-aware:threshold=50",
        "--report",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The header gives 4 nodes of 16 / 4 cores; jobs 9 (failed) and 10
    // (cancelled, no run time) are left out.
    assert_eq!((doc["nodes"].as_u64(), doc["cores"].as_u64(), doc["jobs"].as_u64()), (Some(4), Some(4), Some(14)));
    assert_eq!((doc["skipped"]["failed"].as_u64(), doc["skipped"]["cancelled"].as_u64()), (Some(1), Some(1)));
    let outcomes = doc["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0]["figures"]["shared_jobs"].as_u64(), Some(0), "the baseline never shares");
    let csv = std::fs::read_to_string(out.join("jobs-exclusive_EASY.csv")).unwrap();
    assert!(csv.starts_with("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"));
    assert_eq!(csv.lines().count(), 15);
    let swf = std::fs::read_to_string(out.join("exclusive_EASY.swf")).unwrap();
    assert!(swf.contains("; MaxProcs: 16"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3, "three CDF plots");
}

#[test]
fn a_malformed_record_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.swf");
    std::fs::write(&bad, "; MaxNodes: 2\n; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 -1 -1 1 1 1 1 -1 -1 -1 -1\n2 5 -1 ten 1 -1 -1 1 -1 -1 1 1 1 1 -1 -1 -1 -1\n").unwrap();
    let o = cosched(&["simulate", "--swf", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{}:4: field 4 (run time): `ten` is not a number", bad.display())), "{err}");
    // A job wider than the cluster names its line too.
    std::fs::write(&bad, "1 0 -1 10 9 -1 -1 1 -1 -1 1 1 1 1 -1 -1 -1 -1\n").unwrap();
    let o = cosched(&["simulate", "--swf", bad.to_str().unwrap(), "--nodes", "2", "--cores", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.swf:1: job 1 uses 9 processors; the cluster has 8"));
    let o = cosched(&["simulate", "--swf", "no-such.swf"]);
    assert_eq!(o.status.code(), Some(2));
    let o = cosched(&["simulate", "--swf", bad.to_str().unwrap(), "--nodes", "2", "--cores", "8", "--policy", "fifo"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bench_simulate_times_the_trace_engine_exclusive_and_sharing() {
    let out = cosched(&["bench", "simulate", "--repeats", "1", "--orders", "2", "--jobs", "3000", "--nodes", "30", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = v["swf"].as_array().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!((d[0]["jobs"].as_u64(), d[0]["shared_jobs"].as_u64()), (Some(3000), Some(0)), "exclusive EASY shares nothing");
    assert!(d[1]["shared_jobs"].as_u64().unwrap() > 0, "conflict-aware shares some nodes");
    assert_eq!(d[1]["seconds"]["n"].as_u64(), Some(1));
    // (f): 10k jobs on 100, 1k and 10k nodes, exclusive and sharing.
    assert_eq!(v["scaling"]["runs"].as_array().unwrap().len(), 6);
    let out = cosched(&["bench", "simulate", "--repeats", "1", "--scaling", "jobs=2000 nodes=20,200 sharing=exclusive", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["scaling"]["runs"].as_array().unwrap();
    assert_eq!((runs.len(), v.get("swf")), (4, None), "--scaling runs (f) alone");
    for pair in runs.chunks(2) {
        assert_eq!(pair[0]["makespan"], pair[1]["makespan"], "the exclusive policy schedules as exclusive EASY");
        assert_eq!(pair[1]["shared_jobs"], 0);
    }
}

#[test]
fn a_gzip_bomb_is_refused_at_the_bound_with_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.swf.gz");
    // 8 gzip members of 1 MiB of zeros each: 8 MiB of "text" from about 8 KiB.
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!("head -c 1048576 /dev/zero | gzip -1 > m.gz && for i in 1 2 3 4 5 6 7 8; do cat m.gz; done > {}", bomb.display()))
        .current_dir(dir.path())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no gzip here to make the bomb");
        return;
    }
    assert!(std::fs::metadata(&bomb).unwrap().len() < 64 << 10);
    let run = |limit: &str| Command::new(env!("CARGO_BIN_EXE_cosched")).args(["simulate", "--swf"]).arg(&bomb).env("COSCHED_SWF_MAX_MIB", limit).output().unwrap();
    let o = run("4");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{}: inflates to over 4 MiB of text; expected a trace of at most that (COSCHED_SWF_MAX_MIB=MiB raises the bound)", bomb.display())), "{err}");
    // Raised past it, the bomb inflates and is then refused as what it is: no text.
    let o = run("16");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("inflates to") && err.contains("bomb.swf.gz"), "{err}");
    let o = run("lots");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("COSCHED_SWF_MAX_MIB=lots: expected a whole number of MiB"));
}
