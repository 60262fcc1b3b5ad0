//! Core-to-core latency: how long a cache line takes to travel between two
//! CPUs and back, measured by two threads pinned to them bouncing one
//! atomic counter.
//!
//! The topology a guest reads from /sys or hwloc is what its hypervisor
//! declares, not where its vCPUs run: two vCPUs "sharing" an L3 may sit on
//! different chiplets (AMD CCXs) or sockets of the host, and then co-runners
//! on them do not contend for one last-level cache at all, while tenants we
//! cannot see do. A round trip of a few tens of nanoseconds means the two
//! CPUs share a cache; one of hundreds means the line crosses a chiplet or
//! socket interconnect. On a VM the answer holds for as long as the
//! hypervisor keeps its placement, so it is measured, never stored.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use cosched_model::stats::Summary;

/// The bounced counter, alone on its cache line (and the adjacent one, which
/// some CPUs prefetch in pairs), so nothing else shares its traffic.
#[repr(align(128))]
struct Line(AtomicU64);

#[derive(Debug, thiserror::Error)]
pub enum C2cError {
    #[error("CPU {0} twice: a CPU has no latency to itself (both threads would spin on one CPU)")]
    SameCpu(u32),
    #[error("cannot pin a thread to CPU {cpu}: {source}")]
    Pin { cpu: u32, source: nix::Error },
    #[error("round_trips must be at least 1")]
    NoWork,
}

fn pin_this_thread(cpu: u32) -> Result<(), C2cError> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu as usize).map_err(|source| C2cError::Pin { cpu, source })?;
    // Pid 0 is the calling thread.
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|source| C2cError::Pin { cpu, source })
}

/// Pins the calling thread to `cpu` and waits for its partner: `Ok(true)`
/// when both are pinned, `Ok(false)` when the partner could not pin, this
/// side's error when it could not.
fn pin_and_meet(cpu: u32, ready: &Barrier, failed: &AtomicBool) -> Result<bool, C2cError> {
    let pinned = pin_this_thread(cpu);
    if pinned.is_err() {
        failed.store(true, Ordering::SeqCst);
    }
    ready.wait();
    pinned?;
    Ok(!failed.load(Ordering::SeqCst))
}

/// Mean round-trip time in nanoseconds of `round_trips` bounces of one
/// cache line between `a` and `b`: `a` writes an odd value and waits for
/// `b` to answer with the next even one.
pub fn round_trip_ns(a: u32, b: u32, round_trips: u64) -> Result<f64, C2cError> {
    if a == b {
        return Err(C2cError::SameCpu(a));
    }
    if round_trips == 0 {
        return Err(C2cError::NoWork);
    }
    let line = Arc::new(Line(AtomicU64::new(0)));
    // Both threads are pinned before either starts, so the timing never
    // includes a migration; a side that cannot pin says so before the
    // barrier, and then neither side spins (the other would wait forever
    // for a partner that never comes).
    let ready = Arc::new(Barrier::new(2));
    let failed = Arc::new(AtomicBool::new(false));
    let echo = {
        let (line, ready, failed) = (Arc::clone(&line), Arc::clone(&ready), Arc::clone(&failed));
        std::thread::spawn(move || -> Result<(), C2cError> {
            if !pin_and_meet(b, &ready, &failed)? {
                return Ok(());
            }
            for i in 0..round_trips {
                while line.0.load(Ordering::Acquire) != 2 * i + 1 {
                    spin_loop();
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
            Ok(())
        })
    };
    let timed = std::thread::spawn(move || -> Result<Option<f64>, C2cError> {
        if !pin_and_meet(a, &ready, &failed)? {
            return Ok(None);
        }
        let t0 = Instant::now();
        for i in 0..round_trips {
            line.0.store(2 * i + 1, Ordering::Release);
            while line.0.load(Ordering::Acquire) != 2 * i + 2 {
                spin_loop();
            }
        }
        Ok(Some(t0.elapsed().as_secs_f64() * 1e9 / round_trips as f64))
    });
    let timed = timed.join().expect("the timed thread does not panic");
    let echoed = echo.join().expect("the echo thread does not panic");
    // Each side returns its own pinning error; a side whose partner failed
    // returns nothing to time.
    let ns = timed?;
    echoed?;
    Ok(ns.expect("both sides pinned, so the bounce ran"))
}

/// Round trips between two CPUs, `repeats` times: median and spread.
pub fn measure_pair(a: u32, b: u32, round_trips: u64, repeats: usize) -> Result<Summary, C2cError> {
    let mut v = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        v.push(round_trip_ns(a, b, round_trips)?);
    }
    Ok(Summary::of(&v).expect("at least one finite round trip"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_paired_with_itself_is_refused_rather_than_livelocked() {
        assert!(matches!(round_trip_ns(0, 0, 10), Err(C2cError::SameCpu(0))));
        assert!(matches!(round_trip_ns(0, 1, 0), Err(C2cError::NoWork)));
    }

    #[test]
    fn a_cpu_that_does_not_exist_is_an_error_not_a_hang() {
        let e = round_trip_ns(0, 4095, 10).unwrap_err();
        assert!(matches!(e, C2cError::Pin { cpu: 4095, .. }), "{e}");
        assert!(matches!(round_trip_ns(4095, 0, 10), Err(C2cError::Pin { cpu: 4095, .. })));
    }

    #[test]
    fn two_cpus_bounce_a_line_and_every_round_trip_completes() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            eprintln!("skipped: one CPU, no pair to measure");
            return;
        }
        let ns = round_trip_ns(0, 1, 10_000).unwrap();
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
