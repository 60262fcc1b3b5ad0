//! `measured`: the pair matrix itself. Where the training set measured the
//! two programs together, the prediction is the median of the repeats with
//! their range as the interval: the best any predictor can do, up to the
//! node's noise. Elsewhere (a program never paired with this one, or held
//! out by cross-validation) it is the fallback predictor's, fitted on the
//! same set. Pairs are looked up by program, so an instance of a program
//! measured under another job name (`solve.1` for `solve.2`) counts.

use std::collections::BTreeMap;

use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use cosched_model::params::{Kind, Param};
use super::{base, bases, PredictorEntry};

pub(super) const MEASURED: PredictorEntry = PredictorEntry {
    name: "measured",
    summary: "the measured pair matrix where a pair was measured; another predictor elsewhere",
    params: &[Param::new("fallback", Kind::WordOf(bases), "learned", "the predictor of pairs never measured")],
    make: |p| Ok(Box::new(Measured::new(base(p, "fallback")?))),
};

pub struct Measured {
    fallback: Box<dyn Predictor>,
    /// (victim program, co-runner program) -> all repeats.
    cells: BTreeMap<(String, String), Vec<f64>>,
}

impl Measured {
    pub fn new(fallback: Box<dyn Predictor>) -> Measured {
        Measured { fallback, cells: BTreeMap::new() }
    }

    /// Whether the pair was measured.
    pub fn knows(&self, victim: &Characterization, other: &Characterization) -> bool {
        self.cells.contains_key(&(victim.program.clone(), other.program.clone()))
    }
}

impl Predictor for Measured {
    fn name(&self) -> &'static str {
        "measured"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        self.fallback.fit(train)?;
        self.cells.clear();
        for p in &train.pairs {
            let (Some(v), Some(o)) = (train.program(&p.victim), train.program(&p.aggressor)) else { continue };
            self.cells.entry((v.program.clone(), o.program.clone())).or_default().extend(&p.slowdowns);
        }
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match self.cells.get(&(victim.program.clone(), other.program.clone())) {
            Some(v) => {
                let s = cosched_model::stats::Summary::of(v).expect("stored slowdowns are finite and not empty");
                Prediction { slowdown: s.median, lo: s.min, hi: s.max }
            }
            None => self.fallback.predict_pair(victim, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predictors::Scn;
    use crate::testdata::{pair, probe_program, Shape};
    use crate::PairSamples;

    #[test]
    fn known_pairs_give_their_median_and_range_and_others_fall_back() {
        let progs = vec![probe_program("a", Shape::N, 0.0), probe_program("b", Shape::S, 0.5)];
        let pairs = vec![
            PairSamples { victim: "a".into(), aggressor: "b".into(), slowdowns: vec![1.3, 1.1, 1.2] },
            pair("b", "a", 1.0),
        ];
        let train = TrainingSet::new(progs.clone(), pairs).unwrap();
        let mut m = Measured::new(Box::new(Scn::default()));
        m.fit(&train).unwrap();
        assert_eq!(m.predict_pair(&progs[0], &progs[1]), Prediction { slowdown: 1.2, lo: 1.1, hi: 1.3 });
        assert_eq!(m.predict_pair(&progs[1], &progs[0]), Prediction::exact(1.0));
        // b beside b was never measured: scn's overall mean, (1.2 + 1.0) / 2.
        assert!(!m.knows(&progs[1], &progs[1]));
        assert!((m.predict_pair(&progs[1], &progs[1]).slowdown - 1.1).abs() < 1e-12);
        // Another instance of program a under another name is the same program.
        let a2 = Characterization { name: "a.2".into(), ..progs[0].clone() };
        assert_eq!(m.predict_pair(&a2, &progs[1]).slowdown, 1.2);
    }
}
