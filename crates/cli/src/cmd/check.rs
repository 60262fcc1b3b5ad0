//! `cosched check`: validate workload files.
use std::path::PathBuf;

use clap::Args;
use cosched_model::workload::{parse_workload, Amount, PoolKind, Workload};

use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched check examples/mixed.toml examples/seed000.toml\n  \
    cosched check --node-cores 64 big.toml     # for a machine larger than this one\n  \
    cosched check --json examples/twins.toml | jq '.[0].jobs[].name'\n\n\
    Errors go to stderr as FILE:LINE:COL: what is wrong; what is expected.\n\
    Exit code 0 if every file is valid, 2 if any is not.")]
pub struct CheckArgs {
    /// Workload files to validate.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the resolved workloads as a JSON array (one per valid file)
    /// instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Check against a node with this many cores instead of this machine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub node_cores: Option<u32>,
}

pub fn run(args: CheckArgs) -> anyhow::Result<()> {
    let node_cores = args.node_cores.or_else(|| {
        std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok())
    });
    let mut valid = Vec::new();
    let mut bad = 0usize;
    for path in &args.files {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!(
                    "{shown}: cannot read the file: {e}; expected a readable workload file (TOML)"
                );
                bad += 1;
                continue;
            }
        };
        match parse_workload(&text, &shown, node_cores) {
            Ok(w) => {
                if !args.json {
                    println!("{shown}: ok, {}", summary(&w));
                }
                valid.push(w);
            }
            Err(diags) => {
                eprintln!("{diags}");
                bad += 1;
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&valid)?);
    }
    if bad > 0 {
        let files = if args.files.len() == 1 {
            "the workload file is".to_string()
        } else {
            format!("{bad} of {} workload files are", args.files.len())
        };
        return Err(bad_input(format!("{files} invalid (see above)")));
    }
    Ok(())
}

/// One line for people: jobs, pools, dependencies and twins.
fn summary(w: &Workload) -> String {
    let plural = |n: usize, what: &str| {
        if n == 1 {
            format!("1 {what}")
        } else {
            format!("{n} {what}s")
        }
    };
    let pools: Vec<String> = w
        .pools
        .iter()
        .map(|p| {
            let size = match (p.kind, p.cores) {
                (PoolKind::Cpu, Some(c)) => plural(c as usize, "core"),
                (PoolKind::Cpu, None) => "all cores".into(),
                (PoolKind::Accelerator { host_load }, c) => {
                    format!(
                        "accelerator, {}, host load {host_load}",
                        plural(c.unwrap_or(1) as usize, "slot")
                    )
                }
            };
            format!("{}: {size}", p.name)
        })
        .collect();
    let mut out = format!(
        "{} on {} ({})",
        plural(w.jobs.len(), "job"),
        plural(w.pools.len(), "pool"),
        pools.join("; ")
    );
    let calibrated = w
        .jobs
        .iter()
        .filter(|j| matches!(j.amount, Amount::Seconds(_)))
        .count();
    if calibrated > 0 {
        out.push_str(&format!("; {calibrated} sized by calibration"));
    }
    let deps: usize = w.jobs.iter().map(|j| j.after.len()).sum();
    if deps > 0 {
        out.push_str(&format!(
            "; {}",
            plural(deps, "dependency").replace("dependencys", "dependencies")
        ));
    }
    let twins = w.twins();
    if twins.is_empty() {
        out.push_str("; no twins");
    } else {
        let groups: Vec<String> = twins
            .iter()
            .map(|g| {
                g.iter()
                    .map(|&i| w.jobs[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(" = ")
            })
            .collect();
        out.push_str(&format!("; twins: {}", groups.join(", ")));
    }
    out
}
