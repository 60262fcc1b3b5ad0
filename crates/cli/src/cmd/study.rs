//! `cosched study`: the nOS-V paper's co-execution study, every pair and
//! some triples of a workload's programs under each node-sharing strategy,
//! scored by the paper's performance score.

use std::path::PathBuf;

use clap::Args;
use cosched_app::study::{study, StudyRequest};

use super::common::{ctx, emit, DbArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched study --workload examples/omp/study.toml --repeats 3 --report out/study\n  \
    cosched study --workload w.toml --triples 35 --json | jq .summary\n\n\
    Every pair of the workload's jobs, and --triples of its triples (spread\n\
    evenly over all of them, or all when fewer), run for real (`cosched run`'s\n\
    engine, stored as runs) under: exclusive (one after the other);\n\
    oversubscription with idle and with busy waiting (overbook:pin=off, every\n\
    job on every core, with OMP_WAIT_POLICY=passive / active in each job's\n\
    environment: OpenMP programs sleep or spin at barriers, other programs\n\
    ignore it); static co-location (colocate); dynamic co-location\n\
    (colocate:rebalance=on: a finished job's cores go to the survivors);\n\
    co-execution (timeshare). Each set's score per strategy is the best\n\
    median makespan among the strategies over this one's (the nOS-V paper's\n\
    performance score, 1 = best); the table gives each strategy's median with\n\
    quartiles and extremes over the pairs and over the triples. --report\n\
    writes index.html, a box plot of scores per set size, a heatmap per\n\
    strategy over the pairs, study.json and each set's workload files.")]
pub struct StudyArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Triples run, spread evenly over all of them (all when fewer; 0: pairs only).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub triples: usize,
    /// Runs of each strategy on each set.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeats: u32,
    /// Write index.html, study.json, the box plots and heatmaps here.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArgs,
    /// cgroup hierarchy: auto, v1, v2 or none (affinity and signals only).
    #[arg(long, default_value = "auto", value_name = "MODE", value_parser = ["auto", "v1", "v2", "none"])]
    pub cgroups: String,
    /// Node lock file, for tests only.
    #[arg(long, value_name = "FILE", hide = true)]
    pub lock: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: StudyArgs) -> anyhow::Result<()> {
    let req = StudyRequest {
        workload: a.workload.workload,
        triples: a.triples,
        repeats: a.repeats,
        report: a.report,
        cgroups: a.cgroups,
        lock: a.lock,
        db: a.db.db,
    };
    emit(&study(&req, &ctx())?, a.json.json)
}
