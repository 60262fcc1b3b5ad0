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

use crate::cores::CoreMap;
use crate::platform::{Platform, SimJob};
use crate::policy::{Decision, JobOutcome, Policy, QueuedJob, RunningJob};
use crate::view::{self, Seat, Work};
use crate::online::{Estimate, Informed, OnlineState, Sample, Settled};
use crate::slowdown::SlowdownSource;
use crate::placement::{Neighbour, PlaceCtx, Placement};
use crate::validate::{check_decision_in, check_jobs, Act, JobState};
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
    /// Cores of the pool it starts on (indices `0..pool cores`), as the one
    /// validation chose them; they may be held by other jobs when the
    /// policy overbooks.
    pub cpus: Vec<u32>,
    /// Jobs running (not suspended) beside it at its start.
    pub beside: Vec<JobId>,
    /// The source's slowdown of the job beside them, before it started.
    pub predicted: f64,
    /// Which of the job's variants runs (0 for a job without variants).
    pub variant: usize,
}

/// A job that ended, as the executor observed it: its status, times and
/// CPUs (one per ended job from [`Executor::wait`]; the policy's view of
/// the same end is [`JobOutcome`]). Its wall time is `end - start`.
#[derive(Debug, Clone, PartialEq)]
pub struct EndedJob {
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
    fn wait(&mut self, until: Option<f64>) -> Result<Vec<EndedJob>, ExecError>;
    /// Stops a running job where it is; returns the time. An engine that
    /// cannot keeps the default, and a policy that suspends fails on it
    /// with this error.
    fn suspend(&mut self, job: JobId) -> Result<f64, ExecError> {
        Err(ExecError::Fatal(format!("this engine cannot suspend (job {job})")))
    }
    /// Starts a job that the same round suspends: the policy started it
    /// outside its turn. Returns its start time and the time it is known
    /// stopped. An executor of real processes overrides this to stop the
    /// job before anything else happens (it must not run beside the job
    /// whose turn it is); the default starts, then suspends.
    fn start_suspended(&mut self, plan: &StartPlan) -> Result<(f64, f64), ExecError> {
        let start = self.start(plan)?;
        Ok((start, self.suspend(plan.job)?))
    }
    /// Lets a suspended job go on; returns the time.
    fn resume(&mut self, job: JobId) -> Result<f64, ExecError> {
        Err(ExecError::Fatal(format!("this engine cannot resume (job {job})")))
    }
    /// Re-pins a running or suspended job onto `cpus` (pool core indices);
    /// returns the time.
    fn move_to(&mut self, job: JobId, cpus: &[u32]) -> Result<f64, ExecError> {
        Err(ExecError::Fatal(format!("this engine cannot move job {job} to cores {cpus:?}")))
    }
    /// Seconds between two readings of the running jobs' progress, when
    /// the executor observes progress (`crate::online`); `None`: it does
    /// not, and the loop wakes only on events as before.
    fn sample_every(&self) -> Option<f64> {
        None
    }
    /// Reads every running job's progress now.
    fn sample(&mut self) -> Result<Vec<(JobId, Sample)>, ExecError> {
        Ok(Vec::new())
    }
    /// A running job's fresh estimate, for whoever shows progress.
    fn estimated(&mut self, job: JobId, estimate: &Estimate) -> Result<(), ExecError> {
        let _ = (job, estimate);
        Ok(())
    }
    /// A running pair's estimate settled (the run's source already
    /// learned it): an executor with a store keeps it there at once.
    fn settled(&mut self, settled: &Settled) -> Result<(), ExecError> {
        let _ = settled;
        Ok(())
    }
}

/// A job already ended in an earlier, killed attempt of the same run.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub job: JobId,
    pub start: f64,
    pub finish: f64,
    pub status: JobStatus,
    pub cpus: Vec<u32>,
    /// (from, to) of each time it was suspended, so the trace and its
    /// run time (suspended time excluded) stay true across a resume.
    pub suspensions: Vec<(f64, f64)>,
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
                write!(f, "at t={time:.3}: the policy's decision `{decision}` was refused: {why}")
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
    /// Pool, cores and solo time of the variant it runs as.
    pool: usize,
    cores: u32,
    solo: f64,
    start: f64,
    cpus: Vec<u32>,
    /// When it was suspended, while it is.
    suspended_at: Option<f64>,
    /// When it was stopped, for a job this round started stopped whose
    /// suspension is still to come in the round ([`Carry`]).
    stopped_at: Option<f64>,
    /// Seconds suspended before `suspended_at`.
    suspended_s: f64,
}

impl Active {
    fn suspended_until(&self, t: f64) -> f64 {
        self.suspended_s + self.suspended_at.map_or(0.0, |s| (t - s).max(0.0))
    }
}

/// What a decision changes in the run loop: the queue, the running jobs,
/// the cores they hold and the trace's events.
struct LoopState<'a> {
    queue: &'a mut Vec<JobId>,
    running: &'a mut Vec<Active>,
    map: &'a mut CoreMap,
    events: &'a mut Vec<Event>,
}

/// How one decision of a round is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carry {
    /// As the policy said.
    Do,
    /// A start that the round suspends later: the job begins stopped
    /// ([`Executor::start_suspended`]) but holds its cores, for the
    /// decisions between, until its suspension's turn in the round.
    StartStopped,
    /// The suspension of a job that began stopped: only recorded (its
    /// cores are released here, where the policy put it).
    Stopped,
}

/// The order in which one round's decisions are carried out, each with
/// how.
///
/// Turns must never overlap: a policy that passes the turn may say
/// "resume the incoming job, suspend the outgoing one" (`timeshare` does),
/// and carried out in that order both run between the thaw and the
/// freeze. So a suspension moves ahead of the resumptions of other jobs
/// just before it. Only past resumptions: a resumption chooses no cores,
/// so every start and move sees the cores it saw in the policy's order
/// and places its job where the simulator does. A start that a later
/// suspension of the round stops (a job arriving outside its turn),
/// wherever that suspension is, begins stopped: it never runs beside the
/// turn's job while the decisions between are carried out (issue 42: a
/// job arriving as the turn passed ran beside the outgoing one until the
/// runner had journaled its start). For those decisions it still holds
/// its cores and counts as running, as in the policy's order, so their
/// placements are the simulator's.
fn turn_order(decisions: Vec<Decision>) -> Vec<(Decision, Carry)> {
    let is_start = |d: &Decision| matches!(d, Decision::Start { .. } | Decision::StartOn { .. } | Decision::StartVariant { .. });
    let mut out: Vec<(Decision, Carry)> = Vec::with_capacity(decisions.len());
    for d in decisions {
        let Decision::Suspend { job } = d else {
            out.push((d, Carry::Do));
            continue;
        };
        let mut at = out.len();
        while at > 0 && matches!(out[at - 1], (Decision::Resume { job: other }, _) if other != job) {
            at -= 1;
        }
        // This round's start of the job, when nothing but moves of the
        // job came between (a move of a stopped job only re-pins it).
        let started = out
            .iter()
            .rposition(|(e, _)| e.job() == job && !matches!(e, Decision::Move { .. }))
            .filter(|&k| is_start(&out[k].0) && out[k].1 == Carry::Do);
        let carry = match started {
            Some(k) => {
                out[k].1 = Carry::StartStopped;
                Carry::Stopped
            }
            None => Carry::Do,
        };
        out.insert(at, (d, carry));
    }
    out
}

/// Carries out one checked decision through the executor as `carry`
/// says, and records it.
fn apply(act: Act, carry: Carry, jobs: &[SimJob], source: &dyn SlowdownSource, exec: &mut dyn Executor, state: LoopState) -> Result<(), RunError> {
    let LoopState { queue, running, map, events } = state;
    let find = |running: &mut Vec<Active>, job: JobId| running.iter_mut().position(|a| a.id == job).expect("checked: it runs");
    match act {
        Act::Start { job, pool, cpus, variant } => {
            queue.retain(|&q| q != job);
            let beside: Vec<JobId> = running.iter().filter(|a| a.suspended_at.is_none()).map(|a| a.id).collect();
            let predicted = source.slowdown(job, &beside);
            let plan = StartPlan { job, pool, cpus: cpus.clone(), beside, predicted, variant };
            let (start, stopped) = if carry == Carry::StartStopped {
                let (s, t) = exec.start_suspended(&plan)?;
                (s, Some(t))
            } else {
                (exec.start(&plan)?, None)
            };
            let (_, cores, solo) = jobs[job].variant(variant).expect("checked: the variant exists");
            events.push(Event { time: start, job, kind: EventKind::Start });
            if let Some(t) = stopped {
                // In time order in the trace; its cores stay held until the
                // suspension's place in the round (`Carry::Stopped`).
                events.push(Event { time: t, job, kind: EventKind::Suspend });
            }
            map.hold(pool, &cpus);
            running.push(Active { id: job, pool, cores, solo, start, cpus, suspended_at: None, stopped_at: stopped, suspended_s: 0.0 });
        }
        Act::Suspend { job } => {
            let k = find(running, job);
            let t = match running[k].stopped_at.take() {
                Some(t) if carry == Carry::Stopped => t,
                _ => {
                    let t = exec.suspend(job)?;
                    events.push(Event { time: t, job, kind: EventKind::Suspend });
                    t
                }
            };
            map.release(running[k].pool, &running[k].cpus);
            running[k].suspended_at = Some(t);
        }
        Act::Resume { job } => {
            let t = exec.resume(job)?;
            let k = find(running, job);
            let a = &mut running[k];
            a.suspended_s = a.suspended_until(t);
            a.suspended_at = None;
            map.hold(a.pool, &a.cpus);
            events.push(Event { time: t, job, kind: EventKind::Resume });
        }
        Act::Move { job, pool, cpus } => {
            let t = exec.move_to(job, &cpus)?;
            let k = find(running, job);
            let a = &mut running[k];
            if a.suspended_at.is_none() {
                map.release(pool, &a.cpus);
                map.hold(pool, &cpus);
            }
            a.cpus = cpus;
            events.push(Event { time: t, job, kind: EventKind::Move });
        }
    }
    Ok(())
}

/// Runs `jobs` under `policy` through `exec`. `jobs[i].solo` is the solo
/// time estimate that progress (elapsed / solo, below 1 while running) is
/// reckoned from. Jobs in `done` are not run again; their events open the
/// trace. A job's `Arrive` is at its arrival time even when the loop only
/// notices it later (a resumed run continues the clock of the killed one).
///
/// Decisions are checked by `validate::check_decision` and carried out in
/// order, except that a suspension goes ahead of the resumptions just
/// before it and a start the round suspends begins suspended
/// ([`turn_order`]: turns never overlap);
/// suspensions, resumptions and moves go into the trace as events.
/// Progress and the observed slowdown leave out the time a job spent
/// suspended. Jobs left suspended when nothing else runs or arrives are a
/// stall, not a hang.
///
/// As in the simulator, the policy [observes](Policy::observe) each job
/// that ended before it is asked again, with the slowdown (end - start -
/// suspended) / solo; only jobs that ended `ok`, since the run time of a job that failed,
/// timed out or was killed says nothing about its co-runners.
pub fn run_node(
    platform: &Platform,
    jobs: &[SimJob],
    source: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    exec: &mut dyn Executor,
    done: &[Done],
) -> Result<Trace, RunError> {
    run_node_placed(platform, jobs, source, policy, exec, done, None)
}

/// [`run_node`] on a node with a topology: each start is placed by
/// `placement` (`crate::placement`), interference-aware against `source`,
/// the predictions the policy sees.
pub fn run_node_placed(
    platform: &Platform,
    jobs: &[SimJob],
    source: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    exec: &mut dyn Executor,
    done: &[Done],
    placement: Option<&Placement>,
) -> Result<Trace, RunError> {
    check_jobs(platform, jobs).map_err(RunError::Input)?;
    if let Some(p) = placement {
        p.check(&platform.pools).map_err(RunError::Input)?;
    }
    let mut trace = Trace {
        jobs: platform.trace_jobs(jobs),
        events: Vec::with_capacity(jobs.len() * 3),
        estimates: Vec::new(),
    };
    let events = &mut trace.events;
    let is_done = |id: JobId| done.iter().any(|d| d.job == id);
    for d in done {
        if d.job >= jobs.len() {
            return Err(RunError::Input(format!("finished job {} is not in the workload", d.job)));
        }
        events.push(Event { time: jobs[d.job].arrival.min(d.start), job: d.job, kind: EventKind::Arrive });
        events.push(Event { time: d.start, job: d.job, kind: EventKind::Start });
        for &(from, to) in &d.suspensions {
            events.push(Event { time: from, job: d.job, kind: EventKind::Suspend });
            if to < d.finish {
                events.push(Event { time: to, job: d.job, kind: EventKind::Resume });
            }
        }
        events.push(Event { time: d.finish, job: d.job, kind: EventKind::Finish });
        trace.jobs[d.job].status = Some(d.status);
        trace.jobs[d.job].cpus = d.cpus.clone();
    }
    let mut arrivals: Vec<JobId> = (0..jobs.len()).filter(|&i| !is_done(i)).collect();
    arrivals.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    let mut next_arrival = 0;
    let mut queue: Vec<JobId> = Vec::new();
    let mut running: Vec<Active> = Vec::new();
    let mut map = CoreMap::new(platform.pools.iter().map(|p| p.cores));
    let programs: Vec<&str> = jobs.iter().map(|j| j.program.as_str()).collect();
    let mut online = OnlineState::default();
    let mut estimates_out = Vec::new();
    let every = exec.sample_every();

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
            if every.is_some() {
                // A start or suspension just now makes a new phase: the
                // estimates of the old one must not reach the policy.
                let mut active: Vec<JobId> = running.iter().filter(|a| a.suspended_at.is_none()).map(|a| a.id).collect();
                active.sort_unstable();
                online.phase(&active);
            }
            // What the policy reads: the source, with what this run has
            // learned and sees (the same wrapper in every engine).
            let informed = Informed { inner: source, programs: &programs, learned: &online.learned, estimates: &online.estimates };
            let source: &dyn SlowdownSource = &informed;
            let q: Vec<QueuedJob> = queue.iter().map(|&id| view::waiting(id, &jobs[id])).collect();
            let r: Vec<RunningJob> = running
                .iter()
                .map(|a| {
                    let suspended_s = a.suspended_until(now);
                    let seat = Seat { pool: a.pool, cores: a.cores, cpus: &a.cpus, suspended: a.suspended_at.is_some(), suspended_s };
                    let work = read_work(a, &running, &online, source, now).unwrap_or(Work::Ran(now - a.start - suspended_s));
                    view::running(a.id, a.solo, &jobs[a.id].program, seat, work)
                })
                .collect();
            let view = view::view(now, &q, &r, &platform.pools, source);
            let decisions = policy.decide(&view);
            if decisions.is_empty() {
                break;
            }
            for (d, carry) in turn_order(decisions) {
                let state = |j: JobId| match running.iter().find(|a| a.id == j) {
                    Some(a) if a.suspended_at.is_some() => JobState::Suspended,
                    Some(_) => JobState::Running,
                    None if queue.contains(&j) => JobState::Waiting,
                    None => JobState::Elsewhere,
                };
                let neighbours: Vec<Neighbour> = match placement {
                    Some(_) => running
                        .iter()
                        .filter(|a| a.suspended_at.is_none())
                        .map(|a| Neighbour { job: a.id, pool: jobs[a.id].pool, cpus: &a.cpus })
                        .collect(),
                    None => Vec::new(),
                };
                let ctx = placement.map(|placement| PlaceCtx { placement, running: &neighbours, predicted: source });
                let act = check_decision_in(&d, jobs, state, &map, ctx.as_ref())
                    .map_err(|why| RunError::Decision { time: now, decision: d.clone(), why: why.to_string() })?;
                if let Act::Start { job, pool, variant, .. } = &act {
                    if let Some(name) = jobs[*job].variant_name(*variant) {
                        trace.jobs[*job].pool = platform.pools[*pool].name.clone();
                        trace.jobs[*job].solo = jobs[*job].variant(*variant).map(|v| v.2);
                        trace.jobs[*job].variant = Some(name);
                    }
                }
                drop(neighbours);
                apply(act, carry, jobs, source, exec, LoopState { queue: &mut queue, running: &mut running, map: &mut map, events })?;
            }
            // As in the simulator: a policy that only starts jobs on free
            // cores is not asked again about a full node.
            if !policy.acts_on_running() && map.full() {
                break;
            }
        }

        let wake = policy.wake_at();
        if running.iter().all(|a| a.suspended_at.is_some()) && next_arrival >= arrivals.len() && wake.is_none() {
            if queue.is_empty() && running.is_empty() {
                trace.estimates = estimates_out;
                return Ok(trace);
            }
            // Nothing runs or arrives: suspended jobs would stay frozen.
            let mut waiting = queue;
            waiting.extend(running.iter().map(|a| a.id));
            return Err(RunError::Stalled { time: exec.now(), waiting });
        }
        let until = arrivals.get(next_arrival).map(|&a| jobs[a].arrival);
        let until = match (until, wake) {
            (Some(a), Some(w)) => Some(a.min(w)),
            (a, w) => a.or(w),
        };
        let sampling = every.filter(|_| running.iter().any(|a| a.suspended_at.is_none()));
        let until = match (until, sampling) {
            (u, Some(e)) => {
                let next = exec.now() + e;
                Some(u.map_or(next, |u| u.min(next)))
            }
            (u, None) => u,
        };
        for o in exec.wait(until)? {
            let Some(k) = running.iter().position(|a| a.id == o.job) else { continue };
            let a = running.remove(k);
            let j = &jobs[a.id];
            if a.suspended_at.is_none() {
                map.release(a.pool, &a.cpus);
            }
            let suspended_s = a.suspended_until(o.end);
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
                    solo: a.solo,
                    slowdown: (o.end - a.start - suspended_s) / a.solo,
                    suspended_s,
                });
            }
        }
        if every.is_some() {
            observe(exec, source, &programs, &running, &mut online, &mut estimates_out)?;
        }
    }
}

/// How far a running job is by its own progress readings, where the run
/// reads them with a total: the last reading's share, carried forward to
/// `now` at the rate expected beside the jobs running now (its online
/// estimate, else the prediction). A job known only by its time run reads
/// as if it ran at its solo rate, which a slowed job overtakes: a policy
/// looking past the running jobs' ends (best-match's rollout) would see
/// them end too soon. `None`: no reading to go by.
fn read_work(a: &Active, running: &[Active], online: &OnlineState, source: &dyn SlowdownSource, now: f64) -> Option<Work> {
    if a.suspended_at.is_some() {
        return None;
    }
    let (at, done) = online.trackers.get(&a.id)?.done()?;
    let beside: Vec<JobId> = running.iter().filter(|b| b.id != a.id && b.suspended_at.is_none()).map(|b| b.id).collect();
    let s = online.estimates.get(&a.id).map(|e| e.slowdown).unwrap_or_else(|| source.slowdown(a.id, &beside));
    let s = if s.is_finite() && s > 0.0 { s } else { 1.0 };
    Some(Work::Read(done + (now - at).max(0.0) / (a.solo * s)))
}

/// Reads the running jobs' progress, updates their estimates and learns
/// from a running pair whose estimate settled.
fn observe(
    exec: &mut dyn Executor,
    source: &dyn SlowdownSource,
    programs: &[&str],
    running: &[Active],
    online: &mut OnlineState,
    out: &mut Vec<cosched_model::trace::TraceEstimate>,
) -> Result<(), RunError> {
    let mut active: Vec<JobId> = running.iter().filter(|a| a.suspended_at.is_none()).map(|a| a.id).collect();
    active.sort_unstable();
    online.phase(&active);
    for (job, sample) in exec.sample()? {
        let Some(a) = running.iter().find(|a| a.id == job && a.suspended_at.is_none()) else { continue };
        let Some(e) = online.feed(job, &sample, a.solo) else { continue };
        out.push(cosched_model::trace::TraceEstimate { time: e.time, job, slowdown: e.slowdown, lo: e.lo, hi: e.hi, signal: e.signal.name().to_string() });
        exec.estimated(job, &e)?;
        // Only a pair says whom the slowdown is owed to.
        if let [x, y] = active[..] {
            let beside = if x == job { y } else { x };
            let predicted = source.slowdown(job, &[beside]);
            if let Some(s) = online.settle(job, beside, predicted, programs) {
                exec.settled(&s)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use cosched_model::workload::PoolKind;
    use proptest::prelude::*;

    use super::*;
    use crate::policy::{Cores, PoolInfo, View};

    struct Flat;

    impl SlowdownSource for Flat {
        fn slowdown(&self, _: JobId, _: &[JobId]) -> f64 {
            1.0
        }
        fn score(&self, _: JobId, _: JobId) -> f64 {
            0.0
        }
    }

    /// Virtual time that moves only in `wait`, the calls in the order the
    /// loop made them, and every job ending on the third wait: the
    /// executor's side of the protocol, as the simulator's node keeps it.
    #[derive(Default)]
    struct Calls {
        t: f64,
        waits: usize,
        log: Vec<String>,
        started: Vec<(JobId, f64)>,
    }

    impl Executor for Calls {
        fn now(&mut self) -> f64 {
            self.t
        }
        fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError> {
            self.log.push(format!("start {}", plan.job));
            self.started.push((plan.job, self.t));
            Ok(self.t)
        }
        fn start_suspended(&mut self, plan: &StartPlan) -> Result<(f64, f64), ExecError> {
            self.log.push(format!("start suspended {}", plan.job));
            self.started.push((plan.job, self.t));
            Ok((self.t, self.t))
        }
        fn wait(&mut self, until: Option<f64>) -> Result<Vec<EndedJob>, ExecError> {
            self.waits += 1;
            self.t = until.unwrap_or(self.t + 1.0);
            if self.waits < 3 {
                return Ok(Vec::new());
            }
            let end = self.t;
            Ok(self.started.iter().map(|&(job, start)| EndedJob { job, status: JobStatus::Ok, start, end, work_s: None, cpus: vec![] }).collect())
        }
        fn suspend(&mut self, job: JobId) -> Result<f64, ExecError> {
            self.log.push(format!("suspend {job}"));
            Ok(self.t)
        }
        fn resume(&mut self, job: JobId) -> Result<f64, ExecError> {
            self.log.push(format!("resume {job}"));
            Ok(self.t)
        }
    }

    /// Answers as `timeshare` does on a 1-core pool: both jobs started at
    /// once, the second suspended; at t = 1 the turn passes, resume first.
    struct Turns {
        round: usize,
    }

    impl Policy for Turns {
        fn decide(&mut self, v: &View) -> Vec<Decision> {
            self.round += 1;
            let on = |job| Decision::StartOn { job, pool: 0, cores: Cores::Given(vec![0]), overbook: true };
            match (self.round, v.time) {
                (1, _) => vec![on(0), on(1), Decision::Suspend { job: 1 }],
                (_, t) if t >= 1.0 && v.running.iter().any(|r| r.id == 1 && r.suspended) => {
                    vec![Decision::Resume { job: 1 }, Decision::Suspend { job: 0 }]
                }
                _ => vec![],
            }
        }
        fn acts_on_running(&self) -> bool {
            true
        }
        fn wake_at(&self) -> Option<f64> {
            (self.round < 4).then_some(1.0)
        }
    }

    #[test]
    fn the_outgoing_job_is_suspended_before_the_incoming_one_resumes_and_a_start_outside_its_turn_begins_suspended() {
        let p = Platform { pools: vec![PoolInfo { name: "host".into(), cores: 1, kind: PoolKind::Cpu }] };
        let j = |n: &str| SimJob { name: n.into(), arrival: 0.0, solo: 1.0, pool: 0, cores: 1, program: n.into(), variants: vec![] };
        let mut exec = Calls::default();
        let trace = run_node(&p, &[j("a"), j("b")], &Flat, &mut Turns { round: 0 }, &mut exec, &[]).unwrap();
        assert_eq!(exec.log, ["start 0", "start suspended 1", "suspend 0", "resume 1"]);
        let kinds: Vec<(JobId, EventKind)> = trace.events.iter().filter(|e| e.kind != EventKind::Arrive).map(|e| (e.job, e.kind)).collect();
        assert_eq!(
            &kinds[..5],
            [(0, EventKind::Start), (1, EventKind::Start), (1, EventKind::Suspend), (0, EventKind::Suspend), (1, EventKind::Resume)]
        );
    }

    #[test]
    fn a_suspension_goes_ahead_of_the_resumptions_before_it_and_a_start_it_follows_begins_suspended() {
        use Carry::{Do, StartStopped, Stopped};
        let s = |job| Decision::Suspend { job };
        let r = |job| Decision::Resume { job };
        let m = |job| Decision::Move { job, cores: vec![1] };
        let st = |job| Decision::Start { job, pool: 0 };
        let got = turn_order(vec![r(1), s(0), st(2), s(2), m(3), r(5), s(3), r(4), s(4)]);
        assert_eq!(
            got,
            [(s(0), Do), (r(1), Do), (st(2), StartStopped), (s(2), Stopped), (m(3), Do), (s(3), Do), (r(5), Do), (r(4), Do), (s(4), Do)]
        );
        // A job started with other starts between it and its suspension
        // begins stopped; its suspension keeps its place, so the start
        // between saw its cores held, as in the policy's order.
        let got = turn_order(vec![st(5), st(6), s(5)]);
        assert_eq!(got, [(st(5), StartStopped), (st(6), Do), (s(5), Stopped)]);
        // A move of the job between does not change that; a resumption of
        // it (refused later) does.
        let got = turn_order(vec![st(5), m(5), s(5), st(6), r(6), s(6)]);
        assert_eq!(got, [(st(5), StartStopped), (m(5), Do), (s(5), Stopped), (st(6), Do), (r(6), Do), (s(6), Do)]);
    }

    /// `timeshare`'s round when a job arrives as the turn passes: start
    /// the newcomer, resume the incoming job, suspend the newcomer and the
    /// outgoing one. The newcomer ran beside the outgoing job until the
    /// runner had journaled its start and thawed the incoming one.
    #[test]
    fn a_job_arriving_as_the_turn_passes_begins_stopped_and_the_outgoing_job_stops_before_the_incoming_one_goes_on() {
        use Carry::{Do, StartStopped, Stopped};
        let on = |job| Decision::StartOn { job, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: true };
        let got = turn_order(vec![on(2), Decision::Resume { job: 1 }, Decision::Suspend { job: 2 }, Decision::Suspend { job: 0 }]);
        assert_eq!(
            got,
            [(on(2), StartStopped), (Decision::Suspend { job: 2 }, Stopped), (Decision::Suspend { job: 0 }, Do), (Decision::Resume { job: 1 }, Do)]
        );
    }

    fn decision() -> impl Strategy<Value = Decision> {
        (0usize..4, 0usize..4).prop_map(|(k, job)| match k {
            0 => Decision::Start { job, pool: 0 },
            1 => Decision::Suspend { job },
            2 => Decision::Resume { job },
            _ => Decision::Move { job, cores: vec![0] },
        })
    }

    proptest! {
        /// Reordering keeps each job's own decisions in order, runs every
        /// suspension before the resumptions it was after, keeps starts,
        /// moves and suspensions in the policy's order (the cores they see
        /// are the policy's), and starts stopped exactly the jobs a later
        /// suspension of the round stops.
        #[test]
        fn turn_order_keeps_each_jobs_decisions_and_the_placing_order_and_puts_suspensions_before_resumptions(ds in proptest::collection::vec(decision(), 0..10)) {
            let got = turn_order(ds.clone());
            let flat: Vec<Decision> = got.iter().map(|(d, _)| d.clone()).collect();
            for job in 0..4 {
                let want: Vec<&Decision> = ds.iter().filter(|d| d.job() == job).collect();
                let have: Vec<&Decision> = flat.iter().filter(|d| d.job() == job).collect();
                prop_assert_eq!(want, have);
            }
            for w in got.windows(2) {
                if let ((Decision::Resume { job: x }, _), (Decision::Suspend { job: y }, _)) = (&w[0], &w[1]) {
                    prop_assert_eq!(x, y, "{:?}", got);
                }
            }
            let placing = |v: &[Decision]| -> Vec<Decision> { v.iter().filter(|d| !matches!(d, Decision::Resume { .. })).cloned().collect() };
            prop_assert_eq!(placing(&ds), placing(&flat));
            for (k, (d, carry)) in got.iter().enumerate() {
                let job = d.job();
                // The job's next decision other than a move.
                let next = got[k + 1..].iter().find(|(e, _)| e.job() == job && !matches!(e, Decision::Move { .. }));
                if let Decision::Start { .. } = d {
                    let suspended = matches!(next, Some((Decision::Suspend { .. }, _)));
                    prop_assert_eq!(*carry == Carry::StartStopped, suspended, "{:?}", got);
                    if suspended {
                        prop_assert_eq!(next.map(|n| n.1), Some(Carry::Stopped));
                    }
                }
            }
            prop_assert_eq!(
                got.iter().filter(|g| g.1 == Carry::StartStopped).count(),
                got.iter().filter(|g| g.1 == Carry::Stopped).count()
            );
        }
    }
}
