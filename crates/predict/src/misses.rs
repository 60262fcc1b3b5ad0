//! Figures from a program's miss-ratio curve (`cosched profile
//! --miss-curve`: its data miss ratio at several simulated last-level
//! sizes), the DistGen paper's reuse distances as this node can have them.
//! An access misses an LRU cache of size S exactly when its reuse distance
//! exceeds S, so the curve read at a size is the share of accesses whose
//! reuse distance lies beyond it, and the difference between two sizes is
//! the share whose distance lies between them: the accesses a program loses
//! when a co-runner leaves it only the smaller of the two.
//!
//! The curve is sampled at a few sizes (powers of two, usually), so it is
//! read between them linearly in log size, the axis the PinDist
//! histograms use; outside the sampled sizes it is held at its end values,
//! since nothing says how it goes on.

use cosched_model::profile::MissPoint;

use crate::Characterization;

/// A miss-ratio curve made fit to read: ascending in size, one point a
/// size, and never rising with size.
#[derive(Debug, Clone, PartialEq)]
pub struct MissCurve {
    /// (log2 of the size in KiB, miss ratio).
    points: Vec<(f64, f64)>,
    /// Data references of one run (the program's fixed work).
    refs: u64,
}

/// Within this many of the curve's total fall (or half a percentage
/// point, whichever is larger) a miss ratio counts as the curve's floor:
/// cachegrind's ratios wobble by a few hundredths of a point between sizes
/// that hold the whole footprint (the `compute` kernel: 1.60 % to 1.61 %).
const FLOOR_SHARE: f64 = 0.1;
const FLOOR_MIN: f64 = 0.005;

impl MissCurve {
    /// `None` for an empty curve (not measured). A larger LRU cache holds
    /// everything a smaller one holds, so a ratio that rises with size is
    /// the simulator's set-associative noise, and each ratio is taken as
    /// at most those of the smaller sizes.
    pub fn new(points: &[MissPoint]) -> Option<MissCurve> {
        let mut sorted: Vec<&MissPoint> = points.iter().filter(|p| p.ll_kib > 0 && p.ratio.is_finite()).collect();
        sorted.sort_by_key(|p| p.ll_kib);
        sorted.dedup_by_key(|p| p.ll_kib);
        let refs = sorted.iter().map(|p| p.refs).max()?;
        let mut low = f64::INFINITY;
        let points = sorted
            .iter()
            .map(|p| {
                low = low.min(p.ratio.clamp(0.0, 1.0));
                ((p.ll_kib as f64).log2(), low)
            })
            .collect();
        Some(MissCurve { points, refs })
    }

    /// The miss ratio with a last level of `kib`: between two sampled
    /// sizes linear in log size, beyond the ends the end's ratio.
    pub fn miss_at(&self, kib: f64) -> f64 {
        let x = kib.max(f64::MIN_POSITIVE).log2();
        let (first, last) = (self.points[0], self.points[self.points.len() - 1]);
        if x <= first.0 {
            return first.1;
        }
        if x >= last.0 {
            return last.1;
        }
        let i = self.points.iter().position(|p| p.0 >= x).expect("x lies below the last size");
        let ((x0, y0), (x1, y1)) = (self.points[i - 1], self.points[i]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }

    /// The smallest sampled size whose miss ratio has fallen to the
    /// curve's floor: the program's footprint as far as the sizes tell (a
    /// curve flat from its first size says at most that size; one still
    /// falling at its last says at least the last).
    pub fn footprint_kib(&self) -> u64 {
        let floor = self.points[self.points.len() - 1].1;
        let fall = self.points[0].1 - floor;
        let near = (FLOOR_SHARE * fall).max(FLOOR_MIN);
        let x = self.points.iter().find(|p| p.1 - floor <= near).map_or(self.points[self.points.len() - 1].0, |p| p.0);
        x.exp2().round() as u64
    }

    /// Data references of one run.
    pub fn refs(&self) -> u64 {
        self.refs
    }
}

/// A program's curve read at its node's last-level cache: the figures the
/// `reuse` predictor and the feature tables take from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reuse {
    pub curve: MissCurve,
    /// The last-level cache (KiB) the figures are read at: the node's.
    pub llc_kib: u64,
    /// Miss ratio with the whole last level.
    pub miss_at_llc: f64,
    /// [`MissCurve::footprint_kib`].
    pub footprint_kib: u64,
    /// Miss ratio at half the last level minus at all of it: the share of
    /// references whose reuse distance lies between LLC/2 and LLC, lost
    /// when a co-runner takes half the cache.
    pub half_drop: f64,
    /// Data references per second alone, in billions: the references of a
    /// run over its solo time (0 without a solo time).
    pub grefs_per_s: f64,
}

impl Reuse {
    /// The figures of `c`'s curve at `c`'s node's last level: `None` when
    /// it has no curve or no last-level size is known (absent, not zero).
    pub fn of(c: &Characterization) -> Option<Reuse> {
        let profile = c.profile.as_ref()?;
        let curve = MissCurve::new(&profile.miss_curve)?;
        let llc_kib = c.llc_kib.filter(|&k| k > 0)?;
        let solo = profile.solo_s.median;
        let grefs_per_s = if solo > 0.0 { curve.refs() as f64 / solo / 1e9 } else { 0.0 };
        let llc = llc_kib as f64;
        Some(Reuse {
            miss_at_llc: curve.miss_at(llc),
            footprint_kib: curve.footprint_kib(),
            half_drop: curve.miss_at(llc / 2.0) - curve.miss_at(llc),
            grefs_per_s,
            llc_kib,
            curve,
        })
    }

    /// The last level left to this program beside a co-runner of
    /// `footprint_kib`: the co-runner takes its footprint, but at most
    /// half (two programs that both overflow the cache end up sharing it).
    pub fn kept_kib(&self, footprint_kib: u64) -> f64 {
        let llc = self.llc_kib as f64;
        llc - (footprint_kib as f64).min(llc / 2.0)
    }

    /// Billions of last-level misses per second alone this program would
    /// make with `kib` of last level.
    pub fn gmisses_per_s(&self, kib: f64) -> f64 {
        self.curve.miss_at(kib) * self.grefs_per_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{with_curve, with_load};

    fn pt(ll_kib: u64, ratio: f64) -> MissPoint {
        MissPoint { ll_kib, refs: 1000, misses: (ratio * 1000.0) as u64, ratio }
    }

    #[test]
    fn the_curve_is_read_linearly_in_log_size_and_held_beyond_its_ends() {
        let c = MissCurve::new(&[pt(1024, 0.4), pt(256, 0.5), pt(16384, 0.1)]).unwrap();
        assert_eq!(c.miss_at(256.0), 0.5);
        assert_eq!(c.miss_at(64.0), 0.5, "below the smallest size: its ratio");
        assert_eq!(c.miss_at(65536.0), 0.1, "beyond the largest: its ratio");
        // 512 KiB is halfway from 256 to 1024 in log size.
        assert!((c.miss_at(512.0) - 0.45).abs() < 1e-12);
        // 4096 is halfway from 1024 to 16384: (0.4 + 0.1) / 2.
        assert!((c.miss_at(4096.0) - 0.25).abs() < 1e-12);
        assert!(MissCurve::new(&[]).is_none());
    }

    #[test]
    fn a_ratio_that_rises_with_size_is_held_at_the_smaller_sizes_ratio() {
        let c = MissCurve::new(&[pt(256, 0.0170), pt(1024, 0.0160), pt(4096, 0.0161), pt(16384, 0.0160)]).unwrap();
        assert_eq!(c.miss_at(4096.0), 0.0160);
    }

    #[test]
    fn the_footprint_is_the_first_size_at_the_floor() {
        // The measured curves of docs/papers.md (DistGen section).
        let curve = |r: [f64; 5]| {
            let sizes = [256, 1024, 4096, 16384, 65536];
            MissCurve::new(&sizes.iter().zip(r).map(|(&s, r)| pt(s, r / 100.0)).collect::<Vec<_>>()).unwrap()
        };
        assert_eq!(curve([1.70, 1.60, 1.60, 1.61, 1.60]).footprint_kib(), 256, "compute: flat within half a point");
        assert_eq!(curve([12.22, 12.21, 0.66, 0.66, 0.66]).footprint_kib(), 4096, "2 MiB sweeps");
        assert_eq!(curve([22.44, 22.43, 21.97, 1.95, 1.95]).footprint_kib(), 16384, "triad over 6 MiB");
        assert_eq!(curve([65.26, 61.99, 60.48, 59.35, 7.41]).footprint_kib(), 65536, "chase over 32 MiB");
        assert_eq!(curve([50.0, 40.0, 30.0, 20.0, 10.0]).footprint_kib(), 65536, "still falling: at least the last size");
    }

    #[test]
    fn figures_at_the_nodes_last_level_are_absent_without_a_curve_or_a_size() {
        // 8 MiB of last level; 2e9 references in a 2 s run: 1 billion a second.
        let prog = |points: Vec<MissPoint>, llc| {
            let mut c = with_curve(with_load(crate::testdata::probe_program("p", crate::testdata::Shape::N, 0.0), 0.5, 0.0), points, 2_000_000_000, 2.0);
            c.llc_kib = llc;
            c
        };
        let r = Reuse::of(&prog(vec![pt(1024, 0.5), pt(4096, 0.3), pt(16384, 0.1)], Some(8192))).unwrap();
        assert!((r.miss_at_llc - 0.2).abs() < 1e-12, "{}", r.miss_at_llc);
        assert!((r.half_drop - 0.1).abs() < 1e-12, "0.3 at 4 MiB, 0.2 at 8 MiB: {}", r.half_drop);
        assert_eq!(r.footprint_kib, 16384);
        assert!((r.grefs_per_s - 1.0).abs() < 1e-12);
        assert_eq!(r.kept_kib(1024), 7168.0);
        assert_eq!(r.kept_kib(65536), 4096.0, "a co-runner takes at most half");
        assert!((r.gmisses_per_s(4096.0) - 0.3).abs() < 1e-12);
        assert_eq!(Reuse::of(&prog(Vec::new(), Some(8192))), None, "no curve");
        assert_eq!(Reuse::of(&prog(vec![pt(1024, 0.5)], None)), None, "no last-level size");
        let mut bare = prog(vec![pt(1024, 0.5)], Some(8192));
        bare.profile = None;
        assert_eq!(Reuse::of(&bare), None, "no profile");
    }
}
