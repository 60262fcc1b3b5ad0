//! `cosched calibrate`: measure each kernel's solo rate and store it.

use clap::Args;
use cosched_app::calibrate::{calibrate, CalibrateRequest};

use super::common::{ctx, emit, DbArgs, JsonArgs};

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
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: CalibrateArgs) -> anyhow::Result<()> {
    let req = CalibrateRequest {
        kernels: a.kernels,
        workload: a.workload,
        repeats: a.repeats,
        run_seconds: a.run_seconds,
        threads: a.threads,
        cpus: a.cpus,
        db: a.db.db,
    };
    emit(&calibrate(&req, &ctx())?, a.json.json)
}
