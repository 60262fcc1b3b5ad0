//! Fixed-work workload kernels.
//!
//! Each kernel of the catalogue (`cosched_model::kernel::KERNELS`) exerts one
//! known kind of pressure on a node and does exactly the amount of work it is
//! asked for, so that its run time alone and next to other jobs can be compared
//! (a slowdown is a ratio of times for the same work). [`run`] executes one
//! kernel in the calling process and returns a [`KernelReport`], the same
//! record the `cosched-kernel` binary prints with `--json`.
//!
//! Two numbers in a report are exact and reproducible, whatever the timing:
//! `ops`, the count of elementary operations done (linear in `work`), and
//! `checksum`, a function of the data the kernel computed (same kernel,
//! parameters, work and threads give the same checksum). The checksum is what
//! keeps the optimiser from dropping the work, and lets two runs be compared.

use std::collections::BTreeMap;

use cosched_model::kernel::KernelSpec;
use serde::{Deserialize, Serialize};

mod kernels;
pub mod progress;
mod sys;
mod util;

pub use kernels::REF_SYSCALLS_PER_MS;
pub use sys::llc_bytes;

/// A kernel-specific figure of merit (bandwidth, latency, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Name with its unit, e.g. `bandwidth_mb_s` (MB = 1e6 bytes, as STREAM).
    pub name: String,
    pub value: f64,
}

/// What one kernel run did; printed as one JSON line by `cosched-kernel --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelReport {
    pub kernel: String,
    /// Units of work done.
    pub work: u64,
    pub threads: u32,
    /// Every parameter with defaults filled in, after resolution (e.g. the
    /// `ws_kib = 0` of `cache` becomes the size actually used).
    pub params: BTreeMap<String, String>,
    /// What one unit of work is (from the catalogue).
    pub unit: String,
    /// Seconds of the work phase only.
    pub wall_s: f64,
    /// Seconds spent allocating and initialising before the work phase.
    pub setup_s: f64,
    /// `work / wall_s`, units per second (0 when no time elapsed).
    pub rate: f64,
    /// Exact count of elementary operations done; `ops(2N) == 2 * ops(N)`.
    pub ops: u64,
    /// What `ops` counts: `bytes`, `flops`, `syscalls`, `loads`, ...
    pub ops_unit: String,
    pub figure: Option<Figure>,
    /// 16 hex digits, a deterministic function of the computed data.
    pub checksum: String,
    pub pid: u32,
}

/// Why a kernel could not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The call itself is wrong (parameter, thread count): exit code 2.
    #[error("{0}")]
    Usage(String),
    /// An operating-system call failed while doing the work.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The work failed for another reason (child process died, data corrupted).
    #[error("{0}")]
    Failed(String),
    /// SIGINT or SIGTERM arrived; the kernel cleaned up and stopped.
    #[error("interrupted by signal {0}; temporary files were removed")]
    Interrupted(i32),
}

impl KernelError {
    /// Exit code of `cosched-kernel` for this error: 2 bad usage, 128 + signal
    /// when interrupted, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            KernelError::Usage(_) => 2,
            KernelError::Interrupted(sig) => 128 + sig,
            KernelError::Io { .. } | KernelError::Failed(_) => 1,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        KernelError::Io { context: context.into(), source }
    }
}

/// Runs `work` units of kernel `spec` on `threads` threads, in this process.
///
/// `params` holds the parameters given by the caller (catalogue names, values
/// in command-line form); missing ones take their catalogue defaults.
pub fn run(
    spec: &KernelSpec,
    work: u64,
    threads: u32,
    params: &BTreeMap<String, String>,
) -> Result<KernelReport, KernelError> {
    let resolved = spec.resolve_params(params).map_err(KernelError::Usage)?;
    check_threads(spec, threads)?;
    let out = kernels::dispatch(spec, work, threads, &resolved)?;
    let mut params = resolved;
    params.extend(out.resolved);
    let rate = if out.wall_s > 0.0 { work as f64 / out.wall_s } else { 0.0 };
    Ok(KernelReport {
        kernel: spec.name.to_string(),
        work,
        threads,
        params,
        unit: spec.unit.to_string(),
        wall_s: out.wall_s,
        setup_s: out.setup_s,
        rate,
        ops: out.ops,
        ops_unit: out.ops_unit,
        figure: out.figure.filter(|f| f.value.is_finite()),
        checksum: format!("{:016x}", out.checksum),
        pid: std::process::id(),
    })
}

fn check_threads(spec: &KernelSpec, threads: u32) -> Result<(), KernelError> {
    if threads == 0 {
        return Err(KernelError::Usage("`--threads 0`: expected an integer >= 1".into()));
    }
    if threads > 1 && !spec.threaded {
        let threaded: Vec<&str> = cosched_model::kernel::KERNELS
            .iter()
            .filter(|k| k.threaded)
            .map(|k| k.name)
            .collect();
        return Err(KernelError::Usage(format!(
            "`--threads {threads}`: kernel `{}` runs on one thread; use --threads 1 \
             (multi-threaded kernels: {})",
            spec.name,
            threaded.join(", ")
        )));
    }
    Ok(())
}
