//! Running `cosched-kernel` as a real process and reading its JSON report.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::launch::{self, Launch, ExitReport};

/// The part of a kernel's `--json` report that measurement code reads.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelReport {
    pub kernel: String,
    pub work: u64,
    pub threads: u32,
    pub unit: String,
    pub wall_s: f64,
    pub rate: f64,
    pub checksum: String,
    #[serde(default)]
    pub figure: Option<Figure>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Figure {
    pub name: String,
    pub value: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum KernelRunError {
    #[error(transparent)]
    Launch(#[from] launch::LaunchError),
    #[error("`{cmd}` failed ({exit}): {stderr}")]
    Failed { cmd: String, exit: launch::Exit, stderr: String },
    #[error("`{cmd}` printed no JSON report: {source}; stdout was: {stdout}")]
    BadReport { cmd: String, stdout: String, source: serde_json::Error },
}

/// The program that runs kernels: `$COSCHED_KERNEL`, else `cosched-kernel`
/// beside the running executable (the usual install and `target/` layout),
/// else `cosched-kernel` on the PATH.
pub fn kernel_program() -> PathBuf {
    if let Some(p) = std::env::var_os("COSCHED_KERNEL") {
        return PathBuf::from(p);
    }
    if let Ok(exe) = std::env::current_exe() {
        // Test binaries live in target/*/deps; the kernel binary one level up.
        for dir in exe.ancestors().skip(1).take(2) {
            let candidate = dir.join("cosched-kernel");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from("cosched-kernel")
}

/// Full argv for one kernel run with a JSON report.
pub fn kernel_argv(kernel: &str, work: u64, threads: u32, params: &BTreeMap<String, String>) -> Vec<String> {
    let mut argv = vec![kernel_program().to_string_lossy().into_owned()];
    argv.extend(cosched_model::kernel::kernel_args(kernel, work, threads, params));
    argv.push("--json".into());
    argv
}

/// Checks that a finished kernel succeeded and parses its report.
pub fn parse_outcome(argv: &[String], o: &ExitReport) -> Result<KernelReport, KernelRunError> {
    let cmd = argv.join(" ");
    if !o.exit.success() {
        return Err(KernelRunError::Failed { cmd, exit: o.exit, stderr: o.stderr_tail.clone() });
    }
    let line = o.stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).unwrap_or("");
    serde_json::from_str(line).map_err(|source| KernelRunError::BadReport {
        cmd,
        stdout: o.stdout.chars().take(400).collect(),
        source,
    })
}

/// Runs one kernel to completion, pinned to `cpus`.
pub fn run_kernel(argv: &[String], cpus: &[u32]) -> Result<(ExitReport, KernelReport), KernelRunError> {
    let o = launch::run(&Launch::new(argv.to_vec()).pinned(cpus.to_vec()))?;
    let r = parse_outcome(argv, &o)?;
    Ok((o, r))
}

/// The command that runs a workload job: a kernel with its work resolved
/// from `work` or from `seconds` at the calibrated rate, or the job's own
/// command. Errors name the job and what calibration is missing.
pub fn job_argv(
    job: &cosched_model::workload::Job,
    cals: &BTreeMap<String, cosched_model::calibration::Calibration>,
) -> Result<Vec<String>, String> {
    use cosched_model::workload::Program;
    match &job.program {
        Program::Command { argv } => Ok(argv.clone()),
        Program::Kernel { name, params } => {
            let work = cosched_model::calibration::resolve_work(job, cals)?.expect("kernel jobs have work");
            Ok(kernel_argv(name, work, job.threads, params))
        }
    }
}
