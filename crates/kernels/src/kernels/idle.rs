//! `idle`: sleeps `work` milliseconds. It holds a slot and exerts no pressure.
//! The sleep targets an absolute CLOCK_MONOTONIC deadline, so interrupted or
//! late wake-ups do not add up to drift.

use std::time::Instant;

use crate::util::{mix, KernelRun, Timing, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "ms";

pub(crate) fn run(work: u64) -> Result<KernelRun, KernelError> {
    let t0 = Instant::now();
    let now = monotonic_now()?;
    let ns = now.tv_nsec as u64 + (work % 1000) * 1_000_000;
    let tv_sec = libc::time_t::try_from(work / 1000 + ns / 1_000_000_000)
        .ok()
        .and_then(|s| now.tv_sec.checked_add(s))
        .ok_or_else(|| KernelError::Usage(format!("--work {work}: too many milliseconds to sleep")))?;
    let deadline = libc::timespec { tv_sec, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    loop {
        // SAFETY: `deadline` is a valid timespec that outlives the call, and a
        // null remainder pointer is allowed with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &deadline, std::ptr::null_mut())
        };
        match r {
            0 => break,
            libc::EINTR => continue,
            e => return Err(KernelError::io("clock_nanosleep", std::io::Error::from_raw_os_error(e))),
        }
    }
    let timing = Timing { setup_s: 0.0, wall_s: t0.elapsed().as_secs_f64() };
    Ok(KernelRun::new(timing, work, OPS_UNIT, mix(CHECKSUM_SEED, work)))
}

fn monotonic_now() -> Result<libc::timespec, KernelError> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return Err(KernelError::io("clock_gettime", std::io::Error::last_os_error()));
    }
    Ok(ts)
}
