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

use super::files::{write_report, Tables};
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
        let tables = Tables { runs: &run_rows, summary: &summary_rows, rates: &rate_rows, jobs: &job_rows, mechanisms: &mechanisms, held_apart: &held_apart };
        write_report(page, dir, s, &views, &tables)?;
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
        "slowdown_source": s.source_note,
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
                let t = solo.refs.times(i);
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
