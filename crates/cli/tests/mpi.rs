//! An Open MPI job as a cosched job: `mpirun -np 2` of examples/mpi's
//! communication job runs contained (both ranks in the job's cgroup, on
//! the job's cores), is timed like any job, and Ctrl-C of the runner ends
//! every rank.

mod common;
use common::{stray_processes, wait_while_alive};
use cosched_testkit::{skip, Lacks};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cosched_store::{RunStatus, Store};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds examples/mpi/comm into `dir`; None (and a counted skip) when Open
/// MPI's compiler or launcher is missing, which `./install.sh` installs.
fn build(dir: &Path) -> Option<PathBuf> {
    for tool in ["mpicc", "mpirun"] {
        if Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().map_or(true, |o| !o.status.success()) {
            skip(Lacks::Installed, &format!("{tool} not found (Debian: openmpi-bin, libopenmpi-dev; ./install.sh installs them)"));
            return None;
        }
    }
    let out = Command::new(repo().join("examples/mpi/build.sh")).arg(dir).output().unwrap();
    assert!(out.status.success(), "examples/mpi/build.sh: {}", String::from_utf8_lossy(&out.stderr));
    Some(dir.join("comm"))
}

/// cgroups are what this test checks; without them (not root, no cpuset)
/// there is nothing to check.
fn cgroups_here() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && Path::new("/sys/fs/cgroup").exists();
    if !ok {
        skip(Lacks::Machine, "needs root and a cgroup hierarchy to check containment");
    }
    ok
}

/// One job: `mpirun -np 2` of comm on the job's 2 cores, ranks bound by
/// Open MPI inside the cpuset cosched gave the job.
fn workload(dir: &Path, comm: &Path, args: &str) -> PathBuf {
    let path = dir.join("mpi.toml");
    std::fs::write(
        &path,
        format!(
            "[[pools]]\nname = \"host\"\ncores = 2\n\
             [[jobs]]\nname = \"comm\"\ncores = 2\n\
             command = \"mpirun -np 2 --bind-to core {comm} {args}\"\n\
             env = {{ OMPI_ALLOW_RUN_AS_ROOT = \"1\", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = \"1\" }}\n",
            comm = comm.display()
        ),
    )
    .unwrap();
    path
}

fn run(wl: &Path, db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c.arg("run").arg("--workload").arg(wl).args(["--policy", "exclusive", "--solo", "stored", "--db"]).arg(db);
    c.env("COSCHED_DATA_DIR", db.parent().unwrap());
    c
}

/// Pids of processes whose executable is `exe`.
fn ranks(exe: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if std::fs::read_link(e.path().join("exe")).is_ok_and(|p| p == exe) {
            out.push(pid);
        }
    }
    out
}

/// The cgroup lines of a process (v1: one per hierarchy), without the
/// hierarchy ids.
fn cgroups(pid: u32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split_once(':').map_or("", |x| x.1).to_string())
        .collect()
}

#[test]
fn a_two_rank_mpirun_job_is_contained_timed_and_recorded() {
    if !cgroups_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(comm) = build(&dir.path().join("bin")) else { return };
    let wl = workload(dir.path(), &comm, "pingpong 20 1 256");
    let db = dir.path().join("c.db");
    let out = run(&wl, &db).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s = Store::open_existing(&db).unwrap();
    let r = &s.runs().unwrap()[0];
    assert_eq!(r.status, RunStatus::Done);
    let jobs = s.run_jobs(r.id).unwrap();
    let end = jobs[0].end.as_ref().expect("the job ended");
    assert_eq!(end.status.name(), "ok", "{stderr}");
    assert!(end.end_s > jobs[0].start.start_s, "the job was timed");
    // Rank 0 printed its per-size lines into the job's log.
    let text: String = walk(dir.path()).into_iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    assert!(text.contains("pingpong ranks 2"), "rank 0's summary in the job's output: {text}");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn both_ranks_run_in_the_jobs_cgroup_and_ctrl_c_ends_them() {
    if !cgroups_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(comm) = build(&dir.path().join("bin")) else { return };
    // Long enough to be caught running: a million round trips per size.
    let wl = workload(dir.path(), &comm, "pingpong 1000000 1 4");
    let db = dir.path().join("c.db");
    let mut child = run(&wl, &db).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    wait_while_alive(&mut child, "both ranks running", || ranks(&comm).len() == 2);
    let pids = ranks(&comm);
    let groups: Vec<Vec<String>> = pids.iter().map(|&p| cgroups(p)).collect();
    assert_eq!(groups[0], groups[1], "both ranks in one group per hierarchy");
    assert!(
        groups[0].iter().any(|g| g.contains("/cosched/") && g.ends_with("comm")),
        "the ranks are in the job's cgroup cosched/<scope>/comm: {:?}",
        groups[0]
    );
    // Each rank bound to one core of the job's two by mpirun, inside the cpuset.
    let allowed: Vec<String> = pids
        .iter()
        .map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap();
            status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap().split(':').nth(1).unwrap().trim().to_string()
        })
        .collect();
    assert_ne!(allowed[0], allowed[1], "mpirun bound the ranks to different cores: {allowed:?}");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let marker = comm.display().to_string();
    common::wait_until("every rank gone", || ranks(&comm).is_empty());
    assert_eq!(stray_processes(&[&marker]), Vec::<String>::new(), "no mpirun or rank outlives the runner");
}
