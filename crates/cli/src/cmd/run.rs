//! `cosched run`: a workload executed for real on this node under a policy
//! (and a baseline), journaled in the store, scored like a simulation.

use std::path::PathBuf;

use clap::Args;
use cosched_app::run::{run as run_series, RunRequest};

use super::common::{ctx, emit, DbArgs, JsonArgs, PredictorArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched run --workload examples/mixed.toml --baseline exclusive --baseline noplan --repeats 3   # best-match\n  \
    cosched run --workload examples/mixed.toml --policy conflict-aware:threshold=30 --baseline noplan\n  \
    cosched run --workload examples/mixed.toml --predictor learned --report report/\n  \
    cosched run --workload examples/mixed.toml --policy noplan --report report/\n  \
    cosched run --workload examples/mixed.toml --policy conflict-aware --resume   # after a crash or Ctrl-C\n  \
    cosched run --workload w.toml --policy no-twins --json | jq '.runs[0].metrics'\n  \
    cosched run --workload w.toml --policy lua:path=examples/lua/noplan.lua   # kill -HUP PID reloads it (docs/lua.md)\n\n\
    Each job runs as a process group in its own cgroup (cpuset, freezer, memory,\n\
    pids; v1 or v2) pinned to free cores of its pool, else pinned with\n\
    sched_setaffinity (the output says which and why). The policy sees the\n\
    slowdowns of a predictor (--predictor, default `measured`: the measured\n\
    pairs, else `learned`) fitted on the store's profiles, probes, pairs and\n\
    earlier real runs of the workload; when it cannot be fitted, the latest\n\
    pairs campaign's medians, else 1. The prediction made before each job\n\
    starts is stored with the job; its measured slowdown is its run time over\n\
    its solo reference. With --solo interleaved (the default), each repeat\n\
    starts with a solo pass: one job of each program alone (twins share it),\n\
    launched and timed as in the runs, single-core jobs on another core each\n\
    repeat; a job divides by the median of its passes on its CPUs. With --solo stored, by the latest pairs\n\
    campaign's solo repeats, else its profile's, else its calibrated time.\n\
    The job table says which reference, how old, and the cache regime.\n\
    With --baseline (repeatable), the policy\n\
    and each baseline run in turn repeat by repeat, and increase rates are\n\
    (policy - baseline) / baseline of the same repeat. The output ends with the\n\
    pairs each policy held apart (read from its runs' traces).\n\
    Every job start and end is stored as it happens, so --resume finishes a\n\
    run whose runner was killed.\n\n\
    Job output: stdout and stderr of each job go to <report>/logs/run-ID/JOB.log\n\
    with --report, else to runs/SERIES/run-ID/JOB.log in the data directory\n\
    ($COSCHED_DATA_DIR or ~/.local/share/cosched), unless its `output` key says\n\
    where ({job}, {run}, {repeat} filled in). Every job gets COSCHED_JOB,\n\
    COSCHED_RUN, COSCHED_REPEAT, COSCHED_CPUS (its cpuset), OMP_NUM_THREADS (its\n\
    cores), OMP_PLACES and OMP_PROC_BIND=close, and its `env`.\n\n\
    Exit codes: 0 every job ended ok; 1 some job did not (failed, timeout, oom,\n\
    signal, spawn-failed: the last lines name each and why); 2 bad input; 128+N\n\
    after signal N (130 Ctrl-C, 143 SIGTERM), with the command that continues.")]
pub struct RunArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Policy as NAME or NAME:KEY=VALUE,... (see `cosched simulate --list-policies`).
    /// The default, best-match, starts the waiting job of least predicted
    /// extra slowdown, so it avoids the pairs that hurt without idling cores.
    #[arg(long, value_name = "P", default_value = "best-match")]
    pub policy: String,
    /// Also run under this policy, interleaved, to report increase rates
    /// against it; repeat for several baselines.
    #[arg(long, value_name = "P")]
    pub baseline: Vec<String>,
    // The predictor the policy decides with; default `measured`.
    #[command(flatten)]
    pub predictor: PredictorArgs,
    /// Runs per policy.
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    /// Write a report here: index.html, a Gantt SVG per run, CSV and JSON.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArgs,
    /// Continue the newest unfinished series with these settings.
    #[arg(long)]
    pub resume: bool,
    /// cgroup hierarchy: auto, v1, v2 or none (affinity and signals only).
    #[arg(long, default_value = "auto", value_name = "MODE", value_parser = ["auto", "v1", "v2", "none"])]
    pub cgroups: String,
    /// Lock file that keeps a second runner off the node (default
    /// $COSCHED_RUN_LOCK, else /run/lock/cosched-node.lock). For tests only:
    /// two runners with different lock files share the node.
    #[arg(long, value_name = "FILE", hide = true)]
    pub lock: Option<PathBuf>,
    /// What a job's measured slowdown divides by: `interleaved` (a solo
    /// pass before each repeat, timed as runs time jobs) or `stored` (the
    /// store's solo times, no extra runs).
    #[arg(long, default_value = "interleaved", value_name = "MODE")]
    pub solo: cosched_app::run::SoloMode,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    let req = RunRequest {
        workload: a.workload.workload,
        policy: a.policy,
        baselines: a.baseline,
        predictor: a.predictor.predictor.unwrap_or_else(|| "measured".into()),
        repeats: a.repeats,
        report: a.report,
        resume: a.resume,
        cgroups: a.cgroups,
        lock: a.lock,
        db: a.db.db,
        solo: a.solo,
        order_seed: None,
        order: None,
        first_repeat: 0,
        named_by: cosched_app::run::RUN_FLAGS,
        continue_with: None,
    };
    let r = run_series(&req, &ctx())?;
    emit(&r, a.json.json)?;
    not_ok(&r.not_ok)
}

/// Exit code 1, naming every job that did not end ok and why.
pub fn not_ok(jobs: &[String]) -> anyhow::Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    Err(anyhow::anyhow!("{} job(s) did not end ok:\n  {}", jobs.len(), jobs.join("\n  ")))
}

