//! `cosched runs`: past real runs with their key figures; `runs show ID`.
use clap::{Args, Subcommand};
use cosched_app::runs::{runs, show, RunRow, RunsRequest};
use cosched_report::table;

use super::common::{print_json, DbArgs, JsonArgs};

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

fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn line(r: &RunRow) -> Vec<String> {
    let not_ok = if r.not_ok.is_empty() { "all ok".to_string() } else { r.not_ok.join("; ") };
    vec![
        r.id.to_string(),
        r.started.clone(),
        r.workload.clone(),
        r.policy.clone(),
        r.repeat.to_string(),
        r.status.clone(),
        format!("{} ({not_ok})", r.jobs),
        secs(r.makespan_s),
        secs(r.mean_turnaround_s),
        ratio(r.worst_slowdown),
    ]
}

const HEAD: [&str; 10] =
    ["run", "started (UTC)", "workload", "policy", "repeat", "status", "jobs", "makespan s", "mean TAT s", "worst slowdown"];

pub fn run(a: RunsArgs) -> anyhow::Result<()> {
    if let Some(RunsCmd::Show { id, json, db }) = a.show {
        if a.workload.is_some() || a.last != 0 || a.no_passes {
            return Err(cosched_app::bad_input("--workload, --last and --no-passes filter the list; `runs show ID` shows one run"));
        }
        // `runs --db X show 2` and `runs show 2 --db X` mean the same.
        let path = db.db.or(a.db.db);
        let s = show(path.as_deref(), id)?;
        if json.json || a.json.json {
            return print_json(&s);
        }
        println!("{}", table(&HEAD, &[line(&s.run)]));
        println!("series {}, on {}, commit {}: {}\n", s.run.series, s.host, s.git_commit, s.command);
        let rows: Vec<Vec<String>> = s
            .jobs
            .iter()
            .map(|j| {
                let cpus: Vec<String> = j.cpus.iter().map(u32::to_string).collect();
                vec![
                    j.job.clone(),
                    cpus.join(","),
                    format!("{:.2}", j.arrival_s),
                    format!("{:.2}", j.start_s),
                    secs(j.end_s),
                    j.status.clone(),
                    if j.attempts > 1 { j.attempts.to_string() } else { "1".into() },
                    format!("{:.3}", j.predicted),
                    ratio(j.slowdown),
                    if j.beside.is_empty() { "-".into() } else { j.beside.join(", ") },
                ]
            })
            .collect();
        let head = ["job", "CPUs", "arrival s", "start s", "end s", "status", "attempts", "predicted", "slowdown", "beside at start"];
        println!("{}", table(&head, &rows));
        return Ok(());
    }
    let rows = runs(&RunsRequest { db: a.db.db, workload: a.workload, last: a.last, no_passes: a.no_passes })?;
    if a.json.json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        println!("no runs in the database yet (`cosched run --workload FILE` makes one)");
        return Ok(());
    }
    let lines: Vec<Vec<String>> = rows.iter().map(line).collect();
    println!("{}", table(&HEAD, &lines));
    Ok(())
}
