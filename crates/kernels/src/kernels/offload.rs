//! `offload`: the accelerator-job pattern of the SX-Aurora paper.
//!
//! A VE job computes on its card and forwards its system calls to a pseudo
//! process on the host. One unit is one period: the host part makes a FIXED
//! number of cheap system calls, `round(host_load * period_ms *
//! REF_SYSCALLS_PER_MS)`, then the job sleeps `(1 - host_load) * period_ms`
//! while "the device computes". On an idle host the calls take about
//! `host_load` of the period; when co-runners contend for the host CPU only
//! the host part stretches, as in the paper, and the device part does not.

use std::time::{Duration, Instant};

use crate::util::{mix, per_second, KernelRun, Params, Timing, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "syscalls";

use super::syscall::syscalls;

/// Cheap system calls (`getppid` via `syscall(2)`) one core of the reference
/// host completes per millisecond when idle. Measured with `cosched-kernel
/// syscall --work 3000` on the project's reference node (a 2-core AMD EPYC
/// KVM guest): 3.5-4.4 M calls/s over nine runs, median 3.8 M/s. On a host
/// with faster or slower system calls the measured `host_share` figure
/// drifts from `host_load` by that factor; the number of calls stays fixed
/// so that the work of a run is the same on every host.
pub const REF_SYSCALLS_PER_MS: f64 = 3800.0;

pub(crate) fn run(work: u64, p: &Params) -> Result<KernelRun, KernelError> {
    let host_load = p.float("host_load")?;
    if !(0.0..=1.0).contains(&host_load) {
        return Err(p.bad("host_load", &format!("expected a number in [0, 1], got {host_load}")));
    }
    let period_ms = p.uint_min("period_ms", 1)?;
    let calls = (host_load * period_ms as f64 * REF_SYSCALLS_PER_MS).round() as u64;
    let device = Duration::from_secs_f64((1.0 - host_load) * period_ms as f64 / 1e3);

    let t0 = Instant::now();
    let mut host = Duration::ZERO;
    let mut ok = 0u64;
    for _ in 0..work {
        let t = Instant::now();
        ok += syscalls(calls);
        host += t.elapsed();
        if !device.is_zero() {
            std::thread::sleep(device);
        }
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let total = calls * work;
    if ok != total {
        return Err(KernelError::Failed(format!("{} getppid system calls failed", total - ok)));
    }
    let timing = Timing { setup_s: 0.0, wall_s };
    let share = per_second(host.as_secs_f64(), wall_s);
    Ok(KernelRun::new(timing, total, OPS_UNIT, mix(mix(CHECKSUM_SEED, work), ok)).figure("host_share", share))
}
