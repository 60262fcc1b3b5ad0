//! What engines run: one node's pools and the jobs of a workload.

use cosched_model::trace::TraceJob;

use crate::policy::PoolInfo;

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
