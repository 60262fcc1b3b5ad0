//! The cluster simulator: N identical nodes of C cores, jobs arriving over
//! time, FCFS or EASY backfilling deciding the order, and, with a sharing
//! policy, jobs sharing nodes.
//!
//! **Exclusive** (no policy): every job gets `ceil(procs / C)` whole nodes,
//! as HPC centres give them. **Sharing** (a registered policy): a job that
//! fits in one node with cores to spare (`procs < C`) takes only its `procs`
//! cores, and may start on a node where other jobs run if the policy admits
//! it there; jobs wider than a node still get whole nodes (their ranks fill
//! them). The policy is asked node by node through the engine's one
//! [`View`](cosched_engine::View), built by `engine::view` and its answers
//! checked by `engine::validate::check_view`: the node's running jobs, and as the queue the candidate job
//! followed by a few later waiting jobs that could share the node; it
//! admits the candidate by starting it first. The queue order and the
//! backfilling stay the batch scheduler's (FCFS / EASY), as a batch system
//! separates its queue policy from its resource matching.
//!
//! Placement of a sharable job: first the partially used nodes, tightest
//! fit first (fewest free cores that still hold it), at most `probe` of
//! them asked; then idle nodes. Jobs on one node progress at 1 / slowdown
//! beside their current co-runners (the truth source), as in the node
//! simulator of `cosched-sched`.
//!
//! **EASY**: the queue's first job that cannot start gets a reservation: the
//! time `s` by which enough nodes are expected free (running jobs end at
//! `start + walltime`, or now if they overran it) and the set R of nodes it
//! will take, the busiest ones first so that idle nodes outside R stay open
//! to backfilling. A later job (up to `depth` of them) starts now if it fits
//! and either ends by `s` (then it prefers R's idle nodes) or touches no
//! node of R. With identical nodes this is the textbook count of "extra"
//! nodes (a test checks it against a count-based EASY). The reservation is
//! for whole nodes, also when sharing: a shared start never delays it by
//! its estimates, though interference may stretch the jobs it waits for.
//! **FCFS** stops at the first job that cannot start.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::ops::Bound;
use std::fmt;

use cosched_engine::policy::{Decision, JobOutcome, Policy, PoolInfo, RunningJob};
use cosched_engine::validate::check_view;
use cosched_engine::view::{self, Seat, Work};
use cosched_engine::slowdown::SlowdownSource;
use cosched_model::workload::PoolKind;
use serde::Serialize;

use crate::busy::{after_all_at, Busy, Entry, Key, OrdF64, NODE};
use crate::nodeset::NodeSet;
use crate::queue::{Queue, Room, ALWAYS};
pub use crate::nodeset::Nodes;
use crate::workload::ClusterJob;

/// The batch scheduler's queue policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Fcfs,
    Easy,
}

impl Scheduler {
    pub fn parse(word: &str) -> Result<Scheduler, String> {
        match word {
            "fcfs" => Ok(Scheduler::Fcfs),
            "easy" => Ok(Scheduler::Easy),
            other => Err(format!("scheduler `{other}`: expected easy or fcfs")),
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Scheduler::Fcfs => "fcfs",
            Scheduler::Easy => "easy",
        }
    }
}

/// The cluster and how it is run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Config {
    pub nodes: usize,
    pub cores: u32,
    pub scheduler: Scheduler,
    /// Jobs behind the reserved one that EASY tries to backfill per pass
    /// (a batch system's backfill depth).
    pub depth: usize,
    /// Partially used nodes a sharable job is offered to per pass.
    pub probe: usize,
}

impl Config {
    pub fn new(nodes: usize, cores: u32, scheduler: Scheduler) -> Config {
        Config { nodes, cores, scheduler, depth: 100, probe: 16 }
    }

    /// Whole nodes a job of `procs` processors spans.
    pub fn width(&self, procs: u32) -> usize {
        procs.div_ceil(self.cores) as usize
    }
}

/// Where a job ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alloc {
    pub nodes: Nodes,
    /// The cores it held on its node when it shared one; empty: whole nodes.
    pub cores: Vec<u32>,
}

/// What a simulation produced, by job index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub start: Vec<f64>,
    pub finish: Vec<f64>,
    pub alloc: Vec<Alloc>,
    /// Jobs that ever started beside another job on a node.
    pub shared: Vec<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClusterError {
    Input(String),
    Slowdown { job: usize, value: f64 },
    Stalled { time: f64, waiting: usize },
    /// The sharing policy decided what its view refuses.
    Decision { time: f64, decision: String, why: String },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Input(m) => write!(f, "invalid cluster simulation input: {m}"),
            ClusterError::Slowdown { job, value } => write!(f, "slowdown of job {job} is {value}, not a positive finite number"),
            ClusterError::Stalled { time, waiting } => write!(f, "at t={time}: {waiting} jobs wait and nothing runs or arrives"),
            ClusterError::Decision { time, decision, why } => write!(f, "at t={time}: the policy's decision `{decision}` is refused: {why}"),
        }
    }
}

impl std::error::Error for ClusterError {}

struct Run {
    job: usize,
    /// Solo-seconds of work left at the node's `since`.
    left: f64,
    rate: f64,
}

/// A node's own state. A job holding whole nodes touches only its first
/// node's (its progress); its nodes are otherwise its runs in `idle` and
/// `busy`, so its start and end cost per run, not per node.
struct Node {
    /// Cores held by jobs sharing the node (part-node jobs only).
    used: u32,
    /// Every part-node job holding cores here.
    jobs: Vec<usize>,
    /// Jobs whose progress this node tracks (a multi-node job on its first node).
    runs: Vec<Run>,
    since: f64,
    version: u64,
    /// Latest `start + walltime` of its part-node jobs.
    est_free: f64,
    /// Free cores by index (sharing only).
    core_free: Vec<bool>,
    /// Jobs the policy refused here since the node's jobs last changed: it
    /// would see the same node again, so it is not asked again.
    refused: Vec<usize>,
}

/// Later waiting jobs a policy sees beside the candidate it is asked about.
pub const RIVALS: usize = 7;

/// Which nodes the current reservation R holds, for placement beside
/// running jobs (policies that share nodes only), as of when it was made:
/// the k latest-free busy nodes free by the shadow, ties lowest first, then
/// nodes free now (done or overran) lowest first, then idle nodes below
/// `idle_bound`. Kept as bounds rather than a list of R's nodes, which
/// cost a walk and a sort of every run in R at every pass.
struct RSet {
    /// A pass holds one reservation at most; none yet in this pass.
    active: bool,
    now: f64,
    shadow: f64,
    /// When the busy nodes free after now fill R: the free time of the
    /// earliest ones in R, and the node below which those at that time are
    /// in R (ties go lowest first). Then no node free by now is in R.
    boundary: Option<(f64, usize)>,
    /// Otherwise R's nodes free by now are those numbered below this.
    due_cutoff: usize,
    idle_bound: usize,
    /// Nodes that started a job since R was made, and whether they were in R.
    changed: Vec<(usize, bool)>,
}

/// EASY's reservation for the first job that could not start.
struct Reservation {
    shadow: f64,
    /// Idle nodes outside R, still open to jobs that end after `shadow`.
    open_idle: usize,
    /// R's idle nodes are the idle nodes numbered below this: R takes the
    /// lowest-numbered idle ones, and a pass only takes nodes out of `idle`,
    /// so the idle nodes below the bound are R's and those above the rest.
    idle_bound: usize,
}

struct Sim<'a, 'p, 'd> {
    jobs: &'a [ClusterJob],
    cfg: Config,
    names: Vec<String>,
    programs: &'a [String],
    truth: &'a dyn SlowdownSource,
    predicted: &'a dyn SlowdownSource,
    policy: Option<&'p mut (dyn Policy + 'd)>,
    nodes: Vec<Node>,
    idle: NodeSet,
    /// Nodes running something by `(latest start + walltime, first node)`:
    /// a whole-node job's nodes as one entry, or one partly used node. The
    /// reservation counts what it needs from here, never every node.
    busy: Busy,
    /// Partially used nodes by free cores (sharing only).
    by_free: Vec<BTreeSet<usize>>,
    heap: BinaryHeap<Reverse<(OrdF64, usize, u64)>>,
    waiting: BTreeSet<usize>,
    /// The waiting jobs by width and requested time, so a backfill pass
    /// tries only those that might start.
    queue: Queue,
    now: f64,
    /// Which nodes the current reservation holds, kept only when a policy
    /// may share nodes (only placement beside running jobs asks).
    r: RSet,
    out: Schedule,
    pool: [PoolInfo; 1],
    running_count: usize,
}

/// Runs `jobs` (in submit order; a job's index is its id for the slowdown
/// sources) on the cluster. `policy`: `None` runs exclusive nodes; a policy
/// shares them, seeing `predicted` while `truth` drives progress.
/// `programs` names each program index (what policies compare for twins).
/// `progress` is called with the number of finished jobs now and then.
pub fn simulate<'a, 'p, 'd>(
    jobs: &'a [ClusterJob],
    programs: &'a [String],
    cfg: &Config,
    truth: &'a dyn SlowdownSource,
    predicted: &'a dyn SlowdownSource,
    policy: Option<&'p mut (dyn Policy + 'd)>,
    progress: &mut dyn FnMut(usize),
) -> Result<Schedule, ClusterError> {
    if cfg.nodes == 0 || cfg.cores == 0 {
        return Err(ClusterError::Input("a cluster needs at least one node of at least one core".into()));
    }
    if cfg.probe == 0 && policy.is_some() {
        return Err(ClusterError::Input("a sharing policy needs a probe of at least 1 node".into()));
    }
    for (i, j) in jobs.iter().enumerate() {
        if !(j.submit.is_finite() && j.submit >= 0.0 && j.run.is_finite() && j.run > 0.0 && j.walltime.is_finite() && j.walltime > 0.0) {
            return Err(ClusterError::Input(format!("job {i} (line {}): submit, run and walltime must be finite, run and walltime positive", j.record.line)));
        }
        if j.procs == 0 || cfg.width(j.procs) > cfg.nodes {
            return Err(ClusterError::Input(format!("job {i} (line {}) needs {} processors; the cluster has {} x {}", j.record.line, j.procs, cfg.nodes, cfg.cores)));
        }
        if j.program >= programs.len() {
            return Err(ClusterError::Input(format!("job {i} is of program {}, but there are {}", j.program, programs.len())));
        }
        if i > 0 && j.submit < jobs[i - 1].submit {
            return Err(ClusterError::Input(format!("job {i} is submitted before job {}; jobs must be in submit order", i - 1)));
        }
    }
    let sharing = policy.is_some();
    let n = jobs.len();
    let mut sim = Sim {
        jobs,
        cfg: *cfg,
        names: (0..n).map(|i| format!("j{}", jobs[i].record.job)).collect(),
        programs,
        truth,
        predicted,
        policy,
        nodes: (0..cfg.nodes)
            .map(|_| Node {
                used: 0,
                jobs: Vec::new(),
                runs: Vec::new(),
                since: 0.0,
                version: 0,
                est_free: 0.0,
                core_free: if sharing { vec![true; cfg.cores as usize] } else { Vec::new() },
                refused: Vec::new(),
            })
            .collect(),
        idle: NodeSet::full(cfg.nodes),
        busy: Busy::new(),
        by_free: vec![BTreeSet::new(); cfg.cores as usize + 1],
        heap: BinaryHeap::new(),
        waiting: BTreeSet::new(),
        queue: Queue::new(n),
        now: 0.0,
        r: RSet { active: false, now: 0.0, shadow: 0.0, boundary: None, due_cutoff: 0, idle_bound: 0, changed: Vec::new() },
        out: Schedule {
            start: vec![f64::NAN; n],
            finish: vec![f64::NAN; n],
            alloc: vec![Alloc { nodes: Nodes::default(), cores: Vec::new() }; n],
            shared: vec![false; n],
        },
        pool: [PoolInfo { name: "node".into(), cores: cfg.cores, kind: PoolKind::Cpu }],
        running_count: 0,
    };
    sim.run(progress)?;
    Ok(sim.out)
}

impl Sim<'_, '_, '_> {
    fn sharing(&self) -> bool {
        self.policy.is_some()
    }

    fn run(&mut self, progress: &mut dyn FnMut(usize)) -> Result<(), ClusterError> {
        let mut next = 0usize;
        let mut finished = 0usize;
        // Every 1 % of the jobs, and not for small traces, where it would be noise.
        let step = (self.jobs.len() / 100).max(1000);
        loop {
            // Finishes first, then arrivals, then one scheduling pass, so a
            // node freed at t is refilled at t.
            while let Some(&Reverse((OrdF64(t), n, version))) = self.heap.peek() {
                if t > self.now {
                    break;
                }
                self.heap.pop();
                if self.nodes[n].version != version {
                    continue;
                }
                let done = self.finish_on(n)?;
                let before = finished;
                finished += done;
                if finished / step != before / step {
                    progress(finished);
                }
            }
            while next < self.jobs.len() && self.jobs[next].submit <= self.now {
                self.waiting.insert(next);
                self.queue.insert(next, self.key(next), self.jobs[next].walltime);
                next += 1;
            }
            if !self.waiting.is_empty() {
                self.pass()?;
            }
            let next_finish = loop {
                match self.heap.peek() {
                    Some(&Reverse((_, n, v))) if self.nodes[n].version != v => {
                        self.heap.pop();
                    }
                    Some(&Reverse((OrdF64(t), _, _))) => break t,
                    None => break f64::INFINITY,
                }
            };
            let next_arrival = self.jobs.get(next).map_or(f64::INFINITY, |j| j.submit);
            if next_finish == f64::INFINITY && next_arrival == f64::INFINITY {
                if self.waiting.is_empty() {
                    progress(finished);
                    return Ok(());
                }
                return Err(ClusterError::Stalled { time: self.now, waiting: self.waiting.len() });
            }
            self.now = next_finish.min(next_arrival);
        }
    }

    /// The width by which the queue index judges job `j`: its whole nodes,
    /// or [`ALWAYS`] if it may start beside running jobs, which no count
    /// of idle nodes rules out.
    fn key(&self, j: usize) -> u32 {
        let job = &self.jobs[j];
        let k = self.cfg.width(job.procs);
        let shares = self.policy.as_ref().is_some_and(|p| p.shares_nodes());
        if shares && k == 1 && job.procs < self.cfg.cores {
            ALWAYS
        } else {
            k as u32
        }
    }

    /// One scheduling pass over the queue: jobs start in order until one
    /// cannot (the head); FCFS stops there, EASY reserves nodes for the head
    /// and tries the next `depth` waiting jobs, skipping by the queue index
    /// those whose try could not start them (wider than the idle nodes, or
    /// past the shadow and wider than the idle nodes outside R), so each
    /// pass costs the jobs that might start, not the depth.
    fn pass(&mut self) -> Result<(), ClusterError> {
        self.r.active = false;
        let mut cursor = 0usize;
        let head = loop {
            let Some(&j) = self.waiting.range(cursor..).next() else {
                return Ok(());
            };
            cursor = j + 1;
            if !self.try_start(j, None)? {
                break j;
            }
        };
        if self.cfg.scheduler == Scheduler::Fcfs {
            return Ok(());
        }
        let mut r = self.reserve(head);
        if self.cfg.depth == 0 {
            return Ok(());
        }
        // The window is fixed now: only its own jobs leave the queue during the pass.
        let Some(last) = self.queue.nth_after(head, self.cfg.depth) else {
            return Ok(());
        };
        let shares = self.policy.as_ref().is_some_and(|p| p.shares_nodes());
        // Without an idle node only a start beside running jobs could
        // backfill: none where no policy shares nodes.
        while self.idle.len() > 0 || shares {
            let room = Room { idle: self.idle.len(), open: r.open_idle, now: self.now, shadow: r.shadow };
            let Some(j) = self.queue.first_fit(cursor, last, &room) else {
                break;
            };
            cursor = j + 1;
            self.try_start(j, Some(&mut r))?;
        }
        Ok(())
    }

    /// The reservation of job `j`: its shadow time and the nodes it takes.
    ///
    /// A node is free at `now` if idle, else at its latest `start +
    /// walltime` (`now` if it overran). The shadow is the k-th earliest free
    /// time; R is the k latest-free of the nodes free by the shadow, busy
    /// before idle at equal times (so idle nodes stay outside R where they
    /// can), lower numbers first at equal times. The shadow and the count
    /// of busy nodes free by it come from the busy map's moving mark, so a
    /// pass reads the entries between its answer and the last pass's, not
    /// every entry before the shadow; R's membership is bounded only when a
    /// policy may share nodes, the one reader of it.
    fn reserve(&mut self, j: usize) -> Reservation {
        let k = self.cfg.width(self.jobs[j].procs);
        let now = self.now;
        let idle = self.idle.len();
        let shadow = if idle >= k {
            now
        } else {
            let (OrdF64(t), _) = self.busy.nth(k - idle).expect("a job is never wider than the cluster");
            t.max(now)
        };
        // Busy nodes free by the shadow (done or overran ones too) go into R
        // before idle ones.
        let by_shadow = self.busy.count_to(after_all_at(shadow));
        let taken = by_shadow.min(k);
        let r_idle = k - taken;
        let idle_bound = self.idle.bound_of_lowest(r_idle);
        if self.policy.as_ref().is_some_and(|p| p.shares_nodes()) {
            self.bound_r(k, shadow, by_shadow, idle_bound);
        }
        Reservation { shadow, open_idle: idle - r_idle, idle_bound }
    }

    /// Makes [`Sim::in_r`] answer for the reservation of a job `k` nodes
    /// wide with this shadow, `by_shadow` busy nodes being free by it.
    fn bound_r(&mut self, k: usize, shadow: f64, by_shadow: usize, idle_bound: usize) {
        let now = self.now;
        let by_now = if shadow > now { self.busy.count_to(after_all_at(now)) } else { by_shadow };
        let later = by_shadow - by_now;
        let (boundary, due_cutoff) = if later >= k && k > 0 {
            // The earliest-free node in R is the (by_shadow - k + 1)-th busy one.
            let (OrdF64(tb), _) = self.busy.nth(by_shadow - k + 1).expect("counted busy nodes are listed");
            let above = by_shadow - self.busy.count_to(after_all_at(tb));
            let at_tb = (Bound::Included((OrdF64(tb), Reverse(usize::MAX))), Bound::Included(after_all_at(tb)));
            let partly = self.busy.entries().range(at_tb).any(|(_, e)| e.job == NODE);
            let cut = if partly { self.cutoff(at_tb, k - above) } else { 0 };
            (Some((tb, cut)), 0)
        } else if by_now <= k - later {
            (None, usize::MAX)
        } else {
            (None, self.cutoff((Bound::Unbounded, Bound::Included(after_all_at(now))), k - later))
        };
        let mut changed = std::mem::take(&mut self.r.changed);
        changed.clear();
        self.r = RSet { active: true, now, shadow, boundary, due_cutoff, idle_bound, changed };
    }

    /// Of the busy nodes keyed in `range`, taken lowest first until `room`
    /// are taken, the first node not taken (`usize::MAX`: all are).
    fn cutoff(&self, range: (Bound<Key>, Bound<Key>), room: usize) -> usize {
        let mut runs = Vec::new();
        for (&(_, Reverse(first)), e) in self.busy.entries().range(range) {
            self.held_runs(first, e, &mut runs);
        }
        runs.sort_unstable();
        let mut taken = 0;
        for (a, b) in runs {
            if taken >= room {
                return a;
            }
            taken += b - a;
        }
        usize::MAX
    }

    /// The runs of nodes a busy entry holds.
    fn held_runs(&self, first: usize, e: &Entry, out: &mut Vec<(usize, usize)>) {
        if e.job == NODE {
            out.push((first, first + 1));
        } else {
            out.extend(self.out.alloc[e.job].nodes.runs().iter().map(|&(a, b)| (a as usize, b as usize)));
        }
    }

    /// Whether node `n` is in the current reservation, as it was made
    /// (asked only about partly used nodes, with a reservation in the pass).
    fn in_r(&self, n: usize) -> bool {
        if let Some(&(_, was)) = self.r.changed.iter().find(|c| c.0 == n) {
            return was;
        }
        let node = &self.nodes[n];
        if node.jobs.is_empty() {
            return n < self.r.idle_bound;
        }
        let t = node.est_free;
        if t > self.r.now {
            t <= self.r.shadow && self.r.boundary.is_none_or(|(tb, cut)| t > tb || (t == tb && n < cut))
        } else {
            self.r.boundary.is_none() && n < self.r.due_cutoff
        }
    }

    /// Starts `j` now if it can; with a reservation, only where it keeps it.
    fn try_start(&mut self, j: usize, res: Option<&mut Reservation>) -> Result<bool, ClusterError> {
        let jobs = self.jobs;
        let job = &jobs[j];
        let k = self.cfg.width(job.procs);
        let sharable = self.sharing() && k == 1 && job.procs < self.cfg.cores;
        let long = res.as_ref().is_some_and(|r| self.now + job.walltime > r.shadow);
        // A policy that never shares would refuse every partly used node.
        if sharable && self.policy.as_ref().is_some_and(|p| p.shares_nodes()) {
            let shadow = res.as_ref().map(|r| r.shadow);
            if let Some(n) = self.shared_node(j, long, shadow)? {
                self.place_part(j, n)?;
                return Ok(true);
            }
        }
        if self.idle.len() < k {
            return Ok(false);
        }
        let mut chosen = Vec::new();
        let got = match res {
            None => self.idle.take(0, usize::MAX, k, &mut chosen),
            Some(r) if long => {
                if r.open_idle < k {
                    return Ok(false);
                }
                r.open_idle -= k;
                self.idle.take(r.idle_bound, usize::MAX, k, &mut chosen)
            }
            Some(r) => {
                // Ends by the shadow: R's idle nodes first, since it returns
                // them in time; outside R only what R's idle nodes lack.
                let mut got = self.idle.take(0, r.idle_bound, k, &mut chosen);
                if got < k {
                    let more = k - got;
                    got += self.idle.take(r.idle_bound, usize::MAX, more, &mut chosen);
                    r.open_idle -= more;
                }
                got
            }
        };
        if got < k {
            return Ok(false);
        }
        if sharable {
            self.place_part(j, chosen[0].0)?;
        } else {
            self.place_whole(j, &chosen)?;
        }
        Ok(true)
    }

    /// A partially used node whose policy admits `j`, tightest fit first.
    fn shared_node(&mut self, j: usize, long: bool, shadow: Option<f64>) -> Result<Option<usize>, ClusterError> {
        let procs = self.jobs[j].procs as usize;
        // Nodes looked at, refused before or not: bounds a pass's cost when
        // many nodes have room but refuse.
        let scan = self.cfg.probe * 4;
        let (mut asked, mut seen) = (0, 0);
        let mut candidates = Vec::new();
        for free in procs..self.cfg.cores as usize {
            candidates.clear();
            candidates.extend(self.by_free[free].iter().copied().filter(|&n| !(long && self.in_r(n))).take(scan - seen));
            for &n in &candidates {
                seen += 1;
                if self.nodes[n].refused.contains(&j) {
                    continue;
                }
                asked += 1;
                if self.admits(j, n, shadow)? {
                    return Ok(Some(n));
                }
                self.nodes[n].refused.push(j);
                if asked >= self.cfg.probe {
                    return Ok(None);
                }
            }
            if seen >= scan {
                break;
            }
        }
        Ok(None)
    }

    /// Whether the policy's first start on node `n`, beside what runs
    /// there, is `j`. Its view's queue is `j` first, then up to [`RIVALS`] later waiting
    /// jobs that could share this node now (fit its free cores, and keep
    /// EASY's reservation if `n` is reserved), so a policy that picks the
    /// best match among waiting jobs (best-match) admits `j` only if it is
    /// that match, while rules that take the first acceptable job
    /// (conflict-aware, no-twins, noplan) judge `j` alone.
    fn admits(&mut self, j: usize, n: usize, shadow: Option<f64>) -> Result<bool, ClusterError> {
        let jobs = self.jobs;
        let node = &self.nodes[n];
        let dt = self.now - node.since;
        let running: Vec<RunningJob> = node
            .runs
            .iter()
            .map(|r| {
                let o = &jobs[r.job];
                // Cores are this engine's to allocate (counted, not named);
                // it never suspends.
                let seat = Seat { pool: 0, cores: o.procs, cpus: &[], suspended: false, suspended_s: 0.0 };
                view::running(r.job, o.run, &self.programs[o.program], seat, Work::Left(r.left - dt * r.rate))
            })
            .collect();
        let queued = |k: usize| view::waiting_one_way(k, &self.names[k], 0, jobs[k].procs, jobs[k].run, &self.programs[jobs[k].program]);
        let free = self.cfg.cores - node.used;
        let reserved = self.in_r(n);
        let mut queue = vec![queued(j)];
        for &k in self.waiting.range(j + 1..).take(4 * RIVALS) {
            let o = &jobs[k];
            let fits = o.procs <= free && self.cfg.width(o.procs) == 1 && o.procs < self.cfg.cores;
            let keeps = !reserved || shadow.is_none_or(|s| self.now + o.walltime <= s);
            if fits && keeps {
                queue.push(queued(k));
                if queue.len() > RIVALS {
                    break;
                }
            }
        }
        let view = view::view(self.now, &queue, &running, &self.pool, self.predicted);
        let policy = self.policy.as_mut().expect("asked only when sharing");
        let decisions = policy.decide(&view);
        // The one validation, as every engine: an answer this view cannot
        // carry is the policy's error, whatever of it this engine acts on.
        if let Err((k, why)) = check_view(&view, &decisions) {
            return Err(ClusterError::Decision { time: self.now, decision: decisions[k].to_string(), why: why.to_string() });
        }
        // Its first pick: a policy filling the node goes on to others.
        Ok(decisions.first() == Some(&Decision::Start { job: j, pool: 0 }))
    }

    fn unlist(&mut self, n: usize) {
        let node = &self.nodes[n];
        if node.jobs.is_empty() {
            self.idle.remove(n, n + 1);
        } else {
            self.busy.remove(node.est_free, n);
            if self.sharing() {
                self.by_free[(self.cfg.cores - node.used) as usize].remove(&n);
            }
        }
    }

    fn list(&mut self, n: usize) {
        let node = &self.nodes[n];
        if node.jobs.is_empty() {
            self.idle.insert(n, n + 1);
        } else {
            self.busy.insert(node.est_free, n, Entry { nodes: 1, job: NODE });
            if self.sharing() && node.used < self.cfg.cores {
                self.by_free[(self.cfg.cores - node.used) as usize].insert(n);
            }
        }
    }

    /// Starts part-node job `j` on node `n`, beside what runs there.
    fn place_part(&mut self, j: usize, n: usize) -> Result<(), ClusterError> {
        // R stays as it was made for the rest of the pass.
        if self.r.active && self.policy.as_ref().is_some_and(|p| p.shares_nodes()) && !self.r.changed.iter().any(|c| c.0 == n) {
            let was = self.in_r(n);
            self.r.changed.push((n, was));
        }
        let job = &self.jobs[j];
        let end = self.now + job.walltime;
        self.unlist(n);
        let node = &mut self.nodes[n];
        if !node.jobs.is_empty() {
            self.out.shared[j] = true;
            for &o in &node.jobs {
                self.out.shared[o] = true;
            }
        }
        node.used += job.procs;
        debug_assert!(node.used <= self.cfg.cores);
        node.jobs.push(j);
        node.est_free = if node.jobs.len() == 1 { end } else { node.est_free.max(end) };
        let mut held = Vec::with_capacity(job.procs as usize);
        for (c, free) in node.core_free.iter_mut().enumerate() {
            if held.len() == job.procs as usize {
                break;
            }
            if *free {
                *free = false;
                held.push(c as u32);
            }
        }
        self.list(n);
        self.out.alloc[j] = Alloc { nodes: Nodes::one(n as u32), cores: held };
        self.started(j, n)
    }

    /// Starts job `j` on the whole idle nodes of `runs`, held as those runs.
    fn place_whole(&mut self, j: usize, runs: &[(usize, usize)]) -> Result<(), ClusterError> {
        let end = self.now + self.jobs[j].walltime;
        let mut nodes = 0;
        for &(a, b) in runs {
            self.idle.remove(a, b);
            nodes += b - a;
        }
        self.busy.insert(end, runs[0].0, Entry { nodes, job: j });
        self.out.alloc[j] = Alloc { nodes: Nodes::from_runs(runs), cores: Vec::new() };
        self.started(j, runs[0].0)
    }

    /// Job `j` runs from now, its progress tracked on node `home`.
    fn started(&mut self, j: usize, home: usize) -> Result<(), ClusterError> {
        self.waiting.remove(&j);
        self.queue.remove(j);
        self.out.start[j] = self.now;
        self.running_count += 1;
        let now = self.now;
        let node = &mut self.nodes[home];
        advance(node, now);
        node.runs.push(Run { job: j, left: self.jobs[j].run, rate: 1.0 });
        node.version += 1;
        node.refused.clear();
        self.reschedule(home)
    }

    /// Ends the jobs of node `n` that are done now; returns how many.
    fn finish_on(&mut self, n: usize) -> Result<usize, ClusterError> {
        let now = self.now;
        let node = &mut self.nodes[n];
        advance(node, now);
        // The job whose finish this entry predicted is done exactly now;
        // float steps leave the others crumbs (as in cosched-sched's simulator).
        let first = (0..node.runs.len())
            .min_by(|&a, &b| (node.runs[a].left / node.runs[a].rate).total_cmp(&(node.runs[b].left / node.runs[b].rate)))
            .expect("a scheduled node runs something");
        node.runs[first].left = 0.0;
        let mut ended = Vec::new();
        let jobs = self.jobs;
        node.runs.retain(|r| {
            let done = r.left <= jobs[r.job].run * 1e-9;
            if done {
                ended.push(r.job);
            }
            !done
        });
        node.version += 1;
        node.refused.clear();
        for &j in &ended {
            self.out.finish[j] = now;
            self.running_count -= 1;
            if self.out.alloc[j].cores.is_empty() {
                // Whole nodes: its runs go back to idle as they are.
                let end = self.out.start[j] + jobs[j].walltime;
                let runs = self.out.alloc[j].nodes.runs();
                self.busy.remove(end, runs[0].0 as usize);
                for &(a, b) in runs {
                    self.idle.insert(a as usize, b as usize);
                }
            } else {
                let m = self.out.alloc[j].nodes.runs()[0].0 as usize;
                self.unlist(m);
                let node = &mut self.nodes[m];
                node.used -= jobs[j].procs;
                node.jobs.retain(|&o| o != j);
                for &c in &self.out.alloc[j].cores {
                    node.core_free[c as usize] = true;
                }
                node.est_free = node.jobs.iter().map(|&o| self.out.start[o] + jobs[o].walltime).fold(f64::NEG_INFINITY, f64::max);
                self.list(m);
            }
            if let Some(p) = self.policy.as_mut() {
                let job = &jobs[j];
                p.observe(&JobOutcome {
                    job: j,
                    program: &self.programs[job.program],
                    arrival: job.submit,
                    start: self.out.start[j],
                    finish: now,
                    solo: job.run,
                    slowdown: (now - self.out.start[j]) / job.run,
                    suspended_s: 0.0,
                });
            }
        }
        self.reschedule(n)?;
        Ok(ended.len())
    }

    /// New rates of node `n`'s jobs beside one another, and its next finish.
    fn reschedule(&mut self, n: usize) -> Result<(), ClusterError> {
        let node = &mut self.nodes[n];
        if node.runs.is_empty() {
            return Ok(());
        }
        let mut soonest = f64::INFINITY;
        let mut beside = Vec::with_capacity(node.jobs.len());
        for i in 0..node.runs.len() {
            let id = node.runs[i].job;
            beside.clear();
            beside.extend(node.jobs.iter().copied().filter(|&o| o != id));
            let s = if beside.is_empty() { 1.0 } else { self.truth.slowdown(id, &beside) };
            if !(s.is_finite() && s > 0.0) {
                return Err(ClusterError::Slowdown { job: id, value: s });
            }
            let r = &mut node.runs[i];
            r.rate = 1.0 / s;
            soonest = soonest.min(r.left / r.rate);
        }
        self.heap.push(Reverse((OrdF64(node.since + soonest), n, node.version)));
        Ok(())
    }
}

fn advance(node: &mut Node, now: f64) {
    let dt = now - node.since;
    if dt > 0.0 {
        for r in &mut node.runs {
            r.left -= dt * r.rate;
        }
    }
    node.since = now;
}
