//! One module per kernel of the catalogue.

use std::collections::BTreeMap;

use cosched_model::kernel::KernelSpec;

use crate::util::{KernelRun, Params};
use crate::KernelError;

mod cache;
mod chase;
mod child;
mod compute;
mod dgemm;
mod distgen;
mod fileio;
mod idle;
mod offload;
mod phased;
mod pingpong;
mod pipe;
mod stream;
mod syscall;

pub use offload::REF_SYSCALLS_PER_MS;

/// Runs a kernel whose parameters are already resolved and whose thread
/// count is already checked against the catalogue.
pub(crate) fn dispatch(
    spec: &KernelSpec,
    work: u64,
    threads: u32,
    resolved: &BTreeMap<String, String>,
) -> Result<KernelRun, KernelError> {
    let p = Params::new(spec, resolved);
    match spec.name {
        "compute" => compute::run(work, threads),
        "dgemm" => dgemm::run(work, threads, &p),
        "stream" => stream::run(work, threads, &p),
        "cache" => cache::run(work, threads, &p),
        "chase" => chase::run(work, threads, &p),
        "distgen" => distgen::run(work, threads, &p),
        "syscall" => syscall::run(work, threads, &p),
        "fileio" => fileio::run(work, &p),
        "pingpong" => pingpong::run(work, &p),
        "pipe" => pipe::run(work, &p),
        "offload" => offload::run(work, &p),
        "idle" => idle::run(work),
        "phased" => phased::run(work, &p),
        other => Err(KernelError::Failed(format!(
            "kernel `{other}` is in the catalogue but this build of cosched-kernel does not implement it"
        ))),
    }
}

/// What `ops` counts for a kernel that can be a phase of `phased`.
pub(crate) fn ops_unit(kernel: &str) -> Option<&'static str> {
    Some(match kernel {
        "compute" => compute::OPS_UNIT,
        "dgemm" => dgemm::OPS_UNIT,
        "stream" => stream::OPS_UNIT,
        "cache" => cache::OPS_UNIT,
        "chase" => chase::OPS_UNIT,
        "distgen" => distgen::OPS_UNIT,
        "syscall" => syscall::OPS_UNIT,
        "fileio" => fileio::OPS_UNIT,
        "pingpong" => pingpong::OPS_UNIT,
        "pipe" => pipe::OPS_UNIT,
        "offload" => offload::OPS_UNIT,
        "idle" => idle::OPS_UNIT,
        _ => return None,
    })
}
