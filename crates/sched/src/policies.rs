//! The registered policies.
//!
//! All but `exclusive` share one rule for an idle pool: take the first job of
//! the pool's queue that the policy accepts beside what runs; if that job does
//! not fit in the free cores, the pool waits. Only conflicts reorder the
//! queue, never core counts, so conflict-aware at T = inf is noplan exactly.

use std::collections::HashMap;

use cosched_engine::policy::{Decision, JobOutcome, Policy, QueuedJob, View};
use cosched_model::params::{Kind, Param, Range};
use crate::registry::PolicyEntry;
use crate::JobId;

pub(crate) mod best_match;
pub(crate) mod colocate;
mod plan;
pub(crate) mod react;
pub(crate) mod sessions;
pub(crate) mod timeshare;

pub use best_match::{BestMatch, MAX_WINDOW};
pub use colocate::Rebalancing;
pub use plan::{Plan, Priors, PLAN_SCHEDULES, PLAN_WINDOW};
pub use react::{Action, Planning, React, ResumeWhen, Rules, Victim};
pub use sessions::{Overbook, Sidestep, Surpass, Wait};
pub use timeshare::{Colocate, Timeshare};

/// A job on the node during one decision: running already or started by it.
#[derive(Debug, Clone, Copy)]
struct Occupant<'a> {
    id: JobId,
    pool: usize,
    cores: u32,
    program: &'a str,
    /// Solo time estimate, seconds.
    solo: f64,
    /// Solo-seconds of work left.
    left: f64,
}

fn occupants<'a>(view: &View<'a>) -> Vec<Occupant<'a>> {
    // Room for the starts of this decision, so pushing them does not reallocate.
    let mut v = Vec::with_capacity(view.running.len() + view.pools.len() + 2);
    v.extend(view.running.iter().map(|r| Occupant {
        id: r.id,
        pool: r.pool,
        cores: r.cores,
        program: r.program,
        solo: r.solo,
        left: (1.0 - r.progress) * r.solo,
    }));
    v
}

fn start<'a>(job: &QueuedJob<'a>, on: &mut Vec<Occupant<'a>>, out: &mut Vec<Decision>) {
    on.push(Occupant {
        id: job.id,
        pool: job.pool,
        cores: job.cores,
        program: job.program,
        solo: job.solo,
        left: job.solo,
    });
    out.push(Decision::Start {
        job: job.id,
        pool: job.pool,
    });
}

/// Pools in order; each takes accepted jobs from its queue while they fit.
fn fill<'a>(
    view: &View<'a>,
    on: &mut Vec<Occupant<'a>>,
    out: &mut Vec<Decision>,
    accept: impl Fn(&QueuedJob<'a>, &[Occupant<'a>]) -> bool,
) {
    for pool in 0..view.pools.len() {
        loop {
            let used: u32 = on.iter().filter(|o| o.pool == pool).map(|o| o.cores).sum();
            let free = view.pools[pool].cores.saturating_sub(used);
            if free == 0 {
                break;
            }
            let pick = view
                .queue
                .iter()
                .filter(|q| q.pool == pool && !on.iter().any(|o| o.id == q.id))
                .find(|q| accept(q, on));
            match pick {
                Some(q) if q.cores <= free => start(q, on, out),
                _ => break,
            }
        }
    }
}

pub(crate) const EXCLUSIVE: PolicyEntry = PolicyEntry {
    name: "exclusive",
    summary: "one job at a time on the node: the sequential baseline",
    params: &[],
    make: |_| Ok(Box::new(Exclusive)),
};

/// One job at a time on the whole node, in queue order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exclusive;

impl Policy for Exclusive {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        match view.queue.first() {
            Some(q) if view.running.is_empty() => vec![Decision::Start {
                job: q.id,
                pool: q.pool,
            }],
            _ => Vec::new(),
        }
    }

    fn shares_nodes(&self) -> bool {
        false
    }
}

pub(crate) const NOPLAN: PolicyEntry = PolicyEntry {
    name: "noplan",
    summary: "an idle pool starts the next job of its queue at once (unconditional co-execution)",
    params: &[],
    make: |_| Ok(Box::new(NoPlan)),
};

/// Unconditional co-execution.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPlan;

impl Policy for NoPlan {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut on, mut out) = (occupants(view), Vec::new());
        fill(view, &mut on, &mut out, |_, _| true);
        out
    }
}

/// What conflict-aware does with a free core when no waiting job is within
/// the threshold of what runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Leave it idle until something within the threshold can start: the
    /// SX-Aurora paper's rule.
    Always,
    /// Start the waiting job of least predicted extra slowdown (best-match's
    /// cost) if that raises the node's predicted progress rate, the sum over
    /// its jobs of 1 / slowdown, over what it is without the job; else idle.
    /// On two cores a pair is started when 1/s_a + 1/s_b > 1, so only pairs
    /// worse than running their jobs one after the other are refused.
    Gain,
}

impl Idle {
    pub fn parse(word: &str) -> Result<Idle, String> {
        match word {
            "always" => Ok(Idle::Always),
            "gain" => Ok(Idle::Gain),
            other => Err(format!("idle `{other}`: expected always or gain")),
        }
    }
}

pub(crate) const CONFLICT_AWARE: PolicyEntry = PolicyEntry {
    name: "conflict-aware",
    summary: "SX-Aurora co-execution paper: an idle pool starts the first queued job whose score with every running job is within the threshold",
    params: &[
        Param::new(
            "threshold",
            Kind::FloatOrInf(Range::NON_NEGATIVE),
            // The SX-Aurora paper's sweep is 50/100/150/inf; its middle value is the one
            // a run without a threshold gets.
            "100",
            "largest conflict score of a pair that may co-run (C_all in percent, else the worse predicted slowdown's increase in percent); inf = noplan",
        ),
        Param::new(
            "idle",
            Kind::Word(&["always", "gain"]),
            // The SX-Aurora paper's rule, so that a spec without it runs what the seed ran.
            "always",
            "when no waiting job is within the threshold: always = leave the core idle; gain = start the cheapest one if it raises the node's predicted progress rate",
        ),
    ],
    make: |p| Ok(Box::new(ConflictAware::new(p.float("threshold"))?.idling(Idle::parse(p.word("idle"))?))),
};

/// The SX-Aurora paper's conflict-aware co-execution with threshold T on the source's score.
#[derive(Debug, Clone, Copy)]
pub struct ConflictAware {
    threshold: f64,
    idle: Idle,
}

impl ConflictAware {
    /// `threshold` may be `f64::INFINITY`; NaN and negative values are refused.
    pub fn new(threshold: f64) -> Result<ConflictAware, String> {
        if threshold.is_nan() || threshold < 0.0 {
            return Err(format!(
                "threshold {threshold} must be a non-negative number or inf"
            ));
        }
        Ok(ConflictAware { threshold, idle: Idle::Always })
    }

    /// The rule for a core no job within the threshold can take (see [`Idle`]).
    pub fn idling(mut self, idle: Idle) -> ConflictAware {
        self.idle = idle;
        self
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }
}

impl Policy for ConflictAware {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let mut out = conflict_aware(view, self.threshold);
        if self.idle == Idle::Gain {
            gain_starts(view, self.threshold, &mut out);
        }
        out
    }
}

/// Predicted progress rate of `on`: each job advances at 1 / its slowdown
/// beside the others. Summed over the node, not the pool, since a start
/// slows the jobs of every pool that it shares the node with.
fn progress_rate(view: &View, on: &[JobId]) -> f64 {
    let mut beside = Vec::with_capacity(on.len());
    on.iter()
        .map(|&j| {
            beside.clear();
            beside.extend(on.iter().copied().filter(|&b| b != j));
            1.0 / view.slowdown.slowdown(j, &beside)
        })
        .sum()
}

/// [`Idle::Gain`]'s starts after the threshold rule's `out`: for each pool
/// that still has free cores beside running jobs and no waiting job within
/// the threshold (one that is waits for its cores, as the SX-Aurora paper's does), the
/// cheapest waiting job that fits, while it raises the progress rate.
fn gain_starts(view: &View, threshold: f64, out: &mut Vec<Decision>) {
    let mut on = occupants(view);
    for d in out.iter() {
        let job = d.job();
        let q = view.queue.iter().find(|q| q.id == job).expect("decided jobs are queued");
        on.push(Occupant { id: q.id, pool: q.pool, cores: q.cores, program: q.program, solo: q.solo, left: q.solo });
    }
    for pool in 0..view.pools.len() {
        loop {
            if on.is_empty() {
                break;
            }
            let used: u32 = on.iter().filter(|o| o.pool == pool).map(|o| o.cores).sum();
            let free = view.pools[pool].cores.saturating_sub(used);
            if free == 0 {
                break;
            }
            let waiting = || view.queue.iter().filter(|q| q.pool == pool && !on.iter().any(|o| o.id == q.id));
            if waiting().any(|q| on.iter().all(|o| within(view, threshold, q.id, o.id))) {
                break;
            }
            let ids: Vec<JobId> = on.iter().map(|o| o.id).collect();
            let Some(q) = waiting()
                .filter(|q| q.cores <= free)
                .map(|q| (q, BestMatch::cost(view, q, &on, &ids)))
                // min_by keeps the first of equals: the earlier job.
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(q, _)| q)
            else {
                break;
            };
            let mut with = ids.clone();
            with.push(q.id);
            if progress_rate(view, &with) <= progress_rate(view, &ids) {
                break;
            }
            start(q, &mut on, out);
        }
    }
}

/// Whether the SX-Aurora paper's rule lets a and b co-run at threshold `t`. At T = inf
/// even a NaN score from a broken source is accepted, so that inf keeps its
/// meaning of "noplan" whatever the source says.
fn within(view: &View, t: f64, a: JobId, b: JobId) -> bool {
    t == f64::INFINITY || view.slowdown.score(a, b) <= t
}

fn conflict_aware(view: &View, threshold: f64) -> Vec<Decision> {
    let (mut on, mut out) = (occupants(view), Vec::new());
    if on.is_empty() {
        // All pools idle: if the heads of the pool queues conflict, starting
        // them all would co-run a conflicting pair, and waiting for nothing
        // would stall; the SX-Aurora paper starts the head of the longer queue alone.
        let heads: Vec<&QueuedJob> = (0..view.pools.len())
            .filter_map(|p| view.queue.iter().find(|q| q.pool == p))
            .collect();
        let conflict = heads.iter().enumerate().any(|(i, a)| {
            heads[i + 1..]
                .iter()
                .any(|b| !within(view, threshold, a.id, b.id))
        });
        if conflict {
            let remaining = |p: usize| view.queue.iter().filter(|q| q.pool == p).count();
            // max_by_key keeps the last of equals; reversing keeps the first pool on ties.
            let head = heads
                .iter()
                .rev()
                .max_by_key(|h| remaining(h.pool))
                .expect("two heads conflict");
            start(head, &mut on, &mut out);
        }
    }
    fill(view, &mut on, &mut out, |q, on| {
        on.iter().all(|o| within(view, threshold, q.id, o.id))
    });
    out
}

pub(crate) const NO_TWINS: PolicyEntry = PolicyEntry {
    name: "no-twins",
    summary: "Terrible Twins: never co-run two instances of one program",
    params: &[],
    make: |_| Ok(Box::new(NoTwins)),
};

/// The Terrible Twins paper's rule: two instances of one program never share the node.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTwins;

impl Policy for NoTwins {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut on, mut out) = (occupants(view), Vec::new());
        fill(view, &mut on, &mut out, |q, on| {
            on.iter().all(|o| o.program != q.program)
        });
        out
    }
}

pub(crate) const AUTO_THRESHOLD: PolicyEntry = PolicyEntry {
    name: "auto-threshold",
    summary: "conflict-aware whose threshold tunes itself from finished jobs under a worst-slowdown bound",
    params: &[
        Param::new("bound", Kind::Float(Range::at_least(1.0)), "1.5", "worst slowdown a co-run job may have"),
        Param::new("start", Kind::Float(Range::NON_NEGATIVE), "100", "threshold before any job has finished"),
        Param::new("step", Kind::Float(Range::POSITIVE), "10", "how far the threshold moves past a score that worked or broke"),
        Param::new("explore", Kind::Flag, "on", "when a pool would idle, try the waiting job of least unknown score"),
    ],
    make: |p| {
        let policy = AutoThreshold::new(p.float("bound"), p.float("start"), p.float("step"))?;
        Ok(Box::new(policy.exploring(p.flag("explore"))))
    },
};

/// Conflict-aware co-execution whose threshold tunes itself online.
///
/// Objective: the shortest makespan such that no job runs more than `bound`
/// times its solo time (the SX-Aurora paper's worst turnaround, the job's own run time).
/// A higher threshold co-runs more pairs and so shortens the makespan, until
/// pairs that break the bound get in; the rule looks for the highest
/// threshold that keeps the bound, from evidence:
///
/// - it decides as `conflict-aware` at its current threshold T (starting at
///   `start`), and remembers for each job the highest score of a pair it was
///   co-run in;
/// - `bad` is the lowest score whose pair has broken the bound so far (inf
///   at first); T always stays at least `step` below it;
/// - when a job that was co-run at score s finishes within the bound, scores
///   up to s are known to work: T becomes max(T, s + `step`), capped as above;
/// - when a job that was co-run at score s finishes over the bound, `bad`
///   becomes min(bad, s) and T falls to at most `bad - step` (not below 0);
/// - a job that ran alone says nothing and changes nothing;
/// - exploration (`explore`, on by default): when a node would otherwise
///   leave a pool idle beside running jobs, and no explored job is still
///   running, it starts the waiting job of least score above T if that score
///   is below `bad`, to learn whether it works. Without it, T moves only
///   from pairs it admitted anyway, and a gap in the scores above T stops it.
///
/// Each exploration risks one pair over the bound, and a score that broke
/// the bound is never admitted or explored again, so the threshold settles
/// below the lowest harmful score it met and above every harmless one below it.
#[derive(Debug, Clone)]
pub struct AutoThreshold {
    threshold: f64,
    bound: f64,
    step: f64,
    bad: f64,
    explore: bool,
    /// The explored job while it runs.
    explorer: Option<JobId>,
    /// Highest score each running job has been co-run at.
    co_run_at: HashMap<JobId, f64>,
}

impl AutoThreshold {
    /// `bound` >= 1 (a slowdown), `start` >= 0 and `step` > 0, all finite.
    pub fn new(bound: f64, start: f64, step: f64) -> Result<AutoThreshold, String> {
        if !(bound.is_finite() && bound >= 1.0) {
            return Err(format!("bound {bound} must be a slowdown of at least 1 (e.g. 1.5)"));
        }
        if !(start.is_finite() && start >= 0.0) {
            return Err(format!("start {start} must be a non-negative finite threshold"));
        }
        if !(step.is_finite() && step > 0.0) {
            return Err(format!("step {step} must be a positive number"));
        }
        Ok(AutoThreshold {
            threshold: start,
            bound,
            step,
            bad: f64::INFINITY,
            explore: true,
            explorer: None,
            co_run_at: HashMap::new(),
        })
    }

    /// Turns exploration on or off (see the type's doc).
    pub fn exploring(mut self, on: bool) -> AutoThreshold {
        self.explore = on;
        self
    }

    /// The threshold the next decision uses.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    fn note(&mut self, job: JobId, score: f64) {
        let e = self.co_run_at.entry(job).or_insert(f64::NEG_INFINITY);
        *e = e.max(score);
    }

    /// The waiting job of least score above T and below `bad` for a pool
    /// with free cores beside the running jobs, if any.
    fn probe<'a>(&self, view: &View<'a>) -> Option<QueuedJob<'a>> {
        if view.running.is_empty() {
            return None;
        }
        let mut best: Option<(f64, &QueuedJob)> = None;
        for q in view.queue {
            if q.cores > view.free_cores(q.pool) {
                continue;
            }
            let s = view.running.iter().map(|r| view.slowdown.score(q.id, r.id)).fold(f64::NEG_INFINITY, f64::max);
            if s > self.threshold && s < self.bad && best.is_none_or(|(b, _)| s < b) {
                best = Some((s, q));
            }
        }
        best.map(|(_, q)| *q)
    }
}

impl Policy for AutoThreshold {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let mut out = conflict_aware(view, self.threshold);
        if out.is_empty() && self.explore && self.explorer.is_none() {
            if let Some(q) = self.probe(view) {
                self.explorer = Some(q.id);
                out.push(Decision::Start { job: q.id, pool: q.pool });
            }
        }
        let mut on: Vec<JobId> = view.running.iter().map(|r| r.id).collect();
        for d in &out {
            let job = d.job();
            for &o in &on {
                let s = view.slowdown.score(job, o);
                self.note(job, s);
                self.note(o, s);
            }
            on.push(job);
        }
        out
    }

    fn observe(&mut self, outcome: &JobOutcome) {
        if self.explorer == Some(outcome.job) {
            self.explorer = None;
        }
        let Some(s) = self.co_run_at.remove(&outcome.job) else { return };
        if outcome.slowdown > self.bound {
            self.bad = self.bad.min(s);
            self.threshold = self.threshold.min(self.bad - self.step).max(0.0);
        } else {
            self.threshold = self.threshold.max(s + self.step).min(self.bad - self.step).max(0.0);
        }
    }
}
