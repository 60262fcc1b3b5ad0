//! `cosched slurm report`: realized slowdowns and node-hours saved on a Slurm cluster.

use std::path::PathBuf;

use clap::Args;
use cosched_app::slurm::{report, tables, ReportRequest};
use cosched_model::text::printable;
use cosched_report::table;

use super::common::print_json;
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
    let r = report(&ReportRequest { target: target(a.target), days: a.days, dir: a.report })?;
    if json {
        return print_json(&r);
    }
    for n in &r.notes {
        println!("{}", printable(n));
    }
    let t = &r.total;
    println!("\n{} jobs; node-hours alone {:.3}, used {:.3}, saved by sharing {:.3}\n", r.jobs.len(), t.exclusive, t.used, t.saved);
    for (title, head, rows) in tables(&r) {
        let rows: Vec<Vec<String>> = rows.iter().map(|row| row.iter().map(|c| printable(c).into_owned()).collect()).collect();
        println!("{title}:\n{}\n", table(&head, &rows));
    }
    println!("realized = a job's time / its solo time; predicted = cosched's prediction at its release; |error| = |realized - predicted|.");
    if let Some(index) = &r.index {
        println!("report: {}", index.display());
    }
    Ok(())
}
