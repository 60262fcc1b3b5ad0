//! Progress observers of running jobs (issue 38): the I/O half of the
//! online slowdown estimate, whose maths is `cosched_engine::online`.
//! One observer per job, chosen at its start ([`for_job`]), the first
//! of these that applies:
//!
//! 1. a `cosched-kernel` job: its own work counter, which the kernel writes
//!    to the file `COSCHED_PROGRESS_FILE` names (`DONE TOTAL MONO_NS`,
//!    dated by CLOCK_MONOTONIC, so a late read still dates it exactly);
//! 2. a job with a workload `progress` key: the newest line of its output
//!    its regex matches ([`OutputLines`]), or the file it names
//!    ([`ProgressFile`]), dated by the file's last write, or its hardware
//!    counters (`counters = "instructions"`, [`Counters`]);
//! 3. its hardware counters, when the run found the instructions of its
//!    solo run (the app fills the key from the job's stored profile) and
//!    this machine counts them;
//! 4. any other job: the CPU time of its process group (`/proc/PID/stat`
//!    of its live members): a weak signal, since a job waiting on I/O or
//!    memory burns little CPU whether it runs alone or beside others.
//!
//! An observer that has yielded nothing after [`SILENT_AFTER`] reads says
//! so once (`Sample::Silent`) and is asked on: the job runs untouched. A
//! counters observer on a machine whose counters do not count says so at
//! its first read ([`crate::perf::instructions_counting`]).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cosched_engine::online::{Reading, Sample, Signal};
use cosched_model::workload::ProgressSource;

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

/// Where a job's observer reads: chosen once, at its start ([`for_job`]).
pub struct Sources<'a> {
    /// A `cosched-kernel` job, and the counter file it writes.
    pub kernel: bool,
    pub counter: &'a Path,
    pub pgid: i32,
    pub cores: u32,
    /// The workload's `progress` key, if the job has one.
    pub progress: Option<&'a ProgressSource>,
    /// The file the job's stdout goes to, and whether cosched made it (in
    /// its own log directory) rather than the workload's `output`.
    pub output: &'a Path,
    pub own_output: bool,
    /// Who the job runs as: a file it names is read as that user.
    pub user: Option<(u32, u32)>,
    /// The job's working directory, where a relative `progress` file is.
    pub workdir: Option<&'a Path>,
}

/// The observer of a job: its kernel's counter file, else its workload's
/// `progress` key when it has one, else its group's CPU time.
pub fn for_job(s: &Sources) -> Box<dyn Observer> {
    if s.kernel {
        return Box::new(KernelFile { path: s.counter.to_path_buf() });
    }
    match s.progress {
        Some(ProgressSource::Output { regex, total }) => match OutputLines::new(s.output, s.own_output, s.user, regex, *total) {
            Ok(o) => Box::new(o),
            // The parser compiled it already; a pattern that fails here
            // leaves the job without an estimate, said once.
            Err(why) => Box::new(Broken { name: "progress regex", why }),
        },
        Some(ProgressSource::File { path, total }) => {
            let path = match s.workdir {
                Some(d) if Path::new(path).is_relative() => d.join(path),
                _ => PathBuf::from(path),
            };
            Box::new(ProgressFile { path, total: *total })
        }
        Some(ProgressSource::Counters { total }) => match crate::perf::instructions_counting() {
            Ok(()) => Box::new(Counters::new(*total, Box::new(GroupInstructions::open(s.pgid)))),
            Err(why) => Box::new(Broken { name: "counters", why: format!("not counting: {why}") }),
        },
        None => Box::new(CpuTime { pgid: s.pgid, cores: s.cores, base: None }),
    }
}

/// Where a [`Counters`] observer reads its count: instructions retired so
/// far (`Ok(None)`: none open yet).
pub trait Count: Send {
    fn count(&mut self) -> Result<Option<u64>, String>;
}

/// The instructions of a process group: one counter with `inherit` on
/// every thread of its live members, opened once, at the job's start
/// (right after its exec), so every thread and process made after is
/// folded into one of them. Opening again later would count twice (a
/// counter read includes its inherited children), so a thread made in the
/// moment between the exec and the open is the one thing missed.
pub struct GroupInstructions {
    counters: Vec<crate::perf::Counter>,
    why: Option<String>,
}

impl GroupInstructions {
    pub fn open(pgid: i32) -> GroupInstructions {
        let mut counters = Vec::new();
        let mut why = None;
        for pid in crate::launch::live_members(pgid) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
            for tid in tasks.flatten().filter_map(|t| t.file_name().to_str().and_then(|s| s.parse::<i32>().ok())) {
                match crate::perf::open_running_instructions(tid) {
                    Ok(c) => counters.push(c),
                    // A thread that ended meanwhile is no loss.
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => why = Some(format!("perf_event_open of instructions on thread {tid}: {e}")),
                }
            }
        }
        GroupInstructions { counters, why }
    }
}

impl Count for GroupInstructions {
    fn count(&mut self) -> Result<Option<u64>, String> {
        if let Some(why) = &self.why {
            return Err(why.clone());
        }
        if self.counters.is_empty() {
            return Err("no thread of the job to count (it ended before its counters opened)".into());
        }
        let mut sum = 0u64;
        for c in &self.counters {
            sum += c.read().map_err(|e| format!("reading an instructions counter: {e}"))?;
        }
        Ok(Some(sum))
    }
}

/// Instructions retired per second against the solo run's rate: a job's
/// `total` instructions alone over its solo time. A job makes the same
/// instructions beside others (fixed work), only slower, so this is its
/// progress where it prints none; spin-waiting (an MPI rank polling, an
/// OpenMP barrier spinning) retires instructions without progress and
/// makes a slowdown look smaller than it is.
pub struct Counters {
    total: Option<f64>,
    source: Box<dyn Count>,
}

impl Counters {
    pub fn new(total: Option<f64>, source: Box<dyn Count>) -> Counters {
        Counters { total, source }
    }
}

impl Observer for Counters {
    fn name(&self) -> &'static str {
        "counters"
    }

    fn read(&mut self, now: f64, _at: Instant) -> Result<Option<Reading>, String> {
        let Some(n) = self.source.count()? else { return Ok(None) };
        Ok(Some(Reading { time: now, done: n as f64, total: self.total, solo_rate: None, signal: Signal::Counters }))
    }
}

/// An observer that can never read: says why, once.
struct Broken {
    name: &'static str,
    why: String,
}

impl Observer for Broken {
    fn name(&self) -> &'static str {
        self.name
    }
    fn read(&mut self, _: f64, _: Instant) -> Result<Option<Reading>, String> {
        Err(self.why.clone())
    }
}

/// A number as a workload's counter writes it: digits, a fraction, an
/// exponent (`12`, `0.5`, `3e4`); nothing else.
fn counter_value(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// How long ago, on the machine's clock, `path` was last written: a line
/// printed before the read is dated when it was printed.
fn written_ago(m: &std::fs::Metadata) -> f64 {
    m.modified().ok().and_then(|t| t.elapsed().ok()).map_or(0.0, |d| d.as_secs_f64())
}

/// A command's progress read from its output: the newest line the
/// workload's `progress` regex matches, its first capture group the work
/// done, its group `total` (else the key's `total`) the whole. The output
/// is read as [`crate::files::read_tail`] reads it: a regular file only,
/// opened non-blocking without following a link, its last 64 KiB, each
/// line cut to [`crate::files::LINE_CHARS`] characters.
pub struct OutputLines {
    path: PathBuf,
    own: bool,
    user: Option<(u32, u32)>,
    regex: regex_lite::Regex,
    total: Option<f64>,
}

impl OutputLines {
    pub fn new(path: &Path, own: bool, user: Option<(u32, u32)>, regex: &str, total: Option<f64>) -> Result<OutputLines, String> {
        let regex = cosched_model::workload::progress_regex(regex)?;
        Ok(OutputLines { path: path.to_path_buf(), own, user, regex, total })
    }

    /// The work done and the whole in the newest matching line of `text`,
    /// and whether that line is the last one.
    pub fn newest(&self, text: &str) -> Option<(f64, Option<f64>, bool)> {
        let lines: Vec<&str> = text.lines().collect();
        lines.iter().enumerate().rev().find_map(|(k, line)| {
            let line = match line.char_indices().nth(crate::files::LINE_CHARS) {
                Some((at, _)) => &line[..at],
                None => line,
            };
            let c = self.regex.captures(line)?;
            let done = counter_value(c.get(1)?.as_str())?;
            let total = c.name("total").and_then(|t| counter_value(t.as_str())).or(self.total);
            Some((done, total, k + 1 == lines.len()))
        })
    }
}

impl Observer for OutputLines {
    fn name(&self) -> &'static str {
        "progress regex"
    }

    fn read(&mut self, now: f64, _at: Instant) -> Result<Option<Reading>, String> {
        let tail = if self.own { crate::files::read_own_tail(&self.path, self.user) } else { crate::files::read_tail(&self.path, self.user) };
        if let Some(why) = tail.not_read {
            return Err(why);
        }
        let Some((done, total, last)) = self.newest(&tail.text) else { return Ok(None) };
        // The newest line dated by the file's last write when nothing was
        // written after it; else now (a later line moved the date on).
        let ago = if last { std::fs::symlink_metadata(&self.path).map_or(0.0, |m| written_ago(&m)) } else { 0.0 };
        Ok(Some(Reading { time: now - ago, done, total, solo_rate: None, signal: Signal::Progress }))
    }
}

/// A file the program rewrites with its progress, `DONE` or `DONE TOTAL`
/// (`DONE/TOTAL` too), dated by its last write.
pub struct ProgressFile {
    pub path: PathBuf,
    pub total: Option<f64>,
}

/// `DONE`, `DONE TOTAL` or `DONE/TOTAL`: the first line of a progress file.
pub fn parse_progress_line(text: &str) -> Option<(f64, Option<f64>)> {
    let line = text.lines().next()?;
    let mut w = line.split(|c: char| c.is_whitespace() || c == '/').filter(|s| !s.is_empty());
    let done = counter_value(w.next()?)?;
    let total = match w.next() {
        Some(t) => Some(counter_value(t).filter(|t| *t > 0.0)?),
        None => None,
    };
    Some((done, total))
}

impl Observer for ProgressFile {
    fn name(&self) -> &'static str {
        "progress file"
    }

    fn read(&mut self, now: f64, _at: Instant) -> Result<Option<Reading>, String> {
        let (text, ago) = match read_small_dated(&self.path) {
            Ok(t) => t,
            // Not written yet: the program has not started counting.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let Some((done, total)) = parse_progress_line(&text) else { return Ok(None) };
        Ok(Some(Reading { time: now - ago, done, total: total.or(self.total), solo_rate: None, signal: Signal::Progress }))
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

/// [`read_small`] with how long ago the file was last written, seconds.
fn read_small_dated(path: &Path) -> std::io::Result<(String, f64)> {
    let mut f = File::options().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    (&mut f).take(256).read_to_string(&mut text)?;
    Ok((text, written_ago(&m)))
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

    #[test]
    fn a_synthetic_output_stream_at_half_the_solo_rate_estimates_a_slowdown_of_two() {
        // Alone the job makes its 40 steps in 4 s (10 a second); here it
        // prints one every 0.2 s (5 a second), between lines of noise.
        let o = OutputLines::new(Path::new("unused"), false, None, r"step (\d+) of (?P<total>\d+)", None).unwrap();
        let mut t = cosched_engine::online::Tracker::default();
        let mut text = String::new();
        for k in 0..=10 {
            text.push_str(&format!("step {k} of 40\nsolver: residual 1e-{k}\n"));
            let (done, total, last) = o.newest(&text).unwrap();
            assert_eq!((done, total, last), (f64::from(k), Some(40.0), false));
            t.push(&Reading { time: 0.2 * f64::from(k), done, total, solo_rate: None, signal: Signal::Progress });
        }
        let e = t.estimate(2.0, 4.0).unwrap();
        assert!((e.slowdown - 2.0).abs() < 1e-9 && e.lo <= e.slowdown && e.hi >= e.slowdown, "{e:?}");
        assert_eq!((e.n, e.signal), (10, Signal::Progress));
    }

    #[test]
    fn the_newest_matching_line_counts_and_the_keys_total_stands_in_for_a_missing_group() {
        let o = OutputLines::new(Path::new("unused"), false, None, r"it=(\d+)", Some(500.0)).unwrap();
        assert_eq!(o.newest("it=3\nit=4\n"), Some((4.0, Some(500.0), true)));
        assert_eq!(o.newest("it=3\ndone\n"), Some((3.0, Some(500.0), false)));
        assert_eq!(o.newest("it=x\nnothing\n"), None);
        // A line past the bound is matched on its first LINE_CHARS characters.
        let long = format!("{}it=9\n", "x".repeat(crate::files::LINE_CHARS));
        assert_eq!(o.newest(&long), None);
    }

    #[test]
    fn an_output_file_is_read_and_a_directory_or_unmatched_output_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("job.log");
        std::fs::write(&log, "start\nstep 7 of 20\n").unwrap();
        let mut o = OutputLines::new(&log, false, None, r"step (\d+) of (?P<total>\d+)", None).unwrap();
        let r = o.read(5.0, Instant::now()).unwrap().unwrap();
        assert_eq!((r.done, r.total, r.signal), (7.0, Some(20.0), Signal::Progress));
        assert!(r.time <= 5.0, "dated at the write, before the read");
        let mut d = OutputLines::new(dir.path(), false, None, r"(\d+)", None).unwrap();
        assert!(d.read(1.0, Instant::now()).is_err());
        std::fs::write(&log, "hello\n").unwrap();
        let mut w = Watch::new(Box::new(OutputLines::new(&log, false, None, r"step (\d+)", None).unwrap()));
        let said: Vec<Sample> = (0..3 * SILENT_AFTER).filter_map(|k| w.sample(f64::from(k), Instant::now())).collect();
        assert_eq!(said, vec![Sample::Silent(format!("progress regex: nothing after {SILENT_AFTER} readings"))]);
    }

    /// Counts handed out in order, as a counter read at each sample would.
    struct Stream(std::vec::IntoIter<u64>);
    impl Count for Stream {
        fn count(&mut self) -> Result<Option<u64>, String> {
            Ok(self.0.next())
        }
    }

    #[test]
    fn a_synthetic_instruction_stream_at_a_third_of_the_solo_rate_estimates_three() {
        // Alone: 6e9 instructions in 2 s (3e9 a second). Here: 1e9 a
        // second, read every 0.25 s, starting at an arbitrary count.
        let counts: Vec<u64> = (0..=8).map(|k| 5_000_000 + k * 250_000_000).collect();
        let mut c = Counters::new(Some(6e9), Box::new(Stream(counts.into_iter())));
        let mut t = cosched_engine::online::Tracker::default();
        for k in 0..=8 {
            let r = c.read(10.0 + 0.25 * f64::from(k), Instant::now()).unwrap().unwrap();
            assert_eq!((r.signal, r.total), (Signal::Counters, Some(6e9)));
            t.push(&r);
        }
        let e = t.estimate(12.0, 2.0).unwrap();
        assert_eq!((e.slowdown, e.lo, e.hi, e.n, e.signal), (3.0, 3.0, 3.0, 8, Signal::Counters));
        assert_eq!(c.read(13.0, Instant::now()), Ok(None), "the stream ended: nothing yet");
    }

    #[test]
    fn counters_on_this_node_yield_rates_or_say_not_counting_exactly_once() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).process_group(0).spawn().unwrap();
        let pgid = child.id() as i32;
        let progress = ProgressSource::Counters { total: Some(1e9) };
        let dir = tempfile::tempdir().unwrap();
        let sources = Sources {
            kernel: false,
            counter: Path::new(""),
            pgid,
            cores: 1,
            progress: Some(&progress),
            output: &dir.path().join("out"),
            own_output: true,
            user: None,
            workdir: None,
        };
        let mut w = Watch::new(for_job(&sources));
        assert_eq!(w.name(), "counters");
        let said: Vec<Sample> = (0..3 * SILENT_AFTER)
            .filter_map(|k| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                w.sample(f64::from(k) * 0.005, Instant::now())
            })
            .collect();
        let _ = child.kill();
        let _ = child.wait();
        match crate::perf::instructions_counting() {
            Ok(()) => {
                eprintln!("instructions count on this node: {} readings", said.len());
                assert_eq!(said.len(), (3 * SILENT_AFTER) as usize, "{said:?}");
                let counts: Vec<f64> = said.iter().map(|s| if let Sample::Reading(r) = s { r.done } else { panic!("{s:?}") }).collect();
                assert!(counts.windows(2).all(|w| w[1] >= w[0]) && counts[counts.len() - 1] > counts[0], "{counts:?}");
            }
            Err(why) => {
                eprintln!("instructions do not count on this node: {why}");
                assert_eq!(said, vec![Sample::Silent(format!("counters: not counting: {why}"))]);
            }
        }
    }

    #[test]
    fn a_kernel_job_reads_its_own_counter_before_a_progress_key() {
        let progress = ProgressSource::Counters { total: None };
        let s = Sources {
            kernel: true,
            counter: Path::new("k.progress"),
            pgid: 0,
            cores: 1,
            progress: Some(&progress),
            output: Path::new("out"),
            own_output: true,
            user: None,
            workdir: None,
        };
        assert_eq!(for_job(&s).name(), "kernel counter");
        assert_eq!(for_job(&Sources { kernel: false, progress: None, ..s }).name(), "cpu time");
    }

    #[test]
    fn a_progress_file_reads_done_and_an_optional_total() {
        assert_eq!(parse_progress_line("12\n"), Some((12.0, None)));
        assert_eq!(parse_progress_line("12 100"), Some((12.0, Some(100.0))));
        assert_eq!(parse_progress_line("12/100\nignored"), Some((12.0, Some(100.0))));
        assert_eq!(parse_progress_line("12 0"), None);
        assert_eq!(parse_progress_line("twelve"), None);
        assert_eq!(parse_progress_line(""), None);
        let dir = tempfile::tempdir().unwrap();
        let mut f = ProgressFile { path: dir.path().join("p"), total: Some(50.0) };
        assert_eq!(f.read(1.0, Instant::now()), Ok(None));
        std::fs::write(&f.path, "10\n").unwrap();
        let r = f.read(3.0, Instant::now()).unwrap().unwrap();
        assert_eq!((r.done, r.total), (10.0, Some(50.0)));
    }
}
