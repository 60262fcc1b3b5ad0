//! `median`: every pair co-runs at the median slowdown of the training
//! pairs. The naive baseline the SCN paper (Haritatos et al.) scores its
//! models against: it knows how much this node's pairs hurt on the whole
//! and nothing of which pair hurts, so a predictor that does not beat it
//! has learned nothing from the programs' characterizations.

use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

pub(super) const MEDIAN: PredictorEntry = PredictorEntry {
    name: "median",
    summary: "every pair co-runs at the median slowdown of the training pairs: the naive baseline the SCN paper scores its models against",
    params: &[],
    make: |_| Ok(Box::new(Median::default())),
};

#[derive(Debug, Clone, Copy)]
pub struct Median {
    slowdown: f64,
}

impl Default for Median {
    /// Unfitted: 1, as `blind`, until it sees a training pair.
    fn default() -> Median {
        Median { slowdown: 1.0 }
    }
}

impl Predictor for Median {
    fn name(&self) -> &'static str {
        "median"
    }

    /// The median over training pairs of each pair's median (one vote per
    /// ordered pair, however many repeats it has).
    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        let per_pair: Vec<f64> = train.pairs.iter().map(|p| p.median()).collect();
        self.slowdown = if per_pair.is_empty() { 1.0 } else { cosched_model::stats::median(&per_pair) };
        Ok(())
    }

    fn predict_pair(&self, _victim: &Characterization, _other: &Characterization) -> Prediction {
        Prediction::exact(self.slowdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{probe_program, Shape};
    use crate::PairSamples;

    fn pair(v: &str, a: &str, s: &[f64]) -> PairSamples {
        PairSamples { victim: v.into(), aggressor: a.into(), slowdowns: s.to_vec() }
    }

    #[test]
    fn predicts_the_median_of_the_pairs_medians_for_every_pair() {
        let train = TrainingSet {
            programs: Default::default(),
            // Pair medians 1.0, 1.2 and 2.0: the median is 1.2, whatever the
            // 2.0 pair's repeat count.
            pairs: vec![pair("a", "b", &[1.0]), pair("b", "a", &[1.1, 1.2, 1.3]), pair("a", "a", &[2.0, 2.0, 2.0, 2.0, 2.0])],
        };
        let mut m = Median::default();
        m.fit(&train).unwrap();
        let c = probe_program("a", Shape::N, 0.0);
        assert_eq!(m.predict_pair(&c, &c), Prediction::exact(1.2));
    }

    #[test]
    fn with_no_training_pairs_it_is_blind() {
        let mut m = Median::default();
        m.fit(&TrainingSet::default()).unwrap();
        let c = probe_program("a", Shape::S, 0.5);
        assert_eq!(m.predict_pair(&c, &c), Prediction::alone());
    }
}
