//! `cosched check`: validate workload and scenario files.
use std::path::PathBuf;

use clap::Args;
use cosched_app::check::{check, CheckRequest, Checked};
use cosched_model::workload::{Amount, PoolKind, Workload};

use super::common::{DbArgs, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched check examples/mixed.toml examples/seed000.toml\n  \
    cosched check examples/scenarios/memory-half.toml   # a simulation scenario\n  \
    cosched check --node-cores 64 big.toml     # for a machine larger than this one\n  \
    cosched check --json examples/twins.toml | jq '.[0].jobs[].name'\n\n\
    A file with [[programs]] is read as a scenario (cosched simulate), one\n\
    with [[jobs]] as a workload. Errors go to stderr as FILE:LINE:COL: what\n\
    is wrong; what is expected.\n\
    Exit code 0 if every file is valid, 2 if any is not.")]
pub struct CheckArgs {
    /// Workload or scenario files to validate.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    // Where scenarios that read measurements find them.
    #[command(flatten)]
    pub db: DbArgs,
    // With --json: the resolved workloads as a JSON array, one per valid file.
    #[command(flatten)]
    pub json: JsonArgs,
    /// Check against a node with this many cores instead of this machine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub node_cores: Option<u32>,
}

pub fn run(a: CheckArgs) -> anyhow::Result<()> {
    let report = check(&CheckRequest { files: a.files.clone(), node_cores: a.node_cores, db: a.db.db });
    let mut valid = Vec::new();
    for f in &report.files {
        match &f.result {
            Ok(Checked::Workload(w)) => {
                if !a.json.json {
                    println!("{}: ok, {}", f.shown, summary(w));
                }
                valid.push(w);
            }
            Ok(Checked::Scenario(s)) => {
                if !a.json.json {
                    let kinds = s.platform.pools.len();
                    println!(
                        "{}: ok, scenario: {} jobs of {} programs on {} node(s) of {kinds} pool(s); slowdowns {}",
                        f.shown,
                        s.job_program.len(),
                        s.programs.len(),
                        s.nodes,
                        s.origin
                    );
                }
            }
            Ok(Checked::NeedsData { why }) => {
                if !a.json.json {
                    println!("{}: ok as a file; needs data to simulate: {why}", f.shown);
                }
            }
            Err(diags) => eprintln!("{diags}"),
        }
    }
    if a.json.json {
        super::common::print_json(&valid)?;
    }
    let bad = report.invalid();
    if bad > 0 {
        let files = if a.files.len() == 1 {
            "the file is".to_string()
        } else {
            format!("{bad} of {} files are", a.files.len())
        };
        return Err(cosched_app::bad_input(format!("{files} invalid (see above)")));
    }
    Ok(())
}

/// One line for people: jobs, pools, dependencies, variants and twins.
fn summary(w: &Workload) -> String {
    let plural = |n: usize, what: &str| if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") };
    let pools: Vec<String> = w
        .pools
        .iter()
        .map(|p| {
            let size = match (p.kind, p.cores) {
                (PoolKind::Cpu, Some(c)) => plural(c as usize, "core"),
                (PoolKind::Cpu, None) => "all cores".into(),
                (PoolKind::Accelerator { host_load }, c) => {
                    format!("accelerator, {}, host load {host_load}", plural(c.unwrap_or(1) as usize, "slot"))
                }
            };
            format!("{}: {size}", p.name)
        })
        .collect();
    let mut out = format!("{} on {} ({})", plural(w.jobs.len(), "job"), plural(w.pools.len(), "pool"), pools.join("; "));
    let calibrated = w.jobs.iter().filter(|j| matches!(j.amount, Amount::Seconds(_))).count();
    if calibrated > 0 {
        out.push_str(&format!("; {calibrated} sized by calibration"));
    }
    let deps: usize = w.jobs.iter().map(|j| j.after.len()).sum();
    if deps > 0 {
        out.push_str(&format!("; {}", plural(deps, "dependency").replace("dependencys", "dependencies")));
    }
    let variants: usize = w.jobs.iter().map(|j| j.variants.len()).sum();
    if variants > 0 {
        let with = w.jobs.iter().filter(|j| !j.variants.is_empty()).count();
        out.push_str(&format!("; {} with {} in all", plural(with, "job"), plural(variants, "variant")));
    }
    let twins = w.twins();
    if twins.is_empty() {
        out.push_str("; no twins");
    } else {
        let groups: Vec<String> =
            twins.iter().map(|g| g.iter().map(|&i| w.jobs[i].name.as_str()).collect::<Vec<_>>().join(" = ")).collect();
        out.push_str(&format!("; twins: {}", groups.join(", ")));
    }
    out
}
