//! `cosched classify`: class N / C / S of each probed job (Haritatos et al.), from
//! its latest finished probe, with the measured reason and, where a profile
//! exists, its host load U.

use std::path::PathBuf;

use clap::Args;
use cosched_app::classify::{classify, ClassifyRequest};
use cosched_model::probe::ClassRule;
use cosched_report::curves::fmt_kib;
use cosched_report::table;

use super::common::{print_json, DbArgs, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched classify\n  \
    cosched classify --workload examples/characterize.toml   # also lists jobs not probed yet\n  \
    cosched classify --json --db results/cosched.db\n\n\
    Each job's latest finished probe (cosched probe) is split at the LLC size: a job\n\
    slowed by more than --significant already while the stressor fits the LLC is C\n\
    (LLC-sensitive), one slowed only once the stressor streams from memory is S\n\
    (streaming), one never slowed is N (core-bound). The figures behind the class are\n\
    printed beside it.")]
pub struct ClassifyArgs {
    /// Classify this workload's jobs (and list those never probed); default:
    /// every job with a finished probe in the database.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// LLC size in KiB that splits each curve into cache and memory sides
    /// (default: the LLC detected on the node that ran the probe, recorded
    /// with it, else this node's).
    #[arg(long, value_name = "KIB")]
    pub llc_kib: Option<u64>,
    /// A median slowdown above this counts as slowed.
    #[arg(long, default_value_t = ClassRule::default().significant, value_name = "X")]
    pub significant: f64,
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: ClassifyArgs) -> anyhow::Result<()> {
    let req = ClassifyRequest { workload: a.workload.clone(), llc_kib: a.llc_kib, significant: a.significant, db: a.db.db };
    let classified = classify(&req)?;
    let rows = classified.rows;
    if a.json.json {
        return print_json(&rows);
    }
    let w = a.workload.as_ref();
    let show_workload = w.is_none() && rows.iter().any(|r| r.workload != rows[0].workload);
    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            if show_workload {
                v.push(r.workload.clone());
            }
            v.extend([
                r.job.clone(),
                r.class.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                f(r.baseline),
                f(r.sens_llc),
                f(r.sens_mem),
                f(r.cont_max),
                f(r.host_load),
                r.llc_kib.map(fmt_kib).unwrap_or_else(|| "-".into()),
                r.campaign.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            ]);
            v
        })
        .collect();
    let mut headers = Vec::new();
    if show_workload {
        headers.push("workload");
    }
    headers.extend(["job", "class", "baseline", "sens. in LLC", "sens. beyond", "content.", "U", "LLC", "probe"]);
    println!("{}", table(&headers, &table_rows));
    // A sentence per job reads as prose under the table: as a column it
    // was wrapped a word a line to fit 100 columns.
    println!("\nwhy:");
    for r in &rows {
        let who = if show_workload { format!("{} {}", r.workload, r.job) } else { r.job.clone() };
        println!("  {who}: {}", r.reason);
    }
    println!(
        "\nN core-bound, C LLC-sensitive, S streaming (Haritatos et al.). baseline: the job's slowdown beside the stressor in\n\
         private cache (core sharing); sens.: largest median slowdown of the job with the stressor inside / beyond\n\
         the LLC, divided by the baseline; content.: largest median slowdown of the stressor beside the job;\n\
         slowed means above {:.2}. U: host load of the job's latest solo profile (cosched profile), '-' when none.",
        a.significant
    );
    for line in cosched_app::common::describe_campaigns(&classified.campaigns) {
        println!("from {line}");
    }
    Ok(())
}

