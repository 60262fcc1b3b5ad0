//! Robust summaries of repeated measurements.
//!
//! The node is a noisy shared VM, so every figure cosched reports is a median
//! with a distribution-free confidence interval (order statistics of the
//! binomial), never a mean with a normal-theory interval.

use serde::{Deserialize, Serialize};

/// Median, spread and a confidence interval of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Lower end of the ~95% confidence interval of the median.
    pub ci_lo: f64,
    /// Upper end of the ~95% confidence interval of the median.
    pub ci_hi: f64,
}

impl Summary {
    /// Summarises a non-empty sample; `None` if empty or if a value is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        let (lo, hi) = median_ci_ranks(v.len());
        Some(Summary {
            n: v.len(),
            median: median_sorted(&v),
            min: v[0],
            max: v[v.len() - 1],
            ci_lo: v[lo],
            ci_hi: v[hi],
        })
    }

    /// Half-width of the interval relative to the median (0.05 = +-5%).
    pub fn rel_halfwidth(&self) -> f64 {
        if self.median == 0.0 {
            return f64::INFINITY;
        }
        (self.ci_hi - self.ci_lo) / 2.0 / self.median.abs()
    }

    /// Spread (max - min) relative to the median.
    pub fn rel_spread(&self) -> f64 {
        if self.median == 0.0 {
            return f64::INFINITY;
        }
        (self.max - self.min) / self.median.abs()
    }
}

/// Median of an already sorted, non-empty slice.
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Quantile `q` in [0, 1] of a sorted non-empty slice, interpolating
/// linearly between order statistics (the common "type 7" definition).
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let i = pos.floor() as usize;
    let frac = pos - i as f64;
    if i + 1 < v.len() {
        v[i] + (v[i + 1] - v[i]) * frac
    } else {
        v[i]
    }
}

/// Median of a sample (sorts a copy). Panics on an empty slice.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    median_sorted(&v)
}

/// The fewest samples whose median gets a ~95 % interval narrower than
/// their full range; below it [`median_ci_ranks`] gives the range.
pub const CI_MIN_SAMPLES: usize = 6;

/// 0-based ranks (lo, hi) of the order statistics bounding a ~95% interval for
/// the median of `n` samples. For small n the interval is the full range; the
/// binomial tail is computed exactly, so no normal approximation is assumed.
pub fn median_ci_ranks(n: usize) -> (usize, usize) {
    assert!(n > 0);
    if n < CI_MIN_SAMPLES {
        // With fewer than 6 samples even [min, max] covers the median with
        // less than 95%; report the full range and let the caller show n.
        return (0, n - 1);
    }
    // The interval [x_(k), x_(n-1-k)] (0-based) misses the median when k or
    // fewer samples fall below it, or k or fewer above: coverage is
    // 1 - 2 P(Bin(n, 1/2) <= k). Take the largest k with P(X <= k) <= 2.5%.
    let mut cdf = 0.0;
    let mut k = 0usize;
    for i in 0..n {
        cdf += binom_pmf_half(n, i);
        if cdf > 0.025 {
            break;
        }
        k = i;
    }
    let k = k.min((n - 1) / 2);
    (k, n - 1 - k)
}

fn binom_pmf_half(n: usize, k: usize) -> f64 {
    // ln C(n,k) - n ln 2, summed in logs so large n cannot overflow.
    let ln_choose: f64 = (0..k).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum();
    (ln_choose - n as f64 * std::f64::consts::LN_2).exp()
}

#[cfg(test)]
mod tests {
    #[test]
    fn type_7_quantiles_interpolate_between_order_statistics() {
        let v = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 8.0);
        assert_eq!(quantile_sorted(&v, 0.5), 3.0);
        assert_eq!(quantile_sorted(&v, 0.25), 1.75);
        assert_eq!(quantile_sorted(&[5.0], 0.9), 5.0);
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn ci_ranks_match_binomial_tables() {
        // Classic table values for the 95% median interval (1-based ranks):
        // n=6 -> (1,6), n=10 -> (2,9), n=20 -> (6,15).
        assert_eq!(median_ci_ranks(6), (0, 5));
        assert_eq!(median_ci_ranks(10), (1, 8));
        assert_eq!(median_ci_ranks(20), (5, 14));
    }

    #[test]
    fn summary_rejects_empty_and_nan() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    proptest! {
        #[test]
        fn interval_brackets_median_within_range(v in proptest::collection::vec(-1e6f64..1e6, 1..60)) {
            let s = Summary::of(&v).unwrap();
            prop_assert!(s.min <= s.ci_lo && s.ci_lo <= s.median);
            prop_assert!(s.median <= s.ci_hi && s.ci_hi <= s.max);
            prop_assert_eq!(s.n, v.len());
        }
    }
}
