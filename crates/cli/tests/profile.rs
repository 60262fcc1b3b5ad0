//! `cosched profile` as a binary, on real short jobs: what it stores, how it
//! selects jobs, how it refuses bad input and how it stops on Ctrl-C.
//!
//! No assertion is a timing threshold. The one load band (a busy kernel keeps
//! one core busy) is a ratio of CPU time to wall time, judged only when
//! /proc/stat shows that nothing else used CPU 0, where every profiled job is
//! pinned, during the run.

mod common;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cosched_model::profile::{JobProfile, SyscallSource};
use cosched_store::{CampaignKind, CampaignStatus, Store};

/// Every profiled job is pinned to CPU 0, so two tests at once would share
/// it and blur each other's load: one at a time.
static CPU0: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    CPU0.lock().unwrap_or_else(|e| e.into_inner())
}

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosched"));
    cmd.args(args).env_remove("COSCHED_DB").env_remove("COSCHED_DATA_DIR").env("COSCHED_RUN_LOCK", common::private_lock());
    cmd
}

fn cosched(args: &[&str]) -> Output {
    command(args).output().expect("cosched runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A workload file and a database path in a fresh directory.
struct Case {
    _dir: tempfile::TempDir,
    workload: PathBuf,
    db: PathBuf,
}

impl Case {
    fn new(workload: &str) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.toml");
        std::fs::write(&path, workload).unwrap();
        let db = dir.path().join("data").join("cosched.db");
        Case { workload: path, db, _dir: dir }
    }

    /// `cosched profile --workload W --db D` and `extra`.
    fn args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["profile", "--workload", self.workload.to_str().unwrap(), "--db", self.db.to_str().unwrap()];
        a.extend_from_slice(extra);
        a
    }

    fn profile(&self, extra: &[&str]) -> Output {
        let out = cosched(&self.args(extra));
        assert!(out.status.success(), "cosched profile failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
        out
    }

    fn store(&self) -> Store {
        Store::open_existing(&self.db).unwrap()
    }
}

/// `compute` work for about `ms` milliseconds on this node. The kernel binary
/// is built with this test's profile, and unoptimized it runs ~200x slower:
/// without the scaling a debug `cargo test` would take minutes.
fn compute_work(ms: u64) -> u64 {
    if cfg!(debug_assertions) {
        (ms / 10).max(1)
    } else {
        ms * 24
    }
}

fn two_jobs() -> String {
    format!(
        "[[jobs]]\nname = \"busy\"\nkernel = \"compute\"\nwork = {}\n\n\
         [[jobs]]\nname = \"nap\"\ncommand = \"sh -c 'sleep 0.2'\"\n",
        compute_work(10)
    )
}

#[test]
fn profile_stores_a_counted_run_the_timed_runs_and_a_profile_per_job() {
    let _g = one_at_a_time();
    let case = Case::new(&two_jobs());
    let out = case.profile(&["--interval", "100ms", "--repeats", "2"]);
    let stdout = text(&out.stdout);
    for expected in ["busy", "nap", "solo s", "syscalls/s", "U mean / peak", "campaign 1"] {
        assert!(stdout.contains(expected), "no `{expected}` in:\n{stdout}");
    }

    let store = case.store();
    let campaigns = store.campaigns().unwrap();
    assert_eq!(campaigns.len(), 1);
    let c = &campaigns[0];
    assert_eq!((c.kind, c.status, c.workload.as_str()), (CampaignKind::Profile, CampaignStatus::Done, "w"));
    assert_eq!(c.params["repeats"], 2);
    assert_eq!(c.params["counted_run_repeat"], 2);

    let runs = store.solo_runs(c.id).unwrap();
    assert_eq!(runs.len(), 6, "per job one counted run and two timed runs: {runs:?}");
    for job in ["busy", "nap"] {
        let mine: Vec<_> = runs.iter().filter(|(_, r)| r.job == job).collect();
        let repeats: BTreeSet<u32> = mine.iter().map(|(_, r)| r.repeat).collect();
        assert_eq!(repeats, BTreeSet::from([0, 1, 2]), "{job}");
        for (id, r) in &mine {
            assert_eq!((r.cpus.as_slice(), r.exit_code, r.interval_s), ([0].as_slice(), Some(0), 0.1), "{r:?}");
            // The timed runs must not pay for perf's counting.
            if r.repeat < 2 {
                assert_eq!(r.syscall_source.as_deref(), Some(SyscallSource::ProcSyscrSyscw.name()), "{r:?}");
            }
            let samples = store.samples(*id).unwrap();
            assert!(samples.len() >= 2, "{job} repeat {}: {} samples", r.repeat, samples.len());
            assert_eq!(samples[0].t_s, 0.0);
            assert!(samples.windows(2).all(|w| w[1].t_s > w[0].t_s));
        }
        let timing = if job == "busy" { "work-phase" } else { "process" };
        assert!(mine.iter().all(|(_, r)| r.timing == timing), "{job}: {mine:?}");
    }

    let profiles = store.profiles(c.id).unwrap();
    assert_eq!(profiles.iter().map(|p| p.job.as_str()).collect::<Vec<_>>(), ["busy", "nap"]);
    for p in &profiles {
        let jp: JobProfile = p.summary.clone();
        assert_eq!(jp.solo_s.n, 2, "{}", p.job);
        let counted = jp.counted_run.as_ref().expect("auto makes a counted run");
        assert_eq!(jp.syscall_source, counted.syscall_source);
        assert_eq!(jp.syscall_count, counted.syscall_count);
        // Any process makes system calls (exec, mmap, exit) whatever the source.
        assert!(jp.syscall_count.unwrap_or(0) > 0, "{}: {jp:?}", p.job);
        assert_eq!(jp.summary.syscall_source, SyscallSource::ProcSyscrSyscw);
    }
    let busy = store.latest_job_profile(&profiles[0].program).unwrap().expect("a done campaign's profile is found");
    assert_eq!(busy.1.job, "busy");

    let info = cosched(&["db", "info", "--json", "--db", case.db.to_str().unwrap()]);
    assert!(info.status.success());
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["campaigns"][0]["kind"], "profile");
    assert_eq!(info["campaigns"][0]["status"], "done");
    assert_eq!(info["campaigns"][0]["runs"], 6);
}

#[test]
fn json_prints_the_stored_records() {
    let _g = one_at_a_time();
    let case = Case::new(&two_jobs());
    let out = case.profile(&["--interval", "100ms", "--repeats", "1", "--syscalls", "proc", "--json"]);
    let printed: Vec<cosched_store::ProfileRecord> = serde_json::from_slice(&out.stdout).unwrap();
    let store = case.store();
    let id = store.campaigns().unwrap()[0].id;
    assert_eq!(printed, store.profiles(id).unwrap());
    // /proc counting costs nothing, so no separate counted run is made.
    assert_eq!(store.solo_runs(id).unwrap().len(), 2);
    for p in &printed {
        let jp: JobProfile = p.summary.clone();
        assert_eq!((jp.counted_run, jp.syscall_source), (None, SyscallSource::ProcSyscrSyscw));
    }
}

/// Busy seconds of CPU `cpu` since boot (all but idle, iowait and steal).
fn cpu_busy_s(cpu: u32) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat.lines().find(|l| l.starts_with(&format!("cpu{cpu} "))).unwrap();
    let v: Vec<f64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
    let tck = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    let ticks: f64 = text(&tck.stdout).trim().parse().unwrap();
    let total: f64 = v.iter().take(8).sum();
    (total - v[3] - v[4] - v[7]) / ticks
}

#[test]
fn a_busy_kernel_keeps_one_core_busy() {
    let _g = one_at_a_time();
    let case = Case::new(&format!("[[jobs]]\nname = \"busy\"\nkernel = \"compute\"\nwork = {}\n", compute_work(250)));
    let before = cpu_busy_s(0);
    let start = Instant::now();
    case.profile(&["--interval", "100ms", "--repeats", "1"]);
    let (busy0, elapsed) = (cpu_busy_s(0) - before, start.elapsed().as_secs_f64());
    let store = case.store();
    let c = &store.campaigns().unwrap()[0];
    let host_cores = c.params["host_cores"].as_f64().unwrap();
    let mut job_cpu = 0.0;
    for (id, _) in store.solo_runs(c.id).unwrap() {
        let s = store.samples(id).unwrap();
        let (first, last) = (&s[0], s.last().unwrap());
        job_cpu += (last.cpu_user_s + last.cpu_sys_s) - (first.cpu_user_s + first.cpu_sys_s);
    }
    let p: JobProfile = store.profiles(c.id).unwrap()[0].summary.clone();
    let cores = p.summary.host_load_mean * host_cores;
    eprintln!("busy kernel: U x {host_cores} cores = {cores:.3}; CPU 0 busy {busy0:.2} s, the job's {job_cpu:.2} s");
    assert!((p.summary.cores_used - cores).abs() < 1e-9);
    assert!(p.summary.host_load_peak * host_cores <= 1.25, "one pinned thread, one core (plus a clock tick): {p:?}");
    // cosched itself (start-up, the store, its unpinned sampler) may use CPU
    // 0 a little; another tenant's work would use much more.
    let others = busy0 - job_cpu;
    if others > 0.1 * elapsed {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("load band not judged: other work took {others:.2} s of CPU 0 in {elapsed:.2} s"));
        return;
    }
    assert!((0.7..=1.05).contains(&cores), "U x cores = {cores:.3}: {p:?}");
}

#[test]
fn job_selects_by_name_and_by_the_name_written_for_copies() {
    let _g = one_at_a_time();
    let case = Case::new(
        "[[jobs]]\nname = \"a\"\ncommand = \"true\"\n\n\
         [[jobs]]\nname = \"b\"\ncommand = \"true\"\n\n\
         [[jobs]]\nname = \"c\"\ncommand = \"true\"\ncount = 2\n",
    );
    case.profile(&["--job", "c", "--job", "b", "--interval", "100ms", "--repeats", "1", "--syscalls", "proc"]);
    let store = case.store();
    let id = store.campaigns().unwrap()[0].id;
    let jobs: Vec<String> = store.profiles(id).unwrap().into_iter().map(|p| p.job).collect();
    assert_eq!(jobs, ["b", "c.1", "c.2"]);
    let runs: Vec<String> = store.solo_runs(id).unwrap().into_iter().map(|(_, r)| r.job).collect();
    assert_eq!(runs, ["b", "c.1", "c.2"], "workload order, one timed run each");
}

#[test]
fn an_unknown_job_is_exit_2_naming_the_jobs_and_writes_nothing() {
    let case = Case::new(&two_jobs());
    let out = cosched(&case.args(&["--job", "busy", "--job", "nope"]));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--job nope") && err.contains("busy, nap"), "{err}");
    assert!(!case.db.exists(), "an unknown job created the database");
}

#[test]
fn bad_input_is_exit_2_and_creates_no_database() {
    let case = Case::new("[[jobs]]\nname = \"a\"\nkernel = \"nope\"\nwork = 1\n");
    let out = cosched(&case.args(&[]));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("w.toml:3:10"), "{err}");
    assert!(!case.db.exists() && !case.db.parent().unwrap().exists(), "a bad workload created the database");

    let good = Case::new(&two_jobs());
    for bad in [
        &["--repeats", "0"][..],
        &["--interval", "0s"][..],
        &["--interval", "soon"][..],
        &["--syscalls", "strace"][..],
    ] {
        let out = cosched(&good.args(bad));
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out.stderr));
        assert!(!good.db.exists(), "{bad:?} created the database");
    }
}

#[test]
fn help_has_examples() {
    let out = cosched(&["profile", "--help"]);
    let help = text(&out.stdout);
    assert!(out.status.success());
    assert!(help.contains("Examples") && help.contains("cosched profile --workload"), "{help}");
    assert!(text(&cosched(&["--help"]).stdout).contains("profile"), "--help does not list profile");
}

/// Processes whose command line contains `marker`, with their process groups.
fn processes_with(marker: &str) -> Vec<(i32, i32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if !text(&cmdline).contains(marker) {
            continue;
        }
        if let Some(pgid) = pgid_of(pid) {
            found.push((pid, pgid));
        }
    }
    found
}

fn pgid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: state, ppid, pgrp.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(2)?.parse().ok()
}

/// Live processes (not zombies) of process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat.rfind(')').map(|i| stat[i + 1..].trim_start().starts_with('Z')).unwrap_or(true);
            !zombie && pgid_of(pid) == Some(pgid)
        })
        .collect()
}

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    // A guard against a hang, not a measurement: the events come in well under a second.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_marks_the_campaign_interrupted_exits_130_and_leaves_no_job() {
    let _g = one_at_a_time();
    // `$0` carries the marker, so the job's shell is found by its command line;
    // its child `sleep` is in the same process group.
    let marker = format!("cosched-profile-test-{}", std::process::id());
    let case = Case::new(&format!(
        "[[jobs]]\nname = \"long\"\ncommand = [\"sh\", \"-c\", \"sleep 30 & wait\", \"{marker}\"]\n"
    ));
    let mut child = command(&case.args(&["--interval", "100ms"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = wait_for("the job to start", || processes_with(&marker).first().map(|&(_, g)| g));
    // The sleep must be running too, or the test would pass on a job not yet forked.
    wait_for("the job's sleep", || (group_members(pgid).len() >= 2).then_some(()));
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = wait_for("cosched to exit", || child.try_wait().unwrap());
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(group_members(pgid), Vec::<i32>::new(), "the job's process group outlived cosched");
    assert!(processes_with(&marker).is_empty());

    let store = case.store();
    let c = &store.campaigns().unwrap()[0];
    assert_eq!(c.status, CampaignStatus::Interrupted);
    assert!(store.profiles(c.id).unwrap().is_empty(), "no profile from runs that never ended");
}
