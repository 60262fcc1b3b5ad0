//! The slowdowns a policy reads: the [`SlowdownSource`] trait, predicted
//! or measured, of jobs beside one another. Named for what it yields (it
//! was `source`, a name cosched-learn also used for the figures a real run
//! reads from the store).

use cosched_model::placement::SharingLevel;

use crate::JobId;

/// Slowdowns of jobs beside one another. The simulator uses `slowdown` as the
/// truth that drives progress; policies use it, or `score`, as a prediction.
pub trait SlowdownSource {
    /// Slowdown of `job` (T_corun / T_solo) while `beside` run on the node;
    /// 1 when `beside` is empty.
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64;
    /// Conflict score of a pair in the units of the conflict-aware threshold
    /// (the SX-Aurora paper's C_all, in percent, when host loads are known).
    fn score(&self, a: JobId, b: JobId) -> f64;
    /// As `slowdown`, each co-runner `beside[k]` sharing `levels[k]` with
    /// `job` (the closest level between their CPUs; `None` where either is
    /// not placed on a topology). A source with one number per pair
    /// ignores the levels: on it, the domain-aware model is today's.
    fn slowdown_at(&self, job: JobId, beside: &[JobId], levels: &[Option<SharingLevel>]) -> f64 {
        let _ = levels;
        self.slowdown(job, beside)
    }
    /// Whether [`slowdown_at`](SlowdownSource::slowdown_at) depends on the
    /// levels, so engines compute them only for a source that reads them.
    fn by_level(&self) -> bool {
        false
    }
    /// The running job's online slowdown estimate, when the engine
    /// observes progress (`crate::online`); sources of predictions alone
    /// have none.
    fn online(&self, job: JobId) -> Option<crate::online::Estimate> {
        let _ = job;
        None
    }
    /// A fingerprint of what the run has learned online (`crate::online`):
    /// 0 before anything is, another value after each pair learned or
    /// learned anew. A policy that plans ahead over the source (`react`'s
    /// `plan=learned`) plans again when it moves, instead of comparing
    /// every pair at every decision. Sources of predictions alone learn
    /// nothing and keep 0.
    fn knowledge(&self) -> u64 {
        0
    }
    /// The slowdown of `job` beside `beside` that the run has learned
    /// online, if it has: where the source's prediction was wrong. A
    /// policy that plans ahead distrusts what the prediction says of the
    /// other pairs of those programs. Sources of predictions alone: `None`.
    fn learned(&self, job: JobId, beside: JobId) -> Option<f64> {
        let _ = (job, beside);
        None
    }
}
