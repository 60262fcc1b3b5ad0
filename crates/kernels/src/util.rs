//! Pieces shared by the kernels: checksums, a seeded RNG, splitting work
//! across threads, typed parameter access and the threaded timing harness.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Instant;

use cosched_model::kernel::KernelSpec;

use crate::{Figure, KernelError};

/// One run of a kernel as its module hands it back to [`crate::run`]: the
/// set-up and work-phase times, the operations done, the checksum and the
/// kernel's own figure.
#[derive(Debug)]
pub(crate) struct KernelRun {
    pub setup_s: f64,
    pub wall_s: f64,
    pub ops: u64,
    pub ops_unit: String,
    pub checksum: u64,
    pub figure: Option<Figure>,
    /// Parameters whose effective value differs from the given one.
    pub resolved: Vec<(String, String)>,
}

impl KernelRun {
    pub fn new(timed: Timing, ops: u64, ops_unit: &str, checksum: u64) -> Self {
        KernelRun {
            setup_s: timed.setup_s,
            wall_s: timed.wall_s,
            ops,
            ops_unit: ops_unit.to_string(),
            checksum,
            figure: None,
            resolved: Vec::new(),
        }
    }

    pub fn figure(mut self, name: &str, value: f64) -> Self {
        self.figure = Some(Figure { name: name.to_string(), value });
        self
    }

    /// Figure `bandwidth_mb_s` from `ops` bytes (MB = 1e6 bytes, as STREAM).
    pub fn bandwidth(self, bytes: u64) -> Self {
        let v = per_second(bytes as f64, self.wall_s) / 1e6;
        self.figure("bandwidth_mb_s", v)
    }

    pub fn resolved(mut self, name: &str, value: String) -> Self {
        self.resolved.push((name.to_string(), value));
        self
    }
}

/// Seconds spent before and in the work phase.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Timing {
    pub setup_s: f64,
    pub wall_s: f64,
}

pub(crate) fn per_second(amount: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        amount / secs
    } else {
        0.0
    }
}

/// SplitMix64 finaliser: a cheap bijective scrambler of 64-bit words.
#[inline]
pub(crate) const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Folds `v` into the running checksum `h`; order-sensitive, so per-thread
/// checksums combined in thread order give a different value for a different
/// split.
#[inline]
pub(crate) const fn mix(h: u64, v: u64) -> u64 {
    splitmix64(h.rotate_left(23) ^ v)
}

/// Starting value of every checksum.
pub(crate) const CHECKSUM_SEED: u64 = 0xC05C_11ED_0000_0001;

/// Combines per-thread (or per-phase) checksums in order.
pub(crate) fn combine(parts: impl IntoIterator<Item = u64>) -> u64 {
    parts.into_iter().fold(CHECKSUM_SEED, mix)
}

/// Deterministic pseudo-random numbers (SplitMix64 sequence); the kernels need
/// reproducible layouts, not cryptographic quality.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix64(self.0)
    }

    /// Uniform in `0..n` (n > 0), by multiply-high: the bias is below 2^-32
    /// for the sizes used here and the result is reproducible.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Thread `i`'s share of `total` units split over `parts` threads: the first
/// `total % parts` threads take one more, so the shares sum to `total`.
pub(crate) fn share(total: u64, parts: u32, i: u32) -> u64 {
    let parts = u64::from(parts);
    let i = u64::from(i);
    total / parts + u64::from(i < total % parts)
}

/// Thread `i`'s contiguous slice of `0..len` split over `parts` threads.
pub(crate) fn chunk(len: usize, parts: u32, i: u32) -> Range<usize> {
    let start: usize = (0..i).map(|j| share(len as u64, parts, j) as usize).sum();
    start..start + share(len as u64, parts, i) as usize
}

/// Typed access to resolved parameters; errors name the parameter and its flag.
pub(crate) struct Params<'a> {
    spec: &'a KernelSpec,
    map: &'a BTreeMap<String, String>,
}

impl<'a> Params<'a> {
    pub fn new(spec: &'a KernelSpec, map: &'a BTreeMap<String, String>) -> Self {
        Params { spec, map }
    }

    pub fn text(&self, name: &str) -> &'a str {
        self.map.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn uint(&self, name: &str) -> Result<u64, KernelError> {
        let v = self.text(name);
        v.parse::<u64>()
            .map_err(|_| self.bad(name, &format!("`{v}` is not a non-negative integer")))
    }

    /// An integer parameter that must be at least `min`.
    pub fn uint_min(&self, name: &str, min: u64) -> Result<u64, KernelError> {
        let v = self.uint(name)?;
        if v < min {
            return Err(self.bad(name, &format!("expected an integer >= {min}, got {v}")));
        }
        Ok(v)
    }

    pub fn float(&self, name: &str) -> Result<f64, KernelError> {
        let v = self.text(name);
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.bad(name, &format!("`{v}` is not a number"))),
        }
    }

    /// A usage error about parameter `name`, naming its command-line flag.
    pub fn bad(&self, name: &str, what: &str) -> KernelError {
        let flag = self
            .spec
            .param(name)
            .map(|p| p.flag())
            .unwrap_or_else(|| format!("--{}", name.replace('_', "-")));
        KernelError::Usage(format!(
            "{flag} (parameter `{name}` of kernel `{}`): {what}",
            self.spec.name
        ))
    }
}

/// The CPUs this process may run on, in ascending order (empty when the
/// kernel cannot tell).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain bits; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads a bit of a valid set for an index below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// The set holding one CPU, prepared ahead so a forked child can bind itself
/// with one system call and nothing else.
pub(crate) fn single_cpu_set(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit of a valid set; callers pass CPUs from
    // `allowed_cpus`, which are below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set
}

/// Binds the calling thread to the CPUs of `set`. Async-signal-safe (one
/// system call), so a forked child may call it. A refusal is ignored: the
/// thread then runs where the launcher pinned the process, as before.
pub(crate) fn bind_current_thread(set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid cpu_set_t of the size passed; tid 0 is the caller.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
}

/// The CPU worker `i` of `n` is bound to, when the process may use at least
/// `n` CPUs: one worker per CPU in order (OpenMP's `OMP_PROC_BIND=close`,
/// MPI's `--bind-to core`). Left to the scheduler, workers of a job on a
/// multi-core cpuset may share a core in one run and not in the next (the
/// pingpong kernel's two ends did, see `child::end_sets`); bound, a job's
/// solo run and its runs beside others use its cores the same way.
pub(crate) fn worker_cpu(allowed: &[usize], n: u32, i: u32) -> Option<usize> {
    (n > 1 && allowed.len() >= n as usize).then(|| allowed[i as usize])
}

/// Runs `threads` workers. Each first runs `setup(i)` (allocation and first
/// touch happen on the thread that will use the memory), then all start the
/// work phase together, so the timing below covers the work phase only.
/// `started` is when the caller began its own preparation, which counts as
/// setup. The work phase ends when the last worker's `work` returns: each
/// worker frees its state after that, and exits, outside the timing. Freed
/// inside it, stream's three 64 MiB arrays (unmapping 48k pages, about
/// 10 ms) made a quarter of the work run at 0.83-0.85 of the full work's
/// rate and the full run 0.96 of C STREAM's, which frees after its timer
/// stops (issue 42).
pub(crate) fn run_parallel<S, T, FS, FW>(
    threads: u32,
    started: Instant,
    setup: FS,
    work: FW,
) -> Result<(Vec<T>, Timing), KernelError>
where
    FS: Fn(u32) -> Result<S, KernelError> + Sync,
    FW: Fn(u32, &mut S) -> T + Sync,
    T: Send,
{
    let gate = Gate::default();
    let done = std::sync::Barrier::new(threads as usize);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let allowed = allowed_cpus();
    let outcome = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads as usize);
        for i in 0..threads {
            let (setup, work, gate, done, failed) = (&setup, &work, &gate, &done, &failed);
            let bind = worker_cpu(&allowed, threads, i).map(single_cpu_set);
            let spawned = std::thread::Builder::new().name(format!("kernel-{i}")).spawn_scoped(scope, move || {
                // Bound before set-up, so first touch places memory beside
                // the core that will use it.
                if let Some(set) = &bind {
                    bind_current_thread(set);
                }
                let state = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| setup(i)));
                if !matches!(state, Ok(Ok(_))) {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                // A failed setup still reports in, or the others would wait forever.
                if !gate.ready_then_wait() {
                    return Err(KernelError::Failed("another kernel thread could not start".into()));
                }
                let state = state.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                // Set before the gate opened (every worker had reported in):
                // the run fails with that worker's error, and this one's work
                // would be thrown away.
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return Ok(None);
                }
                let mut s = state;
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i, &mut s)));
                let end = Instant::now();
                // Every worker gets here (a panicking one too, or the others
                // would wait forever), so no state is freed beside another
                // worker's timed work.
                done.wait();
                drop(s);
                Ok(Some((out.unwrap_or_else(|p| std::panic::resume_unwind(p)), end)))
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    gate.open(false);
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(KernelError::io(format!("starting kernel thread {i}"), e));
                }
            }
        }
        gate.wait_ready(threads);
        let t0 = Instant::now();
        crate::progress::go();
        gate.open(true);
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        Ok((results, t0))
    });
    let (results, t0) = outcome?;
    let setup_s = t0.duration_since(started).as_secs_f64();
    let results = results.into_iter().collect::<Result<Vec<Option<(T, Instant)>>, KernelError>>()?;
    // None only beside a failed setup, whose error the collect returned.
    let results: Vec<(T, Instant)> = results.into_iter().map(|r| r.expect("a worker skips its work only beside a failed setup")).collect();
    let end = results.iter().map(|(_, end)| *end).max().unwrap_or(t0);
    let wall_s = end.saturating_duration_since(t0).as_secs_f64();
    Ok((results.into_iter().map(|(out, _)| out).collect(), Timing { setup_s, wall_s }))
}

/// The start line of the work phase: workers report ready and wait; the
/// caller waits for all of them, then opens (go) or aborts. Unlike a Barrier
/// it can release workers when not all of them could be started.
#[derive(Default)]
struct Gate {
    state: std::sync::Mutex<(u32, Option<bool>)>,
    changed: std::sync::Condvar,
}

impl Gate {
    /// Worker side: true when the work phase starts, false when aborted.
    fn ready_then_wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 += 1;
        self.changed.notify_all();
        loop {
            if let Some(go) = s.1 {
                return go;
            }
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn wait_ready(&self, n: u32) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while s.0 < n {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn open(&self, go: bool) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(go);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    proptest! {
        #[test]
        fn shares_sum_to_the_total(total in 0u64..1_000_000, parts in 1u32..64) {
            let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
            prop_assert_eq!(sum, total);
        }

        #[test]
        fn chunks_tile_the_range(len in 0usize..100_000, parts in 1u32..32) {
            let mut next = 0;
            for i in 0..parts {
                let c = chunk(len, parts, i);
                prop_assert_eq!(c.start, next);
                next = c.end;
            }
            prop_assert_eq!(next, len);
        }

        #[test]
        fn below_stays_in_range(seed: u64, n in 1u64..u64::MAX) {
            let mut r = super::Rng::new(seed);
            prop_assert!(r.below(n) < n);
        }
    }

    #[test]
    fn workers_get_one_cpu_each_in_order_only_when_there_are_enough() {
        assert_eq!(worker_cpu(&[2, 5], 2, 0), Some(2));
        assert_eq!(worker_cpu(&[2, 5], 2, 1), Some(5));
        // One worker stays where the launcher pinned the process.
        assert_eq!(worker_cpu(&[2, 5], 1, 0), None);
        // More workers than CPUs: the scheduler time-shares them.
        assert_eq!(worker_cpu(&[0], 2, 1), None);
    }

    #[test]
    fn a_thread_bound_to_an_allowed_cpu_runs_only_there() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        let seen = std::thread::spawn(move || {
            bind_current_thread(&single_cpu_set(last));
            allowed_cpus()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![last]);
    }

    #[test]
    fn combining_depends_on_order() {
        assert_ne!(combine([1, 2]), combine([2, 1]));
        assert_eq!(combine([1, 2]), combine([1, 2]));
    }

    #[test]
    fn a_workers_state_is_freed_after_the_work_phase_ends_not_inside_it() {
        // Each state notes when it is dropped; the timed phase (from the
        // end of setup, `started + setup_s`, for `wall_s`) must end first.
        struct Noted<'a>(&'a std::sync::Mutex<Vec<Instant>>);
        impl Drop for Noted<'_> {
            fn drop(&mut self) {
                self.0.lock().unwrap().push(Instant::now());
            }
        }
        let drops = std::sync::Mutex::new(Vec::new());
        let started = Instant::now();
        let (outs, t) = run_parallel(2, started, |_| Ok(Noted(&drops)), |i, _| i).unwrap();
        assert_eq!(outs, vec![0, 1]);
        let drops = drops.into_inner().unwrap();
        assert_eq!(drops.len(), 2);
        // Seconds as f64 round to within a nanosecond here.
        let end = started + Duration::from_secs_f64(t.setup_s + t.wall_s);
        for d in drops {
            assert!(d + Duration::from_nanos(10) >= end, "a state was freed {:?} before the timed phase ended", end - d);
        }
    }

    #[test]
    fn harness_reports_a_failed_setup() {
        let r = run_parallel(
            2,
            Instant::now(),
            |i| if i == 1 { Err(KernelError::Failed("no".into())) } else { Ok(()) },
            |_, ()| 0u64,
        );
        assert!(matches!(r, Err(KernelError::Failed(_))));
    }
}
