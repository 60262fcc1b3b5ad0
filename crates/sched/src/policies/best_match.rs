//! Best match: the waiting job that costs least beside what runs, chosen
//! greedily or by a rollout over a look-ahead window.

use std::collections::HashMap;

use super::{occupants, start, Occupant};
use cosched_engine::policy::{Decision, Policy, QueuedJob, View};
use crate::sim::{simulate, Platform, SimJob};
use crate::tables::SlowdownSource;
use crate::{EventKind, JobId};

/// Largest look-ahead window: each start then costs at most this many
/// rollouts of at most this many waiting jobs plus the running ones.
pub const MAX_WINDOW: usize = 16;

/// Best match: an idle pool starts the waiting job that costs least beside
/// what runs on the node, with an aging bound so that no job waits forever.
///
/// Cost of starting q beside the node's jobs O (from the predicted source):
/// `(slowdown(q | O) - 1) + sum over o in O of (slowdown(o | q) - 1)`, the
/// extra run time as a share of solo time that the start adds, q's own and
/// what it inflicts. An empty node costs nothing, so the queue's order
/// decides there; ties go to the earlier job.
///
/// That rule is myopic: beside a core-bound loop, another loop costs 0 and a
/// memory-bound triad 0.02, so it burns the loops the triads will need and
/// pairs the triads with each other at the end. With a window W > 0 the
/// pick is a rollout instead: for each job among the pool's first W waiting
/// jobs that fits, the near future is simulated in virtual time from the
/// current state (each running job as a job of its remaining work,
/// `(1 - progress) x solo`, started at once; the candidate started now; the
/// rest of the window scheduled by a base rule), and the candidate whose
/// rollout ends the window's jobs soonest wins (ties: the earlier job). A
/// rollout is never worse than its base rule on the model it simulates, here
/// the view's slowdown source.
///
/// Two choices were tuned on `examples/scenarios/` (docs/policies.md has the
/// figures):
/// - the base rule is the greedy cost minus the job's *regret*: the mean
///   pairwise extra slowdown (both ways) of the job beside the other jobs of
///   the window, what it is expected to cost if it waits for a later
///   partner. With the plain greedy rule as base, every rollout burns the
///   loops in its own future, so all candidates tie and the rollout picks
///   what greedy picks (window 8 kept pairing triads in every order); the
///   regret makes a triad, whose later partners are half triads, the urgent
///   start beside a loop, while a loop gains little by going first;
/// - the rollout's objective is the window's makespan, not the sum of
///   completion times: the sum rewards running the cheap pairs first and so
///   co-ran the cache-bound twins of few-bad at the end.
///
/// Aging: each start that passes over older jobs of the same pool counts one
/// bypass for each of them. Once the oldest waiting job of a pool has been
/// passed over `aging` times, it is the pool's next start whatever it costs
/// (and the pool waits for its cores if it does not fit yet). So a job is
/// passed over at most `aging` times once it heads its pool's queue, and
/// `aging = 0` is noplan exactly, whatever the window.
#[derive(Debug, Clone, Default)]
pub struct BestMatch {
    aging: u32,
    window: usize,
    bypassed: HashMap<JobId, u32>,
    /// Inside a rollout only, by job: what the job is expected to cost
    /// beside a later partner (see `rollout`); empty for the plain rule.
    later: Vec<f64>,
}

impl BestMatch {
    /// The greedy rule (window 0).
    pub fn new(aging: u32) -> BestMatch {
        BestMatch { aging, window: 0, bypassed: HashMap::new(), later: Vec::new() }
    }

    /// Picks by rollouts over the pool's first `window` waiting jobs; 0 is
    /// the greedy rule. At most [`MAX_WINDOW`].
    pub fn with_window(mut self, window: usize) -> Result<BestMatch, String> {
        if window > MAX_WINDOW {
            return Err(format!("window {window} is above {MAX_WINDOW}"));
        }
        self.window = window;
        Ok(self)
    }

    /// Predicted extra run time of starting `q` beside `on` (ids `ids`), as a
    /// share of solo time: q's own and what it inflicts.
    pub(super) fn cost(view: &View, q: &QueuedJob, on: &[Occupant], ids: &[JobId]) -> f64 {
        let own = view.slowdown.slowdown(q.id, ids) - 1.0;
        let inflicted: f64 = on.iter().map(|o| view.slowdown.slowdown(o.id, &[q.id]) - 1.0).sum();
        own + inflicted
    }

    fn greedy<'q, 'a>(&self, view: &View<'a>, on: &[Occupant<'a>], candidates: &[(usize, &'q QueuedJob<'a>)]) -> Option<(usize, &'q QueuedJob<'a>)> {
        let ids: Vec<JobId> = on.iter().map(|o| o.id).collect();
        let later = |q: &QueuedJob| self.later.get(q.id).copied().unwrap_or(0.0);
        candidates
            .iter()
            .map(|&(k, q)| (k, q, Self::cost(view, q, on, &ids) - later(q)))
            // min_by keeps the first of equals: the earlier job.
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(k, q, _)| (k, q))
    }

    /// The candidate whose rollout ends the window's jobs soonest;
    /// `None` when a rollout cannot be simulated (a source giving a slowdown
    /// that is not positive and finite), so the greedy pick stands.
    fn rollout<'q, 'a>(
        &self,
        view: &View<'a>,
        platform: &Platform,
        on: &[Occupant<'a>],
        window: &[&QueuedJob<'a>],
        candidates: &[(usize, &'q QueuedJob<'a>)],
    ) -> Option<(usize, &'q QueuedJob<'a>)> {
        let as_job = SimJob::trial;
        // A job at the very end of its work still holds its cores until its
        // end event; the simulator needs positive work to model that.
        let running: Vec<SimJob> = on.iter().map(|o| as_job(o.pool, o.cores, o.left.max(o.solo * 1e-9), o.program)).collect();
        // Pairwise extra slowdown of two window jobs, both ways.
        let pair = |a: JobId, b: JobId| (view.slowdown.slowdown(a, &[b]) - 1.0) + (view.slowdown.slowdown(b, &[a]) - 1.0);
        let later_of: HashMap<JobId, f64> = window
            .iter()
            .map(|q| {
                let others = window.iter().filter(|r| r.id != q.id);
                let n = others.clone().count();
                let mean = if n == 0 { 0.0 } else { others.map(|r| pair(q.id, r.id)).sum::<f64>() / n as f64 };
                (q.id, mean)
            })
            .collect();
        let mut best: Option<(f64, usize, &QueuedJob)> = None;
        for &(k, c) in candidates {
            let mut jobs = running.clone();
            let mut ids: Vec<JobId> = on.iter().map(|o| o.id).collect();
            jobs.push(as_job(c.pool, c.cores, c.solo, c.program));
            ids.push(c.id);
            let pinned = jobs.len();
            for q in window.iter().filter(|q| q.id != c.id) {
                jobs.push(as_job(q.pool, q.cores, q.solo, q.program));
                ids.push(q.id);
            }
            let bypassed: HashMap<JobId, u32> = ids
                .iter()
                .enumerate()
                .filter_map(|(i, id)| self.bypassed.get(id).map(|&n| (i, n)))
                .collect();
            let later = ids.iter().map(|id| later_of.get(id).copied().unwrap_or(0.0)).collect();
            let mut policy = Pinned { pinned, started: false, base: BestMatch { aging: self.aging, window: 0, bypassed, later } };
            let source = Remap { inner: view.slowdown, ids: &ids };
            let events = simulate(platform, &jobs, &source, &mut policy).ok()?;
            let total = events.iter().filter(|e| e.kind == EventKind::Finish).map(|e| e.time).fold(0.0, f64::max);
            // Only a real gain passes over an earlier candidate, not float noise.
            if best.is_none_or(|(b, _, _)| total < b * (1.0 - 1e-12)) {
                best = Some((total, k, c));
            }
        }
        best.map(|(_, k, c)| (k, c))
    }
}

impl Policy for BestMatch {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut on, mut out) = (occupants(view), Vec::new());
        let platform = (self.window > 0).then(|| Platform { pools: view.pools.to_vec() });
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
                } else if let Some(platform) = &platform {
                    let window: Vec<&QueuedJob> = waiting.iter().take(self.window).map(|&(_, q)| q).collect();
                    let candidates: Vec<(usize, &QueuedJob)> =
                        waiting.iter().take(self.window).filter(|(_, q)| q.cores <= free).copied().collect();
                    match candidates.len() {
                        0 | 1 => candidates.first().copied(),
                        _ => self.rollout(view, platform, &on, &window, &candidates).or_else(|| self.greedy(view, &on, &candidates)),
                    }
                } else {
                    let candidates: Vec<(usize, &QueuedJob)> = waiting.iter().filter(|(_, q)| q.cores <= free).copied().collect();
                    self.greedy(view, &on, &candidates)
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

/// A rollout's policy: the node's running jobs and the candidate start at
/// once, then the greedy rule decides.
struct Pinned {
    /// Jobs 0..pinned start at the first decision.
    pinned: usize,
    started: bool,
    base: BestMatch,
}

impl Policy for Pinned {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        if !self.started {
            self.started = true;
            return view.queue.iter().filter(|q| q.id < self.pinned).map(|q| Decision::Start { job: q.id, pool: q.pool }).collect();
        }
        self.base.decide(view)
    }
}

/// The view's slowdown source over a rollout's jobs, whose indices differ
/// from the real jobs' ids.
struct Remap<'s> {
    inner: &'s dyn SlowdownSource,
    /// `ids[i]`: the real id of rollout job i.
    ids: &'s [JobId],
}

impl SlowdownSource for Remap<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        // The simulator asks this for every rate change of a rollout; a
        // node's co-runners fit on the stack.
        let mut buf = [0; 32];
        if beside.len() <= buf.len() {
            for (slot, &b) in buf.iter_mut().zip(beside) {
                *slot = self.ids[b];
            }
            self.inner.slowdown(self.ids[job], &buf[..beside.len()])
        } else {
            let real: Vec<JobId> = beside.iter().map(|&b| self.ids[b]).collect();
            self.inner.slowdown(self.ids[job], &real)
        }
    }

    fn score(&self, a: JobId, b: JobId) -> f64 {
        self.inner.score(self.ids[a], self.ids[b])
    }
}

use crate::registry::PolicyEntry;
use cosched_model::params::{Kind, Param};

pub(crate) const BEST_MATCH: PolicyEntry = PolicyEntry {
    name: "best-match",
    summary: "an idle pool starts the waiting job with the least predicted extra slowdown (its own and its co-runners')",
    params: &[
        Param::new(
            "aging",
            Kind::Uint { max: u32::MAX as u64 },
            "4",
            "times the oldest waiting job may be passed over before it is forced; 0 = noplan",
        ),
        Param::new(
            "window",
            Kind::Uint { max: MAX_WINDOW as u64 },
            // The smallest window that paired every triad with a loop in
            // all 1000 orders of examples/scenarios/memory-half.toml and
            // kept few-bad's bad pairs apart (docs/policies.md).
            "8",
            "waiting jobs a start looks ahead over: each candidate among them is rolled out in virtual time and the shortest rollout wins; 0 = the greedy rule",
        ),
    ],
    make: |p| Ok(Box::new(BestMatch::new(p.uint("aging") as u32).with_window(p.uint("window") as usize)?)),
};
