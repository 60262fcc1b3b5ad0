//! `scn`: the SCN paper's class-pair models. Each job is N, C or S (from its
//! probe curve, `model::probe::classify`); the degradation of a victim of
//! class X beside a co-runner of class Y is
//!
//! - C-S: `D = a * BW_co + b`, a line in the co-runner's bandwidth;
//! - S-S: `D = a * (BW_in + BW_co) + b`: the seed's `BW_max / (BW_in +
//!   BW_co)` says the pair shares the memory link, so the sum of both
//!   bandwidths drives it; a line in that sum is fitted rather than the
//!   seed's ratio because our bandwidth is a proxy in stressor units
//!   (see `features::Features::bandwidth`), not GB/s;
//! - every other pair: a constant, the mean of its measured pairs (the
//!   seed's c_1..c_5).
//!
//! All fitted by least squares on the training pairs of that class pair.
//! A class pair with too few pairs for a line (fewer than 3, or no spread
//! in bandwidth) falls back to its constant, and one never measured to the
//! mean of every pair. A job without a probe has no class and is predicted
//! at the mean of every pair.

use std::collections::BTreeMap;

use cosched_model::probe::Class;

use crate::features::Features;
use crate::fit::{Band, Linear};
use crate::predictors::{need_pairs, need_probes, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

/// The model of one class pair.
#[derive(Debug, Clone, PartialEq)]
pub enum CellModel {
    Constant(f64),
    /// `a * x + b` with x the co-runner's bandwidth (C-S) or the sum of both (S-S).
    Line { a: f64, b: f64 },
}

pub(super) const SCN: PredictorEntry = PredictorEntry {
    name: "scn",
    summary: "Haritatos et al.: N/C/S classes from the probe; per-class-pair constants, lines in the co-runner's bandwidth for C-S and S-S",
    params: &[],
    make: |_| Ok(Box::new(Scn::default())),
};

#[derive(Debug, Clone, Default)]
pub struct Scn {
    cells: BTreeMap<(u8, u8), (CellModel, Band)>,
    overall: f64,
    overall_band: Band,
    fitted: bool,
}

fn code(c: Class) -> u8 {
    match c {
        Class::N => 0,
        Class::C => 1,
        Class::S => 2,
    }
}

/// The regressor of a class pair's line, if it has one.
fn regressor(victim: Class, other: Class, fv: &Features, fo: &Features) -> Option<f64> {
    match (victim, other) {
        (Class::C, Class::S) => Some(fo.bandwidth),
        (Class::S, Class::S) => Some(fv.bandwidth + fo.bandwidth),
        _ => None,
    }
}

impl Scn {
    /// The fitted model of victim class `v` beside class `o`.
    pub fn cell(&self, v: Class, o: Class) -> Option<&CellModel> {
        self.cells.get(&(code(v), code(o))).map(|(m, _)| m)
    }

    fn point(&self, fv: &Features, fo: &Features) -> (f64, Band) {
        let (Some(cv), Some(co)) = (fv.class(), fo.class()) else {
            return (self.overall, self.overall_band);
        };
        match self.cells.get(&(code(cv), code(co))) {
            Some((CellModel::Constant(c), band)) => (*c, *band),
            Some((CellModel::Line { a, b }, band)) => {
                let x = regressor(cv, co, fv, fo).expect("a line only for class pairs with a regressor");
                (a * x + b, *band)
            }
            None => (self.overall, self.overall_band),
        }
    }
}

impl Predictor for Scn {
    fn name(&self) -> &'static str {
        "scn"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        need_probes(self.name(), train)?;
        let obs = observations(train);
        self.overall = obs.iter().map(|o| o.2).sum::<f64>() / obs.len() as f64;
        self.overall_band = Band::of(&obs.iter().map(|o| (o.2, self.overall)).collect::<Vec<_>>());
        // Per class pair: (regressor, measured slowdown) of each observation.
        type Cell = Vec<(Option<f64>, f64)>;
        let mut by_cell: BTreeMap<(u8, u8), Cell> = BTreeMap::new();
        for (v, o, m) in &obs {
            let (fv, fo) = (Features::of(v), Features::of(o));
            let (Some(cv), Some(co)) = (fv.class(), fo.class()) else { continue };
            by_cell.entry((code(cv), code(co))).or_default().push((regressor(cv, co, &fv, &fo), *m));
        }
        self.cells.clear();
        for (key, pts) in by_cell {
            let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
            let line = if pts.len() >= 3 && pts.iter().all(|p| p.0.is_some()) {
                let xs: Vec<Vec<f64>> = pts.iter().map(|p| vec![p.0.unwrap()]).collect();
                let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
                Linear::ridge(&xs, &ys, 0.0).filter(|l| l.coef[0] != 0.0)
            } else {
                None
            };
            let model = match line {
                Some(l) => CellModel::Line { a: l.coef[0], b: l.intercept },
                None => CellModel::Constant(mean),
            };
            let fitted: Vec<(f64, f64)> = pts
                .iter()
                .map(|(x, m)| {
                    let p = match &model {
                        CellModel::Constant(c) => *c,
                        CellModel::Line { a, b } => a * x.unwrap() + b,
                    };
                    (*m, p)
                })
                .collect();
            self.cells.insert(key, (model, Band::of(&fitted)));
        }
        self.fitted = true;
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        if !self.fitted {
            return Prediction::alone();
        }
        let (s, band) = self.point(&Features::of(victim), &Features::of(other));
        // A line extrapolated past its data could go below zero; a slowdown cannot.
        band.around(s.max(0.05))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, probe_program, Shape};

    /// The model of the seed with known constants: C-S = 0.5 BW + 1.1,
    /// S-S = 0.8 (BW_in + BW_co) + 1.0, C-C 1.2, everything else 1.0.
    fn truth(v: &Characterization, o: &Characterization) -> f64 {
        let (fv, fo) = (Features::of(v), Features::of(o));
        match (fv.class().unwrap(), fo.class().unwrap()) {
            (Class::C, Class::S) => 0.5 * fo.bandwidth + 1.1,
            (Class::S, Class::S) => 0.8 * (fv.bandwidth + fo.bandwidth) + 1.0,
            (Class::C, Class::C) => 1.2,
            _ => 1.0,
        }
    }

    #[test]
    fn class_pair_models_are_recovered_from_pairs_they_generated() {
        let progs = vec![
            probe_program("n1", Shape::N, 0.0),
            probe_program("n2", Shape::N, 0.05),
            probe_program("c1", Shape::C, 0.1),
            probe_program("c2", Shape::C, 0.2),
            probe_program("s1", Shape::S, 0.3),
            probe_program("s2", Shape::S, 0.6),
            probe_program("s3", Shape::S, 0.9),
        ];
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut p = Scn::default();
        p.fit(&train).unwrap();
        match p.cell(Class::C, Class::S).unwrap() {
            CellModel::Line { a, b } => assert!((a - 0.5).abs() < 1e-9 && (b - 1.1).abs() < 1e-9, "{a} {b}"),
            m => panic!("{m:?}"),
        }
        match p.cell(Class::S, Class::S).unwrap() {
            CellModel::Line { a, b } => assert!((a - 0.8).abs() < 1e-9 && (b - 1.0).abs() < 1e-9, "{a} {b}"),
            m => panic!("{m:?}"),
        }
        assert_eq!(p.cell(Class::C, Class::C), Some(&CellModel::Constant(1.2)));
        // A new streaming job, never measured in a pair, is predicted by its class.
        let s4 = probe_program("s4", Shape::S, 0.4);
        let got = p.predict_pair(&progs[2], &s4);
        assert!((got.slowdown - (0.5 * 0.4 + 1.1)).abs() < 1e-9, "{got:?}");
        assert!((got.hi - got.lo).abs() < 1e-9, "exact data, no band");
    }
}
