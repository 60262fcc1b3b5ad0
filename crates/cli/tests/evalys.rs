//! Issue 40's bar: evalys, Batsim's analysis library, reads the Batsim
//! `jobs.csv` files cosched writes, and its mean utilisation equals the
//! held utilization cosched reports for the same schedule to 0.1 point;
//! the SWF written beside them parses as integers.
//!
//! Needs evalys 4.0.7 in a Python venv, which `.ci/run` creates:
//! `$COSCHED_EVALYS_PYTHON`, else `target/evalys-venv/bin/python`. Without
//! it the test says `skipped:` and `./test.sh` counts it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosched_testkit::{skip, Lacks};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn cosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("run cosched")
}

/// The venv's Python when evalys imports in it.
fn evalys_python() -> Option<PathBuf> {
    let python = std::env::var_os("COSCHED_EVALYS_PYTHON").map(PathBuf::from).unwrap_or_else(|| repo("target/evalys-venv/bin/python"));
    let ok = Command::new(&python).args(["-c", "import evalys.jobset"]).output().is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

/// evalys' mean utilisation of each jobs.csv over `resources` CPUs or
/// cores: the mean count of allocated resources from the first start to
/// the last finish, as `JobSet.mean_utilisation` gives it.
fn evalys_utilisation(python: &Path, files: &[(PathBuf, u64)]) -> Vec<f64> {
    let script = "import sys\nfrom evalys.jobset import JobSet\n\
                  for path, n in zip(sys.argv[1::2], sys.argv[2::2]):\n    print(JobSet.from_csv(path).mean_utilisation() / int(n))\n";
    let mut cmd = Command::new(python);
    cmd.args(["-c", script]);
    for (f, n) in files {
        cmd.arg(f).arg(n.to_string());
    }
    let out = cmd.output().expect("run python");
    assert!(out.status.success(), "evalys failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.trim().parse().unwrap_or_else(|_| panic!("not a number: {l}"))).collect()
}

#[test]
fn evalys_reads_simulate_swfs_jobs_csv_with_coscheds_held_utilization() {
    let Some(python) = evalys_python() else {
        skip(Lacks::Installed, "evalys is not installed in target/evalys-venv (.ci/run creates it) nor at $COSCHED_EVALYS_PYTHON");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("r");
    let trace = repo("examples/traces/small.swf");
    // Twice the load, so exclusive and sharing schedules differ and the
    // SWF's submit times are halved: no fractions may appear.
    let o = cosched(&["simulate", "--swf", trace.to_str().unwrap(), "--compress", "2", "--report", rep.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let resources = doc["nodes"].as_u64().unwrap() * doc["cores"].as_u64().unwrap();
    let outcomes = doc["outcomes"].as_array().unwrap();
    let stems: Vec<String> = outcomes
        .iter()
        .map(|x| x["label"].as_str().unwrap().chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect())
        .collect();
    let files: Vec<(PathBuf, u64)> = stems.iter().map(|s| (rep.join(format!("jobs-{s}.csv")), resources)).collect();
    for (f, _) in &files {
        assert!(f.is_file(), "{} missing; report holds {:?}", f.display(), std::fs::read_dir(&rep).unwrap().flatten().map(|e| e.file_name()).collect::<Vec<_>>());
    }
    let theirs = evalys_utilisation(&python, &files);
    for (x, u) in outcomes.iter().zip(&theirs) {
        let ours = x["held_utilization"].as_f64().unwrap();
        assert!((ours - u).abs() * 100.0 < 0.1, "{}: cosched {ours}, evalys {u}", x["label"]);
    }
    // Every SWF field of every record an integer.
    for s in &stems {
        let swf = std::fs::read_to_string(rep.join(format!("{s}.swf"))).unwrap();
        for line in swf.lines().filter(|l| !l.starts_with(';') && !l.trim().is_empty()) {
            for field in line.split_whitespace() {
                assert!(field.parse::<i64>().is_ok(), "{s}.swf: `{field}` is not an integer in `{line}`");
            }
        }
    }
}

#[test]
fn evalys_reads_a_real_runs_jobs_csv_with_the_traces_held_utilization() {
    let Some(python) = evalys_python() else {
        skip(Lacks::Installed, "evalys is not installed in target/evalys-venv (.ci/run creates it) nor at $COSCHED_EVALYS_PYTHON");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    // One CPU, three short jobs in turn, one failing: its line says so.
    std::fs::write(
        &wl,
        "name = \"evalys\"\n[[pools]]\nname = \"host\"\ncores = 1\n\
         [[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.1'\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.05'\"\n\
         [[jobs]]\nname = \"c\"\ncommand = \"sh -c 'exit 3'\"\n",
    )
    .unwrap();
    let rep = dir.path().join("rep");
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "noplan", "--solo", "stored", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .arg("--lock")
        .arg(&lock)
        .arg("--report")
        .arg(&rep)
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    // Job c failed: exit 1, after the report.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let name = |prefix: &str| {
        std::fs::read_dir(&rep)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}* in the report"))
    };
    let jobs = name("jobs-run");
    let trace = cosched_model::trace::Trace::from_csv(&std::fs::read_to_string(name("trace-run")).unwrap()).unwrap();
    let ours = cosched_model::batsim::held_utilization(&trace, 1).unwrap();
    let theirs = evalys_utilisation(&python, &[(jobs.clone(), 1)]);
    assert!((ours - theirs[0]).abs() * 100.0 < 0.1, "cosched {ours}, evalys {}", theirs[0]);
    let text = std::fs::read_to_string(&jobs).unwrap();
    assert!(text.starts_with("job_id,workload_name,profile,submission_time,"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().any(|l| l.contains(",0,COMPLETED_FAILED,")), "{text}");
}
