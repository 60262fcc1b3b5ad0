//! `cosched probe`: a job's sensitivity and contentiousness curves against
//! the DistGen stressor (the DistGen paper), measured, stored and plotted
//! (the curve of stored points is `cosched_learn::curve`'s).
//!
//! The job runs where `cosched run` would put it and the stressor where
//! the runner would put a one-core host job beside it
//! (`cosched_measure::place`); each repeat stores the cache regime it ran
//! in, and a switch of regime within a job's probe is reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cosched_measure::calibrate::{calibrate, CalibrateSpec};
use cosched_measure::c2c::{read_round_trip, Reading};
use cosched_measure::corun::PairMeasurement;
use cosched_measure::kernel::{job_argv, kernel_argv};
use cosched_measure::launch::{handle_terminal_stop, install_interrupt_handler, interrupted, Launch, TerminalStop};
use cosched_measure::pairs::RegimeGate;
use cosched_measure::probe::{probe_job, stressor_params, ProbeError, ProbePlan};
use cosched_model::calibration::calibration_key;
use cosched_model::regime::CacheRegime;
use cosched_model::probe::{default_ladder, ProbeLevel, ProbePoint};
use cosched_model::topology::{CacheKind, Node};
use cosched_model::workload::{Job, PoolKind, Workload};
use cosched_report::curves::{fmt_intensity, fmt_kib, probe_curves, CacheMarks};
use cosched_store::{CampaignParams, CampaignStatus, ProbeLevelParams, ProbeParams, ProbePointRecord, Store};
use serde::Serialize;

use crate::calibrate::calibrate_missing;
use crate::common::{create_dir, db_path, figures_dir, file_safe, load_workload, node_cpu_count, open_store, provenance, record_conditions, write_file, Ctx, GIT_COMMIT};
use crate::error::{bad_input, stopped};
use crate::regime::{CampaignRegimes, RegimeWait, Tracker};

pub use cosched_learn::curve::{PIPE_LEVEL, STRESSOR};

/// What a job is probed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stressor {
    /// DistGen at a ladder of working-set sizes and intensities: the
    /// caches and memory (the DistGen paper).
    #[default]
    Distgen,
    /// The `pipe` kernel, one point: the kernel's pipe path, a resource
    /// DistGen does not exercise (on the reference node no program is
    /// sensitive to it: 0.90-1.09).
    Pipe,
}

impl Stressor {
    pub const ALL: [Stressor; 2] = [Stressor::Distgen, Stressor::Pipe];

    /// The kernel's name, stored with each point.
    pub fn name(self) -> &'static str {
        match self {
            Stressor::Distgen => STRESSOR,
            Stressor::Pipe => "pipe",
        }
    }

    pub fn parse(s: &str) -> Option<Stressor> {
        Stressor::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The kernel parameters at a level. The stream mode adds no `mode`
    /// key, so its calibrations stay those stored before modes existed.
    fn params(self, level: &ProbeLevel, setup: StressorSetup) -> BTreeMap<String, String> {
        match self {
            Stressor::Distgen => {
                let mut p = stressor_params(level);
                if setup.mode != DistgenMode::Stream {
                    p.insert("mode".to_string(), setup.mode.name().to_string());
                }
                p
            }
            Stressor::Pipe => BTreeMap::new(),
        }
    }

    /// How a level reads in progress lines and errors.
    fn label(self, level: &ProbeLevel) -> String {
        match self {
            Stressor::Distgen => format!("{} @ {}", fmt_kib(level.size_kib), fmt_intensity(level.intensity)),
            Stressor::Pipe => "pipe".to_string(),
        }
    }
}

/// The order of the DistGen stressor's accesses (the DistGen paper's
/// modes, `distgen`'s `mode` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DistgenMode {
    /// Address order: prefetchers help, the bandwidth-bound stressor.
    #[default]
    Stream,
    /// A fixed pseudo-random order: the same reuse distances, no stride.
    Random,
    /// A linked list: one dependent load at a time, latency-bound.
    Chase,
}

impl DistgenMode {
    pub const ALL: [DistgenMode; 3] = [DistgenMode::Stream, DistgenMode::Random, DistgenMode::Chase];

    pub fn name(self) -> &'static str {
        match self {
            DistgenMode::Stream => "stream",
            DistgenMode::Random => "random",
            DistgenMode::Chase => "chase",
        }
    }

    pub fn parse(s: &str) -> Option<DistgenMode> {
        DistgenMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// How the DistGen stressor runs: its threads (each on a core of the host
/// pool, as a host job of that many cores) and its access mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StressorSetup {
    pub threads: u32,
    pub mode: DistgenMode,
}

impl Default for StressorSetup {
    fn default() -> Self {
        StressorSetup { threads: 1, mode: DistgenMode::Stream }
    }
}

impl StressorSetup {
    /// The stressor's name as stored with each point. The one-thread
    /// stream stressor is `distgen`, the curve every predictor reads; any
    /// other setup gets a name of its own (`distgen:mode=chase,threads=2`),
    /// so its points form their own curve and never mix into that one.
    pub fn stored_name(self, st: Stressor) -> String {
        if st == Stressor::Pipe || self == StressorSetup::default() {
            return st.name().to_string();
        }
        format!("{}:mode={},threads={}", st.name(), self.mode.name(), self.threads)
    }
}

/// distgen's own bound on a working set (KiB), checked here so a bad list is
/// refused before anything runs.
const MAX_SIZE_KIB: u64 = 1 << 30;

#[derive(Debug, Clone)]
pub struct ProbeRequest {
    pub workload: PathBuf,
    /// Jobs to probe, in this order; empty: every job.
    pub jobs: Vec<String>,
    /// What the jobs run beside.
    pub stressor: Stressor,
    /// DistGen's threads and mode (the pipe stressor takes only the default).
    pub setup: StressorSetup,
    /// Repeats per level.
    pub repeats: usize,
    /// Stressor working-set sizes in KiB and intensities, comma-separated;
    /// default: the ladder of this node's caches.
    pub sizes_kib: Option<String>,
    pub intensities: Option<String>,
    /// How long the stressor runs alone at each level.
    pub stressor_seconds: f64,
    /// Directory of the curves' SVGs (DistGen only); default: figures/
    /// beside the database.
    pub svg_dir: Option<PathBuf>,
    /// Count only the repeats run wholly in this cache regime, waiting for
    /// it before each ([`cosched_measure::pairs::RegimeGate`]).
    pub in_regime: Option<CacheRegime>,
    /// Give up after waiting this long at once for `in_regime`.
    pub regime_wait: Duration,
    pub db: Option<PathBuf>,
}

/// The probe of one job.
#[derive(Debug, Serialize)]
pub struct JobProbe {
    pub job: String,
    pub campaign: i64,
    pub job_cpus: Vec<u32>,
    pub stressor_cpus: Vec<u32>,
    pub shared_cpus: bool,
    pub l2_kib: Option<u64>,
    pub llc_kib: Option<u64>,
    /// As stored with the points ([`StressorSetup::stored_name`]).
    pub stressor: String,
    pub points: Vec<ProbePoint>,
    /// The cache regimes its repeats ran in, and its switches.
    pub regimes: CampaignRegimes,
    /// Seconds spent waiting for `--in-regime`'s regime (not measuring).
    pub waited_s: f64,
    /// The curves' plot; none for the one-point pipe probe.
    pub svg: Option<PathBuf>,
}

pub fn probe(a: &ProbeRequest, ctx: &Ctx) -> anyhow::Result<Vec<JobProbe>> {
    // Everything the user typed is checked before the store is opened, so
    // bad input never leaves a database behind.
    check_request(a)?;
    let w = load_workload(&a.workload)?;
    let caches = match cosched_measure::topology::detect() {
        Ok(node) => cache_sizes(&node),
        Err(e) => {
            ctx.step(&format!("cannot read this node's caches ({e}); the plots get no cache markers"));
            (None, None)
        }
    };
    let inputs = probe_inputs(a, &w, caches)?;
    crate::common::node_pools(&w).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;
    let _lock = crate::lock::take("probe", None)?;
    let mut store = open_store(&db_path(a.db.as_deref()))?;
    install_interrupt_handler();
    handle_terminal_stop(TerminalStop::AtPausePoints);
    let sub = Workload { jobs: inputs.jobs.iter().map(|j| (*j).clone()).collect(), ..w.clone() };
    calibrate_missing(&sub, &mut store, ctx).map_err(stop_if_interrupted)?;
    probe_in(a, &inputs, &mut store, ctx)
}

/// The numbers of a request that need no workload, checked.
fn check_request(a: &ProbeRequest) -> anyhow::Result<()> {
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.stressor_seconds > 0.0 && a.stressor_seconds.is_finite()) {
        return Err(bad_input("--stressor-seconds must be a positive number of seconds"));
    }
    if a.setup.threads == 0 {
        return Err(bad_input("--stressor-threads must be at least 1"));
    }
    if a.stressor == Stressor::Pipe && a.setup != StressorSetup::default() {
        return Err(bad_input("--stressor-threads and --stressor-mode are DistGen's; the pipe stressor runs as it is"));
    }
    Ok(())
}

/// What a probe reads from its request and workload once: the jobs, in
/// order, and the levels.
pub struct ProbeInputs<'a> {
    pub workload: &'a Workload,
    pub jobs: Vec<&'a Job>,
    pub levels: Vec<ProbeLevel>,
    /// This node's L2 and LLC sizes in KiB, where known.
    pub l2_kib: Option<u64>,
    pub llc_kib: Option<u64>,
}

/// `a`'s jobs of `w` and its levels (the node's ladder unless given),
/// checked; `caches` are this node's L2 and LLC sizes ([`cache_sizes`]).
pub fn probe_inputs<'a>(a: &ProbeRequest, w: &'a Workload, caches: (Option<u64>, Option<u64>)) -> anyhow::Result<ProbeInputs<'a>> {
    check_request(a)?;
    let sizes =
        a.sizes_kib.as_deref().map(parse_sizes).transpose().map_err(|e| bad_input(format!("--sizes-kib: {e}")))?;
    let intensities = a
        .intensities
        .as_deref()
        .map(parse_intensities)
        .transpose()
        .map_err(|e| bad_input(format!("--intensities: {e}")))?;
    let jobs = select_jobs(w, &a.jobs, &a.workload)?;
    // The stressor is a host job of `threads` cores: the host pool must
    // have them, or the placement would overbook the stressor onto itself.
    let pools = crate::common::node_pools(w).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;
    let host = w.pools.iter().position(|p| p.kind == PoolKind::Cpu).unwrap_or(0);
    let host_cpus = pools.cpus.get(host).map_or(0, Vec::len);
    if a.setup.threads as usize > host_cpus {
        return Err(bad_input(format!(
            "--stressor-threads {}: the host pool of {} has {host_cpus} CPU(s) on this node",
            a.setup.threads,
            a.workload.display()
        )));
    }
    let (l2_kib, llc_kib) = caches;
    let levels = match a.stressor {
        Stressor::Distgen => ladder(sizes, intensities, l2_kib, llc_kib)?,
        Stressor::Pipe if sizes.is_some() || intensities.is_some() => {
            return Err(bad_input("--sizes-kib and --intensities are DistGen's levels; the pipe stressor has one point"))
        }
        Stressor::Pipe => vec![PIPE_LEVEL],
    };
    Ok(ProbeInputs { workload: w, jobs, levels, l2_kib, llc_kib })
}

/// Probes `inputs`' jobs into `store`, a campaign per job: the caller has
/// opened the store, taken the node lock, installed the interrupt
/// handlers and calibrated what the jobs need (the stressor's levels are
/// calibrated here, as they are the probe's own).
pub fn probe_in(a: &ProbeRequest, inputs: &ProbeInputs, store: &mut Store, ctx: &Ctx) -> anyhow::Result<Vec<JobProbe>> {
    let ProbeInputs { workload: w, jobs, levels, l2_kib, llc_kib } = inputs;
    let (w, l2_kib, llc_kib, st, setup) = (*w, *l2_kib, *llc_kib, a.stressor, a.setup);
    let stressor_name = setup.stored_name(st);
    let pools = crate::common::node_pools(w).map_err(|e| bad_input(format!("{}: {e}", a.workload.display())))?;
    let cals = store.calibrations()?;
    let node_cpus: Vec<u32> = (0..node_cpu_count()).collect();
    // The stressor is a job of the host pool (the first cpu pool), of one
    // core per thread.
    let host = w.pools.iter().position(|p| p.kind == PoolKind::Cpu).unwrap_or(0);
    let place = |job: &Job| -> anyhow::Result<([Vec<u32>; 2], bool)> {
        let pool = w.pools.iter().position(|p| p.name == job.pool).unwrap_or(0);
        let p = pools.pair((pool, job.cores), (host, setup.threads)).map_err(|e| anyhow::anyhow!("placing `{}` beside the stressor: {e}", job.name))?;
        Ok((p.cpus, p.shared_cpus))
    };
    let first_stressor_cpus = place(jobs[0])?.0[1].clone();
    let stressor_work =
        size_stressor(st, setup, levels, &first_stressor_cpus, a.stressor_seconds, store, ctx).map_err(stop_if_interrupted)?;

    let svg_dir = a.svg_dir.clone().unwrap_or_else(|| figures_dir(a.db.as_deref()));
    if st == Stressor::Distgen {
        create_dir(&svg_dir)?;
    }
    let prov = provenance(ctx);
    ctx.step(&format!("probe: {} job(s) x {} levels x {} repeats against {stressor_name}", jobs.len(), levels.len(), a.repeats));
    let per_job = (levels.len() * a.repeats) as u64;
    let progress = ctx.progress.task("probe", per_job * jobs.len() as u64);
    let mut done = Vec::new();
    for (ji, job) in jobs.iter().enumerate() {
        let argv = job_argv(job, &cals).map_err(anyhow::Error::msg)?;
        let ([job_cpus, stressor_cpus], shared) = place(job)?;
        if shared {
            ctx.step(&format!(
                "`{}` runs on CPUs {} (as `cosched run` places it), so the stressor shares CPU {} with it: the curves include time-sharing",
                job.name,
                cosched_model::topology::format_cpulist(&job_cpus),
                cosched_model::topology::format_cpulist(&stressor_cpus)
            ));
        }
        let read_cpus = cosched_measure::place::regime_cpus(&job_cpus, &stressor_cpus, &node_cpus);
        let mut tracker = Tracker::new();
        let params = CampaignParams::Probe(ProbeParams {
            job: job.name.clone(),
            program: Some(job.program_key()),
            identity: Some(cosched_measure::identity::program_key(job.kernel().is_some(), &argv, job.cores)),
            argv: argv.clone(),
            job_cpus: job_cpus.clone(),
            stressor: stressor_name.clone(),
            stressor_cpus: stressor_cpus.clone(),
            stressor_seconds: a.stressor_seconds,
            levels: levels
                .iter()
                .map(|l| ProbeLevelParams { size_kib: l.size_kib, intensity: l.intensity, stressor_work: stressor_work[&level_key(st, setup, l)] })
                .collect(),
            repeats: a.repeats,
            l2_kib,
            llc_kib,
        });
        let campaign = store.begin_campaign_typed(&w.name, &params, &prov)?;
        record_conditions(ctx, store, campaign, ji == 0)?;
        let mut launch = Launch::new(argv).pinned(job_cpus.clone());
        let own: Vec<(String, String)> = job.env.clone().into_iter().collect();
        launch.env = cosched_measure::node::env_for(&job.name, job.cores, &own, &job_cpus, &[]);
        let base = ji as u64 * per_job;
        let mut stored = 0u64;
        let waiter = a.in_regime.map(|g| RegimeWait::new(g, a.regime_wait));
        let mut wait = |ns: Option<f64>| waiter.as_ref().is_some_and(|w| w.wait(ns, &mut |m| progress.println(m)));
        let gate = a.in_regime.map(|want| RegimeGate { want, wait: &mut wait });
        let result = probe_job(
            ProbePlan { job: &launch, stressor_cpus: &stressor_cpus, levels, repeats: a.repeats, read_cpus, gate },
            &mut read_round_trip,
            &mut |level| {
                let work = stressor_work[&level_key(st, setup, level)];
                Ok(kernel_argv(st.name(), work, setup.threads, &st.params(level, setup)))
            },
            &mut |level, m, readings| {
                for (r, reading) in records(&job.name, &stressor_name, level, m, readings).into_iter().zip(readings) {
                    let what = format!("{} at {} repeat {}", job.name, st.label(level), r.repeat);
                    tracker.observe(&what, reading.as_ref(), &mut |m| progress.println(m));
                    store.add_probe_point(campaign, &r).map_err(|e| e.to_string())?;
                }
                // The sink hears of a level once its repeats are measured,
                // so a probe's --regime-wait bounds the waiting of a level.
                if let Some(w) = &waiter {
                    w.measured();
                }
                stored += 1;
                Ok(())
            },
            &mut |i, n| {
                let label = match levels.get(i) {
                    Some(l) => format!("{}: {}", job.name, st.label(l)),
                    None => format!("{}: {n} levels done", job.name),
                };
                progress.set(base + i as u64 * a.repeats as u64, &label);
            },
        );
        let points = match result {
            Ok(points) => points,
            Err(e) => {
                progress.finish();
                store.finish_campaign(campaign, CampaignStatus::Interrupted)?;
                // What is stored, and the command that probes the job again.
                let kept = format!(
                    "{stored} of {} levels of `{}` are stored in campaign {campaign} (marked interrupted){}",
                    levels.len(),
                    job.name,
                    if ji > 0 { "; the jobs probed before it are complete" } else { "" }
                );
                let again = format!("cosched probe --workload {} --job {}{}", a.workload.display(), job.name, again_flags(a));
                if let Some(sig) = interrupted() {
                    return Err(stopped(sig, format!("interrupted; {kept}. Probe it again with: {again}")));
                }
                if let ProbeError::RegimeWait { .. } = e {
                    return Err(anyhow::anyhow!("{e}; {kept}. Probe it again when the host gives that regime: {again}"));
                }
                return Err(anyhow::Error::new(e).context(format!("probing job `{}`", job.name)));
            }
        };
        store.finish_campaign(campaign, CampaignStatus::Done)?;
        if let Some(line) = tracker.summary() {
            progress.println(&format!("warning: `{}`: {line}", job.name));
        }
        let svg = if st == Stressor::Distgen {
            let svg = svg_dir.join(format!("probe-{}-{}.svg", file_safe(&w.name), file_safe(&job.name)));
            let title = format!(
                "Probe of {} ({}) against {STRESSOR}, {} repeat{} per point",
                job.name,
                w.name,
                a.repeats,
                if a.repeats == 1 { "" } else { "s" }
            );
            write_file(&svg, &probe_curves(&title, &points, CacheMarks { l2_kib, llc_kib }))?;
            Some(svg)
        } else {
            None
        };
        done.push(JobProbe {
            job: job.name.clone(),
            campaign: campaign.0,
            job_cpus,
            stressor_cpus,
            shared_cpus: shared,
            l2_kib,
            llc_kib,
            stressor: stressor_name.clone(),
            points,
            waited_s: waiter.as_ref().map_or(0.0, |w| w.waited().as_secs_f64()),
            regimes: tracker.out,
            svg,
        });
    }
    progress.finish();
    Ok(done)
}

/// The flags that probe one job again as `a` did: its stressor, levels
/// and regime.
fn again_flags(a: &ProbeRequest) -> String {
    let mut f = String::new();
    if a.stressor != Stressor::Distgen {
        f.push_str(&format!(" --stressor {}", a.stressor.name()));
    }
    if a.setup.threads != 1 {
        f.push_str(&format!(" --stressor-threads {}", a.setup.threads));
    }
    if a.setup.mode != DistgenMode::Stream {
        f.push_str(&format!(" --stressor-mode {}", a.setup.mode.name()));
    }
    if let Some(s) = &a.sizes_kib {
        f.push_str(&format!(" --sizes-kib {s}"));
    }
    if let Some(i) = &a.intensities {
        f.push_str(&format!(" --intensities {i}"));
    }
    if a.repeats != 3 {
        f.push_str(&format!(" --repeats {}", a.repeats));
    }
    if let Some(g) = a.in_regime {
        f.push_str(if g == CacheRegime::Shared { " --in-regime shared" } else { " --in-regime apart" });
    }
    if let Some(db) = &a.db {
        f.push_str(&format!(" --db {}", db.display()));
    }
    f
}

/// Where a stressor of this size lives, for the reader of the table.
pub fn fits_in(kib: u64, l2: Option<u64>, llc: Option<u64>) -> &'static str {
    match (l2, llc) {
        (Some(l2), _) if kib <= l2 => "L2",
        (_, Some(llc)) if kib * 2 <= llc => "LLC",
        // A working set the size of the whole LLC spills to memory beside
        // anything else; classify ignores these rungs.
        (_, Some(llc)) if kib <= llc => "LLC edge",
        (_, Some(_)) => "memory",
        _ => "-",
    }
}

/// The workload's jobs, or the named ones in the order named.
fn select_jobs<'w>(w: &'w Workload, names: &[String], path: &Path) -> anyhow::Result<Vec<&'w Job>> {
    if w.jobs.is_empty() {
        return Err(bad_input(format!("{}: no jobs to probe", path.display())));
    }
    if names.is_empty() {
        return Ok(w.jobs.iter().collect());
    }
    let mut out: Vec<&Job> = Vec::new();
    for n in names {
        let job = w.jobs.iter().find(|j| &j.name == n).ok_or_else(|| {
            let known: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
            bad_input(format!("{}: no job `{n}`; its jobs are: {}", path.display(), known.join(", ")))
        })?;
        if !out.iter().any(|j| j.name == job.name) {
            out.push(job);
        }
    }
    Ok(out)
}

/// L2 (the instance beside CPU 0, where jobs start) and LLC sizes in KiB.
pub(crate) fn cache_sizes(node: &Node) -> (Option<u64>, Option<u64>) {
    let l2 = node
        .caches
        .iter()
        .filter(|c| c.level == 2 && c.kind != CacheKind::Instruction)
        .min_by_key(|c| c.cpus.first().copied())
        .map(|c| c.size_bytes / 1024);
    let llc = node.llc().map(|c| c.size_bytes / 1024);
    (l2, llc)
}

/// The levels to probe: the given sizes and intensities, each defaulting to
/// those of the node's ladder; intensity-major, as the default ladder is, so
/// each curve is measured in one sweep.
fn ladder(
    sizes: Option<Vec<u64>>,
    intensities: Option<Vec<f64>>,
    l2_kib: Option<u64>,
    llc_kib: Option<u64>,
) -> anyhow::Result<Vec<ProbeLevel>> {
    let default = match llc_kib {
        Some(llc) => default_ladder(l2_kib.unwrap_or(0), llc),
        None if sizes.is_some() => Vec::new(),
        None => anyhow::bail!("the LLC size of this node is unknown, so there is no default ladder; pass --sizes-kib"),
    };
    let sizes = sizes.unwrap_or_else(|| dedup(default.iter().map(|l| l.size_kib)));
    let intensities = intensities.unwrap_or_else(|| {
        let v = dedup(default.iter().map(|l| l.intensity.to_bits()));
        if v.is_empty() {
            vec![1.0, 0.5]
        } else {
            v.into_iter().map(f64::from_bits).collect()
        }
    });
    Ok(intensities
        .iter()
        .flat_map(|&intensity| sizes.iter().map(move |&size_kib| ProbeLevel { size_kib, intensity }))
        .collect())
}

fn dedup<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

fn parse_list<T>(s: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().all(|i| i.is_empty()) {
        return Err(format!("empty list; expected {what}"));
    }
    items.iter().map(|i| parse(i).ok_or_else(|| format!("`{i}` is not {what}"))).collect()
}

fn parse_sizes(s: &str) -> Result<Vec<u64>, String> {
    let v = parse_list(s, &format!("a size in KiB between 1 and {MAX_SIZE_KIB}, e.g. 256,16384"), |i| {
        i.parse::<u64>().ok().filter(|k| (1..=MAX_SIZE_KIB).contains(k))
    })?;
    Ok(dedup(v.into_iter()))
}

fn parse_intensities(s: &str) -> Result<Vec<f64>, String> {
    let v = parse_list(s, "an intensity with 0 < x <= 1, e.g. 1.0,0.5", |i| {
        i.parse::<f64>().ok().filter(|x| *x > 0.0 && *x <= 1.0)
    })?;
    Ok(dedup(v.into_iter().map(f64::to_bits)).into_iter().map(f64::from_bits).collect())
}

fn level_key(st: Stressor, setup: StressorSetup, l: &ProbeLevel) -> String {
    calibration_key(st.name(), setup.threads, &st.params(l, setup))
}

/// The stressor's work at each level for about `seconds` alone: from its
/// stored calibration at that level, calibrating (and storing) the levels
/// never calibrated on this database. A level's rate depends strongly on
/// its size and intensity (a cache-resident sweep is several times faster
/// than one from memory), so one rate for all levels would not do.
fn size_stressor(
    st: Stressor,
    setup: StressorSetup,
    levels: &[ProbeLevel],
    cpus: &[u32],
    seconds: f64,
    store: &mut Store,
    ctx: &Ctx,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let spec = cosched_model::kernel::kernel(st.name()).expect("the stressors are in the kernel catalogue");
    let have = store.calibrations()?;
    let missing: Vec<&ProbeLevel> = levels.iter().filter(|l| !have.contains_key(&level_key(st, setup, l))).collect();
    let repeats = 3;
    if !missing.is_empty() {
        ctx.step(&format!("calibrating the {} stressor at {} level(s) not yet calibrated here", st.name(), missing.len()));
    }
    let progress = ctx.progress.task("calibrate", (missing.len() * (repeats + 1)) as u64);
    for (i, level) in missing.iter().enumerate() {
        let cs = CalibrateSpec {
            kernel: spec,
            params: st.params(level, setup),
            threads: setup.threads,
            repeats,
            // Short runs suffice: the rate only sizes the stressor, and the
            // co-run re-launches whichever side ends first anyway.
            target_run_s: seconds.min(0.3),
            cpus: cpus.to_vec(),
        };
        let label = format!("{} {}", st.name(), st.label(level));
        let cal = calibrate(&cs, GIT_COMMIT, &mut |done, _| progress.set((i * (repeats + 1) + done) as u64, &label));
        let cal = match cal {
            Ok(c) => c,
            Err(e) => {
                progress.finish();
                return Err(anyhow::Error::new(e).context(format!("calibrating the stressor at {label}")));
            }
        };
        // Stored one by one, so an interrupted calibration keeps what it measured.
        store.put_calibrations(std::slice::from_ref(&cal))?;
    }
    progress.finish();
    let all = store.calibrations()?;
    Ok(levels.iter().map(|l| (level_key(st, setup, l), all[&level_key(st, setup, l)].work_for_seconds(seconds))).collect())
}

/// An error that happened because of Ctrl-C is the interrupt, exit 130.
fn stop_if_interrupted(e: anyhow::Error) -> anyhow::Error {
    match interrupted() {
        Some(sig) => stopped(sig, "interrupted before any probe started; nothing but finished calibrations was stored"),
        None => e,
    }
}

/// One record per repeat of a level: the job's and the stressor's solo and
/// co-run times of that same repeat.
fn records(job: &str, stressor: &str, level: &ProbeLevel, m: &PairMeasurement, readings: &[Option<Reading>]) -> Vec<ProbePointRecord> {
    (0..m.solo_s[0].len())
        .map(|r| ProbePointRecord {
            job: job.to_string(),
            stressor: stressor.to_string(),
            working_set_kib: level.size_kib,
            intensity: level.intensity,
            repeat: r as u32,
            job_solo_s: m.solo_s[0][r],
            job_corun_s: m.corun_s[0][r],
            stressor_solo_s: m.solo_s[1][r],
            stressor_corun_s: m.corun_s[1][r],
            regime: cosched_learn::campaigns::regime_of(readings.get(r).copied().flatten().as_ref()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stressors_parse_by_kernel_name() {
        assert_eq!(Stressor::parse("pipe"), Some(Stressor::Pipe));
        assert_eq!(Stressor::parse("distgen"), Some(Stressor::Distgen));
        assert_eq!(Stressor::parse("stream"), None);
    }

    #[test]
    fn only_the_one_thread_stream_stressor_is_stored_as_distgen() {
        let d = StressorSetup::default();
        assert_eq!(d.stored_name(Stressor::Distgen), "distgen");
        assert_eq!(d.stored_name(Stressor::Pipe), "pipe");
        let two = StressorSetup { threads: 2, mode: DistgenMode::Stream };
        assert_eq!(two.stored_name(Stressor::Distgen), "distgen:mode=stream,threads=2");
        let chase = StressorSetup { threads: 1, mode: DistgenMode::Chase };
        assert_eq!(chase.stored_name(Stressor::Distgen), "distgen:mode=chase,threads=1");
        assert_eq!(DistgenMode::parse("random"), Some(DistgenMode::Random));
        assert_eq!(DistgenMode::parse("list"), None);
    }

    #[test]
    fn the_stressor_mode_reaches_distgen_and_its_calibration_key() {
        let level = ProbeLevel { size_kib: 256, intensity: 1.0 };
        let stream = Stressor::Distgen.params(&level, StressorSetup::default());
        assert!(!stream.contains_key("mode"), "stream keeps the calibrations stored before modes");
        let chase = StressorSetup { threads: 2, mode: DistgenMode::Chase };
        assert_eq!(Stressor::Distgen.params(&level, chase).get("mode").map(String::as_str), Some("chase"));
        assert_ne!(level_key(Stressor::Distgen, chase, &level), level_key(Stressor::Distgen, StressorSetup::default(), &level));
    }

    #[test]
    fn lists_are_checked_and_override_the_node_ladder() {
        assert_eq!(parse_sizes("64, 65536,64").unwrap(), vec![64, 65536]);
        assert!(parse_sizes("64,abc").unwrap_err().contains("`abc`"));
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("").is_err());
        assert!(parse_intensities("1.5").is_err());
        assert!(parse_intensities("0").is_err());
        assert_eq!(parse_intensities("1.0,0.25").unwrap(), vec![1.0, 0.25]);

        let full = ladder(None, None, Some(512), Some(32768)).unwrap();
        assert_eq!(full, default_ladder(512, 32768));
        let one = ladder(Some(vec![64, 65536]), Some(vec![1.0]), Some(512), Some(32768)).unwrap();
        assert_eq!(one.len(), 2);
        let sizes_only = ladder(Some(vec![64]), None, None, None).unwrap();
        assert_eq!(sizes_only.iter().map(|l| l.intensity).collect::<Vec<_>>(), vec![1.0, 0.5]);
        assert!(ladder(None, None, Some(512), None).is_err(), "no LLC, no default sizes");
    }

    #[test]
    fn sizes_are_placed_in_the_cache_they_fit() {
        assert_eq!(fits_in(256, Some(512), Some(32768)), "L2");
        assert_eq!(fits_in(16384, Some(512), Some(32768)), "LLC");
        assert_eq!(fits_in(32768, Some(512), Some(32768)), "LLC edge");
        assert_eq!(fits_in(65536, Some(512), Some(32768)), "memory");
        assert_eq!(fits_in(65536, None, None), "-");
    }
}
