//! `cosched predict`: each job's predicted slowdown in a co-schedule, from a
//! predictor fitted on the store's measurements of the workload.

use std::path::PathBuf;

use cosched_predict::{CoSchedule, Placed};
use serde::Serialize;

use crate::common::{db_path, load_workload, open_read_only_store, UsedCampaign};
use crate::error::bad_input;
use crate::regime::ChosenRegime;
use crate::training::{build, training_set_in};

#[derive(Debug, Clone)]
pub struct PredictRequest {
    /// The predictor: NAME or NAME:key=value,...
    pub predictor: String,
    pub workload: PathBuf,
    /// Jobs sharing the node, by name; a name given twice runs twice.
    pub jobs: Vec<String>,
    /// The cache regime to predict for (`shared`, `apart`, `any`); `None`:
    /// the one the node is in now.
    pub regime: Option<String>,
    /// Other workloads' campaigns only from this node and time on.
    pub kb: crate::knowledge::KbScope,
    pub db: Option<PathBuf>,
}

/// One job's predicted slowdown beside all the others, with its interval.
#[derive(Debug, Serialize)]
pub struct JobPrediction {
    pub job: String,
    pub pool: String,
    pub cores: u32,
    pub slowdown: f64,
    pub lo: f64,
    pub hi: f64,
}

#[derive(Debug)]
pub struct PredictReport {
    pub jobs: Vec<JobPrediction>,
    /// Measured ordered pairs the predictor was fitted on.
    pub pairs: usize,
    pub workload: String,
    /// The campaigns the predictor was fitted on.
    pub campaigns: Vec<UsedCampaign>,
    /// What other workloads' measurements added, if any.
    pub knowledge: Option<String>,
    /// The regime predicted for, and how its repeats were chosen.
    pub regime: ChosenRegime,
    /// Pair by pair: on its repeats in the regime, or all (fallback).
    pub regime_use: Option<cosched_predict::regime::RegimeUse>,
}

pub fn predict(a: &PredictRequest) -> anyhow::Result<PredictReport> {
    let path = &a.workload;
    let mut predictor = build(&a.predictor)?;
    let regime = crate::regime::choose(a.regime.as_deref(), crate::regime::read_now)?;
    let w = load_workload(path)?;
    let mut placed_jobs = Vec::new();
    for name in &a.jobs {
        let job = w.jobs.iter().find(|j| &j.name == name).ok_or_else(|| {
            let known: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
            bad_input(format!("{}: no job `{name}`; its jobs are: {}", path.display(), known.join(", ")))
        })?;
        placed_jobs.push(job);
    }
    let store = open_read_only_store(&db_path(a.db.as_deref()))?;
    let (train, sources) = training_set_in(&store, &w, path, Some(&a.kb), regime.regime)?;
    predictor.fit(&train).map_err(|e| anyhow::anyhow!("{e}"))?;
    let co = CoSchedule {
        jobs: placed_jobs.iter().map(|j| Placed { job: &train.programs[&j.name], pool: j.pool.clone(), cores: j.cores }).collect(),
    };
    let preds = predictor.predict(&co);
    let jobs = co
        .jobs
        .iter()
        .zip(&preds)
        .map(|(p, s)| JobPrediction {
            job: p.job.name.clone(),
            pool: p.pool.clone(),
            cores: p.cores,
            slowdown: s.slowdown,
            lo: s.lo,
            hi: s.hi,
        })
        .collect();
    Ok(PredictReport {
        jobs,
        pairs: train.pairs.len(),
        workload: w.name.clone(),
        campaigns: sources.campaigns,
        knowledge: sources.knowledge,
        regime,
        regime_use: sources.regime,
    })
}
