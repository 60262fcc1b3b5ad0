//! Cross-validation: how well a predictor does on programs it has not seen
//! together with others.
//!
//! Leave-one-program-out: for each program P, a fresh predictor is fitted on
//! the training set without any pair that involves a job of P
//! ([`TrainingSet::without_program`]); it then predicts every measured pair
//! whose victim is a job of P, beside any co-runner (P's twins included).
//! So every measured ordered pair is predicted exactly once, by a predictor
//! that never saw a measurement of its victim's program beside anything.
//! P's own solo characterization (profile, probe) stays available: it is
//! cheap and known before P is ever scheduled.

use serde::{Deserialize, Serialize};

use crate::{PredictError, Prediction, Predictor, TrainingSet};

/// How to split the measured pairs into fitting and testing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Folds {
    /// See the module documentation.
    LeaveOneProgramOut,
    /// Fitted on every pair and tested on the same pairs: not a measure of
    /// prediction, only of how well a model can describe what it saw.
    InSample,
    /// Fitted on one half of every pair's repeats, tested against the
    /// median of the other half (pairs with at least three repeats): for
    /// `measured`, how well one half of the repeats predicts the other, the
    /// node's noise floor that no predictor can beat. The halves take
    /// repeats in blocks of two (0, 1, 4, 5, ... against 2, 3, 6, 7, ...)
    /// because `pairs` swaps the two jobs' CPUs on odd repeats: split by
    /// parity, the halves would be the two placements, and the floor would
    /// measure how much the CPU matters rather than how much a repeat
    /// drifts. In blocks, each half holds both placements, as the pair's
    /// median does.
    RepeatHalves,
}

impl Folds {
    pub const ALL: [Folds; 3] = [Folds::LeaveOneProgramOut, Folds::InSample, Folds::RepeatHalves];

    pub fn name(self) -> &'static str {
        match self {
            Folds::LeaveOneProgramOut => "leave-one-program-out",
            Folds::InSample => "in-sample",
            Folds::RepeatHalves => "repeat-halves",
        }
    }

    pub fn from_name(s: &str) -> Option<Folds> {
        Folds::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// One measured pair and its prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvPrediction {
    pub victim: String,
    pub aggressor: String,
    /// The program held out while predicting this pair (`in-sample`: none).
    pub held_out: Option<String>,
    /// Median of the measured repeats.
    pub measured: f64,
    pub repeats: usize,
    pub predicted: Prediction,
}

/// Cross-validates predictors built by `make` on `set`.
pub fn cross_validate(
    make: &dyn Fn() -> Box<dyn Predictor>,
    set: &TrainingSet,
    folds: Folds,
) -> Result<Vec<CvPrediction>, PredictError> {
    let mut out = Vec::new();
    match folds {
        Folds::InSample => {
            let mut p = make();
            p.fit(set)?;
            for pair in &set.pairs {
                let (Some(v), Some(o)) = (set.program(&pair.victim), set.program(&pair.aggressor)) else { continue };
                out.push(CvPrediction {
                    victim: pair.victim.clone(),
                    aggressor: pair.aggressor.clone(),
                    held_out: None,
                    measured: pair.median(),
                    repeats: pair.slowdowns.len(),
                    predicted: p.predict_pair(v, o),
                });
            }
        }
        Folds::RepeatHalves => {
            let half = |p: &crate::PairSamples, which: usize| -> Vec<f64> {
                p.slowdowns.iter().enumerate().filter(|(i, _)| (i / 2) % 2 == which).map(|(_, s)| *s).collect()
            };
            let tested: Vec<&crate::PairSamples> = set.pairs.iter().filter(|p| p.slowdowns.len() >= 3).collect();
            let train = TrainingSet {
                programs: set.programs.clone(),
                pairs: set
                    .pairs
                    .iter()
                    .map(|p| crate::PairSamples { slowdowns: half(p, 0), ..p.clone() })
                    .collect(),
            };
            let mut p = make();
            p.fit(&train)?;
            for pair in tested {
                let (Some(v), Some(o)) = (set.program(&pair.victim), set.program(&pair.aggressor)) else { continue };
                let odd = half(pair, 1);
                out.push(CvPrediction {
                    victim: pair.victim.clone(),
                    aggressor: pair.aggressor.clone(),
                    held_out: None,
                    measured: cosched_model::stats::median(&odd),
                    repeats: odd.len(),
                    predicted: p.predict_pair(v, o),
                });
            }
        }
        Folds::LeaveOneProgramOut => {
            for key in set.program_keys() {
                let tests: Vec<_> = set
                    .pairs
                    .iter()
                    .filter(|p| set.program(&p.victim).map(|c| c.program.as_str()) == Some(key.as_str()))
                    .collect();
                if tests.is_empty() {
                    continue;
                }
                let train = set.without_program(&key);
                let mut p = make();
                p.fit(&train)?;
                for pair in tests {
                    let (Some(v), Some(o)) = (set.program(&pair.victim), set.program(&pair.aggressor)) else {
                        continue;
                    };
                    out.push(CvPrediction {
                        victim: pair.victim.clone(),
                        aggressor: pair.aggressor.clone(),
                        held_out: Some(key.clone()),
                        measured: pair.median(),
                        repeats: pair.slowdowns.len(),
                        predicted: p.predict_pair(v, o),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Cross-workload: a predictor fitted on the pairs of `train` predicts every
/// measured pair of `test` from the two programs' characterizations. Any
/// pair of `train` that involves a program of `test` is dropped before the
/// fit (the same program measured under another workload is still that
/// program), so the fit never sees what it is scored on; a test program's
/// solo characterization (profile, probe) is all it brings.
pub fn cross_workload(
    make: &dyn Fn() -> Box<dyn Predictor>,
    train: &TrainingSet,
    test: &TrainingSet,
) -> Result<Vec<CvPrediction>, PredictError> {
    fit_and_predict(make, &without_tested(train, test), test)
}

/// Cross-node: a predictor fitted on every pair of `train` (another node's
/// campaigns, e.g. an imported dataset) predicts every measured pair of
/// `test` (this node's). Unlike [`cross_workload`] the tested programs'
/// own pairs stay in the fit: what is scored is how well the other node's
/// knowledge of the same programs carries over, `measured` being that
/// node's pair read as it is.
pub fn cross_node(
    make: &dyn Fn() -> Box<dyn Predictor>,
    train: &TrainingSet,
    test: &TrainingSet,
) -> Result<Vec<CvPrediction>, PredictError> {
    fit_and_predict(make, train, test)
}

fn fit_and_predict(
    make: &dyn Fn() -> Box<dyn Predictor>,
    clean: &TrainingSet,
    test: &TrainingSet,
) -> Result<Vec<CvPrediction>, PredictError> {
    let mut p = make();
    p.fit(clean)?;
    let mut out = Vec::new();
    for pair in &test.pairs {
        let (Some(v), Some(o)) = (test.program(&pair.victim), test.program(&pair.aggressor)) else { continue };
        out.push(CvPrediction {
            victim: pair.victim.clone(),
            aggressor: pair.aggressor.clone(),
            held_out: Some(v.program.clone()),
            measured: pair.median(),
            repeats: pair.slowdowns.len(),
            predicted: p.predict_pair(v, o),
        });
    }
    Ok(out)
}

/// `train` without any pair that involves a program of `test`.
fn without_tested(train: &TrainingSet, test: &TrainingSet) -> TrainingSet {
    let tested: std::collections::BTreeSet<&str> = test.programs.values().map(|c| c.program.as_str()).collect();
    let of = |job: &str| train.programs.get(job).map(|c| c.program.as_str()).unwrap_or_default();
    TrainingSet {
        programs: train.programs.clone(),
        pairs: train.pairs.iter().filter(|p| !tested.contains(of(&p.victim)) && !tested.contains(of(&p.aggressor))).cloned().collect(),
    }
}

/// The severe cut a scheduler would use with a predictor fitted on the
/// training side, chosen before any tested pair is seen, and how it does
/// on the tested pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrainedCut {
    /// Pairs predicted at or above this are flagged severe.
    pub cut: f64,
    /// On the training side's own held-out predictions.
    pub train_precision: Option<f64>,
    pub train_recall: f64,
    /// On the tested pairs.
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

/// Cross-workload's [`TrainedCut`]: the training set without the tested
/// programs' pairs (as [`cross_workload`] fits on) is cross-validated
/// leave-one-program-out; the cut of the best recall at `min_precision` on
/// those held-out predictions ([`crate::metrics::recall_at_precision`]) is
/// applied to `tested` (predicted, measured). `None` when the training
/// side holds no severe pair, no cut there keeps the precision, or its
/// folds cannot be fitted.
pub fn cross_workload_cut(
    make: &dyn Fn() -> Box<dyn Predictor>,
    train: &TrainingSet,
    test: &TrainingSet,
    tested: &[(f64, f64)],
    level: f64,
    min_precision: f64,
) -> Option<TrainedCut> {
    cut_from(make, &without_tested(train, test), tested, level, min_precision)
}

/// [`cross_node`]'s [`TrainedCut`]: chosen on the other node's pairs, all of
/// them (as it fits on), then applied to `tested`.
pub fn cross_node_cut(make: &dyn Fn() -> Box<dyn Predictor>, train: &TrainingSet, tested: &[(f64, f64)], level: f64, min_precision: f64) -> Option<TrainedCut> {
    cut_from(make, train, tested, level, min_precision)
}

fn cut_from(make: &dyn Fn() -> Box<dyn Predictor>, fit_on: &TrainingSet, tested: &[(f64, f64)], level: f64, min_precision: f64) -> Option<TrainedCut> {
    let held_out = cross_validate(make, fit_on, Folds::LeaveOneProgramOut).ok()?;
    let on_train = crate::metrics::recall_at_precision(&scored(&held_out), level, min_precision)?;
    let cut = on_train.cut?;
    let (precision, recall) = crate::metrics::severe_at_cut(tested, level, cut);
    Some(TrainedCut { cut, train_precision: on_train.precision, train_recall: on_train.recall, precision, recall })
}

/// Cross-validates and scores in one go: the predictions and their accuracy
/// with severe conflicts above `level`.
pub fn evaluate(
    make: &dyn Fn() -> Box<dyn Predictor>,
    set: &TrainingSet,
    folds: Folds,
    level: f64,
) -> Result<(Vec<CvPrediction>, crate::Accuracy), PredictError> {
    let preds = cross_validate(make, set, folds)?;
    let acc = crate::Accuracy::of(&scored(&preds), level);
    Ok((preds, acc))
}

/// (predicted, measured) of cross-validated predictions, for the metrics.
pub fn scored(preds: &[CvPrediction]) -> Vec<(f64, f64)> {
    preds.iter().map(|p| (p.predicted.slowdown, p.measured)).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::predictors::{predictor_by_name, predictor_names, Params};
    use crate::testdata::{all_pairs, probe_program, with_curve, with_load, Shape};
    use crate::{Characterization, PairSamples};
    use cosched_model::profile::MissPoint;

    fn workload() -> (Vec<Characterization>, Vec<PairSamples>) {
        let shapes = [Shape::N, Shape::C, Shape::S, Shape::S, Shape::C, Shape::N, Shape::S];
        let progs: Vec<Characterization> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| with_load(probe_program(&format!("j{i}"), *s, 0.1 * i as f64), 0.1 + 0.1 * i as f64, 50.0 * i as f64))
            .map(|c| {
                // A miss-ratio curve each (for `reuse`): footprints of 4, 16
                // and 64 MiB in turn, the more references the later the job.
                let i = c.name[1..].parse::<usize>().unwrap();
                let points = [4096u64, 16384, 65536]
                    .iter()
                    .enumerate()
                    .map(|(k, &ll_kib)| MissPoint { ll_kib, refs: 0, misses: 0, ratio: if k < i % 3 { 0.1 + 0.05 * i as f64 } else { 0.01 } })
                    .collect();
                with_curve(c, points, 1_000_000_000 * (1 + i as u64), 1.0)
            })
            .collect();
        let pairs = all_pairs(&progs, |v, o| 1.0 + 0.05 * (v.name.len() as f64) + 0.3 * o.probe[5].stressor_slowdown.median - 0.3);
        (progs, pairs)
    }

    #[test]
    fn repeat_halves_take_blocks_of_two_so_each_half_holds_both_placements() {
        let (progs, _) = workload();
        // Even repeats ran on one CPU (about 1.0), odd ones on the other
        // (about 2.0), as `pairs` alternates them.
        let pairs = vec![
            PairSamples { victim: "j0".into(), aggressor: "j1".into(), slowdowns: vec![1.0, 2.0, 1.2, 2.2, 1.1, 2.1] },
            PairSamples { victim: "j1".into(), aggressor: "j0".into(), slowdowns: vec![1.5, 1.6] },
        ];
        let set = TrainingSet::new(progs, pairs).unwrap();
        let make = || predictor_by_name("measured", &Params::new()).unwrap();
        let got = cross_validate(&make, &set, Folds::RepeatHalves).unwrap();
        assert_eq!(got.len(), 1, "a pair with two repeats has nothing in its second half");
        // Repeats 0, 1, 4, 5 (1.0, 2.0, 1.1, 2.1) predict their median 1.55;
        // repeats 2, 3 (1.2, 2.2) measure 1.7. Split by parity, it would
        // have been 1.1 against 2.1.
        assert!((got[0].predicted.slowdown - 1.55).abs() < 1e-12, "{}", got[0].predicted.slowdown);
        assert!((got[0].measured - 1.7).abs() < 1e-12, "{}", got[0].measured);
        assert_eq!(got[0].repeats, 2);
    }

    /// A predictor that records every pair it was fitted on.
    struct Spy {
        seen: Arc<Mutex<Vec<(String, String)>>>,
    }

    impl Predictor for Spy {
        fn name(&self) -> &'static str {
            "spy"
        }
        fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
            let mut s = self.seen.lock().unwrap();
            s.clear();
            s.extend(train.pairs.iter().map(|p| (p.victim.clone(), p.aggressor.clone())));
            Ok(())
        }
        fn predict_pair(&self, v: &Characterization, o: &Characterization) -> Prediction {
            // Fails the test from inside the fold if the fit saw the victim.
            let seen = self.seen.lock().unwrap();
            assert!(
                !seen.iter().any(|(a, b)| *a == v.name || *b == v.name),
                "the fit of the fold predicting {} beside {} saw a pair of {}",
                v.name,
                o.name,
                v.name
            );
            Prediction::alone()
        }
    }

    #[test]
    fn no_fold_fits_on_a_pair_of_its_held_out_program() {
        let (progs, pairs) = workload();
        let set = TrainingSet::new(progs, pairs).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let preds = cross_validate(&move || Box::new(Spy { seen: s2.clone() }), &set, Folds::LeaveOneProgramOut).unwrap();
        assert_eq!(preds.len(), set.pairs.len(), "every measured pair predicted once");
    }

    #[test]
    fn poisoning_the_held_out_programs_pairs_changes_no_prediction_of_its_fold() {
        // For every predictor: replace every measured pair that involves
        // program j2 by nonsense. The predictions of j2's fold must not move,
        // since none of those pairs may reach its fit.
        let (progs, pairs) = workload();
        let clean = TrainingSet::new(progs.clone(), pairs.clone()).unwrap();
        let poisoned_pairs: Vec<PairSamples> = pairs
            .iter()
            .map(|p| {
                if p.victim == "j2" || p.aggressor == "j2" {
                    PairSamples { slowdowns: vec![17.0, 0.2, 9.0], ..p.clone() }
                } else {
                    p.clone()
                }
            })
            .collect();
        let poisoned = TrainingSet::new(progs, poisoned_pairs).unwrap();
        for (name, _) in predictor_names() {
            let make = move || predictor_by_name(name, &Params::new()).unwrap();
            let a = cross_validate(&make, &clean, Folds::LeaveOneProgramOut).unwrap();
            let b = cross_validate(&make, &poisoned, Folds::LeaveOneProgramOut).unwrap();
            let fold = |v: &[CvPrediction]| -> Vec<Prediction> {
                v.iter().filter(|p| p.held_out.as_deref() == Some("program j2")).map(|p| p.predicted).collect()
            };
            assert_eq!(fold(&a).len(), 7);
            assert_eq!(fold(&a), fold(&b), "{name}: held-out pairs leaked into the fit");
            // ... while in-sample fitting does see them, so the test can fail.
            let c = cross_validate(&make, &clean, Folds::InSample).unwrap();
            let d = cross_validate(&make, &poisoned, Folds::InSample).unwrap();
            assert_ne!(c, d, "{name}: poisoning must be visible when nothing is held out");
        }
    }

    #[test]
    fn a_cross_workload_fit_never_sees_a_pair_of_a_tested_program() {
        // Train holds j0..j6 with all their pairs; test re-measures j2 and j5
        // (the same programs, under another workload). Nothing of j2 or j5
        // may reach the fit, even though train measured them too.
        let (progs, pairs) = workload();
        let train = TrainingSet::new(progs.clone(), pairs.clone()).unwrap();
        let test_progs: Vec<Characterization> = progs.iter().filter(|c| c.name == "j2" || c.name == "j5").cloned().collect();
        let test_pairs: Vec<PairSamples> =
            pairs.iter().filter(|p| ["j2", "j5"].contains(&p.victim.as_str()) && ["j2", "j5"].contains(&p.aggressor.as_str())).cloned().collect();
        let test = TrainingSet::new(test_progs, test_pairs).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let preds = cross_workload(&move || Box::new(Spy { seen: s2.clone() }), &train, &test).unwrap();
        assert_eq!(preds.len(), 4, "j2 and j5 beside each other and themselves");
        assert!(seen.lock().unwrap().iter().all(|(a, b)| !["j2", "j5"].contains(&a.as_str()) && !["j2", "j5"].contains(&b.as_str())));
        // Poisoning train's pairs of the tested programs moves no prediction.
        let poisoned_pairs: Vec<PairSamples> = pairs
            .iter()
            .map(|p| if p.victim == "j2" || p.aggressor == "j5" { PairSamples { slowdowns: vec![17.0], ..p.clone() } } else { p.clone() })
            .collect();
        let poisoned = TrainingSet::new(progs, poisoned_pairs).unwrap();
        for (name, _) in predictor_names() {
            let make = move || predictor_by_name(name, &Params::new()).unwrap();
            let a = cross_workload(&make, &train, &test).unwrap();
            let b = cross_workload(&make, &poisoned, &test).unwrap();
            assert_eq!(a, b, "{name}: a tested program's pairs leaked into the fit");
            let cut = |set: &TrainingSet| cross_workload_cut(&make, set, &test, &crate::cv::scored(&a), 1.15, 0.7);
            assert_eq!(cut(&train), cut(&poisoned), "{name}: a tested program's pairs moved the trained cut");
        }
    }

    /// Predicts half the true excess slowdown of [`workload`]'s pairs: it
    /// ranks every pair right and shrinks them all towards 1.
    struct Half;

    impl Predictor for Half {
        fn name(&self) -> &'static str {
            "half"
        }
        fn fit(&mut self, _: &TrainingSet) -> Result<(), PredictError> {
            Ok(())
        }
        fn predict_pair(&self, _: &Characterization, o: &Characterization) -> Prediction {
            let truth = 1.1 + 0.3 * o.probe[5].stressor_slowdown.median - 0.3;
            Prediction::exact(1.0 + 0.5 * (truth - 1.0))
        }
    }

    #[test]
    fn the_trained_cut_comes_from_the_training_side_and_catches_what_the_level_misses() {
        // workload(): every pair measures 1.1 + 0.03 i beside co-runner j_i
        // (names are all two letters); above 1.15 from i = 2 on. `Half`
        // predicts 1.05 + 0.015 i: never above the level, so the fixed cut
        // catches none, but the cut set on the training side's held-out
        // predictions is 1.08 (i = 2) and catches them all.
        let (progs, pairs) = workload();
        let train = TrainingSet::new(progs.clone(), pairs.clone()).unwrap();
        let test_progs: Vec<Characterization> = progs.iter().filter(|c| ["j3", "j6"].contains(&c.name.as_str())).cloned().collect();
        let test_pairs: Vec<PairSamples> =
            pairs.iter().filter(|p| ["j3", "j6"].contains(&p.victim.as_str()) && ["j3", "j6"].contains(&p.aggressor.as_str())).cloned().collect();
        let test = TrainingSet::new(test_progs, test_pairs).unwrap();
        let make = || Box::new(Half) as Box<dyn Predictor>;
        let tested = scored(&cross_workload(&make, &train, &test).unwrap());
        assert_eq!(crate::Accuracy::of(&tested, 1.15).recall, Some(0.0));
        let t = cross_workload_cut(&make, &train, &test, &tested, 1.15, 0.7).unwrap();
        assert!((t.cut - 1.08).abs() < 1e-9, "{t:?}");
        assert_eq!((t.train_precision, t.train_recall), (Some(1.0), 1.0));
        assert_eq!((t.precision, t.recall), (Some(1.0), Some(1.0)));
        // A training side with nothing severe sets no cut.
        assert_eq!(cross_workload_cut(&make, &train, &test, &tested, 5.0, 0.7), None);
    }
}
