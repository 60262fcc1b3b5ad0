//! `cosched calibrate`: each kernel's solo rate on this node, stored; and
//! the calibration of what a workload's `seconds` jobs need, which every
//! measuring verb runs first.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_measure::calibrate::{calibrate as measure_rate, CalibrateSpec};
use cosched_model::calibration::{job_key, resolve_work, Calibration};
use cosched_model::kernel::{kernel, kernel_names, KernelSpec, KERNELS};
use cosched_model::workload::{Amount, Program, Workload};
use cosched_report::{fmt_ci_auto, si, table};

use crate::common::{db_path, load_workload, open_store, parse_cpus, Ctx, GIT_COMMIT};
use crate::error::bad_input;
use crate::render::{Doc, Render};

/// Kernels at their defaults, or a workload's kernel configurations.
#[derive(Debug, Clone)]
pub struct CalibrateRequest {
    /// Kernels to calibrate; empty: every kernel. Ignored with `workload`.
    pub kernels: Vec<String>,
    /// Calibrate exactly this workload's kernel configurations.
    pub workload: Option<PathBuf>,
    pub repeats: usize,
    pub run_seconds: f64,
    pub threads: u32,
    /// CPU list the kernel runs are pinned to.
    pub cpus: String,
    pub db: Option<PathBuf>,
}

/// A workload job's work as calibration resolves it.
#[derive(Debug, Clone)]
pub struct JobWork {
    pub job: String,
    pub configuration: String,
    /// `2 s`, `work 100` or `command`.
    pub asked: String,
    /// The work units, `(its own)` for a command, or why it is unresolved.
    pub work: String,
}

/// `cosched calibrate`; `--json` is the array of calibrations.
#[derive(Debug)]
pub struct CalibrateReport {
    /// What was measured (and stored).
    pub calibrations: Vec<Calibration>,
    /// With a workload: each job's resolved work.
    pub jobs: Option<Vec<JobWork>>,
    pub db: PathBuf,
}

impl serde::Serialize for CalibrateReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.calibrations.serialize(s)
    }
}

impl Render for CalibrateReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        d.table(&head(&self.calibrations), rows(&self.calibrations));
        if let Some(jobs) = &self.jobs {
            d.line("");
            let rows = jobs.iter().map(|j| vec![j.job.clone(), j.configuration.clone(), j.asked.clone(), j.work.clone()]).collect();
            d.table(&["job", "configuration", "asked", "work"], rows);
        }
        d.line(format!("stored in {}", self.db.display()));
        d
    }
}

pub fn calibrate(req: &CalibrateRequest, ctx: &Ctx) -> anyhow::Result<CalibrateReport> {
    if let Some(path) = &req.workload {
        let w = load_workload(path)?;
        if req.repeats == 0 || req.run_seconds.is_nan() || req.run_seconds <= 0.0 {
            return Err(bad_input("--repeats must be >= 1 and --run-seconds > 0"));
        }
        let _lock = crate::lock::take("calibrate", None)?;
        let mut store = open_store(&db_path(req.db.as_deref()))?;
        let cals = calibrate_jobs(&w, req.repeats, req.run_seconds, |_| true, ctx)?;
        store.put_calibrations(&cals)?;
        let all = store.calibrations()?;
        let jobs = w
            .jobs
            .iter()
            .map(|j| JobWork {
                job: j.name.clone(),
                configuration: job_key(j).unwrap_or_else(|| j.program_key()),
                asked: match j.amount {
                    Amount::Seconds(s) => format!("{s} s"),
                    Amount::Work(n) => format!("work {n}"),
                    Amount::Intrinsic => "command".into(),
                },
                work: match resolve_work(j, &all) {
                    Ok(Some(n)) => n.to_string(),
                    Ok(None) => "(its own)".into(),
                    Err(e) => e,
                },
            })
            .collect();
        return Ok(CalibrateReport { calibrations: cals, jobs: Some(jobs), db: store.path().to_path_buf() });
    }
    let specs = select(&req.kernels)?;
    if req.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(req.run_seconds > 0.0 && req.run_seconds.is_finite()) {
        return Err(bad_input("--run-seconds must be a positive number of seconds"));
    }
    let cpus = parse_cpus(&req.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    // Fail on an unusable database before spending a minute measuring.
    let _lock = crate::lock::take("calibrate", None)?;
    let mut store = open_store(&db_path(req.db.as_deref()))?;
    let cals = calibrate_kernels(&specs, req.threads, req.repeats, req.run_seconds, &cpus, ctx)?;
    store.put_calibrations(&cals)?;
    Ok(CalibrateReport { calibrations: cals, jobs: None, db: store.path().to_path_buf() })
}

/// Calibrates each distinct kernel configuration (kernel, parameters,
/// threads) of the workload's jobs that `wanted(key)` selects, each pinned to
/// as many CPUs as its first job has cores.
pub(crate) fn calibrate_jobs(
    w: &Workload,
    repeats: usize,
    run_seconds: f64,
    wanted: impl Fn(&str) -> bool,
    ctx: &Ctx,
) -> anyhow::Result<Vec<Calibration>> {
    let mut todo: BTreeMap<String, (CalibrateSpec, String)> = BTreeMap::new();
    for job in &w.jobs {
        let (Some(key), Some(spec), Program::Kernel { params, .. }) = (job_key(job), job.kernel(), &job.program) else {
            continue;
        };
        if !wanted(&key) {
            continue;
        }
        todo.entry(key).or_insert_with(|| {
            let cs = CalibrateSpec {
                kernel: spec,
                params: params.clone(),
                threads: job.threads,
                repeats,
                target_run_s: run_seconds,
                cpus: (0..job.cores).collect(),
            };
            (cs, job.name.clone())
        });
    }
    let per = repeats + 1;
    let progress = ctx.progress.task("calibrate", (todo.len() * per) as u64);
    let mut cals = Vec::new();
    for (i, (cs, job)) in todo.values().enumerate() {
        let cal = measure_rate(cs, GIT_COMMIT, &mut |done, _| {
            progress.set((i * per + done) as u64, job);
        })?;
        cals.push(cal);
    }
    progress.finish();
    Ok(cals)
}

/// Calibrates, and stores, what the workload's `seconds` jobs need and the
/// store lacks, so measuring verbs work on a fresh database.
pub(crate) fn calibrate_missing(w: &Workload, store: &mut cosched_store::Store, ctx: &Ctx) -> anyhow::Result<()> {
    let have = store.calibrations()?;
    let needed = |key: &str| {
        !have.contains_key(key)
            && w.jobs.iter().any(|j| matches!(j.amount, Amount::Seconds(_)) && job_key(j).as_deref() == Some(key))
    };
    let missing = w.jobs.iter().filter_map(job_key).filter(|k| needed(k)).count();
    if missing == 0 {
        return Ok(());
    }
    ctx.step("calibrating the kernel configurations this workload sizes by `seconds`");
    let cals = calibrate_jobs(w, 3, 0.3, needed, ctx)?;
    store.put_calibrations(&cals)?;
    Ok(())
}

/// Kernels named, or all; an unknown name is bad input.
pub(crate) fn select(names: &[String]) -> anyhow::Result<Vec<&'static KernelSpec>> {
    if names.is_empty() {
        return Ok(KERNELS.iter().collect());
    }
    names
        .iter()
        .map(|n| kernel(n).ok_or_else(|| bad_input(format!("unknown kernel `{n}`; known kernels: {}", kernel_names()))))
        .collect()
}

/// Calibrates each kernel at its default parameters, with progress.
pub(crate) fn calibrate_kernels(
    specs: &[&'static KernelSpec],
    threads: u32,
    repeats: usize,
    run_seconds: f64,
    cpus: &[u32],
    ctx: &Ctx,
) -> anyhow::Result<Vec<Calibration>> {
    let per = repeats + 1;
    let progress = ctx.progress.task("calibrate", (specs.len() * per) as u64);
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let t = if spec.threaded { threads } else { 1 };
        let params = spec.resolve_params(&BTreeMap::new()).map_err(anyhow::Error::msg)?;
        let cs = CalibrateSpec { kernel: spec, params, threads: t, repeats, target_run_s: run_seconds, cpus: cpus.to_vec() };
        let cal = measure_rate(&cs, GIT_COMMIT, &mut |done, _| {
            progress.set((i * per + done) as u64, spec.name);
        })?;
        out.push(cal);
    }
    progress.finish();
    Ok(out)
}

/// The calibration table's header: the rate's interval is a 95 % CI from
/// six repeats on, a range below.
pub(crate) fn head(cals: &[Calibration]) -> [String; 7] {
    let rate = format!("units/s median [{}]", cosched_report::interval_name(cals.iter().map(|c| c.rate.n)));
    ["kernel", "unit", "work/run", &rate, "spread", "n", "figure"].map(str::to_string)
}

/// The calibration table's rows (for a terminal table or an HTML one).
pub(crate) fn rows(cals: &[Calibration]) -> Vec<Vec<String>> {
    cals.iter()
        .map(|c| {
            vec![
                c.kernel.clone(),
                c.unit.clone(),
                c.work_per_run.to_string(),
                format!("{} [{}, {}]", si(c.rate.median), si(c.rate.ci_lo), si(c.rate.ci_hi)),
                format!("{:.1}%", 100.0 * c.rate.rel_spread()),
                c.rate.n.to_string(),
                c.figure.as_ref().map(|(n, s)| format!("{n} {}", fmt_ci_auto(s))).unwrap_or_default(),
            ]
        })
        .collect()
}

/// The calibration table, as `calibrate`, `bench kernels` and the demo show it.
pub fn render(cals: &[Calibration]) -> String {
    let head = head(cals);
    table(&head.each_ref().map(String::as_str), &rows(cals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::provenance::Provenance;
    use cosched_model::stats::Summary;

    fn cal(rates: &[f64]) -> Calibration {
        let provenance = Provenance {
            hostname: "h".into(),
            cpu_model: "c".into(),
            cores: 1,
            kernel_version: "k".into(),
            cosched_version: "v".into(),
            git_commit: "g".into(),
            started_unix: 0,
            command: "t".into(),
            seed: None,
        };
        Calibration {
            key: "k".into(),
            kernel: "compute".into(),
            params: BTreeMap::new(),
            threads: 1,
            unit: "flop".into(),
            work_per_run: 10,
            rate: Summary::of(rates).unwrap(),
            figure: None,
            provenance,
        }
    }

    #[test]
    fn the_rate_interval_is_called_a_range_below_six_repeats_and_json_is_the_calibrations() {
        let r = CalibrateReport { calibrations: vec![cal(&[1e3, 2e3, 3e3])], jobs: None, db: PathBuf::from("x.db") };
        let text = r.doc().text();
        let head: Vec<&str> = text.lines().next().unwrap().split('|').map(str::trim).collect();
        assert_eq!(head[1..8], ["kernel", "unit", "work/run", "units/s median [range]", "spread", "n", "figure"], "{text}");
        assert!(text.contains("2.000k [1.000k, 3.000k]") && text.ends_with("stored in x.db\n"), "{text}");
        let six = CalibrateReport { calibrations: vec![cal(&[1.0; 6])], jobs: None, db: PathBuf::from("x.db") };
        assert!(six.doc().text().contains("units/s median [95% CI]"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
        assert_eq!(json[0]["kernel"], "compute");
    }
}
