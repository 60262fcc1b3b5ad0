//! The registered policies.
//!
//! All but `exclusive` share one rule for an idle pool: take the first job of
//! the pool's queue that the policy accepts beside what runs; if that job does
//! not fit in the free cores, the pool waits. Only conflicts reorder the
//! queue, never core counts, so conflict-aware at T = inf is noplan exactly.

use crate::policy::{Decision, Policy, QueuedJob, View};
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
    view.running
        .iter()
        .map(|r| Occupant {
            id: r.id,
            pool: r.pool,
            cores: r.cores,
            program: r.program,
        })
        .collect()
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

    /// At T = inf even a NaN score from a broken source is accepted, so that
    /// inf keeps its meaning of "noplan" whatever the source says.
    fn compatible(&self, view: &View, a: JobId, b: JobId) -> bool {
        self.threshold == f64::INFINITY || view.slowdown.score(a, b) <= self.threshold
    }
}

impl Policy for ConflictAware {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
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
                    .any(|b| !self.compatible(view, a.id, b.id))
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
            on.iter().all(|o| self.compatible(view, q.id, o.id))
        });
        out
    }
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
