//! `cosched run`: a workload executed for real on this node under a policy
//! (and baselines), journaled in the store, resumable, scored like a
//! simulation; with a report directory, an HTML page, Gantt SVGs, CSV and
//! JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{install_interrupt_handler, interrupted};
use cosched_measure::node::{invoking_user, pool_cpus, NodeConfig, NodeEvent, NodeExecutor, NodeJob};
use cosched_model::compare::CacheRegime;
use cosched_model::djsb::{djsb, Djsb, DjsbJob, DjsbParams};
use cosched_model::metrics::{increase_rate, job_times, Event, EventKind, Metrics};
use cosched_model::run::JobStatus;
use cosched_model::text::printable;
use cosched_model::trace::Trace;
use cosched_model::stats::Summary;
use cosched_model::workload::{Amount, PoolKind, Workload};
use cosched_report::gantt::{gantt, Bar};
use cosched_report::html::Page;
use cosched_model::placement::Strategy;
use crate::policy::PolicySpec;
use cosched_sched::runner::{run_node_placed, Done, ExecError, RunError};
use cosched_sched::{JobId, Params, Platform, PoolInfo, SimJob, SlowdownSource};
use cosched_store::{patiently, ExecRunId, JournalEntry, Patience, RunJobEnd, RunJobRecord, RunJobStart, RunRecord, RunStatus, Store};

use crate::calibrate::calibrate_missing;
use crate::common::{db_path, load_workload, node_cpu_count, open_store, provenance, Ctx};
use crate::error::{bad_input, stopped};
use crate::source::{predicted_source, solo_time};
use crate::variants::{node_variants, sim_variants};

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
}

/// Where a job's solo reference comes from: what its measured slowdown
/// (run time over solo time) divides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoloMode {
    /// Each repeat starts with a *solo pass*: every job alone, launched,
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

/// The label of a solo pass in the store and the outputs.
pub const SOLO_PASS: &str = "solo-pass";

/// One job's solo time from a solo pass of this series.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SoloRef {
    /// Zero-based repeat of the pass.
    pub repeat: u32,
    pub run: i64,
    pub cpus: Vec<u32>,
    /// Seconds: the kernel's work phase, else the process's wall time.
    pub time: f64,
    /// `work-phase` or `process`.
    pub timing: &'static str,
    /// When the job started, Unix seconds.
    pub at_unix: f64,
    /// The cache regime read before the pass, when it was read.
    pub regime: Option<CacheRegime>,
}

/// What a job of a run divides by.
#[derive(Debug, Clone)]
pub struct SoloChoice {
    /// Median of the chosen passes' times, seconds.
    pub time: f64,
    pub timing: &'static str,
    /// Passes behind the median.
    pub n: usize,
    pub newest: SoloRef,
    /// Which passes: `its CPUs, same regime`, ...
    pub which: &'static str,
}

/// The solo references of a series, by job index in the workload.
#[derive(Debug, Clone, Default)]
pub struct SoloRefs {
    by_job: BTreeMap<usize, Vec<SoloRef>>,
}

impl SoloRefs {
    /// Adds the ok jobs of a finished solo pass.
    fn add_pass(&mut self, run: &RunRecord, jobs: &[RunJobRecord], n: usize, regime: Option<CacheRegime>) {
        for j in final_attempts(jobs, n) {
            let Some(e) = j.end.as_ref().filter(|e| e.status.is_ok()) else { continue };
            let (time, timing) = match e.work_s {
                Some(w) => (w, "work-phase"),
                None => (e.end_s - j.start.start_s, "process"),
            };
            if !(time.is_finite() && time > 0.0) {
                continue;
            }
            self.by_job.entry(j.start.job_index as usize).or_default().push(SoloRef {
                repeat: run.repeat,
                run: run.id.0,
                cpus: j.start.cpus.clone(),
                time,
                timing,
                at_unix: run.started_unix as f64 + j.start.start_s,
                regime,
            });
        }
    }

    /// The solo reference of `job` for a run on `cpus` in `regime`: the
    /// median of its passes so far on exactly those CPUs in that regime,
    /// else in that regime, else on those CPUs, else of all its passes.
    /// The regime comes first: a job that talks between two vCPUs
    /// (pingpong) took 1.06 s alone when they shared a cache and 1.75 s when
    /// they did not. The CPUs next: file I/O took 1.90 s alone on CPU 0 and
    /// 1.75 s on CPU 1 of our VM. A median, not the newest pass: one
    /// pass of a job drifts by 5-10 % from the next, more than the node
    /// drifts over a series.
    pub fn lookup(&self, job: usize, cpus: &[u32], regime: Option<CacheRegime>) -> Option<SoloChoice> {
        let refs = self.by_job.get(&job)?;
        let same_regime = |r: &SoloRef| regime.is_some() && r.regime == regime;
        let tiers: [(&'static str, &dyn Fn(&SoloRef) -> bool); 4] = [
            ("its CPUs, same regime", &|r| same_regime(r) && r.cpus == cpus),
            ("other CPUs, same regime", &|r| same_regime(r)),
            ("its CPUs, other regime", &|r| r.cpus == cpus),
            ("any pass", &|_| true),
        ];
        tiers.iter().find_map(|(which, keep)| {
            let set: Vec<&SoloRef> = refs.iter().filter(|r| keep(r)).collect();
            let newest = *set.last()?;
            let times: Vec<f64> = set.iter().map(|r| r.time).collect();
            Some(SoloChoice { time: cosched_model::stats::median(&times), timing: newest.timing, n: set.len(), newest: newest.clone(), which })
        })
    }
}

/// A job's time in the timing of its reference.
fn timed(timing: &str, work_s: Option<f64>, wall: f64) -> f64 {
    if timing == "work-phase" {
        work_s.unwrap_or(wall)
    } else {
        wall
    }
}

/// A slowdown source over a permuted job list: position `p` is job
/// `order[p]` of the source's list.
struct Permuted<'a> {
    inner: &'a dyn SlowdownSource,
    order: &'a [usize],
}

impl SlowdownSource for Permuted<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        let b: Vec<JobId> = beside.iter().map(|&p| self.order[p]).collect();
        self.inner.slowdown(self.order[job], &b)
    }
    fn score(&self, a: JobId, b: JobId) -> f64 {
        self.inner.score(self.order[a], self.order[b])
    }
}

/// How the node enforces one feature of a job's isolation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Mechanism {
    /// `pinning`, `suspend`, `memory limit`, `process cap`, `kill`.
    pub feature: &'static str,
    /// E.g. `cgroup v1 cpuset`, `sched_setaffinity`, `not enforced`.
    pub how: String,
    /// Why this and not a cgroup, when it is not one.
    pub why: Option<String>,
}

/// The columns of [`RunReport::runs`].
pub const RUN_HEAD: [&str; 8] = ["policy", "repeat", "makespan s", "avg TAT s", "worst TAT s", "worst slowdown", "not ok", "run"];
/// The columns of a run's job table.
/// `suspended s` is the time the job spent suspended (run time is end -
/// start; its measured slowdown leaves the suspended time out).
pub const JOB_HEAD: [&str; 12] =
    ["job", "status", "cpus", "mems", "start s", "end s", "suspended s", "beside at start", "predicted", "measured", "solo s", "solo reference"];
/// The figures of [`RunReport::summary`], after the policy column.
pub const FIGURES: [&str; 4] = ["makespan", "avg turnaround", "worst turnaround", "worst slowdown"];
/// The columns of [`RunReport::rates`].
pub const RATE_HEAD: [&str; 3] = ["baseline", "figure", "median (min .. max, n)"];

/// The jobs of one run, as a table of [`JOB_HEAD`] rows.
#[derive(Debug)]
pub struct RunJobs {
    pub policy: String,
    /// Zero-based.
    pub repeat: u32,
    pub run: i64,
    pub rows: Vec<Vec<String>>,
}

/// One run's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunFigures {
    pub policy: String,
    pub repeat: u32,
    pub run: i64,
    pub makespan: Option<f64>,
    pub avg_turnaround: Option<f64>,
    pub worst_turnaround: Option<f64>,
    /// The worst measured slowdown against the solo references.
    pub worst_slowdown: Option<f64>,
    /// Jobs that did not end ok.
    pub failed: usize,
    /// CPU 0-1 round trip read just before the run, ns (this invocation's
    /// runs only).
    pub round_trip_ns: Option<f64>,
}

/// A series of runs, as tables for people and one JSON document.
#[derive(Debug)]
pub struct RunReport {
    /// The policy's label and the baselines', as runs record them.
    pub main: String,
    pub baselines: Vec<String>,
    /// The jobs of the policy's last repeat.
    pub last_main: Option<RunJobs>,
    /// One row per run ([`RUN_HEAD`]).
    pub runs: Vec<Vec<String>>,
    /// Per policy, each of [`FIGURES`] as median (min-max, n).
    pub summary: Vec<Vec<String>>,
    /// Per job, its median measured slowdown (min-max, n) under each of
    /// `labels`.
    pub per_job: Vec<Vec<String>>,
    /// Does a job alone measure 1.00: per job, policy and cache regime, run
    /// times against the median of the solo passes in that regime
    /// ([`crate::steady::HEAD`]); only runs in one regime throughout.
    pub per_regime: Vec<Vec<String>>,
    /// The policy's label, then the baselines'.
    pub labels: Vec<String>,
    /// Increase rates against each baseline ([`RATE_HEAD`]).
    pub rates: Vec<Vec<String>>,
    /// The report's index.html, when one was written.
    pub index: Option<PathBuf>,
    /// Each job of this invocation's runs that did not end ok: which, in
    /// which run, its status and the last line of its output. Not empty
    /// means exit code 1.
    pub not_ok: Vec<String>,
    /// Every run's figures, typed (solo passes included).
    pub figures: Vec<RunFigures>,
    /// Per policy label (the policy, then the baselines): the pairs it held
    /// apart over its runs, `(waiting job, running job, times)`, most
    /// frequent first ([`crate::held`]).
    pub held_apart: Vec<(String, Vec<(String, String, usize)>)>,
    /// The CPU 0-1 round trip (ns) read before each solo pass this
    /// invocation ran, by repeat.
    pub pass_round_trip: BTreeMap<u32, f64>,
    /// Each workload job's median solo time over the series' solo passes
    /// (`None` without a pass that ran it ok).
    pub solo_medians: Vec<Option<f64>>,
    /// Workload, mechanisms, slowdown source, each run with its metrics and
    /// jobs as stored, summaries and increase rates.
    pub json: serde_json::Value,
    /// The ParaStation paper's djsb figures of each run (solo passes aside), when
    /// the workload has sessions arriving after the first: the first job
    /// is the simulation, the later ones analysis sessions
    /// (`model::djsb`), solo times from the series' passes.
    pub djsb: Vec<DjsbRun>,
}

/// One run's djsb figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DjsbRun {
    pub policy: String,
    pub repeat: u32,
    pub run: i64,
    pub figures: Djsb,
}

/// A policy spec parsed once (`policy::parse`), and a note naming the
/// defaults in force. Its label names every parameter's value (defaults
/// filled in, so the stored label says what ran) and its `placement=NAME`,
/// the engine's key: where its starts go on the node's topology
/// (`model::placement`), so one run can set two placements side by side.
fn policy_spec(spec: &str, what: &str) -> anyhow::Result<(PolicySpec, Option<String>)> {
    let s = crate::policy::parse(spec).map_err(|e| bad_input(format!("{what}: {e}")))?;
    let defaulted = s.defaulted();
    let note = (!defaulted.is_empty()).then(|| format!("{what} {}: defaults {}", s.name(), defaulted.join(", ")));
    Ok((s, note))
}

/// The placement a plan's `placement=NAME` asks for, on this node's
/// topology, over the pools' CPUs as the runner maps them (a pool that
/// shares its CPUs with another, an accelerator's host side, is placed as
/// without a topology).
fn placement_of(strategy: Option<Strategy>, pool_cpus: &[Vec<u32>], shared: &[bool]) -> Result<Option<cosched_sched::Placement>, String> {
    let Some(strategy) = strategy else { return Ok(None) };
    let name = cosched_sched::spec::strategy_name(strategy);
    let node = cosched_measure::topology::detect().map_err(|e| format!("placement={name}: reading this node's topology: {e}"))?;
    let pools = pool_cpus.iter().zip(shared).map(|(c, &sh)| (!sh).then(|| c.clone())).collect();
    cosched_sched::Placement::new(&node, strategy, pools).map(Some).map_err(|e| format!("placement={name}: {e}"))
}

/// What builds the run's policies. With a Lua policy among them, SIGHUP
/// reloads its script between two decisions, and the resource governor is
/// the governor file's level (`cosched governor`), watched while the run
/// goes on, else the spec's.
fn live_policies(
    main: &PolicySpec,
    baselines: &[(PolicySpec, Option<String>)],
    ctx: &Ctx,
) -> anyhow::Result<(crate::policy::Policies, Option<cosched_lua::live::Watch>)> {
    use cosched_lua::live::{install_reload_signal, read_governor, Watch};
    use cosched_lua::Governor;
    let lua: Vec<&cosched_lua::LuaSpec> = std::iter::once(main)
        .chain(baselines.iter().map(|b| &b.0))
        .filter_map(|s| match &s.policy {
            crate::policy::Resolution::Lua(l) => Some(l),
            crate::policy::Resolution::Registered(_) => None,
        })
        .collect();
    let Some(first) = lua.first() else {
        return Ok((crate::policy::Policies::live(Governor::new(cosched_lua::Level::High)), None));
    };
    let file = crate::policy::governor_file();
    let level = match read_governor(&file).map_err(bad_input)? {
        Some(l) => l,
        None => first.governor(),
    };
    let governor = Governor::new(level);
    install_reload_signal();
    ctx.step(&format!(
        "Lua policy: `kill -HUP {}` reloads its script between two decisions; governor {} (`cosched governor high|low` sets {})",
        std::process::id(),
        level.name(),
        file.display()
    ));
    let watch = Watch::start(Vec::new(), Some(file), governor.clone(), std::time::Duration::from_millis(200));
    Ok((crate::policy::Policies::live(governor), Some(watch)))
}

struct Plan {
    label: String,
    name: String,
    params: Params,
    /// Where the engine places the policy's starts (`placement=NAME`).
    placement: Option<Strategy>,
    repeat: u32,
    /// A solo pass (each job alone, arrivals ignored, CPUs rotated).
    pass: bool,
    /// Position p of the run's job list is job `order[p]` of the workload.
    order: Vec<usize>,
}

pub fn run(a: &RunRequest, ctx: &Ctx) -> anyhow::Result<RunReport> {
    cosched_measure::launch::handle_terminal_stop(cosched_measure::launch::TerminalStop::Refused);
    let mut page = Page::new("cosched run");
    run_into(a, ctx, &mut page)
}

/// The verb, with the report's sections appended to `page` (`cosched demo`
/// puts them into its own report); with `--report`, the page is written as
/// index.html beside the run's files.
pub fn run_into(a: &RunRequest, ctx: &Ctx, page: &mut Page) -> anyhow::Result<RunReport> {
    // Everything the user gave is checked before the store is opened, so bad
    // input writes nothing.
    let w = load_workload(&a.workload)?;
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    let pref: Preference = a.cgroups.parse().map_err(|e: String| bad_input(format!("--cgroups: {e}")))?;
    let (main, note1) = policy_spec(&a.policy, "--policy")?;
    let baselines = a.baselines.iter().map(|b| policy_spec(b, "--baseline")).collect::<anyhow::Result<Vec<_>>>()?;
    cosched_predict::predictors::parse_spec(&a.predictor)
        .and_then(|(n, p)| cosched_predict::predictor_by_name(&n, &p).map(drop))
        .map_err(|e| bad_input(format!("--predictor {}: {e}; see `cosched predict --list`", a.predictor)))?;
    let node_cpus: Vec<u32> = (0..node_cpu_count()).collect();
    let pools: Vec<(u32, bool)> =
        w.pools.iter().map(|p| (p.cores.unwrap_or(node_cpus.len() as u32), p.kind != PoolKind::Cpu)).collect();
    let (cpus_of_pool, shared) = pool_cpus(&pools, &node_cpus).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;

    let (policies, _watch) = live_policies(&main, &baselines, ctx)?;
    let _lock = crate::lock::take("run", a.lock.as_deref())?;
    let mut store = open_store(&db_path(a.db.as_deref()))?;
    // The node lock is this process's: a run of this node still `running`
    // lost its runner (an `evaluate` killed outright never resumes it).
    for id in store.interrupt_orphaned_runs(&provenance(ctx).hostname)? {
        ctx.step(&format!("run {id}: its runner died; marked interrupted (`cosched run --resume` continues a run's series)"));
    }
    install_interrupt_handler();
    for n in std::iter::once(note1).chain(baselines.iter().map(|b| b.1.clone())).flatten() {
        ctx.step(&n);
    }
    calibrate_missing(&w, &mut store, ctx)?;
    // Variants run kernels of their own: each as a job, so it calibrates too.
    let variant_jobs: Vec<_> = w.jobs.iter().flat_map(|j| (0..j.variants.len()).filter_map(move |k| j.as_variant(k))).collect();
    if !variant_jobs.is_empty() {
        calibrate_missing(&Workload { jobs: variant_jobs, ..w.clone() }, &mut store, ctx)?;
    }
    let cals = store.calibrations()?;
    let mut jobs = Vec::new();
    let mut sim = Vec::new();
    let mut solo_notes = Vec::new();
    // Where each job's solo time came from: source -> (jobs, repeats behind each).
    let mut solo_from: BTreeMap<String, (Vec<&str>, Vec<usize>)> = BTreeMap::new();
    let measured = store.measurements(&w.name)?;
    let mut stored_from: Vec<String> = Vec::new();
    for (i, j) in w.jobs.iter().enumerate() {
        let argv = job_argv(j, &cals).map_err(anyhow::Error::msg)?;
        let solo = solo_time(&store, &measured, &w, i, &cals)?;
        stored_from.push(solo.as_ref().map_or("-".into(), |(_, _, from, n)| format!("{from}, median of {n}")));
        if let Some((_, _, from, n)) = &solo {
            let e = solo_from.entry(from.clone()).or_default();
            e.0.push(&j.name);
            e.1.push(*n);
        }
        let pool = w.pools.iter().position(|p| p.name == j.pool).expect("the parser checked the pool");
        let estimate = match &solo {
            Some((s, ..)) => *s,
            None => {
                solo_notes.push(j.name.clone());
                match j.amount {
                    Amount::Seconds(s) => s,
                    _ => j.timeout.unwrap_or(1.0),
                }
            }
        };
        jobs.push(NodeJob {
            name: j.name.clone(),
            argv,
            pool,
            cores: j.cores,
            timeout: j.timeout,
            memory_mib: j.memory_mib,
            pids_max: Some(j.pids_max()),
            solo: solo.as_ref().map(|(s, t, ..)| (*s, t.clone())),
            kernel: j.kernel().is_some(),
            env: j.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            workdir: j.workdir.as_ref().map(PathBuf::from),
            // Templates here; each run fills in its id and repeat (`execute`).
            stdout: j.stdout.as_ref().map(PathBuf::from),
            stderr: j.stderr.as_ref().map(PathBuf::from),
            variants: node_variants(j, &w, &cals)?,
        });
        sim.push(SimJob {
            name: j.name.clone(),
            arrival: j.arrival,
            solo: estimate,
            pool,
            cores: j.cores,
            program: j.program_key(),
            variants: sim_variants(j, &w, estimate),
        });
    }
    let platform = Platform {
        pools: w
            .pools
            .iter()
            .zip(&pools)
            .map(|(p, &(cores, _))| PoolInfo { name: p.name.clone(), cores, kind: p.kind })
            .collect(),
    };
    let (source, source_note, source_name) = predicted_source(&store, &w, &a.predictor)?;
    ctx.step(&format!("slowdown source: {source_note}"));
    if a.solo == SoloMode::Interleaved {
        ctx.step("solo references: a solo pass (each job alone, as runs launch and time it) before each repeat; stored solo times only estimate progress");
    }
    for (from, (names, ns)) in &solo_from {
        let (lo, hi) = (ns.iter().min().copied().unwrap_or(0), ns.iter().max().copied().unwrap_or(0));
        let n = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
        let who = if names.len() == w.jobs.len() { format!("all {} jobs", names.len()) } else { names.join(", ") };
        ctx.step(&format!("solo times from {from} (median of {n} solo runs each): {who}"));
    }
    if !solo_notes.is_empty() {
        ctx.step(&format!(
            "no stored solo time (pairs, profile or calibration) for {}: their measured slowdown is not recorded (run `cosched profile --workload FILE`)",
            solo_notes.join(", ")
        ));
    }
    let iso = Isolation::detect(pref);
    for m in iso.mechanisms() {
        ctx.step(&format!("{}: {}{}", m.feature, m.how, m.why.map(|w| format!(" ({w})")).unwrap_or_default()));
    }
    // Memory follows the cores: each job's cpuset.mems is the NUMA nodes
    // of its CPUs, read from this node's topology.
    let topology = match cosched_measure::topology::detect() {
        Ok(n) => {
            if iso.pins() {
                ctx.step(&format!("memory: bound to the NUMA nodes of each job's CPUs (cpuset.mems; this node has {})", n.numa_nodes.len().max(1)));
            }
            Some(n)
        }
        Err(e) => {
            ctx.step(&format!("memory: not bound (this node's NUMA nodes cannot be read: {e})"));
            None
        }
    };
    let user = invoking_user();
    if let Some((uid, gid)) = user {
        ctx.step(&format!("jobs run as uid {uid} gid {gid} (the user who invoked sudo)"));
    }

    if let Some(o) = &a.order {
        let mut seen = o.clone();
        seen.sort_unstable();
        if seen != (0..w.jobs.len()).collect::<Vec<_>>() {
            anyhow::bail!("the job order {o:?} is not an order of the workload's {} jobs", w.jobs.len());
        }
    }
    let main_label = main.label();
    let baseline_labels: Vec<String> = baselines.iter().map(|(b, _)| b.label()).collect();
    let mut plans = Vec::new();
    let n = w.jobs.len();
    for r in a.first_repeat..a.first_repeat + a.repeats {
        let order: Vec<usize> = match (&a.order, a.order_seed) {
            (Some(o), _) => o.clone(),
            (None, Some(seed)) => cosched_sched::montecarlo::order(n, seed, r as usize),
            (None, None) => (0..n).collect(),
        };
        let plan = |label: String, name: &str, params: &Params, placement: Option<Strategy>| Plan {
            label,
            name: name.to_string(),
            params: params.clone(),
            placement,
            repeat: r,
            pass: false,
            order: order.clone(),
        };
        let mut pair = vec![plan(main_label.clone(), main.name(), &main.params(), main.placement())];
        for (b, _) in &baselines {
            pair.push(plan(b.label(), b.name(), &b.params(), b.placement()));
        }
        // Rotating which goes first keeps a drift of the node from
        // favouring one policy.
        let k = pair.len();
        pair.rotate_left(r as usize % k);
        if a.solo == SoloMode::Interleaved {
            plans.push(Plan { pass: true, ..plan(SOLO_PASS.to_string(), "exclusive", &Params::new(), None) });
        }
        plans.extend(pair);
    }
    let params = serde_json::json!({
        "workload": w.name,
        "jobs": jobs.iter().map(|j| serde_json::json!({"name": j.name, "argv": j.argv, "cores": j.cores})).collect::<Vec<_>>(),
        "policy": main_label,
        "baseline": baseline_labels,
        // What decided (and predicted), for `evaluate-predictors --from-runs`.
        "predictor": source_name,
        "repeats": a.repeats,
        "solo": a.solo,
        "order_seed": a.order_seed,
    });
    // Only when given, so series stored before orders could be given keep
    // their settings (and `--resume` finds them).
    let params = match &a.order {
        Some(o) => {
            let mut p = params;
            p["order"] = serde_json::json!(o);
            p
        }
        None => params,
    }
    .to_string();
    let prior = if a.resume { store.latest_series(&params)? } else { Vec::new() };
    let series = match prior.first() {
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
            format!("{}-{}", cosched_store::format_unix_utc(now_unix()).replace([' ', ':'], ""), std::process::id())
        }
    };
    let prov = provenance(ctx);
    let log_root = a
        .report
        .clone()
        .map(|d| d.join("logs"))
        .unwrap_or_else(|| cosched_store::default_data_dir().join("runs").join(&series));
    if let Some(report) = &a.report {
        // Each level checked: a link planted at `logs` is refused, not followed.
        crate::common::create_dir(report)?;
        crate::common::create_dir(&log_root)?;
    }

    let mut finished: Vec<RunRecord> = Vec::new();
    // Traces of the runs this invocation executed, as the run loop saw them;
    // runs finished earlier are rebuilt from the store.
    let mut traces: BTreeMap<ExecRunId, Trace> = BTreeMap::new();
    let mut refs = SoloRefs::default();
    // The CPU 0-1 round trip read before each solo pass of the series.
    let mut pass_round_trip: BTreeMap<u32, f64> = BTreeMap::new();
    // The same reading before every run (passes included), by (label, repeat).
    let mut run_round_trip: BTreeMap<(String, u32), f64> = BTreeMap::new();
    // How each job of this invocation's runs chose its reference, by (run, job).
    let mut ref_notes: BTreeMap<(i64, usize), String> = BTreeMap::new();
    // Every job of this invocation's runs that did not end ok, and why.
    let mut not_ok: Vec<String> = Vec::new();
    for plan in &plans {
        let existing = prior.iter().find(|r| r.policy == plan.label && r.repeat == plan.repeat);
        if let Some(r) = existing.filter(|r| r.status == RunStatus::Done) {
            if plan.pass {
                // The regime an earlier invocation read before this pass.
                let ns = store.run_conditions(r.id)?.first().and_then(|c| c.c2c.as_ref().map(|x| x.1));
                if let Some(ns) = ns {
                    pass_round_trip.insert(plan.repeat, ns);
                }
                refs.add_pass(r, &store.run_jobs(r.id)?, n, ns.map(CacheRegime::of_round_trip));
            }
            finished.push(r.clone());
            continue;
        }
        // The cache regime now: passes record it, runs look up references
        // taken in the same regime.
        let round_trip = crate::common::round_trip_now();
        if let Some(ns) = round_trip {
            if plan.pass {
                pass_round_trip.insert(plan.repeat, ns);
            }
            run_round_trip.insert((plan.label.clone(), plan.repeat), ns);
        }
        let (run_id, done, attempts, origin) = match existing {
            Some(r) => {
                let recs = store.run_jobs(r.id)?;
                let origin = store.run_journal(r.id)?.iter().map(|e| e.t_s).fold(0.0, f64::max);
                let origin = recs.iter().flat_map(|j| [Some(j.start.start_s), j.end.as_ref().map(|e| e.end_s)]).flatten().fold(origin, f64::max);
                let frozen = suspended_at_death(&store.run_journal(r.id)?, &recs);
                if !frozen.is_empty() {
                    ctx.step(&format!(
                        "run {}: {} suspended when the runner died; the watchdog killed and thawed them, and they start again",
                        r.id,
                        frozen.join(", ")
                    ));
                }
                let killed = store.resume_run(r.id, origin)?;
                let scope = format!("{series}-r{}", r.id);
                let leftovers = iso.clean_scope(&scope);
                ctx.step(&format!(
                    "run {} ({} repeat {}): resuming at t={origin:.2}s; {killed} job(s) that were running are started again{}",
                    r.id,
                    r.policy,
                    r.repeat,
                    if leftovers > 0 { format!("; killed {leftovers} leftover process(es) in its cgroups") } else { String::new() }
                ));
                let recs = store.run_jobs(r.id)?;
                let (done, attempts) = done_jobs(&recs, &store.run_journal(r.id)?, w.jobs.len());
                (r.id, done, attempts, origin)
            }
            None => {
                // Each run's provenance starts when the run does, so a solo
                // reference's age can be told from it.
                let prov = cosched_model::provenance::Provenance { started_unix: now_unix(), ..prov.clone() };
                let id = store.begin_run(&series, &w.name, &plan.label, plan.repeat, &params, &prov)?;
                (id, Vec::new(), vec![0; w.jobs.len()], 0.0)
            }
        };
        let refs_now = (a.solo == SoloMode::Interleaved && !plan.pass).then_some((&refs, round_trip.map(CacheRegime::of_round_trip)));
        // Stored with the run, so a resumed series knows the regime of the
        // passes this invocation runs. A failed load reading only loses it.
        if let Ok(load) = cosched_measure::provenance::load_average() {
            store.add_run_conditions(run_id, &crate::common::reading_now(load, round_trip.map(|ns| (vec![0, 1], ns))))?;
        }
        let outcome = execute(
            ctx, &mut store, run_id, plan, &w, &jobs, &sim, &platform, source.as_ref(), &iso, topology.as_ref(), &cpus_of_pool, &shared, &series,
            &log_root, user, done, attempts, origin, refs_now, &mut ref_notes, &policies, &mut not_ok,
        );
        // The regime again once the run has ended: a run whose readings
        // disagree switched part-way and is left out of the per-regime
        // check (`steady`).
        if outcome.is_ok() {
            if let (Some(ns), Ok(load)) = (crate::common::round_trip_now(), cosched_measure::provenance::load_average()) {
                store.add_run_conditions(run_id, &crate::common::reading_now(load, Some((vec![0, 1], ns))))?;
            }
        }
        match outcome {
            Ok((t, trace)) => {
                store.finish_run(run_id, RunStatus::Done, t, "all jobs ended")?;
                traces.insert(run_id, trace);
            }
            Err(RunError::Exec(ExecError::Interrupted(sig))) => {
                store.finish_run(run_id, RunStatus::Interrupted, 0.0, &format!("signal {sig}"))?;
                return Err(stopped(
                    sig,
                    format!(
                        "interrupted; every job was killed and run {run_id} is stored as interrupted. \
                         Continue with: {}",
                        continue_command(a)
                    ),
                ));
            }
            Err(e) => {
                let _ = store.finish_run(run_id, RunStatus::Failed, 0.0, &e.to_string());
                return Err(anyhow::anyhow!("run {run_id} ({} repeat {}): {e}", plan.label, plan.repeat));
            }
        }
        let rec = store.run(run_id)?.expect("just finished");
        if plan.pass {
            refs.add_pass(&rec, &store.run_jobs(run_id)?, n, round_trip.map(CacheRegime::of_round_trip));
        }
        finished.push(rec);
    }
    let solo = SoloInfo { mode: a.solo, refs, pass_round_trip, run_round_trip, ref_notes, stored_from };
    let mut report =
        show(a, page, &store, &w, &sim, &platform, &finished, traces, &main_label, &baseline_labels, &iso, &source_note, &cpus_of_pool, &solo)?;
    report.not_ok = not_ok;
    Ok(report)
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
    args.iter().map(|s| shell_quote(s)).collect::<Vec<_>>().join(" ")
}

/// `s` as one shell word: unchanged when it is plainly safe, else in single
/// quotes (a quote inside as `'\''`).
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// (from, to) of each suspension of a job attempt that ran from `start`
/// to `end`, from the journal's `suspend` and `resume` lines; one still
/// open at `end` lasts until it.
fn suspensions(journal: &[JournalEntry], job: &str, start: f64, end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut open: Option<f64> = None;
    for e in journal.iter().filter(|e| e.job.as_deref() == Some(job) && e.t_s >= start && e.t_s <= end) {
        match (e.event.as_str(), open) {
            ("suspend", None) => open = Some(e.t_s),
            ("resume", Some(from)) => {
                out.push((from, e.t_s));
                open = None;
            }
            _ => {}
        }
    }
    out.extend(open.map(|from| (from, end)));
    out
}

/// Jobs whose attempt was suspended (no `resume` after its `suspend`)
/// and had not ended when the runner died.
fn suspended_at_death(journal: &[JournalEntry], recs: &[RunJobRecord]) -> Vec<String> {
    recs.iter()
        .filter(|r| r.end.is_none())
        .filter(|r| !suspensions(journal, &r.start.job, r.start.start_s, f64::INFINITY).iter().all(|s| s.1.is_finite()))
        .map(|r| r.start.job.clone())
        .collect()
}

/// Jobs whose latest attempt ended other than `killed`, with their
/// suspensions, and the next attempt number of every job.
fn done_jobs(recs: &[RunJobRecord], journal: &[JournalEntry], n: usize) -> (Vec<Done>, Vec<u32>) {
    let mut attempts = vec![0u32; n];
    let mut last: Vec<Option<&RunJobRecord>> = vec![None; n];
    for r in recs {
        let i = r.start.job_index as usize;
        if i < n {
            attempts[i] = attempts[i].max(r.start.attempt + 1);
            last[i] = Some(r);
        }
    }
    let done = last
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let r = (*r)?;
            let e = r.end.as_ref()?;
            (e.status != JobStatus::Killed).then(|| Done {
                job: i,
                start: r.start.start_s,
                finish: e.end_s,
                status: e.status,
                cpus: r.start.cpus.clone(),
                suspensions: suspensions(journal, &r.start.job, r.start.start_s, e.end_s),
            })
        })
        .collect();
    (done, attempts)
}

#[allow(clippy::too_many_arguments)]
fn execute(
    ctx: &Ctx,
    store: &mut Store,
    run_id: ExecRunId,
    plan: &Plan,
    w: &Workload,
    jobs: &[NodeJob],
    sim: &[SimJob],
    platform: &Platform,
    source: &dyn SlowdownSource,
    iso: &Isolation,
    topology: Option<&cosched_model::topology::Node>,
    cpus_of_pool: &[Vec<u32>],
    shared: &[bool],
    series: &str,
    log_root: &Path,
    user: Option<(u32, u32)>,
    done: Vec<Done>,
    mut attempts: Vec<u32>,
    origin: f64,
    refs: Option<(&SoloRefs, Option<CacheRegime>)>,
    notes: &mut BTreeMap<(i64, usize), String>,
    policies: &crate::policy::Policies,
    not_ok: &mut Vec<String>,
) -> Result<(f64, Trace), RunError> {
    let mut policy = policies.build(&plan.name, &plan.params).map_err(RunError::Input)?;
    policy.set_priorities(&crate::policy::priorities(w));
    // The run's job list in the plan's order; engines see positions, the
    // store keeps workload indices (`order[position]`).
    let order = &plan.order;
    let mut pos_of = vec![0usize; order.len()];
    for (p, &j) in order.iter().enumerate() {
        pos_of[j] = p;
    }
    let jobs: Vec<NodeJob> = order
        .iter()
        .map(|&j| {
            let mut nj = jobs[j].clone();
            if plan.pass || refs.is_some() {
                // The app divides by the reference itself (below).
                nj.solo = None;
            }
            let fill = |t: &PathBuf| {
                PathBuf::from(cosched_model::workload::output_path(&t.to_string_lossy(), &nj.name, run_id.0, plan.repeat + 1))
            };
            nj.stdout = nj.stdout.as_ref().map(fill);
            nj.stderr = nj.stderr.as_ref().map(fill);
            nj
        })
        .collect();
    for p in jobs.iter().flat_map(|j| [&j.stdout, &j.stderr]).flatten() {
        if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            cosched_measure::files::create_dir(d, user).map_err(|e| RunError::Input(e.to_string()))?;
        }
    }
    let jobs = &jobs[..];
    let sim_run: Vec<SimJob> = order
        .iter()
        .map(|&j| {
            let mut s = sim[j].clone();
            if plan.pass {
                s.arrival = 0.0;
            } else if let Some(c) = refs.and_then(|(refs, regime)| refs.lookup(j, &[], regime)) {
                // The solo passes' median is the job's rate alone, which
                // its online slowdown estimate divides by (issue 38), and
                // what is left of it better than a stored guess.
                s.solo = c.time;
            }
            s
        })
        .collect();
    let done: Vec<Done> = done.into_iter().map(|d| Done { job: pos_of[d.job], ..d }).collect();
    let permuted = Permuted { inner: source, order };
    let source: &dyn SlowdownSource = &permuted;
    // The reference each running job is divided by: (seconds, timing).
    let mut chosen: Vec<Option<(f64, &'static str)>> = vec![None; order.len()];
    let total = w.jobs.len() as u64;
    let progress = ctx.progress.task(&format!("{} #{}", plan.label, plan.repeat + 1), total);
    let mut ended = done.len() as u64;
    let mut running: BTreeMap<usize, (f64, Vec<u32>)> = BTreeMap::new();
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let mut last_t = origin;
    // Each running job's latest online estimate, by position, for the
    // progress line.
    let mut estimates: BTreeMap<usize, cosched_sched::online::Estimate> = BTreeMap::new();
    let regime_now = refs.and_then(|r| r.1).map(|g| g.name().to_string());
    let mut store_err: Option<String> = None;
    let mut pool_cpus = cpus_of_pool.to_vec();
    if plan.pass {
        // Each pass starts its single-core jobs on another core, so every
        // core gets references over the repeats.
        for cpus in &mut pool_cpus {
            if !cpus.is_empty() {
                let k = plan.repeat as usize % cpus.len();
                cpus.rotate_left(k);
            }
        }
    }
    let placement = placement_of(plan.placement, &pool_cpus, shared).map_err(RunError::Input)?;
    let cfg = NodeConfig {
        pool_cpus,
        shared_pool: shared.to_vec(),
        topology: topology.cloned(),
        scope: format!("{series}-r{run_id}"),
        log_dir: log_root.join(format!("run-{run_id}")),
        user,
        isolation: iso.clone(),
        clock_origin: origin,
        env: vec![("COSCHED_RUN".into(), run_id.0.to_string()), ("COSCHED_REPEAT".into(), (plan.repeat + 1).to_string())],
    };
    let log = policies.log().clone();
    // What the policy reported (Lua swaps, refusals, fallbacks) is journaled
    // before the event that follows it, so the journal keeps their order.
    let journal_notes = |store: &mut Store| -> Result<(), String> {
        for n in log.take_new() {
            progress.println(&format!("t={:.2}s {}: {}", n.time, n.kind.event(), n.detail));
            store.run_note(run_id, n.time, n.kind.event(), &n.detail).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    let result = {
        let mut sink = |e: NodeEvent| -> Result<(), String> {
            journal_notes(store)?;
            let r = match &e {
                NodeEvent::Started(s) => {
                    let j = order[s.job];
                    running.insert(j, (s.start, s.cpus.clone()));
                    last_t = last_t.max(s.start);
                    let solo_s = match refs {
                        Some((refs, regime)) => {
                            let c = refs.lookup(j, &s.cpus, regime);
                            if let Some(c) = &c {
                                let age = now_unix() as f64 - c.newest.at_unix;
                                let regime = c.newest.regime.map(|g| format!(", {}", g.name())).unwrap_or_default();
                                notes.insert(
                                    (run_id.0, j),
                                    format!("median of {} pass(es): {}{regime}; newest {age:.0} s before", c.n, c.which),
                                );
                            }
                            chosen[s.job] = c.map(|c| (c.time, c.timing));
                            chosen[s.job].map(|c| c.0)
                        }
                        None => jobs[s.job].solo.as_ref().map(|x| x.0),
                    };
                    let started = RunJobStart {
                            job: names[j].clone(),
                            job_index: j as u32,
                            attempt: attempts[j],
                            arrival_s: sim_run[s.job].arrival,
                            start_s: s.start,
                            cpus: s.cpus.clone(),
                            mems: s.mems.clone(),
                            pgid: s.pgid,
                            beside: s.beside.clone(),
                            predicted: s.predicted,
                            solo_s,
                    };
                    patiently(&format!("the start of job `{}` in run {run_id}", names[j]), Patience::FINISHED_WORK, || store.run_job_started(run_id, &started), &mut |m| eprintln!("cosched: {m}"))
                }
                NodeEvent::Suspended { job, t } | NodeEvent::Resumed { job, t } => {
                    let what = if matches!(e, NodeEvent::Suspended { .. }) { "suspend" } else { "resume" };
                    last_t = last_t.max(*t);
                    patiently(&format!("a {what} of job `{}` in run {run_id}", names[order[*job]]), Patience::FINISHED_WORK, || store.run_job_event(run_id, *t, what, &names[order[*job]], ""), &mut |m| eprintln!("cosched: {m}"))
                }
                NodeEvent::Moved { job, t, cpus, mems } => {
                    last_t = last_t.max(*t);
                    let f = cosched_model::topology::format_cpulist;
                    let detail = if mems.is_empty() { format!("cpus {}", f(cpus)) } else { format!("cpus {} mems {}", f(cpus), f(mems)) };
                    running.entry(order[*job]).and_modify(|r| r.1 = cpus.clone());
                    patiently(&format!("a move of job `{}` in run {run_id}", names[order[*job]]), Patience::FINISHED_WORK, || store.run_job_event(run_id, *t, "move", &names[order[*job]], &detail), &mut |m| eprintln!("cosched: {m}"))
                }
                NodeEvent::Estimate { job, estimate } => {
                    estimates.insert(*job, *estimate);
                    Ok(())
                }
                NodeEvent::Settled(s) => {
                    // The observation, kept at once: the run's source has
                    // learned it already (engine::online).
                    let e = &s.estimate;
                    let sample = cosched_store::OnlineSample {
                        t_s: s.time,
                        victim: names[order[s.job]].clone(),
                        beside: names[order[s.beside]].clone(),
                        victim_program: sim[order[s.job]].program.clone(),
                        beside_program: sim[order[s.beside]].program.clone(),
                        slowdown: e.slowdown,
                        lo: e.lo,
                        hi: e.hi.is_finite().then_some(e.hi),
                        segments: e.n as u32,
                        signal: e.signal.name().to_string(),
                        predicted: s.predicted,
                        regime: regime_now.clone(),
                    };
                    progress.println(&format!(
                        "t={:.2}s settled: {} beside {} x{:.2} [{:.2}, {:.2}] (predicted {:.2})",
                        s.time, printable(&names[order[s.job]]), printable(&names[order[s.beside]]), e.slowdown, e.lo, e.hi, s.predicted
                    ));
                    patiently(&format!("an online sample of job `{}` in run {run_id}", names[order[s.job]]), Patience::FINISHED_WORK, || store.add_online_sample(run_id, &sample), &mut |m| eprintln!("cosched: {m}"))
                }
                NodeEvent::Silent { job, observer, why } => {
                    let name = printable(&names[order[*job]]);
                    progress.println(&format!("job {name}: no online estimate ({observer}): {}; it runs on untouched", printable(why)));
                    Ok(())
                }
                NodeEvent::Ended(x) => {
                    estimates.remove(&x.job);
                    let j = order[x.job];
                    running.remove(&j);
                    ended += 1;
                    last_t = last_t.max(x.end);
                    // The learning loop's sample: the time it ran, not the
                    // time it was suspended.
                    let ran = |t: f64| (t - x.suspended_s).max(f64::MIN_POSITIVE);
                    let slowdown = match (refs, chosen[x.job]) {
                        (Some(_), Some((solo, timing))) if x.status.is_ok() => Some(ran(timed(timing, x.work_s, x.end - x.start)) / solo),
                        (Some(_), _) => None,
                        (None, _) => x.slowdown,
                    };
                    // A busy database or a full disk is waited out: failing
                    // here would make `--resume` run a finished job again.
                    let end = RunJobEnd { end_s: x.end, status: x.status, work_s: x.work_s, slowdown };
                    let r = patiently(
                        &format!("the end of job `{}` in run {run_id}", names[j]),
                        Patience::FINISHED_WORK,
                        || store.run_job_ended(run_id, j as u32, attempts[j], &end),
                        &mut |m| eprintln!("cosched: {m}"),
                    );
                    attempts[j] += 1;
                    if !matches!(x.status, JobStatus::Ok | JobStatus::Killed) {
                        // The job's last line (already cut to a bound) and
                        // its name reach a terminal: control characters
                        // are shown, not obeyed.
                        let why = x.output_tail.lines().last().map(|l| format!(": {}", printable(l))).unwrap_or_default();
                        let name = printable(&names[j]);
                        not_ok.push(format!("job `{name}` in run {} ({} repeat {}): {}{why}", run_id.0, plan.label, plan.repeat + 1, x.status));
                        progress.println(&format!("job {name} {} after {:.2}s{why}", x.status, x.end - x.start));
                    }
                    r
                }
            };
            let now = last_t;
            let msg: Vec<String> = running
                .iter()
                .map(|(&j, (start, cpus))| {
                    let pct = ((now - start) / sim[j].solo * 100.0).clamp(0.0, 99.0);
                    let est = estimates
                        .get(&pos_of[j])
                        .map(|e| format!(" x{:.2}[{:.2}-{:.2}]{}", e.slowdown, e.lo, e.hi, if e.signal.decisive() { "" } else { "?" }))
                        .unwrap_or_default();
                    format!("{}@{} {pct:.0}%{est}", printable(&names[j]), cosched_model::topology::format_cpulist(cpus))
                })
                .collect();
            progress.set(ended, &format!("t={now:.1}s running: {}", if msg.is_empty() { "-".into() } else { msg.join(" ") }));
            r.map_err(|e| {
                let m = e.to_string();
                store_err = Some(m.clone());
                m
            })
        };
        let mut ex = NodeExecutor::new(cfg, jobs, &mut sink).map_err(|e| RunError::Exec(ExecError::Fatal(e)))?;
        let r = run_node_placed(platform, &sim_run, source, policy.as_mut(), &mut ex, &done, placement.as_ref());
        let end = cosched_sched::Executor::now(&mut ex);
        r.map(|trace| (end, trace))
    };
    let flushed = journal_notes(store);
    progress.finish();
    if interrupted().is_some() {
        if let Err(RunError::Exec(ExecError::Interrupted(_))) = &result {
            return result;
        }
    }
    if let (Ok(_), Err(e)) = (&result, flushed) {
        return Err(RunError::Exec(ExecError::Fatal(format!("journaling what the policy reported: {e}"))));
    }
    result
}

/// Everything about the series' solo references that its outputs show.
struct SoloInfo {
    mode: SoloMode,
    refs: SoloRefs,
    ref_notes: BTreeMap<(i64, usize), String>,
    pass_round_trip: BTreeMap<u32, f64>,
    run_round_trip: BTreeMap<(String, u32), f64>,
    /// Stored mode: where each job's stored solo time came from.
    stored_from: Vec<String>,
}

impl SoloInfo {
    /// Which reference a stored job attempt was divided by, and its age and
    /// cache regime: `pass 2, cpu 1, 14 s before (shared cache)`.
    fn describe(&self, j: &RunJobRecord, run: &RunRecord) -> String {
        let job = j.start.job_index as usize;
        match self.mode {
            SoloMode::Stored => self.stored_from.get(job).cloned().unwrap_or_else(|| "-".into()),
            SoloMode::Interleaved if run.policy == SOLO_PASS => "(this pass)".into(),
            SoloMode::Interleaved => self
                .ref_notes
                .get(&(run.id.0, job))
                .cloned()
                .unwrap_or_else(|| if j.start.solo_s.is_some() { "a pass (run by an earlier invocation)".into() } else { "-".into() }),
        }
    }
}

struct RunView {
    rec: RunRecord,
    trace: Trace,
    metrics: Option<Metrics>,
    jobs: Vec<RunJobRecord>,
    failed: usize,
    worst_measured: Option<f64>,
    journal: Vec<JournalEntry>,
    /// What its policy reported (Lua swaps, refused swaps, fallbacks), from
    /// the journal.
    policy_events: Vec<cosched_store::JournalEntry>,
}

/// The trace of a run finished by an earlier invocation, from its stored
/// final attempts: what `run_node` returned when it ran, but for the order
/// of events at one instant.
fn trace_of(final_jobs: &[&RunJobRecord], journal: &[JournalEntry], platform: &Platform, sim: &[SimJob]) -> Trace {
    let mut t = Trace {
        jobs: platform.trace_jobs(sim),
        events: Vec::new(),
        estimates: Vec::new(),
    };
    for r in final_jobs {
        let j = r.start.job_index as usize;
        t.events.push(Event { time: r.start.arrival_s.min(r.start.start_s), job: j, kind: EventKind::Arrive });
        t.events.push(Event { time: r.start.start_s, job: j, kind: EventKind::Start });
        if let Some(e) = &r.end {
            for (from, to) in suspensions(journal, &r.start.job, r.start.start_s, e.end_s) {
                t.events.push(Event { time: from, job: j, kind: EventKind::Suspend });
                if to < e.end_s {
                    t.events.push(Event { time: to, job: j, kind: EventKind::Resume });
                }
            }
            t.events.push(Event { time: e.end_s, job: j, kind: EventKind::Finish });
            t.jobs[j].status = Some(e.status);
        }
        t.jobs[j].cpus = r.start.cpus.clone();
    }
    // Stable: at one instant a start stays before its suspension.
    t.events.sort_by(|a, b| a.time.total_cmp(&b.time));
    t
}

/// The last attempt of each of `n` jobs (a resumed run re-runs killed
/// jobs as attempt 1, 2, ...), in job order; stored order is attempt order.
pub(crate) fn final_attempts(recs: &[RunJobRecord], n: usize) -> Vec<&RunJobRecord> {
    let mut last: Vec<Option<&RunJobRecord>> = vec![None; n];
    for r in recs {
        if let Some(slot) = last.get_mut(r.start.job_index as usize) {
            *slot = Some(r);
        }
    }
    last.into_iter().flatten().collect()
}

#[allow(clippy::too_many_arguments)]
fn show(
    a: &RunRequest,
    page: &mut Page,
    store: &Store,
    w: &Workload,
    sim: &[SimJob],
    platform: &Platform,
    runs: &[RunRecord],
    mut traces: BTreeMap<ExecRunId, Trace>,
    main: &str,
    baselines: &[String],
    iso: &Isolation,
    source_note: &str,
    cpus_of_pool: &[Vec<u32>],
    solo: &SoloInfo,
) -> anyhow::Result<RunReport> {
    let mut views = Vec::new();
    for r in runs {
        let jobs = store.run_jobs(r.id)?;
        let fin = final_attempts(&jobs, w.jobs.len());
        let journal = store.run_journal(r.id)?;
        let trace = traces.remove(&r.id).unwrap_or_else(|| trace_of(&fin, &journal, platform, sim));
        let metrics = trace.metrics().ok();
        let failed = fin.iter().filter(|j| j.end.as_ref().is_some_and(|e| !e.status.is_ok())).count();
        let worst_measured = fin.iter().filter_map(|j| j.end.as_ref()?.slowdown).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let policy_events = journal.iter().filter(|e| e.event.starts_with("policy-")).cloned().collect();
        views.push(RunView { rec: r.clone(), trace, metrics, jobs, failed, worst_measured, journal, policy_events });
    }
    let f2 = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let run_rows: Vec<Vec<String>> = views
        .iter()
        .map(|v| {
            let m = v.metrics.as_ref();
            vec![
                v.rec.policy.clone(),
                (v.rec.repeat + 1).to_string(),
                f2(m.map(|m| m.makespan)),
                f2(m.map(|m| m.avg_turnaround)),
                f2(m.map(|m| m.worst_turnaround)),
                f2(v.worst_measured),
                v.failed.to_string(),
                v.rec.id.to_string(),
            ]
        })
        .collect();

    // Per policy: medians with spread over repeats.
    type Pick = fn(&RunView) -> Option<f64>;
    let figures: [(&str, Pick); 4] = [
        ("makespan", |v| v.metrics.map(|m| m.makespan)),
        ("avg turnaround", |v| v.metrics.map(|m| m.avg_turnaround)),
        ("worst turnaround", |v| v.metrics.map(|m| m.worst_turnaround)),
        ("worst slowdown", |v| v.worst_measured),
    ];
    let labels: Vec<String> = std::iter::once(main.to_string()).chain(baselines.iter().cloned()).collect();
    let mut summary_rows = Vec::new();
    let mut summary_json = Vec::new();
    for l in &labels {
        let mut row = vec![l.clone()];
        let mut obj = serde_json::Map::new();
        for (name, pick) in figures {
            let vals: Vec<f64> = views.iter().filter(|v| &v.rec.policy == l).filter_map(pick).collect();
            let s = Summary::of(&vals);
            row.push(s.map_or("-".into(), |s| cosched_report::fmt_spread(&s, 2)));
            obj.insert(name.into(), serde_json::to_value(s)?);
        }
        summary_rows.push(row);
        summary_json.push(serde_json::json!({"policy": l, "figures": obj}));
    }
    let mut rate_rows = Vec::new();
    let mut rate_json = serde_json::Map::new();
    for b in baselines {
        let mut per = serde_json::Map::new();
        for (name, pick) in figures {
            let mut rates = Vec::new();
            for v in views.iter().filter(|v| v.rec.policy == main) {
                let base = views.iter().find(|x| &x.rec.policy == b && x.rec.repeat == v.rec.repeat);
                if let (Some(x), Some(y)) = (pick(v), base.and_then(pick)) {
                    rates.push(increase_rate(x, y));
                }
            }
            let s = Summary::of(&rates);
            rate_rows.push(vec![
                b.clone(),
                name.to_string(),
                s.map_or("-".into(), |s| format!("{:+.1} % ({:+.1} .. {:+.1} %, n={})", s.median * 100.0, s.min * 100.0, s.max * 100.0, s.n)),
            ]);
            per.insert(name.into(), serde_json::to_value(s)?);
        }
        rate_json.insert(b.clone(), serde_json::Value::Object(per));
    }
    // Per job and policy: the median measured slowdown over the repeats,
    // the figure that says whether the solo reference times what runs time
    // (a job alone should measure 1.00).
    let mut per_job = Vec::new();
    for (i, job) in w.jobs.iter().enumerate() {
        let mut row = vec![job.name.clone()];
        for l in &labels {
            let vals: Vec<f64> = views
                .iter()
                .filter(|v| &v.rec.policy == l)
                .filter_map(|v| final_attempts(&v.jobs, w.jobs.len()).into_iter().find(|j| j.start.job_index as usize == i))
                .filter_map(|j| j.end.as_ref()?.slowdown)
                .collect();
            row.push(Summary::of(&vals).map_or("-".into(), |s| cosched_report::fmt_spread(&s, 2)));
        }
        per_job.push(row);
    }
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let regime_checks = crate::steady::per_regime(&crate::steady::load(store, runs, w.jobs.len(), SOLO_PASS)?, &names);
    let last_main = views.iter().rev().find(|v| v.rec.policy == main);
    let job_rows = |v: &RunView| -> Vec<Vec<String>> {
        final_attempts(&v.jobs, w.jobs.len())
            .iter()
            .map(|j| {
                let e = j.end.as_ref();
                vec![
                    j.start.job.clone(),
                    e.map_or("running".into(), |e| match e.status.value() {
                        Some(c) => format!("{} {c}", e.status.name()),
                        None => e.status.name().into(),
                    }),
                    cosched_model::topology::format_cpulist(&j.start.cpus),
                    if j.start.mems.is_empty() { "-".into() } else { cosched_model::topology::format_cpulist(&j.start.mems) },
                    format!("{:.2}", j.start.start_s),
                    f2(e.map(|e| e.end_s)),
                    match e.map(|e| suspensions(&v.journal, &j.start.job, j.start.start_s, e.end_s)) {
                        Some(p) if !p.is_empty() => format!("{:.2}", p.iter().map(|(a, b)| b - a).sum::<f64>()),
                        _ => "-".into(),
                    },
                    if j.start.beside.is_empty() { "-".into() } else { j.start.beside.join(",") },
                    format!("{:.2}", j.start.predicted),
                    f2(e.and_then(|e| e.slowdown)),
                    f2(j.start.solo_s),
                    solo.describe(j, &v.rec),
                ]
            })
            .collect()
    };
    let mechanisms: Vec<Mechanism> =
        iso.mechanisms().into_iter().map(|m| Mechanism { feature: m.feature, how: m.how, why: m.why }).collect();
    // Which pairs each policy kept apart, read from its runs' traces.
    let shapes: Vec<crate::held::JobShape> = sim
        .iter()
        .zip(&w.jobs)
        .map(|(s, j)| crate::held::JobShape {
            pool: s.pool,
            cores: s.cores,
            after: j.after.iter().filter_map(|d| w.jobs.iter().position(|x| &x.name == d)).collect(),
        })
        .collect();
    let pool_cores: Vec<u32> = platform.pools.iter().map(|p| p.cores).collect();
    let held_apart: Vec<(String, Vec<(String, String, usize)>)> = labels
        .iter()
        .map(|l| {
            let held: Vec<crate::held::HeldBack> = views
                .iter()
                .filter(|v| &v.rec.policy == l)
                .flat_map(|v| crate::held::held_back(&v.trace, &shapes, &pool_cores))
                .collect();
            (l.clone(), crate::held::avoided_pairs(&held))
        })
        .collect();

    if let Some(dir) = &a.report {
        write_report(page, dir, w, &views, &RUN_HEAD, &run_rows, &summary_rows, &rate_rows, &JOB_HEAD, &job_rows, &mechanisms, source_note, cpus_of_pool, &held_apart)?;
    }
    let runs_json: Vec<_> = views
        .iter()
        .map(|v| serde_json::json!({"run": v.rec, "metrics": v.metrics, "worst_measured_slowdown": v.worst_measured, "jobs": v.jobs, "policy_events": v.policy_events}))
        .collect();
    let djsb_rows = djsb_runs(w, sim, platform, &views, solo);
    let json = serde_json::json!({
        "workload": w.name,
        "djsb": djsb_rows,
        "mechanisms": mechanisms,
        "slowdown_source": source_note,
        "runs": runs_json,
        "summary": summary_json,
        "baselines": baselines,
        "increase_rates": rate_json,
        "solo": solo.mode,
        "per_regime": regime_checks,
        "held_apart": held_apart,
        "solo_passes": solo.pass_round_trip.iter().map(|(r, ns)| serde_json::json!({"repeat": r, "round_trip_ns": ns})).collect::<Vec<_>>(),
    });
    Ok(RunReport {
        main: main.to_string(),
        baselines: baselines.to_vec(),
        last_main: last_main.map(|v| RunJobs { policy: v.rec.policy.clone(), repeat: v.rec.repeat, run: v.rec.id.0, rows: job_rows(v) }),
        runs: run_rows,
        summary: summary_rows,
        per_job,
        per_regime: crate::steady::rows(&regime_checks),
        labels: labels.clone(),
        rates: rate_rows,
        held_apart,
        index: a.report.as_ref().map(|d| d.join("index.html")),
        not_ok: Vec::new(),
        figures: views
            .iter()
            .map(|v| RunFigures {
                policy: v.rec.policy.clone(),
                repeat: v.rec.repeat,
                run: v.rec.id.0,
                makespan: v.metrics.map(|m| m.makespan),
                avg_turnaround: v.metrics.map(|m| m.avg_turnaround),
                worst_turnaround: v.metrics.map(|m| m.worst_turnaround),
                worst_slowdown: v.worst_measured,
                failed: v.failed,
                round_trip_ns: solo.run_round_trip.get(&(v.rec.policy.clone(), v.rec.repeat)).copied(),
            })
            .collect(),
        djsb: djsb_rows,
        pass_round_trip: solo.pass_round_trip.clone(),
        solo_medians: (0..w.jobs.len())
            .map(|i| {
                let t: Vec<f64> = solo.refs.by_job.get(&i).map(|v| v.iter().map(|r| r.time).collect()).unwrap_or_default();
                (!t.is_empty()).then(|| cosched_model::stats::median(&t))
            })
            .collect(),
        json,
    })
}

/// The djsb figures of every run but the solo passes, when some job
/// arrives after the first one (the scenario the ParaStation paper scores).
fn djsb_runs(w: &Workload, sim: &[SimJob], platform: &Platform, views: &[RunView], solo: &SoloInfo) -> Vec<DjsbRun> {
    let first = sim.iter().map(|j| j.arrival).fold(f64::INFINITY, f64::min);
    if sim.len() < 2 || !sim.iter().any(|j| j.arrival > first) {
        return Vec::new();
    }
    let jobs: Vec<DjsbJob> = (0..sim.len())
        .map(|j| {
            let passes: Vec<f64> = solo.refs.by_job.get(&j).map(|v| v.iter().map(|r| r.time).collect()).unwrap_or_default();
            let solo = if passes.is_empty() { sim[j].solo } else { cosched_model::stats::median(&passes) };
            DjsbJob { solo, threads: w.jobs[j].cores }
        })
        .collect();
    let pool = platform.pools[sim[0].pool].cores;
    views
        .iter()
        .filter(|v| v.rec.policy != SOLO_PASS)
        .filter_map(|v| {
            let times = job_times(&v.trace.events, sim.len()).ok()?;
            let figures = djsb(&times, &jobs, pool, &DjsbParams::default()).ok()?;
            Some(DjsbRun { policy: v.rec.policy.clone(), repeat: v.rec.repeat, run: v.rec.id.0, figures })
        })
        .collect()
}

/// One CSV field, quoted (RFC 4180): policy labels hold commas
/// (`conflict-aware:idle=always,threshold=100`) and job names may hold quotes.
fn csv_field(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Beside a run's trace: its policy's swaps, refused swaps and fallbacks.
fn policy_file(run: ExecRunId) -> String {
    format!("policy-run{}.csv", run.0)
}

/// The report's trace of one run, in the one trace format (`model::trace`).
fn trace_file(run: ExecRunId) -> String {
    format!("trace-run{}.csv", run.0)
}

#[allow(clippy::too_many_arguments)]
fn write_report(
    page: &mut Page,
    dir: &Path,
    w: &Workload,
    views: &[RunView],
    run_head: &[&str],
    run_rows: &[Vec<String>],
    summary_rows: &[Vec<String>],
    rate_rows: &[Vec<String>],
    job_head: &[&str],
    job_rows: &dyn Fn(&RunView) -> Vec<Vec<String>>,
    mechanisms: &[Mechanism],
    source_note: &str,
    cpus_of_pool: &[Vec<u32>],
    held_apart: &[(String, Vec<(String, String, usize)>)],
) -> anyhow::Result<()> {
    crate::common::create_dir(dir)?;
    let write = |name: &str, text: &str| crate::common::write_file(&dir.join(name), text);
    let mut rows_cpu: Vec<(u32, String)> = Vec::new();
    for (p, cpus) in w.pools.iter().zip(cpus_of_pool) {
        for &c in cpus {
            if !rows_cpu.iter().any(|r| r.0 == c) {
                rows_cpu.push((c, p.name.clone()));
            }
        }
    }
    page.paragraph(&format!("Workload `{}`: {} jobs. Slowdown source: {source_note}.", w.name, w.jobs.len()));
    page.section("Mechanisms").table(
        &["feature", "how", "why"],
        &mechanisms.iter().map(|m| vec![m.feature.to_string(), m.how.clone(), m.why.clone().unwrap_or_default()]).collect::<Vec<_>>(),
    );
    page.section("Runs").table(run_head, run_rows);
    page.section("Per policy: median (min-max, n repeats)")
        .table(&["policy", "makespan", "avg turnaround", "worst turnaround", "worst slowdown"], summary_rows);
    if !rate_rows.is_empty() {
        page.section("Increase rates against the baselines").table(&["baseline", "figure", "median (min .. max, n)"], rate_rows);
    }
    let held_rows: Vec<Vec<String>> =
        held_apart.iter().map(|(l, pairs)| vec![l.clone(), crate::held::describe(l, pairs, usize::MAX)]).collect();
    page.section("Pairs each policy held apart")
        .paragraph("A waiting job that fitted in the free cores was passed over for a job behind it in the queue, or its cores stayed idle, while these jobs ran: the pairs the policy avoided, read from the runs' traces.")
        .table(&["policy", "held apart (times, over its runs)"], &held_rows);
    // Each job's prediction (made before it started, by the run's source)
    // beside what its run measured: the mispredictions the learning loop
    // feeds back.
    let mut pv_rows = Vec::new();
    for v in views {
        for j in final_attempts(&v.jobs, w.jobs.len()) {
            let observed = j.end.as_ref().and_then(|e| e.slowdown);
            pv_rows.push(vec![
                format!("{} #{} (run {})", v.rec.policy, v.rec.repeat + 1, v.rec.id),
                j.start.job.clone(),
                if j.start.beside.is_empty() { "-".into() } else { j.start.beside.join(",") },
                format!("{:.2}", j.start.predicted),
                observed.map_or("-".into(), |o| format!("{o:.2}")),
                observed.map_or("-".into(), |o| format!("{:+.0} %", (j.start.predicted - o) / o * 100.0)),
            ]);
        }
    }
    page.section("Predicted vs observed slowdown per job").table(
        &["run", "job", "beside at start", "predicted", "observed", "error"],
        &pv_rows,
    );
    page.note("predicted: the slowdown source beside the jobs running when the job started; observed: run time over stored solo time (co-runners may change during the run).");
    let mut jobs_csv = String::from("run,policy,repeat,job,attempt,status,status_value,cpus,arrival_s,start_s,end_s,predicted,slowdown,solo_s,work_s,beside,mems\n");
    for v in views {
        let bars: Vec<Bar> = v
            .jobs
            .iter()
            .map(|j| Bar {
                job: j.start.job.clone(),
                cpus: j.start.cpus.clone(),
                start: j.start.start_s,
                end: j.end.as_ref().map_or(j.start.start_s, |e| e.end_s),
                status: j.end.as_ref().map_or("running".into(), |e| e.status.name().into()),
                slowdown: j.end.as_ref().and_then(|e| e.slowdown),
            })
            .collect();
        let title = format!("{} repeat {} (run {})", v.rec.policy, v.rec.repeat + 1, v.rec.id);
        let svg = gantt(&title, &rows_cpu, &bars);
        let file = format!("gantt-run{}.svg", v.rec.id);
        write(&file, &svg)?;
        page.section(&title).svg(&svg).table(job_head, &job_rows(v));
        for j in &v.jobs {
            let e = j.end.as_ref();
            let o = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
            jobs_csv.push_str(&format!(
                "{},{},{},{},{},{},{},\"{}\",{},{},{},{},{},{},{},{},\"{}\"\n",
                v.rec.id,
                csv_field(&v.rec.policy),
                v.rec.repeat,
                csv_field(&j.start.job),
                j.start.attempt,
                e.map_or("running", |e| e.status.name()),
                e.and_then(|e| e.status.value()).map_or(String::new(), |c| c.to_string()),
                cosched_model::topology::format_cpulist(&j.start.cpus),
                j.start.arrival_s,
                j.start.start_s,
                o(e.map(|e| e.end_s)),
                j.start.predicted,
                o(e.and_then(|e| e.slowdown)),
                o(j.start.solo_s),
                o(e.and_then(|e| e.work_s)),
                csv_field(&j.start.beside.join(" ")),
                cosched_model::topology::format_cpulist(&j.start.mems),
            ));
        }
        write(&trace_file(v.rec.id), &v.trace.to_csv())?;
        if !v.policy_events.is_empty() {
            let mut csv = String::from("time,run,event,detail\n");
            for e in &v.policy_events {
                csv.push_str(&format!("{},{},{},{}\n", e.t_s, v.rec.id, e.event, csv_field(&e.detail)));
            }
            write(&policy_file(v.rec.id), &csv)?;
        }
    }
    let events: Vec<Vec<String>> = views
        .iter()
        .flat_map(|v| v.policy_events.iter().map(|e| vec![v.rec.id.to_string(), format!("{:.3}", e.t_s), e.event.clone(), e.detail.clone()]))
        .collect();
    if !events.is_empty() {
        page.section("Policy swaps, refused swaps and fallbacks (Lua policies)").table(&["run", "t s", "event", "detail"], &events);
    }
    write("jobs.csv", &jobs_csv)?;
    let json: Vec<_> = views.iter().map(|v| serde_json::json!({"run": v.rec, "metrics": v.metrics, "jobs": v.jobs})).collect();
    write("runs.json", &serde_json::to_string_pretty(&json)?)?;
    let data = page.section("Data").link("jobs.csv", "jobs of every run (CSV)");
    for v in views {
        data.link(&trace_file(v.rec.id), &format!("event trace of run {} (CSV, model::trace format)", v.rec.id));
        if !v.policy_events.is_empty() {
            data.link(&policy_file(v.rec.id), &format!("what the policy of run {} reported: swaps, refused swaps, fallbacks (CSV)", v.rec.id));
        }
    }
    data.link("runs.json", "runs, metrics and jobs (JSON)");
    let mut own = page.clone();
    own.set_title(&format!("cosched run: {}", w.name));
    write("index.html", &own.render())?;
    Ok(())
}

#[cfg(test)]
mod solo_tests {
    use super::*;
    use cosched_sched::PairTable;

    fn r(repeat: u32, cpus: &[u32], time: f64) -> SoloRef {
        SoloRef { repeat, run: repeat as i64, cpus: cpus.to_vec(), time, timing: "process", at_unix: repeat as f64, regime: None }
    }

    #[test]
    fn a_job_divides_by_the_median_of_its_passes_on_its_cpus_else_of_all() {
        let mut refs = SoloRefs::default();
        refs.by_job.insert(0, vec![r(0, &[0], 1.0), r(1, &[1], 1.1), r(2, &[0], 1.2), r(3, &[0], 1.5)]);
        let c = refs.lookup(0, &[0], None).unwrap();
        assert_eq!((c.time, c.n, c.newest.repeat, c.which), (1.2, 3, 3, "its CPUs, other regime"));
        assert_eq!(refs.lookup(0, &[1], None).unwrap().time, 1.1);
        // Never measured on CPUs 0-1: all four passes.
        let c = refs.lookup(0, &[0, 1], None).unwrap();
        assert_eq!((c.time, c.n, c.which), ((1.1 + 1.2) / 2.0, 4, "any pass"));
        assert!(refs.lookup(1, &[0], None).is_none());
    }

    #[test]
    fn a_pass_in_the_runs_cache_regime_comes_before_newer_ones_in_another() {
        use CacheRegime::{Apart, Shared};
        let with = |mut x: SoloRef, g| {
            x.regime = Some(g);
            x
        };
        let mut refs = SoloRefs::default();
        refs.by_job.insert(
            0,
            vec![with(r(0, &[0, 1], 1.0), Shared), with(r(1, &[0, 1], 1.3), Apart), with(r(2, &[0], 0.5), Shared), with(r(3, &[0, 1], 1.4), Apart)],
        );
        assert_eq!(refs.lookup(0, &[0, 1], Some(Shared)).unwrap().time, 1.0);
        assert_eq!(refs.lookup(0, &[0, 1], Some(Apart)).unwrap().time, (1.3 + 1.4) / 2.0);
        // No pass on CPU 1 in the shared regime: the shared ones.
        let c = refs.lookup(0, &[1], Some(Shared)).unwrap();
        assert_eq!((c.time, c.which), (0.75, "other CPUs, same regime"));
        // Regime unknown: CPUs first.
        assert_eq!(refs.lookup(0, &[0, 1], None).unwrap().time, 1.3);
    }

    #[test]
    fn a_permuted_source_answers_for_the_workload_job_at_each_position() {
        let table = PairTable::new(vec![vec![1.0, 2.0, 3.0], vec![4.0, 1.0, 5.0], vec![6.0, 7.0, 1.0]]).unwrap();
        let order = [2, 0, 1];
        let p = Permuted { inner: &table, order: &order };
        // Position 0 is job 2, position 2 is job 1: job 2 beside job 1.
        assert_eq!(p.slowdown(0, &[2]), 7.0);
        assert_eq!(p.slowdown(1, &[0]), 3.0);
        assert_eq!(p.slowdown(1, &[]), 1.0);
    }

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
        };
        assert_eq!(
            continue_command(&a),
            "cosched run --workload 'my dir/w.toml' --policy conflict-aware:threshold=30 --baseline noplan \
             --predictor measured --repeats 2 --solo stored --cgroups none --db '/data/it'\\''s.db' --resume"
        );
    }

    #[test]
    fn csv_fields_are_quoted_with_inner_quotes_doubled() {
        assert_eq!(csv_field("conflict-aware:idle=always,threshold=100"), "\"conflict-aware:idle=always,threshold=100\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn kernels_are_timed_by_their_work_phase_and_commands_by_the_wall() {
        assert_eq!(timed("work-phase", Some(1.5), 2.0), 1.5);
        assert_eq!(timed("work-phase", None, 2.0), 2.0);
        assert_eq!(timed("process", Some(1.5), 2.0), 2.0);
        assert_eq!("stored".parse::<SoloMode>(), Ok(SoloMode::Stored));
        assert!("sometimes".parse::<SoloMode>().unwrap_err().contains("interleaved or stored"));
    }
}
