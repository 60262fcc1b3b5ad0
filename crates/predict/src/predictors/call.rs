//! `c-all`: the SX-Aurora paper's conflict score C_all = U_a + U_b (the host loads of
//! the two jobs, in percent of the host), and a slowdown read from a
//! monotone fit of the measured pairs against it. The seed correlates C_all
//! with slowdown (0.738) and cuts it at a threshold; the fit turns the same
//! score into a slowdown so it can be scored like every other predictor.

use crate::features::Features;
use crate::fit::{Band, Isotonic};
use crate::predictors::{need_pairs, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

pub(super) const C_ALL: PredictorEntry = PredictorEntry {
    name: "c-all",
    summary: "SX-Aurora co-execution paper: isotonic fit of slowdown against C_all = (U_victim + U_other) x 100 % of the host loads",
    params: &[],
    make: |_| Ok(Box::new(CAll::default())),
};

#[derive(Debug, Clone, Default)]
pub struct CAll {
    fit: Option<Isotonic>,
    band: Band,
}

impl CAll {
    /// C_all of a pair in percent: (U_a + U_b) x 100.
    pub fn c_all(a: &Characterization, b: &Characterization) -> f64 {
        (Features::of(a).host_load + Features::of(b).host_load) * 100.0
    }

    /// The fitted step function's knots (C_all, slowdown).
    pub fn knots(&self) -> &[(f64, f64)] {
        self.fit.as_ref().map_or(&[], |f| f.knots())
    }
}

impl Predictor for CAll {
    fn name(&self) -> &'static str {
        "c-all"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        let obs = observations(train);
        let points: Vec<(f64, f64)> = obs.iter().map(|(v, o, m)| (CAll::c_all(v, o), *m)).collect();
        let fit = Isotonic::fit(&points).expect("points are not empty");
        self.band = Band::of(&points.iter().map(|(x, m)| (*m, fit.at(*x))).collect::<Vec<_>>());
        self.fit = Some(fit);
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match &self.fit {
            Some(f) => self.band.around(f.at(CAll::c_all(victim, other))),
            None => Prediction::alone(),
        }
    }

    /// The SX-Aurora paper's score itself, so a conflict-aware threshold of 100 % means
    /// what it means in the seed.
    fn score(&self, a: &Characterization, b: &Characterization) -> f64 {
        CAll::c_all(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, probe_program, with_load, Shape};

    #[test]
    fn a_monotone_truth_in_c_all_is_recovered_at_every_measured_score() {
        // Slowdown 1 up to C_all = 100 %, then +1 per 100 % more.
        let truth = |c: f64| 1.0 + ((c - 100.0) / 100.0).max(0.0);
        let progs: Vec<Characterization> = [0.1, 0.3, 0.5, 0.7, 0.9]
            .iter()
            .enumerate()
            .map(|(i, &u)| with_load(probe_program(&format!("j{i}"), Shape::N, 0.0), u, 0.0))
            .collect();
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, |a, b| truth(CAll::c_all(a, b)))).unwrap();
        let mut p = CAll::default();
        p.fit(&train).unwrap();
        for a in &progs {
            for b in &progs {
                let got = p.predict_pair(a, b);
                assert!((got.slowdown - truth(CAll::c_all(a, b))).abs() < 1e-12, "{got:?}");
                assert!(got.hi - got.lo < 1e-12, "an exact fit has no error band: {got:?}");
            }
        }
        // The threshold decision is the SX-Aurora paper's: C_all against T in percent.
        assert!((p.score(&progs[4], &progs[3]) - 160.0).abs() < 1e-9);
        assert!(p.conflicts(&progs[4], &progs[3], 100.0));
        assert!(!p.conflicts(&progs[0], &progs[1], 100.0));
        assert!(!p.conflicts(&progs[4], &progs[4], f64::INFINITY));
    }
}
