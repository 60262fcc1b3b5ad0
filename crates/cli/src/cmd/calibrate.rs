//! `cosched calibrate`: measure each kernel's solo rate and store it.

use std::collections::BTreeMap;

use clap::Args;
use cosched_measure::calibrate::{calibrate, CalibrateSpec};
use cosched_model::calibration::{job_key, resolve_work, Calibration};
use cosched_model::workload::{Amount, Program, Workload};
use cosched_model::kernel::{kernel, kernel_names, KernelSpec, KERNELS};
use cosched_report::{fmt_ci_auto, si, table};
use super::common::{load_workload, parse_cpus, DbArgs, GIT_COMMIT};
use crate::exit::bad_input;
use crate::progress::Progress;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Kernels to calibrate (repeatable); default: every kernel.
    #[arg(long = "kernel", value_name = "NAME", conflicts_with = "workload")]
    pub kernels: Vec<String>,
    /// Calibrate exactly the kernel configurations (kernel, parameters,
    /// threads) of this workload's jobs, each pinned to as many CPUs as the
    /// job has cores, and show each job's resolved work.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<std::path::PathBuf>,
    /// Timed runs per kernel, after one warm-up run that sizes the work.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Target length of each timed run, in seconds.
    #[arg(long, default_value_t = 0.5, value_name = "S")]
    pub run_seconds: f64,
    /// Threads per kernel (only for kernels that take threads).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// CPUs to pin the runs to, e.g. `0` or `0-1`.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: CalibrateArgs) -> anyhow::Result<()> {
    if let Some(w) = &a.workload {
        return run_workload(w, &a);
    }
    let specs = select(&a.kernels)?;
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.run_seconds > 0.0 && a.run_seconds.is_finite()) {
        return Err(bad_input("--run-seconds must be a positive number of seconds"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    // Fail on an unusable database before spending a minute measuring.
    let mut store = a.db.open()?;
    let cals = calibrate_kernels(&specs, a.threads, a.repeats, a.run_seconds, &cpus)?;
    store.put_calibrations(&cals)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cals)?);
    } else {
        println!("{}", render(&cals));
        println!("stored in {}", store.path().display());
    }
    Ok(())
}

fn run_workload(path: &std::path::Path, a: &CalibrateArgs) -> anyhow::Result<()> {
    let w = load_workload(path)?;
    if a.repeats == 0 || !(a.run_seconds > 0.0) {
        return Err(bad_input("--repeats must be >= 1 and --run-seconds > 0"));
    }
    let mut store = a.db.open()?;
    let cals = calibrate_jobs(&w, a.repeats, a.run_seconds, |_| true)?;
    store.put_calibrations(&cals)?;
    let all = store.calibrations()?;
    let rows: Vec<Vec<String>> = w
        .jobs
        .iter()
        .map(|j| {
            let work = match resolve_work(j, &all) {
                Ok(Some(n)) => n.to_string(),
                Ok(None) => "(its own)".into(),
                Err(e) => e,
            };
            let asked = match j.amount {
                Amount::Seconds(s) => format!("{s} s"),
                Amount::Work(n) => format!("work {n}"),
                Amount::Intrinsic => "command".into(),
            };
            vec![j.name.clone(), job_key(j).unwrap_or_else(|| j.program_key()), asked, work]
        })
        .collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cals)?);
    } else {
        println!("{}\n", render(&cals));
        println!("{}", table(&["job", "configuration", "asked", "work"], &rows));
        println!("stored in {}", store.path().display());
    }
    Ok(())
}

/// Calibrates each distinct kernel configuration (kernel, parameters,
/// threads) of the workload's jobs that `wanted(key)` selects, each pinned to
/// as many CPUs as its first job has cores.
pub fn calibrate_jobs(
    w: &Workload,
    repeats: usize,
    run_seconds: f64,
    wanted: impl Fn(&str) -> bool,
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
    let progress = Progress::new("calibrate", (todo.len() * per) as u64);
    let mut cals = Vec::new();
    for (i, (cs, job)) in todo.values().enumerate() {
        let cal = calibrate(cs, GIT_COMMIT, &mut |done, _| {
            progress.set((i * per + done) as u64, job);
        })?;
        cals.push(cal);
    }
    progress.finish();
    Ok(cals)
}

/// Calibrates, and stores, what the workload's `seconds` jobs need and the
/// store lacks, so measuring verbs work on a fresh database.
pub fn calibrate_missing(w: &Workload, store: &mut cosched_store::Store) -> anyhow::Result<()> {
    let have = store.calibrations()?;
    let needed = |key: &str| {
        !have.contains_key(key)
            && w.jobs.iter().any(|j| matches!(j.amount, Amount::Seconds(_)) && job_key(j).as_deref() == Some(key))
    };
    let missing = w.jobs.iter().filter_map(job_key).filter(|k| needed(k)).count();
    if missing == 0 {
        return Ok(());
    }
    crate::progress::step("calibrating the kernel configurations this workload sizes by `seconds`");
    let cals = calibrate_jobs(w, 3, 0.3, needed)?;
    store.put_calibrations(&cals)?;
    Ok(())
}

/// Kernels named on the command line, or all.
pub fn select(names: &[String]) -> anyhow::Result<Vec<&'static KernelSpec>> {
    if names.is_empty() {
        return Ok(KERNELS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            kernel(n).ok_or_else(|| bad_input(format!("unknown kernel `{n}`; known kernels: {}", kernel_names())))
        })
        .collect()
}

/// Calibrates each kernel at its default parameters, with progress.
pub fn calibrate_kernels(
    specs: &[&'static KernelSpec],
    threads: u32,
    repeats: usize,
    run_seconds: f64,
    cpus: &[u32],
) -> anyhow::Result<Vec<Calibration>> {
    let per = repeats + 1;
    let progress = Progress::new("calibrate", (specs.len() * per) as u64);
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let t = if spec.threaded { threads } else { 1 };
        let params = spec
            .resolve_params(&BTreeMap::new())
            .map_err(anyhow::Error::msg)?;
        let cs = CalibrateSpec {
            kernel: spec,
            params,
            threads: t,
            repeats,
            target_run_s: run_seconds,
            cpus: cpus.to_vec(),
        };
        let cal = calibrate(&cs, GIT_COMMIT, &mut |done, _| {
            progress.set((i * per + done) as u64, spec.name);
        })?;
        out.push(cal);
    }
    progress.finish();
    Ok(out)
}

pub fn render(cals: &[Calibration]) -> String {
    let rows: Vec<Vec<String>> = cals
        .iter()
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
        .collect();
    table(
        &["kernel", "unit", "work/run", "units/s median [95% CI]", "spread", "n", "figure"],
        &rows,
    )
}
