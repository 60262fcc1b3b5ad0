//! `cosched run` with real processes: SIGINT and SIGKILL leave no process of
//! the workload, `--resume` completes a run whose runner was SIGKILLed, a
//! second runner is refused, a bad workload writes nothing, and the report's
//! trace scores as the run did.

mod common;
use common::{stray_processes, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cosched_store::{RunStatus, Store};

fn cosched() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c
}

/// Three short jobs on one core, each carrying a marker so that any of
/// their processes that outlive the runner can be found. The first attempt
/// of job `b` hangs in a grandchild that outlives any test bound (only a
/// kill of the whole job ends it); later attempts are short.
fn workload(dir: &Path, marker: &str) -> PathBuf {
    let path = dir.join("w.toml");
    let flag = dir.join("b-ran");
    let b = format!(
        "if [ -e {f} ]; then sleep 0.1; else touch {f}; sh -c \"sleep 100; : {marker}-grandchild\" & wait; fi; : {marker}",
        f = flag.display()
    );
    let q = "'".repeat(3);
    std::fs::write(
        &path,
        format!(
            "[[pools]]\nname = \"host\"\ncores = 1\n\
             [[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.1; : {marker}'\"\n\
             [[jobs]]\nname = \"b\"\ncommand = [\"sh\", \"-c\", {q}{b}{q}]\n\
             [[jobs]]\nname = \"c\"\ncommand = \"sh -c 'sleep 0.1; : {marker}'\"\n"
        ),
    )
    .unwrap();
    path
}

/// One exclusive run with stored solo times: these tests are about killing
/// and resuming one run (a solo pass is journaled and resumed the same way).
fn run_cmd(wl: &Path, db: &Path, lock: &Path) -> Command {
    let mut c = run_policy(wl, db, lock, "exclusive");
    c.args(["--solo", "stored"]);
    c
}

fn run_policy(wl: &Path, db: &Path, lock: &Path, policy: &str) -> Command {
    let mut c = cosched();
    c.arg("run").arg("--workload").arg(wl).args(["--policy", policy, "--db"]).arg(db).arg("--lock").arg(lock);
    c.env("COSCHED_DATA_DIR", db.parent().unwrap());
    c
}

/// Jobs started in the stored runs.
fn started(db: &Path) -> Vec<String> {
    let Ok(s) = Store::open_existing(db) else { return vec![] };
    let Ok(runs) = s.runs() else { return vec![] };
    runs.iter().flat_map(|r| s.run_jobs(r.id).unwrap_or_default()).map(|j| j.start.job).collect()
}

#[test]
fn sigkill_leaves_no_process_and_resume_completes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-run-kill-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let child = run_cmd(&wl, &db, &lock).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until("job b starting", || started(&db).contains(&"b".to_string()));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal");
    // The watchdog and the leaders' death signal act asynchronously.
    wait_until("the workload's processes to be gone", || stray_processes(&[&marker]).is_empty());

    let out = run_cmd(&wl, &db, &lock).arg("--resume").arg("--json").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("resuming"), "{stderr}");
    let s = Store::open_existing(&db).unwrap();
    let runs = s.runs().unwrap();
    assert_eq!(runs.len(), 1, "resume continued the run, not a new one");
    assert_eq!(runs[0].status, RunStatus::Done);
    let jobs = s.run_jobs(runs[0].id).unwrap();
    let seen: Vec<(String, u32, String)> =
        jobs.iter().map(|j| (j.start.job.clone(), j.start.attempt, j.end.as_ref().unwrap().status.name().to_string())).collect();
    assert_eq!(
        seen,
        vec![
            ("a".into(), 0, "ok".into()),
            ("b".into(), 0, "killed".into()),
            ("b".into(), 1, "ok".into()),
            ("c".into(), 0, "ok".into())
        ]
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["runs"][0]["metrics"]["makespan"].as_f64().unwrap() > 0.0);
    assert!(stray_processes(&[&marker]).is_empty());
}

#[test]
fn sigint_kills_every_job_records_the_run_interrupted_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-run-int-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let mut child = run_cmd(&wl, &db, &lock).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    common::wait_while_alive(&mut child, "job b starting", || started(&db).contains(&"b".to_string()));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert_eq!(stray_processes(&[&marker]), Vec::<String>::new(), "no job outlives the runner");
    let s = Store::open_existing(&db).unwrap();
    let run = &s.runs().unwrap()[0];
    assert_eq!(run.status, RunStatus::Interrupted);
    let b = s.run_jobs(run.id).unwrap().into_iter().find(|j| j.start.job == "b").unwrap();
    assert_eq!(b.end.unwrap().status.name(), "killed");
}

#[test]
fn a_second_runner_on_the_node_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-run-lock-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    std::fs::write(dir.path().join("b-ran"), "").unwrap();
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let mut first = run_cmd(&wl, &db, &lock).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until("the first runner starting a job", || !started(&db).is_empty());
    let out = run_cmd(&wl, &dir.path().join("other.db"), &lock).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.id())), "{stderr}");
    assert!(!dir.path().join("other.db").exists(), "the refused runner opened no store");
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_bad_workload_file_writes_nothing_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\ncommand = \"true\"\ncores = 0\n").unwrap();
    let out = run_cmd(&wl, &db, &dir.path().join("lock")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.toml:4:"), "{stderr}");
    assert!(!db.exists());
    let out = run_policy(&workload(dir.path(), "x"), &db, &dir.path().join("lock"), "fifo").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown policy `fifo`"));
    assert!(!db.exists());
}

#[test]
fn the_reports_trace_read_back_scores_as_the_run_printed() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    // Three pinned jobs take turns on one core, one of them failing; a
    // command holds a comma and quotes, which the trace's program column
    // must carry intact.
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n\
         [[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.05; echo a,\\\"b\\\"'\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.02'\"\n\
         [[jobs]]\nname = \"c\"\ncommand = \"sh -c 'exit 3'\"\n",
    )
    .unwrap();
    let (db, lock, rep) = (dir.path().join("c.db"), dir.path().join("lock"), dir.path().join("rep"));
    let out = run_policy(&wl, &db, &lock, "noplan").arg("--report").arg(&rep).arg("--json").output().unwrap();
    // Job c failed: exit code 1, naming it, after the report and the JSON.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("job `c` in run") && stderr.contains("failed (exit code 3)"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    let id = run["run"]["id"].as_i64().unwrap();
    assert!(rep.join("attempts.csv").is_file());
    let batsim = std::fs::read_to_string(rep.join(format!("jobs-run{id}.csv"))).unwrap();
    assert!(batsim.starts_with("job_id,workload_name,profile,submission_time,") && batsim.contains("allocated_resources"), "{batsim}");

    let text = std::fs::read_to_string(rep.join(format!("trace-run{id}.csv"))).unwrap();
    let trace = cosched_model::trace::Trace::from_csv(&text).unwrap();
    let solo: Vec<f64> = trace.jobs.iter().map(|j| j.solo.unwrap()).collect();
    let m = cosched_model::metrics::compute(&trace.events, &solo).unwrap();
    assert!((m.makespan - run["metrics"]["makespan"].as_f64().unwrap()).abs() < 1e-9, "{text}");
    assert!((m.avg_turnaround - run["metrics"]["avg_turnaround"].as_f64().unwrap()).abs() < 1e-9, "{text}");
    let times = cosched_model::metrics::job_times(&trace.events, 3).unwrap();
    let printed = run["jobs"].as_array().unwrap();
    assert_eq!(printed.len(), 3);
    for j in printed {
        let i = j["job_index"].as_u64().unwrap() as usize;
        let tat = j["end"]["end_s"].as_f64().unwrap() - j["arrival_s"].as_f64().unwrap();
        assert!((times[i].finish - times[i].arrive - tat).abs() < 1e-9, "job {i}: {text}");
        assert_eq!(trace.jobs[i].name, j["job"].as_str().unwrap());
        assert_eq!(trace.jobs[i].status.map(|s| s.name()), j["end"]["status"].as_str());
        assert_eq!(trace.jobs[i].cpus, vec![0], "pinned to the pool's one CPU");
        // Memory follows the cores where a cpuset binds it: CPU 0's NUMA node.
        let mems = if stderr.contains("memory: bound to the NUMA nodes") { serde_json::json!([0]) } else { serde_json::json!([]) };
        assert_eq!(j["mems"], mems, "{stderr}");
    }
    if stderr.contains("memory: bound to the NUMA nodes") {
        let store = cosched_store::Store::open_existing(&db).unwrap();
        let journal = store.run_journal(cosched_store::ExecRunId(id)).unwrap();
        assert!(journal.iter().any(|e| e.event == "start" && e.detail.starts_with("cpus 0 mems 0 pgid")), "{journal:?}");
        let csv = std::fs::read_to_string(rep.join("attempts.csv")).unwrap();
        assert!(csv.lines().next().unwrap().ends_with(",beside,mems") && csv.lines().nth(1).unwrap().ends_with(",0"), "{csv}");
    }
    assert_eq!(trace.jobs[0].program, "command sh -c 'sleep 0.05; echo a,\"b\"'", "{text}");
    assert_eq!(trace.jobs[2].status, Some(cosched_model::run::JobStatus::Failed(3)));
}

/// With the default `--solo interleaved`, each repeat starts with a solo
/// pass that runs every job alone on the pool's CPUs rotated by the repeat,
/// and a job of a policy's run divides by the median of its passes so far
/// (those on its CPUs in the run's cache regime first): exact figures from
/// the store.
#[test]
fn solo_passes_give_each_job_a_reference_from_the_passes_before_its_run() {
    let two = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    let cores = if two { 2 } else { 1 };
    std::fs::write(
        &wl,
        format!(
            "[[pools]]\nname = \"host\"\ncores = {cores}\n\
             [[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.05'\"\n\
             [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.08'\"\n"
        ),
    )
    .unwrap();
    let (db, lock) = (dir.path().join("db"), dir.path().join("lock"));
    let out = run_policy(&wl, &db, &lock, "noplan").args(["--repeats", "2", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = Store::open_existing(&db).unwrap();
    let runs = s.runs().unwrap();
    let labels: Vec<(&str, u32)> = runs.iter().map(|r| (r.policy.as_str(), r.repeat)).collect();
    assert_eq!(labels, [("solo-pass", 0), ("noplan", 0), ("solo-pass", 1), ("noplan", 1)]);
    // Every run stored the node's conditions at its start (the regime its
    // references were matched to, and a resumed series' passes' regimes)
    // and, on two CPUs, the round trip again at its end.
    for r in &runs {
        let c = s.run_conditions(r.id).unwrap();
        assert_eq!(c.len(), if two { 2 } else { 1 }, "run {}", r.id);
        assert!(c.iter().all(|c| c.c2c.is_some() == two), "a round trip on a node with two CPUs");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["per_regime"].is_array(), "the per-regime check is in the JSON");
    let jobs: Vec<_> = runs.iter().map(|r| s.run_jobs(r.id).unwrap()).collect();
    // Passes run each job alone, one after the other, never beside another.
    for pass in [&jobs[0], &jobs[2]] {
        assert!(pass.iter().all(|j| j.start.beside.is_empty() && j.start.solo_s.is_none()));
        assert!(pass.iter().all(|j| j.end.as_ref().unwrap().slowdown.is_none()));
    }
    if two {
        assert!(jobs[0].iter().all(|j| j.start.cpus == [0]), "the first pass starts on CPU 0");
        assert!(jobs[2].iter().all(|j| j.start.cpus == [1]), "the second pass on CPU 1");
    }
    let wall = |j: &cosched_store::RunJobRecord| j.end.as_ref().unwrap().end_s - j.start.start_s;
    let pass_time = |pass: &[cosched_store::RunJobRecord], name: &str| wall(pass.iter().find(|p| p.start.job == name).unwrap());
    for j in jobs[1].iter() {
        // One pass so far: every tier gives it.
        assert_eq!(j.start.solo_s, Some(pass_time(&jobs[0], &j.start.job)), "job {}", j.start.job);
    }
    for j in jobs[3].iter() {
        let (p0, p1) = (pass_time(&jobs[0], &j.start.job), pass_time(&jobs[2], &j.start.job));
        let solo = j.start.solo_s.unwrap();
        if two {
            // Passes on CPU 0 then CPU 1: the one on its CPUs, unless the
            // cache regime moved and only the other pass shares the run's.
            assert!(solo == p0 || solo == p1, "job {}: {solo} of {p0}, {p1}", j.start.job);
        } else {
            // Both passes on its CPU: their median, or the one in its regime.
            assert!([p0, p1, (p0 + p1) / 2.0].contains(&solo), "job {}: {solo} of {p0}, {p1}", j.start.job);
        }
    }
    for j in jobs[1].iter().chain(jobs[3].iter()) {
        let sd = j.end.as_ref().unwrap().slowdown.unwrap();
        assert!((sd - wall(j) / j.start.solo_s.unwrap()).abs() < 1e-12);
    }
}

/// Twins (jobs of one program) share one solo run per pass: a pass of three
/// jobs of two programs runs two, the first of each program in the order,
/// and both twins divide by that run.
#[test]
fn a_solo_pass_runs_one_job_of_each_program_and_twins_share_its_reference() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n\
         [[jobs]]\nname = \"a1\"\ncommand = \"sh -c 'sleep 0.05'\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.08'\"\n\
         [[jobs]]\nname = \"a2\"\ncommand = \"sh -c 'sleep 0.05'\"\n",
    )
    .unwrap();
    let (db, lock) = (dir.path().join("db"), dir.path().join("lock"));
    let out = run_policy(&wl, &db, &lock, "noplan").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = Store::open_existing(&db).unwrap();
    let runs = s.runs().unwrap();
    let (pass, run) = (s.run_jobs(runs[0].id).unwrap(), s.run_jobs(runs[1].id).unwrap());
    assert_eq!(runs[0].policy, "solo-pass");
    let ran: Vec<&str> = pass.iter().map(|j| j.start.job.as_str()).collect();
    assert_eq!(ran, ["a1", "b"], "one job of each program, the first in the order");
    let time = |name: &str| {
        let j = pass.iter().find(|j| j.start.job == name).unwrap();
        j.end.as_ref().unwrap().end_s - j.start.start_s
    };
    for j in &run {
        let of = if j.start.job == "b" { "b" } else { "a1" };
        assert_eq!(j.start.solo_s, Some(time(of)), "job {} divides by {of}'s solo run", j.start.job);
    }
    assert_eq!(run.len(), 3, "the policy's run still runs every job");
}

#[test]
fn runs_lists_each_run_with_its_figures_and_show_names_the_failed_job() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n\
         [[jobs]]\nname = \"fine\"\ncommand = \"sleep 0.1\"\n\
         [[jobs]]\nname = \"broken\"\ncommand = \"sh -c 'exit 3'\"\n",
    )
    .unwrap();
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let out = run_cmd(&wl, &db, &lock).output().unwrap();
    assert!(out.status.code().is_some(), "{}", String::from_utf8_lossy(&out.stderr));

    let out = cosched().args(["runs", "--json", "--db"]).arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1, "one exclusive run, no solo pass with --solo stored");
    assert_eq!(rows[0]["policy"], "exclusive");
    assert_eq!(rows[0]["jobs"], 2);
    assert_eq!(rows[0]["not_ok"], serde_json::json!(["broken: failed (exit code 3)"]));
    assert!(rows[0]["makespan_s"].as_f64().unwrap() >= 0.1);

    let id = rows[0]["id"].as_i64().unwrap().to_string();
    let out = cosched().args(["runs", "show", &id, "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("| broken") && text.contains("failed (exit code 3)"), "{text}");
}

/// Job cgroups under a `cosched` directory that are frozen (v1
/// `freezer.state` FROZEN or FREEZING, v2 `cgroup.freeze` 1).
fn frozen_cgroups() -> Vec<String> {
    fn walk(dir: &Path, under: bool, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            let under = under || p.file_name().is_some_and(|n| n == "cosched");
            if under {
                let state = std::fs::read_to_string(p.join("freezer.state")).unwrap_or_default();
                let freeze = std::fs::read_to_string(p.join("cgroup.freeze")).unwrap_or_default();
                if state.trim() == "FROZEN" || state.trim() == "FREEZING" || freeze.trim() == "1" {
                    out.push(p.display().to_string());
                }
            }
            walk(&p, under, out);
        }
    }
    let mut out = Vec::new();
    for root in ["/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
        walk(Path::new(root), false, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn sigkill_while_a_job_is_suspended_leaves_no_process_and_no_frozen_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-run-frozen-{}", std::process::id());
    let (fa, fb) = (dir.path().join("a-ran"), dir.path().join("b-ran"));
    // First attempts hang (until killed); later ones are short.
    let hang = |f: &Path| format!("if [ -e {f} ]; then sleep 0.1; else touch {f}; sleep 100; fi; : {marker}", f = f.display());
    let q = "'".repeat(3);
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        format!(
            "[[pools]]\nname = \"host\"\ncores = 1\n\
             [[jobs]]\nname = \"sim\"\ncommand = [\"sh\", \"-c\", {q}{a}{q}]\n\
             [[jobs]]\nname = \"ana\"\narrival = 0.3\ncommand = [\"sh\", \"-c\", {q}{b}{q}]\n",
            a = hang(&fa),
            b = hang(&fb)
        ),
    )
    .unwrap();
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let journal_has = |event: &str| {
        let Ok(s) = Store::open_existing(&db) else { return false };
        let Ok(runs) = s.runs() else { return false };
        runs.iter().any(|r| s.run_journal(r.id).unwrap_or_default().iter().any(|e| e.event == event))
    };
    let mut cmd = run_policy(&wl, &db, &lock, "surpass");
    cmd.args(["--solo", "stored"]);
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until("job sim suspended", || journal_has("suspend"));
    wait_until("job ana running", || fb.exists());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal");
    wait_until("the workload's processes to be gone", || stray_processes(&[&marker]).is_empty());
    wait_until("no frozen cgroup of cosched", || frozen_cgroups().is_empty());

    let mut cmd = run_policy(&wl, &db, &lock, "surpass");
    cmd.args(["--solo", "stored", "--resume"]);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("sim suspended when the runner died"), "{stderr}");
    assert!(stray_processes(&[&marker]).is_empty());
}

/// `placement=NAME` in a policy spec places that policy's starts on the
/// node's topology: the label keeps it (two placements can run side by
/// side), and an unknown strategy is bad input naming the known ones.
#[test]
fn a_placement_in_the_policy_spec_is_kept_in_the_label_and_unknown_ones_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.05'\"\n[[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.05'\"\n",
    )
    .unwrap();
    let (db, lock) = (dir.path().join("db"), dir.path().join("lock"));
    let out = run_policy(&wl, &db, &lock, "noplan:placement=interference-aware")
        .args(["--baseline", "noplan:placement=compact", "--solo", "stored", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = Store::open_existing(&db).unwrap();
    let mut labels: Vec<String> = s.runs().unwrap().into_iter().map(|r| r.policy).collect();
    labels.sort();
    assert_eq!(labels, ["noplan:placement=compact", "noplan:placement=interference-aware"]);

    let bad = run_policy(&wl, &dir.path().join("db2"), &lock, "noplan:placement=everywhere").output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown placement `everywhere`") && err.contains("interference-aware"), "{err}");
}

#[test]
fn ctrl_z_during_a_run_is_refused_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-run-tstp-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    std::fs::write(dir.path().join("b-ran"), "").unwrap();
    let (db, lock) = (dir.path().join("c.db"), dir.path().join("lock"));
    let mut child = run_cmd(&wl, &db, &lock).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    common::wait_while_alive(&mut child, "a job starting", || !started(&db).is_empty());
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTSTP).unwrap();
    while child.try_wait().unwrap().is_none() {
        if common::process_state(child.id()) == Some('T') {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
            panic!("Ctrl-Z stopped the runner while its jobs ran on");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Ctrl-Z ignored"), "{stderr}");
    assert_eq!(started(&db).len(), 3, "every job ran");
}

/// The djsb table (issue 40): printed for a workload of djsb's shape (the
/// first job alone on its whole pool, the others arriving later), not for
/// jobs that merely arrive over time.
#[test]
fn djsb_figures_are_printed_for_the_djsb_shape_only() {
    let dir = tempfile::tempdir().unwrap();
    for (cores, djsb) in [(2, false), (1, true)] {
        let wl = dir.path().join(format!("w{cores}.toml"));
        std::fs::write(
            &wl,
            format!(
                "[[pools]]\nname = \"host\"\ncores = {cores}\n\
                 [[jobs]]\nname = \"simulation\"\ncommand = \"sleep 0.1\"\n\
                 [[jobs]]\nname = \"analysis\"\ncommand = \"sleep 0.05\"\narrival = 0.03\n"
            ),
        )
        .unwrap();
        let db = dir.path().join(format!("c{cores}.db"));
        let out = run_policy(&wl, &db, &dir.path().join("lock"), "noplan").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(text.contains("djsb (ParaStation"), djsb, "{cores} core(s):\n{text}");
    }
}
