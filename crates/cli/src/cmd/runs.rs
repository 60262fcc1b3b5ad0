//! `cosched runs`: past real runs with their key figures; `runs show ID`.
use clap::{Args, Subcommand};
use cosched_app::runs::{runs, show, RunsRequest};

use super::common::{emit, DbArgs, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched runs                          # every run: policy, status, makespan, worst slowdown\n  \
    cosched runs --workload mixed --last 10 --no-passes\n  \
    cosched runs show 42                  # one run job by job: CPUs, times, status, slowdowns\n  \
    cosched runs --json | jq '.[] | select(.not_ok != [])'")]
pub struct RunsArgs {
    #[command(subcommand)]
    show: Option<RunsCmd>,
    /// Only runs of this workload (its name, as `cosched db info` shows it).
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N", default_value_t = 0)]
    last: usize,
    /// Leave out the solo passes that start each repeat.
    #[arg(long)]
    no_passes: bool,
    #[command(flatten)]
    json: JsonArgs,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Subcommand, Debug)]
enum RunsCmd {
    /// One run job by job.
    Show {
        id: i64,
        #[command(flatten)]
        json: JsonArgs,
        #[command(flatten)]
        db: DbArgs,
    },
}

pub fn run(a: RunsArgs) -> anyhow::Result<()> {
    if let Some(RunsCmd::Show { id, json, db }) = a.show {
        if a.workload.is_some() || a.last != 0 || a.no_passes {
            return Err(cosched_app::bad_input("--workload, --last and --no-passes filter the list; `runs show ID` shows one run"));
        }
        // `runs --db X show 2` and `runs show 2 --db X` mean the same.
        let path = db.db.or(a.db.db);
        return emit(&show(path.as_deref(), id)?, json.json || a.json.json);
    }
    emit(&runs(&RunsRequest { db: a.db.db, workload: a.workload, last: a.last, no_passes: a.no_passes })?, a.json.json)
}
