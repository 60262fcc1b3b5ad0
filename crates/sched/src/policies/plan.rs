//! Planning the rest of the queue over what a run has learned (`react`'s
//! `plan=learned`, issue 38).
//!
//! Told nothing, an inner policy learns one pair at a time and keeps
//! preferring the pairs that still look harmless; on io-half that leaves
//! the two I/O jobs that must share for the end, where the only choice is
//! side by side (slow) or one after the other (makespan). A plan looks at
//! the whole rest instead: the offline oracle's search (a list order of the
//! jobs, carried out with the simulator's progress-rate model,
//! `crate::oracle`) from the node's present state. The running jobs start
//! at once with the work they have left; the jobs `react` holds and the
//! first [`PLAN_WINDOW`] waiting jobs follow in the order tried. Every
//! distinct order is tried when there are at most [`PLAN_SCHEDULES`] of
//! them (twins are one class, as in the oracle), else a seeded local
//! search spends that many. The order with the shortest makespan wins,
//! then the one with the smallest sum of completion times (so mean
//! turnaround is not given away for nothing), then the earliest in queue
//! order.
//!
//! **What a trial believes** ([`Priors`]). A pair the run has learned runs
//! at what was learned, and a pair it has seen run (a settled estimate of
//! one job beside the other, learned or not) at what the source says. A
//! pair it has not seen, of a program the prediction was wrong about (one
//! of a learned pair), runs at the threshold at best: the prediction is not
//! believed for those programs, and the threshold is the most a pair may
//! cost and still run under `react`. Believed as told, the unseen pairs of
//! such programs look the cheapest (a blind prediction calls them 1) and
//! go first: with io beside flops learned and an io job running, the plan
//! started the other io job beside it rather than a loop.
//!
//! **How a trial runs**: a job starts beside the node's running jobs only
//! when the source puts every pair of them below the threshold both ways
//! ([`fits`]), since `react` suspends a pair it knows to be harmful; on an
//! empty node the best-ranked job starts whatever it is. So a trial prices
//! two harmful jobs left for the end as run one after the other, which is
//! what `react` makes of them. The plan starts jobs by the same rule (the
//! best-ranked waiting job that fits and has room, jobs outside the plan
//! last in queue order) with one difference: when no waiting job fits, the
//! best-ranked with room starts rather than a core idling, and the
//! reaction suspends the pair once it is seen. A pair slowed by less than 2
//! gets more done in the seconds before that than an idle core: on
//! memory-half with 5 s jobs, idling took the third quartile of makespan
//! from 23.96 s to 24.61 s, starting leaves it at 23.98 s.

use std::collections::{BTreeSet, HashMap};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use cosched_engine::policy::{Decision, Policy, RunningJob, View};
use crate::oracle::{classes, distinct_orders, next_permutation, order_of};
use crate::sim::{simulate, Platform, SimJob};
use crate::tables::SlowdownSource;
use crate::{EventKind, JobId};

/// Waiting jobs a plan orders, the oldest first; the held jobs come on top
/// and the rest of the queue after them in queue order. Eight waiting jobs
/// of two programs and a held one are at most 9! / (4! 4!) = 630 distinct
/// orders: every one is tried.
pub const PLAN_WINDOW: usize = 8;

/// Most trials one plan simulates. Each is one simulation of at most
/// `PLAN_WINDOW` jobs plus the node's running and held ones (tens of
/// microseconds), and a plan is made only when the run learns a pair or
/// the plan's jobs have all started.
pub const PLAN_SCHEDULES: u64 = 2_000;

/// Whether `job` may run beside each of `beside` by what `source` says:
/// below `threshold` both ways.
pub(crate) fn fits(source: &dyn SlowdownSource, threshold: f64, job: JobId, beside: impl IntoIterator<Item = JobId>) -> bool {
    beside
        .into_iter()
        .filter(|&o| o != job)
        .all(|o| source.slowdown(job, &[o]) < threshold && source.slowdown(o, &[job]) < threshold)
}

/// What a run has seen that its source does not say (module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Priors {
    /// Program pairs (a job of the first beside one of the second) seen
    /// running as the node's only pair with a settled estimate.
    pub seen: BTreeSet<(String, String)>,
    /// Programs of a pair the run learned (a misprediction).
    pub distrusted: BTreeSet<String>,
}

/// The start an order makes now: the best-ranked waiting job (ties: the
/// earlier in the queue) with room in its pool that fits beside every job
/// running on the node (`fit`), or on an empty node the best-ranked with
/// room.
fn pick(view: &View, rank: impl Fn(JobId) -> usize, fit: impl Fn(JobId, JobId) -> bool) -> Option<Decision> {
    let active: Vec<JobId> = view.running.iter().filter(|r| !r.suspended).map(|r| r.id).collect();
    view.queue
        .iter()
        .enumerate()
        .filter(|(_, q)| view.free_cores(q.pool) >= q.cores)
        .filter(|(_, q)| active.iter().all(|&o| fit(q.id, o)))
        .min_by_key(|&(k, q)| (rank(q.id), k))
        .map(|(_, q)| Decision::Start { job: q.id, pool: q.pool })
}

/// Solo-seconds of work a running or held job has left; a job at the very
/// end of its work still holds its cores until its end event, and the
/// simulator needs positive work to model that.
fn left(r: &RunningJob) -> f64 {
    ((1.0 - r.progress).max(0.0) * r.solo).max(r.solo * 1e-9)
}

/// The pairs of a plan's trial jobs, looked up once per plan: `slowdown`
/// drives a trial's progress (what the trial believes), `fit` is the
/// start rule (what `react` knows).
struct TrialTable {
    slowdown: Vec<Vec<f64>>,
    fit: Vec<Vec<bool>>,
}

impl SlowdownSource for TrialTable {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        // The product rule of pairwise slowdowns, as `PairTable`'s.
        beside.iter().filter(|&&b| b != job).map(|&b| self.slowdown[job][b]).product()
    }

    fn score(&self, a: JobId, b: JobId) -> f64 {
        (self.slowdown[a][b].max(self.slowdown[b][a]) - 1.0) * 100.0
    }
}

/// A trial: the running jobs (trial jobs `0..pinned`) start at once, then
/// the order decides one start at a time by [`pick`].
struct Trial<'t> {
    pinned: usize,
    started: bool,
    /// By trial job: its place in the order tried.
    rank: Vec<usize>,
    table: &'t TrialTable,
}

impl Policy for Trial<'_> {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        if !self.started {
            self.started = true;
            let pinned: Vec<Decision> = view.queue.iter().filter(|q| q.id < self.pinned).map(|q| Decision::Start { job: q.id, pool: q.pool }).collect();
            // An empty first answer would read as "wait" on an empty node.
            if !pinned.is_empty() {
                return pinned;
            }
        }
        let rank = |j: JobId| self.rank.get(j).copied().unwrap_or(usize::MAX);
        pick(view, rank, |a, b| self.table.fit[a][b]).into_iter().collect()
    }
}

/// Makespan and sum of completion times of a trial, compared with a
/// tolerance so that float noise never passes over an earlier order.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score {
    makespan: f64,
    completions: f64,
}

impl Score {
    fn better_than(self, other: Score) -> bool {
        const EPS: f64 = 1e-9;
        if (self.makespan - other.makespan).abs() > EPS {
            return self.makespan < other.makespan;
        }
        self.completions < other.completions - EPS
    }
}

/// The jobs of a plan's trials: the running ones (`0..pinned`), then the
/// ones to order; `ids` maps each to its real id.
struct Trials {
    jobs: Vec<SimJob>,
    ids: Vec<JobId>,
    pinned: usize,
    platform: Platform,
    table: TrialTable,
}

impl Trials {
    fn of(view: &View, held: &[RunningJob], threshold: f64, priors: &Priors) -> Trials {
        let as_job = SimJob::trial;
        let mut jobs: Vec<SimJob> = Vec::new();
        let mut ids: Vec<JobId> = Vec::new();
        for r in view.running.iter().filter(|r| !r.suspended) {
            jobs.push(as_job(r.pool, r.cores, left(r), r.program));
            ids.push(r.id);
        }
        let pinned = jobs.len();
        for r in held {
            jobs.push(as_job(r.pool, r.cores, left(r), r.program));
            ids.push(r.id);
        }
        for q in view.queue.iter().take(PLAN_WINDOW) {
            jobs.push(as_job(q.pool, q.cores, q.solo, q.program));
            ids.push(q.id);
        }
        let source = view.slowdown;
        let n = jobs.len();
        // Programs of a pair learned among these jobs, beside the ones
        // the caller saw learned.
        let mut distrusted = priors.distrusted.clone();
        for (&a, ja) in ids.iter().zip(&jobs) {
            for (&b, jb) in ids.iter().zip(&jobs) {
                if a != b && source.learned(a, b).is_some() {
                    distrusted.insert(ja.program.clone());
                    distrusted.insert(jb.program.clone());
                }
            }
        }
        let believed = |i: usize, j: usize| {
            let (a, b) = (ids[i], ids[j]);
            let said = source.slowdown(a, &[b]);
            let (p, q) = (jobs[i].program.as_str(), jobs[j].program.as_str());
            let doubted = distrusted.contains(p) || distrusted.contains(q);
            let seen = source.learned(a, b).is_some() || priors.seen.contains(&(p.to_string(), q.to_string()));
            if doubted && !seen {
                said.max(threshold)
            } else {
                said
            }
        };
        let slowdown: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { believed(i, j) }).collect()).collect();
        let fit: Vec<Vec<bool>> = (0..n).map(|i| (0..n).map(|j| i == j || fits(source, threshold, ids[i], [ids[j]])).collect()).collect();
        Trials { jobs, ids, pinned, platform: Platform { pools: view.pools.to_vec() }, table: TrialTable { slowdown, fit } }
    }

    /// The jobs to order.
    fn free(&self) -> &[SimJob] {
        &self.jobs[self.pinned..]
    }

    /// The trial of `order` (indices into [`Trials::free`], best first);
    /// `None` when it cannot be simulated.
    fn score(&self, order: &[usize]) -> Option<Score> {
        let mut rank = vec![usize::MAX; self.jobs.len()];
        for (pos, &f) in order.iter().enumerate() {
            rank[self.pinned + f] = pos;
        }
        let mut trial = Trial { pinned: self.pinned, started: false, rank, table: &self.table };
        let events = simulate(&self.platform, &self.jobs, &self.table, &mut trial).ok()?;
        let ends = events.iter().filter(|e| e.kind == EventKind::Finish).map(|e| e.time);
        Some(Score { makespan: ends.clone().fold(0.0, f64::max), completions: ends.sum() })
    }
}

/// A planned order of the waiting (and held) jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Real job ids, best first.
    order: Vec<JobId>,
    rank: HashMap<JobId, usize>,
}

impl Plan {
    /// The best order found from the view's present state (module doc);
    /// `None` when there is nothing to order or a trial cannot be
    /// simulated (a source giving a slowdown that is not positive and
    /// finite, running jobs that overbook their pool), so the caller's
    /// policy decides instead. `seed` drives the local search when the
    /// orders are too many to try.
    pub fn search(view: &View, held: &[RunningJob], threshold: f64, priors: &Priors, seed: u64) -> Option<Plan> {
        let trials = Trials::of(view, held, threshold, priors);
        let free = trials.free();
        let n = free.len();
        if n == 0 {
            return None;
        }
        let class = classes(free);
        let walk = distinct_orders(free).is_some_and(|count| count <= PLAN_SCHEDULES);
        let (mut best, mut best_order) = (None::<Score>, Vec::new());
        if walk {
            let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
            for (j, &c) in class.iter().enumerate() {
                members[c].push(j);
            }
            let mut seq: Vec<usize> = class.clone();
            seq.sort_unstable();
            loop {
                let order = order_of(&seq, &members);
                let s = trials.score(&order)?;
                // The walk goes in lexicographic order of classes, each
                // numbered by its first job: among equals the first tried
                // is the nearest to the queue's order.
                if best.is_none_or(|b| s.better_than(b)) {
                    (best, best_order) = (Some(s), order);
                }
                if !next_permutation(&mut seq) {
                    break;
                }
            }
        } else {
            // From the queue's order (held jobs first), swaps of two jobs
            // of different classes, kept when no worse.
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut cur: Vec<usize> = (0..n).collect();
            let mut cur_s = trials.score(&cur)?;
            (best, best_order) = (Some(cur_s), cur.clone());
            for _ in 1..PLAN_SCHEDULES {
                let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
                if class[cur[a]] == class[cur[b]] {
                    continue;
                }
                cur.swap(a, b);
                let s = trials.score(&cur)?;
                if cur_s.better_than(s) {
                    cur.swap(a, b);
                    continue;
                }
                cur_s = s;
                if best.is_none_or(|b| s.better_than(b)) {
                    (best, best_order) = (Some(s), cur.clone());
                }
            }
        }
        let order: Vec<JobId> = best_order.iter().map(|&f| trials.ids[trials.pinned + f]).collect();
        let rank = order.iter().enumerate().map(|(pos, &id)| (id, pos)).collect();
        Some(Plan { order, rank })
    }

    /// The planned order, best first (real job ids).
    pub fn order(&self) -> &[JobId] {
        &self.order
    }

    /// Whether a job of the plan still waits in the view's queue.
    pub fn covers(&self, view: &View) -> bool {
        view.queue.iter().any(|q| self.rank.contains_key(&q.id))
    }

    /// The plan's start now, if any: its trials' rule, by what the view's
    /// source says, except that when no waiting job fits, the best-ranked
    /// with room starts rather than a core idling (module doc).
    pub fn next(&self, view: &View, threshold: f64) -> Option<Decision> {
        let rank = |j: JobId| self.rank.get(&j).copied().unwrap_or(usize::MAX);
        pick(view, rank, |a, b| fits(view.slowdown, threshold, a, [b])).or_else(|| pick(view, rank, |_, _| true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::PairTable;
    use cosched_engine::policy::{PoolInfo, QueuedJob};
    use cosched_model::workload::PoolKind;

    fn pools() -> Vec<PoolInfo> {
        vec![PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }]
    }

    fn queued<'a>(id: JobId, program: &'a str, solo: f64) -> QueuedJob<'a> {
        QueuedJob { id, name: "", pool: 0, cores: 1, solo, program, variants: &[] }
    }

    fn running<'a>(id: JobId, cpus: &'a [u32], program: &'a str, progress: f64, solo: f64) -> RunningJob<'a> {
        RunningJob { id, pool: 0, cores: 1, cpus, suspended: false, suspended_s: 0.0, progress, solo, program }
    }

    fn none() -> Priors {
        Priors::default()
    }

    #[test]
    fn the_plan_runs_the_long_job_second_beside_a_running_one_by_hand() {
        // Job 0 runs with 10 s left on one of two cores; P (4 s), Q (4 s,
        // P's twin) and R (8 s) wait, all harmless. In queue order the
        // second core runs P 0-4, Q 4-8, R 8-16: makespan 16. Any order
        // that starts R by t = 4 ends at 14 (26 core-seconds on 2 cores
        // take 13 at best, and no job splits); of those, P first then R
        // (P 0-4, R 4-12, Q 10-14) sums 10 + 4 + 12 + 14 = 40 against R
        // first (R 0-8, P 8-12, Q 10-14) 44.
        let pools = pools();
        let all = PairTable::new(vec![vec![1.0; 4]; 4]).unwrap();
        let run = [running(0, &[0], "a", 0.0, 10.0)];
        let queue = [queued(1, "p", 4.0), queued(2, "p", 4.0), queued(3, "r", 8.0)];
        let view = View { time: 0.0, queue: &queue, running: &run, pools: &pools, slowdown: &all };
        let plan = Plan::search(&view, &[], 1.3, &none(), 0).unwrap();
        assert_eq!(plan.order(), &[1, 3, 2]);
        assert_eq!(plan.next(&view, 1.3), Some(Decision::Start { job: 1, pool: 0 }));
        // At t = 4 P has ended: R is next, where the queue has Q first.
        let run = [running(0, &[0], "a", 0.4, 10.0)];
        let view = View { time: 4.0, queue: &queue[1..], running: &run, pools: &pools, slowdown: &all };
        assert_eq!(plan.next(&view, 1.3), Some(Decision::Start { job: 3, pool: 0 }));
        assert!(plan.covers(&view));
        assert!(!plan.covers(&View { queue: &[], ..view }));
    }

    #[test]
    fn a_plan_keeps_a_pair_known_to_harm_apart_and_an_empty_node_takes_the_best_ranked() {
        // Job 0 (a) runs; B (b) waits first, C (c) second; a and b slow
        // each other by 2, above the threshold 1.3.
        let pools = pools();
        let mut m = vec![vec![1.0; 3]; 3];
        (m[0][1], m[1][0]) = (2.0, 2.0);
        let source = PairTable::new(m).unwrap();
        let run = [running(0, &[0], "a", 0.5, 10.0)];
        let queue = [queued(1, "b", 4.0), queued(2, "c", 4.0)];
        let view = View { time: 0.0, queue: &queue, running: &run, pools: &pools, slowdown: &source };
        let plan = Plan::search(&view, &[], 1.3, &none(), 0).unwrap();
        assert_eq!(plan.next(&view, 1.3), Some(Decision::Start { job: 2, pool: 0 }));
        // Only B left beside job 0: nothing fits, and B starts rather than
        // the core idling (the reaction suspends the pair once it is seen).
        assert_eq!(plan.next(&View { queue: &queue[..1], ..view }, 1.3), Some(Decision::Start { job: 1, pool: 0 }));
        // In the trials the core idles instead: C beside job 0 (4 s), then
        // B alone from job 0's end (5 s) to 9, in either order.
        let trials = Trials::of(&view, &[], 1.3, &none());
        assert_eq!(trials.score(&[0, 1]).unwrap(), Score { makespan: 9.0, completions: 4.0 + 5.0 + 9.0 });
        // No room, no start.
        let full = [run[0], running(3, &[1], "c", 0.5, 10.0)];
        assert_eq!(plan.next(&View { running: &full, ..view }, 1.3), None);
    }

    /// Blind (every pair 1) but for io beside flops, learned at 1.085.
    struct Learned;

    impl SlowdownSource for Learned {
        fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
            beside.iter().map(|&b| self.learned(job, b).unwrap_or(1.0)).product()
        }
        fn score(&self, _: JobId, _: JobId) -> f64 {
            0.0
        }
        fn learned(&self, job: JobId, beside: JobId) -> Option<f64> {
            // Jobs 0 and 1 are io, job 2 flops.
            (job < 2 && beside == 2).then_some(1.085)
        }
    }

    #[test]
    fn an_unseen_pair_of_a_mispredicted_program_is_believed_at_the_threshold_so_a_seen_pair_goes_first() {
        // io job 0 runs with 5 s left; io job 1 and flops job 2 (5 s each)
        // wait, in that order. The run learned io beside flops (1.085) and
        // saw flops beside io run as told (1).
        let pools = pools();
        let run = [running(0, &[0], "io", 0.0, 5.0)];
        let queue = [queued(1, "io", 5.0), queued(2, "flops", 5.0)];
        let view = View { time: 0.0, queue: &queue, running: &run, pools: &pools, slowdown: &Learned };
        // The same slowdowns from a source that learned nothing are
        // believed as told, and io beside io costs nothing: job 1 first
        // (both io end at 5, the flops job at 10: 20 s summed) beats the
        // flops job first (it ends at 5, job 0 at 5.392 after 0.392 s
        // beside job 1, job 1 at 10: 20.392 s), both at makespan 10.
        let same = PairTable::new(vec![vec![1.0, 1.0, 1.085], vec![1.0, 1.0, 1.085], vec![1.0; 3]]).unwrap();
        let told = Plan::search(&View { slowdown: &same, ..view }, &[], 1.3, &none(), 0).unwrap();
        assert_eq!(told.order(), &[1, 2]);
        // Believed at 1.3 until seen, job 1 first ends both io at 6.5 and
        // the flops job at 11.5; the flops job first ends at 5 and job 0
        // has 5 - 5 / 1.085 = 0.392 s left, run at 1.3 beside job 1:
        // 5.51; job 1 then has 5 - 0.392 left alone: ends at 10.118.
        // The learned pair makes both programs doubted, even before the
        // caller says so.
        let seen = Priors { seen: [("flops", "io")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(), ..none() };
        assert_eq!(Plan::search(&view, &[], 1.3, &seen, 0).unwrap().order(), &[2, 1]);
        let priors = Priors {
            seen: [("io", "flops"), ("flops", "io")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            distrusted: ["io", "flops"].iter().map(|p| p.to_string()).collect(),
        };
        let doubted = Plan::search(&view, &[], 1.3, &priors, 0).unwrap();
        assert_eq!(doubted.order(), &[2, 1]);
        assert_eq!(doubted.next(&view, 1.3), Some(Decision::Start { job: 2, pool: 0 }));
        let trials = Trials::of(&view, &[], 1.3, &priors);
        let s = trials.score(&[1, 0]).unwrap();
        let left = 5.0 - 5.0 / 1.085;
        assert!((s.makespan - (5.0 + left * 1.3 + (5.0 - left))).abs() < 1e-9, "{s:?}");
        assert_eq!(trials.table.slowdown[0][1], 1.3, "io beside io, unseen");
        assert_eq!(trials.table.slowdown[0][2], 1.085, "learned");
        assert_eq!(trials.table.slowdown[2][0], 1.0, "seen as told");
        assert!(trials.table.fit[0][1], "what the run knows lets io beside io start");
    }

    #[test]
    fn too_many_orders_are_searched_locally_from_the_queue_order_and_never_end_worse() {
        // Eight distinct jobs of 1..8 s wait on an empty node, the odd
        // ones slowed by 1.2 beside each other: 8! orders, so the local
        // search answers, within its budget, the same for the same seed.
        let pools = pools();
        let n = PLAN_WINDOW;
        let m = (0..n).map(|i| (0..n).map(|j| if i != j && i % 2 == 1 && j % 2 == 1 { 1.2 } else { 1.0 }).collect()).collect();
        let source = PairTable::new(m).unwrap();
        let programs: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        let queue: Vec<QueuedJob> = (0..n).map(|i| queued(i, &programs[i], 1.0 + i as f64)).collect();
        let view = View { time: 0.0, queue: &queue, running: &[], pools: &pools, slowdown: &source };
        let trials = Trials::of(&view, &[], 1.3, &none());
        assert!(distinct_orders(trials.free()).unwrap() > PLAN_SCHEDULES);
        let plan = Plan::search(&view, &[], 1.3, &none(), 5).unwrap();
        assert_eq!(Plan::search(&view, &[], 1.3, &none(), 5).unwrap(), plan);
        let mut got = plan.order().to_vec();
        got.sort_unstable();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        let positions: Vec<usize> = plan.order().iter().map(|id| trials.ids.iter().position(|i| i == id).unwrap()).collect();
        let planned = trials.score(&positions).unwrap();
        let queue_order = trials.score(&(0..n).collect::<Vec<_>>()).unwrap();
        assert!(!queue_order.better_than(planned), "{planned:?} against the queue order's {queue_order:?}");
        // 36 core-seconds on 2 cores: no schedule ends before 18.
        assert!(planned.makespan >= 18.0 - 1e-9);
    }
}
