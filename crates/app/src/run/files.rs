//! The report directory's files: index.html, Gantt SVGs, the one trace
//! format per run and Batsim's jobs.csv of it, attempts.csv, runs.json and
//! what each run's policy reported.

use std::path::Path;

use cosched_measure::cgroup::Mechanism;
use cosched_report::csv_text;
use cosched_report::gantt::{gantt, Bar};
use cosched_report::html::Page;
use cosched_store::ExecRunId;

use super::journal::final_attempts;
use super::report::{RunView, JOB_HEAD, RUN_HEAD};
use super::Series;

/// The columns of the report's attempts.csv, one row per job attempt.
const ATTEMPTS_CSV_HEAD: [&str; 17] = [
    "run", "policy", "repeat", "job", "attempt", "status", "status_value", "cpus", "arrival_s", "start_s", "end_s", "predicted",
    "slowdown", "solo_s", "work_s", "beside", "mems",
];

/// Beside a run's trace: its policy's swaps, refused swaps and fallbacks.
fn policy_file(run: ExecRunId) -> String {
    format!("policy-run{}.csv", run.0)
}

/// Batsim's jobs.csv of one run, written from its trace (`model::batsim`),
/// so evalys reads a real run as it reads `simulate --swf`'s.
fn batsim_file(run: ExecRunId) -> String {
    format!("jobs-run{}.csv", run.0)
}

/// The report's trace of one run, in the one trace format (`model::trace`).
fn trace_file(run: ExecRunId) -> String {
    format!("trace-run{}.csv", run.0)
}

/// A run's job table, built by the caller.
type JobRows<'a> = dyn Fn(&RunView) -> Vec<Vec<String>> + 'a;

/// The tables of a series' report, as [`super::report::show`] built them.
pub(super) struct Tables<'a> {
    /// One row per run ([`RUN_HEAD`]).
    pub(super) runs: &'a [Vec<String>],
    pub(super) summary: &'a [Vec<String>],
    pub(super) rates: &'a [Vec<String>],
    /// A run's job table ([`JOB_HEAD`]).
    pub(super) jobs: &'a JobRows<'a>,
    pub(super) mechanisms: &'a [Mechanism],
    pub(super) held_apart: &'a [(String, crate::held::HeldPairs)],
}

/// Writes the report's files into `dir`: index.html (the page), a Gantt SVG
/// and trace per run with its Batsim jobs.csv, attempts.csv, runs.json,
/// each run's policy events.
pub(super) fn write_report(page: &mut Page, dir: &Path, s: &Series, views: &[RunView], t: &Tables) -> anyhow::Result<()> {
    let (w, source_note, cpus_of_pool) = (s.w, &s.source_note, &s.cpus_of_pool);
    let (run_head, job_head, mechanisms, held_apart) = (&RUN_HEAD, &JOB_HEAD, t.mechanisms, t.held_apart);
    let (run_rows, summary_rows, rate_rows, job_rows) = (t.runs, t.summary, t.rates, t.jobs);
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
    // Policy labels hold commas (`conflict-aware:idle=always,threshold=100`),
    // job names may hold quotes: `csv_text` quotes what needs it.
    let mut jobs_csv: Vec<Vec<String>> = Vec::new();
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
            jobs_csv.push(vec![
                v.rec.id.to_string(),
                v.rec.policy.clone(),
                v.rec.repeat.to_string(),
                j.start.job.clone(),
                j.start.attempt.to_string(),
                e.map_or("running", |e| e.status.name()).to_string(),
                e.and_then(|e| e.status.value()).map_or(String::new(), |c| c.to_string()),
                cosched_model::topology::format_cpulist(&j.start.cpus),
                j.start.arrival_s.to_string(),
                j.start.start_s.to_string(),
                o(e.map(|e| e.end_s)),
                j.start.predicted.to_string(),
                o(e.and_then(|e| e.slowdown)),
                o(j.start.solo_s),
                o(e.and_then(|e| e.work_s)),
                j.start.beside.join(" "),
                cosched_model::topology::format_cpulist(&j.start.mems),
            ]);
        }
        write(&trace_file(v.rec.id), &v.trace.to_csv())?;
        write(&batsim_file(v.rec.id), &cosched_model::batsim::jobs_csv(&v.trace, &w.name))?;
        if !v.policy_events.is_empty() {
            let rows = v.policy_events.iter().map(|e| vec![e.t_s.to_string(), v.rec.id.to_string(), e.event.clone(), e.detail.clone()]);
            write(&policy_file(v.rec.id), &csv_text(&["time", "run", "event", "detail"], rows))?;
        }
    }
    let events: Vec<Vec<String>> = views
        .iter()
        .flat_map(|v| v.policy_events.iter().map(|e| vec![v.rec.id.to_string(), format!("{:.3}", e.t_s), e.event.clone(), e.detail.clone()]))
        .collect();
    if !events.is_empty() {
        page.section("Policy swaps, refused swaps and fallbacks (Lua policies)").table(&["run", "t s", "event", "detail"], &events);
    }
    write("attempts.csv", &csv_text(&ATTEMPTS_CSV_HEAD, jobs_csv))?;
    /// One run of runs.json.
    #[derive(serde::Serialize)]
    struct RunFile<'a> {
        jobs: &'a [cosched_store::RunJobRecord],
        metrics: &'a Option<cosched_model::metrics::Metrics>,
        run: &'a cosched_store::RunRecord,
    }
    let json: Vec<RunFile> = views.iter().map(|v| RunFile { jobs: &v.jobs, metrics: &v.metrics, run: &v.rec }).collect();
    write("runs.json", &serde_json::to_string_pretty(&json)?)?;
    let data = page.section("Data").link("attempts.csv", "every job attempt of every run (CSV)");
    for v in views {
        data.link(&batsim_file(v.rec.id), &format!("run {}'s jobs in Batsim's jobs.csv layout (evalys reads it)", v.rec.id));
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
