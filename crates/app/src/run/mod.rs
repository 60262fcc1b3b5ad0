//! `cosched run`: a workload executed for real on this node under a policy
//! (and baselines), journaled in the store, resumable, scored like a
//! simulation; with a report directory, an HTML page, Gantt SVGs, CSV and
//! JSON.
//!
//! The series is planned ([`plan`]: policies, jobs, the node's setting, the
//! runs in order), each run executed on the node ([`execute`]) with solo
//! passes giving the references its slowdowns divide by ([`solo`]), runs
//! of an earlier invocation replayed from the journal ([`journal`]), and
//! the whole scored and shown ([`report`], [`files`]), with the check that
//! a job alone measures 1.00 in each cache regime ([`steady`]: run's own,
//! so it lives here and reads run's journal without an import circle).

pub mod bench;
mod execute;
mod files;
mod journal;
mod plan;
mod report;
mod solo;
pub mod steady;

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::launch::install_interrupt_handler;
use cosched_measure::node::{pool_cpus, NodeJob};
use cosched_model::workload::{PoolKind, Workload};
use cosched_report::html::Page;
use cosched_sched::{Platform, PoolInfo, SimJob, SlowdownSource};
use cosched_store::{RunRecord, RunStatus, Store};

use crate::calibrate::calibrate_missing;
use crate::common::{db_path, load_workload, node_cpu_count, open_store, provenance, Ctx};
use crate::error::bad_input;
use cosched_learn::run_inputs::predicted_source;

/// Series this process has started, to name each one apart.
static SERIES_IN_PROCESS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

pub(crate) use journal::final_attempts;
pub use report::{DjsbRun, JobLine, JobSlowdowns, PolicySummary, RunFigures, RunJobs, RunReport, ScoredRun, SoloPassTrip, FIGURES, JOB_HEAD, RATE_HEAD, RUN_HEAD};
pub use solo::{SoloChoice, SoloRef, SoloRefs, SOLO_PASS};

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub workload: PathBuf,
    /// Policy as NAME or NAME:KEY=VALUE,...
    pub policy: String,
    /// Policies run interleaved with it, to compare against.
    pub baselines: Vec<String>,
    /// Predictor the policy decides with: NAME or NAME:key=value,...
    pub predictor: String,
    /// Runs per policy.
    pub repeats: u32,
    /// Directory of the report (index.html, Gantt SVGs, CSV, JSON).
    pub report: Option<PathBuf>,
    /// Continue the newest unfinished series with these settings.
    pub resume: bool,
    /// cgroup hierarchy: auto, v1, v2 or none.
    pub cgroups: String,
    /// Lock file that keeps a second runner off the node.
    pub lock: Option<PathBuf>,
    pub db: Option<PathBuf>,
    /// What a job's measured slowdown is divided by.
    pub solo: SoloMode,
    /// Index of the first repeat (a caller running one repeat at a time
    /// numbers them on; the order of repeat r is the seed's order r).
    pub first_repeat: u32,
    /// Run each repeat's jobs in a seeded random order
    /// (`sched::montecarlo::order(jobs, seed, repeat)`), the same for every
    /// policy of the repeat; `None` keeps the file order.
    pub order_seed: Option<u64>,
    /// Run every repeat's jobs in this order of job indices (a schedule's
    /// priority list, such as the oracle's); overrides `order_seed`.
    pub order: Option<Vec<usize>>,
    /// What notes and errors about the policy and the baselines call them:
    /// the flags the user gave them by ([`RUN_FLAGS`] for `run`; `evaluate`
    /// hands its `--baseline` over as the policy and its `--policy` as
    /// baselines), or a plain word where no flag named them.
    pub named_by: [&'static str; 2],
    /// What an interrupted run tells the user to do next; `None`: the
    /// `cosched run --resume` that continues this series
    /// ([`continue_command`]), which a caller whose workload is not a file
    /// of its own (`study`'s sets) cannot offer.
    pub continue_with: Option<String>,
}

/// `run`'s flags for its policy and its baselines ([`RunRequest::named_by`]).
pub const RUN_FLAGS: [&str; 2] = ["--policy", "--baseline"];

/// Where a job's solo reference comes from: what its measured slowdown
/// (run time over solo time) divides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoloMode {
    /// Each repeat starts with a *solo pass*: one job of each program alone
    /// (twins share it: `solo::twin_of`), launched,
    /// isolated, pinned and timed by this runner exactly as in the policies'
    /// runs, on the pool's CPUs rotated by the repeat so a single-core job
    /// is measured on each core in turn. A job's reference is the newest
    /// pass on the CPUs it ran on (else the newest pass), so a slowdown is a
    /// ratio of two runs minutes apart on this node as it is now. Stored
    /// solo times (pairs campaigns, profiles) are taken at another time, and
    /// a shared VM drifts between them: jobs alone under `run` measured
    /// 1.15-1.30 against them.
    Interleaved,
    /// The store's solo times: the latest pairs campaign's solo repeats,
    /// else the profile's, else calibration; no extra runs.
    Stored,
}

impl std::str::FromStr for SoloMode {
    type Err = String;
    fn from_str(s: &str) -> Result<SoloMode, String> {
        match s {
            "interleaved" => Ok(SoloMode::Interleaved),
            "stored" => Ok(SoloMode::Stored),
            other => Err(format!("`{other}`: expected interleaved or stored")),
        }
    }
}



/// What every run of a series shares: the jobs as the node runs them and
/// as the engine schedules them, the slowdown source, the node's setting
/// and the policies.
struct Series<'a> {
    ctx: &'a Ctx<'a>,
    w: &'a Workload,
    /// The series' id in the store.
    id: String,
    /// Its settings as stored with each run (`--resume` finds it by them).
    params: String,
    /// The policy's label and the baselines', as runs record them.
    main: String,
    baselines: Vec<String>,
    jobs: Vec<NodeJob>,
    sim: Vec<SimJob>,
    /// Per job, where its stored solo time came from.
    stored_from: Vec<String>,
    platform: Platform,
    source: Box<dyn SlowdownSource>,
    source_note: String,
    iso: Isolation,
    topology: Option<cosched_model::topology::Node>,
    cpus_of_pool: Vec<Vec<u32>>,
    shared: Vec<bool>,
    /// Where each run's job logs go (a directory per run).
    log_root: PathBuf,
    /// The uid and gid jobs run as.
    user: Option<(u32, u32)>,
    policies: &'a crate::policy::Policies,
}

/// The verb; with `--report`, its page is written as index.html beside
/// the run's files.
pub fn run(a: &RunRequest, ctx: &Ctx) -> anyhow::Result<RunReport> {
    cosched_measure::launch::handle_terminal_stop(cosched_measure::launch::TerminalStop::Refused);
    // Everything the user gave is checked before the store is opened, so bad
    // input writes nothing.
    let w = load_workload(&a.workload)?;
    run_parsed(a, &w, ctx, &mut Page::new("cosched run"))
}

/// [`run`] of a workload the caller has parsed already (`djsb` builds
/// its own); `a.workload` still names its file, in messages and in the
/// command that resumes the series.
pub fn run_parsed(a: &RunRequest, w: &Workload, ctx: &Ctx, page: &mut Page) -> anyhow::Result<RunReport> {
    let checked = Checked::of(a, w, ctx)?;
    let _lock = crate::lock::take("run", a.lock.as_deref())?;
    let mut store = open_store(&db_path(a.db.as_deref()))?;
    run_checked(a, w, checked, &mut store, ctx, page)
}

/// [`run_parsed`] into a store the caller holds open: `evaluate` runs one
/// series per order and per oracle replay, `study` one per set, each into
/// the store it opened once (`a.db` is then only named in messages).
pub fn run_in(a: &RunRequest, w: &Workload, store: &mut Store, ctx: &Ctx, page: &mut Page) -> anyhow::Result<RunReport> {
    let checked = Checked::of(a, w, ctx)?;
    let _lock = crate::lock::take("run", a.lock.as_deref())?;
    run_checked(a, w, checked, store, ctx, page)
}

/// What [`Checked::of`] made of a request before any store is touched.
struct Checked {
    pref: Preference,
    main: crate::policy::PolicySpec,
    baselines: Vec<(crate::policy::PolicySpec, Option<String>)>,
    note: Option<String>,
    pools: Vec<(u32, bool)>,
    cpus_of_pool: Vec<Vec<u32>>,
    shared: Vec<bool>,
    policies: crate::policy::Policies,
    /// Held for the series: it watches a Lua policy's script for reloads.
    _watch: Option<cosched_lua::live::Watch>,
}

impl Checked {
    /// Every setting of `a` checked against `w` and this node, so bad input
    /// is refused before the store is opened or written.
    fn of(a: &RunRequest, w: &Workload, ctx: &Ctx) -> anyhow::Result<Checked> {
        if a.repeats == 0 {
            return Err(bad_input("--repeats must be at least 1"));
        }
        let pref: Preference = a.cgroups.parse().map_err(|e: String| bad_input(format!("--cgroups: {e}")))?;
        let (main, note) = plan::policy_spec(&a.policy, a.named_by[0])?;
        let baselines = a.baselines.iter().map(|b| plan::policy_spec(b, a.named_by[1])).collect::<anyhow::Result<Vec<_>>>()?;
        cosched_predict::predictors::parse_spec(&a.predictor)
            .and_then(|(n, p)| cosched_predict::predictor_by_name(&n, &p).map(drop))
            .map_err(|e| bad_input(format!("--predictor {}: {e}; see `cosched predict --list`", a.predictor)))?;
        let node_cpus: Vec<u32> = (0..node_cpu_count()).collect();
        let pools: Vec<(u32, bool)> =
            w.pools.iter().map(|p| (p.cores.unwrap_or(node_cpus.len() as u32), p.kind != PoolKind::Cpu)).collect();
        let (cpus_of_pool, shared) = pool_cpus(&pools, &node_cpus).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;
        let (policies, watch) = plan::live_policies(&main, &baselines, ctx)?;
        Ok(Checked { pref, main, baselines, note, pools, cpus_of_pool, shared, policies, _watch: watch })
    }
}

fn run_checked(a: &RunRequest, w: &Workload, c: Checked, store: &mut Store, ctx: &Ctx, page: &mut Page) -> anyhow::Result<RunReport> {
    let Checked { pref, main, baselines, note, pools, cpus_of_pool, shared, policies, _watch } = c;
    // The node lock is this process's: a run of this node still `running`
    // lost its runner (an `evaluate` killed outright never resumes it).
    for id in store.interrupt_orphaned_runs(&provenance(ctx).hostname)? {
        ctx.step(&format!("run {id}: its runner died; marked interrupted (`cosched run --resume` continues a run's series)"));
    }
    install_interrupt_handler();
    for n in std::iter::once(note).chain(baselines.iter().map(|b| b.1.clone())).flatten() {
        ctx.step(&n);
    }
    calibrate_missing(w, store, ctx)?;
    // Variants run kernels of their own: each as a job, so it calibrates too.
    let variant_jobs: Vec<_> = w.jobs.iter().flat_map(|j| (0..j.variants.len()).filter_map(move |k| j.as_variant(k))).collect();
    if !variant_jobs.is_empty() {
        calibrate_missing(&Workload { jobs: variant_jobs, ..w.clone() }, store, ctx)?;
    }
    let jobs = plan::Jobs::of(store, w)?;
    let platform = Platform {
        pools: w
            .pools
            .iter()
            .zip(&pools)
            .map(|(p, &(cores, _))| PoolInfo { name: p.name.clone(), cores, kind: p.kind })
            .collect(),
    };
    let (source, source_note, source_name) = predicted_source(store, w, &a.predictor)?;
    ctx.step(&format!("slowdown source: {source_note}"));
    if a.solo == SoloMode::Interleaved {
        ctx.step("solo references: a solo pass (one job of each program alone, as runs launch and time it; twins share it) before each repeat; stored solo times only estimate progress");
    }
    jobs.say_solo_sources(ctx);
    let (iso, topology, user) = plan::node_setting(ctx, pref);

    let plans = plan::plans(a, &solo::twin_of(w), &main, &baselines)?;
    let main_label = main.label();
    let baseline_labels: Vec<String> = baselines.iter().map(|(b, _)| b.label()).collect();
    let params = plan::series_params(a, w, &jobs.node, &main_label, &baseline_labels, &source_name);
    let prior = if a.resume {
        let exact = store.latest_series(&params, a.first_repeat)?;
        if exact.is_empty() {
            same_but_commands(store, &params, a.first_repeat)?
        } else {
            exact
        }
    } else {
        Vec::new()
    };
    let id = match prior.first() {
        Some(r) => {
            let open = prior.iter().filter(|r| r.status != RunStatus::Done).count();
            ctx.step(&format!(
                "resuming series {}: {} of {} runs stored, {open} unfinished",
                r.series,
                prior.len(),
                plans.len()
            ));
            r.series.clone()
        }
        None => {
            if a.resume {
                ctx.step("no earlier series with these settings; starting a new one");
            }
            let base = format!("{}-{}", cosched_store::format_unix_utc(now_unix()).replace([' ', ':'], ""), std::process::id());
            // Time and pid name a series; a verb that runs several series in
            // one process (`study`, one per environment) may start two within
            // a second, so every series after the process's first is numbered.
            match SERIES_IN_PROCESS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
                0 => base,
                n => format!("{base}.{n}"),
            }
        }
    };
    let log_root = a
        .report
        .clone()
        .map(|d| d.join("logs"))
        .unwrap_or_else(|| cosched_store::default_data_dir().join("runs").join(&id));
    if let Some(report) = &a.report {
        // Each level checked: a link planted at `logs` is refused, not followed.
        crate::common::create_dir(report)?;
        crate::common::create_dir(&log_root)?;
    }
    let series = Series {
        ctx,
        w,
        id,
        params,
        main: main_label,
        baselines: baseline_labels,
        jobs: jobs.node,
        sim: jobs.sim,
        stored_from: jobs.stored_from,
        platform,
        source,
        source_note,
        iso,
        topology,
        cpus_of_pool,
        shared,
        log_root,
        user,
        policies: &policies,
    };
    let ran = execute::run_plans(a, store, &series, &plans, &prior)?;
    let mut report = report::show(a, page, store, &series, &ran.finished, ran.traces, &ran.solo)?;
    report.not_ok = ran.not_ok;
    for r in &mut report.runs {
        r.clock_zero_unix = ran.clock_zero.get(&r.run.id).copied();
    }
    Ok(report)
}

/// The newest series with these settings but for the jobs' command lines
/// (a recalibration changes a kernel's work, another checkout its path),
/// whose repeats start at `first_repeat`: what an interrupted series run
/// again after a recalibration, or a shipped one (`data/`), continues.
fn same_but_commands(store: &Store, params: &str, first_repeat: u32) -> anyhow::Result<Vec<RunRecord>> {
    fn strip(mut v: serde_json::Value) -> serde_json::Value {
        if let Some(jobs) = v.get_mut("jobs").and_then(|j| j.as_array_mut()) {
            for j in jobs {
                if let Some(o) = j.as_object_mut() {
                    o.remove("argv");
                }
            }
        }
        v
    }
    let want = strip(serde_json::from_str(params)?);
    let runs = store.runs()?;
    let mut first: BTreeMap<&str, u32> = BTreeMap::new();
    for r in &runs {
        let m = first.entry(r.series.as_str()).or_insert(r.repeat);
        *m = (*m).min(r.repeat);
    }
    let Some(series) = runs.iter().rev().find(|r| first.get(r.series.as_str()) == Some(&first_repeat) && strip(r.params.clone()) == want).map(|r| r.series.clone())
    else {
        return Ok(Vec::new());
    };
    Ok(runs.into_iter().filter(|r| r.series == series).collect())
}

/// The command that resumes `a`'s series: every setting that names the
/// series or where it is stored, each argument quoted for a shell, so
/// following it literally continues this series in this database.
pub fn continue_command(a: &RunRequest) -> String {
    let mut args: Vec<String> = vec!["cosched".into(), "run".into(), "--workload".into(), a.workload.display().to_string()];
    args.extend(["--policy".into(), a.policy.clone()]);
    for b in &a.baselines {
        args.extend(["--baseline".into(), b.clone()]);
    }
    args.extend(["--predictor".into(), a.predictor.clone(), "--repeats".into(), a.repeats.to_string()]);
    if a.solo != SoloMode::Interleaved {
        args.extend(["--solo".into(), "stored".into()]);
    }
    if a.cgroups != "auto" {
        args.extend(["--cgroups".into(), a.cgroups.clone()]);
    }
    if let Some(r) = &a.report {
        args.extend(["--report".into(), r.display().to_string()]);
    }
    let db = db_path(a.db.as_deref());
    args.extend(["--db".into(), db.display().to_string()]);
    if let Some(l) = &a.lock {
        args.extend(["--lock".into(), l.display().to_string()]);
    }
    args.push("--resume".into());
    shell_words::join(&args)
}

pub(super) fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_with_names_the_database_and_every_setting_quoted_for_a_shell() {
        let a = RunRequest {
            workload: PathBuf::from("my dir/w.toml"),
            policy: "conflict-aware:threshold=30".into(),
            baselines: vec!["noplan".into()],
            predictor: "measured".into(),
            repeats: 2,
            report: None,
            resume: false,
            cgroups: "none".into(),
            lock: None,
            db: Some(PathBuf::from("/data/it's.db")),
            solo: SoloMode::Stored,
            first_repeat: 0,
            order_seed: None,
            order: None,
            named_by: RUN_FLAGS,
            continue_with: None,
        };
        // The workspace's one quoting (`shell_words`, as `workload` splits
        // a command with): it quotes a word with `=` too, which a shell
        // reads as the same word.
        let want = "cosched run --workload 'my dir/w.toml' --policy 'conflict-aware:threshold=30' --baseline noplan \
             --predictor measured --repeats 2 --solo stored --cgroups none --db '/data/it'\\''s.db' --resume";
        assert_eq!(continue_command(&a), want);
        // What a shell reads back is the request's words, the paths whole.
        let words = shell_words::split(want).unwrap();
        assert_eq!(words[3], "my dir/w.toml");
        assert_eq!(words[5], "conflict-aware:threshold=30");
        assert_eq!(words[words.len() - 2], "/data/it's.db");
    }
}
