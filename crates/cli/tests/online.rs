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

/// `Decision::Move` on real processes: a Lua policy starts a shell job
/// (which has started a child) on core 0 of a 2-core pool and, 0.8 s
/// later, moves it to core 1. The job reads the CPUs it may use before
/// and after from /proc: the shell's and its child's (a task that existed
/// before the move) both read `1` afterwards, whichever the runner uses
/// (the cgroup's cpuset rewritten, or the affinity of every task).
#[test]
fn a_running_job_moved_from_core_0_to_core_1_has_every_task_on_core_1() {
    let cpus = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:").map(|v| v.trim().to_string()))
        .unwrap();
    if cpus != "0-1" && !cpus.starts_with("0-") {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("cores 0 and 1 are not both ours (Cpus_allowed_list {cpus})"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let script = dir.path().join("move.lua");
    std::fs::write(
        &script,
        "local moved = false\n\
         function decide(view)\n\
           if #view.queue > 0 then return {{start = view.queue[1].id}} end\n\
           local r = view.running[1]\n\
           if r == nil or moved then wake_at = nil; return {} end\n\
           r.since = r.since or view.time\n\
           if view.time < r.since + 0.8 then wake_at = r.since + 0.8; return {} end\n\
           moved, wake_at = true, nil\n\
           return {{move = r.id, cores = {1}}}\n\
         end\n",
    )
    .unwrap();
    let wl = dir.path().join("w.toml");
    let allowed = |pid: &str| format!("grep Cpus_allowed_list /proc/{pid}/status | tr -d '[:space:]' | cut -d: -f2");
    let cmd = format!(
        "sleep 3 & c=$!; sleep 0.3; a=$({}); b=$({}); sleep 1.2; echo \"$a $b $({}) $({})\" > {}; kill $c; wait",
        allowed("$$"),
        allowed("$c"),
        allowed("$$"),
        allowed("$c"),
        seen.display()
    );
    std::fs::write(&wl, format!("[[pools]]\nname = \"host\"\ncores = 2\n\n[[jobs]]\nname = \"mover\"\ncommand = [\"sh\", \"-c\", {cmd:?}]\ntimeout = 30.0\n"))
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--solo", "stored", "--json", "--policy"])
        .arg(format!("lua:path={}", script.display()))
        .arg("--workload")
        .arg(&wl)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("policy-error"), "{err}");
    let seen = std::fs::read_to_string(&seen).unwrap_or_else(|e| panic!("the job wrote nothing ({e}): {err}"));
    assert_eq!(seen.split_whitespace().collect::<Vec<_>>(), ["0", "0", "1", "1"], "shell and child before, then after: {err}");
    let conn = rusqlite::Connection::open(dir.path().join("c.db")).unwrap();
    let detail: String = conn.query_row("SELECT detail FROM run_journal WHERE event = 'move'", [], |r| r.get(0)).unwrap();
    assert!(detail.starts_with("cpus 1"), "{detail}");
}
