//! A forked peer process of a two-process kernel (`pingpong`, `pipe`).
//!
//! The child runs in the parent's process group and asks to be killed when
//! its parent dies (`PR_SET_PDEATHSIG`), so a killed kernel never leaves it
//! behind. Between `fork` and `_exit` the child may run only code that
//! cannot allocate, lock or panic (atomics, system calls and arithmetic on
//! memory prepared before the fork), because the parent may be
//! multi-threaded (tests) and a lock held by another thread at the fork
//! would never be released.

use crate::util::{allowed_cpus, single_cpu_set, worker_cpu};
use crate::KernelError;

/// The forked peer, killed and reaped on drop unless reaped already.
pub(crate) struct Child {
    /// Which peer, for errors: "the pingpong peer".
    what: &'static str,
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// Forks; the child runs `body` and exits with its return value.
    pub(crate) fn spawn(what: &'static str, body: impl FnOnce() -> i32) -> Result<Child, KernelError> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: in the child, only `body` runs before `_exit`, and `body`
        // is restricted to async-signal-safe work (see the module comment).
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(KernelError::io(format!("fork of {what}"), std::io::Error::last_os_error())),
            0 => {
                // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and
                // has no memory effects; getppid and _exit have no
                // preconditions. The parent check closes the race where the
                // parent died before the prctl.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                    if libc::getppid() != parent {
                        libc::_exit(70);
                    }
                }
                let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(71);
                // SAFETY: _exit ends the child without running the parent's
                // atexit handlers or destructors, which belong to the parent.
                unsafe { libc::_exit(code) }
            }
            pid => Ok(Child { what, pid, reaped: false }),
        }
    }

    /// Err with the child's fate if it has already exited.
    pub(crate) fn check_alive(&mut self) -> Result<(), KernelError> {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; `pid` is our unreaped child.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if r == self.pid {
            self.reaped = true;
            return Err(KernelError::Failed(format!("{} died early: {}", self.what, describe(status))));
        }
        Ok(())
    }

    /// Waits for the child; Err unless it exited with status 0.
    pub(crate) fn reap(&mut self) -> Result<(), KernelError> {
        let status = self.wait()?;
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            Ok(())
        } else {
            Err(KernelError::Failed(format!("{} failed: {}", self.what, describe(status))))
        }
    }

    fn wait(&mut self) -> Result<libc::c_int, KernelError> {
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out-pointer; `pid` is our unreaped child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = true;
                return Ok(status);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                self.reaped = true;
                return Err(KernelError::io(format!("waiting for {}", self.what), e));
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: `pid` is our child and not yet reaped, so the pid cannot
            // have been reused by another process.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = self.wait();
        }
    }
}

fn describe(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

/// CPU sets for the parent's and the child's end when the job may use two
/// CPUs or more: one end per CPU, as MPI binds two ranks (`--bind-to core`).
/// Unbound, the scheduler put both ends on one core in some runs and on two
/// in others (wake-affine placement), and a job's round trips took 0.6 to
/// 0.98 of its solo reference from one run to the next.
pub(crate) fn end_sets() -> (Option<libc::cpu_set_t>, Option<libc::cpu_set_t>) {
    let allowed = allowed_cpus();
    match (worker_cpu(&allowed, 2, 0), worker_cpu(&allowed, 2, 1)) {
        (Some(a), Some(b)) => (Some(single_cpu_set(a)), Some(single_cpu_set(b))),
        _ => (None, None),
    }
}
