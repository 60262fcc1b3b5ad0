//! The node lock: one verb that runs measured work at a time on a node,
//! held until the last process it started is gone, so a killed runner
//! never blocks the next one and its jobs never run beside it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// An exclusive lock on the node for one verb that runs measured work:
/// `flock` on a file that holds the holder's pid and command. The kernel
/// drops the lock when the holder and every job it started are gone (the
/// jobs inherit its descriptor: [`crate::launch::share_lock_with_jobs`]),
/// however they end, so a killed runner never blocks the next one, and its
/// jobs never run beside it either.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
    pub path: PathBuf,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        crate::launch::share_lock_with_jobs(None);
    }
}

impl RunLock {
    /// The node's lock file, the same for every user: `/run/lock/cosched-node.lock`
    /// (`/run/lock` is writable by all, sticky), else in the temporary
    /// directory. `$COSCHED_RUN_LOCK` replaces it, for tests only: two
    /// processes with different lock files share the node.
    pub fn default_path() -> PathBuf {
        if let Some(p) = std::env::var_os("COSCHED_RUN_LOCK") {
            return PathBuf::from(p);
        }
        let run = Path::new("/run/lock");
        if nix::unistd::access(run, nix::unistd::AccessFlags::W_OK).is_ok() {
            return run.join("cosched-node.lock");
        }
        std::env::temp_dir().join("cosched-node.lock")
    }

    /// Takes the lock for a run, or says who holds it.
    pub fn acquire(path: &Path) -> Result<RunLock, String> {
        RunLock::acquire_for(path, "run")
    }

    /// Takes the lock for `verb`, or says which process holds it and what
    /// it runs.
    pub fn acquire_for(path: &Path, verb: &str) -> Result<RunLock, String> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| format!("{}: cannot open the node lock: {e}", path.display()))?;
        let meta = f.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
        // A hard link planted at the name would make us truncate its target.
        if !meta.is_file() || meta.nlink() > 1 {
            return Err(format!("{}: not a plain file of its own; remove it", path.display()));
        }
        // Every user's cosched takes the same lock, so it stays writable
        // whatever the umask of whoever created it.
        // SAFETY: geteuid cannot fail and touches no memory.
        if meta.uid() == unsafe { libc::geteuid() } {
            let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
        }
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let mut r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        // A holder killed outright frees the node once its watchdog has
        // killed its jobs, a moment later: wait for that (bounded), not
        // for a live holder.
        let dying = Instant::now();
        while r != 0 && dying.elapsed() < std::time::Duration::from_secs(5) && holder_gone(path) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            // SAFETY: as above.
            r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        }
        if r != 0 {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            let mut lines = holder.lines();
            let pid = lines.next().unwrap_or("").trim().to_string();
            let stored = lines.next().unwrap_or("").trim().to_string();
            if holder_gone(path) {
                return Err(format!(
                    "the node is busy: pid {pid} (`{stored}`) has ended, but a job it started still runs and holds the \
                     node lock {}; `cosched {verb}` would measure beside it; wait for it to end or kill it (`fuser {}` names it)",
                    path.display(),
                    path.display()
                ));
            }
            // The live command line, else what the holder wrote.
            let cmd = pid
                .parse::<u32>()
                .ok()
                .and_then(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
                .map(|c| String::from_utf8_lossy(&c).split('\0').filter(|a| !a.is_empty()).collect::<Vec<_>>().join(" "))
                .filter(|c| !c.is_empty())
                .unwrap_or(stored);
            return Err(format!(
                "the node is busy: pid {} (`{}`) holds the node lock {}; `cosched {verb}` runs measured work, \
                 which would disturb it and be disturbed; wait for it to finish or stop it",
                if pid.is_empty() { "unknown" } else { &pid },
                if cmd.is_empty() { "unknown command" } else { &cmd },
                path.display()
            ));
        }
        let cmd: Vec<String> = std::env::args().collect();
        f.set_len(0).map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(f, "{}\n{}", std::process::id(), cmd.join(" ")).map_err(|e| format!("{}: {e}", path.display()))?;
        crate::launch::share_lock_with_jobs(Some(f.as_raw_fd()));
        Ok(RunLock { _file: f, path: path.to_path_buf() })
    }
}

/// Whether the pid the lock file names has ended (then what holds the lock
/// is a job it started).
fn holder_gone(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().next().and_then(|l| l.trim().parse::<u32>().ok()).is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_holder_is_refused_with_the_first_ones_pid() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("lock");
        let held = RunLock::acquire(&p).unwrap();
        let e = RunLock::acquire(&p).unwrap_err();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(held);
        // Another test of this process may fork between our open and its
        // exec; the child's duplicate of the descriptor holds the flock
        // until the exec closes it (O_CLOEXEC), so allow that moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while let Err(e) = RunLock::acquire(&p) {
            assert!(std::time::Instant::now() < deadline, "the lock stayed held after its holder dropped it: {e}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
