//! `cosched calibrate`: measure each kernel's solo rate and store it.

use std::collections::BTreeMap;

use clap::Args;
use cosched_measure::calibrate::{calibrate, CalibrateSpec};
use cosched_model::calibration::Calibration;
use cosched_model::kernel::{kernel, kernel_names, KernelSpec, KERNELS};
use cosched_report::{fmt_ci, si, table};
use cosched_store::Calibrations;

use super::common::{parse_cpus, DataArgs, GIT_COMMIT};
use crate::exit::bad_input;
use crate::progress::Progress;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Kernels to calibrate (repeatable); default: every kernel.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
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
    pub data: DataArgs,
}

pub fn run(a: CalibrateArgs) -> anyhow::Result<()> {
    let specs = select(&a.kernels)?;
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.run_seconds > 0.0 && a.run_seconds.is_finite()) {
        return Err(bad_input("--run-seconds must be a positive number of seconds"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let store = Calibrations::in_dir(&a.data.dir());
    // Fail on a corrupt store before spending a minute measuring.
    store.load()?;
    let cals = calibrate_kernels(&specs, a.threads, a.repeats, a.run_seconds, &cpus)?;
    store.put_all(cals.clone())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cals)?);
    } else {
        println!("{}", render(&cals));
        println!("stored in {}", store.path().display());
    }
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
                c.figure.as_ref().map(|(n, s)| format!("{n} {}", fmt_ci(s, 0))).unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &["kernel", "unit", "work/run", "units/s median [95% CI]", "spread", "n", "figure"],
        &rows,
    )
}
