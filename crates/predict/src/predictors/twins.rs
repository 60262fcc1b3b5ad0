//! `twins`: the Terrible Twins paper observes that two instances of one program are
//! over-represented among the worst (and the best) co-schedules: they want
//! the same resources at the same time. This predictor wraps a base
//! predictor and multiplies its predictions for twins by a factor learned
//! from the training set's twin pairs.
//!
//! The base is fitted on the pairs that are not twins, and the twin factor
//! is the geometric mean of measured / base-predicted over the twin pairs:
//! so the factor measures what the base misses on twins when it has not
//! seen them, not what it already fitted. Twin predictions carry the band
//! of the twin residuals around that factor.

use crate::fit::Band;
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use cosched_model::params::{Kind, Param};
use super::{base, bases, PredictorEntry};

pub(super) const TWINS: PredictorEntry = PredictorEntry {
    name: "twins",
    summary: "Terrible Twins: another predictor times a factor learned for twins",
    params: &[Param::new("base", Kind::WordOf(bases), "scn", "the predictor the twin factor multiplies")],
    make: |p| Ok(Box::new(Twins::new(base(p, "base")?))),
};

pub struct Twins {
    base: Box<dyn Predictor>,
    /// ln of the twin factor.
    ln_factor: f64,
    band: Band,
}

impl Twins {
    pub fn new(base: Box<dyn Predictor>) -> Twins {
        Twins { base, ln_factor: 0.0, band: Band::default() }
    }

    /// The learned factor for twins.
    pub fn factor(&self) -> f64 {
        self.ln_factor.exp()
    }

    pub fn base_name(&self) -> &'static str {
        self.base.name()
    }
}

impl Predictor for Twins {
    fn name(&self) -> &'static str {
        "twins"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        let (twins, others): (Vec<_>, Vec<_>) =
            train.pairs.iter().cloned().partition(|p| train.twins(&p.victim, &p.aggressor));
        let rest = TrainingSet { programs: train.programs.clone(), pairs: others };
        self.base.fit(if rest.pairs.is_empty() { train } else { &rest })?;
        let mut logs = Vec::new();
        for p in &twins {
            let (Some(v), Some(o)) = (train.program(&p.victim), train.program(&p.aggressor)) else { continue };
            let b = self.base.predict_pair(v, o).slowdown;
            if b > 0.0 {
                logs.push((p.median() / b).ln());
            }
        }
        self.ln_factor = if logs.is_empty() { 0.0 } else { logs.iter().sum::<f64>() / logs.len() as f64 };
        let f = self.ln_factor.exp();
        self.band = Band::of(&logs.iter().map(|l| (l.exp(), f)).collect::<Vec<_>>());
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        let p = self.base.predict_pair(victim, other);
        if victim.program != other.program {
            return p;
        }
        self.band.around(p.slowdown * self.factor())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predictors::Scn;
    use crate::testdata::{all_pairs, probe_program, Shape};

    #[test]
    fn twins_get_the_factor_they_were_measured_at_over_the_base() {
        // Two programs per class; non-twins slow by a class constant, twins
        // by 1.5x that constant.
        let progs: Vec<Characterization> = [("n1", Shape::N), ("n2", Shape::N), ("c1", Shape::C), ("c2", Shape::C), ("s1", Shape::S), ("s2", Shape::S)]
            .iter()
            .map(|(n, s)| probe_program(n, *s, 0.3))
            .collect();
        let cell = |v: &Characterization| match v.name.as_bytes()[0] {
            b'n' => 1.0,
            b'c' => 1.2,
            _ => 1.1,
        };
        let truth = |v: &Characterization, o: &Characterization| {
            let k = if v.name[..1] == o.name[..1] { cell(v) } else { 1.05 };
            if v.program == o.program { 1.5 * k } else { k }
        };
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut t = Twins::new(Box::new(Scn::default()));
        t.fit(&train).unwrap();
        assert!((t.factor() - 1.5).abs() < 1e-9, "{}", t.factor());
        for v in &progs {
            for o in &progs {
                let got = t.predict_pair(v, o).slowdown;
                assert!((got - truth(v, o)).abs() < 1e-9, "{} {}: {got}", v.name, o.name);
            }
        }
    }
}
