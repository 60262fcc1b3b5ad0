//! `syscall`: the SX-Aurora paper's micro-benchmark. The paper's version
//! "invokes typical system calls at arbitrary intervals" on the accelerator,
//! whose calls the host then serves; its figures 6 and 7 vary the call type
//! and the frequency. Here the calls run on this node's own cores: `call`
//! picks the type (kernel entry only, the clock read through the kernel
//! rather than the vDSO, a path lookup, a file opened and closed, a 4 KiB
//! copy in or out) and `rate` paces them at fixed intervals
//! (0: a tight loop, the default and the old behaviour). One unit is 1000
//! calls, split across the threads.

use std::fs::File;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::sys::{cheap_syscall, clock_syscall};
use crate::util::{combine, mix, per_second, run_parallel, share, KernelRun, Params, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "syscalls";

const CALLS_PER_UNIT: u64 = 1000;

/// Bytes each `read` / `write` call moves: one page, what a small-record
/// I/O benchmark moves per call.
const IO_BYTES: usize = 4096;

/// A pace below one call a second would make a unit of work last longer
/// than a quarter of an hour per thread; refused rather than left to hang.
const MIN_RATE: f64 = 1.0;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Call {
    Getppid,
    Clock,
    Stat,
    Open,
    Read,
    Write,
}

impl Call {
    fn parse(p: &Params) -> Result<Call, KernelError> {
        Ok(match p.text("call") {
            "" | "getppid" => Call::Getppid,
            "clock" => Call::Clock,
            "stat" => Call::Stat,
            "open" => Call::Open,
            "read" => Call::Read,
            "write" => Call::Write,
            other => return Err(p.bad("call", &format!("`{other}` is not one of getppid, clock, stat, open, read, write"))),
        })
    }
}

/// What one thread keeps open between calls, so each counted call is the
/// call itself and not the open that makes it possible.
struct Caller {
    call: Call,
    file: Option<File>,
    buf: Vec<u8>,
}

impl Caller {
    fn new(call: Call) -> Result<Caller, KernelError> {
        let open = |path: &str, write: bool| {
            std::fs::OpenOptions::new()
                .read(!write)
                .write(write)
                .open(path)
                .map_err(|e| KernelError::io(format!("opening {path}"), e))
        };
        let file = match call {
            Call::Read => Some(open("/dev/zero", false)?),
            Call::Write => Some(open("/dev/null", true)?),
            _ => None,
        };
        Ok(Caller { call, file, buf: vec![0u8; IO_BYTES] })
    }

    /// One call of the chosen type (open counts its close with it); true
    /// when it succeeded.
    #[inline]
    fn once(&mut self) -> bool {
        match (self.call, self.file.as_mut()) {
            (Call::Getppid, _) => cheap_syscall(),
            (Call::Clock, _) => clock_syscall(),
            (Call::Stat, _) => std::fs::metadata("/").is_ok(),
            (Call::Open, _) => File::open("/dev/null").is_ok(),
            (Call::Read, Some(f)) => f.read(&mut self.buf).is_ok_and(|n| n == IO_BYTES),
            (Call::Write, Some(f)) => f.write(&self.buf).is_ok_and(|n| n == IO_BYTES),
            (Call::Read | Call::Write, None) => false,
        }
    }
}

/// One thread's tally: calls made, calls that succeeded, time inside calls.
struct Tally {
    calls: u64,
    ok: u64,
    busy: Duration,
}

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let call = Call::parse(p)?;
    let rate = p.float("rate")?;
    if rate != 0.0 && (rate.is_nan() || rate < MIN_RATE) {
        return Err(p.bad("rate", &format!("expected 0 (as fast as possible) or at least {MIN_RATE} calls/s, got {rate}")));
    }
    let started = Instant::now();
    let (tallies, timing) = run_parallel(
        threads,
        started,
        |_| Caller::new(call),
        |i, caller| {
            let calls = share(work, threads, i) * CALLS_PER_UNIT;
            paced(caller, calls, rate)
        },
    )?;
    let failed: u64 = tallies.iter().map(|t| t.calls - t.ok).sum();
    if failed > 0 {
        return Err(KernelError::Failed(format!("{failed} {call:?} system calls failed").to_lowercase()));
    }
    let calls = CALLS_PER_UNIT * work;
    // The parent's pid differs between runs, so only the success counts
    // (not the returned values) enter the checksum.
    let checksum = combine(tallies.iter().map(|t| mix(CHECKSUM_SEED, t.ok)));
    let outcome = KernelRun::new(timing, calls, OPS_UNIT, checksum);
    if rate == 0.0 {
        let per_thread = share(work, threads, 0) * CALLS_PER_UNIT;
        let ns = per_second(timing.wall_s * 1e9, per_thread as f64);
        Ok(outcome.figure("syscall_ns", ns))
    } else {
        // Paced: the share of each thread's time spent inside its calls, the
        // host load the paper reads from such a job (the offload kernel's
        // figure too).
        let busy: f64 = tallies.iter().map(|t| t.busy.as_secs_f64()).sum();
        let share = per_second(busy / f64::from(threads.max(1)), timing.wall_s);
        Ok(outcome.figure("host_share", share))
    }
}

/// Makes `n` calls; at `rate` > 0 call k is due `k / rate` seconds after the
/// first, and the thread sleeps only while it is ahead, so a late call (a
/// co-runner held the core) is followed at once by the next and the mean
/// rate holds whenever the node can sustain it.
fn paced(caller: &mut Caller, n: u64, rate: f64) -> Tally {
    if rate == 0.0 {
        let ok = (0..n).map(|_| u64::from(caller.once())).sum();
        return Tally { calls: n, ok, busy: Duration::ZERO };
    }
    let t0 = Instant::now();
    let mut tally = Tally { calls: n, ok: 0, busy: Duration::ZERO };
    for k in 0..n {
        let due = t0 + Duration::from_secs_f64(k as f64 / rate);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let t = Instant::now();
        tally.ok += u64::from(caller.once());
        tally.busy += t.elapsed();
    }
    tally
}

/// Makes `n` cheap calls (`getppid`); returns how many succeeded. The
/// offload kernel's host part.
pub(crate) fn syscalls(n: u64) -> u64 {
    (0..n).map(|_| u64::from(cheap_syscall())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_type_succeeds_on_this_node() {
        for call in [Call::Getppid, Call::Clock, Call::Stat, Call::Open, Call::Read, Call::Write] {
            let mut c = Caller::new(call).unwrap();
            let t = paced(&mut c, 50, 0.0);
            assert_eq!((t.calls, t.ok), (50, 50), "{call:?}");
        }
    }

    #[test]
    fn a_paced_thread_takes_at_least_its_schedule() {
        // 21 calls at 200/s: the last is due 100 ms after the first.
        let mut c = Caller::new(Call::Getppid).unwrap();
        let t0 = Instant::now();
        let t = paced(&mut c, 21, 200.0);
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert_eq!(t.ok, 21);
        assert!(t.busy < t0.elapsed());
    }
}
