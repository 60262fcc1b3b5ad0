//! The policy trait and what a policy sees: the vocabulary every engine
//! speaks.

use std::collections::BTreeMap;

use cosched_model::workload::PoolKind;

use crate::source::SlowdownSource;
use crate::JobId;

/// A pool of the node as policies see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    pub name: String,
    pub cores: u32,
    pub kind: PoolKind,
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
}

/// A job running on the node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningJob<'a> {
    pub id: JobId,
    pub pool: usize,
    pub cores: u32,
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
        let used: u32 = self
            .running
            .iter()
            .filter(|r| r.pool == pool)
            .map(|r| r.cores)
            .sum();
        self.pools[pool].cores.saturating_sub(used)
    }
}

/// What a policy asks the engine to do now. Returning no decision means wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start a queued job on its pool; the engine picks the cores.
    Start { job: JobId, pool: usize },
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
    /// Observed run time over solo time: (finish - start) / solo.
    pub slowdown: f64,
}

pub trait Policy {
    /// Decisions for this instant. Engines call again after applying them,
    /// until a call returns none, so a policy may decide one start at a time.
    fn decide(&mut self, view: &View) -> Vec<Decision>;

    /// Called by the engine when a job finishes, before it asks for the next
    /// decisions, so a policy can learn from what happened. Most policies
    /// decide from the view alone and ignore it.
    fn observe(&mut self, _outcome: &JobOutcome) {}
}

/// Policy parameters as given by name on a command line or in a scenario.
pub type Params = BTreeMap<String, String>;
