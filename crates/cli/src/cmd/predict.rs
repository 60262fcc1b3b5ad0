//! `cosched predict`: each job's predicted slowdown in a co-schedule, from a
//! predictor fitted on the store's measurements of the workload.

use std::path::{Path, PathBuf};

use clap::Args;
use cosched_model::profile::JobProfile;
use cosched_model::workload::Workload;
use cosched_predict::predictors::parse_spec;
use cosched_predict::{
    predictor_by_name, Characterization, CoSchedule, PairSamples, Placed, Predictor, TrainingSet,
};
use cosched_report::table;
use cosched_store::{Measurements, ProbePointRecord, Store};
use serde::Serialize;

use super::common::{load_workload, print_registry, DbArgs};
use super::probe::points_of;
use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched predict --list\n  \
    cosched predict --model scn --workload examples/predict12.toml stream ng-stream\n  \
    cosched predict --model learned --workload examples/predict12.toml stream cache compute --json\n  \
    cosched predict --model twins:base=probe --workload examples/predict12.toml dgemm dgemm\n\n\
    The predictor is fitted on everything the database holds for the workload (the\n\
    latest profile, probe and pairs campaigns: run cosched profile / probe / pairs\n\
    --workload FILE first), then predicts each named job's slowdown beside all the\n\
    others. A job named twice runs twice (twins). Beside several co-runners a job's\n\
    slowdown is the product of its pairwise predictions. The interval holds about\n\
    80 % of the predictor's errors on the pairs it was fitted on.")]
pub struct PredictArgs {
    /// List the registered predictors and exit.
    #[arg(long)]
    pub list: bool,
    /// The predictor: NAME or NAME:key=value,... (see --list).
    #[arg(long, value_name = "M", required_unless_present = "list")]
    pub model: Option<String>,
    /// Workload file the jobs come from.
    #[arg(long, value_name = "FILE", required_unless_present = "list")]
    pub workload: Option<PathBuf>,
    /// Jobs sharing the node (names from the workload).
    #[arg(value_name = "JOB", required_unless_present = "list")]
    pub jobs: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Serialize)]
struct JobPrediction {
    job: String,
    pool: String,
    cores: u32,
    slowdown: f64,
    lo: f64,
    hi: f64,
}

pub fn run(a: PredictArgs) -> anyhow::Result<()> {
    if a.list {
        return print_registry(cosched_predict::predictors::PREDICTORS, a.json);
    }
    let spec = a.model.as_deref().expect("clap requires --model");
    let path = a.workload.as_deref().expect("clap requires --workload");
    let mut predictor = build(spec)?;
    let w = load_workload(path)?;
    let mut placed_jobs = Vec::new();
    for name in &a.jobs {
        let job = w.jobs.iter().find(|j| &j.name == name).ok_or_else(|| {
            let known: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
            bad_input(format!("{}: no job `{name}`; its jobs are: {}", path.display(), known.join(", ")))
        })?;
        placed_jobs.push(job);
    }
    let store = a.db.open_existing()?;
    let (train, _) = training_set(&store, &w, path)?;
    predictor.fit(&train).map_err(|e| anyhow::anyhow!("{e}"))?;
    let co = CoSchedule {
        jobs: placed_jobs
            .iter()
            .map(|j| Placed { job: &train.programs[&j.name], pool: j.pool.clone(), cores: j.cores })
            .collect(),
    };
    let preds = predictor.predict(&co);
    let out: Vec<JobPrediction> = co
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
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"model": spec, "jobs": out}))?);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = out
        .iter()
        .map(|j| {
            vec![
                j.job.clone(),
                j.pool.clone(),
                j.cores.to_string(),
                format!("{:.3}", j.slowdown),
                format!("[{:.3}, {:.3}]", j.lo, j.hi),
            ]
        })
        .collect();
    println!("{}", table(&["job", "pool", "cores", "predicted slowdown", "interval (~80 %)"], &rows));
    println!(
        "{spec}, fitted on {} measured pairs of {}; slowdown = co-run time / solo time beside all the other jobs listed.",
        train.pairs.len(),
        w.name
    );
    Ok(())
}

/// An unfitted predictor from `NAME[:key=value,...]`; a bad spec is exit code 2.
pub fn build(spec: &str) -> anyhow::Result<Box<dyn Predictor>> {
    let (name, params) = parse_spec(spec).map_err(|e| bad_input(format!("--model {spec}: {e}")))?;
    predictor_by_name(&name, &params).map_err(|e| bad_input(format!("--model {spec}: {e}")))
}

/// Where a training set came from: campaign ids by kind, and whether the
/// pairs campaign is still running (its whole repeats count).
#[derive(Debug, Clone, Serialize)]
pub struct Sources {
    pub profile: Vec<i64>,
    pub probe: Vec<i64>,
    pub pairs: i64,
    pub pairs_status: String,
    pub pair_runs: usize,
    /// Pair samples from real runs (`cosched run`) of the workload.
    pub run_pairs: usize,
}

impl Sources {
    /// One line for people: which data a predictor was fitted on.
    pub fn describe(&self) -> String {
        let ids = |v: &[i64]| if v.is_empty() { "none".to_string() } else { v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",") };
        let pairs = if self.pairs > 0 {
            format!("pairs campaign {} ({}, {} repeats)", self.pairs, self.pairs_status, self.pair_runs)
        } else {
            "no pairs campaign".to_string()
        };
        format!(
            "profile campaign(s) {}, probe campaign(s) {}, {pairs}, {} pair sample(s) from real runs",
            ids(&self.profile),
            ids(&self.probe),
            self.run_pairs
        )
    }
}

/// The training set of a workload from the store: each job's latest
/// finished profile and probe, and the latest pairs campaign. A job without
/// a profile or probe, or no pairs, is an error (exit code 1) naming the
/// command that measures it.
pub fn training_set(store: &Store, w: &Workload, path: &Path) -> anyhow::Result<(TrainingSet, Sources)> {
    let m = store.measurements(&w.name)?;
    let file = path.display();
    let missing = |what: &str, verb: &str, jobs: &[&str]| {
        anyhow::anyhow!(
            "{}: no {what} of {} in the database {}; run `cosched {verb} --workload {file}` first",
            w.name,
            jobs.join(", "),
            store.path().display()
        )
    };
    let no_profile: Vec<&str> = w
        .jobs
        .iter()
        .filter(|j| !m.profiles.iter().any(|(_, p)| p.job == j.name))
        .map(|j| j.name.as_str())
        .collect();
    if !no_profile.is_empty() {
        return Err(missing("finished profile", "profile", &no_profile));
    }
    let no_probe: Vec<&str> =
        w.jobs.iter().filter(|j| !m.probes.iter().any(|(_, job, _)| *job == j.name)).map(|j| j.name.as_str()).collect();
    if !no_probe.is_empty() {
        return Err(missing("finished probe", "probe", &no_probe));
    }
    if m.pairs.is_none() && m.run_pairs.is_empty() {
        return Err(missing("pairs campaign", "pairs", &[w.name.as_str()]));
    }
    available_training_set(&m, w)
}

/// The training set from whatever the store holds: a job's profile and
/// probe where measured (predictors read missing ones as absent), the
/// latest pairs campaign's repeats and the pair samples of real runs. For
/// `cosched run` and `cosched demo`, which fit what they can and say so.
pub fn available_training_set(m: &Measurements, w: &Workload) -> anyhow::Result<(TrainingSet, Sources)> {
    let mut programs = Vec::new();
    for job in &w.jobs {
        let profile = match m.profiles.iter().find(|(_, p)| p.job == job.name) {
            Some((_, prof)) => Some(serde_json::from_value::<JobProfile>(prof.summary.clone()).map_err(|e| {
                anyhow::anyhow!("the stored profile of `{}` is not a job profile this cosched reads ({e}); profile it again", job.name)
            })?),
            None => None,
        };
        let (probe, llc_kib) = match m.probes.iter().find(|(_, j, _)| *j == job.name) {
            Some((probe_campaign, _, records)) => {
                let refs: Vec<&ProbePointRecord> = records.iter().collect();
                (points_of(&refs), probe_campaign.params.get("llc_kib").and_then(|v| v.as_u64()))
            }
            None => (Vec::new(), None),
        };
        programs.push(Characterization {
            name: job.name.clone(),
            program: job.program_key(),
            cores: job.cores,
            profile,
            probe,
            llc_kib,
        });
    }
    let known = |n: &str| w.jobs.iter().any(|j| j.name == n);
    let mut pairs = Vec::new();
    if let Some((_, runs)) = &m.pairs {
        for r in runs.iter().filter(|r| known(&r.fg_job) && known(&r.bg_job)) {
            pairs.push(PairSamples { victim: r.fg_job.clone(), aggressor: r.bg_job.clone(), slowdowns: vec![r.fg_slowdown()] });
            pairs.push(PairSamples { victim: r.bg_job.clone(), aggressor: r.fg_job.clone(), slowdowns: vec![r.bg_slowdown()] });
        }
    }
    let mut run_pairs = 0;
    for r in m.run_pairs.iter().filter(|r| known(&r.victim) && known(&r.co_runner)) {
        pairs.push(PairSamples { victim: r.victim.clone(), aggressor: r.co_runner.clone(), slowdowns: vec![r.slowdown] });
        run_pairs += 1;
    }
    let train = TrainingSet::new(programs, pairs).map_err(|e| anyhow::anyhow!("the stored pairs of {}: {e}", w.name))?;
    let mut profile: Vec<i64> = m.profiles.iter().map(|(c, _)| c.id.0).collect();
    profile.sort();
    profile.dedup();
    let mut probe: Vec<i64> = m.probes.iter().map(|(c, _, _)| c.id.0).collect();
    probe.sort();
    probe.dedup();
    let sources = Sources {
        profile,
        probe,
        pairs: m.pairs.as_ref().map_or(0, |(c, _)| c.id.0),
        pairs_status: m.pairs.as_ref().map_or(String::new(), |(c, _)| c.status.to_string()),
        pair_runs: m.pairs.as_ref().map_or(0, |(_, r)| r.len()),
        run_pairs,
    };
    Ok((train, sources))
}
