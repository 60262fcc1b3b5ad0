//! Where predicted or measured slowdowns come from.

use crate::JobId;

/// Slowdowns of jobs beside one another. The simulator uses `slowdown` as the
/// truth that drives progress; policies use it, or `score`, as a prediction.
pub trait SlowdownSource {
    /// Slowdown of `job` (T_corun / T_solo) while `beside` run on the node;
    /// 1 when `beside` is empty.
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64;
    /// Conflict score of a pair in the units of the conflict-aware threshold
    /// (seed 000's C_all, in percent, when host loads are known).
    fn score(&self, a: JobId, b: JobId) -> f64;
}
