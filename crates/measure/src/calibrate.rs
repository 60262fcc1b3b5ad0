//! `cosched calibrate`: each kernel's solo rate on this node.
//!
//! A warm-up run sizes the work so each timed run lasts about
//! `target_run_s` (short runs are dominated by start-up and timer noise, long
//! ones make calibration slow); then `repeats` runs give a median rate with a
//! confidence interval. Rates use the kernel's own work-phase time, so process
//! start-up and allocation are not counted as work.

use std::collections::BTreeMap;

use cosched_model::calibration::{calibration_key, Calibration};
use cosched_model::kernel::KernelSpec;
use cosched_model::stats::Summary;

use crate::kernel::{kernel_argv, run_kernel, KernelRunError};
use crate::provenance;

/// What to calibrate and how.
#[derive(Debug, Clone)]
pub struct CalibrateSpec {
    pub kernel: &'static KernelSpec,
    pub params: BTreeMap<String, String>,
    pub threads: u32,
    pub repeats: usize,
    pub target_run_s: f64,
    pub cpus: Vec<u32>,
}

/// Calibrates one kernel configuration. `on_run(done, total)` is called after
/// each run (warm-up included) for progress display.
pub fn calibrate(
    spec: &CalibrateSpec,
    git_commit: &str,
    on_run: &mut dyn FnMut(usize, usize),
) -> Result<Calibration, KernelRunError> {
    let total = spec.repeats + 1;
    let warm_argv = kernel_argv(spec.kernel.name, spec.kernel.calibration_work, spec.threads, &spec.params);
    let (_, warm) = run_kernel(&warm_argv, &spec.cpus)?;
    on_run(1, total);
    let work = if warm.rate.is_finite() && warm.rate > 0.0 {
        ((warm.rate * spec.target_run_s).round() as u64).max(1)
    } else {
        spec.kernel.calibration_work
    };
    let argv = kernel_argv(spec.kernel.name, work, spec.threads, &spec.params);
    let prov = provenance::here(&argv.join(" "), git_commit, None);
    let mut rates = Vec::with_capacity(spec.repeats);
    let mut figures = Vec::new();
    let mut figure_name = None;
    for i in 0..spec.repeats {
        let (_, r) = run_kernel(&argv, &spec.cpus)?;
        rates.push(r.rate);
        if let Some(f) = r.figure {
            figure_name = Some(f.name);
            figures.push(f.value);
        }
        on_run(i + 2, total);
    }
    let rate = Summary::of(&rates).expect("repeats >= 1 and finite rates");
    let figure = figure_name.and_then(|n| Summary::of(&figures).map(|s| (n, s)));
    Ok(Calibration {
        key: calibration_key(spec.kernel.name, spec.threads, &spec.params),
        kernel: spec.kernel.name.to_string(),
        params: spec.params.clone(),
        threads: spec.threads,
        unit: spec.kernel.unit.to_string(),
        work_per_run: work,
        rate,
        figure,
        provenance: prov,
    })
}
