//! `cosched pairs`: the interference matrix of a workload, measured and
//! stored (the matrix of stored pair runs is `cosched_learn::matrix`'s).
//!
//! The two jobs of a co-run are placed as `cosched run` places them
//! (`cosched_measure::place`): an accelerator-pool job on the host pool's
//! CPUs beside a host job. Each repeat stores the cache regime it ran in
//! and the sharing level observed between the two jobs' CPUs
//! (`place::observed_level`); a repeat in another regime than the
//! campaign's first is said on stderr and counted in the report.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{handle_terminal_stop, install_interrupt_handler, interrupted, TerminalStop};
use cosched_measure::c2c::read_round_trip;
use cosched_measure::pairs::{run_campaign_in, Campaign, CampaignError, PairJob, PairRun, RegimeGate};
use cosched_model::regime::CacheRegime;
use cosched_measure::place::observed_level;
use cosched_model::matrix::{unordered_pairs, SlowdownMatrix, StopRule};
use cosched_model::stats::Summary;
use cosched_model::workload::Workload;
use cosched_report::svg::heatmap;
use cosched_store::{CampaignParams, CampaignStatus, LevelCell, PairRunRecord, PairsJob, PairsParams, Store};

use cosched_learn::campaigns::{reading_of, regime_of};
use cosched_measure::identity::{is_kernel_argv, program_key};

use crate::calibrate::calibrate_missing;

use crate::common::{create_dir, db_path, figures_dir, file_safe, load_workload, node_pools, open_store, provenance, record_conditions, write_file, Ctx};
use crate::error::{bad_input, stopped};
use crate::regime::{CampaignRegimes, RegimeWait, Tracker};

#[derive(Debug, Clone)]
pub struct PairsRequest {
    pub workload: PathBuf,
    /// Most and fewest repeats per pair.
    pub repeats: usize,
    pub min_repeats: usize,
    /// Stop a pair once each slowdown's 95% interval is within +- this share.
    pub target: f64,
    /// Continue the last unfinished campaign of this workload and settings.
    pub resume: bool,
    /// Count only repeats that ran wholly in this cache regime, waiting
    /// for it before each repeat ([`cosched_measure::pairs::RegimeGate`]).
    pub in_regime: Option<CacheRegime>,
    /// Give up after waiting this long at once for `in_regime`.
    pub regime_wait: Duration,
    /// Leave out the co-runs the knowledge base already holds on this
    /// node (any workload's campaigns, by program identity) with at least
    /// `min_repeats` repeats each way, in `in_regime` when given.
    pub skip_known: bool,
    /// A slowdown level to settle, e.g. the severe 1.3: a pair is repeated
    /// (up to `repeats`) while either slowdown's interval holds it, and
    /// with `skip_known` a known co-run whose interval holds it is measured
    /// again.
    pub settle: Option<f64>,
    /// Where the heatmap SVG goes; default: pairs-<workload>.svg here.
    pub svg: Option<PathBuf>,
    pub db: Option<PathBuf>,
}

#[derive(Debug, serde::Serialize)]
pub struct PairsReport {
    /// Cell (i, j): job i's slowdown beside job j.
    #[serde(flatten)]
    pub matrix: SlowdownMatrix,
    /// The cache regimes the campaign's repeats ran in, and its switches.
    pub regimes: CampaignRegimes,
    /// Per ordered pair and sharing level observed, the median slowdown
    /// (what a domain-aware matrix reads).
    pub levels: Vec<LevelCell>,
    /// Where each program's jobs ran in its co-runs beside the others
    /// (`job + job: cpus | cpus`), when they shared a CPU.
    pub shared_cpus: Vec<String>,
    /// Each job's own solo times across the counted repeats.
    pub solo: Vec<SoloSpread>,
    /// The heatmap written.
    pub svg: PathBuf,
    /// Co-runs left out as known (`--skip-known`): their cells are empty
    /// here, and predictors read them from the campaigns that measured them.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_known: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub use cosched_learn::matrix::{matrix_of, representatives, solo_spreads, SoloSpread, UNSTABLE_SOLO};

pub fn pairs(req: &PairsRequest, ctx: &Ctx) -> anyhow::Result<PairsReport> {
    if req.min_repeats == 0 || req.repeats < req.min_repeats {
        return Err(bad_input("need 1 <= --min-repeats <= --repeats"));
    }
    if req.target.is_nan() || req.target <= 0.0 {
        return Err(bad_input("--target must be a positive share, e.g. 0.05"));
    }
    if let Some(l) = req.settle.filter(|l| !(l.is_finite() && *l > 0.0)) {
        return Err(bad_input(format!("--settle {l}: give a slowdown level, e.g. 1.3")));
    }
    let w = load_workload(&req.workload)?;
    if w.jobs.is_empty() {
        return Err(bad_input(format!("{}: no jobs to pair", req.workload.display())));
    }
    node_pools(&w).map_err(|e| bad_input(format!("{}: {e}", req.workload.display())))?;
    let _lock = crate::lock::take("pairs", None)?;
    let mut store = open_store(&db_path(req.db.as_deref()))?;
    install_interrupt_handler();
    handle_terminal_stop(TerminalStop::AtPausePoints);
    calibrate_missing(&w, &mut store, ctx)?;
    pairs_in(req, &w, &mut store, ctx)
}

/// Measures (or resumes) `w`'s pairs campaign into `store` with `req`'s
/// settings (its workload and database are the caller's): the caller has
/// parsed the workload, opened the store, taken the node lock, installed
/// the interrupt handlers and calibrated what the jobs need.
pub fn pairs_in(req: &PairsRequest, w: &Workload, store: &mut Store, ctx: &Ctx) -> anyhow::Result<PairsReport> {
    pairs_in_only(req, w, store, ctx, None)
}

/// [`pairs_in`], measuring only the co-run `only` (indices of the
/// workload's distinct programs, the smaller first) when given.
fn pairs_in_only(req: &PairsRequest, w: &Workload, store: &mut Store, ctx: &Ctx, only: Option<(usize, usize)>) -> anyhow::Result<PairsReport> {
    if w.jobs.is_empty() {
        return Err(bad_input(format!("{}: no jobs to pair", req.workload.display())));
    }
    let pools = node_pools(w).map_err(|e| bad_input(format!("{}: {e}", req.workload.display())))?;
    let cals = store.calibrations()?;
    // Twins (one program key: `count` copies, or jobs written out alike) are
    // one program: its co-runs are measured once, as its first job, and
    // `matrix_of` gives every twin the same cells. Eight jobs of two
    // programs are 3 co-runs, not 36.
    let reps = representatives(w);
    let pool_of = |j: &cosched_model::workload::Job| w.pools.iter().position(|p| p.name == j.pool).unwrap_or(0);
    let jobs: Vec<PairJob> = reps
        .iter()
        .map(|&i| &w.jobs[i])
        .map(|j| {
            job_argv(j, &cals)
                .map(|argv| PairJob { name: j.name.clone(), argv, pool: pool_of(j), cores: j.cores, env: j.env.clone().into_iter().collect() })
                .map_err(anyhow::Error::msg)
        })
        .collect::<anyhow::Result<_>>()?;
    // What the declared topology says two CPUs share; the round trips say
    // whether the cache really is shared.
    let topology = cosched_measure::topology::detect().ok();
    let stop = StopRule { min_repeats: req.min_repeats, max_repeats: req.repeats, rel_halfwidth: req.target, settle: req.settle };
    let params = CampaignParams::Pairs(PairsParams {
        jobs: jobs
            .iter()
            .map(|j| PairsJob {
                name: j.name.clone(),
                argv: j.argv.clone(),
                cores: j.cores,
                identity: Some(program_key(is_kernel_argv(&j.argv), &j.argv, j.cores)),
            })
            .collect(),
        stop,
        in_regime: req.in_regime,
    });

    // Resume the newest unfinished campaign with identical settings, if asked.
    let (campaign, prior) = match store.find_campaign_typed(&w.name, &params)? {
        Some((id, status)) if req.resume && status != CampaignStatus::Done => {
            store.reopen_campaign(id)?;
            let prior = store.pair_runs(id)?;
            ctx.step(&format!("resuming campaign {id}: {} repeats already stored", prior.len()));
            (id, prior)
        }
        Some((id, CampaignStatus::Done)) if req.resume => {
            ctx.step(&format!("campaign {id} is already complete; showing it"));
            let prior = store.pair_runs(id)?;
            let mut tracker = Tracker::new();
            for r in &prior {
                tracker.observe(&repeat_label(r), reading_of(&r.regime).as_ref(), &mut |_| {});
            }
            return report(req, w, &prior, tracker.out, store.pair_level_medians(id)?);
        }
        _ => {
            if req.resume {
                ctx.step("no unfinished campaign with these settings; starting a new one");
            }
            (store.begin_campaign_typed(&w.name, &params, &provenance(ctx))?, Vec::new())
        }
    };
    record_conditions(ctx, store, campaign, true)?;
    let mut known = if req.skip_known { known_pairs(store, &params, req, ctx)? } else { BTreeSet::new() };
    let known_in_kb = known.len();
    if let Some(o) = only {
        known.extend(unordered_pairs(jobs.len()).into_iter().filter(|&p| p != o));
    }
    let index = |name: &str| w.jobs.iter().position(|j| j.name == name);
    let prior_runs: Vec<PairRun> = prior.iter().filter_map(|r| Some(to_run(r, index(&r.fg_job)?, index(&r.bg_job)?))).collect();

    let npairs = unordered_pairs(jobs.len()).len();
    let twins = if jobs.len() < w.jobs.len() { format!(" ({} jobs; twins measured once)", w.jobs.len()) } else { String::new() };
    ctx.step(&format!(
        "pairs: {} programs{twins}, {npairs} co-runs (each beside its twin included), {}-{} repeats each, campaign {campaign}",
        jobs.len(),
        req.min_repeats,
        req.repeats
    ));
    // The campaign's first regime is its first stored repeat's, so a resumed
    // campaign compares with where it began.
    let mut tracker = Tracker::new();
    for r in &prior {
        tracker.observe(&repeat_label(r), reading_of(&r.regime).as_ref(), &mut |_| {});
    }
    // Progress counts the co-runs to measure: `before[i]`, how many of the
    // first i pairs are (the known ones are not run).
    let before: Vec<usize> = std::iter::once(0)
        .chain(unordered_pairs(jobs.len()).iter().scan(0, |n, p| {
            *n += usize::from(!known.contains(p));
            Some(*n)
        }))
        .collect();
    let progress = ctx.progress.task("pairs", ((npairs - known.len()) * req.repeats) as u64);
    let waiter = req.in_regime.map(|g| RegimeWait::new(g, req.regime_wait));
    let mut wait = |ns: Option<f64>| waiter.as_ref().is_some_and(|w| w.wait(ns, &mut |m| progress.println(m)));
    let gate = req.in_regime.map(|want| RegimeGate { want, wait: &mut wait });
    let skip = |a, b| known.contains(&(a, b));
    let result = run_campaign_in(
        Campaign { prior: &prior_runs, gate, skip: &skip, ..Campaign::new(&jobs, stop, &pools) },
        &mut read_round_trip,
        &mut |r| {
            if let Some(w) = &waiter {
                w.measured();
            }
            let rec = to_record(r, &jobs, topology.as_ref());
            tracker.observe(&repeat_label(&rec), r.reading.as_ref(), &mut |m| progress.println(m));
            store.add_pair_run(campaign, &rec).map_err(|e| e.to_string())
        },
        &mut |p, label| progress.set((before[p.pair] * req.repeats + p.repeat) as u64, label),
    );
    progress.finish();
    if let Some(g) = req.in_regime {
        let waited = waiter.as_ref().map_or(Duration::ZERO, RegimeWait::waited);
        ctx.step(&format!("counted only repeats in the {} regime; waited {:.1} min for it in all", g.name(), waited.as_secs_f64() / 60.0));
    } else if let Some(line) = tracker.summary() {
        ctx.step(&format!("warning: {line}"));
    }
    match result {
        Ok(_) => store.finish_campaign(campaign, CampaignStatus::Done)?,
        Err(e) => {
            store.finish_campaign(campaign, CampaignStatus::Interrupted)?;
            if let Some(sig) = interrupted() {
                return Err(stopped(
                    sig,
                    format!(
                        "interrupted; every finished repeat of campaign {campaign} is stored. Continue with: {}",
                        resume_command(req)
                    ),
                ));
            }
            return Err(match e {
                CampaignError::Corun { .. } => anyhow::Error::new(e).context("a job of the workload failed"),
                CampaignError::RegimeWait { .. } => anyhow::anyhow!(
                    "{e}; every finished repeat of campaign {campaign} is stored. Continue when the host gives that regime again: {}",
                    resume_command(req)
                ),
                other => other.into(),
            });
        }
    }
    let all = store.pair_runs(campaign)?;
    let mut r = report(req, w, &all, tracker.out, store.pair_level_medians(campaign)?)?;
    r.skipped_known = known_in_kb;
    Ok(r)
}

/// One thread count of a sweep: the foreground job's solo time and its
/// slowdown beside the background job, and the background's beside it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepRow {
    pub threads: u32,
    /// CPUs the foreground ran on: its threads, at most the node's CPUs.
    pub cores: u32,
    pub solo_s: Option<f64>,
    pub slowdown: Option<Summary>,
    pub background_slowdown: Option<Summary>,
    pub svg: PathBuf,
}

/// The Xeon Phi study's OpenMP thread sweep under a background job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepReport {
    pub foreground: String,
    pub background: String,
    pub rows: Vec<SweepRow>,
}

/// The workload's first job, given `t` threads on `t` cores (at most
/// `cpus`): a kernel's `threads`, a command run under
/// `env OMP_NUM_THREADS=t` (so an OpenMP program starts `t` threads and
/// each count is a program of its own in the knowledge base); named
/// `NAME.tT`.
pub fn with_threads(job: &cosched_model::workload::Job, t: u32, cpus: u32) -> cosched_model::workload::Job {
    use cosched_model::workload::Program;
    let mut j = job.clone();
    j.threads = t;
    j.cores = t.min(cpus).max(1);
    j.name = format!("{}.t{t}", job.name);
    if let Program::Command { argv } = &job.program {
        let mut a = vec!["env".to_string(), format!("OMP_NUM_THREADS={t}")];
        a.extend(argv.iter().cloned());
        j.program = Program::Command { argv: a };
    }
    j
}

/// `cosched pairs --threads LIST`: for each thread count, a pairs campaign
/// of the workload's first job (the foreground, at that count) with its
/// second (the background) only, stored like any campaign; one row per
/// count.
pub fn thread_sweep(req: &PairsRequest, threads: &[u32], ctx: &Ctx) -> anyhow::Result<SweepReport> {
    if req.min_repeats == 0 || req.repeats < req.min_repeats {
        return Err(bad_input("need 1 <= --min-repeats <= --repeats"));
    }
    let cpus = crate::common::node_cpu_count();
    if threads.is_empty() || threads.iter().any(|&t| t == 0 || t > cosched_model::workload::limits::MAX_CPUS) {
        return Err(bad_input(format!("--threads: give counts from 1 to {}", cosched_model::workload::limits::MAX_CPUS)));
    }
    let w = load_workload(&req.workload)?;
    if w.jobs.len() < 2 {
        return Err(bad_input(format!("{}: a thread sweep needs two jobs (the foreground first, the background second)", req.workload.display())));
    }
    if w.jobs[0].pool != w.jobs[1].pool {
        return Err(bad_input(format!("{}: the sweep's two jobs must be in one pool", req.workload.display())));
    }
    let _lock = crate::lock::take("pairs", None)?;
    let mut store = open_store(&db_path(req.db.as_deref()))?;
    install_interrupt_handler();
    handle_terminal_stop(TerminalStop::AtPausePoints);
    let mut rows = Vec::new();
    for &t in threads {
        let fg = with_threads(&w.jobs[0], t, cpus);
        let sw = Workload { name: format!("{} threads={t}", w.name), jobs: vec![fg.clone(), w.jobs[1].clone()], ..w.clone() };
        if representatives(&sw).len() < 2 {
            return Err(bad_input(format!("{}: at {t} threads the two jobs are one program", req.workload.display())));
        }
        ctx.step(&format!("{} at {t} threads on {} cores beside {}", w.jobs[0].name, fg.cores, w.jobs[1].name));
        calibrate_missing(&sw, &mut store, ctx)?;
        let svg = req.svg.as_ref().map(|p| p.with_file_name(format!("{}-t{t}.svg", p.file_stem().map_or("pairs".into(), |s| s.to_string_lossy()))));
        let r = pairs_in_only(&PairsRequest { svg, ..req.clone() }, &sw, &mut store, ctx, Some((0, 1)))?;
        rows.push(SweepRow {
            threads: t,
            cores: fg.cores,
            solo_s: r.solo.iter().find(|s| s.job == fg.name).map(|s| s.median_s),
            slowdown: r.matrix.get(0, 1).copied(),
            background_slowdown: r.matrix.get(1, 0).copied(),
            svg: r.svg,
        });
    }
    Ok(SweepReport { foreground: w.jobs[0].name.clone(), background: w.jobs[1].name.clone(), rows })
}

/// The unordered pairs of `params`' jobs (indices, the smaller first) that
/// the knowledge base holds with at least `--min-repeats` repeats each way:
/// measured on this node under any workload file, in `--in-regime` when
/// given (only repeats wholly in it count). Says how many it leaves out.
fn known_pairs(store: &cosched_store::Store, params: &CampaignParams, req: &PairsRequest, ctx: &Ctx) -> anyhow::Result<BTreeSet<(usize, usize)>> {
    let CampaignParams::Pairs(p) = params else { unreachable!("a pairs campaign's parameters") };
    let keys: Vec<String> = p.jobs.iter().map(|j| j.identity.clone().expect("set above")).collect();
    let filter = cosched_learn::knowledge::KbFilter {
        node: Some(provenance(ctx).hostname),
        regime: req.in_regime,
        strict_regime: true,
        programs: Some(keys.iter().cloned().collect()),
        ..Default::default()
    };
    let kb = cosched_learn::knowledge::knowledge_base(store, &filter)?;
    let samples: std::collections::BTreeMap<(&str, &str), usize> =
        kb.set.pairs.iter().map(|s| ((s.victim.as_str(), s.aggressor.as_str()), s.slowdowns.len())).collect();
    // A co-run of twins gives two samples of its one ordered pair.
    let repeats = |v: &str, o: &str| {
        let n = samples.get(&(v, o)).copied().unwrap_or(0);
        if v == o { n.div_ceil(2) } else { n }
    };
    // With --settle, a known co-run whose side of the level is still in
    // doubt (either slowdown's interval holds it) is measured again.
    let intervals: std::collections::BTreeMap<(&str, &str), Summary> =
        kb.set.pairs.iter().filter_map(|s| Some(((s.victim.as_str(), s.aggressor.as_str()), Summary::of(&s.slowdowns)?))).collect();
    let unsettled = |v: &str, o: &str| intervals.get(&(v, o)).is_some_and(|x| p.stop.unsettled(x));
    let enough: Vec<(usize, usize)> = unordered_pairs(keys.len())
        .into_iter()
        .filter(|&(a, b)| repeats(&keys[a], &keys[b]).min(repeats(&keys[b], &keys[a])) >= req.min_repeats)
        .collect();
    let known: BTreeSet<(usize, usize)> =
        enough.iter().copied().filter(|&(a, b)| !unsettled(&keys[a], &keys[b]) && !unsettled(&keys[b], &keys[a])).collect();
    let regime = req.in_regime.map_or(String::new(), |g| format!(" in the {} regime", g.name()));
    let settle = match req.settle {
        Some(l) => format!(" ({} more whose interval holds {l} are measured again)", enough.len() - known.len()),
        None => String::new(),
    };
    ctx.step(&format!(
        "--skip-known: {} of {} co-runs are in the knowledge base with at least {} repeat(s) each way{regime} on this node{settle}; measuring the other {}",
        known.len(),
        unordered_pairs(keys.len()).len(),
        req.min_repeats,
        unordered_pairs(keys.len()).len() - known.len()
    ));
    Ok(known)
}

/// The command that continues `req`'s campaign: `--resume` finds it only
/// with the same settings, so those that differ from the defaults are
/// spelled out.
fn resume_command(req: &PairsRequest) -> String {
    let mut c = format!("cosched pairs --workload {}", req.workload.display());
    if req.repeats != 6 {
        c.push_str(&format!(" --repeats {}", req.repeats));
    }
    if req.min_repeats != 3 {
        c.push_str(&format!(" --min-repeats {}", req.min_repeats));
    }
    if req.target != 0.05 {
        c.push_str(&format!(" --target {}", req.target));
    }
    if let Some(g) = req.in_regime {
        c.push_str(if g == CacheRegime::Shared { " --in-regime shared" } else { " --in-regime apart" });
    }
    if req.skip_known {
        c.push_str(" --skip-known");
    }
    if let Some(l) = req.settle {
        c.push_str(&format!(" --settle {l}"));
    }
    if let Some(db) = &req.db {
        c.push_str(&format!(" --db {}", db.display()));
    }
    c + " --resume"
}

/// `fg + bg repeat 3`.
fn repeat_label(r: &PairRunRecord) -> String {
    format!("{} + {} repeat {}", r.fg_job, r.bg_job, r.repeat)
}

fn report(
    req: &PairsRequest,
    w: &Workload,
    runs: &[PairRunRecord],
    regimes: CampaignRegimes,
    levels: Vec<LevelCell>,
) -> anyhow::Result<PairsReport> {
    // A gated campaign's matrix holds the repeats it counted: those of its
    // regime, and those with no regime of their own (jobs sharing a CPU,
    // CPUs that could not be read), as `run_campaign_in` counts them.
    let unread = |r: &PairRunRecord| r.regime.before_ns.is_none() && r.regime.after_ns.is_none();
    let counted: Vec<PairRunRecord> = runs
        .iter()
        .filter(|r| req.in_regime.is_none_or(|g| r.shared_cpus || unread(r) || r.regime.regime() == Some(g)))
        .cloned()
        .collect();
    let matrix = matrix_of(w, &counted);
    let mut shared_cpus: Vec<String> = runs
        .iter()
        .filter(|r| r.shared_cpus)
        .map(|r| {
            let f = cosched_model::topology::format_cpulist;
            format!("{} + {}: CPUs {} | {}", r.fg_job, r.bg_job, f(&r.fg_cpus), f(&r.bg_cpus))
        })
        .collect();
    shared_cpus.dedup();
    let svg = match &req.svg {
        Some(p) => p.clone(),
        None => {
            let dir = figures_dir(req.db.as_deref());
            create_dir(&dir)?;
            dir.join(format!("pairs-{}.svg", file_safe(&w.name)))
        }
    };
    let title = match req.in_regime {
        Some(g) => format!("Slowdown matrix of {} ({} of {} repeats stored, in the {} regime)", w.name, counted.len(), runs.len(), g.name()),
        None => format!("Slowdown matrix of {} ({} repeats stored)", w.name, runs.len()),
    };
    write_file(&svg, &heatmap(&matrix, &title))?;
    let solo = solo_spreads(&counted);
    Ok(PairsReport { matrix, regimes, levels, shared_cpus, solo, svg, skipped_known: 0 })
}

fn to_record(r: &PairRun, jobs: &[PairJob], topology: Option<&cosched_model::topology::Node>) -> PairRunRecord {
    PairRunRecord {
        fg_job: jobs[r.jobs.0].name.clone(),
        bg_job: jobs[r.jobs.1].name.clone(),
        repeat: r.repeat as u32,
        fg_cpus: r.cpus[0].clone(),
        bg_cpus: r.cpus[1].clone(),
        shared_cpus: r.shared_cpus,
        fg_solo_s: r.solo_s[0],
        fg_corun_s: r.corun_s[0],
        bg_solo_s: r.solo_s[1],
        bg_corun_s: r.corun_s[1],
        fg_relaunches: r.relaunches[0],
        bg_relaunches: r.relaunches[1],
        fg_timing: r.timing[0].clone(),
        bg_timing: r.timing[1].clone(),
        regime: regime_of(r.reading.as_ref()),
        // A repeat whose regime changed while it ran had no one level.
        level: r.reading.filter(|g| g.regime().is_some() || g.before_ns.is_none() || g.after_ns.is_none()).and_then(|g| observed_level(topology, g.cpus, g.regime())),
    }
}

fn to_run(r: &PairRunRecord, fg: usize, bg: usize) -> PairRun {
    PairRun {
        jobs: (fg, bg),
        repeat: r.repeat as usize,
        solo_s: [r.fg_solo_s, r.bg_solo_s],
        corun_s: [r.fg_corun_s, r.bg_corun_s],
        relaunches: [r.fg_relaunches, r.bg_relaunches],
        timing: [r.fg_timing.clone(), r.bg_timing.clone()],
        cpus: [r.fg_cpus.clone(), r.bg_cpus.clone()],
        shared_cpus: r.shared_cpus,
        reading: reading_of(&r.regime),
    }
}

#[cfg(test)]
pub(crate) mod twin_tests {
    use super::*;
    use cosched_measure::c2c::Reading;
    use cosched_store::RepeatRegime;

    #[test]
    fn the_resume_hint_repeats_every_setting_that_finds_the_campaign() {
        let mut req = PairsRequest {
            workload: "w.toml".into(),
            repeats: 6,
            min_repeats: 3,
            target: 0.05,
            resume: false,
            in_regime: None,
            regime_wait: Duration::from_secs(60),
            skip_known: false,
            settle: None,
            svg: None,
            db: None,
        };
        assert_eq!(resume_command(&req), "cosched pairs --workload w.toml --resume");
        (req.repeats, req.min_repeats, req.in_regime, req.db) = (3, 3, Some(CacheRegime::Shared), Some("l.db".into()));
        assert_eq!(resume_command(&req), "cosched pairs --workload w.toml --repeats 3 --in-regime shared --db l.db --resume");
        req.skip_known = true;
        assert!(resume_command(&req).contains(" --skip-known "), "{}", resume_command(&req));
        req.settle = Some(1.3);
        assert!(resume_command(&req).contains(" --settle 1.3 "), "{}", resume_command(&req));
    }

    /// A repeat of `fg` beside `bg` with these slowdowns, solo 1 s each.
    pub(crate) fn rec(fg: &str, bg: &str, fg_sd: f64, bg_sd: f64) -> PairRunRecord {
        PairRunRecord {
            fg_job: fg.into(),
            bg_job: bg.into(),
            repeat: 0,
            fg_cpus: vec![0],
            bg_cpus: vec![1],
            shared_cpus: false,
            fg_solo_s: 1.0,
            fg_corun_s: fg_sd,
            bg_solo_s: 1.0,
            bg_corun_s: bg_sd,
            fg_relaunches: 0,
            bg_relaunches: 0,
            fg_timing: "work-phase".into(),
            bg_timing: "work-phase".into(),
            regime: Default::default(),
            level: None,
        }
    }

    /// What a pairs campaign stores per repeat: its readings as taken, and
    /// the sharing level observed. This VM declares one LLC for both vCPUs,
    /// so the level is the regime: same-llc when the round trip said
    /// shared, same-numa when apart, none when it changed mid-repeat.
    #[test]
    fn each_repeat_is_stored_with_its_regime_and_the_level_observed() {
        use cosched_model::regime::CacheRegime;
        use cosched_model::placement::SharingLevel;
        let xml = include_str!("../../model/tests/fixtures/topology/vm-epyc-2c.hwloc2.xml");
        let vm = cosched_model::topology::parse_hwloc_xml(xml).unwrap();
        let jobs = [PairJob { name: "a".into(), argv: vec!["true".into()], pool: 0, cores: 1, env: Vec::new() }];
        let run = |before: Option<f64>, after: Option<f64>| PairRun {
            jobs: (0, 0),
            repeat: 2,
            solo_s: [1.0, 1.0],
            corun_s: [1.5, 1.25],
            relaunches: [0, 1],
            timing: ["work-phase".into(), "work-phase".into()],
            cpus: [vec![0], vec![1]],
            shared_cpus: false,
            reading: Some(Reading { cpus: [0, 1], before_ns: before, after_ns: after }),
        };
        let shared = to_record(&run(Some(71.0), Some(74.5)), &jobs, Some(&vm));
        assert_eq!(shared.regime, RepeatRegime { cpus: vec![0, 1], before_ns: Some(71.0), after_ns: Some(74.5) });
        assert_eq!((shared.regime.regime(), shared.level), (Some(CacheRegime::Shared), Some(SharingLevel::SameLlc)));
        let apart = to_record(&run(Some(402.0), None), &jobs, Some(&vm));
        assert_eq!((apart.regime.regime(), apart.level), (Some(CacheRegime::Apart), Some(SharingLevel::SameNuma)));
        let moved = to_record(&run(Some(70.0), Some(400.0)), &jobs, Some(&vm));
        assert_eq!((moved.regime.regime(), moved.level), (None, None));
        // What the store gives back reads as the campaign took it (resume).
        assert_eq!(to_run(&shared, 0, 0).reading, run(Some(71.0), Some(74.5)).reading);
        let unread = PairRun { reading: None, ..run(None, None) };
        assert_eq!((to_record(&unread, &jobs, Some(&vm)).regime, to_record(&unread, &jobs, None).level), (RepeatRegime::default(), None));
    }
}
