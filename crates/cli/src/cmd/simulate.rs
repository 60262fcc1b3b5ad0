//! `cosched simulate`: the SX-Aurora co-execution paper's Monte-Carlo evaluation of policies on a
//! scenario, as increase rates against sequential execution.

use std::path::PathBuf;

use clap::Args;
use cosched_app::simulate::{placement_names, simulate, SimulateRequest};

use super::common::{emit, print_listing, DbArgs, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --orders 10000 --seed 1\n  \
    cosched simulate --scenario s.toml --policy noplan --policy conflict-aware:threshold=100\n  \
    cosched simulate --scenario s.toml --orders 1000 --json | jq '.summaries[0].makespan.median'\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --report out/ \\\n      \
    --policy conflict-aware:threshold=100 --policy best-match --policy auto-threshold:bound=1.5\n  \
    cosched simulate --scenario examples/scenarios/seed000-measured.toml --db cosched.db\n  \
    cosched simulate --scenario s.toml --orders 1 --trace trace.csv --trace-policy best-match\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --policy conflict-aware \\\n      \
    --policy lua:path=examples/lua/conflict-aware.lua,threshold=100   # a Lua policy (docs/lua.md)\n  \
    cosched simulate --scenario examples/scenarios/io-half-long.toml --told blind \\\n      \
    --policy best-match --policy react:inner=best-match,threshold=1.3,action=suspend\n  \
    cosched simulate --scenario examples/scenarios/io-half-long.toml --told scaled:0,0.5,1,2 \\\n      \
    --policy best-match --policy react:inner=best-match,threshold=1.3,action=suspend   # sweep the misprediction\n  \
    cosched simulate --list-policies\n  \
    cosched simulate --scenario examples/scenarios/epyc-8ccx-nps4.toml --orders 200 \\\n      \
    --policy noplan --placement compact,scatter,interference-aware   # docs/placement.md\n  \
    cosched simulate --swf examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz --nodes 32 --cores 4 \\\n      \
    --policy noplan --policy conflict-aware:threshold=50 --report out/\n\n\
    --swf replays a Standard Workload Format trace (plain or gzip) on --nodes x --cores\n\
    under exclusive EASY (or --scheduler fcfs) and under each --policy sharing nodes\n\
    (docs/cluster.md); each job's program comes from --slowdowns by --map, seeded by --seed.\n\n\
    Each order is a random permutation of the scenario's jobs (all arriving at 0),\n\
    run under every policy and under `exclusive`; rates are (policy - exclusive) /\n\
    exclusive for that order, so -25 % is 25 % shorter than sequential execution.\n\
    Run time is finish - start of a job (the SX-Aurora paper's turn-around time, measured as\n\
    slowdown since solo times may differ); turnaround adds the wait in the queue.\n\
    Default policies: noplan and conflict-aware at threshold 50, 100, 150, inf.\n\
    With two policies or more, each is compared with the first order by order\n\
    (median paired relative difference with its ~95 % sign-test interval).\n\
    --told shows the policies other slowdowns than the truth (docs/policies.md, react).\n\
    The performance score (nOS-V) of a policy on an order is the shortest\n\
    makespan of all strategies run on it (exclusive included) over its own.\n\
    The oracle table gives the best list schedule of the jobs for makespan and\n\
    for mean turnaround (exhaustive over distinct orders when they are few, else\n\
    a seeded local search), a makespan no schedule can beat, and each policy's\n\
    median makespan above the oracle's (single-node scenarios).\n\
    --report DIR writes index.html (box plots like the SX-Aurora paper's figures 11-13 and\n\
    tables), the plots as SVG, summary.csv/json and orders.csv.\n\
    A bad scenario or policy exits with code 2.")]
pub struct SimulateArgs {
    /// Scenario TOML: [[pools]], [[programs]] and [slowdown] (a matrix, or measured cells from the store or a file).
    #[arg(long, value_name = "FILE", required_unless_present_any = ["list_policies", "list_placements", "swf"], conflicts_with = "swf")]
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
    #[command(flatten)]
    pub json: JsonArgs,
    /// List the registered policies and exit.
    #[arg(long)]
    pub list_policies: bool,
    /// Where starts go on a scenario's [topology]: one strategy, or several
    /// side by side on the same orders (NAME,NAME,... or repeated).
    #[arg(long = "placement", value_name = "NAME", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(placement_names()))]
    pub placements: Vec<String>,
    /// Show the policies other slowdowns than the scenario's (which still
    /// drive progress): `blind` (every pair 1), `scaled:K` (each cell s
    /// told as 1 + K (s - 1); `scaled:0,0.5,1,2` sweeps the misprediction's
    /// size, each policy against the first at each K) or a scenario FILE
    /// over the same programs; progress is then read every 0.25 s of
    /// virtual time, so `react` sees online estimates (one node).
    #[arg(long, value_name = "blind|scaled:K[,K...]|FILE")]
    pub told: Option<String>,
    /// List the placement strategies and exit.
    #[arg(long)]
    pub list_placements: bool,
    /// Write an HTML report with box plots, the tables as CSV and JSON, and
    /// every order's figures (orders.csv) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Write one order's event trace in the one trace format (`cosched run --report` writes it too): JSON if FILE ends in .json, else CSV.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The order whose trace --trace writes.
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub trace_order: usize,
    /// The policy whose trace --trace writes; default: the first policy.
    #[arg(long, value_name = "P")]
    pub trace_policy: Option<String>,
    // Where a scenario's `[slowdown] store` or `profiles` are read from.
    #[command(flatten)]
    pub db: DbArgs,
    /// A cluster trace in the Standard Workload Format (plain or .gz) to replay instead of a scenario.
    #[arg(long, value_name = "FILE")]
    pub swf: Option<PathBuf>,
    /// --swf: nodes (default: the header's MaxNodes).
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// --swf: cores per node (default: the header's MaxProcs / nodes).
    #[arg(long, value_name = "C")]
    pub cores: Option<u32>,
    /// --swf: the queue policy, easy (backfilling) or fcfs.
    #[arg(long, default_value = "easy", value_parser = ["easy", "fcfs"])]
    pub scheduler: String,
    /// --swf: how jobs get programs of the slowdown matrix: exe, user or random.
    #[arg(long = "map", default_value = "exe", value_name = "BY", value_parser = ["exe", "user", "random"])]
    pub mapping: String,
    /// --swf: scenario TOML whose programs and [slowdown] jobs map onto (default: examples/scenarios/few-bad.toml).
    #[arg(long, value_name = "FILE")]
    pub slowdowns: Option<PathBuf>,
    /// --swf: keep records of status `failed` (0) or `cancelled` (5); repeatable.
    #[arg(long, value_name = "WHAT", value_parser = ["failed", "cancelled"])]
    pub keep: Vec<String>,
    /// --swf: divide inter-arrival times by F (2 = twice the load).
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub compress: f64,
    /// --swf: jobs behind the reserved one that EASY tries per pass.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub backfill_depth: usize,
    /// --swf: partially used nodes a job is offered to per pass.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub probe: usize,
}

fn run_swf(a: SimulateArgs, swf: PathBuf) -> anyhow::Result<()> {
    use cosched_app::cluster::{simulate_swf, ClusterRequest};
    let keep = cosched_app::cluster::keep(a.keep.iter().any(|k| k == "failed"), a.keep.iter().any(|k| k == "cancelled"));
    let req = ClusterRequest {
        swf, nodes: a.nodes, cores: a.cores, policies: a.policies, scheduler: a.scheduler, mapping: a.mapping, seed: a.seed,
        slowdowns: a.slowdowns, keep, compress: a.compress, depth: a.backfill_depth, probe: a.probe, report: a.report, db: a.db.db,
    };
    emit(&simulate_swf(&req, &super::common::ctx())?, a.json.json)
}

pub fn run(a: SimulateArgs) -> anyhow::Result<()> {
    if a.list_policies {
        return print_listing(&cosched_app::registry::policies(), a.json.json);
    }
    if a.list_placements {
        return print_listing(&cosched_app::registry::placements(), a.json.json);
    }
    if let Some(swf) = a.swf.clone() {
        return run_swf(a, swf);
    }
    let req = SimulateRequest {
        scenario: a.scenario.expect("clap requires --scenario"),
        policies: a.policies,
        orders: a.orders,
        seed: a.seed,
        report: a.report,
        trace: a.trace,
        trace_order: a.trace_order,
        trace_policy: a.trace_policy,
        db: a.db.db,
        placements: a.placements,
        told: a.told,
    };
    emit(&simulate(&req)?, a.json.json)
}
