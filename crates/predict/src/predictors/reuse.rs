//! `reuse`: the DistGen paper's reasoning on reuse distances, read from
//! each program's miss-ratio curve (`cosched profile --miss-curve`,
//! [`crate::misses`]) instead of its slowdown beside a stressor. A program
//! whose reuse distances lie between what a co-runner leaves it of the
//! last-level cache and the whole cache hits alone and misses beside the
//! co-runner. Two terms, each the victim's figure times the co-runner's:
//!
//! - `lost`: the co-runner takes its footprint of the last level, at most
//!   half (two programs that both overflow it end up sharing it), and the
//!   victim makes `(m_v(kept) - m_v(LLC)) x refs_v / s` more misses a
//!   second (billions) than alone;
//! - `traffic`: both programs' misses a second (billions) with what each
//!   keeps, multiplied: two programs that stream from memory beside each
//!   other share its bandwidth, which no cache size cures.
//!
//! `s = 1 + a + b lost + c traffic`, `b` and `c` held at or above zero by
//! the non-negative least squares `mechanism` uses, so a co-runner of a
//! larger footprint never predicts less harm. A pair either of whose
//! programs has no curve reads 0 on both terms (nothing is known of how
//! they share the cache): `1 + a`.

use super::mechanism::nonnegative;
use crate::fit::{Band, Linear};
use crate::misses::Reuse;
use crate::predictors::{need_miss_curves, need_pairs, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};

use super::PredictorEntry;

pub(super) const REUSE: PredictorEntry = PredictorEntry {
    name: "reuse",
    summary: "Weidendorfer and Breitbart's reuse distances as miss-ratio curves (profile --miss-curve): the misses a victim gains when the co-runner's footprint takes its share of the last level, and both jobs' memory traffic, by a non-negative line",
    params: &[],
    make: |_| Ok(Box::new(ReuseDistance::default())),
};

#[derive(Debug, Clone, Default)]
pub struct ReuseDistance {
    line: Option<Linear>,
    band: Band,
}

/// `[lost, traffic]` of `victim` beside `other` (module doc); zeros where
/// either has no curve read at a last-level size.
pub fn terms(victim: &Characterization, other: &Characterization) -> [f64; 2] {
    let (Some(v), Some(o)) = (Reuse::of(victim), Reuse::of(other)) else { return [0.0, 0.0] };
    let kept_v = v.kept_kib(o.footprint_kib);
    let kept_o = o.kept_kib(v.footprint_kib);
    let lost = (v.curve.miss_at(kept_v) - v.miss_at_llc).max(0.0) * v.grefs_per_s;
    [lost, v.gmisses_per_s(kept_v) * o.gmisses_per_s(kept_o)]
}

impl ReuseDistance {
    /// (a, b, c) of the fitted line.
    pub fn coefficients(&self) -> Option<(f64, f64, f64)> {
        self.line.as_ref().map(|l| (l.intercept, l.coef[0], l.coef[1]))
    }
}

impl Predictor for ReuseDistance {
    fn name(&self) -> &'static str {
        "reuse"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        need_miss_curves(self.name(), train)?;
        let obs = observations(train);
        let xs: Vec<Vec<f64>> = obs.iter().map(|(v, o, _)| terms(v, o).to_vec()).collect();
        // Fitted on pairs of which none has both curves, the line would be
        // one flat constant that looks like a model.
        if xs.iter().all(|x| x.iter().all(|t| *t == 0.0)) {
            return Err(PredictError::Fit {
                name: self.name().into(),
                why: "no measured pair of two programs that both have a miss-ratio curve".into(),
            });
        }
        let ys: Vec<f64> = obs.iter().map(|o| o.2 - 1.0).collect();
        let line = nonnegative(&xs, &ys).ok_or_else(|| PredictError::Fit { name: self.name().into(), why: "singular system".into() })?;
        self.band = Band::of(&obs.iter().zip(&xs).map(|((_, _, m), x)| (*m, 1.0 + line.at(x))).collect::<Vec<_>>());
        self.line = Some(line);
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match &self.line {
            Some(l) => self.band.around((1.0 + l.at(&terms(victim, other))).max(0.05)),
            None => Prediction::alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, probe_program, with_curve, with_load, Shape};
    use cosched_model::profile::MissPoint;
    use proptest::prelude::*;

    const SIZES: [u64; 4] = [1024, 4096, 8192, 32768];

    /// A program on a node of 8 MiB of last level, with `ratios` at
    /// [`SIZES`] and `refs` data references in a run of `solo_s`.
    fn prog(name: &str, ratios: [f64; 4], refs: u64, solo_s: f64) -> Characterization {
        let points = SIZES.iter().zip(ratios).map(|(&ll_kib, ratio)| MissPoint { ll_kib, refs, misses: 0, ratio }).collect();
        let mut c = with_curve(with_load(probe_program(name, Shape::N, 0.0), 0.5, 0.0), points, refs, solo_s);
        c.llc_kib = Some(8192);
        c
    }

    /// Small (flat: its footprint the smallest size, 1 MiB), mid (its
    /// reuse distances between 4 and 8 MiB) and large (streaming past
    /// 8 MiB, half as many references a second).
    fn three() -> Vec<Characterization> {
        vec![
            prog("s", [0.01; 4], 1_000_000_000, 1.0),
            prog("m", [0.5, 0.5, 0.1, 0.1], 1_000_000_000, 1.0),
            prog("l", [0.6, 0.6, 0.6, 0.2], 1_000_000_000, 2.0),
        ]
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_rule_on_three_programs_by_hand() {
        let p = three();
        let (s, m, l) = (&p[0], &p[1], &p[2]);
        // Footprints: s 1024 (flat), m 8192, l 32768. Beside s, a victim
        // keeps 8192 - 1024 = 7168 KiB; beside m or l, half: 4096.
        // m at 7168 KiB: 0.5 at 4096, 0.1 at 8192, log2(7168 / 4096) = log2 1.75 of the way.
        let t = 1.75f64.log2();
        let m_7168 = 0.5 - 0.4 * t;
        let [lost, traffic] = terms(m, s);
        assert!(close(lost, m_7168 - 0.1), "{lost}");
        // s keeps 4096 beside m's 8 MiB: 0.01 x 1 G refs/s.
        assert!(close(traffic, m_7168 * 0.01), "{traffic}");
        // m beside l keeps 4096: 0.5 against 0.1 alone; l keeps 4096 too:
        // 0.6 x 0.5 G refs/s.
        let [lost, traffic] = terms(m, l);
        assert!(close(lost, 0.4) && close(traffic, 0.5 * 0.3), "{lost} {traffic}");
        // l loses nothing (it misses 0.6 with all 8 MiB already).
        let [lost, traffic] = terms(l, m);
        assert!(close(lost, 0.0) && close(traffic, 0.3 * 0.5), "{lost} {traffic}");
        let [lost, traffic] = terms(s, s);
        assert!(close(lost, 0.0) && close(traffic, 0.01 * 0.01), "{lost} {traffic}");

        // Measured exactly by s = 1.02 + 0.5 lost + 2 traffic: the fit
        // recovers the line, and m beside l is 1.02 + 0.2 + 0.3.
        let truth = |v: &Characterization, o: &Characterization| {
            let [x1, x2] = terms(v, o);
            1.02 + 0.5 * x1 + 2.0 * x2
        };
        let train = TrainingSet::new(p.clone(), all_pairs(&p, truth)).unwrap();
        let mut r = ReuseDistance::default();
        r.fit(&train).unwrap();
        let (a, b, c) = r.coefficients().unwrap();
        assert!(close(a, 0.02) && close(b, 0.5) && close(c, 2.0), "{a} {b} {c}");
        assert!(close(r.predict_pair(m, l).slowdown, 1.52), "{:?}", r.predict_pair(m, l));
        // A program without a curve: nothing known, the intercept.
        let bare = with_load(probe_program("bare", Shape::N, 0.0), 0.5, 0.0);
        assert!(close(r.predict_pair(&bare, m).slowdown, 1.02) && close(r.predict_pair(m, &bare).slowdown, 1.02));
    }

    #[test]
    fn fitting_is_refused_without_curves_or_a_pair_of_two_programs_with_them() {
        let bare: Vec<Characterization> =
            ["a", "b"].iter().map(|n| with_load(probe_program(n, Shape::C, 0.2), 0.5, 0.0)).collect();
        let train = TrainingSet::new(bare.clone(), all_pairs(&bare, |_, _| 1.1)).unwrap();
        let err = ReuseDistance::default().fit(&train).unwrap_err().to_string();
        assert!(err.contains("no program has a miss-ratio curve") && err.contains("--miss-curve"), "{err}");
        // One program with a curve, but its only pairs are beside one without.
        let one = vec![bare[0].clone(), prog("m", [0.5, 0.5, 0.1, 0.1], 1_000_000_000, 1.0)];
        let pairs = vec![crate::testdata::pair("a", "m", 1.1), crate::testdata::pair("m", "a", 1.2)];
        let err = ReuseDistance::default().fit(&TrainingSet::new(one.clone(), pairs).unwrap()).unwrap_err().to_string();
        assert!(err.contains("no measured pair of two programs"), "{err}");
        // Curves without a last-level size to read them at.
        let mut lost = one;
        lost[1].llc_kib = None;
        let pairs = vec![crate::testdata::pair("m", "m", 1.1)];
        let err = ReuseDistance::default().fit(&TrainingSet::new(lost, pairs).unwrap()).unwrap_err().to_string();
        assert!(err.contains("last-level"), "{err}");
    }

    proptest! {
        #[test]
        fn a_larger_co_runner_footprint_never_predicts_less_harm(
            ratios in prop::array::uniform4(0.0..1.0f64),
            vrefs in 1u64..4_000_000_000,
            high in 0.0..1.0f64,
            low_share in 0.0..1.0f64,
            orefs in 1u64..4_000_000_000,
            f1 in 0usize..4,
            f2 in 0usize..4,
        ) {
            let p = three();
            let truth = |v: &Characterization, o: &Characterization| {
                let [x1, x2] = terms(v, o);
                1.02 + 0.5 * x1 + 2.0 * x2
            };
            let mut r = ReuseDistance::default();
            r.fit(&TrainingSet::new(p.clone(), all_pairs(&p, truth)).unwrap()).unwrap();
            let victim = prog("v", ratios, vrefs, 1.0);
            // A co-runner that misses `high` below its footprint (the
            // `f`-th size) and `high x low_share` from there on.
            let other = |f: usize| {
                let mut step = [high; 4];
                for x in step.iter_mut().skip(f) {
                    *x = high * low_share;
                }
                prog("o", step, orefs, 1.0)
            };
            let (small, large) = (f1.min(f2), f1.max(f2));
            let (a, b) = (r.predict_pair(&victim, &other(small)), r.predict_pair(&victim, &other(large)));
            prop_assert!(b.slowdown >= a.slowdown - 1e-12, "footprint at size {small}: {a:?}; at {large}: {b:?}");
            let (ta, tb) = (terms(&victim, &other(small)), terms(&victim, &other(large)));
            prop_assert!(tb[0] >= ta[0] - 1e-12 && tb[1] >= ta[1] - 1e-12, "{ta:?} {tb:?}");
        }
    }
}
