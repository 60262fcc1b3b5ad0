//! `cosched evaluate`: policies compared on real runs of the same seeded
//! orders until their difference is resolved, beside the simulator and the
//! oracle.

use std::path::PathBuf;

use clap::Args;
use cosched_app::evaluate::{evaluate, EvaluateRequest, Figure};

use super::common::{ctx, emit, DbArgs, JsonArgs, PredictorArgs, WorkloadArgs, parse_budget, parse_regime};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched evaluate --workload examples/memory-half.toml --policy best-match --policy conflict-aware\n  \
    cosched evaluate --workload w.toml --policy best-match --baseline noplan --metric worst-slowdown --max-orders 12\n  \
    cosched evaluate --workload w.toml --policy no-twins --budget 20m --report out/ --json | jq .comparisons\n  \
    cosched evaluate --workload examples/memory-half.toml --policy best-match --regime shared --regime-wait 2h\n  \
    cosched evaluate --workload examples/io-half.toml --policy best-match --metric worst-slowdown --seed 7 --max-orders 8 --oracle-replays 1 --db io.db --resume\n\n\
    Each order is one round: a solo pass (one job of each program alone, its\n\
    twins sharing it: that round's solo references), then the baseline and every policy on the workload's jobs\n\
    listed in the seed's order k (the orders `cosched simulate` draws), in a\n\
    rotated sequence. After each round every policy is compared with the\n\
    baseline order by order: the median relative difference of each figure\n\
    with its 95 % interval (sign-test order statistics); the series stops once\n\
    the --metric comparisons are all resolved after --min-orders, or at\n\
    --max-orders or --budget, and says which. The CPU 0-1 round trip before\n\
    each solo pass gives the cache regime of each order; a comparison that\n\
    spans a regime switch is flagged; with --regime only orders read in that\n\
    regime before and during their runs count, and each order waits for it.\n\
    The same orders are simulated on the\n\
    stored pairwise slowdowns (run `cosched pairs` first), and the oracle\n\
    gives the best list schedule of that model; that schedule is then run\n\
    for real (--oracle-replays times), so each policy's real runs are read\n\
    against the oracle's real runs as well as against the model.")]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A policy to compare with the baseline (NAME or NAME:KEY=VALUE,...); repeat for several.
    #[arg(long = "policy", value_name = "P", required = true)]
    pub policies: Vec<String>,
    /// The policy every other is compared with.
    #[arg(long, value_name = "P", default_value = "noplan")]
    pub baseline: String,
    /// The figure whose resolution ends the series: makespan, mean-turnaround or worst-slowdown.
    #[arg(long, value_name = "FIGURE", default_value = "mean-turnaround")]
    pub metric: Figure,
    /// Seed of the orders; the same seed gives the same orders on any machine.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Orders run before the series may stop.
    #[arg(long, default_value_t = 5)]
    pub min_orders: usize,
    /// Orders run at most.
    #[arg(long, default_value_t = 15)]
    pub max_orders: usize,
    /// Time aim of the series, e.g. 900s, 20m or 1h: no order starts that,
    /// at the pace of the orders so far, would end after it (--min-orders
    /// run regardless).
    #[arg(long, value_name = "TIME", value_parser = parse_budget)]
    pub budget: Option<std::time::Duration>,
    /// Count only orders run in this cache regime: shared (the CPUs share a
    /// last-level cache) or apart; each order waits for it (--regime-wait).
    #[arg(long, value_name = "REGIME", value_parser = parse_regime)]
    pub regime: Option<cosched_model::regime::CacheRegime>,
    /// How long to wait for --regime before an order, e.g. 30m or 2h.
    #[arg(long, value_name = "TIME", value_parser = parse_budget, default_value = "30m", requires = "regime")]
    pub regime_wait: std::time::Duration,
    /// Run each oracle schedule this many times for real after the orders
    /// (0: none), so the distance to the oracle is also read real run
    /// against real run.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub oracle_replays: u32,
    // The predictor the policies decide with; default `measured`.
    #[command(flatten)]
    pub predictor: PredictorArgs,
    /// Write index.html, evaluate.json and orders.csv here.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArgs,
    /// cgroup hierarchy: auto, v1, v2 or none (affinity and signals only).
    #[arg(long, default_value = "auto", value_name = "MODE", value_parser = ["auto", "v1", "v2", "none"])]
    pub cgroups: String,
    /// Node lock file, for tests only: two runners with different lock
    /// files share the node (default /run/lock/cosched-node.lock).
    #[arg(long, value_name = "FILE", hide = true)]
    pub lock: Option<PathBuf>,
    /// Take the orders (and oracle replays) the database holds from an
    /// earlier evaluation with the same settings, run only the missing ones:
    /// continues an interrupted evaluation, or reads a shipped one back
    /// (`cosched db import data/io-half.bundle`) without running anything.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: EvaluateArgs) -> anyhow::Result<()> {
    let req = EvaluateRequest {
        workload: a.workload.workload,
        policies: a.policies,
        baseline: a.baseline,
        metric: a.metric,
        predictor: a.predictor.predictor.unwrap_or_else(|| "measured".into()),
        seed: a.seed,
        min_orders: a.min_orders,
        max_orders: a.max_orders,
        budget: a.budget,
        regime: a.regime,
        regime_wait: a.regime_wait,
        oracle_replays: a.oracle_replays,
        report: a.report,
        cgroups: a.cgroups,
        lock: a.lock,
        db: a.db.db,
        resume: a.resume,
    };
    emit(&evaluate(&req, &ctx())?, a.json.json)
}

#[cfg(test)]
mod tests {
    use crate::cmd::common::parse_budget;

    #[test]
    fn budgets_read_seconds_minutes_and_hours() {
        assert_eq!(parse_budget("90").unwrap().as_secs(), 90);
        assert_eq!(parse_budget("20m").unwrap().as_secs(), 1200);
        assert_eq!(parse_budget("1.5h").unwrap().as_secs(), 5400);
        assert!(parse_budget("-1m").is_err() && parse_budget("soon").is_err() && parse_budget("1e300s").is_err());
    }
}
