//! Spawning, pinning, timing and killing jobs.
//!
//! Every job runs in its own process group so that one `killpg` reaches the
//! whole process tree (a kernel's forked ping-pong partner, a shell's children),
//! and a [`Running`] kills its group when dropped, so an error or a panic in the
//! caller never leaves an orphan behind.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::Serialize;

/// What to run and where.
#[derive(Debug, Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    /// CPUs (OS indices) the process tree may run on; `None` = no pinning.
    pub cpus: Option<Vec<u32>>,
    /// Capture stdout (kernels print their JSON report there).
    pub capture_stdout: bool,
    /// `cgroup.procs` files the process writes itself into before exec, so
    /// the job and everything it forks live in its groups from the start.
    pub cgroup_procs: Vec<std::path::PathBuf>,
    /// Signal the job's leader gets when the thread that spawned it dies
    /// (PR_SET_PDEATHSIG), so a verb killed outright takes its jobs along:
    /// SIGKILL unless a caller says otherwise. The rest of the job's group
    /// and cgroups is the watchdog's ([`crate::node::watch_group`]).
    pub parent_death_signal: Option<Signal>,
    /// Run as this (uid, gid) instead of cosched's user (dropping root).
    pub user: Option<(u32, u32)>,
    /// Send stdout and stderr to this file (created or truncated) instead of
    /// pipes: a process the job leaves behind cannot hold cosched's pipes
    /// open, and a long job's output is not kept in memory.
    pub output: Option<std::path::PathBuf>,
    /// Send stderr here instead (with `output`: stdout goes there).
    pub stderr_output: Option<std::path::PathBuf>,
    /// `output` is a name cosched chose in its own log directory: opened by
    /// cosched and handed to `user` (`files::create_own_file`). Otherwise
    /// the user named it, and it is opened as `user` (`files::create_file`).
    pub own_output: bool,
    /// Extra environment variables, set after the user's (`HOME`, `USER`,
    /// ... under [`Launch::user`]).
    pub env: Vec<(String, String)>,
    /// Working directory of the job.
    pub workdir: Option<std::path::PathBuf>,
    /// RLIMIT_DATA in bytes: the memory limit where no memory cgroup
    /// enforces one (heap and private mappings; an allocation past it fails).
    pub data_limit: Option<u64>,
}

impl Launch {
    pub fn new(argv: Vec<String>) -> Launch {
        Launch {
            argv,
            cpus: None,
            capture_stdout: true,
            cgroup_procs: Vec::new(),
            parent_death_signal: Some(Signal::SIGKILL),
            user: None,
            output: None,
            stderr_output: None,
            own_output: false,
            env: Vec::new(),
            workdir: None,
            data_limit: None,
        }
    }

    pub fn pinned(mut self, cpus: Vec<u32>) -> Launch {
        self.cpus = Some(cpus);
        self
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn success(&self) -> bool {
        *self == Exit::Code(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// How one launched process ended: its exit, wall and CPU time, peak
/// memory and what it printed.
#[derive(Debug, Clone, Serialize)]
pub struct ExitReport {
    /// Wall time from spawn to exit, seconds.
    pub wall_s: f64,
    /// CPU time of the process and its reaped children (rusage), seconds.
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: u64,
    pub exit: Exit,
    pub stdout: String,
    /// Last lines of stderr, for error messages.
    pub stderr_tail: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("empty command")]
    Empty,
    #[error("cannot start `{cmd}`: {source}")]
    Spawn { cmd: String, source: std::io::Error },
    #[error("waiting for pid {pid}: {source}")]
    Wait { pid: i32, source: std::io::Error },
    #[error("interrupted by signal {0}")]
    Interrupted(i32),
}

/// The descriptor of the node lock this process holds, -1 if none; every
/// job started while it is held inherits it (see [`share_lock_with_jobs`]).
static LOCK_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Makes every job started from now on inherit `fd`, the node lock's
/// descriptor (`None`: no more). An flock is held while any descriptor of
/// its open file lives, so the node stays locked until the last process of
/// every job is gone, however the verb that started them ended: a `pairs`
/// killed outright frees the node only once its watchdog has killed its
/// jobs, never while they still run beside the next campaign.
pub fn share_lock_with_jobs(fd: Option<i32>) {
    LOCK_FD.store(fd.unwrap_or(-1), std::sync::atomic::Ordering::SeqCst);
}

/// The signal (SIGINT or SIGTERM) that asked cosched to stop, 0 if none.
static INTERRUPT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    // Only an atomic store: the one thing a signal handler may safely do here.
    INTERRUPT.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing cosched at once.
///
/// Jobs run in their own process groups, so a terminal's Ctrl-C reaches only
/// cosched; if cosched died on it, its jobs would run on as orphans. With the
/// flag set, every wait in this module returns [`LaunchError::Interrupted`],
/// the callers unwind, and each [`Running`] kills its group as it is dropped.
pub fn install_interrupt_handler() {
    let action = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_interrupt),
        nix::sys::signal::SaFlags::empty(),
        nix::sys::signal::SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores into an atomic, which is
        // async-signal-safe, and it replaces no handler that Rust relies on.
        let _ = unsafe { nix::sys::signal::sigaction(sig, &action) };
    }
}

/// The signal that interrupted cosched, if any.
pub fn interrupted() -> Option<i32> {
    match INTERRUPT.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// What a terminal's stop (Ctrl-Z, SIGTSTP) does to cosched.
///
/// By default cosched stops at once, as any program does. Its jobs run in
/// process groups of their own, so they would run on unwatched: a job that
/// ends while cosched is stopped is timed until cosched is continued, and
/// the repeat in flight is stored with a wrong time. Verbs that measure in
/// repeats therefore defer the stop to the next point where nothing is
/// timed ([`pause_point`]); `run`, where jobs run throughout, refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalStop {
    /// Pause at the next [`pause_point`] (between two repeats).
    AtPausePoints = 1,
    /// Say why not, and go on (Ctrl-C still stops).
    Refused = 2,
}

static STOP_MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
static STOP_ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

const DEFER_NOTE: &[u8] = b"\ncosched: Ctrl-Z: pausing once the measurement in flight ends (a job left running while cosched is stopped would be timed wrongly)\n";
const REFUSE_NOTE: &[u8] =
    b"\ncosched: Ctrl-Z ignored: the run's jobs would run on unwatched while cosched is stopped; Ctrl-C stops the run, and it can be resumed\n";

extern "C" fn on_terminal_stop(_: libc::c_int) {
    let defer = STOP_MODE.load(std::sync::atomic::Ordering::SeqCst) == TerminalStop::AtPausePoints as u8;
    if defer {
        STOP_ASKED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    let note = if defer { DEFER_NOTE } else { REFUSE_NOTE };
    // SAFETY: write(2) is async-signal-safe and the buffer is a static
    // byte string that outlives the call; a short write only shortens the
    // note.
    unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
}

/// Makes SIGTSTP behave as `how` says instead of stopping cosched at once.
pub fn handle_terminal_stop(how: TerminalStop) {
    STOP_MODE.store(how as u8, std::sync::atomic::Ordering::SeqCst);
    let action = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_terminal_stop),
        nix::sys::signal::SaFlags::SA_RESTART,
        nix::sys::signal::SigSet::empty(),
    );
    // SAFETY: the handler only touches atomics and calls write(2), both
    // async-signal-safe, and Rust's runtime installs no SIGTSTP handler.
    let _ = unsafe { nix::sys::signal::sigaction(Signal::SIGTSTP, &action) };
}

/// A point between two measurements, where no job is being timed: if
/// Ctrl-Z was pressed since the last one, cosched stops here (SIGSTOP,
/// which a shell reports as stopped and `fg` continues) and returns `true`
/// once it is continued. Callers read the cache regime after this, so a
/// pause that outlasted a regime is seen as any other switch is.
pub fn pause_point() -> bool {
    if !STOP_ASKED.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return false;
    }
    eprintln!("cosched: paused between two measurements; `fg` (or kill -CONT {}) continues", std::process::id());
    // SIGSTOP, not SIGTSTP: the kernel discards SIGTSTP for a process in
    // an orphaned process group (one started from a script that has
    // exited), and cosched would go on without having paused.
    let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    eprintln!("cosched: continuing");
    true
}

/// A process group that is running.
#[derive(Debug)]
pub struct Running {
    child: Option<Child>,
    pid: i32,
    start: Instant,
    stdout: Option<Reader>,
    stderr: Option<Reader>,
}

/// A thread draining one of a job's pipes, and the pipe's inode: a process
/// that left the job's process group (a `setsid` in a forked worker, as
/// fio's job processes do) keeps the pipe open after the group is killed,
/// and is found by that inode.
#[derive(Debug)]
struct Reader {
    text: std::sync::mpsc::Receiver<String>,
    inode: Option<u64>,
}

/// How long a pipe may stay open after the job's group is gone before its
/// holders are taken for escapees and killed.
const PIPE_GRACE: Duration = Duration::from_secs(1);

impl Reader {
    fn start<R: Read + std::os::fd::AsRawFd + Send + 'static>(mut pipe: R) -> Reader {
        let inode = pipe_inode(pipe.as_raw_fd());
        let (tx, text) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(drain_tail(&mut pipe, PIPE_KEEP));
        });
        Reader { text, inode }
    }

    /// What the job wrote, once the pipe's writers are gone. Called after
    /// the job's group was killed: a writer still there after `PIPE_GRACE`
    /// escaped the group and is killed too (it would otherwise hold the
    /// campaign forever, as an orphaned fio worker once did); if the pipe is
    /// still open after that, the output is given up rather than waited for
    /// (the draining thread ends whenever the pipe does).
    fn finish(self) -> String {
        use std::sync::mpsc::RecvTimeoutError;
        match self.text.recv_timeout(PIPE_GRACE) {
            Ok(text) => text,
            Err(RecvTimeoutError::Disconnected) => String::new(),
            Err(RecvTimeoutError::Timeout) => {
                if let Some(inode) = self.inode {
                    for pid in pipe_holders(inode) {
                        // SAFETY: kill(2) with a pid read from /proc; at
                        // worst the pid is gone (ESRCH), which is ignored.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
                self.text.recv_timeout(PIPE_GRACE).unwrap_or_default()
            }
        }
    }
}

/// How much of a job's pipe is kept: its last 1 MiB (a kernel's report is
/// its last line; a job that prints gigabytes must not take cosched's
/// memory with it).
const PIPE_KEEP: usize = 1 << 20;

/// Reads `pipe` to its end, keeping the last `keep` bytes as text; a line
/// cut by that bound is dropped whole.
fn drain_tail(pipe: &mut impl Read, keep: usize) -> String {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut cut = false;
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                // Trimmed at twice the bound, so each byte is moved once
                // on average, not once per read.
                if buf.len() >= 2 * keep {
                    buf.drain(..buf.len() - keep);
                    cut = true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if buf.len() > keep {
        buf.drain(..buf.len() - keep);
        cut = true;
    }
    let from = if cut { buf.iter().position(|&b| b == b'\n').map_or(buf.len(), |p| p + 1) } else { 0 };
    String::from_utf8_lossy(&buf[from..]).into_owned()
}

/// The inode of the pipe behind `fd`.
fn pipe_inode(fd: i32) -> Option<u64> {
    // SAFETY: fstat on a descriptor we own, into a zeroed plain-data struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino)
}

/// Processes other than this one that hold pipe `inode` open for writing:
/// the ones keeping its reader from end of file.
///
/// Only writers: a copy of this process between fork and exec (any
/// concurrent launch, in cosched or in a test binary) holds every
/// descriptor of ours for a moment, the pipe's read end included, and
/// killing it would kill someone else's job (a probe's stressor was once
/// SIGKILLed that way).
fn pipe_holders(inode: u64) -> Vec<i32> {
    let me = std::process::id() as i32;
    let link = format!("pipe:[{inode}]");
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        let writes = fds.flatten().any(|f| {
            std::fs::read_link(f.path()).is_ok_and(|l| l.as_os_str() == link.as_str())
                && std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", f.file_name().to_string_lossy())).is_ok_and(|info| opened_for_writing(&info))
        });
        if writes {
            out.push(pid);
        }
    }
    out
}

/// Whether a /proc/PID/fdinfo/FD text describes a descriptor open for
/// writing (its `flags:` field, octal, has access mode O_WRONLY or O_RDWR).
fn opened_for_writing(fdinfo: &str) -> bool {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| i32::from_str_radix(v.trim(), 8).ok())
        .is_some_and(|flags| flags & libc::O_ACCMODE != libc::O_RDONLY)
}

/// Starts a process in a new process group, pinned if asked.
pub fn spawn(launch: &Launch) -> Result<Running, LaunchError> {
    let (prog, args) = launch.argv.split_first().ok_or(LaunchError::Empty)?;
    // Found on the job's PATH here: the child's own search is a failed exec
    // per directory before the program's (issue 42). argv[0] stays `prog`.
    let path = crate::identity::on_path(prog, &launch.env, launch.user.is_some());
    let mut cmd = Command::new(path.as_deref().unwrap_or(std::path::Path::new(prog)));
    cmd.arg0(prog).args(args)
        .stdin(Stdio::null())
        .stdout(if launch.capture_stdout { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(path) = &launch.output {
        let spawn_err = |source| LaunchError::Spawn { cmd: format!("{} (output to {})", launch.argv.join(" "), path.display()), source };
        // Never through a link planted at the name, never what the job's
        // user could not write, and that user owns a file made for it.
        let f = if launch.own_output { crate::files::create_own_file(path, launch.user) } else { crate::files::create_file(path, launch.user) }
            .map_err(spawn_err)?;
        let g = match &launch.stderr_output {
            Some(e) => crate::files::create_file(e, launch.user).map_err(spawn_err)?,
            None => f.try_clone().map_err(spawn_err)?,
        };
        cmd.stdout(f).stderr(g);
    }
    if let Some((uid, _)) = launch.user {
        // As `sudo -u` would: the user's own home and name, not root's.
        if let Some(u) = user_entry(uid) {
            cmd.env("HOME", &u.home).env("USER", &u.name).env("LOGNAME", &u.name).env("SHELL", &u.shell);
        }
    }
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    if let Some(d) = &launch.workdir {
        cmd.current_dir(d);
    }
    if let Some(bytes) = launch.data_limit {
        // SAFETY: runs in the forked child before exec and only calls
        // setrlimit, a plain system call, on a struct on its own stack.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
                if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    if let Some(cpus) = &launch.cpus {
        let mut set = nix::sched::CpuSet::new();
        for &c in cpus {
            set.set(c as usize).map_err(|e| LaunchError::Spawn {
                cmd: launch.argv.join(" "),
                source: std::io::Error::other(format!("cpu {c}: {e}")),
            })?;
        }
        // SAFETY: the closure runs in the forked child before exec and only
        // calls sched_setaffinity, a plain system call that is
        // async-signal-safe and touches no memory shared with the parent.
        // Pinning before exec means no instruction of the job runs unpinned,
        // and every thread and child it creates inherits the mask.
        unsafe {
            cmd.pre_exec(move || {
                nix::sched::sched_setaffinity(Pid::from_raw(0), &set)
                    .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
            });
        }
    }
    if let Some((uid, gid)) = launch.user {
        // std drops supplementary groups, then sets gid, then uid, before
        // the pre_exec hooks below run.
        cmd.uid(uid).gid(gid);
    }
    let procs: Vec<std::fs::File> = launch
        .cgroup_procs
        .iter()
        .map(|p| std::fs::OpenOptions::new().write(true).open(p))
        .collect::<Result<_, _>>()
        .map_err(|source| LaunchError::Spawn { cmd: format!("{} (joining its cgroup)", launch.argv.join(" ")), source })?;
    if !procs.is_empty() {
        let fds: Vec<i32> = procs.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
        // SAFETY: runs in the forked child before exec and only calls
        // write(2) on descriptors opened above (still open: `procs` lives
        // until after spawn returns); no allocation, no locks. Writing "0"
        // moves the writing process itself, and the files were opened by
        // cosched, so the write is allowed after a uid drop too.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &fds {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    if let Some(sig) = launch.parent_death_signal {
        let parent = std::process::id() as i32;
        // SAFETY: prctl and getppid are plain system calls, safe between
        // fork and exec. PR_SET_PDEATHSIG is set after the uid change above,
        // which would clear it. If the parent died before the prctl took
        // effect, the child exits instead of running on as an orphan.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    let lock_fd = LOCK_FD.load(std::sync::atomic::Ordering::SeqCst);
    if lock_fd >= 0 {
        // SAFETY: fcntl on a descriptor number, in the forked child before
        // exec: clears close-on-exec on the child's copy only, so the job
        // (not cosched's other children) holds the node lock too.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(lock_fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
        cmd: launch.argv.join(" "),
        source,
    })?;
    drop(procs);
    let pid = child.id() as i32;
    // Before anything can fail: a job the watchdog does not know of would
    // outlive a verb killed outright.
    if let Err(e) = crate::node::watch_group(pid, &launch.cgroup_procs) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = child.wait();
        return Err(LaunchError::Spawn { cmd: format!("{} (starting the watchdog)", launch.argv.join(" ")), source: e });
    }
    // Pipes are drained on threads so a chatty job can never block on a full
    // pipe while we wait for it.
    let stdout = child.stdout.take().map(Reader::start);
    let stderr = child.stderr.take().map(Reader::start);
    Ok(Running { child: Some(child), pid, start, stdout, stderr })
}

/// Blocks until one of the processes `pids` (children of ours, not yet
/// reaped) exits, a signal arrives, or `within` passes, whichever is
/// first (with no `pids`, it sleeps `within`).
/// A runner that slept a fixed poll period between looks at its jobs lost
/// half that period per job on average (issue 42: jobs of `true` cost
/// 5-6 ms each under `cosched run`); a pidfd per child wakes it the moment
/// one ends. Without pidfds (Linux before 5.3) it sleeps `within`.
pub fn wait_any_exit(pids: &[i32], within: Duration) {
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(pids.len());
    for &pid in pids {
        // SAFETY: pidfd_open takes a pid and flags and returns a new file
        // descriptor or -1; it touches no memory of ours.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            continue;
        }
        fds.push(libc::pollfd { fd: fd as i32, events: libc::POLLIN, revents: 0 });
    }
    if fds.is_empty() {
        std::thread::sleep(within);
        return;
    }
    // ppoll, not poll: poll's whole milliseconds woke a turn's end up to
    // a millisecond late, or early and then once more.
    let ts = libc::timespec { tv_sec: within.as_secs().min(i32::MAX as u64) as libc::time_t, tv_nsec: within.subsec_nanos() as libc::c_long };
    // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()`
    // pollfd structures and `ts` a valid timespec for the duration of the
    // call; a null signal mask leaves the mask as it is.
    unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    for f in &fds {
        // SAFETY: each fd was opened above and is closed exactly once.
        unsafe { libc::close(f.fd) };
    }
}

/// `n` spawns of `argv`, each waited for before the next, from a thread
/// pinned to `cpu`, so every child inherits the mask before it runs an
/// instruction: what fork and exec of a job pinned as the runner pins it
/// (without cgroups) cost, the floor `bench run` measures the runner
/// against. Returns the seconds of the whole loop; an exit other than 0 is
/// an error.
pub fn pinned_loop(argv: &[String], n: usize, cpu: u32) -> std::io::Result<f64> {
    let (prog, args) = argv.split_first().ok_or_else(|| std::io::Error::other("an empty command"))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut set = nix::sched::CpuSet::new();
            set.set(cpu as usize).map_err(|e| std::io::Error::other(format!("cpu {cpu}: {e}")))?;
            nix::sched::sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| std::io::Error::other(format!("pinning to cpu {cpu}: {e}")))?;
            let t = Instant::now();
            for _ in 0..n {
                let st = Command::new(prog).args(args).stdin(Stdio::null()).status()?;
                if !st.success() {
                    return Err(std::io::Error::other(format!("`{}` exited {st}", argv.join(" "))));
                }
            }
            Ok(t.elapsed().as_secs_f64())
        })
        .join()
        .map_err(|_| std::io::Error::other("the pinned loop's thread panicked"))?
    })
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Seconds since the process was started.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Non-blocking: `Some(outcome)` once the process has exited;
    /// [`LaunchError::Interrupted`] once cosched was asked to stop.
    pub fn try_wait(&mut self) -> Result<Option<ExitReport>, LaunchError> {
        if let Some(sig) = interrupted() {
            return Err(LaunchError::Interrupted(sig));
        }
        self.wait_inner(libc::WNOHANG)
    }

    /// Waits until the process exits, or until cosched is interrupted (then
    /// the group is killed as `self` drops).
    pub fn wait(mut self) -> Result<ExitReport, LaunchError> {
        loop {
            if let Some(o) = self.try_wait()? {
                return Ok(o);
            }
            std::thread::sleep(POLL);
        }
    }

    fn wait_inner(&mut self, flags: i32) -> Result<Option<ExitReport>, LaunchError> {
        if self.child.is_none() {
            return Err(LaunchError::Wait {
                pid: self.pid,
                source: std::io::Error::other("already reaped"),
            });
        }
        if !self.leader_exited(flags).map_err(|source| LaunchError::Wait { pid: self.pid, source })? {
            return Ok(None);
        }
        let wall_s = self.start.elapsed().as_secs_f64();
        // The leader has exited but is not reaped, so its pid, and with it
        // the group id, cannot be taken by a new process yet: kill anything
        // it left in its group (a forked helper that outlived it) so that
        // measurements never overlap with strays, and no one else's group.
        let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
        // The watchdog reads this before it could read the end of its pipe,
        // so the group id, free for reuse once reaped, is never killed.
        crate::node::forget_group(self.pid);
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain old data that wait4 fully initialises on
        // success; zeroed is a valid bit pattern for it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // wait4 rather than Child::wait: it also returns the rusage of the
        // job, which gives CPU time without a second /proc read. The leader
        // has exited, so this returns at once.
        let r = loop {
            // SAFETY: status and ru are valid, exclusively borrowed
            // out-pointers for the duration of the call.
            let r = unsafe { libc::wait4(self.pid, &mut status, 0, &mut ru) };
            if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break r;
            }
        };
        if r < 0 {
            return Err(LaunchError::Wait { pid: self.pid, source: std::io::Error::last_os_error() });
        }
        self.child = None;
        let es = std::process::ExitStatus::from_raw(status);
        let exit = match (es.code(), es.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(s)) => Exit::Signal(s),
            _ => Exit::Code(-1),
        };
        let stdout = self.stdout.take().map(Reader::finish).unwrap_or_default();
        let stderr = self.stderr.take().map(Reader::finish).unwrap_or_default();
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Ok(Some(ExitReport {
            wall_s,
            user_s: tv(ru.ru_utime),
            sys_s: tv(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss.max(0) as u64,
            exit,
            stdout,
            stderr_tail: tail(&stderr, 12),
        }))
    }

    /// Whether the leader has exited, without reaping it (`WNOWAIT`): until
    /// it is reaped its pid stays ours, so signalling its group is safe.
    /// With `WNOHANG` in `flags` it does not wait; an interrupted wait
    /// reads as "not yet".
    fn leader_exited(&self, flags: i32) -> std::io::Result<bool> {
        // SAFETY: siginfo_t is plain old data; zeroed is a valid bit
        // pattern, and it leaves si_pid 0 when WNOHANG finds no exit.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: info is a valid, exclusively borrowed out-pointer for the
        // duration of the call.
        let r = unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT | flags) };
        if r < 0 {
            let err = std::io::Error::last_os_error();
            return if err.kind() == std::io::ErrorKind::Interrupted { Ok(false) } else { Err(err) };
        }
        // SAFETY: waitid filled in a SIGCHLD siginfo (or left it zeroed),
        // for which si_pid is the field to read.
        Ok(unsafe { info.si_pid() } != 0)
    }

    /// Kills the whole process group and reaps the leader.
    pub fn kill(mut self) {
        self.kill_group();
    }

    fn kill_group(&mut self) {
        if self.child.is_some() {
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            // SIGKILL is delivered asynchronously: the group's members may
            // still be runnable for a moment. Wait (bounded) until none is
            // left, so "dropped" really means "nothing left running". The
            // leader is reaped only afterwards: until then its pid, and so
            // the group id, cannot be reused (the node allows only 32768
            // pids), and these signals reach only this job.
            for _ in 0..400 {
                if live_members(self.pid).is_empty() {
                    break;
                }
                let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.wait_inner(0);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// A user's name, home and shell from the passwd database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    pub name: String,
    pub home: String,
    pub shell: String,
}

/// The passwd entry of `uid`, through the C library so that users of NSS
/// (LDAP, ...) are found as `sudo -u` finds them.
pub fn user_entry(uid: u32) -> Option<UserEntry> {
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: passwd is plain old data; zeroed is a valid bit pattern.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `buf.len()` is the
    // buffer's size; on success `out` points at `pwd`, whose strings point
    // into `buf`, which outlives their use below.
    let r = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return None;
    }
    // SAFETY: on success the fields are NUL-terminated strings in `buf`.
    let s = |p: *const libc::c_char| if p.is_null() { String::new() } else { unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned() };
    Some(UserEntry { name: s(pwd.pw_name), home: s(pwd.pw_dir), shell: s(pwd.pw_shell) })
}

/// Makes this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER): a job's daemon that double-forked and left its
/// process group becomes cosched's child instead of init's, so the runner
/// finds it without cgroups ([`kill_orphans`]).
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments; it touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Children of this process (re-parented orphans included) whose
/// environment holds every `NAME=VALUE` of `marks`.
pub fn marked_children(marks: &[String]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() < 2 || f[1].parse::<i32>() != Ok(me) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
        if marks.iter().all(|m| vars.contains(&m.as_bytes())) {
            out.push(pid);
        }
    }
    out
}

/// Kills the orphans of one job (those [`marked_children`] finds by the
/// job's marks) and reaps them; a killed orphan's own children come to us
/// in turn, so it repeats until none is left. Returns how many it killed.
pub fn kill_orphans(marks: &[String]) -> usize {
    let mut killed = 0;
    for _ in 0..100 {
        let pids = marked_children(marks);
        if pids.is_empty() {
            break;
        }
        for &p in &pids {
            let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
            // It is our child now, so reaping it takes no one else's status.
            let _ = nix::sys::wait::waitpid(Pid::from_raw(p), None);
            killed += 1;
        }
    }
    killed
}

/// Live (not zombie) processes of a process group, read from /proc. Used to
/// prove that no job outlives its runner.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name may contain spaces and parentheses: fields start
        // after the last ')'. Then: state, ppid, pgrp.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse::<i32>() == Ok(pgid) {
            out.push(pid);
        }
    }
    out
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].iter().map(|l| crate::files::cut_line(l, crate::files::LINE_CHARS)).collect::<Vec<_>>().join("\n")
}

/// Runs a process to completion (pinned if asked) and returns its outcome.
pub fn run(launch: &Launch) -> Result<ExitReport, LaunchError> {
    spawn(launch)?.wait()
}

/// Polling interval used by the co-run loop: short enough that a job's end is
/// noticed within 1% of a 1-second run, long enough to cost nothing.
pub const POLL: Duration = Duration::from_millis(2);

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(cmd: &str) -> Launch {
        Launch::new(vec!["sh".into(), "-c".into(), cmd.into()])
    }

    #[test]
    fn captures_stdout_and_exit_code() {
        let o = run(&sh("echo hello; exit 3")).unwrap();
        assert_eq!(o.stdout.trim(), "hello");
        assert_eq!(o.exit, Exit::Code(3));
    }

    #[test]
    fn a_pipe_keeps_only_its_last_bytes_and_drops_the_line_they_cut() {
        let text = format!("{}\nmiddle\nlast\n", "z".repeat(5000));
        assert_eq!(drain_tail(&mut text.as_bytes(), 20), "middle\nlast\n");
        assert_eq!(drain_tail(&mut text.as_bytes(), 1 << 20), text);
        let one_line = "q".repeat(10_000);
        assert_eq!(drain_tail(&mut one_line.as_bytes(), 100), "", "a single line longer than the bound is dropped, not half kept");
    }

    #[test]
    fn pinning_restricts_the_affinity_of_the_child() {
        let o = run(&sh("grep Cpus_allowed_list /proc/self/status").pinned(vec![0])).unwrap();
        assert!(o.stdout.trim().ends_with("\t0"), "{}", o.stdout);
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let e = run(&Launch::new(vec!["/nonexistent/prog".into()])).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/prog"), "{e}");
    }

    #[test]
    fn dropping_a_running_job_kills_its_whole_group() {
        // The shell starts a background sleeper that would outlive the leader.
        let r = spawn(&sh("sleep 30 & echo $!; wait")).unwrap();
        let pgid = r.pid();
        std::thread::sleep(Duration::from_millis(100));
        drop(r);
        // Killed members may linger as zombies until init reaps them; what
        // matters is that none is still running.
        assert_eq!(live_members(pgid), Vec::<i32>::new());
    }

    /// Whether a process whose command line holds `marker` still runs.
    fn running(marker: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat.rfind(')').is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmd).contains(marker)
        })
    }

    #[test]
    fn a_descriptor_is_a_writers_by_its_access_mode_not_its_other_flags() {
        assert!(opened_for_writing("pos:\t0\nflags:\t01\nmnt_id:\t15\n"), "O_WRONLY");
        assert!(opened_for_writing("pos:\t0\nflags:\t02000002\n"), "O_RDWR | O_CLOEXEC");
        assert!(!opened_for_writing("pos:\t0\nflags:\t02000000\n"), "O_RDONLY | O_CLOEXEC");
        assert!(!opened_for_writing("pos:\t0\n"), "no flags field");
    }

    #[test]
    fn only_a_pipes_writers_are_taken_for_its_holders() {
        // The reader stands for a copy of cosched between fork and exec,
        // which holds the job's read end and must never be killed for it.
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let inode = pipe_inode(std::os::fd::AsRawFd::as_raw_fd(&r)).unwrap();
        let mut reader = Command::new("sleep").arg("30").stdin(Stdio::from(r)).spawn().unwrap();
        let mut writer = Command::new("sleep").arg("30").stdout(Stdio::from(w)).spawn().unwrap();
        let holders = pipe_holders(inode);
        for c in [&mut reader, &mut writer] {
            let _ = c.kill();
            let _ = c.wait();
        }
        assert!(holders.contains(&(writer.id() as i32)), "the writer {} is a holder: {holders:?}", writer.id());
        assert!(!holders.contains(&(reader.id() as i32)), "the reader {} is not: {holders:?}", reader.id());
    }

    #[test]
    fn a_process_that_left_the_group_holding_the_jobs_pipes_is_killed_rather_than_waited_for() {
        // As fio's workers do: a child in a session of its own (out of
        // killpg's reach) that keeps the job's stdout and stderr open.
        let marker = format!("cosched-launch-escapee-{}", std::process::id());
        let t = Instant::now();
        let o = run(&sh(&format!("setsid sh -c 'sleep 30; : {marker}' & echo started"))).unwrap();
        assert_eq!(o.stdout.trim(), "started");
        assert!(t.elapsed() < Duration::from_secs(10), "waited {:?} for the escapee's pipes", t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
        assert!(!running(&marker), "the escapee still runs");
    }

    #[test]
    fn killing_a_job_also_kills_what_left_its_group_with_its_pipes() {
        let marker = format!("cosched-launch-escapee-kill-{}", std::process::id());
        let r = spawn(&sh(&format!("setsid sh -c 'sleep 30; : {marker}' & sleep 30"))).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(running(&marker));
        let t = Instant::now();
        r.kill();
        assert!(t.elapsed() < Duration::from_secs(10), "waited {:?}", t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
        assert!(!running(&marker), "the escapee still runs");
    }

    #[test]
    fn killed_job_reports_the_signal() {
        let mut r = spawn(&sh("kill -TERM $$")).unwrap();
        let o = loop {
            if let Some(o) = r.try_wait().unwrap() {
                break o;
            }
            std::thread::sleep(POLL);
        };
        assert_eq!(o.exit, Exit::Signal(15));
    }

    #[test]
    fn the_pinned_loop_runs_each_child_on_its_cpu_and_refuses_a_failing_one() {
        if !nix::sched::sched_getaffinity(Pid::from_raw(0)).is_ok_and(|s| s.is_set(0).unwrap_or(false)) {
            cosched_testkit::skip(cosched_testkit::Lacks::Machine, "CPU 0 is not this process's to use");
            return;
        }
        let argv = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        // Exits 0 only where the child's allowed CPUs are exactly CPU 0.
        let pinned = argv("grep -q '^Cpus_allowed_list:[[:space:]]*0$' /proc/self/status");
        assert!(pinned_loop(&pinned, 2, 0).is_ok_and(|t| t > 0.0));
        assert!(pinned_loop(&argv("exit 3"), 1, 0).is_err());
        assert!(pinned_loop(&[], 1, 0).is_err());
    }
}
