//! `cosched slurm report`: realized slowdowns and node-hours saved on a Slurm cluster.

use std::path::PathBuf;

use clap::Args;
use cosched_app::slurm::{report, ReportRequest};

use super::common::emit;
use super::slurm::{target, TargetArgs};

pub const ABOUT: &str = "What sharing did: realized slowdowns of co-located jobs against predictions and running alone, node-hours saved";

pub const AFTER_HELP: &str = "Examples:\n  cosched slurm report --workload examples/mixed.toml\n  \
    cosched slurm report --days 1 --json | jq '.total'\n  \
    cosched slurm report --report slurm-report/    # index.html, report.json\n\n\
    Jobs of --partition that ended within --days, from sacct (slurmdbd, else the job\n\
    completion log, JobCompType=jobcomp/filetxt) joined with what `cosched slurm serve`\n\
    learned into the database (each job's time over its solo time, and cosched's\n\
    prediction at its release), per node, per pair of programs and per user. Node-hours\n\
    alone: each job's solo time on a node of its own; used: the time each node had a\n\
    job; saved = alone - used. Without sacct the store's jobs are reported alone, and\n\
    the report says so. Exit code 2 for a SLURM_CONF that cannot be read.";

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[arg(long, value_name = "D", default_value_t = 7.0, help = "Jobs that ended within this many days")]
    pub days: f64,
    #[arg(long, value_name = "DIR", help = "Also write an HTML page (index.html) and report.json here")]
    pub report: Option<PathBuf>,
}

pub fn run(a: ReportArgs) -> anyhow::Result<()> {
    let json = a.target.json.json;
    emit(&report(&ReportRequest { target: target(a.target), days: a.days, dir: a.report })?, json)
}
