//! Comparing policies on the same job orders: paired differences, their
//! median with a distribution-free interval, interquartile ranges, and when
//! to stop repeating.
//!
//! Every policy runs the same seeded orders, so policy A's figure on order k
//! is compared with policy B's on order k (a paired design, as the SX-Aurora paper's
//! simulation compares strategies on the same random orders). The drift of a
//! shared node between orders then cancels in each pair instead of widening
//! both samples. A difference is *resolved* when the ~95 % interval of the
//! median paired relative difference excludes zero (the sign test's order
//! statistics, as `stats::median_ci_ranks`: below 6 pairs it is the full
//! range, so five orders resolve only when all five agree in sign).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stats::{median_ci_ranks, median_sorted, quantile_sorted};

/// Which of two policies did better on one figure, as far as the repeats tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The first policy's figure is lower (better) beyond noise.
    FirstBetter,
    /// The second policy's figure is lower (better) beyond noise.
    SecondBetter,
    /// The interval of the median difference holds zero.
    Unresolved,
}

/// Interquartile range of a sample (type-7 quartiles) and its median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quartiles {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
}

impl Quartiles {
    /// `None` for an empty sample or one with a value that is not finite.
    pub fn of(values: &[f64]) -> Option<Quartiles> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Quartiles { q1: quantile_sorted(&v, 0.25), median: median_sorted(&v), q3: quantile_sorted(&v, 0.75) })
    }

    /// The two ranges share no value.
    pub fn disjoint(&self, other: &Quartiles) -> bool {
        self.q3 < other.q1 || other.q3 < self.q1
    }
}

/// Policy `first` against policy `second` on one figure (lower is better),
/// over orders both ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Orders both ran.
    pub n: usize,
    /// Median of first / second - 1 over the orders (-0.05: 5 % lower).
    pub median_rel_diff: f64,
    /// ~95 % interval of that median (the full range below 6 orders).
    pub ci: (f64, f64),
    pub first: Quartiles,
    pub second: Quartiles,
    pub verdict: Verdict,
}

/// The fewest paired orders whose interval may exclude zero.
pub const MIN_PAIRS_TO_RESOLVE: usize = 5;

/// Compares paired samples: `first[k]` and `second[k]` were measured on the
/// same order k. Pairs where either value is not a positive finite number
/// are left out (a failed run has no figure). `None` without any pair.
pub fn paired(first: &[f64], second: &[f64]) -> Option<Paired> {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    let pairs: Vec<(f64, f64)> = first.iter().zip(second).map(|(&a, &b)| (a, b)).filter(|&(a, b)| ok(a) && ok(b)).collect();
    if pairs.is_empty() {
        return None;
    }
    let mut d: Vec<f64> = pairs.iter().map(|(a, b)| a / b - 1.0).collect();
    d.sort_by(f64::total_cmp);
    let (lo, hi) = median_ci_ranks(d.len());
    let ci = (d[lo], d[hi]);
    // Below five pairs even a unanimous sign happens by chance more than
    // one time in sixteen, so no interval from them excludes zero at ~95 %.
    let verdict = if d.len() < MIN_PAIRS_TO_RESOLVE {
        Verdict::Unresolved
    } else if ci.1 < 0.0 {
        Verdict::FirstBetter
    } else if ci.0 > 0.0 {
        Verdict::SecondBetter
    } else {
        Verdict::Unresolved
    };
    let a: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let b: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    Some(Paired {
        n: pairs.len(),
        median_rel_diff: median_sorted(&d),
        ci,
        first: Quartiles::of(&a).expect("finite"),
        second: Quartiles::of(&b).expect("finite"),
        verdict,
    })
}

/// Why a series of orders ended, or that it goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// Keep going: something is unresolved and the budget allows another order.
    Continue,
    /// Every comparison that decides was resolved after at least the minimum
    /// number of orders.
    Resolved,
    /// The most orders (or the time budget) ran out first.
    Budget,
}

/// Whether to run another order: stop once `min_orders` are done and every
/// comparison is resolved, or once `max_orders` are done (or `out_of_time`).
pub fn stop_rule(comparisons: &[Option<Paired>], orders_done: usize, min_orders: usize, max_orders: usize, out_of_time: bool) -> Stop {
    let resolved = !comparisons.is_empty()
        && comparisons.iter().all(|c| c.as_ref().is_some_and(|c| c.verdict != Verdict::Unresolved));
    if orders_done >= min_orders && resolved {
        Stop::Resolved
    } else if orders_done >= max_orders || out_of_time {
        Stop::Budget
    } else {
        Stop::Continue
    }
}

/// Whether one more order, taking as long as the mean of the `done` orders
/// that took `orders_took` together, still ends within `budget` of the
/// series' start (`elapsed` ago). A budget is an aim for the whole series
/// (`cosched demo`'s three minutes), so an order that would overrun it does
/// not start, rather than starting while any time is left. The first order
/// always starts: there is no pace to judge by.
pub fn next_order_fits(budget: Duration, elapsed: Duration, orders_took: Duration, done: usize) -> bool {
    match u32::try_from(done) {
        Ok(0) => true,
        Ok(n) => elapsed + orders_took / n <= budget,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn five_orders_resolve_only_when_all_agree_in_sign() {
        let noplan = [10.0, 11.0, 12.0, 10.5, 11.5];
        let better = [9.0, 10.0, 11.0, 10.0, 11.0];
        let c = paired(&better, &noplan).unwrap();
        assert_eq!(c.verdict, Verdict::FirstBetter);
        assert_eq!(c.n, 5);
        // -0.100, -0.091, -0.083, -0.048, -0.043: the median is 11/12 - 1.
        assert!((c.median_rel_diff - (11.0 / 12.0 - 1.0)).abs() < 1e-12);
        let mixed = [9.0, 10.0, 12.5, 10.0, 11.0];
        assert_eq!(paired(&mixed, &noplan).unwrap().verdict, Verdict::Unresolved);
        assert_eq!(paired(&noplan, &better).unwrap().verdict, Verdict::SecondBetter);
    }

    #[test]
    fn fewer_than_five_orders_never_resolve_even_when_unanimous() {
        for n in 1..5 {
            let c = paired(&vec![1.0; n], &vec![2.0; n]).unwrap();
            assert_eq!((c.n, c.verdict), (n, Verdict::Unresolved), "{n} orders");
            assert!(c.ci.1 < 0.0, "the interval itself is still reported");
        }
        assert_eq!(paired(&[1.0; 5], &[2.0; 5]).unwrap().verdict, Verdict::FirstBetter);
    }

    #[test]
    fn failed_runs_drop_out_of_the_pairs() {
        let c = paired(&[1.0, f64::NAN, 2.0], &[2.0, 1.0, 0.0]).unwrap();
        assert_eq!(c.n, 1);
        assert!(paired(&[f64::NAN], &[1.0]).is_none());
    }

    #[test]
    fn quartiles_and_their_overlap() {
        let a = Quartiles::of(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!((a.q1, a.median, a.q3), (2.0, 3.0, 4.0));
        let b = Quartiles::of(&[5.0, 6.0, 7.0]).unwrap();
        assert_eq!((b.q1, b.q3), (5.5, 6.5));
        assert!(a.disjoint(&b) && b.disjoint(&a));
        assert!(!a.disjoint(&Quartiles::of(&[3.5, 4.5]).unwrap()));
    }

    #[test]
    fn an_order_starts_only_when_the_pace_so_far_ends_it_within_the_budget() {
        let s = Duration::from_secs;
        // Nothing run yet: no pace, so the first order starts even past the budget.
        assert!(next_order_fits(s(10), s(20), s(0), 0));
        // 3 orders of 10 s after 5 s of set-up: 35 s gone, the next ends at 45 s.
        assert!(next_order_fits(s(45), s(35), s(30), 3));
        assert!(!next_order_fits(s(44), s(35), s(30), 3));
    }

    #[test]
    fn the_stop_rule_waits_for_the_minimum_then_for_resolution_or_the_budget() {
        let res = paired(&[1.0; 6], &[2.0; 6]);
        let unres = paired(&[1.0, 3.0], &[2.0, 2.0]);
        assert_eq!(stop_rule(std::slice::from_ref(&res), 4, 5, 20, false), Stop::Continue);
        assert_eq!(stop_rule(std::slice::from_ref(&res), 5, 5, 20, false), Stop::Resolved);
        assert_eq!(stop_rule(&[res.clone(), unres.clone()], 5, 5, 20, false), Stop::Continue);
        assert_eq!(stop_rule(&[res, unres.clone()], 20, 5, 20, false), Stop::Budget);
        assert_eq!(stop_rule(&[unres], 6, 5, 20, true), Stop::Budget);
        assert_eq!(stop_rule(&[None], 9, 5, 20, false), Stop::Continue);
    }

    proptest! {
        /// Swapping the policies mirrors the verdict.
        #[test]
        fn swapping_the_two_sides_mirrors_the_verdict(v in prop::collection::vec((0.5f64..2.0, 0.5f64..2.0), 1..30)) {
            let a: Vec<f64> = v.iter().map(|p| p.0).collect();
            let b: Vec<f64> = v.iter().map(|p| p.1).collect();
            let ab = paired(&a, &b).unwrap().verdict;
            let ba = paired(&b, &a).unwrap().verdict;
            let mirrored = match ab {
                Verdict::FirstBetter => Verdict::SecondBetter,
                Verdict::SecondBetter => Verdict::FirstBetter,
                Verdict::Unresolved => Verdict::Unresolved,
            };
            prop_assert_eq!(ba, mirrored);
        }
    }
}
