//! `cosched bench ...`: benchmarks that print figures measured side by side.

use std::time::Duration;

use clap::{Args, Subcommand};
use cosched_app::bench::{KernelsBenchRequest, ProfileBenchRequest, RunBenchRequest, SimulateBenchRequest, TurnsBenchRequest};
use cosched_app::common::parse_interval;
use cosched_app::profile::Syscalls;

use super::common::{ctx, emit, DbArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// The stream kernel against a C STREAM triad, every kernel's rate with spread, and its rate at a quarter of the work.
    #[command(after_help = "Prints three tables: the triad of the stream kernel and of C STREAM (cc -O2) alternating \
on the same CPU, their ratio (aim >= 0.98); each kernel's rate, sized by a warm-up to ~0.3 s; and linearity, each kernel's \
rate at a quarter of that work over its rate at the full work (aim within 3 % of 1.00: set-up, first touch, the \
stream kernel's warm-up pass and freeing the memory are outside the timed phase).\n\n\
Examples:\n  cosched bench kernels\n  cosched bench kernels --repeats 9 --kernel stream --kernel compute --json")]
    Kernels(KernelsBench),
    /// What the profile sampler costs a job: its run time sampled over its run time not sampled.
    #[command(after_help = "Each repeat runs the kernel without sampling, sampled every --interval and \
sampled ten times as often, in an order that rotates from repeat to repeat; a ratio is taken within \
one repeat. The aim at 1 s is a ratio below 1.01.\n\n\
Examples:\n  cosched bench profile\n  cosched bench profile --kernel syscall --repeats 9\n  \
cosched bench profile --interval 500ms --syscalls proc --json")]
    Profile(ProfileBench),
    /// How fast the simulator is: Monte-Carlo orders, exhaustive enumeration, a large cluster, its scaling.
    #[command(after_help = "Prints, as medians with min-max over --repeats:\n  (a) the SX-Aurora co-execution paper's Monte-Carlo: --orders orders of the 38-job example under 4 policies (aim < 1 s);\n  \
(b) the Terrible Twins paper's exhaustive enumeration of N = 10 programs with a random matrix, and the optimum (aim < 5 s);\n  (c) a synthetic run of --jobs jobs on --nodes nodes of 4 cores under noplan and best-match (aim < 10 s);\n  \
(d) a Lua policy beside the same Rust policy: examples/lua/conflict-aware.lua and conflict-aware on the same orders (aim: Lua / Rust <= 2), with the decide calls the engine made and the Lua run's CPU time beyond the Rust run's per call;\n  (e) `simulate --swf`'s engine on a synthetic trace of --jobs jobs on --nodes nodes of 16 cores:\n      exclusive EASY, and EASY with conflict-aware sharing nodes (aim < 10 s);\n  \
(f) the same engine's scaling: a generated trace per job count and node count, exclusive EASY and each sharing policy (10k jobs on 100 to 10k nodes beside the other cases); --scaling runs it alone, and its SPEC (default) is `jobs=10000,100000 nodes=100,1000,10000,100000 cores=16 load=0.95 mix=0.6,0.25,0.15 seed=7 sharing=conflict-aware:threshold=50` (mix: shares of part-node, 1-4 node and wide jobs; sharing= repeats; sharing=none: exclusive only);\n  (g) 10,000 jobs on one node of 4 cores under noplan, exclusive, best-match and a list order (greedy, strict), the list order by its index and by a scan of the queue (same trace);\n  (h) the oracle on those jobs within its start budget; --node runs (g) and (h) alone.\n\nExamples:\n  cosched bench simulate\n  cosched bench simulate --repeats 5 --json\n  cosched bench simulate --scaling\n  cosched bench simulate --node --repeats 1\n  cosched bench simulate --scaling 'jobs=1000000 nodes=100000' --repeats 1")]
    Simulate(SimulateBench),
    /// What a timeshare turn costs: stop and go latency per mechanism, and makespans against exclusive.
    #[command(after_help = "Prints two tables. Latency: --turns stops and starts of a busy one-thread job on \
CPU 0 per mechanism this node has (cgroup v1 freezer, cgroup v2 cgroup.freeze, SIGSTOP/SIGCONT to the process group), \
each timed from the request until the kernel says it is done (frozen, thawed; every thread stopped or running): \
a turn of timeshare costs one stop and one go. Makespan: two equal jobs (--seconds each alone) of each pair, \
compute with 1 thread on a 1-core pool, compute and stream (64 MiB arrays) with 2 threads on a 2-core pool, \
run by whole `cosched run` processes under exclusive and under timeshare at each --quantum, alternating repeat \
by repeat; medians (min-max, n) and timeshare over exclusive (issue 42's aim: within 3 % at 0.02 s). \
Figures on a node busy with other work mean little: the load average is printed.\n\n\
Examples:\n  cosched bench turns\n  cosched bench turns --pair none --turns 1000\n  \
cosched bench turns --pair compute-1t --quantum 0.02 --repeats 7 --json")]
    Turns(TurnsBench),
    /// What the node runner costs a job: `cosched run` of N jobs of `true` against a bare loop of the same.
    #[command(after_help = "Each repeat times, in an order that rotates: a loop spawning `true` --jobs times from a \
thread pinned to CPU 0 (the floor: fork and exec of a pinned job), the loop of `taskset -c 0 true` when taskset is \
installed, and one whole `cosched run --policy exclusive --solo stored` process over --jobs jobs of `true` on a \
one-core pool (CPU 0), its store in a temporary directory. Prints per repeat and as median (min-max, n): each \
whole time, the overhead per job ((cosched - bare) / jobs), the run's lead (process start to first job), makespan \
(first start to last end) and tail (last end to the process's exit). Issue 42's aim: under 2 ms per job and a tail \
under 20 ms for 40 jobs. Figures on a node busy with other work mean little: the load average is printed.\n\n\
Examples:\n  cosched bench run\n  cosched bench run --jobs 200 --repeats 9 --json")]
    Run(RunBench),
    /// Every predictor's accuracy on a workload's measured pairs, c-all and scn as baselines.
    #[command(after_help = "Prints the table of `cosched evaluate-predictors` (leave-one-program-out) with \
the baselines of the SX-Aurora paper (c-all) and the SCN paper (scn) first, the fold method and the counts behind it; \
nothing is stored. Needs the workload profiled, probed and paired (cosched profile / probe / pairs).\n\n\
Examples:\n  cosched bench predictors --workload examples/predict12.toml\n  \
cosched bench predictors --workload examples/predict12.toml --level 1.5 --json")]
    Predictors(PredictorsBench),
}

#[derive(Args, Debug)]
pub struct PredictorsBench {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A slowdown above this is a severe conflict.
    #[arg(long, default_value_t = cosched_app::evaluate_predictors::DEFAULT_SEVERE, value_name = "X")]
    pub level: f64,
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ProfileBench {
    /// The kernel to run (fixed work, sized by a warm-up run).
    #[arg(long, default_value = "compute", value_name = "NAME")]
    pub kernel: String,
    /// Repeats of each variant.
    #[arg(long, default_value_t = 7)]
    pub repeats: usize,
    /// Sampling interval (`1s`, `250ms`, `0.5s`); a tenth of it is measured too.
    #[arg(long, default_value = "1s", value_parser = parse_interval, value_name = "DURATION")]
    pub interval: Duration,
    /// Seconds of work per run.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// How to count system calls: auto, tracepoint, perf-stat or proc.
    #[arg(long, default_value = "auto", value_name = "METHOD")]
    pub syscalls: Syscalls,
    /// CPUs to pin every run to.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    #[command(flatten)]
    pub json: JsonArgs,
}

#[derive(Args, Debug)]
pub struct KernelsBench {
    /// Repeats of each measurement.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Array size of the triad comparison, MiB per array (>= 4x the LLC).
    #[arg(long, default_value_t = 64)]
    pub array_mib: u64,
    /// Triad passes per run.
    #[arg(long, default_value_t = 20)]
    pub passes: u64,
    /// Kernels whose rate to measure (repeatable); default: all.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// CPUs to pin every run to.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    #[command(flatten)]
    pub json: JsonArgs,
}

#[derive(Args, Debug)]
pub struct TurnsBench {
    /// Runs of each makespan configuration.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Stops and starts per mechanism.
    #[arg(long, default_value_t = 200)]
    pub turns: usize,
    /// timeshare quanta, seconds (repeatable).
    #[arg(long = "quantum", value_name = "S", default_values_t = [0.02, 0.1])]
    pub quanta: Vec<f64>,
    /// Seconds of work of each job alone.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// compute-1t, compute-2t, stream-2t (repeatable; default all; `none`: latency only).
    #[arg(long = "pair", value_name = "NAME")]
    pub pairs: Vec<String>,
    #[command(flatten)]
    pub json: JsonArgs,
}

#[derive(Args, Debug)]
pub struct RunBench {
    /// Jobs of `true` per loop and per run.
    #[arg(long, default_value_t = 40)]
    pub jobs: usize,
    /// Repeats of each loop and run.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[command(flatten)]
    pub json: JsonArgs,
}

#[derive(Args, Debug)]
pub struct SimulateBench {
    /// Repeats of each measurement.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Orders of the Monte-Carlo case.
    #[arg(long, default_value_t = 10_000)]
    pub orders: usize,
    /// Jobs of the cluster case.
    #[arg(long, default_value_t = 100_000)]
    pub jobs: usize,
    /// Nodes of the cluster case.
    #[arg(long, default_value_t = 1_000)]
    pub nodes: usize,
    /// Only the scaling table (f), of SPEC (KEY=VALUE ...; see below).
    #[arg(long, value_name = "SPEC", num_args = 0..=1, default_missing_value = "")]
    pub scaling: Option<String>,
    /// Only the one-node cases (g) and (h).
    #[arg(long, conflicts_with = "scaling")]
    pub node: bool,
    #[command(flatten)]
    pub json: JsonArgs,
}

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    match a.what {
        BenchWhat::Kernels(k) => kernels(k),
        BenchWhat::Profile(p) => profile(p),
        BenchWhat::Simulate(s) => simulate(s),
        BenchWhat::Predictors(p) => predictors(p),
        BenchWhat::Turns(t) => turns(t),
        BenchWhat::Run(r) => emit(&cosched_app::bench::run(&RunBenchRequest { jobs: r.jobs, repeats: r.repeats }, &ctx())?, r.json.json),
    }
}

fn turns(a: TurnsBench) -> anyhow::Result<()> {
    let req = TurnsBenchRequest { repeats: a.repeats, turns: a.turns, quanta: a.quanta, seconds: a.seconds, pairs: a.pairs };
    emit(&cosched_app::bench::turns(&req, &ctx())?, a.json.json)
}

fn predictors(a: PredictorsBench) -> anyhow::Result<()> {
    emit(&cosched_app::evaluate_predictors::bench(&a.workload.workload, a.level, a.db.db.as_deref(), &ctx())?, a.json.json)
}

fn profile(a: ProfileBench) -> anyhow::Result<()> {
    let req = ProfileBenchRequest {
        kernel: a.kernel,
        repeats: a.repeats,
        interval: a.interval,
        seconds: a.seconds,
        syscalls: a.syscalls,
        cpus: a.cpus,
    };
    emit(&cosched_app::bench::profile(&req, &ctx())?, a.json.json)
}

fn kernels(a: KernelsBench) -> anyhow::Result<()> {
    let req = KernelsBenchRequest { repeats: a.repeats, array_mib: a.array_mib, passes: a.passes, kernels: a.kernels, cpus: a.cpus };
    emit(&cosched_app::bench::kernels(&req, &ctx())?, a.json.json)
}

fn simulate(a: SimulateBench) -> anyhow::Result<()> {
    let req = SimulateBenchRequest { repeats: a.repeats, orders: a.orders, jobs: a.jobs, nodes: a.nodes, only_scaling: a.scaling.is_some(), scaling: a.scaling.unwrap_or_default(), only_node: a.node };
    emit(&cosched_app::bench::simulate(&req, &ctx())?, a.json.json)
}
