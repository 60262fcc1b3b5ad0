//! `probe`: the DistGen paper predicts a job's slowdown beside a co-runner from
//! its slowdown beside DistGen. The co-runner is placed on the DistGen
//! ladder by its own probe: it is taken for a mixture of the ladder's
//! levels, weighted by how much it slows DistGen at each
//! ([`crate::features::probe_reading`]), and the victim's sensitivity curve
//! is read there: `R - 1`. How hard the co-runner pushes compared with
//! DistGen is its largest contention `P`. The slowdown is then the line
//!
//! `s = 1 + a + b * (R - 1) + c * (R - 1) * P`
//!
//! fitted by least squares on the training pairs: the reading comes from
//! the curves, the line only maps the stressor's scale onto real co-runners.

use crate::features::{probe_reading, Features};
use crate::fit::{Band, Linear};
use crate::predictors::{need_pairs, need_probes, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

pub(super) const PROBE: PredictorEntry = PredictorEntry {
    name: "probe",
    summary: "Weidendorfer and Breitbart: the victim's probe sensitivity read at the co-runner's contentiousness, calibrated by a line",
    params: &[],
    make: |_| Ok(Box::new(ProbeCurve::default())),
};

#[derive(Debug, Clone, Default)]
pub struct ProbeCurve {
    line: Option<Linear>,
    band: Band,
}

fn regressors(victim: &Characterization, other: &Characterization) -> Vec<f64> {
    let (r, push) = probe_reading(&Features::of(victim), &Features::of(other));
    vec![r, r * push]
}

impl ProbeCurve {
    /// (a, b, c) of the fitted line.
    pub fn coefficients(&self) -> Option<(f64, f64, f64)> {
        self.line.as_ref().map(|l| (l.intercept, l.coef[0], l.coef[1]))
    }
}

impl Predictor for ProbeCurve {
    fn name(&self) -> &'static str {
        "probe"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        need_probes(self.name(), train)?;
        let obs = observations(train);
        let xs: Vec<Vec<f64>> = obs.iter().map(|(v, o, _)| regressors(v, o)).collect();
        let ys: Vec<f64> = obs.iter().map(|o| o.2 - 1.0).collect();
        // Least squares where the system allows it; a touch of ridge where
        // the two regressors are collinear (e.g. every co-runner pushes
        // equally hard).
        let line = Linear::ridge(&xs, &ys, 0.0)
            .or_else(|| Linear::ridge(&xs, &ys, 1e-6))
            .ok_or_else(|| PredictError::Fit { name: self.name().into(), why: "singular system".into() })?;
        self.band = Band::of(&obs.iter().zip(&xs).map(|((_, _, m), x)| (*m, 1.0 + line.at(x))).collect::<Vec<_>>());
        self.line = Some(line);
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match &self.line {
            Some(l) => self.band.around((1.0 + l.at(&regressors(victim, other))).max(0.05)),
            None => Prediction::alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, curve_program};

    #[test]
    fn a_line_in_the_curve_reading_is_recovered() {
        let progs = vec![
            curve_program("a", [1.0, 1.0, 1.0, 1.1, 1.2, 1.3], [1.0, 1.0, 1.0, 1.1, 1.4, 1.5]),
            curve_program("b", [1.0, 1.3, 1.4, 1.5, 1.6, 1.6], [1.0, 1.2, 1.2, 1.2, 1.1, 1.1]),
            curve_program("c", [1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.05, 1.05]),
            curve_program("d", [1.0, 1.1, 1.1, 1.2, 1.9, 2.0], [1.0, 1.0, 1.1, 1.3, 1.8, 1.9]),
        ];
        let truth = |v: &Characterization, o: &Characterization| {
            let x = regressors(v, o);
            1.0 + 0.02 + 0.7 * x[0] + 0.9 * x[1]
        };
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut p = ProbeCurve::default();
        p.fit(&train).unwrap();
        let (a, b, c) = p.coefficients().unwrap();
        assert!((a - 0.02).abs() < 1e-9 && (b - 0.7).abs() < 1e-9 && (c - 0.9).abs() < 1e-9, "{a} {b} {c}");
        let e = curve_program("e", [1.0, 1.2, 1.2, 1.4, 1.5, 1.5], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        // A co-runner that slows DistGen nowhere reads as no excess: s = 1 + a.
        assert!((p.predict_pair(&e, &progs[2]).slowdown - truth(&e, &progs[2])).abs() < 1e-9);
        assert!((p.predict_pair(&e, &e).slowdown - 1.02).abs() < 1e-9);
    }
}
