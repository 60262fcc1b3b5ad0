//! `blind`: every pair co-runs at slowdown 1. It knows nothing and learns
//! nothing, which is the point: the predictor of a program never
//! characterized, against which online detection and reaction are judged
//! (issue 38), and the floor every other predictor must beat.

use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

pub(super) const BLIND: PredictorEntry = PredictorEntry {
    name: "blind",
    summary: "every pair co-runs at slowdown 1: knows nothing, the floor to beat and the case online reaction is for",
    params: &[],
    make: |_| Ok(Box::new(Blind)),
};

#[derive(Debug, Clone, Copy, Default)]
pub struct Blind;

impl Predictor for Blind {
    fn name(&self) -> &'static str {
        "blind"
    }

    fn fit(&mut self, _train: &TrainingSet) -> Result<(), PredictError> {
        Ok(())
    }

    fn predict_pair(&self, _victim: &Characterization, _other: &Characterization) -> Prediction {
        Prediction::alone()
    }
}
