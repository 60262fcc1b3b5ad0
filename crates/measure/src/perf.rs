//! Counting a job's system calls and hardware events with perf.
//!
//! # Method
//!
//! A profiled job is started stopped (see [`crate::profile`]): its first
//! process has not yet exec'd the job's program, forked or made a system call
//! of the job. While it is stopped, counters are attached to that one process
//! with `inherit` set, so every process and thread the job will ever create
//! carries them, and the kernel folds the counts of each ended child back into
//! the counter cosched holds. Nothing of the tree can escape the count,
//! whatever it forks and however short its children live.
//!
//! In order of preference:
//!
//! 1. [`SyscallMethod::Tracepoint`]: cosched opens the `raw_syscalls:sys_enter`
//!    tracepoint itself with `perf_event_open(2)`, enabled on exec, so the count
//!    is exactly the job's calls from its first instruction on, and reading the
//!    counter at each sample costs one `read(2)`: the rate is known per sample.
//!    It needs a readable tracefs (for the event id) and leave to count a
//!    kernel event: `perf_event_paranoid` <= 1, or CAP_PERFMON / root. (With
//!    `exclude_kernel` the open would succeed unprivileged but count nothing:
//!    the tracepoint fires in kernel mode.)
//! 2. [`SyscallMethod::PerfStat`]: the `perf` tool attached with `perf stat -p`
//!    to the stopped process; for systems where only the `perf` binary holds
//!    the capability (`setcap cap_perfmon` for a `perf_users` group). The count
//!    is a total for the run. `perf stat -- COMMAND` would count the same but
//!    puts perf between cosched and the job and reports a job killed by a
//!    signal as exit 0; attaching keeps the job cosched's own child.
//! 3. [`SyscallMethod::Proc`]: `syscr + syscw` of /proc, read by the sampler:
//!    read/write-class calls only, a lower bound.
//!
//! Cost: while a `raw_syscalls` tracepoint is enabled, every system call on the
//! machine takes the traced entry path, and each of the job's calls builds a
//! trace record for the counter: on this KVM guest about 0.2 us per call,
//! which doubles the run time of the `syscall` kernel (~5 M calls/s) and is
//! lost in the noise for `compute` (`cosched bench profile --kernel syscall`
//! shows it; `perf stat` costs the same, /proc counting nothing). The *count*
//! of a fixed-work job is unaffected, its *rate* is not: see
//! `ProfileSummary::syscall_count`. This is the SX-Aurora paper's observation that
//! monitoring system calls is expensive, and why host load is its proxy.
//!
//! Hardware counters (instructions, cycles, cache references and misses) are
//! opened the same way when the machine exposes them; a KVM guest often does
//! not, so they are optional everywhere and simply absent when unsupported.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cosched_model::profile::SyscallSource;

/// How to count a job's system calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyscallMethod {
    /// The best that works here: tracepoint, then `perf stat`, then /proc.
    #[default]
    Auto,
    Tracepoint,
    PerfStat,
    Proc,
}

impl SyscallMethod {
    pub const NAMES: &'static str = "auto, tracepoint, perf-stat, proc";

    pub fn name(self) -> &'static str {
        match self {
            SyscallMethod::Auto => "auto",
            SyscallMethod::Tracepoint => "tracepoint",
            SyscallMethod::PerfStat => "perf-stat",
            SyscallMethod::Proc => "proc",
        }
    }
}

impl std::str::FromStr for SyscallMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [SyscallMethod::Auto, SyscallMethod::Tracepoint, SyscallMethod::PerfStat, SyscallMethod::Proc]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown syscall counting method `{s}`; expected one of {}", SyscallMethod::NAMES))
    }
}

/// The hardware events cosched asks for, by perf's names.
pub const HW_EVENTS: [(&str, u64); 4] = [
    ("instructions", PERF_COUNT_HW_INSTRUCTIONS),
    ("cycles", PERF_COUNT_HW_CPU_CYCLES),
    ("cache-references", PERF_COUNT_HW_CACHE_REFERENCES),
    ("cache-misses", PERF_COUNT_HW_CACHE_MISSES),
];

const SYS_ENTER: &str = "raw_syscalls:sys_enter";

// From <linux/perf_event.h>; the libc crate does not carry them.
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_INHERIT: u64 = 1 << 1;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_ENABLE_ON_EXEC: u64 = 1 << 12;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr` as of its first version (PERF_ATTR_SIZE_VER0, 64
/// bytes): every kernel accepts it and zero-extends the fields it lacks.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The kernel's bitfield (disabled, inherit, ..., enable_on_exec, ...).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 64);

/// One open perf counter on a process and, through `inherit`, its descendants.
#[derive(Debug)]
pub struct Counter {
    fd: OwnedFd,
    /// perf's name of the event (`:u` appended when user-space only).
    pub name: String,
}

impl Counter {
    /// Opens a counter on `pid`, disabled until that process exec's.
    fn open(pid: i32, type_: u32, config: u64, exclude_kernel: bool, name: String) -> std::io::Result<Counter> {
        let mut flags = ATTR_DISABLED | ATTR_INHERIT | ATTR_ENABLE_ON_EXEC | ATTR_EXCLUDE_HV;
        if exclude_kernel {
            flags |= ATTR_EXCLUDE_KERNEL;
        }
        Counter::open_flags(pid, type_, config, flags, name)
    }

    fn open_flags(pid: i32, type_: u32, config: u64, flags: u64, name: String) -> std::io::Result<Counter> {
        let attr = PerfEventAttr {
            type_,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
            flags,
            ..PerfEventAttr::default()
        };
        // SAFETY: `attr` is a fully initialised perf_event_attr whose `size`
        // field tells the kernel how much of it to read; the kernel does not
        // keep the pointer past the call. The other arguments are plain
        // integers (cpu -1 = any CPU, group -1 = no group).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                pid as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: perf_event_open returned a new file descriptor that nothing
        // else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        Ok(Counter { fd, name })
    }

    /// The count so far, over the process and all its descendants (live ones
    /// included), scaled up if the PMU had to multiplex the counter.
    pub fn read(&self) -> std::io::Result<u64> {
        let mut buf = [0u64; 3];
        // SAFETY: buf is 24 writable bytes, exactly the size of the
        // value/time_enabled/time_running record asked for in read_format.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n as usize != std::mem::size_of_val(&buf) {
            return Err(std::io::Error::other(format!("short read of {n} bytes from a perf counter")));
        }
        let [value, enabled, running] = buf;
        Ok(if running > 0 && running < enabled {
            (value as f64 * enabled as f64 / running as f64).round() as u64
        } else {
            value
        })
    }
}

/// The tracepoint's id, from tracefs where it is mounted.
fn tracepoint_id(category: &str, event: &str) -> std::io::Result<u64> {
    let mut last = std::io::Error::other("no tracefs");
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        match std::fs::read_to_string(format!("{root}/events/{category}/{event}/id")) {
            Ok(s) => {
                return s
                    .trim()
                    .parse()
                    .map_err(|e| std::io::Error::other(format!("{root}/events/{category}/{event}/id: {e}")))
            }
            Err(e) => last = std::io::Error::new(e.kind(), format!("{root}/events/{category}/{event}/id: {e}")),
        }
    }
    Err(last)
}

/// Opens the syscall tracepoint on a stopped, not yet exec'd process.
pub fn open_syscall_counter(pid: i32) -> std::io::Result<Counter> {
    let id = tracepoint_id("raw_syscalls", "sys_enter")?;
    Counter::open(pid, PERF_TYPE_TRACEPOINT, id, false, SYS_ENTER.to_string())
}

/// Opens whichever hardware counters this machine supports on `pid`: with
/// kernel-mode counts when allowed, else user-space only (named `...:u`).
pub fn open_hw_counters(pid: i32) -> Vec<Counter> {
    HW_EVENTS
        .iter()
        .filter_map(|&(name, config)| {
            Counter::open(pid, PERF_TYPE_HARDWARE, config, false, name.to_string())
                .or_else(|_| Counter::open(pid, PERF_TYPE_HARDWARE, config, true, format!("{name}:u")))
                .ok()
        })
        .collect()
}

/// Opens a counter of instructions retired on a task that already runs,
/// counting from now on, with `inherit` so every thread and process it
/// creates from now on is folded into the one count; kernel-mode
/// instructions too where allowed, else user-space only.
pub fn open_running_instructions(tid: i32) -> std::io::Result<Counter> {
    let flags = ATTR_INHERIT | ATTR_EXCLUDE_HV;
    Counter::open_flags(tid, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, flags, "instructions".into())
        .or_else(|_| Counter::open_flags(tid, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, flags | ATTR_EXCLUDE_KERNEL, "instructions:u".into()))
}

/// Whether instructions retired count on this machine, found once per
/// process: a user-space counter on the calling thread over a short busy
/// loop. `Err` says why not (no hardware PMU: a KVM guest without a
/// virtual one, `perf_event_paranoid` above 2, or a counter that reads 0).
/// Generic hardware counters count on some of the machines cosched runs on
/// and not on others, so this is asked at run time, never assumed.
pub fn instructions_counting() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe_instructions).clone()
}

fn probe_instructions() -> Result<(), String> {
    let c = Counter::open_flags(0, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV, "instructions:u".into())
        .map_err(|e| format!("perf_event_open of instructions: {e} (no hardware counters on this machine)"))?;
    let mut x = 1u64;
    for k in 0..100_000u64 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(k));
    }
    match c.read() {
        Ok(0) => Err("instructions counted 0 over a busy loop: the counter does not count here".into()),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("reading an instructions counter: {e}")),
    }
}

/// What the `perf` tool can count here, found once per process by running
/// `perf stat` on `true`.
#[derive(Debug, Clone)]
pub struct PerfToolProbe {
    pub syscalls: bool,
    /// Hardware events `perf stat` gave a number for.
    pub hw_events: Vec<String>,
}

pub fn perf_tool() -> Option<&'static PerfToolProbe> {
    static PROBE: OnceLock<Option<PerfToolProbe>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let syscalls = !perf_stat_counts(&[SYS_ENTER])?.is_empty();
            let names: Vec<&str> = HW_EVENTS.iter().map(|e| e.0).collect();
            let hw_events = perf_stat_counts(&names).map(|c| c.into_keys().collect()).unwrap_or_default();
            Some(PerfToolProbe { syscalls, hw_events })
        })
        .as_ref()
}

/// Counts of `perf stat -x, -e EVENTS true`, `None` when perf cannot run.
fn perf_stat_counts(events: &[&str]) -> Option<BTreeMap<String, f64>> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", &events.join(","), "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| parse_perf_stat_csv(&String::from_utf8_lossy(&out.stderr)))
}

/// Parses `perf stat -x,` output: `count,unit,event,...` per line; events
/// printed as `<not supported>` or `<not counted>` are left out.
pub fn parse_perf_stat_csv(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 3 || line.starts_with('#') {
            continue;
        }
        if let Ok(v) = f[0].trim().parse::<f64>() {
            out.insert(f[2].trim().to_string(), v);
        }
    }
    out
}

/// `perf stat -p` attached to a job; killed if dropped.
#[derive(Debug)]
pub struct PerfStatRun {
    child: Option<Child>,
}

impl PerfStatRun {
    /// Attaches `perf stat` to a stopped process and returns once perf's
    /// counters are open and it has gone to sleep waiting for the job, which
    /// is after it enabled them.
    pub fn attach(pid: i32, probe: &PerfToolProbe) -> std::io::Result<PerfStatRun> {
        let mut events = vec![SYS_ENTER.to_string()];
        events.extend(probe.hw_events.iter().cloned());
        let mut cmd = Command::new("perf");
        cmd.args(["stat", "-x,", "-e", &events.join(","), "-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: runs in the forked child before exec and only calls prctl,
        // an async-signal-safe system call touching no shared memory. It ties
        // perf's life to cosched's: if cosched is killed outright, perf is not
        // left attached to nothing.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let mut run = PerfStatRun { child: Some(child) };
        let perf_pid = run.child.as_ref().map(|c| c.id() as i32).expect("just spawned");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = run.child.as_mut().expect("present").try_wait()? {
                let stderr = run.take_stderr();
                return Err(std::io::Error::other(format!("`perf stat -p` ended ({status}) before the job ran: {}", stderr.trim())));
            }
            if perf_event_fds(perf_pid) >= events.len() && process_state(perf_pid) == Some('S') {
                return Ok(run);
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other("`perf stat -p` did not attach within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn take_stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(e) = self.child.as_mut().and_then(|c| c.stderr.as_mut()) {
            let _ = e.read_to_string(&mut s);
        }
        s
    }

    /// Stops perf (SIGINT makes it print its counts) and returns them.
    pub fn finish(mut self) -> std::io::Result<BTreeMap<String, f64>> {
        let mut child = self.child.take().expect("finish is called once");
        // SAFETY: plain kill(2) on our own child, which has not been reaped
        // (we own its Child), so the pid cannot have been reused.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let mut stderr = String::new();
        let read = child.stderr.take().map(|mut e| e.read_to_string(&mut stderr));
        child.wait()?;
        if let Some(Err(e)) = read {
            return Err(e);
        }
        let counts = parse_perf_stat_csv(&stderr);
        if !counts.contains_key(SYS_ENTER) {
            return Err(std::io::Error::other(format!("`perf stat -p` printed no {SYS_ENTER} count: {}", stderr.trim())));
        }
        Ok(counts)
    }
}

impl Drop for PerfStatRun {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How many perf event file descriptors a process holds.
fn perf_event_fds(pid: i32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    dir.flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("perf_event")))
        .count()
}

fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rfind(')').and_then(|i| stat[i + 1..].trim_start().chars().next())
}

/// Counters attached to a job.
#[derive(Debug)]
pub enum Attached {
    Tracepoint { syscalls: Counter, hw: Vec<Counter> },
    PerfStat(PerfStatRun),
    Proc,
}

/// What the counters found over a whole run.
#[derive(Debug, Clone)]
pub struct Counted {
    pub source: SyscallSource,
    pub syscall_total: Option<u64>,
    pub counters: BTreeMap<String, f64>,
}

impl Attached {
    pub fn source(&self) -> SyscallSource {
        match self {
            Attached::Tracepoint { .. } => SyscallSource::PerfTracepoint,
            Attached::PerfStat(_) => SyscallSource::PerfStat,
            Attached::Proc => SyscallSource::ProcSyscrSyscw,
        }
    }

    /// System calls so far, where they are counted per sample.
    pub fn syscalls_now(&self) -> Option<u64> {
        match self {
            Attached::Tracepoint { syscalls, .. } => syscalls.read().ok(),
            _ => None,
        }
    }

    /// Final counts, once the job has ended.
    pub fn finish(self) -> std::io::Result<Counted> {
        let source = self.source();
        Ok(match self {
            Attached::Tracepoint { syscalls, hw } => {
                let mut counters = BTreeMap::new();
                for c in &hw {
                    counters.insert(c.name.clone(), c.read()? as f64);
                }
                Counted { source, syscall_total: Some(syscalls.read()?), counters }
            }
            Attached::PerfStat(run) => {
                let mut counters = run.finish()?;
                let total = counters.remove(SYS_ENTER).map(|v| v as u64);
                Counted { source, syscall_total: total, counters }
            }
            Attached::Proc => Counted { source, syscall_total: None, counters: BTreeMap::new() },
        })
    }
}

/// Attaches counters to `pid`, a process stopped before it exec's the job.
///
/// With [`SyscallMethod::Auto`] each method that fails is noted in `notes`
/// (why the profile's source is not the best one) and the next is tried; a
/// method asked for by name that fails is an error.
pub fn attach(pid: i32, method: SyscallMethod, hw: bool, notes: &mut Vec<String>) -> std::io::Result<Attached> {
    let auto = method == SyscallMethod::Auto;
    if auto || method == SyscallMethod::Tracepoint {
        match open_syscall_counter(pid) {
            Ok(syscalls) => {
                let hw = if hw { open_hw_counters(pid) } else { Vec::new() };
                return Ok(Attached::Tracepoint { syscalls, hw });
            }
            Err(e) if auto => notes.push(format!("perf_event_open of {SYS_ENTER}: {e}")),
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("perf_event_open of {SYS_ENTER}: {e}"))),
        }
    }
    if auto || method == SyscallMethod::PerfStat {
        let run = match perf_tool() {
            Some(p) if p.syscalls => {
                let probe = PerfToolProbe { syscalls: true, hw_events: if hw { p.hw_events.clone() } else { Vec::new() } };
                PerfStatRun::attach(pid, &probe)
            }
            Some(_) => Err(std::io::Error::other(format!("`perf stat -e {SYS_ENTER} true` counted nothing"))),
            None => Err(std::io::Error::other("`perf stat` does not run here (linux-perf not installed?)")),
        };
        match run {
            Ok(r) => return Ok(Attached::PerfStat(r)),
            Err(e) if auto => notes.push(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    Ok(Attached::Proc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv_keeps_counted_events_only() {
        let text = "# started on Sun Nov 22 21:51:31 2026\n\n\
                    349,,raw_syscalls:sys_enter,2853352,100.00,,\n\
                    <not supported>,,instructions,0,100.00,,\n\
                    1200,,cycles:u,2853352,50.00,,\n\
                    <not counted>,,cache-misses,0,0.00,,\n";
        let c = parse_perf_stat_csv(text);
        assert_eq!(c.len(), 2);
        assert_eq!(c["raw_syscalls:sys_enter"], 349.0);
        assert_eq!(c["cycles:u"], 1200.0);
    }

    #[test]
    fn method_names_round_trip() {
        for m in [SyscallMethod::Auto, SyscallMethod::Tracepoint, SyscallMethod::PerfStat, SyscallMethod::Proc] {
            assert_eq!(m.name().parse::<SyscallMethod>(), Ok(m));
        }
        assert!("strace".parse::<SyscallMethod>().unwrap_err().contains("tracepoint"));
    }
}
