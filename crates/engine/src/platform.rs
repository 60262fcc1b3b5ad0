//! What engines run: one node's pools and the jobs of a workload.

use cosched_model::trace::TraceJob;

use crate::policy::{PoolInfo, Variant};

/// One node: its pools. The simulator's cluster is copies of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub pools: Vec<PoolInfo>,
}

/// One job of a workload as engines see it; its [`JobId`](crate::JobId) is
/// its index.
#[derive(Debug, Clone, PartialEq)]
pub struct SimJob {
    pub name: String,
    /// Seconds from the engine's start.
    pub arrival: f64,
    /// Run time alone, seconds (an estimate, for a real run).
    pub solo: f64,
    /// Index into [`Platform::pools`].
    pub pool: usize,
    pub cores: u32,
    pub program: String,
    /// Every way it may run, in preference order, the first being `pool`,
    /// `cores` and `solo`; empty for a job that runs one way. A start
    /// names one (`Decision::StartVariant`) or takes the first that fits.
    pub variants: Vec<Variant>,
}

impl SimJob {
    /// A nameless job of one variant, there from the start: what a policy
    /// simulates ahead (a running job's remaining work, a candidate start).
    pub fn trial(pool: usize, cores: u32, solo: f64, program: &str) -> SimJob {
        SimJob { name: String::new(), arrival: 0.0, solo, pool, cores, program: program.to_string(), variants: vec![] }
    }

    /// Pool, cores and solo time of its variant `v`; variant 0 of a job
    /// without variants is the job itself.
    #[inline]
    pub fn variant(&self, v: usize) -> Option<(usize, u32, f64)> {
        match self.variants.get(v) {
            Some(x) => Some((x.pool, x.cores, x.solo)),
            None if v == 0 && self.variants.is_empty() => Some((self.pool, self.cores, self.solo)),
            None => None,
        }
    }

    /// How many ways it may run (1 without variants).
    pub fn variant_count(&self) -> usize {
        self.variants.len().max(1)
    }

    /// The name of its variant `v` for traces; `None` without variants.
    pub fn variant_name(&self, v: usize) -> Option<String> {
        self.variants.get(v).map(|x| x.name.clone())
    }
}

impl Platform {
    /// Each job's metadata in a trace of this platform (name, program, pool
    /// name, solo time), so every engine and rebuilt trace names jobs alike.
    pub fn trace_jobs(&self, jobs: &[SimJob]) -> Vec<TraceJob> {
        jobs.iter()
            .enumerate()
            .map(|(i, j)| TraceJob {
                name: j.name.clone(),
                program: j.program.clone(),
                pool: self.pools[j.pool].name.clone(),
                solo: Some(j.solo),
                ..TraceJob::bare(i)
            })
            .collect()
    }
}
