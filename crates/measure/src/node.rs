//! Real processes for the node runner: the [`Executor`] that
//! `cosched_engine::run_node` drives, a lock that keeps a second runner off the node, a watchdog that
//! kills the jobs if the runner itself is killed, and the invoking user.
//!
//! A job runs as a process group, in its own cgroups when the node allows
//! (see [`crate::cgroup`]), pinned to the cores of its pool the engine chose
//! (free ones, or busy ones when the policy overbooks; mapped to CPUs by
//! [`crate::place`], as pairs and probes map them), its memory bound to
//! the NUMA nodes of those CPUs (`cpuset.mems`), with its `timeout`
//! and `memory_mib` enforced. A policy may suspend a job (cgroup freezer,
//! v1 `freezer.state` or v2 `cgroup.freeze`; without cgroups SIGSTOP to its
//! process group), resume it (thaw, or SIGCONT) and move it to other cores
//! (its cpuset's `cpuset.cpus`; without cgroups `sched_setaffinity` of
//! every thread of its process group). A job's timeout and its recorded
//! slowdown leave out the time it spent suspended. Every start and end
//! is handed to a sink before the runner goes on (the CLI stores it), so a
//! journal of the run exists at every instant.
//!
//! No job outlives the runner:
//! - SIGINT / SIGTERM set the interrupt flag; `wait` then kills every job
//!   (process group and cgroup) and returns [`ExecError::Interrupted`]. A
//!   suspended job is killed, then thawed so that the kill takes effect
//!   (a frozen v1 task dies only when thawed); it is never left frozen.
//! - SIGKILL of the runner: each job's leader has PR_SET_PDEATHSIG =
//!   SIGKILL, and the process's watchdog ([`watch_group`]: a few lines of
//!   `sh` in its own process group, holding the read end of a pipe the
//!   runner writes the job groups into) sees end-of-file when the runner
//!   dies and kills every listed process group and cgroup member, then
//!   thaws the job's cgroup (so a frozen job dies too) and removes it.
//!   `cosched run --resume` also removes leftover cgroups of the run
//!   ([`Isolation::clean_scope`]). Every job [`crate::launch::spawn`]
//!   starts is contained so, whichever verb starts it (pairs, probe,
//!   profile, calibrate as much as run), and holds the node lock
//!   ([`crate::runlock::RunLock`]) until its last process is gone.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use cosched_engine::online::{Estimate, Sample, Settled};
use cosched_engine::run::{ExecError, Executor, EndedJob, StartPlan};
use cosched_engine::JobId;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::Serialize;

use cosched_model::workload::limits::DEFAULT_PIDS;

use crate::cgroup::{Isolation, JobCgroup, Limits};
use crate::launch::{interrupted, live_members, spawn, Exit, Launch, Running};

/// One job as the executor runs it.
#[derive(Debug, Clone)]
pub struct NodeJob {
    pub name: String,
    pub argv: Vec<String>,
    pub pool: usize,
    pub cores: u32,
    pub timeout: Option<f64>,
    pub memory_mib: Option<u64>,
    /// Cap on its processes and threads (`pids.max`); `None`: the
    /// workload's default, `model::workload::limits::DEFAULT_PIDS`.
    pub pids_max: Option<u64>,
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
    /// The job's other ways to run (workload variants), in order after its
    /// own: what a start of variant k (`StartPlan::variant`) runs is
    /// `variants[k - 1]`.
    pub variants: Vec<NodeJob>,
    /// The workload's `progress` key: where its online estimate reads.
    pub progress: Option<cosched_model::workload::ProgressSource>,
}

pub use cosched_model::run::JobStatus;

/// A job that started: what the journal records at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Started {
    pub job: JobId,
    pub start: f64,
    pub cpus: Vec<u32>,
    /// NUMA nodes its memory is bound to: those of its CPUs (empty when
    /// the topology names none).
    pub mems: Vec<u32>,
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
    /// Run time over the stored solo time, in the solo time's timing,
    /// the time suspended left out; `None` without a stored solo time or
    /// when the job did not finish.
    pub slowdown: Option<f64>,
    /// Seconds it spent suspended.
    pub suspended_s: f64,
    pub predicted: f64,
    /// Last lines of the job's output, for failures: at most 8, each cut
    /// to `files::LINE_CHARS` characters, from its last 64 KiB; empty when
    /// the output went to a device or a FIFO (never read back).
    pub output_tail: String,
}

/// What the executor hands its sink as it goes, for the journal; the run
/// loop learns of ends from [`Executor::wait`]'s ended jobs instead.
#[derive(Debug, Clone)]
pub enum NodeEvent {
    Started(Started),
    Ended(Ended),
    /// A job was frozen (or stopped) at `t`.
    Suspended { job: JobId, t: f64 },
    /// A suspended job went on at `t`.
    Resumed { job: JobId, t: f64 },
    /// A job was re-pinned onto `cpus` at `t`, its memory onto `mems`.
    Moved { job: JobId, t: f64, cpus: Vec<u32>, mems: Vec<u32> },
    /// A running job's online slowdown estimate (issue 38).
    Estimate { job: JobId, estimate: Estimate },
    /// A running pair's estimate settled: learn it at once.
    Settled(Settled),
    /// A job's progress observer yields nothing (said once per job).
    Silent { job: JobId, observer: &'static str, why: String },
}

/// Where and how the jobs of one run are executed.
#[derive(Debug)]
pub struct NodeConfig {
    /// CPUs of each pool, in pool order.
    pub pool_cpus: Vec<Vec<u32>>,
    /// Accelerator pools share their CPUs instead of handing them out.
    pub shared_pool: Vec<bool>,
    /// The node's topology: a job's memory is bound to the NUMA nodes of
    /// its CPUs ([`crate::place::mems_of`]); `None` leaves it unbound.
    pub topology: Option<cosched_model::topology::Node>,
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
    /// The variant it runs as (0: its own way).
    variant: usize,
    start: f64,
    since: Instant,
    cpus: Vec<u32>,
    predicted: f64,
    running: Option<Running>,
    cgroup: Option<JobCgroup>,
    log: PathBuf,
    /// `log` is a default log in the run's own directory (else a path the
    /// workload named, read back as the user).
    own_log: bool,
    /// Why the job could not start, shown as its output when `log` could
    /// not take the note either (a file the user may not write).
    spawn_error: Option<String>,
    timed_out: bool,
    /// `NAME=VALUE` lines in the environment of every process of the job.
    marks: Vec<String>,
    /// Its cgroup was found empty and removed: no orphan of it is left.
    contained: bool,
    /// Since when it is suspended, while it is.
    suspended_at: Option<Instant>,
    /// Seconds suspended before `suspended_at`.
    suspended_s: f64,
    /// Its progress observer (none for a job that could not start).
    watch: Option<crate::observe::Watch>,
    /// The counter file a kernel job writes its progress to.
    progress_file: Option<PathBuf>,
}

impl Active {
    fn suspended_now(&self) -> f64 {
        self.suspended_s + self.suspended_at.map_or(0.0, |t| t.elapsed().as_secs_f64())
    }

    /// Kills a suspended job so that the kill takes effect: SIGKILL to its
    /// group, then a thaw (a frozen v1 task acts on the signal only once
    /// thawed; a stopped one dies at once).
    fn kill_suspended(&mut self) {
        if self.suspended_at.take().is_none() {
            return;
        }
        if let Some(r) = &self.running {
            let _ = killpg(Pid::from_raw(r.pid()), Signal::SIGKILL);
        }
        if let Some(g) = &self.cgroup {
            let _ = g.kill_all();
            let _ = g.set_frozen(false);
        }
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        // Waiting for a frozen leader would never end: kill and thaw first.
        self.kill_suspended();
        drop(self.running.take());
        // A cgroup removed is a cgroup found empty: nothing of the job is
        // left, and the scan of every process's environment (most of a
        // short job's cost) is not needed.
        if self.contained || self.cgroup.as_ref().is_some_and(|g| g.remove().is_ok()) {
            return;
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
    /// Empty groups of ended jobs, handed on to the next ones
    /// ([`JobCgroup::reuse`]); the scope's cleaning removes them.
    idle: Vec<JobCgroup>,
    /// Jobs that could not start, reported by the next wait.
    failed_starts: Vec<(JobId, f64)>,
    sink: &'a mut dyn FnMut(NodeEvent) -> Result<(), String>,
    pub poll: std::time::Duration,
    /// Seconds between readings of the running jobs' progress
    /// (`crate::observe`); `None`: not observed.
    pub sample_every: Option<f64>,
}

impl<'a> NodeExecutor<'a> {
    /// Starts a job; `suspended`: stops it at once, before its start is
    /// handed to the sink, and returns when it is known stopped too.
    fn launch(&mut self, plan: &StartPlan, suspended: bool) -> Result<(f64, Option<f64>), ExecError> {
        if let Some(sig) = interrupted() {
            self.kill_all()?;
            return Err(ExecError::Interrupted(sig));
        }
        let job = self.spec(plan.job, plan.variant)?;
        let cpus = self.cpus_of(job.pool, &plan.cpus)?;
        let log = job.stdout.clone().unwrap_or_else(|| self.cfg.log_dir.join(format!("{}.log", job.name.replace('/', "_"))));
        let memory_bytes = match job.memory_mib {
            Some(m) => Some(m.checked_mul(1 << 20).ok_or_else(|| {
                ExecError::Fatal(format!("job `{}`: memory_mib = {m} does not fit in 64 bits of bytes", job.name))
            })?),
            None => None,
        };
        let mems = self.mems_of(&cpus);
        let limits = Limits { cpus: cpus.clone(), mems: mems.clone(), memory_bytes, pids_max: Some(job.pids_max.unwrap_or(DEFAULT_PIDS)) };
        let cgroup = match self.reused(&job.name, &limits) {
            Some(g) => Some(g),
            None => self
                .cfg
                .isolation
                .create(&self.cfg.scope, &job.name, &limits)
                .map_err(|e| ExecError::Fatal(format!("creating the cgroup of job `{}`: {e}", job.name)))?,
        };
        let mut launch = Launch::new(job.argv.clone());
        launch.capture_stdout = false;
        launch.output = Some(log.clone());
        launch.own_output = job.stdout.is_none();
        launch.stderr_output = job.stderr.clone();
        launch.workdir = job.workdir.clone();
        launch.env = job_env(job, &cpus, &self.cfg.env);
        // A kernel reports its work done here (made for the job's user,
        // since the kernel opens it as the user).
        let progress_file = job.kernel.then(|| self.cfg.log_dir.join(format!("{}.progress", job.name.replace('/', "_"))));
        if let Some(p) = &progress_file {
            if crate::files::create_own_file(p, self.cfg.user).is_ok() {
                launch.env.push((PROGRESS_ENV.to_string(), p.display().to_string()));
            }
        }
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
        let mut spawn_error = None;
        let running = match spawn(&launch) {
            Ok(r) => Some(r),
            Err(e) => {
                spawn_error = Some(format!("cosched: {e}"));
                let note = format!("cosched: {e}\n");
                let _ = if launch.own_output {
                    crate::files::write_own_file(&log, note.as_bytes(), self.cfg.user)
                } else {
                    crate::files::write_file(&log, note.as_bytes(), self.cfg.user)
                };
                None
            }
        };
        // The watchdog knows the job's group and cgroups from `spawn`.
        let pgid = running.as_ref().map_or(0, |r| r.pid());
        let spawned = running.is_some();
        let watch = spawned.then(|| {
            let file = progress_file.clone().unwrap_or_default();
            crate::observe::Watch::new(crate::observe::for_job(&crate::observe::Sources {
                kernel: job.kernel,
                counter: &file,
                pgid,
                cores: job.cores,
                progress: job.progress.as_ref(),
                output: &log,
                own_output: launch.own_output,
                user: self.cfg.user,
                workdir: job.workdir.as_deref(),
            }))
        });
        self.active.push(Active {
            job: plan.job,
            variant: plan.variant,
            start,
            since,
            cpus: cpus.clone(),
            predicted: plan.predicted,
            running,
            cgroup,
            own_log: launch.own_output,
            spawn_error,
            log,
            timed_out: false,
            marks,
            contained: false,
            suspended_at: None,
            suspended_s: 0.0,
            watch,
            progress_file,
        });
        // Stopped before anything else (the store's write of its start
        // among them), so it runs only the instant between its exec and
        // the freeze beside the job whose turn it is.
        let stopped = if suspended && spawned { Some(self.stop(plan.job)?) } else { None };
        (self.sink)(NodeEvent::Started(Started { job: plan.job, start, cpus, mems, pgid, beside, predicted: plan.predicted }))
            .map_err(ExecError::Fatal)?;
        if let Some(t) = stopped {
            (self.sink)(NodeEvent::Suspended { job: plan.job, t }).map_err(ExecError::Fatal)?;
        }
        if !spawned {
            self.failed_starts.push((plan.job, start));
        }
        Ok((start, stopped))
    }

    /// An empty group of an ended job handed to job `name` (one of the
    /// same name first), else `None`; one that cannot be is removed.
    fn reused(&mut self, name: &str, limits: &Limits) -> Option<JobCgroup> {
        let k = self.idle.iter().position(|g| g.named(name)).or(self.idle.len().checked_sub(1))?;
        let mut g = self.idle.swap_remove(k);
        if g.reuse(name, limits) {
            return Some(g);
        }
        let _ = g.remove();
        None
    }

    /// Stops a running job (freezer, else SIGSTOP) and returns once it is
    /// known stopped ([`crate::freeze`]), with the time then.
    fn stop(&mut self, job: JobId) -> Result<f64, ExecError> {
        let freezes = self.cfg.isolation.freezes();
        let a = self.active_mut(job)?;
        if a.suspended_at.is_none() {
            match (&a.cgroup, &a.running) {
                (Some(g), _) if freezes => g.set_frozen(true).map_err(|e| ExecError::Fatal(format!("freezing job {job}: {e}")))?,
                (_, Some(r)) => crate::freeze::stop_group(r.pid()).map_err(|e| ExecError::Fatal(format!("stopping job {job}: {e}")))?,
                // It never started: nothing to stop.
                (_, None) => {}
            }
            a.suspended_at = Some(Instant::now());
        }
        Ok(self.time())
    }

    pub fn new(
        cfg: NodeConfig,
        jobs: &'a [NodeJob],
        sink: &'a mut dyn FnMut(NodeEvent) -> Result<(), String>,
    ) -> Result<NodeExecutor<'a>, String> {
        // The run's log directory is cosched's own (in its data directory,
        // or under a report directory already made as the user): made by
        // cosched and handed to the user.
        crate::files::create_own_dir(&cfg.log_dir, cfg.user).map_err(|e| e.to_string())?;
        // Orphans of jobs come to us instead of init; if this fails, only
        // cgroups contain them, and the mechanisms say so.
        let _ = crate::launch::become_subreaper();
        Ok(NodeExecutor {
            cfg,
            jobs,
            clock: Instant::now(),
            active: Vec::new(),
            idle: Vec::new(),
            failed_starts: Vec::new(),
            sink,
            poll: std::time::Duration::from_millis(5),
            sample_every: Some(crate::observe::DEFAULT_EVERY_S),
        })
    }

    fn time(&self) -> f64 {
        self.cfg.clock_origin + self.clock.elapsed().as_secs_f64()
    }

    /// The CPUs of pool core indices `idx`, mapped as pairs and probes map
    /// them ([`crate::place::cpus_of`]).
    fn cpus_of(&self, pool: usize, idx: &[u32]) -> Result<Vec<u32>, ExecError> {
        crate::place::cpus_of(&self.cfg.pool_cpus, &self.cfg.shared_pool, pool, idx).map_err(ExecError::Fatal)
    }

    /// Where the memory of a job on `cpus` is bound: none without a
    /// cpuset to bind it with (then nothing is recorded either).
    fn mems_of(&self, cpus: &[u32]) -> Vec<u32> {
        match &self.cfg.topology {
            Some(n) if self.cfg.isolation.pins() => crate::place::mems_of(n, cpus),
            _ => Vec::new(),
        }
    }

    /// What job `job` runs as its variant `variant` (0: its own way).
    fn spec(&self, job: JobId, variant: usize) -> Result<&'a NodeJob, ExecError> {
        let j: &'a NodeJob = &self.jobs[job];
        match variant {
            0 => Ok(j),
            v => j.variants.get(v - 1).ok_or_else(|| ExecError::Fatal(format!("job `{}` has no variant {v}", j.name))),
        }
    }

    fn active_mut(&mut self, job: JobId) -> Result<&mut Active, ExecError> {
        self.active.iter_mut().find(|a| a.job == job).ok_or_else(|| ExecError::Fatal(format!("job {job} is not running")))
    }

    fn finish(&mut self, k: usize, status: JobStatus, end: f64) -> Result<EndedJob, ExecError> {
        let mut a = self.active.remove(k);
        if let Some(p) = a.progress_file.take() {
            let _ = std::fs::remove_file(p);
        }
        let suspended_s = a.suspended_now();
        a.kill_suspended();
        // Found empty (kept for the next job) or removed here, nothing of
        // the job is left: the drop below then skips the scan of every
        // process for its orphans, which was most of a short job's cost
        // (issue 42).
        if let Some(g) = a.cgroup.take() {
            if g.is_empty() {
                self.idle.push(g);
                a.contained = true;
            } else if g.remove().is_ok() {
                a.contained = true;
            } else {
                a.cgroup = Some(g);
            }
        }
        drop(a.running.take());
        let job = self.spec(a.job, a.variant)?;
        // Bounded, regular files only, as the user: a job's output may be
        // /dev/zero, a FIFO, a terminal or one line of 300 MB.
        let output = if a.own_log { crate::files::read_own_tail(&a.log, self.cfg.user) } else { crate::files::read_tail(&a.log, self.cfg.user) };
        let work_s = if job.kernel { kernel_work_s(&output.text) } else { None };
        let slowdown = match (&job.solo, status) {
            (Some((solo, timing)), JobStatus::Ok) => {
                let t = if timing == "work-phase" { work_s.unwrap_or(end - a.start) } else { end - a.start };
                Some((t - suspended_s).max(f64::MIN_POSITIVE) / solo)
            }
            _ => None,
        };
        let ended = Ended {
            job: a.job,
            start: a.start,
            end,
            cpus: a.cpus.clone(),
            status,
            work_s,
            slowdown,
            suspended_s,
            predicted: a.predicted,
            output_tail: match (output.text.is_empty(), &a.spawn_error) {
                (true, Some(e)) => crate::files::cut_line(e, crate::files::LINE_CHARS),
                _ => output.last_lines(8),
            },
        };
        (self.sink)(NodeEvent::Ended(ended)).map_err(ExecError::Fatal)?;
        Ok(EndedJob { job: a.job, status, start: a.start, end, work_s, cpus: std::mem::take(&mut a.cpus) })
    }

    /// The process group of a running job (its leader's pid).
    pub fn pgid(&self, job: JobId) -> Option<i32> {
        self.active.iter().find(|a| a.job == job)?.running.as_ref().map(|r| r.pid())
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
        for g in self.idle.drain(..) {
            let _ = g.remove();
        }
        // The run's scope directories go too (and anything a job left in them).
        self.cfg.isolation.clean_scope(&self.cfg.scope);
    }
}

/// A job's environment beyond cosched's own: what HPC codes expect of a
/// batch system (as Slurm gives `SLURM_*`). `OMP_NUM_THREADS` is its cores
/// and `OMP_PLACES` one place per CPU of its cpuset with `OMP_PROC_BIND =
/// close`, unless its `env` sets them; then the run's variables, the job's
/// `env`, and `COSCHED_JOB` / `COSCHED_CPUS`, which nothing overrides.
pub fn job_env(job: &NodeJob, cpus: &[u32], run: &[(String, String)]) -> Vec<(String, String)> {
    env_for(&job.name, job.cores, &job.env, cpus, run)
}

/// [`job_env`] for a job given by its parts, so a job measured alone or in
/// a pair (`profile`, `probe`, `pairs`) sees the environment it gets in a
/// run: a measurement of an OpenMP job without its `env` or its thread
/// count measures another program.
pub fn env_for(name: &str, cores: u32, own: &[(String, String)], cpus: &[u32], run: &[(String, String)]) -> Vec<(String, String)> {
    let given = |k: &str| own.iter().any(|(n, _)| n == k);
    let mut out = Vec::new();
    if !given("OMP_NUM_THREADS") {
        out.push(("OMP_NUM_THREADS".to_string(), cores.to_string()));
    }
    if !given("OMP_PLACES") {
        let places: Vec<String> = cpus.iter().map(|c| format!("{{{c}}}")).collect();
        out.push(("OMP_PLACES".to_string(), places.join(",")));
    }
    if !given("OMP_PROC_BIND") {
        out.push(("OMP_PROC_BIND".to_string(), "close".to_string()));
    }
    out.extend(run.iter().cloned());
    out.extend(own.iter().cloned());
    out.push(("COSCHED_JOB".to_string(), name.to_string()));
    out.push(("COSCHED_CPUS".to_string(), cosched_model::topology::format_cpulist(cpus)));
    out
}

/// The variable naming a kernel's progress file (`cosched-kernel`'s
/// `progress::ENV`; measure does not link the kernels).
pub const PROGRESS_ENV: &str = "COSCHED_PROGRESS_FILE";

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
        self.launch(plan, false).map(|(start, _)| start)
    }

    fn start_suspended(&mut self, plan: &StartPlan) -> Result<(f64, f64), ExecError> {
        let (start, stopped) = self.launch(plan, true)?;
        Ok((start, stopped.unwrap_or(start)))
    }

    fn suspend(&mut self, job: JobId) -> Result<f64, ExecError> {
        let t = self.stop(job)?;
        (self.sink)(NodeEvent::Suspended { job, t }).map_err(ExecError::Fatal)?;
        Ok(t)
    }

    fn wait(&mut self, until: Option<f64>) -> Result<Vec<EndedJob>, ExecError> {
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
                if !a.timed_out && timeout.is_some_and(|t| a.since.elapsed().as_secs_f64() - a.suspended_now() > t) {
                    // The group is killed here; its exit is collected below
                    // like any other, then recorded as a timeout.
                    a.timed_out = true;
                    a.kill_suspended();
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
            // Woken by the first job to end rather than a fixed nap: the
            // nap was most of a short job's overhead.
            let pids: Vec<i32> = self.active.iter().filter_map(|a| a.running.as_ref().map(|r| r.pid())).collect();
            let left = until.map_or(self.poll, |u| self.poll.min(std::time::Duration::from_secs_f64((u - self.time()).max(0.0))));
            crate::launch::wait_any_exit(&pids, left);
        }
    }

    fn sample_every(&self) -> Option<f64> {
        self.sample_every
    }

    fn sample(&mut self) -> Result<Vec<(JobId, Sample)>, ExecError> {
        let (now, at) = (self.time(), Instant::now());
        let mut out = Vec::new();
        for a in self.active.iter_mut().filter(|a| a.suspended_at.is_none()) {
            let Some(w) = a.watch.as_mut() else { continue };
            let Some(s) = w.sample(now, at) else { continue };
            if let Sample::Silent(why) = &s {
                (self.sink)(NodeEvent::Silent { job: a.job, observer: w.name(), why: why.clone() }).map_err(ExecError::Fatal)?;
            }
            out.push((a.job, s));
        }
        Ok(out)
    }

    fn estimated(&mut self, job: JobId, estimate: &Estimate) -> Result<(), ExecError> {
        (self.sink)(NodeEvent::Estimate { job, estimate: *estimate }).map_err(ExecError::Fatal)
    }

    fn settled(&mut self, settled: &Settled) -> Result<(), ExecError> {
        (self.sink)(NodeEvent::Settled(settled.clone())).map_err(ExecError::Fatal)
    }

    fn resume(&mut self, job: JobId) -> Result<f64, ExecError> {
        let freezes = self.cfg.isolation.freezes();
        let t = self.time();
        let a = self.active_mut(job)?;
        if let Some(since) = a.suspended_at.take() {
            a.suspended_s += since.elapsed().as_secs_f64();
            match (&a.cgroup, &a.running) {
                (Some(g), _) if freezes => g.set_frozen(false).map_err(|e| ExecError::Fatal(format!("thawing job {job}: {e}")))?,
                (_, Some(r)) => crate::freeze::cont_group(r.pid()).map_err(|e| ExecError::Fatal(format!("continuing job {job}: {e}")))?,
                (_, None) => {}
            }
        }
        (self.sink)(NodeEvent::Resumed { job, t }).map_err(ExecError::Fatal)?;
        Ok(t)
    }

    fn move_to(&mut self, job: JobId, idx: &[u32]) -> Result<f64, ExecError> {
        let pins = self.cfg.isolation.pins();
        let variant = self.active.iter().find(|a| a.job == job).map_or(0, |a| a.variant);
        let pool = self.spec(job, variant)?.pool;
        let cpus = self.cpus_of(pool, idx)?;
        let mems = self.mems_of(&cpus);
        let t = self.time();
        let a = self.active_mut(job)?;
        match (&a.cgroup, &a.running) {
            (Some(g), _) if pins => {
                g.set_cpus_and_mems(&cpus, &mems).map_err(|e| ExecError::Fatal(format!("moving job {job}: {e}")))?;
                // A thread that pinned itself (a kernel's worker, an MPI
                // rank) keeps its own CPU when the cpuset grows (Linux keeps
                // the affinity a thread asked for within its cpuset): every
                // thread gets the job's new cores, as an unpinned job has.
                if let Some(r) = &a.running {
                    set_group_affinity(r.pid(), &cpus).map_err(|e| ExecError::Fatal(format!("moving job {job}: {e}")))?;
                }
            }
            (_, Some(r)) => set_group_affinity(r.pid(), &cpus).map_err(|e| ExecError::Fatal(format!("moving job {job}: {e}")))?,
            (_, None) => {}
        }
        a.cpus = cpus.clone();
        (self.sink)(NodeEvent::Moved { job, t, cpus, mems }).map_err(ExecError::Fatal)?;
        Ok(t)
    }
}

/// Pins every thread of every live process of group `pgid` to `cpus`: the
/// fallback of a cpuset. A thread that exits meanwhile is skipped.
pub fn set_group_affinity(pgid: i32, cpus: &[u32]) -> Result<(), String> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c as usize).map_err(|e| format!("cpu {c}: {e}"))?;
    }
    for pid in live_members(pgid) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            match sched_setaffinity(Pid::from_raw(tid), &set) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => return Err(format!("sched_setaffinity of thread {tid}: {e}")),
            }
        }
    }
    Ok(())
}

/// A process that kills the runner's jobs when the runner dies: one per
/// cosched process, started with its first job ([`watch_group`]).
///
/// It reads `S SCOPE` lines (a directory whose subdirectories are job
/// cgroups of this process, `cosched/<scope>` in each hierarchy, said once)
/// and `+ PGID` / `- PGID` lines (a job's process group, added at its start
/// and taken off when it ended, so a reused group id is never killed) from
/// a pipe. Only a job's group id is sent per job, not its cgroups' paths:
/// `sh` reads a pipe a byte at a time, and 350 bytes a job were 700 system
/// calls of the watchdog's on a node of two CPUs (issue 42). When the pipe
/// reaches end-of-file (the runner exited or was killed, since only the
/// runner holds the write end) it SIGKILLs every listed process group and
/// every process in the job cgroups of each scope, thaws those cgroups (a
/// frozen job dies only once thawed), removes them once empty and then the
/// scope, and exits: a killed runner leaves no frozen and no empty cgroup
/// directories behind.
pub struct Watchdog {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Scopes already sent.
    scopes: Vec<PathBuf>,
}

const WATCHDOG: &str = r#"trap '' INT TERM HUP
pgs=""; scopes=""
while read op pg; do
  case "$op" in
    +) pgs="$pgs $pg" ;;
    -) n=""; for p in $pgs; do [ "$p" = "$pg" ] || n="$n $p"; done; pgs="$n" ;;
    S) scopes="$scopes $pg" ;;
  esac
done
for p in $pgs; do kill -s KILL -- "-$p" 2>/dev/null; done
files=""
for s in $scopes; do for f in "$s"/*/cgroup.procs; do [ -f "$f" ] && files="$files $f"; done; done
for f in $files; do
  d="${f%/cgroup.procs}"
  for p in $(cat "$f" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  [ -f "$d/freezer.state" ] && echo THAWED > "$d/freezer.state" 2>/dev/null
  [ -f "$d/cgroup.freeze" ] && echo 0 > "$d/cgroup.freeze" 2>/dev/null
done
for i in 1 2 3 4 5 6 7 8 9 10; do
  left=""
  for f in $files; do d="${f%/cgroup.procs}"; [ -d "$d" ] && ! rmdir "$d" 2>/dev/null && left=1; done
  [ -z "$left" ] && break
  sleep 0.1
done
for f in $files; do
  d=${f%/*}; n=0
  while [ -d "$d" ] && [ $n -lt 100 ]; do
    rmdir "$d" 2>/dev/null && break
    for p in $(cat "$f" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    sleep 0.02; n=$((n+1))
  done
done
for s in $scopes; do rmdir "$s" 2>/dev/null; done
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
        Ok(Watchdog { child, stdin, scopes: Vec::new() })
    }

    fn send(&mut self, line: &str) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = s.write_all(line.as_bytes());
            let _ = s.flush();
        }
    }

    /// Adds a job's process group and the scopes of its cgroups (the
    /// directory above each group, whose `cgroup.procs` files are given).
    pub fn watch(&mut self, pgid: i32, procs: &[PathBuf]) {
        let mut line = String::new();
        for scope in procs.iter().filter_map(|p| p.parent()?.parent()) {
            if !self.scopes.iter().any(|s| s == scope) {
                self.scopes.push(scope.to_path_buf());
                line.push_str(&format!("S {}\n", scope.display()));
            }
        }
        line.push_str(&format!("+ {pgid}\n"));
        self.send(&line);
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

/// The watchdog of this process, started with its first job and left to
/// end with the process (its pipe's end-of-file is the signal).
static GUARD: std::sync::Mutex<Option<Watchdog>> = std::sync::Mutex::new(None);

/// Puts a job's process group (and its cgroups' `cgroup.procs` files) in
/// the care of this process's watchdog, starting it if need be, so that the
/// job dies with cosched however cosched dies. [`crate::launch::spawn`]
/// calls it for every job: one mechanism for every verb.
pub fn watch_group(pgid: i32, procs: &[PathBuf]) -> std::io::Result<()> {
    let mut guard = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(Watchdog::start()?);
    }
    if let Some(w) = guard.as_mut() {
        w.watch(pgid, procs);
    }
    Ok(())
}

/// Takes a finished job's group off the watchdog's list, before its leader
/// is reaped and the group id may be reused.
pub fn forget_group(pgid: i32) {
    if let Some(w) = GUARD.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        w.forget(pgid);
    }
}

use std::os::unix::process::CommandExt;

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

/// Splits the node's CPUs among pools: [`crate::place::NodePools::new`]'s
/// CPUs and shared flags.
pub fn pool_cpus(pools: &[(u32, bool)], node_cpus: &[u32]) -> Result<(Vec<Vec<u32>>, Vec<bool>), String> {
    crate::place::NodePools::new(pools, node_cpus).map(|p| (p.cpus, p.shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_phase_comes_from_the_last_json_line() {
        assert_eq!(kernel_work_s("noise\n{\"wall_s\": 1.25, \"x\": 1}\n"), Some(1.25));
        assert_eq!(kernel_work_s("no report"), None);
    }
}
