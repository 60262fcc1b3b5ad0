//! Figures derived from a program's characterization, shared by the
//! predictors: host load, class, probe curves as medians per level, and the
//! bandwidth pressure that stands in for the SCN paper's measured memory bandwidth,
//! and the miss-ratio curve read at the node's last level.

use cosched_model::probe::{classify, Class, ClassRule, Classification, ProbeLevel};

use crate::misses::Reuse;
use crate::Characterization;

/// One program in numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// Host load U (share of the host's cores the job keeps busy alone);
    /// 0 without a profile.
    pub host_load: f64,
    /// the SCN paper class from the probe curve; `None` without one.
    pub class: Option<Classification>,
    /// Median slowdown of the job beside DistGen, per level (sensitivity).
    pub sensitivity: Vec<(ProbeLevel, f64)>,
    /// Median slowdown of DistGen beside the job, per level (contentiousness).
    pub contentiousness: Vec<(ProbeLevel, f64)>,
    /// How much the job slows a stressor that streams from memory, minus 1,
    /// at least 0: the job's pull on memory bandwidth. the SCN paper measures
    /// `BW_mem->LLC` with uncore counters this node does not expose; a
    /// streaming stressor's slowdown beside the job rises with the same
    /// bandwidth.
    pub bandwidth: f64,
    /// System calls, context switches and bytes read or written per second,
    /// each as ln(1 + rate); 0 without a profile.
    pub ln_syscalls: f64,
    pub ln_ctx: f64,
    pub ln_io: f64,
    /// CPU seconds per wall second alone.
    pub cores_used: f64,
    /// The miss-ratio curve read at the node's last level
    /// ([`crate::misses::Reuse`]); `None` without a curve.
    pub reuse: Option<Reuse>,
}

impl Features {
    pub fn of(c: &Characterization) -> Features {
        let (host_load, ln_syscalls, ln_ctx, ln_io, cores_used) = match &c.profile {
            Some(p) => {
                let s = &p.summary;
                let sys = p.syscall_rate.or(s.syscall_rate).unwrap_or(0.0);
                (
                    s.host_load_mean,
                    sys.max(0.0).ln_1p(),
                    (s.vol_ctx_rate + s.invol_ctx_rate).max(0.0).ln_1p(),
                    (s.read_bps + s.write_bps).max(0.0).ln_1p(),
                    s.cores_used,
                )
            }
            None => (0.0, 0.0, 0.0, 0.0, 0.0),
        };
        let sensitivity: Vec<(ProbeLevel, f64)> = c.probe.iter().map(|p| (p.level, p.job_slowdown.median)).collect();
        let contentiousness: Vec<(ProbeLevel, f64)> =
            c.probe.iter().map(|p| (p.level, p.stressor_slowdown.median)).collect();
        let class = c.llc_kib.and_then(|llc| classify(&c.probe, llc, ClassRule::default()));
        let bandwidth = match c.llc_kib {
            Some(llc) => {
                let full = c.probe.iter().map(|p| p.level.intensity).fold(0.0, f64::max);
                c.probe
                    .iter()
                    .filter(|p| p.level.size_kib > llc && p.level.intensity == full)
                    .map(|p| p.stressor_slowdown.median - 1.0)
                    .fold(0.0, f64::max)
            }
            None => 0.0,
        };
        Features {
            host_load,
            class,
            sensitivity,
            contentiousness,
            bandwidth,
            ln_syscalls,
            ln_ctx,
            ln_io,
            cores_used,
            reuse: Reuse::of(c),
        }
    }

    pub fn class(&self) -> Option<Class> {
        self.class.as_ref().map(|c| c.class)
    }

    /// Sensitivity at `level`, 1 (unaffected) where the curve has no such level.
    pub fn sensitivity_at(&self, level: &ProbeLevel) -> f64 {
        self.sensitivity.iter().find(|(l, _)| l == level).map_or(1.0, |(_, s)| *s)
    }

    /// Contentiousness at `level`, 1 where the curve has no such level.
    pub fn contentiousness_at(&self, level: &ProbeLevel) -> f64 {
        self.contentiousness.iter().find(|(l, _)| l == level).map_or(1.0, |(_, s)| *s)
    }
}

/// The victim's sensitivity curve read at the co-runner's footprint
/// (the DistGen paper): the co-runner is taken for a mixture of the probe's
/// DistGen levels, each weighted by how much the co-runner slows DistGen
/// there, and the victim's slowdowns at those levels are averaged with the
/// same weights. Returns (reading - 1, the co-runner's largest contention
/// minus 1); the reading is 1 (no excess) for a co-runner that slows
/// DistGen nowhere.
pub fn probe_reading(victim: &Features, other: &Features) -> (f64, f64) {
    let weights: Vec<(ProbeLevel, f64)> =
        other.contentiousness.iter().map(|(l, c)| (*l, (c - 1.0).max(0.0))).collect();
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    let push = weights.iter().map(|(_, w)| *w).fold(0.0, f64::max);
    if total <= 0.0 {
        return (0.0, 0.0);
    }
    let reading: f64 = weights.iter().map(|(l, w)| w * (victim.sensitivity_at(l) - 1.0)).sum::<f64>() / total;
    (reading, push)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{probe_program, Shape};

    #[test]
    fn bandwidth_is_the_streaming_stressors_excess_slowdown_at_full_intensity() {
        let c = probe_program("s", Shape::S, 0.4);
        let f = Features::of(&c);
        assert!((f.bandwidth - 0.4).abs() < 1e-12, "{}", f.bandwidth);
        assert_eq!(f.class(), Some(Class::S));
    }

    #[test]
    fn the_reading_weights_the_victims_curve_by_the_co_runners_contention() {
        let lv = |size_kib| ProbeLevel { size_kib, intensity: 1.0 };
        let victim = Features {
            sensitivity: vec![(lv(1), 1.0), (lv(2), 1.5), (lv(3), 2.0)],
            ..Features::of(&probe_program("n", Shape::N, 0.0))
        };
        let other = Features {
            contentiousness: vec![(lv(1), 1.0), (lv(2), 1.1), (lv(3), 1.3)],
            ..Features::of(&probe_program("n", Shape::N, 0.0))
        };
        // Weights 0, 0.1, 0.3: (0.1 * 0.5 + 0.3 * 1.0) / 0.4 = 0.875.
        let (r, push) = probe_reading(&victim, &other);
        assert!((r - 0.875).abs() < 1e-12 && (push - 0.3).abs() < 1e-12, "{r} {push}");
        let calm = Features { contentiousness: vec![(lv(3), 0.99)], ..other };
        assert_eq!(probe_reading(&victim, &calm), (0.0, 0.0));
    }
}
