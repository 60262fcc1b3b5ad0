//! `cosched predict`: each job's predicted slowdown in a co-schedule, from a
//! predictor fitted on the store's measurements of the workload.

use std::path::PathBuf;

use cosched_predict::{CoSchedule, Placed};
use serde::Serialize;

use crate::common::{db_path, describe_campaigns, load_workload, open_read_only_store, UsedCampaign};
use crate::error::bad_input;
use crate::regime::ChosenRegime;
use crate::render::{Doc, Render};
use cosched_learn::training::{build, training_set_in};

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
    pub kb: cosched_learn::knowledge::KbScope,
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

/// `cosched predict`; `--json` names the predictor `model`.
#[derive(Debug, Serialize)]
pub struct PredictReport {
    /// The predictor as asked for: NAME or NAME:key=value,...
    pub model: String,
    pub jobs: Vec<JobPrediction>,
    /// Measured ordered pairs the predictor was fitted on.
    pub pairs: usize,
    #[serde(skip)]
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
        model: a.predictor.clone(),
        jobs,
        pairs: train.pairs.len(),
        workload: w.name.clone(),
        campaigns: sources.campaigns,
        knowledge: sources.knowledge,
        regime,
        regime_use: sources.regime,
    })
}

impl Render for PredictReport {
    fn doc(&self) -> Doc {
        let rows = self
            .jobs
            .iter()
            .map(|j| {
                let interval = format!("[{:.3}, {:.3}]", j.lo, j.hi);
                vec![j.job.clone(), j.pool.clone(), j.cores.to_string(), format!("{:.3}", j.slowdown), interval]
            })
            .collect();
        let mut d = Doc::new();
        d.table(&["job", "pool", "cores", "predicted slowdown", "interval (~80 %)"], rows);
        d.line(format!(
            "{}, fitted on {} measured ordered pairs of {}{}; slowdown = co-run time / solo time beside all the other jobs listed.",
            self.model,
            self.pairs,
            self.workload,
            if self.knowledge.is_some() { " and of other workloads" } else { "" }
        ));
        for line in describe_campaigns(&self.campaigns) {
            d.line(format!("from {line}"));
        }
        if let Some(k) = &self.knowledge {
            d.line(format!("and from other workloads' measurements of the same and other programs: {k}"));
        }
        let used = self.regime_use.as_ref().map_or(String::new(), |u| format!("; {}", u.describe()));
        d.line(format!("for {}{used}", self.regime.describe()));
        d
    }
}
