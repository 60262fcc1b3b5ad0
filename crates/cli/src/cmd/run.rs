//! `cosched run`: a workload executed for real on this node under a policy
//! (and a baseline), journaled in the store, scored like a simulation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{install_interrupt_handler, interrupted};
use cosched_measure::node::{invoking_user, pool_cpus, NodeConfig, NodeEvent, NodeExecutor, NodeJob, RunLock};
use cosched_model::metrics::{increase_rate, Event, EventKind, Metrics};
use cosched_model::run::JobStatus;
use cosched_model::trace::{Trace, TraceJob};
use cosched_model::stats::Summary;
use cosched_model::workload::{Amount, PoolKind, Workload};
use cosched_report::gantt::{gantt, Bar};
use cosched_report::html::Page;
use cosched_report::table;
use cosched_sched::montecarlo::{parse_spec, spec_label};
use cosched_sched::runner::{run_node, Done, ExecError, RunError};
use cosched_sched::predicted::Predicted;
use cosched_sched::{policy_by_name, PairTable, Params, Platform, PoolInfo, SimJob, SlowdownSource};
use cosched_store::{CampaignKind, ExecRunId, RunJobEnd, RunJobRecord, RunJobStart, RunRecord, RunStatus, Store};

use super::calibrate::calibrate_missing;
use super::common::{command_line, load_workload, DbArgs, GIT_COMMIT};
use crate::exit::{bad_input, Interrupted};
use crate::progress::{step, Progress};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched run --workload examples/mixed.toml --policy conflict-aware --baseline exclusive --baseline noplan --repeats 3\n  \
    cosched run --workload examples/mixed.toml --predictor learned --report report/\n  \
    cosched run --workload examples/mixed.toml --policy noplan --report report/\n  \
    cosched run --workload examples/mixed.toml --policy conflict-aware --resume   # after a crash or Ctrl-C\n  \
    cosched run --workload w.toml --policy no-twins --json | jq '.runs[0].metrics'\n\n\
    Each job runs as a process group in its own cgroup (cpuset, freezer, memory,\n\
    pids; v1 or v2) pinned to free cores of its pool, else pinned with\n\
    sched_setaffinity (the output says which and why). The policy sees the\n\
    slowdowns of a predictor (--predictor, default `measured`: the measured\n\
    pairs, else `learned`) fitted on the store's profiles, probes, pairs and\n\
    earlier real runs of the workload; when it cannot be fitted, the latest\n\
    pairs campaign's medians, else 1. The prediction made before each job\n\
    starts is stored with the job; its measured slowdown is its run time over\n\
    its solo time: the median of the latest pairs campaign's solo repeats of\n\
    the job, else its profile's, else its calibrated time (the output says\n\
    which). With --baseline (repeatable), the policy\n\
    and each baseline run in turn repeat by repeat, and increase rates are\n\
    (policy - baseline) / baseline of the same repeat.\n\
    Every job start and end is stored as it happens, so --resume finishes a\n\
    run whose runner was killed. Exit code 130/143 after SIGINT/SIGTERM.")]
pub struct RunArgs {
    /// Workload file to execute.
    #[arg(long, value_name = "FILE")]
    pub workload: PathBuf,
    /// Policy as NAME or NAME:KEY=VALUE,... (conflict-aware defaults to threshold=100).
    #[arg(long, value_name = "P", default_value = "conflict-aware")]
    pub policy: String,
    /// Also run under this policy, interleaved, to report increase rates
    /// against it; repeat for several baselines.
    #[arg(long, value_name = "P")]
    pub baseline: Vec<String>,
    /// Predictor the policy decides with (see `cosched predict --list`):
    /// NAME or NAME:key=value,...
    #[arg(long, value_name = "M", default_value = "measured")]
    pub predictor: String,
    /// Runs per policy.
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    /// Write a report here: index.html, a Gantt SVG per run, CSV and JSON.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Continue the newest unfinished series with these settings.
    #[arg(long)]
    pub resume: bool,
    /// cgroup hierarchy: auto, v1, v2 or none (affinity and signals only).
    #[arg(long, default_value = "auto", value_name = "MODE")]
    pub cgroups: String,
    /// Lock file that keeps a second runner off the node (default
    /// $COSCHED_RUN_LOCK, else /run/cosched.lock when writable, else per user).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// A policy as given and as built.
fn policy_spec(spec: &str, what: &str) -> anyhow::Result<(String, Params, Option<String>)> {
    let name = spec.split(':').next().unwrap_or("").trim();
    let mut spec = spec.trim().to_string();
    let mut note = None;
    if name == "conflict-aware" && !spec.contains("threshold") {
        spec.push_str(if spec.contains(':') { ",threshold=100" } else { ":threshold=100" });
        note = Some(format!("{what} conflict-aware without threshold: using threshold=100"));
    }
    let (name, params) = parse_spec(&spec).map_err(|e| bad_input(format!("{what}: {e}")))?;
    Ok((name, params, note))
}

/// Fewest solo repeats of a pairs campaign that make its median the solo time.
const MIN_PAIR_SOLOS: usize = 3;

/// Solo time of a job, with its timing and where it came from: the median
/// of the latest pairs campaign's solo repeats of the job (one before every
/// co-run, spread over the campaign, so tens of samples rather than the
/// profile's few back-to-back runs; cache-bound jobs alone drift by 25 %
/// between minutes on a shared host), else its latest stored profile, else
/// its calibrated work over the calibrated rate.
fn solo_time(
    store: &Store,
    m: &cosched_store::Measurements,
    w: &Workload,
    i: usize,
    cals: &BTreeMap<String, cosched_model::calibration::Calibration>,
) -> anyhow::Result<Option<(f64, String, String, usize)>> {
    let job = &w.jobs[i];
    if let Some((campaign, runs)) = &m.pairs {
        let mut times = Vec::new();
        let mut timing = String::new();
        for r in runs {
            for (name, t, how) in [(&r.fg_job, r.fg_solo_s, &r.fg_timing), (&r.bg_job, r.bg_solo_s, &r.bg_timing)] {
                if *name == job.name && t.is_finite() && t > 0.0 {
                    times.push(t);
                    timing = how.clone();
                }
            }
        }
        if times.len() >= MIN_PAIR_SOLOS {
            let n = times.len();
            return Ok(Some((cosched_model::stats::median(&times), timing, format!("pairs campaign {}", campaign.id.0), n)));
        }
    }
    if let Some((campaign, p)) = store.latest_profile(&job.program_key())? {
        if let Ok(prof) = serde_json::from_value::<cosched_model::profile::JobProfile>(p.summary) {
            return Ok(Some((prof.solo_s.median, prof.timing, format!("profile campaign {}", campaign.0), prof.solo_s.n)));
        }
    }
    if let (Some(key), Ok(Some(work))) =
        (cosched_model::calibration::job_key(job), cosched_model::calibration::resolve_work(job, cals))
    {
        if let Some(c) = cals.get(&key) {
            if c.rate.median > 0.0 {
                return Ok(Some((work as f64 / c.rate.median, "work-phase".into(), "calibration".into(), c.rate.n)));
            }
        }
    }
    Ok(None)
}

/// The slowdown source: the chosen predictor fitted on everything the store
/// holds for the workload (real runs included); when it cannot be fitted,
/// the medians of the newest pairs campaign.
/// Also returns the source's name as runs record it: the predictor spec, or
/// `pairs-table` when the fallback decided.
pub fn predicted_source(store: &Store, w: &Workload, spec: &str) -> anyhow::Result<(Box<dyn SlowdownSource>, String, String)> {
    let mut predictor = super::predict::build(spec)?;
    let m = store.measurements(&w.name)?;
    let (train, sources) = super::predict::available_training_set(&m, w)?;
    let fitted = if train.pairs.is_empty() {
        Err("no measured pairs of the workload".to_string())
    } else {
        predictor.fit(&train).map_err(|e| e.to_string())
    };
    match fitted {
        Ok(()) => {
            let jobs: Vec<_> = w.jobs.iter().map(|j| train.programs[&j.name].clone()).collect();
            let note = format!("predictor {spec} fitted on {} ordered pairs of `{}`: {}", train.pairs.len(), w.name, sources.describe());
            Ok((Box::new(Predicted::new(predictor, jobs)), note, spec.to_string()))
        }
        Err(why) => {
            let (table, note) = slowdown_source(store, w)?;
            Ok((Box::new(table), format!("predictor {spec} could not be fitted ({why}); {note}"), PAIRS_TABLE.to_string()))
        }
    }
}

/// The name runs record when the newest pairs campaign's medians decided.
pub const PAIRS_TABLE: &str = "pairs-table";

/// The slowdown source: medians of the workload's newest pairs campaign.
fn slowdown_source(store: &Store, w: &Workload) -> anyhow::Result<(PairTable, String)> {
    let n = w.jobs.len();
    let campaign = store
        .campaigns()?
        .into_iter()
        .filter(|c| c.kind == CampaignKind::Pairs && c.workload == w.name && c.runs > 0)
        .next_back();
    let Some(c) = campaign else {
        return Ok((
            PairTable::new(vec![vec![1.0; n]; n]).expect("ones are valid"),
            format!("no pairs campaign of `{}` stored: every predicted slowdown is 1 (run `cosched pairs --workload FILE` first)", w.name),
        ));
    };
    let m = super::pairs::matrix_of(w, &store.pair_runs(c.id)?);
    let mut cells = vec![vec![1.0; n]; n];
    let mut have = 0;
    for (i, row) in cells.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if let Some(s) = m.get(i, j) {
                *cell = s.median.max(1e-6);
                have += 1;
            }
        }
    }
    let table = PairTable::new(cells).map_err(anyhow::Error::msg)?;
    Ok((table, format!("pairs campaign {} of `{}`: {have} of {} cells measured, the rest 1", c.id, w.name, n * n)))
}

struct Plan {
    label: String,
    name: String,
    params: Params,
    repeat: u32,
}

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    let mut page = Page::new("cosched run");
    run_into(a, &mut page)
}

/// The verb, with the report's sections appended to `page` (`cosched demo`
/// puts them into its own report); with `--report`, the page is written as
/// index.html beside the run's files.
pub fn run_into(a: RunArgs, page: &mut Page) -> anyhow::Result<()> {
    // Everything the user gave is checked before the store is opened, so bad
    // input writes nothing.
    let w = load_workload(&a.workload)?;
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    let pref: Preference = a.cgroups.parse().map_err(|e: String| bad_input(format!("--cgroups: {e}")))?;
    let (pname, pparams, note1) = policy_spec(&a.policy, "--policy")?;
    let baselines = a.baseline.iter().map(|b| policy_spec(b, "--baseline")).collect::<anyhow::Result<Vec<_>>>()?;
    cosched_predict::predictors::parse_spec(&a.predictor)
        .and_then(|(n, p)| cosched_predict::predictor_by_name(&n, &p).map(drop))
        .map_err(|e| bad_input(format!("--predictor {}: {e}; see `cosched predict --list`", a.predictor)))?;
    let node_cpus: Vec<u32> = (0..std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)).collect();
    let pools: Vec<(u32, bool)> =
        w.pools.iter().map(|p| (p.cores.unwrap_or(node_cpus.len() as u32), p.kind != PoolKind::Cpu)).collect();
    let (cpus_of_pool, shared) = pool_cpus(&pools, &node_cpus).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;

    let lock_path = a.lock.clone().unwrap_or_else(RunLock::default_path);
    let _lock = RunLock::acquire(&lock_path).map_err(anyhow::Error::msg)?;
    let mut store = a.db.open()?;
    install_interrupt_handler();
    for n in std::iter::once(note1).chain(baselines.iter().map(|b| b.2.clone())).flatten() {
        step(&n);
    }
    calibrate_missing(&w, &mut store)?;
    let cals = store.calibrations()?;
    let mut jobs = Vec::new();
    let mut sim = Vec::new();
    let mut solo_notes = Vec::new();
    // Where each job's solo time came from: source -> (jobs, repeats behind each).
    let mut solo_from: BTreeMap<String, (Vec<&str>, Vec<usize>)> = BTreeMap::new();
    let measured = store.measurements(&w.name)?;
    for (i, j) in w.jobs.iter().enumerate() {
        let argv = job_argv(j, &cals).map_err(anyhow::Error::msg)?;
        let solo = solo_time(&store, &measured, &w, i, &cals)?;
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
            solo: solo.as_ref().map(|(s, t, ..)| (*s, t.clone())),
            kernel: j.kernel().is_some(),
        });
        sim.push(SimJob {
            name: j.name.clone(),
            arrival: j.arrival,
            solo: estimate,
            pool,
            cores: j.cores,
            program: j.program_key(),
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
    step(&format!("slowdown source: {source_note}"));
    for (from, (names, ns)) in &solo_from {
        let (lo, hi) = (ns.iter().min().copied().unwrap_or(0), ns.iter().max().copied().unwrap_or(0));
        let n = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
        let who = if names.len() == w.jobs.len() { format!("all {} jobs", names.len()) } else { names.join(", ") };
        step(&format!("solo times from {from} (median of {n} solo runs each): {who}"));
    }
    if !solo_notes.is_empty() {
        step(&format!(
            "no stored solo time (pairs, profile or calibration) for {}: their measured slowdown is not recorded (run `cosched profile --workload FILE`)",
            solo_notes.join(", ")
        ));
    }
    let iso = Isolation::detect(pref);
    for m in iso.mechanisms() {
        step(&format!("{}: {}{}", m.feature, m.how, m.why.map(|w| format!(" ({w})")).unwrap_or_default()));
    }
    let user = invoking_user();
    if let Some((uid, gid)) = user {
        step(&format!("jobs run as uid {uid} gid {gid} (the user who invoked sudo)"));
    }

    let main_label = spec_label(&pname, &pparams);
    let baseline_labels: Vec<String> = baselines.iter().map(|(n, p, _)| spec_label(n, p)).collect();
    let mut plans = Vec::new();
    for r in 0..a.repeats {
        let mut pair = vec![Plan { label: main_label.clone(), name: pname.clone(), params: pparams.clone(), repeat: r }];
        for (bn, bp, _) in &baselines {
            pair.push(Plan { label: spec_label(bn, bp), name: bn.clone(), params: bp.clone(), repeat: r });
        }
        // Rotating which goes first keeps a drift of the node from
        // favouring one policy.
        let k = pair.len();
        pair.rotate_left(r as usize % k);
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
    })
    .to_string();
    let prior = if a.resume { store.latest_series(&params)? } else { Vec::new() };
    let series = match prior.first() {
        Some(r) => {
            let open = prior.iter().filter(|r| r.status != RunStatus::Done).count();
            step(&format!(
                "resuming series {}: {} of {} runs stored, {open} unfinished",
                r.series,
                prior.len(),
                plans.len()
            ));
            r.series.clone()
        }
        None => {
            if a.resume {
                step("no earlier series with these settings; starting a new one");
            }
            format!("{}-{}", cosched_store::format_unix_utc(now_unix()).replace([' ', ':'], ""), std::process::id())
        }
    };
    let prov = cosched_measure::provenance::here(&command_line(), GIT_COMMIT, None);
    let log_root = a
        .report
        .clone()
        .map(|d| d.join("logs"))
        .unwrap_or_else(|| cosched_store::default_data_dir().join("runs").join(&series));

    let mut finished: Vec<RunRecord> = Vec::new();
    // Traces of the runs this invocation executed, as the run loop saw them;
    // runs finished earlier are rebuilt from the store.
    let mut traces: BTreeMap<ExecRunId, Trace> = BTreeMap::new();
    for plan in &plans {
        let existing = prior.iter().find(|r| r.policy == plan.label && r.repeat == plan.repeat);
        if let Some(r) = existing.filter(|r| r.status == RunStatus::Done) {
            finished.push(r.clone());
            continue;
        }
        let (run_id, done, attempts, origin) = match existing {
            Some(r) => {
                let recs = store.run_jobs(r.id)?;
                let origin = store.run_journal(r.id)?.iter().map(|e| e.t_s).fold(0.0, f64::max);
                let origin = recs.iter().flat_map(|j| [Some(j.start.start_s), j.end.as_ref().map(|e| e.end_s)]).flatten().fold(origin, f64::max);
                let killed = store.resume_run(r.id, origin)?;
                let scope = format!("{series}-r{}", r.id);
                let leftovers = iso.clean_scope(&scope);
                step(&format!(
                    "run {} ({} repeat {}): resuming at t={origin:.2}s; {killed} job(s) that were running are started again{}",
                    r.id,
                    r.policy,
                    r.repeat,
                    if leftovers > 0 { format!("; killed {leftovers} leftover process(es) in its cgroups") } else { String::new() }
                ));
                let recs = store.run_jobs(r.id)?;
                let (done, attempts) = done_jobs(&recs, w.jobs.len());
                (r.id, done, attempts, origin)
            }
            None => {
                let id = store.begin_run(&series, &w.name, &plan.label, plan.repeat, &params, &prov)?;
                (id, Vec::new(), vec![0; w.jobs.len()], 0.0)
            }
        };
        let outcome = execute(
            &mut store, run_id, plan, &w, &jobs, &sim, &platform, source.as_ref(), &iso, &cpus_of_pool, &shared, &series, &log_root,
            user, done, attempts, origin,
        );
        match outcome {
            Ok((t, trace)) => {
                store.finish_run(run_id, RunStatus::Done, t, "all jobs ended")?;
                traces.insert(run_id, trace);
            }
            Err(RunError::Exec(ExecError::Interrupted(sig))) => {
                store.finish_run(run_id, RunStatus::Interrupted, 0.0, &format!("signal {sig}"))?;
                eprintln!(
                    "cosched: interrupted; every job was killed and run {run_id} is stored as interrupted. \
                     Continue with: cosched run --workload {} --policy {}{} --repeats {} --resume",
                    a.workload.display(),
                    a.policy,
                    a.baseline.iter().map(|b| format!(" --baseline {b}")).collect::<String>()
                        + &if a.predictor != "measured" { format!(" --predictor {}", a.predictor) } else { String::new() },
                    a.repeats
                );
                return Err(anyhow::Error::new(Interrupted(sig)));
            }
            Err(e) => {
                let _ = store.finish_run(run_id, RunStatus::Failed, 0.0, &e.to_string());
                return Err(anyhow::anyhow!("run {run_id} ({} repeat {}): {e}", plan.label, plan.repeat));
            }
        }
        finished.push(store.run(run_id)?.expect("just finished"));
    }
    show(&a, page, &store, &w, &sim, &platform, &finished, traces, &main_label, &baseline_labels, &iso, &source_note, &cpus_of_pool)
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Jobs whose latest attempt ended other than `killed`, and the next
/// attempt number of every job.
fn done_jobs(recs: &[RunJobRecord], n: usize) -> (Vec<Done>, Vec<u32>) {
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
            })
        })
        .collect();
    (done, attempts)
}

#[allow(clippy::too_many_arguments)]
fn execute(
    store: &mut Store,
    run_id: ExecRunId,
    plan: &Plan,
    w: &Workload,
    jobs: &[NodeJob],
    sim: &[SimJob],
    platform: &Platform,
    source: &dyn SlowdownSource,
    iso: &Isolation,
    cpus_of_pool: &[Vec<u32>],
    shared: &[bool],
    series: &str,
    log_root: &Path,
    user: Option<(u32, u32)>,
    done: Vec<Done>,
    mut attempts: Vec<u32>,
    origin: f64,
) -> Result<(f64, Trace), RunError> {
    let mut policy = policy_by_name(&plan.name, &plan.params).map_err(RunError::Input)?;
    let total = w.jobs.len() as u64;
    let progress = Progress::new(&format!("{} #{}", plan.label, plan.repeat + 1), total);
    let mut ended = done.len() as u64;
    let mut running: BTreeMap<usize, (f64, Vec<u32>)> = BTreeMap::new();
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let mut last_t = origin;
    let mut store_err: Option<String> = None;
    let cfg = NodeConfig {
        pool_cpus: cpus_of_pool.to_vec(),
        shared_pool: shared.to_vec(),
        scope: format!("{series}-r{run_id}"),
        log_dir: log_root.join(format!("run-{run_id}")),
        user,
        isolation: iso.clone(),
        clock_origin: origin,
    };
    let result = {
        let mut sink = |e: NodeEvent| -> Result<(), String> {
            let r = match &e {
                NodeEvent::Started(s) => {
                    running.insert(s.job, (s.start, s.cpus.clone()));
                    last_t = last_t.max(s.start);
                    store.run_job_started(
                        run_id,
                        &RunJobStart {
                            job: names[s.job].clone(),
                            job_index: s.job as u32,
                            attempt: attempts[s.job],
                            arrival_s: sim[s.job].arrival,
                            start_s: s.start,
                            cpus: s.cpus.clone(),
                            pgid: s.pgid,
                            beside: s.beside.clone(),
                            predicted: s.predicted,
                            solo_s: jobs[s.job].solo.as_ref().map(|x| x.0),
                        },
                    )
                }
                NodeEvent::Ended(x) => {
                    running.remove(&x.job);
                    ended += 1;
                    last_t = last_t.max(x.end);
                    let r = store.run_job_ended(
                        run_id,
                        x.job as u32,
                        attempts[x.job],
                        &RunJobEnd {
                            end_s: x.end,
                            status: x.status,
                            work_s: x.work_s,
                            slowdown: x.slowdown,
                        },
                    );
                    attempts[x.job] += 1;
                    if !matches!(x.status, JobStatus::Ok | JobStatus::Killed) {
                        progress.println(&format!(
                            "job {} {} after {:.2}s{}",
                            names[x.job],
                            x.status,
                            x.end - x.start,
                            if x.output_tail.is_empty() { String::new() } else { format!(": {}", x.output_tail.lines().last().unwrap_or("")) }
                        ));
                    }
                    r
                }
            };
            let now = last_t;
            let msg: Vec<String> = running
                .iter()
                .map(|(&j, (start, cpus))| {
                    let pct = ((now - start) / sim[j].solo * 100.0).clamp(0.0, 99.0);
                    format!("{}@{} {pct:.0}%", names[j], cosched_model::topology::format_cpulist(cpus))
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
        let r = run_node(platform, sim, source, policy.as_mut(), &mut ex, &done);
        let end = cosched_sched::Executor::now(&mut ex);
        r.map(|trace| (end, trace))
    };
    progress.finish();
    if interrupted().is_some() {
        if let Err(RunError::Exec(ExecError::Interrupted(_))) = &result {
            return result;
        }
    }
    result
}

struct RunView {
    rec: RunRecord,
    trace: Trace,
    metrics: Option<Metrics>,
    jobs: Vec<RunJobRecord>,
    failed: usize,
    worst_measured: Option<f64>,
}

/// The trace of a run finished by an earlier invocation, from its stored
/// final attempts: what `run_node` returned when it ran, but for the order
/// of events at one instant.
fn trace_of(final_jobs: &[&RunJobRecord], platform: &Platform, sim: &[SimJob]) -> Trace {
    let mut t = Trace {
        jobs: sim
            .iter()
            .enumerate()
            .map(|(i, j)| TraceJob {
                name: j.name.clone(),
                program: j.program.clone(),
                pool: platform.pools[j.pool].name.clone(),
                solo: Some(j.solo),
                ..TraceJob::bare(i)
            })
            .collect(),
        events: Vec::new(),
    };
    for r in final_jobs {
        let j = r.start.job_index as usize;
        t.events.push(Event { time: r.start.arrival_s.min(r.start.start_s), job: j, kind: EventKind::Arrive });
        t.events.push(Event { time: r.start.start_s, job: j, kind: EventKind::Start });
        if let Some(e) = &r.end {
            t.events.push(Event { time: e.end_s, job: j, kind: EventKind::Finish });
            t.jobs[j].status = Some(e.status);
        }
        t.jobs[j].cpus = r.start.cpus.clone();
    }
    t.events.sort_by(|a, b| a.time.total_cmp(&b.time));
    t
}

fn final_attempts(recs: &[RunJobRecord], n: usize) -> Vec<&RunJobRecord> {
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
    a: &RunArgs,
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
) -> anyhow::Result<()> {
    let mut views = Vec::new();
    for r in runs {
        let jobs = store.run_jobs(r.id)?;
        let fin = final_attempts(&jobs, w.jobs.len());
        let trace = traces.remove(&r.id).unwrap_or_else(|| trace_of(&fin, platform, sim));
        let metrics = trace.metrics().ok();
        let failed = fin.iter().filter(|j| j.end.as_ref().is_some_and(|e| !e.status.is_ok())).count();
        let worst_measured = fin.iter().filter_map(|j| j.end.as_ref()?.slowdown).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        views.push(RunView { rec: r.clone(), trace, metrics, jobs, failed, worst_measured });
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
    let run_head = ["policy", "repeat", "makespan s", "avg TAT s", "worst TAT s", "worst slowdown", "not ok", "run"];

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
    let last_main = views.iter().rev().find(|v| v.rec.policy == main);
    let job_head = ["job", "status", "cpus", "start s", "end s", "beside at start", "predicted", "measured", "solo s"];
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
                    format!("{:.2}", j.start.start_s),
                    f2(e.map(|e| e.end_s)),
                    if j.start.beside.is_empty() { "-".into() } else { j.start.beside.join(",") },
                    format!("{:.2}", j.start.predicted),
                    f2(e.and_then(|e| e.slowdown)),
                    f2(j.start.solo_s),
                ]
            })
            .collect()
    };
    let mechanisms = iso.mechanisms();

    if let Some(dir) = &a.report {
        write_report(page, dir, w, &views, &run_head, &run_rows, &summary_rows, &rate_rows, &job_head, &job_rows, &mechanisms, source_note, cpus_of_pool)?;
    }
    if a.json {
        let runs_json: Vec<_> = views
            .iter()
            .map(|v| serde_json::json!({"run": v.rec, "metrics": v.metrics, "worst_measured_slowdown": v.worst_measured, "jobs": v.jobs}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "workload": w.name,
                "mechanisms": mechanisms,
                "slowdown_source": source_note,
                "runs": runs_json,
                "summary": summary_json,
                "baselines": baselines,
                "increase_rates": rate_json,
            }))?
        );
        return Ok(());
    }
    if let Some(v) = last_main {
        println!("Jobs of {} repeat {} (run {}):", v.rec.policy, v.rec.repeat + 1, v.rec.id);
        println!("{}\n", table(&job_head, &job_rows(v)));
    }
    println!("Runs:");
    println!("{}\n", table(&run_head, &run_rows));
    println!("Per policy, median (min-max, n repeats):");
    let mut h = vec!["policy"];
    h.extend(figures.iter().map(|f| f.0));
    println!("{}\n", table(&h, &summary_rows));
    if !baselines.is_empty() {
        println!("Increase rate of {main} vs each baseline, repeat by repeat (negative = better):");
        println!("{}\n", table(&["baseline", "figure", "median (min .. max, n)"], &rate_rows));
    }
    println!("slowdown = run time / stored solo time (kernels: their work phase); predicted = the policy's source before the start.");
    if let Some(d) = &a.report {
        println!("report: {}", d.join("index.html").display());
    }
    Ok(())
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
    mechanisms: &[cosched_measure::cgroup::Mechanism],
    source_note: &str,
    cpus_of_pool: &[Vec<u32>],
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(name).display()))
    };
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
    let mut jobs_csv = String::from("run,policy,repeat,job,attempt,status,status_value,cpus,arrival_s,start_s,end_s,predicted,slowdown,solo_s,work_s,beside\n");
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
                "{},{},{},{},{},{},{},\"{}\",{},{},{},{},{},{},{},\"{}\"\n",
                v.rec.id,
                v.rec.policy,
                v.rec.repeat,
                j.start.job,
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
                j.start.beside.join(" "),
            ));
        }
        write(&trace_file(v.rec.id), &v.trace.to_csv())?;
    }
    write("jobs.csv", &jobs_csv)?;
    let json: Vec<_> = views.iter().map(|v| serde_json::json!({"run": v.rec, "metrics": v.metrics, "jobs": v.jobs})).collect();
    write("runs.json", &serde_json::to_string_pretty(&json)?)?;
    let data = page.section("Data").link("jobs.csv", "jobs of every run (CSV)");
    for v in views {
        data.link(&trace_file(v.rec.id), &format!("event trace of run {} (CSV, model::trace format)", v.rec.id));
    }
    data.link("runs.json", "runs, metrics and jobs (JSON)");
    let mut own = page.clone();
    own.set_title(&format!("cosched run: {}", w.name));
    write("index.html", &own.render())?;
    Ok(())
}
