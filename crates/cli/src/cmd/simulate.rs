//! `cosched simulate`: seed 000's Monte-Carlo evaluation of policies on a
//! scenario, as increase rates against sequential execution.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use cosched_report::table;
use cosched_sched::montecarlo::{default_policies, parse_spec, run_orders, spec_label, summarize, MonteCarloError, PolicySummary, Spread};
use cosched_sched::policy_names;
use cosched_sched::scenario::Scenario;

use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --orders 10000 --seed 1\n  \
    cosched simulate --scenario s.toml --policy noplan --policy conflict-aware:threshold=100\n  \
    cosched simulate --scenario s.toml --orders 1000 --json | jq '.summaries[0].makespan.median'\n  \
    cosched simulate --list-policies\n\n\
    Each order is a random permutation of the scenario's jobs (all arriving at 0),\n\
    run under every policy and under `exclusive`; rates are (policy - exclusive) /\n\
    exclusive for that order, so -25 % is 25 % shorter than sequential execution.\n\
    Run time is finish - start of a job (seed 000's turn-around time, measured as\n\
    slowdown since solo times may differ); turnaround adds the wait in the queue.\n\
    Default policies: noplan and conflict-aware at threshold 50, 100, 150, inf.\n\
    A bad scenario or policy exits with code 2.")]
pub struct SimulateArgs {
    /// Scenario TOML: [[pools]], [[programs]] and an optional [slowdown] matrix.
    #[arg(long, value_name = "FILE", required_unless_present = "list_policies")]
    pub scenario: Option<PathBuf>,
    /// A policy as NAME or NAME:KEY=VALUE,...; repeat for several.
    #[arg(long = "policy", value_name = "P")]
    pub policies: Vec<String>,
    /// Number of random orders.
    #[arg(long, default_value_t = 10_000)]
    pub orders: usize,
    /// Seed of the orders; the same seed gives the same orders on any machine.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// List the registered policies and exit.
    #[arg(long)]
    pub list_policies: bool,
}

pub fn run(a: SimulateArgs) -> anyhow::Result<()> {
    if a.list_policies {
        let rows: Vec<Vec<String>> = policy_names()
            .into_iter()
            .map(|(n, d)| vec![n.to_string(), d.to_string()])
            .collect();
        if a.json {
            let v: Vec<_> = policy_names()
                .into_iter()
                .map(|(n, d)| serde_json::json!({"name": n, "description": d}))
                .collect();
            println!("{}", serde_json::Value::Array(v));
        } else {
            println!("{}", table(&["policy", "description"], &rows));
        }
        return Ok(());
    }
    let path = a.scenario.as_ref().expect("clap requires --scenario");
    let scenario = Scenario::load(path).map_err(|e| bad_input(e.to_string()))?;
    if a.orders == 0 {
        return Err(bad_input("--orders must be at least 1"));
    }
    let policies = if a.policies.is_empty() {
        default_policies()
    } else {
        a.policies
            .iter()
            .map(|s| parse_spec(s).map_err(|e| bad_input(format!("--policy: {e}"))))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let started = Instant::now();
    let results = run_orders(&scenario, &policies, a.orders, a.seed).map_err(|e| match e {
        MonteCarloError::Policy(m) => bad_input(m),
        other => anyhow::Error::new(other),
    })?;
    let summaries = summarize(&policies, &results);
    let elapsed = started.elapsed().as_secs_f64();
    let jobs = scenario.job_program.len();

    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": path.display().to_string(),
                "jobs": jobs,
                "orders": a.orders,
                "seed": a.seed,
                "elapsed_seconds": elapsed,
                "baseline": "exclusive",
                "policies": policies.iter().map(|(n, p)| spec_label(n, p)).collect::<Vec<_>>(),
                "summaries": summaries,
            })
        );
        return Ok(());
    }
    // Seed 000's turnaround is a job's own run time; ours counts the wait
    // behind the list too, so both are shown, seed 000's figures first.
    let sections: [(&str, Pick); 5] = [
        ("average run time (seed 000 fig. 11, its `turn-around time`)", |s| &s.avg_slowdown),
        ("makespan (seed 000 fig. 12)", |s| &s.makespan),
        ("worst run time (seed 000 fig. 13)", |s| &s.worst_slowdown),
        ("average turnaround, queue wait included", |s| &s.avg_turnaround),
        ("worst turnaround, queue wait included", |s| &s.worst_turnaround),
    ];
    for (title, pick) in sections {
        println!("Increase rate of {title} vs exclusive (sequential):");
        let rows: Vec<Vec<String>> = summaries
            .iter()
            .map(|s| {
                let x = pick(s);
                let mut r = vec![s.policy.clone()];
                r.extend([x.median, x.q1, x.q3, x.min, x.max, x.mean].map(pct));
                r
            })
            .collect();
        println!("{}\n", table(&["policy", "median", "q1", "q3", "min", "max", "mean"], &rows));
    }
    println!(
        "{jobs} jobs, {} orders, seed {}, {elapsed:.2} s",
        a.orders, a.seed
    );
    Ok(())
}

type Pick = fn(&PolicySummary) -> &Spread;

fn pct(rate: f64) -> String {
    format!("{:+.1} %", rate * 100.0)
}
