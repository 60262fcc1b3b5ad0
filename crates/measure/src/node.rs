//! Real processes for the node runner: the [`Executor`] that
//! `cosched_engine::run_node` drives, a lock that keeps a second runner off the node, a watchdog that
//! kills the jobs if the runner itself is killed, and the invoking user.
//!
//! A job runs as a process group, in its own cgroups when the node allows
//! (see [`crate::cgroup`]), pinned to cores of its pool that no other job
//! holds, with its `timeout` and `memory_mib` enforced. Every start and end
//! is handed to a sink before the runner goes on (the CLI stores it), so a
//! journal of the run exists at every instant.
//!
//! No job outlives the runner:
//! - SIGINT / SIGTERM set the interrupt flag; `wait` then kills every job
//!   (process group and cgroup) and returns [`ExecError::Interrupted`].
//! - SIGKILL of the runner: each job's leader has PR_SET_PDEATHSIG =
//!   SIGKILL, and a watchdog process (a few lines of `sh` in its own
//!   process group, holding the read end of a pipe the runner writes the
//!   job groups into) sees end-of-file when the runner dies and kills every
//!   listed process group and cgroup member. `cosched run --resume` also
//!   removes leftover cgroups of the run ([`Isolation::clean_scope`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use cosched_engine::run::{ExecError, Executor, Outcome, StartPlan};
use cosched_engine::JobId;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::Serialize;

use crate::cgroup::{Isolation, JobCgroup, Limits};
use crate::launch::{interrupted, spawn, Exit, Launch, Running};

/// One job as the executor runs it.
#[derive(Debug, Clone)]
pub struct NodeJob {
    pub name: String,
    pub argv: Vec<String>,
    pub pool: usize,
    pub cores: u32,
    pub timeout: Option<f64>,
    pub memory_mib: Option<u64>,
    /// Stored solo time, seconds, and its timing (`work-phase` or `process`).
    pub solo: Option<(f64, String)>,
    /// A `cosched-kernel` job, whose last output line is its JSON report.
    pub kernel: bool,
    /// The workload's `env`, `workdir` and `output` (paths resolved).
    pub env: Vec<(String, String)>,
    pub workdir: Option<PathBuf>,
    /// Where stdout goes (default `<log_dir>/<job>.log`), and stderr (default: with stdout).
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
}

pub use cosched_model::run::JobStatus;

/// A job that started: what the journal records at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Started {
    pub job: JobId,
    pub start: f64,
    pub cpus: Vec<u32>,
    pub pgid: i32,
    /// Names of the jobs running beside it.
    pub beside: Vec<String>,
    pub predicted: f64,
}

/// A job that ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ended {
    pub job: JobId,
    pub start: f64,
    pub end: f64,
    pub cpus: Vec<u32>,
    pub status: JobStatus,
    /// The kernel's own work-phase time, when it reported one.
    pub work_s: Option<f64>,
    /// Run time over the stored solo time, in the solo time's timing;
    /// `None` without a stored solo time or when the job did not finish.
    pub slowdown: Option<f64>,
    pub predicted: f64,
    /// Last lines of the job's output, for failures.
    pub output_tail: String,
}

/// What the executor hands its sink as it goes, for the journal; the run
/// loop learns of ends from [`Executor::wait`]'s outcomes instead.
#[derive(Debug, Clone)]
pub enum NodeEvent {
    Started(Started),
    Ended(Ended),
}

/// Where and how the jobs of one run are executed.
#[derive(Debug)]
pub struct NodeConfig {
    /// CPUs of each pool, in pool order.
    pub pool_cpus: Vec<Vec<u32>>,
    /// Accelerator pools share their CPUs instead of handing them out.
    pub shared_pool: Vec<bool>,
    /// cgroups of this run live under `cosched/<scope>/`.
    pub scope: String,
    /// Each job's output goes to `<log_dir>/<job>.log`.
    pub log_dir: PathBuf,
    /// Run jobs as this (uid, gid).
    pub user: Option<(u32, u32)>,
    pub isolation: Isolation,
    /// The run's clock reads this at the executor's creation (a resumed
    /// run continues where the killed one stopped).
    pub clock_origin: f64,
    /// Variables every job of the run gets (`COSCHED_RUN`, ...); with
    /// `COSCHED_JOB` they also mark a job's orphans.
    pub env: Vec<(String, String)>,
}

struct Active {
    job: JobId,
    start: f64,
    since: Instant,
    cpus: Vec<u32>,
    predicted: f64,
    running: Option<Running>,
    cgroup: Option<JobCgroup>,
    log: PathBuf,
    timed_out: bool,
    /// `NAME=VALUE` lines in the environment of every process of the job.
    marks: Vec<String>,
}

impl Drop for Active {
    fn drop(&mut self) {
        drop(self.running.take());
        if let Some(g) = &self.cgroup {
            let _ = g.remove();
        }
        // Without a cgroup, a daemon the job double-forked is found as an
        // orphan re-parented to us (we are its subreaper) by its marks.
        crate::launch::kill_orphans(&self.marks);
    }
}

/// Runs jobs as real processes for `cosched_engine::run_node`.
pub struct NodeExecutor<'a> {
    cfg: NodeConfig,
    jobs: &'a [NodeJob],
    clock: Instant,
    active: Vec<Active>,
    /// Jobs that could not start, reported by the next wait.
    failed_starts: Vec<(JobId, f64)>,
    sink: &'a mut dyn FnMut(NodeEvent) -> Result<(), String>,
    watchdog: Option<Watchdog>,
    pub poll: std::time::Duration,
}

impl<'a> NodeExecutor<'a> {
    pub fn new(
        cfg: NodeConfig,
        jobs: &'a [NodeJob],
        sink: &'a mut dyn FnMut(NodeEvent) -> Result<(), String>,
    ) -> Result<NodeExecutor<'a>, String> {
        crate::files::create_dir(&cfg.log_dir, cfg.user).map_err(|e| e.to_string())?;
        // Orphans of jobs come to us instead of init; if this fails, only
        // cgroups contain them, and the mechanisms say so.
        let _ = crate::launch::become_subreaper();
        let watchdog = Watchdog::start().map_err(|e| format!("starting the watchdog: {e}"))?;
        Ok(NodeExecutor {
            cfg,
            jobs,
            clock: Instant::now(),
            active: Vec::new(),
            failed_starts: Vec::new(),
            sink,
            watchdog: Some(watchdog),
            poll: std::time::Duration::from_millis(5),
        })
    }

    fn time(&self) -> f64 {
        self.cfg.clock_origin + self.clock.elapsed().as_secs_f64()
    }

    /// CPUs of the job's pool no running job holds.
    fn free_cpus(&self, pool: usize) -> Vec<u32> {
        let all = &self.cfg.pool_cpus[pool];
        if self.cfg.shared_pool.get(pool).copied().unwrap_or(false) {
            return all.clone();
        }
        all.iter()
            .copied()
            .filter(|c| !self.active.iter().any(|a| self.jobs[a.job].pool == pool && a.cpus.contains(c)))
            .collect()
    }

    fn finish(&mut self, k: usize, status: JobStatus, end: f64) -> Result<Outcome, ExecError> {
        let mut a = self.active.remove(k);
        if let Some(r) = &a.running {
            if let Some(w) = self.watchdog.as_mut() {
                w.forget(r.pid());
            }
        }
        if let Some(g) = a.cgroup.take() {
            let _ = g.remove();
        }
        drop(a.running.take());
        let job = &self.jobs[a.job];
        let output = std::fs::read_to_string(&a.log).unwrap_or_default();
        let work_s = if job.kernel { kernel_work_s(&output) } else { None };
        let slowdown = match (&job.solo, status) {
            (Some((solo, timing)), JobStatus::Ok) => {
                let t = if timing == "work-phase" { work_s.unwrap_or(end - a.start) } else { end - a.start };
                Some(t / solo)
            }
            _ => None,
        };
        let lines: Vec<&str> = output.lines().collect();
        let ended = Ended {
            job: a.job,
            start: a.start,
            end,
            cpus: a.cpus.clone(),
            status,
            work_s,
            slowdown,
            predicted: a.predicted,
            output_tail: lines[lines.len().saturating_sub(8)..].join("\n"),
        };
        (self.sink)(NodeEvent::Ended(ended)).map_err(ExecError::Fatal)?;
        Ok(Outcome { job: a.job, status, start: a.start, end, work_s, cpus: std::mem::take(&mut a.cpus) })
    }

    /// Kills every running job and records it as killed.
    pub fn kill_all(&mut self) -> Result<(), ExecError> {
        while !self.active.is_empty() {
            let end = self.time();
            self.finish(0, JobStatus::Killed, end)?;
        }
        Ok(())
    }
}

impl Drop for NodeExecutor<'_> {
    fn drop(&mut self) {
        self.active.clear();
        // The run's scope directories go too (and anything a job left in them).
        self.cfg.isolation.clean_scope(&self.cfg.scope);
        if let Some(w) = self.watchdog.take() {
            w.stop();
        }
    }
}

/// A job's environment beyond cosched's own: what HPC codes expect of a
/// batch system (as Slurm gives `SLURM_*`). `OMP_NUM_THREADS` is its cores
/// and `OMP_PLACES` one place per CPU of its cpuset with `OMP_PROC_BIND =
/// close`, unless its `env` sets them; then the run's variables, the job's
/// `env`, and `COSCHED_JOB` / `COSCHED_CPUS`, which nothing overrides.
pub fn job_env(job: &NodeJob, cpus: &[u32], run: &[(String, String)]) -> Vec<(String, String)> {
    let given = |k: &str| job.env.iter().any(|(n, _)| n == k);
    let mut out = Vec::new();
    if !given("OMP_NUM_THREADS") {
        out.push(("OMP_NUM_THREADS".to_string(), job.cores.to_string()));
    }
    if !given("OMP_PLACES") {
        let places: Vec<String> = cpus.iter().map(|c| format!("{{{c}}}")).collect();
        out.push(("OMP_PLACES".to_string(), places.join(",")));
    }
    if !given("OMP_PROC_BIND") {
        out.push(("OMP_PROC_BIND".to_string(), "close".to_string()));
    }
    out.extend(run.iter().cloned());
    out.extend(job.env.iter().cloned());
    out.push(("COSCHED_JOB".to_string(), job.name.clone()));
    out.push(("COSCHED_CPUS".to_string(), cosched_model::topology::format_cpulist(cpus)));
    out
}

/// The kernel's work-phase seconds from its JSON report line.
fn kernel_work_s(output: &str) -> Option<f64> {
    let line = output.lines().rev().find(|l| l.trim_start().starts_with('{'))?;
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v.get("wall_s")?.as_f64().filter(|t| t.is_finite() && *t > 0.0)
}

impl Executor for NodeExecutor<'_> {
    fn now(&mut self) -> f64 {
        self.time()
    }

    fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError> {
        if let Some(sig) = interrupted() {
            self.kill_all()?;
            return Err(ExecError::Interrupted(sig));
        }
        let job = &self.jobs[plan.job];
        let free = self.free_cpus(job.pool);
        if free.len() < job.cores as usize {
            return Err(ExecError::Fatal(format!(
                "job `{}` needs {} cores of pool {}; only {:?} are free",
                job.name, job.cores, job.pool, free
            )));
        }
        let cpus: Vec<u32> = free[..job.cores as usize].to_vec();
        let log = job.stdout.clone().unwrap_or_else(|| self.cfg.log_dir.join(format!("{}.log", job.name.replace('/', "_"))));
        let memory_bytes = match job.memory_mib {
            Some(m) => Some(m.checked_mul(1 << 20).ok_or_else(|| {
                ExecError::Fatal(format!("job `{}`: memory_mib = {m} does not fit in 64 bits of bytes", job.name))
            })?),
            None => None,
        };
        let limits = Limits { cpus: cpus.clone(), memory_bytes, pids_max: None };
        let cgroup = self
            .cfg
            .isolation
            .create(&self.cfg.scope, &job.name, &limits)
            .map_err(|e| ExecError::Fatal(format!("creating the cgroup of job `{}`: {e}", job.name)))?;
        let mut launch = Launch::new(job.argv.clone());
        launch.capture_stdout = false;
        launch.output = Some(log.clone());
        launch.stderr_output = job.stderr.clone();
        launch.workdir = job.workdir.clone();
        launch.env = job_env(job, &cpus, &self.cfg.env);
        if !self.cfg.isolation.limits_memory() {
            launch.data_limit = memory_bytes;
        }
        let marks: Vec<String> = std::iter::once(format!("COSCHED_JOB={}", job.name))
            .chain(self.cfg.env.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        launch.user = self.cfg.user;
        launch.parent_death_signal = Some(Signal::SIGKILL);
        if !self.cfg.isolation.pins() {
            launch.cpus = Some(cpus.clone());
        }
        if let Some(g) = &cgroup {
            launch.cgroup_procs = g.procs_files();
        }
        let start = self.time();
        let since = Instant::now();
        let beside: Vec<String> = plan.beside.iter().map(|&b| self.jobs[b].name.clone()).collect();
        let running = match spawn(&launch) {
            Ok(r) => Some(r),
            Err(e) => {
                let _ = crate::files::write_file(&log, format!("cosched: {e}\n").as_bytes(), self.cfg.user);
                None
            }
        };
        let pgid = running.as_ref().map_or(0, |r| r.pid());
        if let (Some(w), Some(r)) = (self.watchdog.as_mut(), &running) {
            w.watch(r.pid(), cgroup.as_ref());
        }
        let spawned = running.is_some();
        self.active.push(Active {
            job: plan.job,
            start,
            since,
            cpus: cpus.clone(),
            predicted: plan.predicted,
            running,
            cgroup,
            log,
            timed_out: false,
            marks,
        });
        (self.sink)(NodeEvent::Started(Started { job: plan.job, start, cpus, pgid, beside, predicted: plan.predicted }))
            .map_err(ExecError::Fatal)?;
        if !spawned {
            self.failed_starts.push((plan.job, start));
        }
        Ok(start)
    }

    fn wait(&mut self, until: Option<f64>) -> Result<Vec<Outcome>, ExecError> {
        let mut ended = Vec::new();
        for (job, _) in std::mem::take(&mut self.failed_starts) {
            if let Some(k) = self.active.iter().position(|a| a.job == job) {
                let end = self.time();
                ended.push(self.finish(k, JobStatus::SpawnFailed, end)?);
            }
        }
        loop {
            if let Some(sig) = interrupted() {
                self.kill_all()?;
                return Err(ExecError::Interrupted(sig));
            }
            let mut k = 0;
            while k < self.active.len() {
                let now = self.time();
                let a = &mut self.active[k];
                let timeout = self.jobs[a.job].timeout;
                if !a.timed_out && timeout.is_some_and(|t| a.since.elapsed().as_secs_f64() > t) {
                    // The group is killed here; its exit is collected below
                    // like any other, then recorded as a timeout.
                    a.timed_out = true;
                    if let Some(g) = &a.cgroup {
                        let _ = g.kill_all();
                    }
                    if let Some(r) = &a.running {
                        let _ = killpg(Pid::from_raw(r.pid()), Signal::SIGKILL);
                    }
                }
                let exit = match a.running.as_mut().map(|r| r.try_wait()) {
                    Some(Ok(Some(o))) => Some(o.exit),
                    Some(Ok(None)) => None,
                    Some(Err(crate::launch::LaunchError::Interrupted(_))) => None,
                    Some(Err(e)) => return Err(ExecError::Fatal(e.to_string())),
                    None => Some(Exit::Code(127)),
                };
                match exit {
                    None => k += 1,
                    Some(exit) => {
                        let end = now;
                        let oom = a.cgroup.as_ref().is_some_and(|g| g.oom_kills() > 0);
                        let status = match exit {
                            _ if a.timed_out => JobStatus::Timeout,
                            _ if oom => JobStatus::Oom,
                            Exit::Code(0) => JobStatus::Ok,
                            Exit::Code(c) => JobStatus::Failed(c),
                            Exit::Signal(s) => JobStatus::Signal(s),
                        };
                        ended.push(self.finish(k, status, end)?);
                    }
                }
            }
            if !ended.is_empty() || until.is_some_and(|u| self.time() >= u) || (self.active.is_empty() && until.is_none()) {
                return Ok(ended);
            }
            std::thread::sleep(self.poll);
        }
    }
}

/// A process that kills the runner's jobs when the runner dies.
///
/// It reads `+ PGID PROCS-FILE...` and `- PGID` lines from a pipe; when the
/// pipe reaches end-of-file (the runner exited or was killed, since only the
/// runner holds the write end) it SIGKILLs every listed process group and
/// every process in the listed cgroups, removes the groups once empty (and
/// their scope when it is left empty), and exits: a killed runner leaves no
/// empty cgroup directories behind.
pub struct Watchdog {
    child: Child,
    stdin: Option<ChildStdin>,
}

const WATCHDOG: &str = r#"trap '' INT TERM HUP
pgs=""; files=""
while read op pg rest; do
  case "$op" in
    +) pgs="$pgs $pg"; files="$files $rest" ;;
    -) n=""; for p in $pgs; do [ "$p" = "$pg" ] || n="$n $p"; done; pgs="$n" ;;
  esac
done
for p in $pgs; do kill -KILL -- "-$p" 2>/dev/null; done
for f in $files; do
  [ -f "$f" ] && for p in $(cat "$f" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
done
for f in $files; do
  d=${f%/*}; n=0
  while [ -d "$d" ] && [ $n -lt 100 ]; do
    rmdir "$d" 2>/dev/null && break
    for p in $(cat "$f" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    sleep 0.02; n=$((n+1))
  done
  rmdir "${d%/*}" 2>/dev/null
done
exit 0"#;

impl Watchdog {
    pub fn start() -> std::io::Result<Watchdog> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("cosched-watchdog")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Watchdog { child, stdin })
    }

    fn send(&mut self, line: &str) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = s.write_all(line.as_bytes());
            let _ = s.flush();
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Adds a job's process group and cgroup.
    pub fn watch(&mut self, pgid: i32, cgroup: Option<&JobCgroup>) {
        let files: Vec<String> =
            cgroup.map(|g| g.procs_files().iter().map(|p| p.display().to_string()).collect()).unwrap_or_default();
        self.send(&format!("+ {pgid} {}\n", files.join(" ")));
    }

    /// Drops a finished job's group from the list, so a reused group id is
    /// never killed.
    pub fn forget(&mut self, pgid: i32) {
        self.send(&format!("- {pgid}\n"));
    }

    /// Ends the watchdog (after the jobs ended) and reaps it.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

use std::os::unix::process::CommandExt;

/// An exclusive lock on the node for one verb that runs measured work:
/// `flock` on a file that holds the holder's pid and command. The kernel
/// drops the lock when the holder dies, however it dies, so a killed
/// runner never blocks the next one.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
    pub path: PathBuf,
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
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            let mut lines = holder.lines();
            let pid = lines.next().unwrap_or("").trim().to_string();
            let stored = lines.next().unwrap_or("").trim().to_string();
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
        Ok(RunLock { _file: f, path: path.to_path_buf() })
    }
}

/// The user jobs run as: the one who invoked `sudo` when cosched runs as
/// root through sudo (SUDO_UID / SUDO_GID), else cosched's own (`None`).
pub fn invoking_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let uid = std::env::var("SUDO_UID").ok()?.parse::<u32>().ok()?;
    let gid = std::env::var("SUDO_GID").ok()?.parse::<u32>().ok()?;
    (uid != 0).then_some((uid, gid))
}

/// Splits the node's CPUs among pools: cpu pools take consecutive CPUs in
/// order; accelerator pools run on the host pool's CPUs (this node has no
/// accelerator; their jobs are host processes) and share them.
pub fn pool_cpus(pools: &[(u32, bool)], node_cpus: &[u32]) -> Result<(Vec<Vec<u32>>, Vec<bool>), String> {
    let mut next = 0usize;
    let mut out = Vec::new();
    let mut shared = Vec::new();
    let mut host: Option<Vec<u32>> = None;
    for &(cores, accel) in pools {
        if accel {
            out.push(Vec::new());
            shared.push(true);
            continue;
        }
        let end = next + cores as usize;
        if end > node_cpus.len() {
            return Err(format!("the pools need {end} CPUs; this node has {}", node_cpus.len()));
        }
        let cpus = node_cpus[next..end].to_vec();
        host.get_or_insert_with(|| cpus.clone());
        out.push(cpus);
        shared.push(false);
        next = end;
    }
    let host = host.unwrap_or_else(|| node_cpus.to_vec());
    for (cpus, &s) in out.iter_mut().zip(&shared) {
        if s {
            *cpus = host.clone();
        }
    }
    Ok((out, shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_split_the_node_and_accelerators_share_the_host_cpus() {
        let (cpus, shared) = pool_cpus(&[(1, false), (2, true), (1, false)], &[0, 1]).unwrap();
        assert_eq!(cpus, vec![vec![0], vec![0], vec![1]]);
        assert_eq!(shared, vec![false, true, false]);
        assert!(pool_cpus(&[(3, false)], &[0, 1]).unwrap_err().contains("need 3"));
    }

    #[test]
    fn the_work_phase_comes_from_the_last_json_line() {
        assert_eq!(kernel_work_s("noise\n{\"wall_s\": 1.25, \"x\": 1}\n"), Some(1.25));
        assert_eq!(kernel_work_s("no report"), None);
    }

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
