//! `syscall`: the SX-Aurora paper's micro-benchmark, a tight loop of cheap system calls
//! (`getppid` through `syscall(2)`, which glibc cannot answer from a cache).
//! The time goes to kernel entry and exit, the pressure a VE job's system
//! calls put on its host. One unit is 1000 calls, split across the threads.

use std::time::Instant;

use crate::sys::cheap_syscall;
use crate::util::{combine, mix, per_second, run_parallel, share, Outcome, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "syscalls";

const CALLS_PER_UNIT: u64 = 1000;

pub(crate) fn run(work: u64, threads: u32) -> Result<Outcome, KernelError> {
    let started = Instant::now();
    let (counts, timing) = run_parallel(
        threads,
        started,
        |_| Ok(()),
        |i, ()| {
            let calls = share(work, threads, i) * CALLS_PER_UNIT;
            (calls, syscalls(calls))
        },
    )?;
    let failed: u64 = counts.iter().map(|(calls, ok)| calls - ok).sum();
    if failed > 0 {
        return Err(KernelError::Failed(format!("{failed} getppid system calls failed")));
    }
    let calls = CALLS_PER_UNIT * work;
    // The parent's pid differs between runs, so only the success counts
    // (not the returned values) enter the checksum.
    let checksum = combine(counts.iter().map(|(_, ok)| mix(CHECKSUM_SEED, *ok)));
    let per_thread = share(work, threads, 0) * CALLS_PER_UNIT;
    let ns = per_second(timing.wall_s * 1e9, per_thread as f64);
    Ok(Outcome::new(timing, calls, OPS_UNIT, checksum).figure("syscall_ns", ns))
}

/// Makes `n` calls; returns how many succeeded.
pub(crate) fn syscalls(n: u64) -> u64 {
    (0..n).map(|_| u64::from(cheap_syscall())).sum()
}
