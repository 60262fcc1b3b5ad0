//! The pairwise interference matrix and the rules of a pairs campaign.
//!
//! Cell (i, j) is the slowdown of job i (foreground) while job j runs beside
//! it (background). One co-run of the unordered pair {i, j} measures both
//! (i, j) and (j, i), and the diagonal (i, i) is a job beside its twin, so a
//! campaign runs n(n+1)/2 co-runs, not n^2.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Slowdowns of every measured ordered pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowdownMatrix {
    pub jobs: Vec<String>,
    /// `cells[i][j]`: slowdown of `jobs[i]` beside `jobs[j]`; `None` if not measured.
    pub cells: Vec<Vec<Option<Summary>>>,
}

impl SlowdownMatrix {
    pub fn new(jobs: Vec<String>) -> SlowdownMatrix {
        let n = jobs.len();
        SlowdownMatrix { jobs, cells: vec![vec![None; n]; n] }
    }

    pub fn get(&self, fg: usize, bg: usize) -> Option<&Summary> {
        self.cells.get(fg)?.get(bg)?.as_ref()
    }

    /// The Xeon Phi study's view: performance with background over performance alone,
    /// which is 1 / slowdown for fixed-work jobs (the interval flips too).
    pub fn ratio(&self, fg: usize, bg: usize) -> Option<Summary> {
        let s = self.get(fg, bg)?;
        Some(Summary {
            n: s.n,
            median: 1.0 / s.median,
            min: 1.0 / s.max,
            max: 1.0 / s.min,
            ci_lo: 1.0 / s.ci_hi,
            ci_hi: 1.0 / s.ci_lo,
        })
    }
}

/// The co-runs of a campaign over `n` jobs: every unordered pair, twins
/// (i, i) included, in a fixed order so a resumed campaign walks the same
/// sequence.
pub fn unordered_pairs(n: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            v.push((i, j));
        }
    }
    v
}

/// CPUs of the two jobs of a co-run: the first job gets the first `cores[0]`
/// CPUs, the second the next `cores[1]`, wrapping around when the node is too
/// small for both (then they share CPUs, and `true` says so).
pub fn assign_cpus(cores: [u32; 2], node_cpus: &[u32]) -> ([Vec<u32>; 2], bool) {
    assert!(!node_cpus.is_empty(), "a node has at least one CPU");
    let n = node_cpus.len();
    let take = |start: usize, k: u32| -> Vec<u32> {
        let k = (k.max(1) as usize).min(n);
        (0..k).map(|i| node_cpus[(start + i) % n]).collect()
    };
    let a = take(0, cores[0]);
    let b = take(a.len() % n, cores[1]);
    let overlap = a.len() + b.len() > n;
    ([a, b], overlap)
}

/// When a cell has been measured enough.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Never stop before this many repeats.
    pub min_repeats: usize,
    /// Always stop at this many repeats.
    pub max_repeats: usize,
    /// Stop once the 95% interval of each slowdown is within +- this share of
    /// its median (0.05 = +-5%).
    pub rel_halfwidth: f64,
    /// A level to settle (`pairs --settle`, e.g. the severe 1.3): a pair
    /// is not done while either slowdown's interval still holds it, so
    /// repeats go where it is unknown which side of the level a pair is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<f64>,
}

impl StopRule {
    /// Whether the slowdown samples of both jobs of a co-run suffice.
    pub fn done(&self, slowdowns: [&[f64]; 2]) -> bool {
        let n = slowdowns[0].len().min(slowdowns[1].len());
        if n >= self.max_repeats {
            return true;
        }
        if n < self.min_repeats {
            return false;
        }
        slowdowns.iter().all(|s| {
            // With fewer than 6 repeats the interval is the full range, which
            // is a conservative stand-in: it is never narrower than the CI.
            Summary::of(s).is_some_and(|x| x.rel_halfwidth() <= self.rel_halfwidth && !self.unsettled(&x))
        })
    }

    /// Whether `s`'s interval still holds the level to settle.
    pub fn unsettled(&self, s: &Summary) -> bool {
        self.settle.is_some_and(|l| s.ci_lo <= l && l <= s.ci_hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_cover_each_unordered_pair_and_twin_once() {
        assert_eq!(unordered_pairs(3), vec![(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]);
        assert_eq!(unordered_pairs(6).len(), 21);
    }

    #[test]
    fn cpus_are_disjoint_when_the_node_is_big_enough_and_shared_otherwise() {
        assert_eq!(assign_cpus([1, 1], &[0, 1]), ([vec![0], vec![1]], false));
        assert_eq!(assign_cpus([2, 1], &[0, 1]), ([vec![0, 1], vec![0]], true));
        assert_eq!(assign_cpus([1, 2], &[4, 5, 6]), ([vec![4], vec![5, 6]], false));
        assert_eq!(assign_cpus([1, 1], &[0]), ([vec![0], vec![0]], true));
    }

    #[test]
    fn ratio_view_inverts_slowdown_and_flips_the_interval() {
        let mut m = SlowdownMatrix::new(vec!["a".into(), "b".into()]);
        m.cells[0][1] = Summary::of(&[2.0, 4.0, 4.0]);
        let r = m.ratio(0, 1).unwrap();
        assert_eq!(r.median, 0.25);
        assert_eq!((r.min, r.max), (0.25, 0.5));
        assert!(m.ratio(1, 0).is_none());
    }

    #[test]
    fn stop_rule_respects_min_max_and_width() {
        let rule = StopRule { min_repeats: 3, max_repeats: 5, rel_halfwidth: 0.05, settle: None };
        let tight = [1.50, 1.51, 1.52];
        let wide = [1.0, 1.5, 2.0];
        assert!(!rule.done([&tight[..2], &tight[..2]]), "below min");
        assert!(rule.done([&tight, &tight]));
        assert!(!rule.done([&tight, &wide]), "one job still noisy");
        let five = [1.0, 1.5, 2.0, 1.0, 2.0];
        assert!(rule.done([&five, &five]), "max reached");
    }

    #[test]
    fn a_level_to_settle_keeps_a_pair_going_while_its_interval_holds_the_level() {
        let rule = StopRule { min_repeats: 3, max_repeats: 5, rel_halfwidth: 0.05, settle: Some(1.3) };
        // Within +-5 % of 1.30 but across the level: not done, until max.
        let across = [1.27, 1.30, 1.33];
        let below = [1.20, 1.21, 1.22];
        assert!(StopRule { settle: None, ..rule }.done([&across, &below]), "without a level it is narrow enough");
        assert!(!rule.done([&across, &below]));
        assert!(rule.done([&below, &[1.40, 1.41, 1.42]]), "both clear of 1.3 on either side");
        assert!(rule.done([&[1.27, 1.30, 1.33, 1.29, 1.31], &[1.20, 1.21, 1.22, 1.20, 1.21]]), "max reached");
        // Clear of the level but still wide: the width rule still holds it.
        assert!(!rule.done([&[1.4, 1.6, 1.8], &below]));
    }
}

/// Builds a matrix from per-repeat slowdowns: `samples` yields
/// (foreground index, background index, slowdown) for each measurement.
pub fn matrix_from_samples(
    jobs: Vec<String>,
    samples: impl IntoIterator<Item = (usize, usize, f64)>,
) -> SlowdownMatrix {
    let n = jobs.len();
    let mut lists = vec![vec![Vec::new(); n]; n];
    for (i, j, s) in samples {
        if i < n && j < n {
            lists[i][j].push(s);
        }
    }
    let mut m = SlowdownMatrix::new(jobs);
    for (row, samples) in m.cells.iter_mut().zip(&lists) {
        for (cell, s) in row.iter_mut().zip(samples) {
            *cell = Summary::of(s);
        }
    }
    m
}

#[cfg(test)]
mod from_samples_tests {
    use super::*;

    #[test]
    fn samples_land_in_their_cells() {
        let m = matrix_from_samples(
            vec!["a".into(), "b".into()],
            [(0, 1, 1.2), (0, 1, 1.4), (1, 0, 1.0), (1, 1, 1.5)],
        );
        assert!((m.get(0, 1).unwrap().median - 1.3).abs() < 1e-12);
        assert_eq!(m.get(1, 0).unwrap().n, 1);
        assert!(m.get(0, 0).is_none());
        assert_eq!(m.get(1, 1).unwrap().median, 1.5);
    }
}
