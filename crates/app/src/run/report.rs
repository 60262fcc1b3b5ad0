//! The series scored and shown: tables for people, one JSON document, the
//! ParaStation paper's djsb figures, and the typed figures of every run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_model::djsb::{djsb, Djsb, DjsbJob, DjsbParams};
use cosched_model::metrics::{increase_rate, job_times, Metrics};
use cosched_model::stats::Summary;
use cosched_model::trace::Trace;
use cosched_model::workload::Workload;
use cosched_report::html::Page;
use cosched_sched::{Platform, SimJob};
use cosched_store::{ExecRunId, JournalEntry, RunJobRecord, RunRecord, Store};

use cosched_measure::cgroup::Mechanism;

use super::files::{write_report, Tables};
use crate::render::{Doc, Render};
use super::journal::{final_attempts, suspensions, trace_of};
use super::solo::{SoloInfo, SOLO_PASS};
use super::{RunRequest, Series};


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

/// The jobs of one run (the table of [`JOB_HEAD`]).
#[derive(Debug)]
pub struct RunJobs {
    pub policy: String,
    /// Zero-based.
    pub repeat: u32,
    pub run: i64,
    pub jobs: Vec<JobLine>,
}

/// One job's final attempt in a run, as its table shows it.
#[derive(Debug, Clone)]
pub struct JobLine {
    pub job: String,
    /// `ok`, `failed 3`, `running`...
    pub status: String,
    pub cpus: Vec<u32>,
    pub mems: Vec<u32>,
    pub start_s: f64,
    pub end_s: Option<f64>,
    /// Time spent suspended, when it was.
    pub suspended_s: Option<f64>,
    pub beside: Vec<String>,
    pub predicted: f64,
    pub measured: Option<f64>,
    pub solo_s: Option<f64>,
    /// Which solo reference the slowdown divides by.
    pub solo_reference: String,
}

impl JobLine {
    /// The cells of [`JOB_HEAD`].
    fn cells(&self) -> Vec<String> {
        vec![
            self.job.clone(),
            self.status.clone(),
            cosched_model::topology::format_cpulist(&self.cpus),
            if self.mems.is_empty() { "-".into() } else { cosched_model::topology::format_cpulist(&self.mems) },
            format!("{:.2}", self.start_s),
            f2(self.end_s),
            f2(self.suspended_s),
            if self.beside.is_empty() { "-".into() } else { self.beside.join(",") },
            format!("{:.2}", self.predicted),
            f2(self.measured),
            f2(self.solo_s),
            self.solo_reference.clone(),
        ]
    }
}

fn f2(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.2}"))
}

/// One policy's figures over its repeats (`--json`'s `summary`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PolicySummary {
    pub policy: String,
    /// Each of [`FIGURES`]: median, spread and n over the repeats.
    pub figures: BTreeMap<String, Option<Summary>>,
}

/// One job's measured slowdown under each policy of the series.
#[derive(Debug, Clone)]
pub struct JobSlowdowns {
    pub job: String,
    /// In the order of [`RunReport::labels`].
    pub slowdowns: Vec<Option<Summary>>,
}

/// A run as stored, with what was scored from it (`--json`'s `runs`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScoredRun {
    pub run: RunRecord,
    pub metrics: Option<Metrics>,
    pub worst_measured_slowdown: Option<f64>,
    pub jobs: Vec<RunJobRecord>,
    pub policy_events: Vec<JournalEntry>,
    /// The wall-clock time (Unix seconds) of the run's clock zero, for a
    /// run this invocation executed: a job's `start_s` plus it is when the
    /// job started by the system's clock.
    pub clock_zero_unix: Option<f64>,
}

/// The CPU 0-1 round trip read before a repeat's solo pass.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SoloPassTrip {
    pub repeat: u32,
    pub round_trip_ns: f64,
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

/// A series of runs: `--json` is its `Serialize`, the text its [`Render`].
#[derive(Debug, serde::Serialize)]
pub struct RunReport {
    pub workload: String,
    /// The policy's label, as runs record it.
    #[serde(skip)]
    pub main: String,
    pub baselines: Vec<String>,
    /// The policy's label, then the baselines'.
    #[serde(skip)]
    pub labels: Vec<String>,
    /// Isolation mechanisms in use: what each does and why.
    pub mechanisms: Vec<Mechanism>,
    pub slowdown_source: String,
    /// Which solo references slowdowns divide by.
    pub solo: super::SoloMode,
    /// Every run with its metrics and jobs as stored.
    pub runs: Vec<ScoredRun>,
    /// Per policy, each of [`FIGURES`] over the repeats.
    pub summary: Vec<PolicySummary>,
    /// Per baseline, each of [`FIGURES`]: the policy's increase rate
    /// against it, repeat by repeat.
    pub increase_rates: BTreeMap<String, BTreeMap<String, Option<Summary>>>,
    /// Does a job alone measure 1.00: per job, policy and cache regime, run
    /// times against the median of the solo passes in that regime; only
    /// runs in one regime throughout.
    pub per_regime: Vec<crate::run::steady::RegimeCheck>,
    /// Per policy label (the policy, then the baselines): the pairs it held
    /// apart over its runs, `(waiting job, running job, times)`, most
    /// frequent first ([`crate::held`]).
    pub held_apart: Vec<(String, crate::held::HeldPairs)>,
    /// The CPU 0-1 round trip read before each solo pass this invocation ran.
    pub solo_passes: Vec<SoloPassTrip>,
    /// The ParaStation paper's djsb figures of each run (solo passes aside), when
    /// the workload has sessions arriving after the first: the first job
    /// is the simulation, the later ones analysis sessions
    /// (`model::djsb`), solo times from the series' passes.
    pub djsb: Vec<DjsbRun>,
    /// The jobs of the policy's last repeat.
    #[serde(skip)]
    pub last_main: Option<RunJobs>,
    /// Per job, its measured slowdown under each of `labels`.
    #[serde(skip)]
    pub per_job: Vec<JobSlowdowns>,
    /// The report's index.html, when one was written.
    #[serde(skip)]
    pub index: Option<PathBuf>,
    /// Each job of this invocation's runs that did not end ok: which, in
    /// which run, its status and the last line of its output. Not empty
    /// means exit code 1.
    #[serde(skip)]
    pub not_ok: Vec<String>,
    /// Every run's figures, typed (solo passes included).
    #[serde(skip)]
    pub figures: Vec<RunFigures>,
    /// The CPU 0-1 round trip (ns) read before each solo pass this
    /// invocation ran, by repeat.
    #[serde(skip)]
    pub pass_round_trip: BTreeMap<u32, f64>,
    /// Each workload job's median solo time over the series' solo passes
    /// (`None` without a pass that ran it ok).
    #[serde(skip)]
    pub solo_medians: Vec<Option<f64>>,
}

fn run_rows(figures: &[RunFigures]) -> Vec<Vec<String>> {
    figures
        .iter()
        .map(|f| {
            vec![
                f.policy.clone(),
                (f.repeat + 1).to_string(),
                f2(f.makespan),
                f2(f.avg_turnaround),
                f2(f.worst_turnaround),
                f2(f.worst_slowdown),
                f.failed.to_string(),
                f.run.to_string(),
            ]
        })
        .collect()
}

fn spread(s: Option<&Option<Summary>>) -> String {
    s.and_then(Option::as_ref).map_or("-".into(), |s| cosched_report::fmt_spread(s, 2))
}

fn summary_rows(summary: &[PolicySummary]) -> Vec<Vec<String>> {
    summary.iter().map(|p| std::iter::once(p.policy.clone()).chain(FIGURES.iter().map(|f| spread(p.figures.get(*f)))).collect()).collect()
}

fn rate_rows(baselines: &[String], rates: &BTreeMap<String, BTreeMap<String, Option<Summary>>>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for b in baselines {
        for f in FIGURES {
            let s = rates.get(b).and_then(|r| r.get(f)).and_then(Option::as_ref);
            let cell = s.map_or("-".into(), |s| format!("{:+.1} % ({:+.1} .. {:+.1} %, n={})", s.median * 100.0, s.min * 100.0, s.max * 100.0, s.n));
            rows.push(vec![b.clone(), f.to_string(), cell]);
        }
    }
    rows
}

impl Render for RunReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        if let Some(v) = &self.last_main {
            d.line(format!("Jobs of {} repeat {} (run {}):", v.policy, v.repeat + 1, v.run));
            d.table(&JOB_HEAD, v.jobs.iter().map(JobLine::cells).collect()).line("");
        }
        d.line("Runs:").table(&RUN_HEAD, run_rows(&self.figures)).line("");
        d.line("Measured slowdown per job, median (min-max, n repeats):");
        let mut h = vec!["job"];
        h.extend(self.labels.iter().map(String::as_str));
        let per_job = self.per_job.iter().map(|j| std::iter::once(j.job.clone()).chain(j.slowdowns.iter().map(|s| spread(Some(s)))).collect()).collect();
        d.table(&h, per_job).line("");
        // In one regime the table would repeat the one above (issue 40).
        match regimes_of(&self.per_regime).as_slice() {
            [] => {}
            [one] => {
                d.line(format!("Cache regime: {one} throughout (runs and solo passes whose CPU 0-1 readings before and after agree)."));
                d.line("");
            }
            _ => {
                d.line("The same per cache regime: run time / median of the solo passes in that regime (runs and passes whose CPU 0-1 readings before and after agree):");
                d.table(&crate::run::steady::HEAD, crate::run::steady::rows(&self.per_regime)).line("");
            }
        }
        d.line("Per policy, median (min-max, n repeats):");
        let mut h = vec!["policy"];
        h.extend(FIGURES);
        d.table(&h, summary_rows(&self.summary)).line("");
        if !self.baselines.is_empty() {
            d.line(format!("Increase rate of {} vs each baseline, repeat by repeat (negative = better):", self.main));
            d.table(&RATE_HEAD, rate_rows(&self.baselines, &self.increase_rates)).line("");
        }
        d.line("Pairs each policy held apart (a waiting job that fit was passed over, or its cores idled, while these ran):");
        for (label, pairs) in &self.held_apart {
            d.line(format!("  {label}: {}", crate::held::describe(label, pairs, 6)));
        }
        d.line("");
        if !self.djsb.is_empty() {
            d.line("djsb (ParaStation; the first job is the simulation, later ones analysis sessions; C = 10 s):");
            let rows = self
                .djsb
                .iter()
                .map(|r| {
                    let f = &r.figures;
                    let v = [f.e_simulation, f.e_analysis, f.w_analysis, f.dynamicity].map(|x| format!("{x:.2}"));
                    [vec![r.policy.clone(), (r.repeat + 1).to_string()], v.to_vec()].concat()
                })
                .collect();
            d.table(&["policy", "repeat", "E simulation", "E analysis", "W analysis", "D"], rows).line("");
        }
        d.line("slowdown = run time / solo reference (kernels: their work phase), time suspended left out; predicted = the policy's source before the start.");
        if let Some(index) = &self.index {
            d.line(format!("report: {}", index.display()));
        }
        d
    }
}

/// The cache regimes `checks` span, in order of first appearance.
fn regimes_of(checks: &[crate::run::steady::RegimeCheck]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for c in checks {
        if !out.contains(&c.regime) {
            out.push(c.regime);
        }
    }
    out
}

/// One run's djsb figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DjsbRun {
    pub policy: String,
    pub repeat: u32,
    pub run: i64,
    pub figures: Djsb,
}

pub(super) struct RunView {
    pub(super) rec: RunRecord,
    pub(super) trace: Trace,
    pub(super) metrics: Option<Metrics>,
    pub(super) jobs: Vec<RunJobRecord>,
    pub(super) failed: usize,
    pub(super) worst_measured: Option<f64>,
    pub(super) journal: Vec<JournalEntry>,
    /// What its policy reported (Lua swaps, refused swaps, fallbacks), from
    /// the journal.
    pub(super) policy_events: Vec<cosched_store::JournalEntry>,
}

/// Scores and shows the series: every run's figures, per policy medians,
/// increase rates, per job slowdowns, the per-regime check, the pairs held
/// apart, djsb; with `--report`, the files ([`super::files`]).
pub(super) fn show(a: &RunRequest, page: &mut Page, store: &Store, s: &Series, runs: &[RunRecord], mut traces: BTreeMap<ExecRunId, Trace>, solo: &SoloInfo) -> anyhow::Result<RunReport> {
    let (w, sim, platform, main, baselines) = (s.w, &s.sim[..], &s.platform, s.main.as_str(), &s.baselines[..]);
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
    let figures_of_runs: Vec<RunFigures> = views
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
    let summary: Vec<PolicySummary> = labels
        .iter()
        .map(|l| PolicySummary {
            policy: l.clone(),
            figures: figures
                .iter()
                .map(|(name, pick)| {
                    let vals: Vec<f64> = views.iter().filter(|v| &v.rec.policy == l).filter_map(pick).collect();
                    (name.to_string(), Summary::of(&vals))
                })
                .collect(),
        })
        .collect();
    let mut increase_rates = BTreeMap::new();
    for b in baselines {
        let mut per = BTreeMap::new();
        for (name, pick) in figures {
            let mut rates = Vec::new();
            for v in views.iter().filter(|v| v.rec.policy == main) {
                let base = views.iter().find(|x| &x.rec.policy == b && x.rec.repeat == v.rec.repeat);
                if let (Some(x), Some(y)) = (pick(v), base.and_then(pick)) {
                    rates.push(increase_rate(x, y));
                }
            }
            per.insert(name.to_string(), Summary::of(&rates));
        }
        increase_rates.insert(b.clone(), per);
    }
    // Per job and policy: the median measured slowdown over the repeats,
    // the figure that says whether the solo reference times what runs time
    // (a job alone should measure 1.00).
    let per_job: Vec<JobSlowdowns> = w
        .jobs
        .iter()
        .enumerate()
        .map(|(i, job)| JobSlowdowns {
            job: job.name.clone(),
            slowdowns: labels
                .iter()
                .map(|l| {
                    let vals: Vec<f64> = views
                        .iter()
                        .filter(|v| &v.rec.policy == l)
                        .filter_map(|v| final_attempts(&v.jobs, w.jobs.len()).into_iter().find(|j| j.start.job_index as usize == i))
                        .filter_map(|j| j.end.as_ref()?.slowdown)
                        .collect();
                    Summary::of(&vals)
                })
                .collect(),
        })
        .collect();
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let regime_checks = crate::run::steady::per_regime(&crate::run::steady::load(store, runs, &super::solo::twin_of(w), SOLO_PASS)?, &names);
    let last_main = views.iter().rev().find(|v| v.rec.policy == main);
    let job_lines = |v: &RunView| -> Vec<JobLine> {
        final_attempts(&v.jobs, w.jobs.len())
            .iter()
            .map(|j| {
                let e = j.end.as_ref();
                JobLine {
                    job: j.start.job.clone(),
                    status: e.map_or("running".into(), |e| match e.status.value() {
                        Some(c) => format!("{} {c}", e.status.name()),
                        None => e.status.name().into(),
                    }),
                    cpus: j.start.cpus.clone(),
                    mems: j.start.mems.clone(),
                    start_s: j.start.start_s,
                    end_s: e.map(|e| e.end_s),
                    suspended_s: match e.map(|e| suspensions(&v.journal, &j.start.job, j.start.start_s, e.end_s)) {
                        Some(p) if !p.is_empty() => Some(p.iter().map(|(a, b)| b - a).sum::<f64>()),
                        _ => None,
                    },
                    beside: j.start.beside.clone(),
                    predicted: j.start.predicted,
                    measured: e.and_then(|e| e.slowdown),
                    solo_s: j.start.solo_s,
                    solo_reference: solo.describe(j, &v.rec),
                }
            })
            .collect()
    };
    let mechanisms = s.iso.mechanisms();
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
    let held_apart: Vec<(String, crate::held::HeldPairs)> = labels
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
        let job_rows = |v: &RunView| -> Vec<Vec<String>> { job_lines(v).iter().map(JobLine::cells).collect() };
        let (runs, summary, rates) = (run_rows(&figures_of_runs), summary_rows(&summary), rate_rows(baselines, &increase_rates));
        let tables = Tables { runs: &runs, summary: &summary, rates: &rates, jobs: &job_rows, mechanisms: &mechanisms, held_apart: &held_apart };
        write_report(page, dir, s, &views, &tables)?;
    }
    let djsb_rows = djsb_runs(w, sim, platform, &views, solo);
    Ok(RunReport {
        workload: w.name.clone(),
        main: main.to_string(),
        baselines: baselines.to_vec(),
        labels,
        mechanisms,
        slowdown_source: s.source_note.clone(),
        solo: solo.mode,
        last_main: last_main.map(|v| RunJobs { policy: v.rec.policy.clone(), repeat: v.rec.repeat, run: v.rec.id.0, jobs: job_lines(v) }),
        summary,
        increase_rates,
        per_job,
        per_regime: regime_checks,
        held_apart,
        solo_passes: solo.pass_round_trip.iter().map(|(r, ns)| SoloPassTrip { repeat: *r, round_trip_ns: *ns }).collect(),
        index: a.report.as_ref().map(|d| d.join("index.html")),
        not_ok: Vec::new(),
        figures: figures_of_runs,
        djsb: djsb_rows,
        pass_round_trip: solo.pass_round_trip.clone(),
        solo_medians: (0..w.jobs.len())
            .map(|i| {
                let t = solo.refs.times(i);
                (!t.is_empty()).then(|| cosched_model::stats::median(&t))
            })
            .collect(),
        runs: views
            .into_iter()
            .map(|v| ScoredRun { run: v.rec, metrics: v.metrics, worst_measured_slowdown: v.worst_measured, jobs: v.jobs, policy_events: v.policy_events, clock_zero_unix: None })
            .collect(),
    })
}

/// Whether the jobs have the shape the ParaStation paper's djsb scores: one
/// job arrives first, alone, and takes every core of its pool (the
/// simulation); every other job arrives later in that pool (the analysis
/// sessions). Jobs that merely arrive over time (examples/arrivals.toml)
/// are not scored as djsb (issue 40).
fn djsb_shaped(sim: &[SimJob], platform: &Platform) -> bool {
    let Some(first) = sim.iter().min_by(|a, b| a.arrival.total_cmp(&b.arrival)) else { return false };
    let whole_pool = platform.pools.get(first.pool).is_some_and(|p| p.cores == first.cores);
    sim.len() >= 2 && whole_pool && sim.iter().filter(|j| !std::ptr::eq(*j, first)).all(|j| j.arrival > first.arrival && j.pool == first.pool)
}

/// The djsb figures of every run but the solo passes, when the workload
/// has djsb's shape ([`djsb_shaped`]).
fn djsb_runs(w: &Workload, sim: &[SimJob], platform: &Platform, views: &[RunView], solo: &SoloInfo) -> Vec<DjsbRun> {
    if !djsb_shaped(sim, platform) {
        return Vec::new();
    }
    let jobs: Vec<DjsbJob> = (0..sim.len())
        .map(|j| {
            let passes = solo.refs.times(j);
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

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::regime::CacheRegime;
    use cosched_sched::PoolInfo;

    /// The simulator's view of a workload file's jobs, as a run plans them.
    fn shape(toml: &str) -> (Vec<SimJob>, Platform) {
        let w = cosched_model::workload::parse_workload(toml, "w.toml", Some(4)).unwrap();
        let pools = w.pools.iter().map(|p| PoolInfo { name: p.name.clone(), cores: p.cores.unwrap_or(4), kind: p.kind }).collect();
        let sim = w
            .jobs
            .iter()
            .map(|j| SimJob {
                name: j.name.clone(),
                arrival: j.arrival,
                solo: 1.0,
                pool: w.pools.iter().position(|p| p.name == j.pool).unwrap(),
                cores: j.cores,
                program: j.program_key(),
                variants: vec![],
            })
            .collect();
        (sim, Platform { pools })
    }

    #[test]
    fn djsb_figures_are_scored_for_the_djsb_shape_only() {
        let r = crate::djsb::DjsbRequest {
            policies: vec![],
            repeats: 1,
            simulation_s: 10.0,
            analysis_s: 2.0,
            sessions: 3,
            first_at: 1.0,
            every: 2.0,
            array_mib: 16,
            params: DjsbParams::default(),
            simulate: None,
            dir: PathBuf::new(),
            db: None,
            cgroups: "auto".into(),
            lock: None,
            resume: false,
        };
        let (sim, p) = shape(&crate::djsb::workload_toml(&r, 4));
        assert!(djsb_shaped(&sim, &p), "cosched djsb's own workload");
        let arrivals = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/arrivals.toml")).unwrap();
        let (sim, p) = shape(&arrivals);
        assert!(!djsb_shaped(&sim, &p), "jobs arriving over time, the first on one core of two");
        let two = "[[pools]]\nname = \"host\"\ncores = 2\n\
                   [[jobs]]\nname = \"a\"\ncommand = \"true\"\n\
                   [[jobs]]\nname = \"b\"\ncommand = \"true\"\n";
        let (sim, p) = shape(two);
        assert!(!djsb_shaped(&sim, &p), "two jobs at once");
        let later = two.replace("cores = 2", "cores = 1") + "arrival = 0.5\n";
        let (sim, p) = shape(&later);
        assert!(djsb_shaped(&sim, &p), "the first job on the whole pool, the second arriving while it runs");
    }

    fn check(job: &str, regime: CacheRegime) -> crate::run::steady::RegimeCheck {
        crate::run::steady::RegimeCheck {
            job: job.into(),
            policy: "noplan".into(),
            regime: regime.name(),
            passes: 2,
            solo_s: 1.0,
            slowdown: Summary::of(&[1.0, 1.02]).unwrap(),
        }
    }

    fn report(per_regime: Vec<crate::run::steady::RegimeCheck>) -> RunReport {
        RunReport {
            workload: "w".into(),
            main: "noplan".into(),
            baselines: vec![],
            labels: vec!["noplan".into()],
            mechanisms: vec![],
            slowdown_source: "measured".into(),
            solo: super::super::SoloMode::Interleaved,
            runs: vec![],
            summary: vec![],
            increase_rates: BTreeMap::new(),
            per_regime,
            held_apart: vec![],
            solo_passes: vec![],
            djsb: vec![],
            last_main: None,
            per_job: vec![JobSlowdowns { job: "a".into(), slowdowns: vec![Summary::of(&[1.0, 1.02])] }],
            index: None,
            not_ok: vec![],
            figures: vec![],
            pass_round_trip: BTreeMap::new(),
            solo_medians: vec![],
        }
    }

    #[test]
    fn a_run_in_one_cache_regime_prints_no_per_regime_table_and_no_djsb_table_without_djsb_figures() {
        let per_table = "The same per cache regime";
        let one = report(vec![check("a", CacheRegime::Shared), check("b", CacheRegime::Shared)]).doc().text();
        assert!(!one.contains(per_table), "{one}");
        assert!(one.contains("Cache regime: shared cache throughout"), "{one}");
        assert!(!one.contains("djsb"), "{one}");
        let two = report(vec![check("a", CacheRegime::Shared), check("a", CacheRegime::Apart)]).doc().text();
        assert!(two.contains(per_table) && two.contains("caches apart"), "{two}");
        let none = report(vec![]).doc().text();
        assert!(!none.contains(per_table) && !none.contains("Cache regime"), "{none}");
    }
}
