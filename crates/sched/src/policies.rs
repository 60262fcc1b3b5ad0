//! The registered policies.
//!
//! All but `exclusive` share one rule for an idle pool: take the first job of
//! the pool's queue that the policy accepts beside what runs; if that job does
//! not fit in the free cores, the pool waits. Only conflicts reorder the
//! queue, never core counts, so conflict-aware at T = inf is noplan exactly.

use std::collections::HashMap;

use crate::policy::{Decision, JobOutcome, Policy, QueuedJob, View};
use crate::JobId;

/// A job on the node during one decision: running already or started by it.
#[derive(Debug, Clone, Copy)]
struct Occupant<'a> {
    id: JobId,
    pool: usize,
    cores: u32,
    program: &'a str,
}

fn occupants<'a>(view: &View<'a>) -> Vec<Occupant<'a>> {
    // Room for the starts of this decision, so pushing them does not reallocate.
    let mut v = Vec::with_capacity(view.running.len() + view.pools.len() + 2);
    v.extend(view.running.iter().map(|r| Occupant {
        id: r.id,
        pool: r.pool,
        cores: r.cores,
        program: r.program,
    }));
    v
}

fn start<'a>(job: &QueuedJob<'a>, on: &mut Vec<Occupant<'a>>, out: &mut Vec<Decision>) {
    on.push(Occupant {
        id: job.id,
        pool: job.pool,
        cores: job.cores,
        program: job.program,
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
}

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

/// Seed 000's conflict-aware co-execution with threshold T on the source's score.
#[derive(Debug, Clone, Copy)]
pub struct ConflictAware {
    threshold: f64,
}

impl ConflictAware {
    /// `threshold` may be `f64::INFINITY`; NaN and negative values are refused.
    pub fn new(threshold: f64) -> Result<ConflictAware, String> {
        if threshold.is_nan() || threshold < 0.0 {
            return Err(format!(
                "threshold {threshold} must be a non-negative number or inf"
            ));
        }
        Ok(ConflictAware { threshold })
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }
}

impl Policy for ConflictAware {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        conflict_aware(view, self.threshold)
    }
}

/// Whether seed 000's rule lets a and b co-run at threshold `t`. At T = inf
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
        // would stall; seed 000 starts the head of the longer queue alone.
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

/// Seed 003(d)'s rule: two instances of one program never share the node.
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

/// Best match: an idle pool starts the waiting job that costs least beside
/// what runs on the node, with an aging bound so that no job waits forever.
///
/// Cost of starting q beside the node's jobs O (from the predicted source):
/// `(slowdown(q | O) - 1) + sum over o in O of (slowdown(o | q) - 1)`, the
/// extra run time as a share of solo time that the start adds, q's own and
/// what it inflicts. An empty node costs nothing, so the queue's order
/// decides there; ties go to the earlier job.
///
/// Aging: each start that passes over older jobs of the same pool counts one
/// bypass for each of them. Once the oldest waiting job of a pool has been
/// passed over `aging` times, it is the pool's next start whatever it costs
/// (and the pool waits for its cores if it does not fit yet). So a job is
/// passed over at most `aging` times once it heads its pool's queue, and
/// `aging = 0` is noplan exactly.
#[derive(Debug, Clone, Default)]
pub struct BestMatch {
    aging: u32,
    bypassed: HashMap<JobId, u32>,
}

impl BestMatch {
    pub fn new(aging: u32) -> BestMatch {
        BestMatch { aging, bypassed: HashMap::new() }
    }

    fn cost(view: &View, q: &QueuedJob, on: &[Occupant], ids: &[JobId]) -> f64 {
        let own = view.slowdown.slowdown(q.id, ids) - 1.0;
        let inflicted: f64 = on.iter().map(|o| view.slowdown.slowdown(o.id, &[q.id]) - 1.0).sum();
        own + inflicted
    }
}

impl Policy for BestMatch {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut on, mut out) = (occupants(view), Vec::new());
        for pool in 0..view.pools.len() {
            loop {
                let used: u32 = on.iter().filter(|o| o.pool == pool).map(|o| o.cores).sum();
                let free = view.pools[pool].cores.saturating_sub(used);
                if free == 0 {
                    break;
                }
                let waiting: Vec<(usize, &QueuedJob)> = view
                    .queue
                    .iter()
                    .filter(|q| q.pool == pool && !on.iter().any(|o| o.id == q.id))
                    .enumerate()
                    .collect();
                let Some(&(_, head)) = waiting.first() else { break };
                let pick = if self.bypassed.get(&head.id).copied().unwrap_or(0) >= self.aging {
                    if head.cores > free {
                        break;
                    }
                    Some((0, head))
                } else {
                    let ids: Vec<JobId> = on.iter().map(|o| o.id).collect();
                    waiting
                        .iter()
                        .filter(|(_, q)| q.cores <= free)
                        .map(|&(k, q)| (k, q, Self::cost(view, q, &on, &ids)))
                        // min_by keeps the first of equals: the earlier job.
                        .min_by(|a, b| a.2.total_cmp(&b.2))
                        .map(|(k, q, _)| (k, q))
                };
                let Some((k, q)) = pick else { break };
                for (_, older) in &waiting[..k] {
                    *self.bypassed.entry(older.id).or_insert(0) += 1;
                }
                self.bypassed.remove(&q.id);
                start(q, &mut on, &mut out);
            }
        }
        out
    }
}

/// Conflict-aware co-execution whose threshold tunes itself online.
///
/// Objective: the shortest makespan such that no job runs more than `bound`
/// times its solo time (seed 000's worst turnaround, the job's own run time).
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
            let Decision::Start { job, .. } = *d;
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
