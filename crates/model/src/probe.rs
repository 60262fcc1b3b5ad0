//! Probing a job against the DistGen stressor, and classes N / C / S.
//!
//! A probe co-runs the job with `distgen` streaming over one working-set size
//! at one intensity, for a ladder of sizes from private-cache-resident to far
//! beyond the LLC (the DistGen paper). The job's slowdown at each point is its
//! **sensitivity** curve; the stressor's slowdown is the job's
//! **contentiousness** curve.
//!
//! Classes follow the SCN paper: N keeps its activity in the core and private
//! caches, C relies on the shared LLC, S streams through memory. the SCN paper
//! decides them from per-level cache bandwidths, which need hardware
//! counters this kind of node does not have; the DistGen paper shows the same split in
//! probe curves: an LLC-reliant job degrades as soon as the stressor
//! occupies the LLC, a streaming job only once the stressor consumes memory
//! bandwidth, and a core-bound job not at all. [`classify`] applies that rule
//! to the measured curves.
//!
//! Sensitivity is taken relative to the smallest rung of the ladder, where
//! the stressor stays in its private cache: whatever slows the job there
//! (two vCPUs that are SMT siblings on the host, a shared clock, time
//! slicing) is not contention for the shared cache or memory, and would
//! otherwise make every job look cache-sensitive on such a node. A baseline
//! below 1 (the job ran faster) is noise, not a physical effect, so the
//! divisor is never below 1.
//!
//! Only stressor working sets of at most half the LLC count as "inside the
//! LLC": a working set the size of the whole LLC cannot stay resident beside
//! the job's own data (and, on a VM, other tenants'), so it already streams
//! from memory and would make a streaming job look LLC-sensitive. Rungs in
//! (LLC/2, LLC] are transitional and decide nothing.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// One rung of the probe ladder.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeLevel {
    /// DistGen working set (reuse distance), KiB.
    pub size_kib: u64,
    /// Share of time DistGen spends accessing memory.
    pub intensity: f64,
}

/// The default ladder for a node whose private (L2) cache and LLC have the
/// given sizes: inside L2, a quarter, half and all of the LLC, and two sizes
/// far beyond it; each at full and half intensity.
pub fn default_ladder(l2_kib: u64, llc_kib: u64) -> Vec<ProbeLevel> {
    let l2 = l2_kib.max(64);
    let llc = llc_kib.max(l2 * 2);
    let mut sizes = vec![l2 / 2, llc / 4, llc / 2, llc, llc * 4, llc * 16];
    sizes.sort_unstable();
    sizes.dedup();
    let mut v = Vec::new();
    for intensity in [1.0, 0.5] {
        for &size_kib in &sizes {
            v.push(ProbeLevel { size_kib, intensity });
        }
    }
    v
}

/// One measured probe point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePoint {
    pub level: ProbeLevel,
    /// Slowdown of the job beside the stressor (sensitivity).
    pub job_slowdown: Summary,
    /// Slowdown of the stressor beside the job (contentiousness).
    pub stressor_slowdown: Summary,
}

/// The three resource-centric classes of the SCN paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// Core-bound: activity within the core and private caches.
    N,
    /// LLC-sensitive: relies on reuse in the shared last-level cache.
    C,
    /// Streaming: no reuse at any cache level, pressure on memory bandwidth.
    S,
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Class::N => "N",
            Class::C => "C",
            Class::S => "S",
        })
    }
}

/// Thresholds of [`classify`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassRule {
    /// A slowdown above this counts as significant (1.10 = 10%).
    pub significant: f64,
}

impl Default for ClassRule {
    fn default() -> Self {
        ClassRule { significant: 1.10 }
    }
}

/// A class with the measured reason for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    pub class: Class,
    /// Slowdown beside the stressor at the smallest rung (private cache):
    /// the baseline the other rungs are divided by.
    pub baseline: f64,
    /// Largest median sensitivity, relative to the baseline, with the
    /// stressor inside the LLC.
    pub sens_llc: f64,
    /// Largest median sensitivity, relative to the baseline, with the
    /// stressor beyond the LLC.
    pub sens_mem: f64,
    /// Largest median contentiousness over the ladder.
    pub cont_max: f64,
    pub reason: String,
}

/// Classifies from a probe curve. `llc_kib` splits the ladder into stressor
/// sizes that fit the LLC and sizes that stream from memory. `None` when the
/// curve has no point beyond the LLC or none besides the baseline.
pub fn classify(points: &[ProbePoint], llc_kib: u64, rule: ClassRule) -> Option<Classification> {
    // Baseline per intensity: the smallest working set measured at it.
    let baseline_of = |intensity: f64| {
        points
            .iter()
            .filter(|p| p.level.intensity == intensity)
            .min_by_key(|p| p.level.size_kib)
            .map(|p| (p.level.size_kib, p.job_slowdown.median.max(1.0)))
    };
    let mut sens_llc: Option<f64> = None;
    let mut sens_mem: Option<f64> = None;
    let mut baseline_max: f64 = 0.0;
    for p in points {
        let (base_size, base) = baseline_of(p.level.intensity)?;
        baseline_max = baseline_max.max(base);
        if p.level.size_kib == base_size {
            continue;
        }
        let rel = p.job_slowdown.median / base;
        let slot = if p.level.size_kib * 2 <= llc_kib {
            &mut sens_llc
        } else if p.level.size_kib > llc_kib {
            &mut sens_mem
        } else {
            continue;
        };
        *slot = Some(slot.map_or(rel, |m| m.max(rel)));
    }
    let sens_mem = sens_mem?;
    // A ladder whose only in-LLC rung is the baseline says nothing about the LLC.
    let sens_llc = sens_llc.unwrap_or(1.0);
    let cont_max = points.iter().map(|p| p.stressor_slowdown.median).fold(f64::NAN, f64::max);
    let sig = rule.significant;
    let (class, why) = if sens_llc > sig {
        (Class::C, format!("slowed {sens_llc:.2}x already by a stressor inside the LLC (> {sig:.2})"))
    } else if sens_mem > sig {
        (
            Class::S,
            format!("unmoved inside the LLC (max {sens_llc:.2}x) but slowed {sens_mem:.2}x once the stressor streams from memory"),
        )
    } else {
        (
            Class::N,
            format!("never slowed more than {:.2}x by the stressor's cache or memory use (<= {sig:.2})", sens_llc.max(sens_mem)),
        )
    };
    let base_note = if baseline_max > sig {
        format!("; relative to {baseline_max:.2}x beside a stressor in private cache (core sharing, not cache)")
    } else {
        String::new()
    };
    Some(Classification {
        class,
        baseline: baseline_max,
        sens_llc,
        sens_mem,
        cont_max,
        reason: format!("{why}{base_note}; slows the stressor up to {cont_max:.2}x"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(size_kib: u64, job: f64, stressor: f64) -> ProbePoint {
        ProbePoint {
            level: ProbeLevel { size_kib, intensity: 1.0 },
            job_slowdown: Summary::of(&[job]).unwrap(),
            stressor_slowdown: Summary::of(&[stressor]).unwrap(),
        }
    }

    #[test]
    fn ladder_spans_private_cache_to_beyond_the_llc() {
        let l = default_ladder(512, 32768);
        let sizes: Vec<u64> = l.iter().filter(|p| p.intensity == 1.0).map(|p| p.size_kib).collect();
        assert_eq!(sizes, vec![256, 8192, 16384, 32768, 131072, 524288]);
        assert_eq!(l.len(), 12);
    }

    #[test]
    fn the_three_classes_follow_where_sensitivity_rises() {
        let llc = 32768;
        let n = [pt(256, 1.01, 1.0), pt(16384, 1.03, 1.02), pt(131072, 1.05, 1.04)];
        let c = [pt(256, 1.02, 1.0), pt(16384, 1.40, 1.2), pt(131072, 1.6, 1.5)];
        let s = [pt(256, 1.0, 1.0), pt(16384, 1.04, 1.3), pt(131072, 1.45, 1.6)];
        assert_eq!(classify(&n, llc, ClassRule::default()).unwrap().class, Class::N);
        assert_eq!(classify(&c, llc, ClassRule::default()).unwrap().class, Class::C);
        let cs = classify(&s, llc, ClassRule::default()).unwrap();
        assert_eq!(cs.class, Class::S);
        assert_eq!((cs.baseline, cs.sens_llc, cs.sens_mem, cs.cont_max), (1.0, 1.04, 1.45, 1.6));
        assert!(cs.reason.contains("1.45"), "{}", cs.reason);
    }

    #[test]
    fn core_sharing_seen_at_the_baseline_does_not_make_a_job_cache_sensitive() {
        // Slowed 1.4x by any busy neighbour (SMT siblings), no more by cache
        // or memory pressure: class N, with the baseline named.
        let smt = [pt(256, 1.40, 1.3), pt(16384, 1.42, 1.3), pt(131072, 1.44, 1.3)];
        let c = classify(&smt, 32768, ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::N, "{}", c.reason);
        assert_eq!(c.baseline, 1.40);
        assert!(c.reason.contains("core sharing"), "{}", c.reason);
    }

    #[test]
    fn an_llc_sized_stressor_decides_nothing_and_a_baseline_speedup_is_not_divided_out() {
        // Streaming job measured on this VM: slowed at the LLC-sized rung
        // (the stressor spills to memory there) and beyond; faster than alone
        // beside the private-cache stressor.
        let stream = [
            pt(256, 0.957, 1.07),
            pt(8192, 0.931, 0.98),
            pt(16384, 1.065, 0.91),
            pt(32768, 1.520, 1.16),
            pt(131072, 1.259, 1.33),
            pt(524288, 1.323, 1.04),
        ];
        let c = classify(&stream, 32768, ClassRule::default()).unwrap();
        assert_eq!(c.class, Class::S, "{}", c.reason);
        assert_eq!((c.baseline, c.sens_llc, c.sens_mem), (1.0, 1.065, 1.323));
    }

    #[test]
    fn a_curve_missing_one_side_of_the_llc_cannot_be_classified() {
        assert!(classify(&[pt(256, 1.0, 1.0)], 32768, ClassRule::default()).is_none());
    }
}
