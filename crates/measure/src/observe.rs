//! Progress observers of running jobs (issue 38): the I/O half of the
//! online slowdown estimate, whose maths is `cosched_engine::online`.
//! One observer per job, chosen at its start ([`for_job`]):
//!
//! - a `cosched-kernel` job: its own work counter, which the kernel writes
//!   to the file `COSCHED_PROGRESS_FILE` names (`DONE TOTAL MONO_NS`,
//!   dated by CLOCK_MONOTONIC, so a late read still dates it exactly);
//! - any other job: the CPU time of its process group (`/proc/PID/stat`
//!   of its live members): a weak signal, since a job waiting on I/O or
//!   memory burns little CPU whether it runs alone or beside others.
//!
//! An observer that has yielded nothing after [`SILENT_AFTER`] reads says
//! so once (`Sample::Silent`) and is asked on: the job runs untouched.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cosched_engine::online::{Reading, Sample, Signal};

/// Reads without a reading before an observer says it yields nothing.
pub const SILENT_AFTER: u32 = 8;

/// Seconds between two readings of every running job: short enough that
/// six segments (what an estimate needs to settle) take 1.5 s, long
/// enough that a kernel's counter, rewritten every 20 ms, moves in each.
pub const DEFAULT_EVERY_S: f64 = 0.25;

/// What reads one job's progress.
pub trait Observer: Send {
    /// What it reads, for messages.
    fn name(&self) -> &'static str;
    /// A reading now (`now` on the run's clock, `at` the same instant on
    /// the machine's monotonic clock); `Ok(None)`: nothing yet; `Err`:
    /// never anything (said once).
    fn read(&mut self, now: f64, at: Instant) -> Result<Option<Reading>, String>;
}

/// A job's observer with its memory of having said it is silent.
pub struct Watch {
    observer: Box<dyn Observer>,
    empty: u32,
    said: bool,
}

impl Watch {
    pub fn new(observer: Box<dyn Observer>) -> Watch {
        Watch { observer, empty: 0, said: false }
    }

    pub fn name(&self) -> &'static str {
        self.observer.name()
    }

    /// The sample to hand the run loop, if any.
    pub fn sample(&mut self, now: f64, at: Instant) -> Option<Sample> {
        let why = match self.observer.read(now, at) {
            Ok(Some(r)) => {
                self.empty = 0;
                return Some(Sample::Reading(r));
            }
            Ok(None) => {
                self.empty += 1;
                if self.empty < SILENT_AFTER {
                    return None;
                }
                format!("{}: nothing after {} readings", self.observer.name(), self.empty)
            }
            Err(why) => format!("{}: {why}", self.observer.name()),
        };
        if self.said {
            return None;
        }
        self.said = true;
        Some(Sample::Silent(why))
    }
}

/// The observer of a job: its kernel's counter file, else its group's CPU time.
pub fn for_job(kernel: bool, progress_file: &Path, pgid: i32, cores: u32) -> Box<dyn Observer> {
    if kernel {
        Box::new(KernelFile { path: progress_file.to_path_buf() })
    } else {
        Box::new(CpuTime { pgid, cores, base: None })
    }
}

/// A kernel's `DONE TOTAL MONO_NS` file.
pub struct KernelFile {
    pub path: PathBuf,
}

/// Reads a small file the job writes: no link followed, never blocking
/// (a FIFO swapped in cannot hold the runner), at most 256 bytes.
fn read_small(path: &Path) -> std::io::Result<String> {
    let mut f = File::options().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    (&mut f).take(256).read_to_string(&mut text)?;
    Ok(text)
}

/// `DONE TOTAL MONO_NS` as the kernel writes it.
pub fn parse_kernel_line(text: &str) -> Option<(f64, f64, u64)> {
    let mut w = text.split_whitespace();
    let done: u64 = w.next()?.parse().ok()?;
    let total: u64 = w.next()?.parse().ok()?;
    let mono: u64 = w.next()?.parse().ok()?;
    (total > 0).then_some((done as f64, total as f64, mono))
}

impl Observer for KernelFile {
    fn name(&self) -> &'static str {
        "kernel counter"
    }

    fn read(&mut self, now: f64, at: Instant) -> Result<Option<Reading>, String> {
        let text = match read_small(&self.path) {
            Ok(t) => t,
            // Not written yet: the kernel is still setting up.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let Some((done, total, mono)) = parse_kernel_line(&text) else { return Ok(None) };
        // `at` and the kernel's stamp are on the one monotonic clock.
        let age = monotonic_ns_at(at).saturating_sub(mono) as f64 / 1e9;
        Ok(Some(Reading { time: now - age, done, total: Some(total), solo_rate: None, signal: Signal::Progress }))
    }
}

/// CLOCK_MONOTONIC at `at`: now's reading less the time since `at`.
fn monotonic_ns_at(at: Instant) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let now = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    now.saturating_sub(at.elapsed().as_nanos() as u64)
}

/// CPU seconds of a process group's live members: a job alone on `cores`
/// CPU-bound cores burns `cores` CPU-seconds a second.
pub struct CpuTime {
    pub pgid: i32,
    pub cores: u32,
    /// The first reading: CPU time before the job's phase is not its rate.
    base: Option<f64>,
}

impl Observer for CpuTime {
    fn name(&self) -> &'static str {
        "cpu time"
    }

    fn read(&mut self, now: f64, _at: Instant) -> Result<Option<Reading>, String> {
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let members = crate::launch::live_members(self.pgid);
        if members.is_empty() {
            return Ok(None);
        }
        let ticks: u64 = members
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .filter_map(|s| crate::sampler::parse_stat(&s))
            .map(|s| s.utime + s.stime + s.cutime + s.cstime)
            .sum();
        let cpu = ticks as f64 / tick;
        let base = *self.base.get_or_insert(cpu);
        Ok(Some(Reading { time: now, done: cpu - base, total: None, solo_rate: Some(f64::from(self.cores)), signal: Signal::Weak }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Observer for Nothing {
        fn name(&self) -> &'static str {
            "nothing"
        }
        fn read(&mut self, _: f64, _: Instant) -> Result<Option<Reading>, String> {
            Ok(None)
        }
    }

    #[test]
    fn an_observer_that_yields_nothing_says_so_once() {
        let mut w = Watch::new(Box::new(Nothing));
        let said: Vec<Sample> = (0..3 * SILENT_AFTER).filter_map(|k| w.sample(f64::from(k), Instant::now())).collect();
        assert_eq!(said, vec![Sample::Silent(format!("nothing: nothing after {SILENT_AFTER} readings"))]);
    }

    #[test]
    fn the_kernel_line_reads_its_three_words_and_refuses_a_zero_total() {
        assert_eq!(parse_kernel_line("12 100 5000   \n"), Some((12.0, 100.0, 5000)));
        assert_eq!(parse_kernel_line("12 0 5000\n"), None);
        assert_eq!(parse_kernel_line("12 100"), None);
        assert_eq!(parse_kernel_line(""), None);
    }

    #[test]
    fn a_missing_counter_file_is_nothing_yet_and_a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = KernelFile { path: dir.path().join("absent") };
        assert_eq!(k.read(1.0, Instant::now()), Ok(None));
        let mut d = KernelFile { path: dir.path().to_path_buf() };
        assert!(d.read(1.0, Instant::now()).is_err());
        std::fs::write(dir.path().join("p"), format!("50 100 {}\n", monotonic_ns_at(Instant::now()))).unwrap();
        let mut p = KernelFile { path: dir.path().join("p") };
        let r = p.read(10.0, Instant::now()).unwrap().unwrap();
        assert_eq!((r.done, r.total), (50.0, Some(100.0)));
        assert!(r.time <= 10.0, "dated at the write, before the read");
    }
}
