//! `cosched simulate --swf`: a real cluster's trace replayed under exclusive
//! EASY (or FCFS) and under node sharing decided by registered policies,
//! each job's slowdown beside its co-runners taken from a measured matrix;
//! the gain of sharing over exclusive nodes; the HTML report with CDF plots,
//! Batsim `jobs.csv` and SWF of every schedule.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cosched_cluster::metrics::{self, Dist, Figures};
use cosched_cluster::workload::{self, Keep, Mapping, Skipped};
use cosched_cluster::{output, swf, ClusterJob, Config, Scheduler};
use cosched_model::metrics::JobTimes;
use cosched_model::trace::Trace;
use cosched_report::cdf::{cdf_plot, Series};
use cosched_report::html::Page;
use cosched_sched::registry::resolve_spec;
use cosched_sched::scenario::Scenario;
use cosched_sched::{Policy, ProgramTable};

use crate::common::{create_dir, db_path, file_safe, write_file, Ctx, UsedCampaign};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use crate::simulate::ScenarioMeasurements;

/// The slowdowns used when none are given: `examples/scenarios/few-bad.toml`,
/// five programs measured on this project's node (its comments say when).
pub const DEFAULT_SLOWDOWNS: &str = "examples/scenarios/few-bad.toml";
const DEFAULT_SLOWDOWNS_TEXT: &str = include_str!("../../../examples/scenarios/few-bad.toml");

/// Sharing policies run when none are named.
pub const DEFAULT_POLICIES: [&str; 3] = ["noplan", "conflict-aware:threshold=50", "no-twins"];

#[derive(Debug, Clone)]
pub struct ClusterRequest {
    pub swf: PathBuf,
    /// Nodes and cores per node; default: the trace header's MaxNodes and MaxProcs / MaxNodes.
    pub nodes: Option<usize>,
    pub cores: Option<u32>,
    /// Sharing policies (NAME or NAME:KEY=VALUE,...); empty: [`DEFAULT_POLICIES`].
    pub policies: Vec<String>,
    pub scheduler: String,
    /// exe, user or random.
    pub mapping: String,
    pub seed: u64,
    /// A scenario TOML whose programs and [slowdown] the jobs are mapped onto.
    pub slowdowns: Option<PathBuf>,
    pub keep: Keep,
    /// Inter-arrival times divided by this (> 1 raises the load), the
    /// archive's usual way to study a log at another load.
    pub compress: f64,
    pub depth: usize,
    pub probe: usize,
    pub report: Option<PathBuf>,
    pub db: Option<PathBuf>,
}

/// One schedule's figures: the baseline (exclusive nodes) or a sharing policy.
#[derive(Debug, serde::Serialize)]
pub struct ScheduleFigures {
    pub label: String,
    pub figures: Figures,
    /// Core-seconds the jobs held (every core of a node held whole) over
    /// the cluster's between the first start and the last finish: what
    /// evalys' mean utilisation of the schedule's jobs.csv gives, where
    /// `figures.utilization` counts solo work from the first submission.
    pub held_utilization: f64,
    /// How long the simulation took, wall seconds.
    pub seconds: f64,
}

/// `cosched simulate --swf`: the replay's settings and each schedule's
/// figures; `--json` and the report's `summary.json` are this value.
#[derive(Debug, serde::Serialize)]
pub struct ClusterReport {
    pub trace: String,
    pub nodes: usize,
    pub cores: u32,
    pub scheduler: Scheduler,
    pub compress: f64,
    pub backfill_depth: usize,
    pub probe: usize,
    pub mapping: String,
    pub seed: u64,
    pub jobs: usize,
    pub skipped: Skipped,
    pub programs: Vec<String>,
    pub slowdowns: String,
    pub campaigns: Vec<UsedCampaign>,
    /// Bounded slowdown's tau, seconds.
    pub tau_s: f64,
    /// Baseline first.
    pub outcomes: Vec<ScheduleFigures>,
    /// The report's page, with `--report`.
    #[serde(skip)]
    pub index: Option<PathBuf>,
}

impl Render for ClusterReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        let s = &self.skipped;
        d.line(format!("{}: {} jobs on {} nodes x {} cores, inter-arrival times / {}", self.trace, self.jobs, self.nodes, self.cores, self.compress));
        d.line(format!("left out: {} failed, {} cancelled, {} without run time, {} without processors\n", s.failed, s.cancelled, s.no_run_time, s.no_procs));
        d.table(&FIGURES_HEAD, self.outcomes.iter().map(row).collect()).line("");
        d.line("Node sharing against exclusive nodes (negative wait and slowdown are gains):");
        d.table(&GAIN_HEAD, gain_rows(&self.outcomes)).line("");
        d.line(format!("slowdowns: {}; programs: {}", self.slowdowns, self.programs.join(", ")));
        for line in crate::common::describe_campaigns(&self.campaigns) {
            d.line(format!("from {line}"));
        }
        if let Some(index) = &self.index {
            d.line(format!("report: {}", index.display()));
        }
        d
    }
}

pub const FIGURES_HEAD: [&str; 9] = [
    "schedule",
    "wait s, mean / median",
    "bounded slowdown, mean / median",
    "utilization: solo work / held",
    "makespan s",
    "jobs shared",
    "co-location slowdown of shared jobs, median / p90 / max",
    "mean response s",
    "simulated in s",
];

pub const GAIN_HEAD: [&str; 6] = ["policy vs exclusive", "mean wait", "mean bounded slowdown", "utilization", "makespan", "mean co-location slowdown"];

/// Which records of status failed / cancelled a replay keeps.
pub fn keep(failed: bool, cancelled: bool) -> Keep {
    Keep { failed, cancelled }
}

fn resolve_cluster(swf: &swf::Swf, nodes: Option<usize>, cores: Option<u32>) -> Result<(usize, u32), String> {
    let (mn, mp) = (swf.header.max_nodes, swf.header.max_procs);
    let need = "give --nodes and --cores";
    match (nodes, cores) {
        (Some(n), Some(c)) => Ok((n, c)),
        (Some(n), None) => match mp {
            Some(p) if p % n as u64 == 0 => Ok((n, (p / n as u64) as u32)),
            _ => Err(format!("the header's MaxProcs ({mp:?}) is not a multiple of --nodes {n}; {need}")),
        },
        (None, Some(c)) => match mp {
            Some(p) if p % c as u64 == 0 => Ok(((p / c as u64) as usize, c)),
            _ => Err(format!("the header's MaxProcs ({mp:?}) is not a multiple of --cores {c}; {need}")),
        },
        (None, None) => match (mn, mp) {
            (Some(n), Some(p)) if n > 0 && p % n == 0 => Ok((n as usize, (p / n) as u32)),
            (Some(n), None) if n > 0 => Ok((n as usize, 1)),
            _ => Err(format!("the header has no usable MaxNodes / MaxProcs ({mn:?} / {mp:?}); {need}")),
        },
    }
}

pub fn simulate_swf(a: &ClusterRequest, ctx: &Ctx) -> anyhow::Result<ClusterReport> {
    let scheduler = Scheduler::parse(&a.scheduler).map_err(|e| bad_input(format!("--scheduler: {e}")))?;
    let mapping = Mapping::parse(&a.mapping).map_err(|e| bad_input(format!("--map: {e}")))?;
    if !(a.compress.is_finite() && a.compress > 0.0) {
        return Err(bad_input("--compress must be a positive number (2 = arrivals twice as dense)"));
    }
    if a.depth == 0 || a.probe == 0 {
        return Err(bad_input("--backfill-depth and --probe must be at least 1"));
    }
    let specs = if a.policies.is_empty() { DEFAULT_POLICIES.iter().map(|s| s.to_string()).collect() } else { a.policies.clone() };
    let specs = specs.iter().map(|s| resolve_spec(s).map_err(|e| bad_input(format!("--policy: {e}")))).collect::<anyhow::Result<Vec<_>>>()?;

    let db = db_path(a.db.as_deref());
    let measured = ScenarioMeasurements::new(&db);
    let scenario = match &a.slowdowns {
        Some(p) => Scenario::load_with(p, Some(&measured)),
        None => Scenario::parse(DEFAULT_SLOWDOWNS_TEXT, DEFAULT_SLOWDOWNS),
    }
    .map_err(|e| bad_input(e.to_string()))?;
    let programs: Vec<String> = scenario.programs.iter().map(|p| p.name.clone()).collect();
    let loads = scenario.programs.iter().map(|p| p.host_load).collect::<Option<Vec<f64>>>();
    let slowdowns = format!("{} ({})", a.slowdowns.as_deref().map_or(DEFAULT_SLOWDOWNS.into(), |p| p.display().to_string()), scenario.origin);

    ctx.step(&format!("reading {}", a.swf.display()));
    let trace = swf::read(&a.swf).map_err(|e| bad_input(e.to_string()))?;
    let (nodes, cores) = resolve_cluster(&trace, a.nodes, a.cores).map_err(|e| bad_input(format!("{}: {e}", a.swf.display())))?;
    if nodes == 0 || cores == 0 {
        return Err(bad_input("--nodes and --cores must be at least 1"));
    }
    let file = a.swf.display().to_string();
    let (mut jobs, skipped) = workload::jobs(&trace, &file, a.keep, nodes as u64 * cores as u64, mapping, programs.len(), a.seed)
        .map_err(|e| bad_input(e.to_string()))?;
    for j in &mut jobs {
        j.submit /= a.compress;
    }
    if jobs.is_empty() {
        return Err(bad_input(format!("{file}: no job to simulate ({} records, {} left out)", trace.records.len(), skipped.total())));
    }
    let table = ProgramTable::new(jobs.iter().map(|j| j.program).collect(), scenario.slowdown.clone(), loads).map_err(anyhow::Error::msg)?;
    let cfg = Config { depth: a.depth, probe: a.probe, ..Config::new(nodes, cores, scheduler) };

    let base_label = format!("exclusive {}", scheduler.as_str().to_uppercase());
    let mut runs: Vec<Traced> = Vec::new();
    let run = |label: String, policy: Option<&mut dyn Policy>| -> anyhow::Result<Traced> {
        let task = ctx.progress.task(&label, jobs.len() as u64);
        let t = Instant::now();
        let s = cosched_cluster::simulate(&jobs, &programs, &cfg, &table, &table, policy, &mut |done| task.set(done as u64, ""))?;
        task.finish();
        let seconds = t.elapsed().as_secs_f64();
        let trace = s.trace(&jobs, &programs);
        let times = cosched_cluster::trace::times(&trace, jobs.len())?;
        Ok(Traced { label, trace, times, shared: s.shared, seconds })
    };
    runs.push(run(base_label, None)?);
    for spec in &specs {
        let label = format!("{} + {}", scheduler.as_str().to_uppercase(), spec.label());
        let mut p = spec.build().map_err(bad_input)?;
        runs.push(run(label, Some(p.as_mut()))?);
    }

    let outcomes: Vec<ScheduleFigures> = runs
        .iter()
        .map(|r| ScheduleFigures {
            label: r.label.clone(),
            figures: metrics::figures(&jobs, &r.times, &r.shared, nodes, cores).expect("jobs is not empty"),
            held_utilization: held_utilization(r, &cfg),
            seconds: r.seconds,
        })
        .collect();
    let mut report = ClusterReport {
        trace: file,
        nodes,
        cores,
        scheduler,
        compress: a.compress,
        backfill_depth: a.depth,
        probe: a.probe,
        mapping: mapping.as_str().to_string(),
        seed: a.seed,
        jobs: jobs.len(),
        skipped,
        programs,
        slowdowns,
        campaigns: measured.used(),
        tau_s: metrics::TAU,
        outcomes,
        index: None,
    };
    if let Some(dir) = &a.report {
        let sim = Simulated { jobs: &jobs, cfg: &cfg, runs: &runs };
        write_report(dir, &a.swf, &sim, &report)?;
        report.index = Some(dir.join("index.html"));
    }
    Ok(report)
}

/// One schedule as its trace (`cluster::trace`): what the figures, the
/// plots and the files read.
struct Traced {
    label: String,
    trace: Trace,
    /// Each job's arrive, start and finish, read once from the trace.
    times: Vec<JobTimes>,
    /// Which jobs shared a node (the engine's `Schedule::shared`).
    shared: Vec<bool>,
    /// The simulation's own time.
    seconds: f64,
}

/// [`ScheduleFigures::held_utilization`] of a schedule.
fn held_utilization(r: &Traced, cfg: &Config) -> f64 {
    let first = r.times.iter().map(|t| t.start).fold(f64::INFINITY, f64::min);
    let last = r.times.iter().map(|t| t.finish).fold(f64::NEG_INFINITY, f64::max);
    let held: f64 = r.trace.jobs.iter().zip(&r.times).map(|(j, t)| output::held_cores(j, cfg) as f64 * (t.finish - t.start)).sum();
    let span = (last - first) * cfg.nodes as f64 * cfg.cores as f64;
    if span > 0.0 {
        held / span
    } else {
        0.0
    }
}

fn row(o: &ScheduleFigures) -> Vec<String> {
    let f = &o.figures;
    vec![
        o.label.clone(),
        format!("{:.0} / {:.0}", f.wait.mean, f.wait.median),
        format!("{:.2} / {:.2}", f.bsld.mean, f.bsld.median),
        format!("{:.1} % / {:.1} %", f.utilization * 100.0, o.held_utilization * 100.0),
        format!("{:.0}", f.makespan),
        format!("{} ({:.1} %)", f.shared_jobs, 100.0 * f.shared_jobs as f64 / f.jobs as f64),
        f.shared_slowdown.map_or("-".into(), |d: Dist| format!("{:.3} / {:.3} / {:.3}", d.median, d.p90, d.max)),
        format!("{:.0}", f.response.mean),
        format!("{:.2}", o.seconds),
    ]
}

fn rel(v: f64, base: f64) -> String {
    if base == 0.0 {
        return if v == 0.0 { "0 %".into() } else { "-".into() };
    }
    format!("{:+.1} %", (v / base - 1.0) * 100.0)
}

/// [`GAIN_HEAD`] rows: each policy against the baseline, the first schedule.
fn gain_rows(outcomes: &[ScheduleFigures]) -> Vec<Vec<String>> {
    outcomes[1..].iter().map(|o| gain_row(&o.label, &outcomes[0].figures, &o.figures)).collect()
}

fn gain_row(label: &str, b: &Figures, f: &Figures) -> Vec<String> {
    vec![
        label.to_string(),
        rel(f.wait.mean, b.wait.mean),
        rel(f.bsld.mean, b.bsld.mean),
        format!("{:+.1} points", (f.utilization - b.utilization) * 100.0),
        rel(f.makespan, b.makespan),
        rel(f.slowdown.mean, b.slowdown.mean),
    ]
}

/// What a cluster simulation ran and found, as the report shows it.
struct Simulated<'a> {
    jobs: &'a [ClusterJob],
    cfg: &'a Config,
    /// Each policy's schedule, in the order run.
    runs: &'a [Traced],
}

fn write_report(dir: &Path, trace: &Path, sim: &Simulated, report: &ClusterReport) -> anyhow::Result<()> {
    let Simulated { jobs, cfg, runs } = *sim;
    let outcomes = &report.outcomes;
    create_dir(dir)?;
    let mut page = Page::new(&format!("Cluster simulation of {}", trace.display()));
    page.note(&format!(
        "{} jobs on {} nodes of {} cores (inter-arrival times / {}); {} with backfill depth {}. Slowdowns beside co-runners: {}. Programs mapped by {} (seed {}). \
         Bounded slowdown uses tau = {} s and the job's run time alone, so interference counts as waiting does.",
        jobs.len(),
        cfg.nodes,
        cfg.cores,
        report.compress,
        cfg.scheduler.as_str().to_uppercase(),
        cfg.depth,
        report.slowdowns,
        report.mapping,
        report.seed,
        metrics::TAU
    ));
    let rows: Vec<Vec<String>> = outcomes.iter().map(row).collect();
    page.section("Schedules").table(&FIGURES_HEAD, &rows);
    let gains = gain_rows(outcomes);
    page.section("Node sharing against exclusive nodes")
        .paragraph("Relative change of each figure against the exclusive schedule (negative wait and slowdown are gains); utilization in percentage points.")
        .table(&GAIN_HEAD, &gains);
    let per: Vec<metrics::PerJob> = runs.iter().map(|r| metrics::per_job(jobs, &r.times)).collect();
    type Pick = fn(&metrics::PerJob, &Traced) -> Vec<f64>;
    let plots: [(&str, &str, &str, bool, Pick); 3] = [
        ("cdf-wait", "Wait time", "wait, s (log; 0 drawn at 1 s)", true, |p, _| p.wait.clone()),
        ("cdf-bsld", "Bounded slowdown (tau = 10 s)", "bounded slowdown (log)", true, |p, _| p.bsld.clone()),
        ("cdf-colocation", "Co-location slowdown of jobs that shared a node", "run time beside co-runners / run time alone", false, |p, s| {
            p.slowdown.iter().zip(&s.shared).filter(|(_, &sh)| sh).map(|(&v, _)| v).collect()
        }),
    ];
    for (file, title, x_label, log, pick) in plots {
        let cdfs: Vec<(String, Vec<(f64, f64)>)> = runs
            .iter()
            .zip(&per)
            .map(|(r, p)| (r.label.clone(), metrics::cdf(&pick(p, r), 400)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        let series: Vec<Series> = cdfs.iter().map(|(l, c)| Series { label: l, points: c }).collect();
        let svg = cdf_plot(title, x_label, &series, log, 1.0);
        write_file(&dir.join(format!("{file}.svg")), &svg)?;
        page.section(title).svg(&svg);
    }
    // Batsim names a workload, not a path.
    let workload_name = trace.file_name().map_or_else(|| trace.display().to_string(), |f| f.to_string_lossy().into_owned());
    let files = page.section("Files");
    let note = format!("cosched simulate --swf {}", trace.display());
    for Traced { label, trace, .. } in runs {
        let stem = file_safe(label);
        write_file(&dir.join(format!("jobs-{stem}.csv")), &output::jobs_csv(jobs, trace, cfg, &workload_name)?)?;
        write_file(&dir.join(format!("{stem}.swf")), &output::swf(jobs, trace, cfg, &format!("{note}: {label}"))?)?;
        files.link(&format!("jobs-{stem}.csv"), &format!("jobs-{stem}.csv: {label}, Batsim's jobs.csv (evalys reads it)"));
        files.link(&format!("{stem}.swf"), &format!("{stem}.swf: {label}, the schedule as SWF"));
    }
    files.link("summary.json", "summary.json: every figure, as --json prints it");
    write_file(&dir.join("summary.json"), &serde_json::to_string_pretty(report)?)?;
    write_file(&dir.join("index.html"), &page.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(max_nodes: Option<u64>, max_procs: Option<u64>) -> swf::Swf {
        swf::Swf { header: swf::Header { max_nodes, max_procs, ..Default::default() }, records: Vec::new() }
    }

    #[test]
    fn the_cluster_comes_from_the_flags_else_the_header() {
        assert_eq!(resolve_cluster(&header(Some(128), Some(256)), None, None), Ok((128, 2)));
        assert_eq!(resolve_cluster(&header(Some(128), Some(128)), Some(32), None), Ok((32, 4)));
        assert_eq!(resolve_cluster(&header(None, Some(128)), None, Some(8)), Ok((16, 8)));
        assert_eq!(resolve_cluster(&header(None, None), Some(3), Some(5)), Ok((3, 5)));
        assert!(resolve_cluster(&header(None, None), None, None).unwrap_err().contains("give --nodes and --cores"));
        assert!(resolve_cluster(&header(Some(10), Some(128)), Some(3), None).is_err());
    }
}
