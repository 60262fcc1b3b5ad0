//! `cosched bench run`: what the node runner costs a job beyond the fork
//! and exec of the job itself (issue 42: 40 jobs of `true` took 284 ms
//! under `cosched run` against 49 ms for a `taskset` loop).
//!
//! Each repeat times, in an order that rotates from repeat to repeat so a
//! busy node's drift falls on each alike: a bare loop spawning `true` N
//! times from a thread pinned to the CPU (the child inherits the mask: the
//! pinning the runner gives a job, without cgroups), the issue's loop of
//! `taskset -c CPU true`, and one whole `cosched run --policy exclusive`
//! process of this binary over N jobs of `true` on a one-core pool (CPU 0),
//! its own store in a temporary directory (made by a run before the
//! repeats, so no repeat pays for creating the schema). The run's `--json`
//! gives each job's start and end on its clock and the wall-clock time of
//! the clock's zero, which places them against this process's clock: the
//! lead (process start to the first job's start), the makespan (first
//! start to last end) and the tail (last end to the process's exit).

use std::path::Path;
use std::time::Instant;

use cosched_model::stats::Summary;
use cosched_report::fmt_spread;

use crate::common::Ctx;
use crate::error::bad_input;
use crate::render::{Doc, Render};

/// The CPU every loop and the run's one-core pool use (a workload's first
/// pool starts at CPU 0).
pub const BENCH_CPU: u32 = 0;

#[derive(Debug, Clone)]
pub struct RunBenchRequest {
    /// Jobs of `true` per loop and per run.
    pub jobs: usize,
    pub repeats: usize,
}

/// One repeat's figures, seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunBenchRepeat {
    /// The bare loop: spawn `true` pinned, wait, N times.
    pub bare_s: f64,
    /// The loop of `taskset -c CPU true`; `None` without `taskset`.
    pub taskset_s: Option<f64>,
    /// The whole `cosched run` process, spawn to exit.
    pub cosched_s: f64,
    /// (cosched - bare) / N.
    pub per_job_s: f64,
    /// Process start to the first job's start.
    pub lead_s: f64,
    /// First start to last end, on the run's clock.
    pub makespan_s: f64,
    /// The last job's end to the process's exit.
    pub tail_s: f64,
}

/// Medians (min-max) over the repeats, seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunBenchSummary {
    pub bare: Summary,
    pub taskset: Option<Summary>,
    pub cosched: Summary,
    pub per_job: Summary,
    pub lead: Summary,
    pub makespan: Summary,
    pub tail: Summary,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RunBenchReport {
    pub jobs: usize,
    pub cpu: u32,
    pub repeats: Vec<RunBenchRepeat>,
    pub summary: RunBenchSummary,
    /// Issue 42's bars, seconds: per-job overhead and tail.
    pub aim_per_job_s: f64,
    pub aim_tail_s: f64,
    /// The node's load average (1, 5, 15 min) at the end: figures on a
    /// busy node mean little.
    pub load_average: Option<[f64; 3]>,
}

/// Issue 42's bars for 40 jobs of `true`.
const AIM_PER_JOB_S: f64 = 0.002;
const AIM_TAIL_S: f64 = 0.020;

pub fn run(a: &RunBenchRequest, ctx: &Ctx) -> anyhow::Result<RunBenchReport> {
    if a.jobs == 0 || a.repeats == 0 {
        return Err(bad_input("--jobs and --repeats must be at least 1"));
    }
    let lock = crate::lock::take("bench run", None)?;
    cosched_measure::launch::install_interrupt_handler();
    let dir = tempfile::tempdir()?;
    let wl = dir.path().join("true.toml");
    std::fs::write(&wl, workload(a.jobs))?;
    let exe = std::env::current_exe()?;
    let taskset = which("taskset");
    ctx.step(&format!(
        "{} jobs of `true` on CPU {BENCH_CPU}: a pinned spawn loop{}, and `cosched run --policy exclusive` (a run first makes its store); {} repeats, order rotating",
        a.jobs,
        if taskset { ", a `taskset` loop" } else { " (no `taskset` here)" },
        a.repeats
    ));
    cosched_run(&exe, &wl, dir.path())?;
    let kinds = if taskset { 3 } else { 2 };
    let bar = ctx.progress.task("bench run", (a.repeats * kinds) as u64);
    let mut repeats = Vec::new();
    for r in 0..a.repeats {
        let (mut bare, mut ts, mut run) = (None, None, None);
        for k in 0..kinds {
            match (k + r) % kinds {
                0 => bare = Some(cosched_measure::launch::pinned_loop(&["true".to_string()], a.jobs, BENCH_CPU)?),
                1 => run = Some(cosched_run(&exe, &wl, dir.path())?),
                _ => ts = Some(taskset_loop(a.jobs, BENCH_CPU)?),
            }
            if let Some(sig) = cosched_measure::launch::interrupted() {
                return Err(crate::error::stopped(sig, "interrupted; nothing was stored"));
            }
            bar.set((r * kinds + k + 1) as u64, "");
        }
        let (bare, run) = (bare.expect("each kind runs once"), run.expect("each kind runs once"));
        repeats.push(RunBenchRepeat {
            bare_s: bare,
            taskset_s: ts,
            cosched_s: run.whole_s,
            per_job_s: (run.whole_s - bare) / a.jobs as f64,
            lead_s: run.lead_s,
            makespan_s: run.makespan_s,
            tail_s: run.tail_s,
        });
    }
    bar.finish();
    drop(lock);
    let of = |f: fn(&RunBenchRepeat) -> f64| Summary::of(&repeats.iter().map(f).collect::<Vec<_>>()).expect("repeats >= 1, finite");
    let ts: Vec<f64> = repeats.iter().filter_map(|r| r.taskset_s).collect();
    let summary = RunBenchSummary {
        bare: of(|r| r.bare_s),
        taskset: Summary::of(&ts),
        cosched: of(|r| r.cosched_s),
        per_job: of(|r| r.per_job_s),
        lead: of(|r| r.lead_s),
        makespan: of(|r| r.makespan_s),
        tail: of(|r| r.tail_s),
    };
    Ok(RunBenchReport {
        jobs: a.jobs,
        cpu: BENCH_CPU,
        repeats,
        summary,
        aim_per_job_s: AIM_PER_JOB_S,
        aim_tail_s: AIM_TAIL_S,
        load_average: cosched_measure::provenance::load_average().ok(),
    })
}

/// N jobs of `true` on a one-core pool.
fn workload(n: usize) -> String {
    let mut w = String::from("name = \"bench-run\"\n[[pools]]\nname = \"host\"\ncores = 1\n");
    for i in 0..n {
        w.push_str(&format!("[[jobs]]\nname = \"j{i}\"\ncommand = [\"true\"]\n"));
    }
    w
}

/// Whether `prog` is an executable on `$PATH`.
fn which(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// `n` runs of `taskset -c CPU true`: issue 42's loop. Seconds.
fn taskset_loop(n: usize, cpu: u32) -> anyhow::Result<f64> {
    let c = cpu.to_string();
    let t = Instant::now();
    for _ in 0..n {
        let st = std::process::Command::new("taskset").args(["-c", &c, "true"]).status()?;
        anyhow::ensure!(st.success(), "`taskset -c {c} true` exited {st}");
    }
    Ok(t.elapsed().as_secs_f64())
}

/// One whole `cosched run` as its process saw it and as this one did.
struct RunTimes {
    whole_s: f64,
    lead_s: f64,
    makespan_s: f64,
    tail_s: f64,
}

/// One `cosched run --policy exclusive --solo stored --json` of `wl`, its
/// store, lock and logs in `dir`.
fn cosched_run(exe: &Path, wl: &Path, dir: &Path) -> anyhow::Result<RunTimes> {
    let wall0 = super::execute::unix_now_f64();
    let t = Instant::now();
    let out = std::process::Command::new(exe)
        .args(["run", "--solo", "stored", "--policy", "exclusive", "--json", "--workload"])
        .arg(wl)
        .arg("--db")
        .arg(dir.join("bench.db"))
        .arg("--lock")
        .arg(dir.join("run.lock"))
        .env("COSCHED_DATA_DIR", dir)
        .stdin(std::process::Stdio::null())
        .output()?;
    let whole_s = t.elapsed().as_secs_f64();
    let wall1 = wall0 + whole_s;
    if !out.status.success() {
        anyhow::bail!("cosched run: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("(no message)"));
    }
    let doc: RunDoc = serde_json::from_slice(&out.stdout).map_err(|e| anyhow::anyhow!("cosched run --json: {e}"))?;
    times_of(&doc, wall0, wall1, whole_s)
}

/// The parts of `cosched run --json` this bench reads (serde skips the rest).
#[derive(serde::Deserialize)]
struct RunDoc {
    runs: Vec<RunPart>,
}

#[derive(serde::Deserialize)]
struct RunPart {
    clock_zero_unix: Option<f64>,
    jobs: Vec<JobPart>,
}

#[derive(serde::Deserialize)]
struct JobPart {
    start_s: Option<f64>,
    end: Option<EndPart>,
}

#[derive(serde::Deserialize)]
struct EndPart {
    end_s: Option<f64>,
}

/// The run's figures from its `--json` document, placed against this
/// process's wall clock: it started the run at `wall0` and saw it exit at
/// `wall1`.
fn times_of(doc: &RunDoc, wall0: f64, wall1: f64, whole_s: f64) -> anyhow::Result<RunTimes> {
    let run = doc.runs.last().ok_or_else(|| anyhow::anyhow!("cosched run --json: no run"))?;
    let zero = run.clock_zero_unix.ok_or_else(|| anyhow::anyhow!("cosched run --json: no clock_zero_unix"))?;
    let first = run.jobs.iter().filter_map(|j| j.start_s).fold(f64::INFINITY, f64::min);
    let last = run.jobs.iter().filter_map(|j| j.end.as_ref()?.end_s).fold(f64::NEG_INFINITY, f64::max);
    if !(first.is_finite() && last.is_finite()) {
        anyhow::bail!("cosched run --json: no job started and ended");
    }
    Ok(RunTimes { whole_s, lead_s: zero + first - wall0, makespan_s: last - first, tail_s: wall1 - (zero + last) })
}

impl Render for RunBenchReport {
    fn doc(&self) -> Doc {
        let ms = |x: f64| format!("{:.1}", x * 1e3);
        let sp = |s: &Summary| {
            let m = Summary { median: s.median * 1e3, min: s.min * 1e3, max: s.max * 1e3, ci_lo: s.ci_lo * 1e3, ci_hi: s.ci_hi * 1e3, n: s.n };
            fmt_spread(&m, 1)
        };
        let head = ["repeat", "bare ms", "taskset ms", "cosched ms", "per job ms", "lead ms", "makespan ms", "tail ms"];
        let mut rows: Vec<Vec<String>> = self
            .repeats
            .iter()
            .enumerate()
            .map(|(k, r)| {
                vec![
                    (k + 1).to_string(),
                    ms(r.bare_s),
                    r.taskset_s.map_or("-".into(), ms),
                    ms(r.cosched_s),
                    format!("{:.2}", r.per_job_s * 1e3),
                    ms(r.lead_s),
                    ms(r.makespan_s),
                    ms(r.tail_s),
                ]
            })
            .collect();
        let s = &self.summary;
        rows.push(vec![
            "median (min-max, n)".into(),
            sp(&s.bare),
            s.taskset.as_ref().map_or("-".into(), sp),
            sp(&s.cosched),
            sp(&s.per_job),
            sp(&s.lead),
            sp(&s.makespan),
            sp(&s.tail),
        ]);
        let mut d = Doc::new();
        d.table(&head, rows);
        d.line(format!(
            "{} jobs of `true` on CPU {}. bare: spawn and wait from a thread pinned to the CPU; taskset: `taskset -c {} true`; \
cosched: the whole `cosched run --policy exclusive --solo stored --json` process; per job: (cosched - bare) / {}; \
lead: process start to the first job's start; makespan: first start to last end; tail: last end to the process's exit.",
            self.jobs, self.cpu, self.cpu, self.jobs
        ));
        d.line(format!(
            "aim (issue 42): per job under {:.0} ms (median {:.2} ms), tail under {:.0} ms (median {:.1} ms)",
            self.aim_per_job_s * 1e3,
            s.per_job.median * 1e3,
            self.aim_tail_s * 1e3,
            s.tail.median * 1e3
        ));
        if let Some(l) = self.load_average {
            d.line(format!("load average (1, 5, 15 min) at the end: {:.2} {:.2} {:.2}", l[0], l[1], l[2]));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_workload_has_n_jobs_of_true_on_one_core() {
        use cosched_model::workload::{parse_workload, Program};
        let w = parse_workload(&workload(3), "bench.toml", Some(2)).unwrap();
        assert_eq!(w.jobs.len(), 3);
        assert_eq!(w.pools.len(), 1);
        assert_eq!(w.pools[0].cores, Some(1));
        assert!(w.jobs.iter().all(|j| j.program == Program::Command { argv: vec!["true".into()] }), "{:?}", w.jobs);
    }

    #[test]
    fn lead_makespan_and_tail_are_placed_by_the_runs_clock_zero() {
        // The run started at wall 100.0, its clock's zero is wall 100.05,
        // jobs ran 0.01-0.02 and 0.02-0.04 on its clock, it exited at 100.1.
        let v: RunDoc = serde_json::from_str(
            r#"{"runs": [{"clock_zero_unix": 100.05, "jobs": [
                {"start_s": 0.01, "end": {"end_s": 0.02}}, {"start_s": 0.02, "end": {"end_s": 0.04}}]}]}"#,
        )
        .unwrap();
        let t = times_of(&v, 100.0, 100.1, 0.1).unwrap();
        assert!((t.lead_s - 0.06).abs() < 1e-9, "{}", t.lead_s);
        assert!((t.makespan_s - 0.03).abs() < 1e-9, "{}", t.makespan_s);
        assert!((t.tail_s - 0.01).abs() < 1e-9, "{}", t.tail_s);
        let none: RunDoc = serde_json::from_str(r#"{"runs": [{"jobs": []}]}"#).unwrap();
        assert!(times_of(&none, 0.0, 1.0, 1.0).is_err());
    }
}
