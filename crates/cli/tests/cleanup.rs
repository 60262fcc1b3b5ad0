//! Measuring verbs clean up after themselves (issue 36): `pairs` and
//! `profile` killed outright leave no job running, and the node lock stays
//! held until the last process of their jobs is gone.
//! (`scripts/adversarial/cleanup.sh` repeats this 50 times at random points.)

mod common;
use common::{stray_processes, wait_until};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

/// Jobs whose processes outlive their leader's death by seconds: a child
/// in the leader's process group, as a shell script's commands are.
fn workload(dir: &Path, marker: &str) -> std::path::PathBuf {
    let path = dir.join("w.toml");
    std::fs::write(
        &path,
        format!(
            "[[jobs]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"sh -c 'sleep 20; : {marker}' & sleep 20; wait\"]\n\
             [[jobs]]\nname = \"b\"\ncommand = [\"sh\", \"-c\", \"sleep 20; : {marker}\"]\n"
        ),
    )
    .unwrap();
    path
}

/// Whether another process holds the lock file's flock.
fn lock_held(lock: &Path) -> bool {
    let Ok(f) = std::fs::File::open(lock) else { return false };
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    r != 0
}

/// Starts `verb` on jobs that run 20 s, SIGKILLs it once a job of it runs,
/// and checks that until every job process is gone the lock stays held,
/// and that they are all gone soon (a bound on a hang, not a timing).
fn killed_outright_leaves_nothing(verb: &[&str], tag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-cleanup-{tag}-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let lock = common::private_lock();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .env("COSCHED_RUN_LOCK", &lock)
        .args(verb)
        .arg("--workload")
        .arg(&wl)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("a job starting", || !stray_processes(&[&marker]).is_empty());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // Whenever the lock is free, no job may be left: read in that order, a
    // job seen after the lock was seen free was alive while it was free.
    let freed_beside = std::cell::RefCell::new(Vec::new());
    wait_until("the killed verb's jobs dying", || {
        let free = !lock_held(&lock);
        let left = stray_processes(&[&marker]);
        if free && !left.is_empty() {
            *freed_beside.borrow_mut() = left.clone();
        }
        left.is_empty()
    });
    let freed_beside = freed_beside.into_inner();
    assert!(freed_beside.is_empty(), "`{}` killed: the node lock was free while its jobs ran: {freed_beside:?}", verb[0]);
    // A killed job leaves /proc's command lines (its memory is gone) a
    // moment before its descriptors close, and the watchdog that killed it
    // holds the lock until it ends too: freed soon after, not at once.
    common::wait_until("the lock freed once every job is gone", || !lock_held(&lock));
}

#[test]
fn pairs_killed_outright_leaves_no_job_and_holds_the_lock_until_they_are_gone() {
    killed_outright_leaves_nothing(&["pairs", "--repeats", "2", "--min-repeats", "2"], "pairs");
}

#[test]
fn profile_killed_outright_leaves_no_job_and_holds_the_lock_until_they_are_gone() {
    killed_outright_leaves_nothing(&["profile", "--repeats", "2", "--interval", "100ms", "--syscalls", "proc"], "profile");
}
