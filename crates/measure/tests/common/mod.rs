//! What the node-runner tests share: the simplest policy and slowdown
//! source, so each test is about the executor, not about deciding.

use cosched_engine::{Decision, JobId, Policy, SlowdownSource, View};

/// Starts the first waiting job that fits.
pub struct FirstFit;

impl Policy for FirstFit {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let fits = view.queue.iter().find(|q| q.cores <= view.free_cores(q.pool));
        fits.map(|q| Decision::Start { job: q.id, pool: q.pool }).into_iter().collect()
    }
}

/// No job slows another.
pub struct Alone;

impl SlowdownSource for Alone {
    fn slowdown(&self, _: JobId, _: &[JobId]) -> f64 {
        1.0
    }
    fn score(&self, _: JobId, _: JobId) -> f64 {
        0.0
    }
}
