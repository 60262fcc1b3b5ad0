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

use cosched_model::regime::CacheRegime;
use cosched_model::stats::Summary;
use serde::{Deserialize, Serialize};

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
    Ok(round_trip_batches_ns(a, b, round_trips, 1)?[0])
}

/// [`round_trip_ns`] for `batches` consecutive batches of `round_trips`
/// bounces by one pair of pinned threads: each batch's mean. One thread
/// pair for all batches keeps a cheap reading cheap on a busy node, where
/// starting and pinning threads costs more than the bouncing itself.
pub fn round_trip_batches_ns(a: u32, b: u32, round_trips: u64, batches: usize) -> Result<Vec<f64>, C2cError> {
    if a == b {
        return Err(C2cError::SameCpu(a));
    }
    if round_trips == 0 || batches == 0 {
        return Err(C2cError::NoWork);
    }
    let total = round_trips * batches as u64;
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
            for i in 0..total {
                while line.0.load(Ordering::Acquire) != 2 * i + 1 {
                    spin_loop();
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
            Ok(())
        })
    };
    let timed = std::thread::spawn(move || -> Result<Option<Vec<f64>>, C2cError> {
        if !pin_and_meet(a, &ready, &failed)? {
            return Ok(None);
        }
        let mut means = Vec::with_capacity(batches);
        for k in 0..batches as u64 {
            let t0 = Instant::now();
            for i in k * round_trips..(k + 1) * round_trips {
                line.0.store(2 * i + 1, Ordering::Release);
                while line.0.load(Ordering::Acquire) != 2 * i + 2 {
                    spin_loop();
                }
            }
            means.push(t0.elapsed().as_secs_f64() * 1e9 / round_trips as f64);
        }
        Ok(Some(means))
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

/// Round trips per batch and batches of a repeat's reading
/// ([`regime_round_trip`]): 7 x 1,000 round trips is 0.5 ms of bouncing on
/// a shared cache and 3 ms apart, cheap enough before and after every
/// repeat, and a median of 7 stays put when a vCPU is preempted during
/// up to 3 batches. docs/measurements.md gives the measured cost.
pub const REGIME_ROUND_TRIPS: u64 = 1_000;
pub const REGIME_BATCHES: usize = 7;

/// The round trip between `a` and `b` for a repeat's cache regime: the
/// median of a few short batches by one pair of threads, a few
/// milliseconds in all.
pub fn regime_round_trip(a: u32, b: u32) -> Result<f64, C2cError> {
    let v = round_trip_batches_ns(a, b, REGIME_ROUND_TRIPS, REGIME_BATCHES)?;
    Ok(Summary::of(&v).expect("at least one finite batch").median)
}

/// A repeat's readings of the round trip between two CPUs of its jobs,
/// just before it and just after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub cpus: [u32; 2],
    pub before_ns: Option<f64>,
    pub after_ns: Option<f64>,
}

impl Reading {
    /// The regime the repeat ran in: the readings' when they agree (or
    /// one was taken); `None` when none was, or the regime changed during
    /// the repeat.
    pub fn regime(&self) -> Option<CacheRegime> {
        match (self.before_ns.map(CacheRegime::of_round_trip), self.after_ns.map(CacheRegime::of_round_trip)) {
            (Some(a), Some(b)) if a != b => None,
            (Some(a), _) | (None, Some(a)) => Some(a),
            (None, None) => None,
        }
    }
}

/// What reads a round trip between two CPUs for a campaign: the real
/// [`regime_round_trip`] on the node, a script of readings in tests.
/// `None`: no reading (the CPUs could not be pinned).
pub type ReadRoundTrip<'a> = dyn FnMut(u32, u32) -> Option<f64> + 'a;

/// The node's reader: [`regime_round_trip`], a failure read as none.
pub fn read_round_trip(a: u32, b: u32) -> Option<f64> {
    regime_round_trip(a, b).ok()
}

/// Reads before, runs `repeat`, reads after.
pub fn around<T, E>(cpus: Option<[u32; 2]>, read: &mut ReadRoundTrip, repeat: impl FnOnce() -> Result<T, E>) -> Result<(T, Option<Reading>), E> {
    let before = cpus.and_then(|[a, b]| read(a, b));
    let out = repeat()?;
    let after = cpus.and_then(|[a, b]| read(a, b));
    Ok((out, cpus.map(|cpus| Reading { cpus, before_ns: before, after_ns: after })))
}

/// A switch of cache regime within a campaign: a repeat whose regime is
/// not the one its CPUs had at the campaign's first reading of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Switch {
    /// What the repeat measured (`a + b repeat 3`).
    pub what: String,
    pub cpus: [u32; 2],
    pub from: CacheRegime,
    /// `None`: the regime changed during the repeat itself.
    pub to: Option<CacheRegime>,
    pub before_ns: Option<f64>,
    pub after_ns: Option<f64>,
}

impl Switch {
    /// `cache regime switched at a + b repeat 3: CPUs 0-1 read 402 ns before, 398 ns after (caches apart; the campaign began with shared cache)`.
    pub fn describe(&self) -> String {
        let ns = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} ns"));
        let to = self.to.map_or("the regime changed during the repeat".to_string(), |g| g.name().to_string());
        format!(
            "cache regime switched at {}: CPUs {}-{} read {} before, {} after ({to}; the campaign began with {})",
            self.what,
            self.cpus[0],
            self.cpus[1],
            ns(self.before_ns),
            ns(self.after_ns),
            self.from.name()
        )
    }
}

/// Watches a campaign's repeats for a switch of cache regime: the first
/// regime read on each pair of CPUs is the campaign's, and every repeat
/// after it in another regime (or changing during the repeat) is a switch.
#[derive(Debug, Clone, Default)]
pub struct RegimeWatch {
    first: Vec<([u32; 2], CacheRegime)>,
    pub switches: Vec<Switch>,
}

impl RegimeWatch {
    pub fn new() -> RegimeWatch {
        RegimeWatch::default()
    }

    /// The regime the campaign began with on these CPUs, if read.
    pub fn first(&self, cpus: [u32; 2]) -> Option<CacheRegime> {
        self.first.iter().find(|(c, _)| *c == cpus).map(|(_, g)| *g)
    }

    /// Takes one repeat's reading; returns the switch it is, if it is one.
    pub fn observe(&mut self, what: &str, r: &Reading) -> Option<Switch> {
        let read = [r.before_ns, r.after_ns].into_iter().flatten().map(CacheRegime::of_round_trip).next()?;
        let Some(from) = self.first(r.cpus) else {
            self.first.push((r.cpus, read));
            // The very first repeat can still change during itself.
            return self.switch_if(what, r, read);
        };
        self.switch_if(what, r, from)
    }

    fn switch_if(&mut self, what: &str, r: &Reading, from: CacheRegime) -> Option<Switch> {
        let to = r.regime();
        if to == Some(from) {
            return None;
        }
        let s = Switch { what: what.to_string(), cpus: r.cpus, from, to, before_ns: r.before_ns, after_ns: r.after_ns };
        self.switches.push(s.clone());
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_paired_with_itself_is_refused_rather_than_livelocked() {
        assert!(matches!(round_trip_ns(0, 0, 10), Err(C2cError::SameCpu(0))));
        assert!(matches!(round_trip_ns(0, 1, 0), Err(C2cError::NoWork)));
        assert!(matches!(round_trip_batches_ns(0, 1, 10, 0), Err(C2cError::NoWork)));
    }

    #[test]
    fn a_cpu_that_does_not_exist_is_an_error_not_a_hang() {
        let e = round_trip_ns(0, 4095, 10).unwrap_err();
        assert!(matches!(e, C2cError::Pin { cpu: 4095, .. }), "{e}");
        assert!(matches!(round_trip_ns(4095, 0, 10), Err(C2cError::Pin { cpu: 4095, .. })));
    }

    fn reading(before: f64, after: f64) -> Reading {
        Reading { cpus: [0, 1], before_ns: Some(before), after_ns: Some(after) }
    }

    #[test]
    fn a_repeat_in_another_regime_than_the_first_is_a_switch_and_is_said_once() {
        let mut w = RegimeWatch::new();
        assert_eq!(w.observe("a + b repeat 0", &reading(70.0, 72.0)), None);
        assert_eq!(w.observe("a + b repeat 1", &reading(65.0, 80.0)), None);
        let s = w.observe("a + b repeat 2", &reading(70.0, 400.0)).expect("changed during the repeat");
        assert_eq!((s.from, s.to), (CacheRegime::Shared, None));
        let s = w.observe("a + b repeat 3", &reading(390.0, 410.0)).expect("apart");
        assert_eq!(s.to, Some(CacheRegime::Apart));
        assert!(s.describe().contains("a + b repeat 3: CPUs 0-1 read 390 ns before, 410 ns after (caches apart; the campaign began with shared cache)"), "{}", s.describe());
        assert_eq!(w.observe("unread", &Reading { cpus: [0, 1], before_ns: None, after_ns: None }), None);
        // Other CPUs have a first regime of their own.
        assert_eq!(w.observe("c + d repeat 0", &Reading { cpus: [2, 3], before_ns: Some(400.0), after_ns: None }), None);
        assert_eq!(w.switches.len(), 2);
        assert_eq!(w.first([0, 1]), Some(CacheRegime::Shared));
    }

    #[test]
    fn readings_are_taken_just_before_and_just_after_the_repeat() {
        let mut log = Vec::new();
        let mut script = [70.0, 400.0].into_iter();
        let mut read = |a: u32, b: u32| {
            log.push(format!("read {a}-{b}"));
            script.next()
        };
        let (out, r) = around(Some([0, 1]), &mut read, || Ok::<_, ()>(7)).unwrap();
        assert_eq!((out, r), (7, Some(reading(70.0, 400.0))));
        assert_eq!(r.unwrap().regime(), None, "shared before, apart after: neither");
        let (_, none) = around(None, &mut read, || Ok::<_, ()>(())).unwrap();
        assert_eq!(none, None, "nothing to read on one CPU");
        assert_eq!(log, ["read 0-1", "read 0-1"]);
    }

    #[test]
    fn two_cpus_bounce_a_line_and_every_round_trip_completes() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            cosched_testkit::skip(cosched_testkit::Lacks::Machine, "one CPU, no pair to measure");
            return;
        }
        let ns = round_trip_ns(0, 1, 10_000).unwrap();
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
        let batches = round_trip_batches_ns(0, 1, 1_000, 7).unwrap();
        assert_eq!(batches.len(), 7, "one mean per batch");
        assert!(batches.iter().all(|ns| ns.is_finite() && *ns > 0.0), "{batches:?}");
        assert!(regime_round_trip(0, 1).unwrap() > 0.0);
    }
}
