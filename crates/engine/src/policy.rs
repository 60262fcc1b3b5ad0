//! The policy trait and what a policy sees: the vocabulary every engine
//! speaks.

use std::collections::BTreeMap;
use std::fmt;

use cosched_model::workload::PoolKind;

use crate::slowdown::SlowdownSource;
use crate::JobId;

/// A pool of the node as policies see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    pub name: String,
    pub cores: u32,
    pub kind: PoolKind,
}

/// One way a job may run (the VarySched paper's kernel collections: a kernel per
/// resource, ranked): the pool, the cores and the solo time there.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its name in traces and reports.
    pub name: String,
    /// Index into [`View::pools`].
    pub pool: usize,
    pub cores: u32,
    /// Solo time estimate there, seconds.
    pub solo: f64,
}

/// A job waiting in the queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueuedJob<'a> {
    pub id: JobId,
    pub name: &'a str,
    /// Index into [`View::pools`].
    pub pool: usize,
    pub cores: u32,
    /// Solo time estimate, seconds.
    pub solo: f64,
    /// Equal keys mean instances of one program (twins).
    pub program: &'a str,
    /// Every way it may run, in preference order; the first is `pool`,
    /// `cores` and `solo`. Empty for a job that runs one way.
    pub variants: &'a [Variant],
}

/// A job running on the node, or suspended on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningJob<'a> {
    pub id: JobId,
    pub pool: usize,
    /// The cores it was started for: its threads.
    pub cores: u32,
    /// The cores of its pool it is placed on (indices `0..pool cores`),
    /// ascending; fewer than `cores` after a move that squeezed it, and
    /// shared with other jobs when overbooked. Empty from an engine that
    /// does not place jobs.
    pub cpus: &'a [u32],
    /// Suspended: it holds no core and makes no progress until resumed.
    pub suspended: bool,
    /// Seconds it has spent suspended so far.
    pub suspended_s: f64,
    /// Fraction of its work done, in [0, 1].
    pub progress: f64,
    /// Solo time estimate, seconds: with `progress`, what is left of the job
    /// is `(1 - progress) x solo` solo-seconds, which a policy needs to look
    /// ahead past the running jobs' ends.
    pub solo: f64,
    pub program: &'a str,
}

/// Everything a policy may know when it decides.
pub struct View<'a> {
    /// Virtual or wall seconds since the engine began; engines supply it so
    /// policies never read a clock.
    pub time: f64,
    /// Waiting jobs in queue order (arrival, then workload order); an engine
    /// with a look-ahead window shows only the oldest of them.
    pub queue: &'a [QueuedJob<'a>],
    /// Jobs running on the node being decided for (engines over several
    /// nodes ask node by node; the queue is shared).
    pub running: &'a [RunningJob<'a>],
    pub pools: &'a [PoolInfo],
    pub slowdown: &'a dyn SlowdownSource,
}

impl View<'_> {
    /// Cores of `pool` not held by running jobs.
    // Inlined across the crate boundary: policies ask it at every decision
    // of the simulator's hot loop (100,000-job benchmarks).
    #[inline]
    pub fn free_cores(&self, pool: usize) -> u32 {
        let n = self.pools[pool].cores;
        let active = || self.running.iter().filter(move |r| r.pool == pool && !r.suspended);
        if n > 128 || active().any(|r| r.cpus.is_empty()) {
            // Unplaced jobs hold `cores` cores each, wherever they are.
            let used: u32 = active().map(|r| if r.cpus.is_empty() { r.cores } else { r.cpus.len() as u32 }).sum();
            return n.saturating_sub(used);
        }
        let mut busy: u128 = 0;
        for r in active() {
            for &c in r.cpus {
                busy |= 1u128 << c;
            }
        }
        n.saturating_sub(busy.count_ones())
    }

    /// How many running (not suspended) jobs hold each core of `pool`.
    pub fn holders(&self, pool: usize) -> Vec<u32> {
        let mut h = vec![0u32; self.pools[pool].cores as usize];
        for r in self.running.iter().filter(|r| r.pool == pool && !r.suspended) {
            for &c in r.cpus {
                if let Some(x) = h.get_mut(c as usize) {
                    *x += 1;
                }
            }
        }
        h
    }
}

/// Which cores of its pool a started job gets (see
/// [`CoreMap::choose`](crate::cores::CoreMap::choose)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cores {
    /// The lowest-numbered cores (ParaStation's default placement).
    Compact,
    /// Spread evenly over the pool (the ParaStation paper's `spread` option).
    Spread,
    /// Exactly these cores of the pool, indices `0..pool cores`.
    Given(Vec<u32>),
}

impl fmt::Display for Cores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cores::Compact => write!(f, "compact"),
            Cores::Spread => write!(f, "spread"),
            Cores::Given(v) => write!(f, "cores {}", cpulist(v)),
        }
    }
}

fn cpulist(v: &[u32]) -> String {
    v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// What a policy asks the engine to do now. Returning no decision means wait.
/// Every decision is checked by `validate::check_decision` before an engine
/// applies it; decisions of one call apply in order, so a policy may
/// suspend a job and start another on its cores in one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start a queued job on free cores of its pool; the engine picks them
    /// (compact).
    Start { job: JobId, pool: usize },
    /// Start a queued job on the cores `cores` names. Without `overbook`
    /// they must be free; with it they may be held by running jobs, which
    /// then share them with it (the OS time-shares the cores).
    StartOn { job: JobId, pool: usize, cores: Cores, overbook: bool },
    /// Stop a running job where it is (cgroup freezer, else SIGSTOP): it
    /// makes no progress and frees its cores until resumed.
    Suspend { job: JobId },
    /// Let a suspended job go on, on the cores it holds (after a `Move`,
    /// the new ones); busy ones are then shared.
    Resume { job: JobId },
    /// Re-pin a running or suspended job onto these cores of its pool
    /// (any number from one to the pool's; busy ones are shared).
    Move { job: JobId, cores: Vec<u32> },
    /// Start a queued job as its variant `variant` (an index into its
    /// [`QueuedJob::variants`]; 0 for a job without) on free cores of that
    /// variant's pool, compact. `Start` and `StartOn` take the first
    /// variant on their pool that fits.
    StartVariant { job: JobId, variant: usize },
}

impl Decision {
    /// The job the decision is about.
    pub fn job(&self) -> JobId {
        match *self {
            Decision::Start { job, .. }
            | Decision::StartOn { job, .. }
            | Decision::Suspend { job }
            | Decision::Resume { job }
            | Decision::Move { job, .. }
            | Decision::StartVariant { job, .. } => job,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Start { job, pool } => write!(f, "start job {job} on pool {pool}"),
            Decision::StartOn { job, pool, cores, overbook } => {
                write!(f, "start job {job} on pool {pool}, {cores}{}", if *overbook { ", overbooking" } else { "" })
            }
            Decision::Suspend { job } => write!(f, "suspend job {job}"),
            Decision::Resume { job } => write!(f, "resume job {job}"),
            Decision::Move { job, cores } => write!(f, "move job {job} to cores {}", cpulist(cores)),
            Decision::StartVariant { job, variant } => write!(f, "start job {job} as its variant {variant}"),
        }
    }
}

/// What an engine observed of a job that finished: times on the engine's
/// clock (virtual or wall seconds since it began).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobOutcome<'a> {
    pub job: JobId,
    pub program: &'a str,
    pub arrival: f64,
    pub start: f64,
    pub finish: f64,
    /// The job's solo time estimate, seconds.
    pub solo: f64,
    /// Observed run time over solo time, time suspended excluded:
    /// (finish - start - suspended) / solo.
    pub slowdown: f64,
    /// Seconds it spent suspended.
    pub suspended_s: f64,
}

pub trait Policy {
    /// Decisions for this instant. Engines call again after applying them,
    /// until a call returns none, so a policy may decide one start at a time.
    fn decide(&mut self, view: &View) -> Vec<Decision>;

    /// Called by the engine when a job finishes, before it asks for the next
    /// decisions, so a policy can learn from what happened. Most policies
    /// decide from the view alone and ignore it.
    fn observe(&mut self, _outcome: &JobOutcome) {}

    /// Whether the policy acts on running jobs (suspends, resumes, moves or
    /// overbooks), so engines must ask it about a node with no free core
    /// and when nothing waits. Policies that only start jobs on free cores
    /// keep the default, which lets the simulator skip full nodes.
    fn acts_on_running(&self) -> bool {
        false
    }

    /// Whether the policy may ever start a job on a node where others run.
    /// One that never does (`exclusive`) says so, and engines that offer
    /// partly used nodes job by job (the cluster simulator) skip asking it
    /// what it would refuse anyway.
    fn shares_nodes(&self) -> bool {
        true
    }

    /// When the policy wants to be asked again though nothing starts,
    /// ends or arrives (a time-sharing quantum), on the engine's clock;
    /// engines ask it then. `None`: only on events.
    fn wake_at(&self) -> Option<f64> {
        None
    }

    /// Each job's priority by job name (the workload's `priority`, 1 when
    /// a job has none), handed over once before the run by whoever builds
    /// the policy for a workload: by name, because engines number jobs in
    /// their own order. Policies that weigh jobs keep it (`timeshare`);
    /// the others ignore it.
    fn set_priorities(&mut self, _by_name: &BTreeMap<String, u32>) {}
}

/// Policy parameters as given by name on a command line or in a scenario.
pub type Params = BTreeMap<String, String>;
