//! The `cosched` binary: argument parsing, one call into `cosched-app` per
//! verb, and printing its result.

mod cmd;
mod examples;
mod exit;
mod progress;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "cosched",
    version = env!("COSCHED_VERSION"),
    about = "Co-scheduling of HPC jobs on shared nodes: characterize, predict, decide, execute, learn, evaluate.",
    after_help = "Examples:\n  cosched demo                       # the whole pipeline on this node\n  cosched check examples/mixed.toml  # validate a workload file\n  cosched node                       # this node's topology\n\nEach verb has --help with an example.\n\nExit codes: 0 ok (every job of a run ended ok); 1 the work failed (a run names\nthe jobs that were not ok and why); 2 bad usage or input (FILE:LINE:COL);\n128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM).\nVerbs that measure (calibrate, profile, pairs, probe, run, evaluate, demo,\nbench, node --latency) take one node lock; a second is refused with the\nholder's pid and command."
)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand, Debug)]
enum Verb {
    /// Validate workload files; errors as FILE:LINE:COL, exit code 2.
    Check(cmd::check::CheckArgs),
    /// Show this node's topology (cores, SMT, sockets, NUMA, caches, memory).
    #[command(after_help = "Examples:\n  cosched node\n  cosched node --source sysfs   # skip hwloc\n  cosched node --json | jq .cores\n  cosched node --latency        # which CPUs really share a cache (core-to-core round trips)\n  cosched node --latency --cpus 0-7 --repeats 9\n\n--latency bounces one cache line between two threads pinned to each pair of\nCPUs and prints the median round trip. The topology a VM declares is not where\nits vCPUs run: tens of nanoseconds mean the two CPUs share a cache, hundreds\nthat the line crosses a chiplet or socket, so co-runners there do not contend\nfor one last-level cache. Run it on a quiet node; it is measured, not stored.")]
    Node(cmd::node::NodeArgs),
    /// Measure each kernel's solo rate on this node and store it.
    #[command(after_help = "Examples:\n  cosched calibrate\n  cosched calibrate --kernel stream --kernel compute --repeats 9\n  cosched calibrate --workload examples/mixed.toml   # what a workload's `seconds` need")]
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// Run the whole pipeline end to end on this node and print what it found.
    Demo(cmd::demo::DemoArgs),
    /// Measure the interference matrix of a workload (every pair co-run, stored).
    Pairs(cmd::pairs::PairsArgs),
    /// Profile each job alone: host load, system calls, I/O, memory, solo time (stored).
    Profile(cmd::profile::ProfileArgs),
    /// Probe jobs against the DistGen stressor: sensitivity and contentiousness curves (stored, SVG).
    Probe(cmd::probe::ProbeArgs),
    /// Know new programs cheaply: each unknown one alone, profiled, and against a short probe ladder.
    Characterize(cmd::characterize::CharacterizeArgs),
    /// Class N / C / S of each probed job, with the measured reason.
    Classify(cmd::classify::ClassifyArgs),
    /// Execute a workload for real on this node under a policy (and a baseline); journaled, resumable.
    Run(cmd::run::RunArgs),
    /// ParaStation's djsb: a STREAM simulation and analysis sessions arriving, under wait, surpass, overbook, sidestep.
    Djsb(cmd::djsb::DjsbArgs),
    /// Count and evaluate every placement of program pairs on dual-core nodes (Terrible Twins).
    Enumerate(cmd::enumerate::EnumerateArgs),
    /// Predict each job's slowdown in a co-schedule with a registered predictor.
    Predict(cmd::predict::PredictArgs),
    /// Compare policies on real runs of the same seeded job orders until the difference is resolved (with the simulator and the oracle).
    Evaluate(cmd::evaluate::EvaluateArgs),
    /// The nOS-V paper's co-execution study: every pair and some triples under each node-sharing strategy, scored.
    Study(cmd::study::StudyArgs),
    /// Every predictor's accuracy on a workload's measured pairs (cross-validated, stored, SVG).
    EvaluatePredictors(cmd::evaluate_predictors::EvaluatePredictorsArgs),
    /// The SX-Aurora co-execution paper's Monte-Carlo evaluation of policies over random job orders (increase rates vs sequential).
    Simulate(cmd::simulate::SimulateArgs),
    /// Show or set the node's resource governor level (high / low) that Lua policies read while running.
    Governor(cmd::governor::GovernorArgs),
    /// Benchmarks that print figures measured side by side in one run.
    #[command(after_help = "Example:\n  cosched bench kernels")]
    Bench(cmd::bench::BenchArgs),
    /// Look into the performance database: what it holds, and export it as CSV or JSON.
    #[command(after_help = "Examples:\n  cosched db info\n  cosched db export --format json --table pair_runs > pair_runs.json\n\nThe database is --db PATH, else $COSCHED_DB, else cosched.db in $COSCHED_DATA_DIR or ~/.local/share/cosched.")]
    Db(cmd::db::DbCmdArgs),
    /// Past real runs with their key figures (as sacct lists jobs); `runs show ID` for one.
    Runs(cmd::runs::RunsArgs),
    /// Generate man pages and shell completions (install.sh installs them).
    Generate(cmd::generate::GenerateArgs),
    /// Decide co-location for a Slurm cluster: `serve` releases held jobs onto nodes, `status` shows decisions.
    Slurm(cmd::slurm::SlurmArgs),
}

/// The command line as `--help`, the man pages and completions show it.
fn command() -> clap::Command {
    examples::fit(Cli::command())
}

fn main() {
    // A closed pipe (`cosched runs | head`) ends the process quietly, as it
    // does for every Unix filter, instead of a panic on the next print.
    // SAFETY: called first thing, before any thread exists; SIG_DFL for
    // SIGPIPE is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    let result = match cli.verb {
        Verb::Check(a) => cmd::check::run(a),
        Verb::Node(a) => cmd::node::run(a),
        Verb::Calibrate(a) => cmd::calibrate::run(a),
        Verb::Demo(a) => cmd::demo::run(a),
        Verb::Bench(a) => cmd::bench::run(a),
        Verb::Enumerate(a) => cmd::enumerate::run(a),
        Verb::Pairs(a) => cmd::pairs::run(a),
        Verb::Profile(a) => cmd::profile::run(a),
        Verb::Probe(a) => cmd::probe::run(a),
        Verb::Classify(a) => cmd::classify::run(a),
        Verb::Characterize(a) => cmd::characterize::run(a),
        Verb::Db(a) => cmd::db::run(a),
        Verb::Simulate(a) => cmd::simulate::run(a),
        Verb::Governor(a) => cmd::governor::run(a),
        Verb::Run(a) => cmd::run::run(a),
        Verb::Djsb(a) => cmd::djsb::run(a),
        Verb::Predict(a) => cmd::predict::run(a),
        Verb::Evaluate(a) => cmd::evaluate::run(a),
        Verb::EvaluatePredictors(a) => cmd::evaluate_predictors::run(a),
        Verb::Study(a) => cmd::study::run(a),
        Verb::Runs(a) => cmd::runs::run(a),
        Verb::Generate(a) => cmd::generate::run(a, command()),
        Verb::Slurm(a) => cmd::slurm::run(a),
    };
    if let Err(e) = result {
        std::process::exit(exit::report(&e));
    }
}
