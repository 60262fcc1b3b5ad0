//! Hardening of the node runner (issue 19) and the job environment
//! (issue 18): orphans of a job are found and killed without cgroups (the
//! runner is their subreaper), files are never written through a planted
//! link and get fixed modes whatever the umask, a memory limit that does not
//! fit in bytes is refused instead of wrapping, jobs named like cgroup files
//! run, and every job sees the variables HPC codes expect, matching its
//! cpuset.

use std::os::unix::fs::PermissionsExt;

use cosched_engine::{run_node, Platform, PoolInfo, SimJob};

mod common;
use common::{Alone, FirstFit};
use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::files;
use cosched_measure::node::{Ended, JobStatus, NodeConfig, NodeEvent, NodeExecutor, NodeJob};
use cosched_model::workload::PoolKind;


fn job(name: &str, cmd: &str) -> NodeJob {
    NodeJob {
        name: name.into(),
        argv: vec!["sh".into(), "-c".into(), cmd.into()],
        pool: 0,
        cores: 1,
        timeout: None,
        memory_mib: None,
        pids_max: None,
        solo: None,
        kernel: false,
        env: Vec::new(),
        workdir: None,
        stdout: None,
        stderr: None,
        variants: vec![],
    }
}

/// Runs `jobs` on CPU `cpu` (one pool of one core) and returns their ends.
fn run(tag: &str, pref: Preference, cpu: u32, jobs: &[NodeJob], log_dir: &std::path::Path) -> Result<Vec<Ended>, String> {
    let iso = Isolation::detect(pref);
    let cfg = NodeConfig {
        pool_cpus: vec![vec![cpu]],
        shared_pool: vec![false],
        topology: None,
        scope: format!("test-harden-{tag}-{}-{:?}", std::process::id(), pref),
        log_dir: log_dir.to_path_buf(),
        user: None,
        isolation: iso,
        clock_origin: 0.0,
        env: vec![("COSCHED_RUN".into(), "7".into()), ("COSCHED_REPEAT".into(), "2".into())],
    };
    let sim: Vec<SimJob> = jobs
        .iter()
        .map(|j| SimJob { name: j.name.clone(), arrival: 0.0, solo: 0.05, pool: 0, cores: 1, program: j.name.clone(), variants: vec![] })
        .collect();
    let platform = Platform { pools: vec![PoolInfo { name: "host".into(), cores: 1, kind: PoolKind::Cpu }] };
    let mut ended = Vec::new();
    let mut sink = |e: NodeEvent| {
        if let NodeEvent::Ended(e) = e {
            ended.push(e);
        }
        Ok(())
    };
    {
        let mut ex = NodeExecutor::new(cfg, jobs, &mut sink)?;
        run_node(&platform, &sim, &Alone, &mut FirstFit, &mut ex, &[]).map_err(|e| e.to_string())?;
    }
    ended.sort_by_key(|e| e.job);
    Ok(ended)
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) {
                out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[test]
fn a_double_forked_daemon_does_not_outlive_its_job_without_cgroups() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-harden-daemon-{}", std::process::id());
    // The daemon leaves the job's process group (setsid) and its parent
    // exits at once: neither killpg nor the leader's death reach it.
    // The job waits until the daemon has left, so the daemon never dies
    // with the group by luck.
    let flag = dir.path().join("daemon-left");
    let j = job(
        "daemon",
        &format!(
            "setsid sh -c 'touch {f}; sleep 60; : {marker}' </dev/null >/dev/null 2>&1 & while [ ! -e {f} ]; do sleep 0.01; done; exit 0",
            f = flag.display()
        ),
    );
    let ended = run("orphan", Preference::None, 0, &[j], dir.path()).unwrap();
    assert_eq!(ended[0].status, JobStatus::Ok);
    assert_eq!(processes_with(&marker), Vec::<String>::new(), "the daemon was killed with its job");
}

#[test]
fn a_job_sees_the_batch_variables_matching_its_cpuset() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = (std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) - 1) as u32;
    let mut j = job("envjob", "env; grep Cpus_allowed_list /proc/self/status");
    j.argv = vec!["sh".into(), "-c".into(), "env; grep Cpus_allowed_list /proc/self/status; pwd".into()];
    j.env = vec![("MY_VAR".into(), "x y".into())];
    j.workdir = Some(dir.path().to_path_buf());
    let out = dir.path().join("out").join("envjob-7-2.log");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    j.stdout = Some(out.clone());
    let ended = run("env", Preference::Auto, cpu, &[j], &dir.path().join("logs")).unwrap();
    assert_eq!(ended[0].status, JobStatus::Ok);
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        "OMP_NUM_THREADS=1".to_string(),
        format!("OMP_PLACES={{{cpu}}}"),
        "OMP_PROC_BIND=close".to_string(),
        format!("COSCHED_CPUS={cpu}"),
        "COSCHED_JOB=envjob".to_string(),
        "COSCHED_RUN=7".to_string(),
        "COSCHED_REPEAT=2".to_string(),
        "MY_VAR=x y".to_string(),
        format!("Cpus_allowed_list:\t{cpu}"),
        dir.path().display().to_string(),
    ] {
        assert!(lines.contains(&want.as_str()), "no line `{want}` in:\n{text}");
    }
}

#[test]
fn a_job_named_like_a_cgroup_file_runs() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = [job("tasks", "true"), job("notify_on_release", "true")];
    let ended = run("names", Preference::Auto, 0, &jobs, dir.path()).unwrap();
    assert_eq!(ended.iter().map(|e| e.status).collect::<Vec<_>>(), vec![JobStatus::Ok, JobStatus::Ok]);
}

#[test]
fn a_memory_limit_that_overflows_bytes_is_refused_not_wrapped_to_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job("big", "true");
    j.memory_mib = Some(1 << 44);
    let e = run("mem", Preference::Auto, 0, &[j], dir.path()).unwrap_err();
    assert!(e.contains("memory_mib = 17592186044416 does not fit"), "{e}");
}

#[test]
fn writing_to_dev_null_discards_and_leaves_it_a_device() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let null = std::path::Path::new("/dev/null");
    let before = std::fs::symlink_metadata(null).unwrap();
    assert!(before.file_type().is_char_device(), "/dev/null is already not a device on this machine");
    let r = files::write_file(null, b"<svg/>", None);
    let after = std::fs::symlink_metadata(null).unwrap();
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    if !after.file_type().is_char_device() && root {
        // Put the node's /dev/null back before failing, so one failure does
        // not spoil every later measurement on the machine.
        let _ = std::fs::remove_file(null);
        let path = std::ffi::CString::new("/dev/null").unwrap();
        // SAFETY: a valid C string; mknod only creates a device node.
        unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        // mknod's mode went through the umask.
        let _ = std::fs::set_permissions(null, std::fs::Permissions::from_mode(0o666));
    }
    r.unwrap();
    assert!(after.file_type().is_char_device(), "write_file replaced /dev/null with a {:?}", after.file_type());
    assert_eq!(after.ino(), before.ino(), "write_file made a new /dev/null");
    // A link to /dev/null (as /dev/stdout is a link to a terminal) is
    // written through and stays a link.
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("out");
    std::os::unix::fs::symlink(null, &link).unwrap();
    files::write_file(&link, b"<svg/>", None).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(null).unwrap().file_type().is_char_device());
    // A FIFO is refused, not replaced.
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = files::write_file(&fifo, b"x", None).unwrap_err().to_string();
    assert!(e.contains("device, FIFO or socket"), "{e}");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn files_replace_planted_links_instead_of_writing_through_them_with_fixed_modes() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep").unwrap();
    let link = dir.path().join("index.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let hard = dir.path().join("job.log");
    std::fs::hard_link(&target, &hard).unwrap();
    // SAFETY: umask only sets this process's file-creation mask.
    let old = unsafe { libc::umask(0) };
    let r1 = files::write_file(&link, b"report", None);
    let r2 = files::write_file(&hard, b"log", None);
    let sub = dir.path().join("logs").join("run-1");
    let r3 = files::create_dir(&sub, None);
    // SAFETY: as above, restoring the mask.
    unsafe { libc::umask(old) };
    r1.unwrap();
    r2.unwrap();
    r3.unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "report");
    assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    for (p, mode) in [(&link, 0o644), (&hard, 0o644), (&sub, 0o755), (&sub.parent().unwrap().to_path_buf(), 0o755)] {
        assert_eq!(std::fs::metadata(p).unwrap().permissions().mode() & 0o7777, mode, "{}", p.display());
    }
    // A planted directory link is refused, not followed.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let logs = dir.path().join("logs2");
    std::os::unix::fs::symlink(&elsewhere, &logs).unwrap();
    let e = files::create_dir(&logs, None).unwrap_err().to_string();
    assert!(e.contains("is a symbolic link"), "{e}");
}
