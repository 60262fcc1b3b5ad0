//! Slowdown prediction: how much a job slows beside the others on its node.
//!
//! A [`Predictor`] is fitted on a [`TrainingSet`] (what has been measured on
//! this node: each program's solo characterization and the measured pairs)
//! and then predicts, for a [`CoSchedule`] (jobs sharing one node), each
//! job's slowdown `T_corun / T_solo` with an interval. Predictors are
//! registered by name in one table ([`predictors::PREDICTORS`]: name,
//! summary, typed parameters with defaults, constructor), like the
//! scheduling policies; [`predictor_by_name`] and [`predictor_from_spec`]
//! build from it.
//!
//! | name | seed | inputs | model |
//! |---|---|---|---|
//! | `c-all` | 000 | host loads U | isotonic fit of slowdown against C_all = (U_a + U_b) x 100 % |
//! | `scn` | SCN | probe classes N/C/S, co-runner's bandwidth pressure | per-class-pair constants and lines |
//! | `probe` | DistGen | victim's sensitivity curve, co-runner's contentiousness curve | curve read at the co-runner's footprint, calibrated by a line |
//! | `twins` | Terrible Twins | program identity | a learned twin factor over another predictor |
//! | `reuse` | DistGen (PinDist) | both jobs' miss-ratio curves, data references per second | the victim's misses gained when the co-runner's footprint takes its share of the LLC, and both jobs' memory traffic, by a non-negative line |
//! | `learned` | - | profile and probe features of both jobs | ridge regression of ln slowdown |
//! | `nearest` | Terrible Twins generalised | profile and probe features of both jobs | kernel-weighted mean of look-alike measured pairs |
//! | `measured` | - | the pair matrix | the measured median; a fallback predictor elsewhere |
//!
//! Every predictor is defined on pairs (a victim beside one co-runner). A job
//! beside several co-runners slows by the product of its pairwise slowdowns
//! (a sum in log space), the rule `sched::tables::PairTable` uses for
//! measured pairs: exact for one co-runner, positive when a co-runner helps,
//! and needing no more than pair measurements. A job's characterization and
//! its pairs are measured with the job on its own cores (all of them), so a
//! multi-core job's pressure and sensitivity are already in its pairwise
//! figures; see ARCHITECTURE.md.
//!
//! The crate does no I/O and never runs a process: callers hand it records.

pub mod cv;
pub mod features;
pub mod fit;
pub mod metrics;
pub mod misses;
pub mod predictors;
pub mod regime;

use std::collections::BTreeMap;

use cosched_model::probe::ProbePoint;
use cosched_model::profile::JobProfile;
use serde::{Deserialize, Serialize};

pub use cv::{cross_validate, evaluate, CvPrediction, Folds};
pub use metrics::{recall_at_precision, severe_at_cut, Accuracy, RecallAt, DEFAULT_AT_PRECISION, DEFAULT_SEVERE};
pub use predictors::{predictor_by_name, predictor_from_spec, predictor_names, Params};

/// What is known of a program before it shares the node: its solo
/// characterization. Cheap and measured before scheduling, so cross-
/// validation may use the held-out program's own characterization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Characterization {
    /// The job's name in its workload: pair measurements are keyed by it.
    pub name: String,
    /// What runs (`Job::program_key`); equal keys are twins (the Terrible Twins paper).
    pub program: String,
    /// Cores the job gets when shared; its characterization was measured so.
    pub cores: u32,
    /// The solo profile (host load U, system calls, I/O), if measured.
    pub profile: Option<JobProfile>,
    /// The probe curve against DistGen, if measured (empty otherwise).
    pub probe: Vec<ProbePoint>,
    /// Points against the other probe stressors, by the stressor's kernel
    /// name (`pipe`), where measured.
    #[serde(default)]
    pub stressors: BTreeMap<String, ProbePoint>,
    /// LLC size (KiB) of the node the probe ran on: splits the curve into
    /// cache and memory sides.
    pub llc_kib: Option<u64>,
}

/// Measured slowdowns of one job (`victim`) beside another (`aggressor`):
/// one value per repeat, each a co-run time over the solo time of the same
/// repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairSamples {
    pub victim: String,
    pub aggressor: String,
    pub slowdowns: Vec<f64>,
}

impl PairSamples {
    /// Median of the repeats: the figure predictions are scored against.
    pub fn median(&self) -> f64 {
        cosched_model::stats::median(&self.slowdowns)
    }
}

/// Everything a predictor may learn from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingSet {
    /// By job name.
    pub programs: BTreeMap<String, Characterization>,
    /// Ordered pairs, each once.
    pub pairs: Vec<PairSamples>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictError {
    #[error("pair {victim} beside {aggressor} names a job without a characterization")]
    UnknownJob { victim: String, aggressor: String },
    #[error("pair {victim} beside {aggressor} has {why}")]
    BadSample { victim: String, aggressor: String, why: String },
    #[error("pair {victim} beside {aggressor} is given twice")]
    Duplicate { victim: String, aggressor: String },
    #[error("{0}")]
    Params(String),
    #[error("predictor `{name}` cannot be fitted: {why}")]
    Fit { name: String, why: String },
}

impl TrainingSet {
    /// Builds a set from characterizations and pair samples, merging the
    /// samples of an ordered pair given in several pieces (both directions
    /// of a co-run arrive as separate pieces) and refusing pairs of unknown
    /// jobs and non-positive or non-finite slowdowns.
    pub fn new(programs: Vec<Characterization>, pairs: Vec<PairSamples>) -> Result<TrainingSet, PredictError> {
        let programs: BTreeMap<String, Characterization> =
            programs.into_iter().map(|c| (c.name.clone(), c)).collect();
        let mut merged: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
        for p in pairs {
            if !programs.contains_key(&p.victim) || !programs.contains_key(&p.aggressor) {
                return Err(PredictError::UnknownJob { victim: p.victim, aggressor: p.aggressor });
            }
            if let Some(bad) = p.slowdowns.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
                return Err(PredictError::BadSample {
                    victim: p.victim,
                    aggressor: p.aggressor,
                    why: format!("slowdown {bad}, not a positive number"),
                });
            }
            merged.entry((p.victim, p.aggressor)).or_default().extend(p.slowdowns);
        }
        let pairs = merged
            .into_iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|((victim, aggressor), slowdowns)| PairSamples { victim, aggressor, slowdowns })
            .collect();
        Ok(TrainingSet { programs, pairs })
    }

    pub fn program(&self, name: &str) -> Option<&Characterization> {
        self.programs.get(name)
    }

    /// The measured samples of `victim` beside `aggressor`, if any.
    pub fn pair(&self, victim: &str, aggressor: &str) -> Option<&PairSamples> {
        self.pairs.iter().find(|p| p.victim == victim && p.aggressor == aggressor)
    }

    /// Whether two jobs run the same program (twins, the Terrible Twins paper).
    pub fn twins(&self, a: &str, b: &str) -> bool {
        match (self.programs.get(a), self.programs.get(b)) {
            (Some(x), Some(y)) => x.program == y.program,
            _ => a == b,
        }
    }

    /// Distinct program keys, sorted: the units of leave-one-program-out.
    pub fn program_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.programs.values().map(|c| c.program.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The same characterizations without any pair that involves a job of
    /// `program`: what a fold that holds `program` out may fit on.
    pub fn without_program(&self, program: &str) -> TrainingSet {
        let of = |job: &str| self.programs.get(job).map(|c| c.program.as_str()) == Some(program);
        TrainingSet {
            programs: self.programs.clone(),
            pairs: self.pairs.iter().filter(|p| !of(&p.victim) && !of(&p.aggressor)).cloned().collect(),
        }
    }
}

/// A predicted slowdown with an interval that holds about 80 % of the
/// measured slowdowns the predictor was fitted on (10th to 90th percentile
/// of its in-sample errors, as factors).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub slowdown: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Prediction {
    /// A prediction with no uncertainty.
    pub fn exact(s: f64) -> Prediction {
        Prediction { slowdown: s, lo: s, hi: s }
    }

    /// The slowdown beside no co-runner.
    pub fn alone() -> Prediction {
        Prediction::exact(1.0)
    }

    /// Beside several co-runners: the product of the pairwise predictions
    /// (bounds multiply too, so the interval widens with each co-runner).
    pub fn combine(parts: &[Prediction]) -> Prediction {
        parts.iter().fold(Prediction::alone(), |acc, p| Prediction {
            slowdown: acc.slowdown * p.slowdown,
            lo: acc.lo * p.lo,
            hi: acc.hi * p.hi,
        })
    }
}

/// One job of a co-schedule: what it runs, where and on how many cores.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed<'a> {
    pub job: &'a Characterization,
    pub pool: String,
    pub cores: u32,
}

/// Jobs sharing one node at one time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CoSchedule<'a> {
    pub jobs: Vec<Placed<'a>>,
}

/// A slowdown predictor. `fit` learns from a training set; the predictions
/// then depend only on it and on the characterizations they are given.
pub trait Predictor: Send + Sync {
    /// The registered name.
    fn name(&self) -> &'static str;

    /// Learns from `train`, replacing whatever was learned before.
    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError>;

    /// Slowdown of `victim` beside the single co-runner `other`.
    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction;

    /// Conflict score of a pair in the units of the conflict-aware policy's
    /// threshold: by default the worse of the two predicted slowdowns as an
    /// increase in percent (`sched::PairTable`'s convention, so T = 100
    /// means "neither job runs more than twice as slow"); `c-all` gives
    /// the SX-Aurora paper's C_all instead.
    fn score(&self, a: &Characterization, b: &Characterization) -> f64 {
        let worst = self.predict_pair(a, b).slowdown.max(self.predict_pair(b, a).slowdown);
        (worst - 1.0) * 100.0
    }

    /// The SX-Aurora paper's decision: the pair conflicts when its score exceeds the
    /// threshold (T = inf never conflicts).
    fn conflicts(&self, a: &Characterization, b: &Characterization, threshold: f64) -> bool {
        self.score(a, b) > threshold
    }

    /// Each job's slowdown beside all the others of the co-schedule, in the
    /// co-schedule's order: the product of its pairwise slowdowns (see the
    /// crate documentation). A job alone slows by exactly 1.
    fn predict(&self, co: &CoSchedule) -> Vec<Prediction> {
        (0..co.jobs.len())
            .map(|i| {
                let parts: Vec<Prediction> = co
                    .jobs
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .map(|(_, other)| self.predict_pair(co.jobs[i].job, other.job))
                    .collect();
                Prediction::combine(&parts)
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod testdata;

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(name: &str, program: &str) -> Characterization {
        Characterization {
            name: name.into(),
            program: program.into(),
            cores: 1,
            profile: None,
            probe: Vec::new(),
            llc_kib: None,
            stressors: Default::default(),
        }
    }

    fn ps(v: &str, a: &str, s: &[f64]) -> PairSamples {
        PairSamples { victim: v.into(), aggressor: a.into(), slowdowns: s.to_vec() }
    }

    #[test]
    fn pieces_of_one_ordered_pair_merge_and_bad_samples_are_refused() {
        let t = TrainingSet::new(
            vec![ch("a", "A"), ch("b", "B")],
            vec![ps("a", "b", &[1.2]), ps("b", "a", &[1.0]), ps("a", "b", &[1.4, 1.3])],
        )
        .unwrap();
        assert_eq!(t.pairs.len(), 2);
        assert_eq!(t.pair("a", "b").unwrap().median(), 1.3);
        assert!(matches!(
            TrainingSet::new(vec![ch("a", "A")], vec![ps("a", "z", &[1.0])]),
            Err(PredictError::UnknownJob { .. })
        ));
        assert!(matches!(
            TrainingSet::new(vec![ch("a", "A")], vec![ps("a", "a", &[0.0])]),
            Err(PredictError::BadSample { .. })
        ));
    }

    #[test]
    fn holding_a_program_out_drops_every_pair_of_each_of_its_jobs() {
        let t = TrainingSet::new(
            vec![ch("a.1", "A"), ch("a.2", "A"), ch("b", "B"), ch("c", "C")],
            vec![
                ps("a.1", "b", &[1.1]),
                ps("b", "a.2", &[1.1]),
                ps("a.1", "a.2", &[1.5]),
                ps("b", "c", &[1.2]),
                ps("c", "c", &[1.3]),
            ],
        )
        .unwrap();
        assert!(t.twins("a.1", "a.2") && !t.twins("a.1", "b"));
        let held = t.without_program("A");
        let left: Vec<(&str, &str)> = held.pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str())).collect();
        assert_eq!(left, vec![("b", "c"), ("c", "c")]);
        assert_eq!(held.programs.len(), 4, "characterizations stay: they are known before scheduling");
    }

    #[test]
    fn co_runners_multiply_and_a_lone_job_is_not_slowed() {
        assert_eq!(Prediction::combine(&[]), Prediction::alone());
        let p = Prediction::combine(&[
            Prediction { slowdown: 1.5, lo: 1.2, hi: 2.0 },
            Prediction { slowdown: 2.0, lo: 1.0, hi: 3.0 },
        ]);
        assert_eq!(p, Prediction { slowdown: 3.0, lo: 1.2, hi: 6.0 });
    }
}
