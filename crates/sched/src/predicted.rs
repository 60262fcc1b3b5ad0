//! A fitted predictor as a [`SlowdownSource`], so policies and the simulator
//! can decide with predictions (`simulate_predicted` shows a policy the
//! prediction while measured slowdowns drive progress).

use cosched_predict::{Characterization, Predictor};

use crate::tables::SlowdownSource;
use crate::JobId;

/// Predictions of a fitted predictor for the jobs `0..n` of an engine.
pub struct Predicted {
    predictor: Box<dyn Predictor>,
    /// Job `i`'s characterization.
    jobs: Vec<Characterization>,
}

impl Predicted {
    /// `predictor` must be fitted; `jobs[i]` characterizes engine job `i`.
    pub fn new(predictor: Box<dyn Predictor>, jobs: Vec<Characterization>) -> Predicted {
        Predicted { predictor, jobs }
    }

    pub fn predictor(&self) -> &dyn Predictor {
        self.predictor.as_ref()
    }
}

impl SlowdownSource for Predicted {
    /// Product of the pairwise predictions, as for measured pairs.
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        beside
            .iter()
            .filter(|&&b| b != job)
            .map(|&b| self.predictor.predict_pair(&self.jobs[job], &self.jobs[b]).slowdown)
            .product()
    }

    /// The predictor's own score: C_all for `c-all`, else the worse
    /// predicted slowdown of the pair as an increase in percent.
    fn score(&self, a: JobId, b: JobId) -> f64 {
        self.predictor.score(&self.jobs[a], &self.jobs[b])
    }
}

#[cfg(test)]
mod tests {
    use cosched_predict::{predictor_by_name, PairSamples, Params, TrainingSet};

    use super::*;

    fn job(name: &str) -> Characterization {
        Characterization {
            name: name.into(),
            program: name.into(),
            cores: 1,
            profile: None,
            probe: Vec::new(),
            llc_kib: None,
            stressors: Default::default(),
        }
    }

    #[test]
    fn measured_pairs_through_the_adapter_behave_like_a_pair_table() {
        let jobs = vec![job("a"), job("b"), job("c")];
        let cell = |v: &str, a: &str, s: f64| PairSamples { victim: v.into(), aggressor: a.into(), slowdowns: vec![s] };
        let pairs = vec![cell("a", "b", 1.5), cell("b", "a", 1.2), cell("a", "c", 2.0), cell("c", "a", 1.0)];
        let train = TrainingSet::new(jobs.clone(), pairs).unwrap();
        let mut p = predictor_by_name("measured", &Params::new()).unwrap();
        p.fit(&train).unwrap();
        let src = Predicted::new(p, jobs);
        assert_eq!(src.slowdown(0, &[]), 1.0);
        assert_eq!(src.slowdown(0, &[0, 1]), 1.5, "a job is not its own co-runner");
        assert_eq!(src.slowdown(0, &[1, 2]), 3.0);
        assert!((src.score(0, 1) - 50.0).abs() < 1e-9);
    }
}
