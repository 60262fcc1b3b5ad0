//! The node runner's decision loop: the simulator's protocol with a policy,
//! carried out by an [`Executor`] that owns the clock and the processes.
//!
//! This module reads no clock and starts no process: the executor (real
//! processes in `cosched_measure::node`, virtual time in
//! `cosched_sched::sim::VirtualNode`) says what time it is, starts what the
//! policy decided, and reports how each job ended. The loop is the
//! simulator's: arrivals, then decision rounds until the policy returns
//! none, then wait for the next end or arrival. Its output is the model's
//! [`Trace`], scored by `model::metrics` like a simulated one.

use std::fmt;

use cosched_model::run::JobStatus;
use cosched_model::trace::Trace;

use crate::platform::{Platform, SimJob};
use crate::policy::{Decision, JobOutcome, Policy, QueuedJob, RunningJob, View};
use crate::source::SlowdownSource;
use crate::validate::{check_jobs, check_start};
use crate::{Event, EventKind, JobId};

/// Why an executor stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecError {
    /// SIGINT or SIGTERM: every job was killed.
    Interrupted(i32),
    /// Something the executor could not carry on from (not a job failing:
    /// a failed job is an ended job).
    Fatal(String),
}

/// What a job's start looked like to the policy's slowdown source.
#[derive(Debug, Clone, PartialEq)]
pub struct StartPlan {
    pub job: JobId,
    pub pool: usize,
    /// Jobs running beside it at its start.
    pub beside: Vec<JobId>,
    /// The source's slowdown of the job beside them, before it started.
    pub predicted: f64,
}

/// How a job ended, as the executor observed it. Its wall time is
/// `end - start`.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub job: JobId,
    pub status: JobStatus,
    /// Seconds on the run's clock.
    pub start: f64,
    pub end: f64,
    /// The job's own work-phase time, when it reports one (kernels do).
    pub work_s: Option<f64>,
    /// CPUs it held; empty when the executor does not pin.
    pub cpus: Vec<u32>,
}

/// Carries out decisions on a node.
pub trait Executor {
    /// Seconds on the run's clock.
    fn now(&mut self) -> f64;
    /// Starts a job; returns its start time. A job that cannot be started
    /// (its program is missing) is reported ended by the next `wait`.
    fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError>;
    /// Blocks until at least one running job ends or the clock reaches
    /// `until`; returns how the jobs that ended did.
    fn wait(&mut self, until: Option<f64>) -> Result<Vec<Outcome>, ExecError>;
}

/// A job already ended in an earlier, killed attempt of the same run.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub job: JobId,
    pub start: f64,
    pub finish: f64,
    pub status: JobStatus,
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    Input(String),
    Decision { time: f64, decision: Decision, why: String },
    Stalled { time: f64, waiting: Vec<JobId> },
    Exec(ExecError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Input(m) => write!(f, "invalid run input: {m}"),
            RunError::Decision { time, decision, why } => {
                write!(f, "at t={time:.3}: policy decision {decision:?} refused: {why}")
            }
            RunError::Stalled { time, waiting } => {
                write!(f, "at t={time:.3}: nothing runs or arrives but jobs {waiting:?} wait; the policy stalled")
            }
            RunError::Exec(ExecError::Interrupted(s)) => write!(f, "interrupted by signal {s}"),
            RunError::Exec(ExecError::Fatal(m)) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<ExecError> for RunError {
    fn from(e: ExecError) -> RunError {
        RunError::Exec(e)
    }
}

struct Active {
    id: JobId,
    start: f64,
}

/// Runs `jobs` under `policy` through `exec`. `jobs[i].solo` is the solo
/// time estimate that progress (elapsed / solo, below 1 while running) is
/// reckoned from. Jobs in `done` are not run again; their events open the
/// trace. A job's `Arrive` is at its arrival time even when the loop only
/// notices it later (a resumed run continues the clock of the killed one).
///
/// As in the simulator, the policy [observes](Policy::observe) each job
/// that ended before it is asked again, with the slowdown (end - start) /
/// solo; only jobs that ended `ok`, since the run time of a job that failed,
/// timed out or was killed says nothing about its co-runners.
pub fn run_node(
    platform: &Platform,
    jobs: &[SimJob],
    source: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    exec: &mut dyn Executor,
    done: &[Done],
) -> Result<Trace, RunError> {
    check_jobs(platform, jobs).map_err(RunError::Input)?;
    let mut trace = Trace {
        jobs: platform.trace_jobs(jobs),
        events: Vec::with_capacity(jobs.len() * 3),
    };
    let events = &mut trace.events;
    let is_done = |id: JobId| done.iter().any(|d| d.job == id);
    for d in done {
        if d.job >= jobs.len() {
            return Err(RunError::Input(format!("finished job {} is not in the workload", d.job)));
        }
        events.push(Event { time: jobs[d.job].arrival.min(d.start), job: d.job, kind: EventKind::Arrive });
        events.push(Event { time: d.start, job: d.job, kind: EventKind::Start });
        events.push(Event { time: d.finish, job: d.job, kind: EventKind::Finish });
        trace.jobs[d.job].status = Some(d.status);
        trace.jobs[d.job].cpus = d.cpus.clone();
    }
    let mut arrivals: Vec<JobId> = (0..jobs.len()).filter(|&i| !is_done(i)).collect();
    arrivals.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    let mut next_arrival = 0;
    let mut queue: Vec<JobId> = Vec::new();
    let mut running: Vec<Active> = Vec::new();
    let mut used = vec![0u32; platform.pools.len()];

    loop {
        let now = exec.now();
        while next_arrival < arrivals.len() && jobs[arrivals[next_arrival]].arrival <= now {
            let id = arrivals[next_arrival];
            events.push(Event { time: jobs[id].arrival, job: id, kind: EventKind::Arrive });
            queue.push(id);
            next_arrival += 1;
        }
        loop {
            let now = exec.now();
            let q: Vec<QueuedJob> = queue
                .iter()
                .map(|&id| {
                    let j = &jobs[id];
                    QueuedJob { id, name: &j.name, pool: j.pool, cores: j.cores, solo: j.solo, program: &j.program }
                })
                .collect();
            let r: Vec<RunningJob> = running
                .iter()
                .map(|a| {
                    let j = &jobs[a.id];
                    // A running job is never done in the policy's eyes, even
                    // when it overruns its estimate.
                    let progress = ((now - a.start) / j.solo).clamp(0.0, 0.99);
                    RunningJob { id: a.id, pool: j.pool, cores: j.cores, progress, solo: j.solo, program: &j.program }
                })
                .collect();
            let view = View { time: now, queue: &q, running: &r, pools: &platform.pools, slowdown: source };
            let decisions = policy.decide(&view);
            if decisions.is_empty() {
                break;
            }
            for d in decisions {
                check_start(d, jobs, |j| queue.contains(&j), &used, platform)
                    .map_err(|why| RunError::Decision { time: now, decision: d, why: why.to_string() })?;
                let Decision::Start { job, pool } = d;
                queue.retain(|&q| q != job);
                let beside: Vec<JobId> = running.iter().map(|a| a.id).collect();
                let predicted = source.slowdown(job, &beside);
                let start = exec.start(&StartPlan { job, pool, beside, predicted })?;
                used[pool] += jobs[job].cores;
                running.push(Active { id: job, start });
                events.push(Event { time: start, job, kind: EventKind::Start });
            }
        }

        if running.is_empty() && next_arrival >= arrivals.len() {
            if queue.is_empty() {
                return Ok(trace);
            }
            return Err(RunError::Stalled { time: exec.now(), waiting: queue });
        }
        let until = arrivals.get(next_arrival).map(|&a| jobs[a].arrival);
        for o in exec.wait(until)? {
            let Some(k) = running.iter().position(|a| a.id == o.job) else { continue };
            let a = running.remove(k);
            let j = &jobs[a.id];
            used[j.pool] -= j.cores;
            events.push(Event { time: o.end, job: a.id, kind: EventKind::Finish });
            let tj = &mut trace.jobs[a.id];
            tj.status = Some(o.status);
            tj.cpus = o.cpus;
            if o.status.is_ok() {
                policy.observe(&JobOutcome {
                    job: a.id,
                    program: &j.program,
                    arrival: j.arrival,
                    start: a.start,
                    finish: o.end,
                    solo: j.solo,
                    slowdown: (o.end - a.start) / j.solo,
                });
            }
        }
    }
}
