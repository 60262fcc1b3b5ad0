//! Hardening of the node runner (issue 19) and the job environment
//! (issue 18): orphans of a job are found and killed without cgroups (the
//! runner is their subreaper), files are never written through a planted
//! link and get fixed modes whatever the umask, under sudo every file is
//! opened as the invoking user (issue 36: a root-only file named as output
//! is refused and left as it was), a job's output set to a device, a FIFO
//! or a 300 MB line is never read back whole, a memory limit that does not
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
        progress: None,
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
fn files_replace_planted_symbolic_links_refuse_hard_links_and_get_fixed_modes() {
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
    // A second name of a file is refused: truncating it would change the
    // other name's content, and nothing is deleted to make room.
    let r2 = files::write_file(&hard, b"log", None).unwrap_err().to_string();
    let sub = dir.path().join("logs").join("run-1");
    let r3 = files::create_dir(&sub, None);
    // SAFETY: as above, restoring the mask.
    unsafe { libc::umask(old) };
    r1.unwrap();
    assert!(r2.contains("job.log") && r2.contains("2 names"), "{r2}");
    r3.unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "report");
    assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    for (p, mode) in [(&link, 0o644), (&sub, 0o755), (&sub.parent().unwrap().to_path_buf(), 0o755)] {
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

/// An unprivileged user made for one test (`useradd --system`), removed
/// when dropped; `None` (with `skipped:` printed) when not root.
struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl TestUser {
    fn new(test: &str) -> Option<TestUser> {
        // SAFETY: geteuid cannot fail and touches no memory.
        if unsafe { libc::geteuid() } != 0 {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &format!("{test} needs root to create a user and act for it"));
            return None;
        }
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("cosched-t-{}-{}", std::process::id(), N.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        // Retried: another test's useradd may hold /etc/passwd's lock.
        let add = || std::process::Command::new("useradd").args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", &name]).status();
        let ok = (0..10).map(|_| add()).find(|r| r.as_ref().is_ok_and(|s| s.success()) || { std::thread::sleep(std::time::Duration::from_millis(300)); false }).unwrap_or_else(add);
        if !ok.as_ref().is_ok_and(|s| s.success()) {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &format!("{test}: useradd {name} failed ({ok:?})"));
            return None;
        }
        let id = |flag: &str| -> u32 {
            let o = std::process::Command::new("id").args([flag, &name]).output().unwrap();
            String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
        };
        let (uid, gid) = (id("-u"), id("-g"));
        Some(TestUser { name, uid, gid })
    }

    fn ids(&self) -> Option<(u32, u32)> {
        Some((self.uid, self.gid))
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel").arg(&self.name).status();
    }
}

/// Content, mode, owner and inode of a file.
fn snapshot(p: &std::path::Path) -> (Vec<u8>, u32, u32, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (std::fs::read(p).unwrap(), m.mode(), m.uid(), m.ino())
}

#[test]
fn under_sudo_files_are_opened_as_the_invoking_user() {
    use std::os::unix::fs::MetadataExt;
    let Some(u) = TestUser::new("under_sudo_files_are_opened_as_the_invoking_user") else { return };
    let d = tempfile::tempdir().unwrap();
    // Everyone may write here (no sticky bit: the user may even rename
    // over root's file), and a root-only directory inside.
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let shadow = d.path().join("shadow");
    std::fs::write(&shadow, "root:secret\n").unwrap();
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = snapshot(&shadow);
    let locked = d.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();

    // A root-only file is refused, byte for byte, mode and owner kept.
    let e = files::write_file(&shadow, b"taken", u.ids()).unwrap_err().to_string();
    assert!(e.contains("shadow") && e.contains("Permission denied") && e.contains(&format!("uid {}", u.uid)), "{e}");
    assert_eq!(snapshot(&shadow), before);
    // Nor read back as that user.
    assert!(files::read_tail(&shadow, u.ids()).not_read.is_some_and(|w| w.contains("Permission denied")));
    // A file in a directory the user may not write is not created, nor a
    // directory.
    assert!(files::write_file(&locked.join("new"), b"x", u.ids()).is_err());
    assert!(files::create_dir(&locked.join("sub"), u.ids()).is_err());
    assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 0);
    // A symbolic link to the root file is replaced (as the user, who may
    // remove names here), never written through.
    let link = d.path().join("trace.csv");
    std::os::unix::fs::symlink(&shadow, &link).unwrap();
    files::write_file(&link, b"trace", u.ids()).unwrap();
    assert_eq!(snapshot(&shadow), before);
    let m = std::fs::symlink_metadata(&link).unwrap();
    assert!(m.is_file() && m.uid() == u.uid && m.gid() == u.gid && m.mode() & 0o7777 == 0o644, "{m:?}");
    // A path the user may write is written and belongs to the user, and
    // so does a directory made for them.
    let sub = d.path().join("report").join("logs");
    files::create_dir(&sub, u.ids()).unwrap();
    assert_eq!((std::fs::metadata(&sub).unwrap().uid(), std::fs::metadata(&sub).unwrap().mode() & 0o7777), (u.uid, 0o755));
    files::write_file(&sub.join("index.html"), b"<p>", u.ids()).unwrap();
    assert_eq!(std::fs::metadata(sub.join("index.html")).unwrap().uid(), u.uid);
    // Written again: truncated in place, same inode.
    let ino = std::fs::metadata(sub.join("index.html")).unwrap().ino();
    files::write_file(&sub.join("index.html"), b"<q>", u.ids()).unwrap();
    assert_eq!((std::fs::read(sub.join("index.html")).unwrap(), std::fs::metadata(sub.join("index.html")).unwrap().ino()), (b"<q>".to_vec(), ino));
    // This thread's credentials were never changed.
    // SAFETY: geteuid cannot fail and touches no memory.
    assert_eq!(unsafe { libc::geteuid() }, 0);
}

#[test]
fn a_job_output_set_to_a_root_file_is_refused_as_the_user_and_the_run_goes_on() {
    let Some(u) = TestUser::new("a_job_output_set_to_a_root_file_is_refused_as_the_user_and_the_run_goes_on") else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let shadow = d.path().join("shadow");
    std::fs::write(&shadow, "root:secret\n").unwrap();
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = snapshot(&shadow);
    let mut bad = job("bad", "echo overwritten");
    bad.stdout = Some(shadow.clone());
    let mut good = job("good", "id -u");
    good.stdout = Some(d.path().join("good.out"));
    let ended = run_as("rootfile", u.ids(), &[bad, good], &d.path().join("logs")).unwrap();
    assert_eq!(ended[0].status, JobStatus::SpawnFailed);
    assert!(ended[0].output_tail.contains("shadow: Permission denied"), "{}", ended[0].output_tail);
    assert_eq!(snapshot(&shadow), before);
    assert_eq!(ended[1].status, JobStatus::Ok);
    assert_eq!(std::fs::read_to_string(d.path().join("good.out")).unwrap().trim(), u.uid.to_string());
}

/// [`run`] with jobs run as `user`, without cgroups.
fn run_as(tag: &str, user: Option<(u32, u32)>, jobs: &[NodeJob], log_dir: &std::path::Path) -> Result<Vec<Ended>, String> {
    let cfg = NodeConfig {
        pool_cpus: vec![vec![0]],
        shared_pool: vec![false],
        topology: None,
        scope: format!("test-harden-{tag}-{}", std::process::id()),
        log_dir: log_dir.to_path_buf(),
        user,
        isolation: Isolation::detect(Preference::None),
        clock_origin: 0.0,
        env: vec![],
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

/// The peak resident memory of this process so far, KiB.
fn peak_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap()
}

#[test]
fn devices_fifos_and_a_300_mb_line_as_job_output_are_never_read_back_whole() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    let mut jobs = Vec::new();
    for (name, out) in [("zero", "/dev/zero"), ("full", "/dev/full"), ("tty", "/dev/tty")] {
        let mut j = job(name, "echo hi; exit 0");
        j.stdout = Some(out.into());
        j.kernel = true;
        jobs.push(j);
    }
    let mut f = job("fifo", "echo hi");
    f.stdout = Some(fifo.clone());
    jobs.push(f);
    // One line of 300 MB, then a failure: the tail shown is cut, and the
    // runner's memory does not grow by the line.
    let mut long = job("long", "head -c 300000000 /dev/zero | tr '\\0' x; exit 3");
    long.kernel = true;
    jobs.push(long);
    let before = peak_kib();
    let ended = run("devices", Preference::None, 0, &jobs, &d.path().join("logs")).unwrap();
    let grown_mib = peak_kib().saturating_sub(before) / 1024;
    let status: Vec<JobStatus> = ended.iter().map(|e| e.status).collect();
    // /dev/tty: written into when this process has a terminal, else
    // opening it fails and the job cannot start; never read either way.
    assert!(matches!(status[2], JobStatus::Ok | JobStatus::SpawnFailed), "{status:?}");
    assert_eq!(status[..2], [JobStatus::Ok, JobStatus::Ok]);
    assert_eq!(status[3], JobStatus::SpawnFailed, "a FIFO is refused as output");
    assert_eq!(status[4], JobStatus::Failed(3));
    for e in &ended[..2] {
        assert_eq!((e.output_tail.as_str(), e.work_s), ("", None), "job {}: a device is never read back", e.job);
    }
    assert!(ended[3].output_tail.contains("fifo: is a device, FIFO or socket"), "{}", ended[3].output_tail);
    let tail = &ended[4].output_tail;
    assert!(tail.len() < 1000 && tail.starts_with("[... 299934464 bytes cut] xxx") && tail.ends_with("more bytes]"), "{} bytes: {}", tail.len(), &tail[..tail.len().min(80)]);
    assert!(grown_mib < 100, "the runner's peak memory grew by {grown_mib} MiB");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}
