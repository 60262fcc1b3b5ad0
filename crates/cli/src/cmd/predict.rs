//! `cosched predict`: each job's predicted slowdown in a co-schedule, from a
//! predictor fitted on the store's measurements of the workload.

use std::path::PathBuf;

use clap::Args;
use cosched_app::predict::{predict, PredictRequest};

use super::common::{emit, print_listing, DbArgs, JsonArgs, KbArgs, PredictorArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched predict --list\n  \
    cosched predict --predictor scn --workload examples/predict12.toml stream ng-stream\n  \
    cosched predict --predictor learned --workload examples/predict12.toml stream cache compute --json\n  \
    cosched predict --predictor twins:base=probe --workload examples/predict12.toml dgemm dgemm\n  \
    cosched predict --predictor learned --kb-since 2026-11-24 --workload examples/mixed.toml triad llc\n\n\
    The predictor is fitted on everything the database holds for the workload (the\n\
    latest profile, probe and pairs campaigns: run cosched profile / probe / pairs\n\
    --workload FILE first), then predicts each named job's slowdown beside all the\n\
    others. A job named twice runs twice (twins). Beside several co-runners a job's\n\
    slowdown is the product of its pairwise predictions. The interval holds about\n\
    80 % of the predictor's errors on the pairs it was fitted on. --regime picks\n\
    the repeats measured in one cache regime (each pair's, where it has any; else\n\
    all its repeats, and the output says so); by default the node's regime now.")]
pub struct PredictArgs {
    /// List the registered predictors and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub predictor: PredictorArgs,
    /// Workload file the jobs come from.
    #[arg(long, value_name = "FILE", required_unless_present = "list")]
    pub workload: Option<PathBuf>,
    /// Jobs sharing the node (names from the workload).
    #[arg(value_name = "JOB", required_unless_present = "list")]
    pub jobs: Vec<String>,
    /// Fit on the repeats of this cache regime: shared (the CPU round trip
    /// below 100 ns), apart, or any. Default: the node's regime now (read
    /// once), any when it cannot be read.
    #[arg(long, value_name = "REGIME")]
    pub regime: Option<String>,
    #[command(flatten)]
    pub kb: KbArgs,
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: PredictArgs) -> anyhow::Result<()> {
    if a.list {
        return print_listing(&cosched_app::registry::predictors(), a.json.json);
    }
    let spec = a.predictor.predictor.ok_or_else(|| cosched_app::bad_input("--predictor NAME is required (see --list)"))?;
    let workload = a.workload.expect("clap requires --workload");
    let r = predict(&PredictRequest { predictor: spec, workload, jobs: a.jobs, regime: a.regime, kb: a.kb.scope()?, db: a.db.db })?;
    emit(&r, a.json.json)
}
