//! Solo profiles: a job run alone, pinned as it will be when shared, with its
//! whole process tree sampled at an interval.
//!
//! The job is started *held*: `sh -c 'kill -STOP $$; exec "$@"'` in front of
//! its command stops the job's first process before it exec's the program.
//! While it is stopped, the syscall and hardware counters are attached (see
//! [`crate::perf`]; they must be in place before the first fork so every
//! descendant inherits them) and the baseline sample is taken; then SIGCONT
//! releases it, and `Sample::t_s` = 0 is that moment. The shell exec's the
//! command in place, so the job keeps the pid, the process group, the pinning
//! and the exit status cosched sees, exactly as with a plain launch; the
//! shell's own start-up (about a millisecond, before the stop) is in the
//! baseline and so in no rate.
//!
//! Between samples the sampling thread sleeps on a pidfd until the next
//! sample is due or the job exits; at the exit the job is still an unreaped
//! zombie, so the final sample reads its complete counters before it is
//! reaped.
//!
//! The /proc sampler costs a job nothing measurable (`cosched bench profile`).
//! Counting system calls with perf does cost a syscall-heavy job (about 0.2 us
//! per call on this VM, see [`crate::perf`]), so its solo *time* is best taken
//! from runs with [`SyscallMethod::Proc`], and its exact call count from one
//! counted run: the count of fixed work does not change with speed.

use std::time::{Duration, Instant};

use cosched_model::profile::{summarize, ProfileSummary, RunFacts, Sample, SyscallSource};
use cosched_model::stats::Summary;
use serde::Serialize;

use crate::corun::{job_time, SETTLE};
use crate::kernel::{kernel_argv, run_kernel, KernelRunError};
use crate::launch::{interrupted, run, spawn, Exit, Launch, LaunchError, ExitReport, Running, POLL};
use crate::perf::{attach, Counted, SyscallMethod};
use crate::cgroup::StallGroup;
use crate::sampler::{ExitWatch, TreeSampler};

/// How to profile.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// Time between samples (the SX-Aurora paper: 1 s).
    pub interval: Duration,
    /// Cores of the host pool: the denominator of the host load U.
    pub host_cores: u32,
    pub syscalls: SyscallMethod,
    /// Open hardware counters where the machine has them.
    pub hw_counters: bool,
    /// Run the job in an accounting group of the cgroup v2 tree to read its
    /// stalls (CPU, I/O, memory pressure) where the kernel keeps them.
    pub stalls: bool,
}

impl ProfileOptions {
    pub fn new(interval: Duration, host_cores: u32) -> ProfileOptions {
        ProfileOptions { interval, host_cores, syscalls: SyscallMethod::Auto, hw_counters: true, stalls: true }
    }
}

/// One profiled run.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRun {
    /// The process's own outcome: exit, rusage, stdout (a kernel's report).
    /// Its `wall_s` includes the hold (shell start-up and counter set-up, a
    /// few milliseconds); `summary.wall_s` runs from release to exit.
    pub outcome: ExitReport,
    pub samples: Vec<Sample>,
    /// `max_rss_kib` is the larger of the sampled peak and the kernel's
    /// high-water mark (rusage), which catches peaks between samples.
    pub summary: ProfileSummary,
    /// Why the syscall source is not the best one, when it is not.
    pub notes: Vec<String>,
    /// CPU time cosched's sampling thread spent from the job's release to its
    /// final sample: the sampler's own cost, on whichever core it ran.
    pub sampler_cpu_s: f64,
}

impl ProfileRun {
    /// The solo time: a kernel's work-phase time when it reported one, else
    /// the process wall time (see [`crate::corun::job_time`]).
    pub fn job_time(&self) -> (f64, &'static str) {
        job_time(&self.outcome)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("`{cmd}` failed ({exit}): {stderr}")]
    Failed { cmd: String, exit: Exit, stderr: String },
    #[error("counting system calls: {0}")]
    Counters(std::io::Error),
    #[error("the sampling interval must be above zero")]
    ZeroInterval,
    #[error("`{0}` ended before a profile could be taken")]
    NoSummary(String),
    #[error(transparent)]
    Kernel(#[from] KernelRunError),
}

/// How often the sampling loop looks at the interrupt flag while it waits
/// for a long interval: a Ctrl-C delivered to another thread is noticed
/// within this, at ten wake-ups a second.
const INTERRUPT_CHECK: Duration = Duration::from_millis(100);

/// Runs `launch` to completion with its process tree sampled every
/// `interval`, counting system calls the best way this machine allows.
pub fn profile_job(launch: &Launch, interval: Duration, host_cores: u32) -> Result<ProfileRun, ProfileError> {
    profile_job_with(launch, &ProfileOptions::new(interval, host_cores))
}

pub fn profile_job_with(launch: &Launch, opts: &ProfileOptions) -> Result<ProfileRun, ProfileError> {
    if opts.interval.is_zero() {
        return Err(ProfileError::ZeroInterval);
    }
    if launch.argv.is_empty() {
        // The hold would exec nothing and "succeed".
        return Err(LaunchError::Empty.into());
    }
    let cmd = launch.argv.join(" ");
    let mut notes = Vec::new();
    let stall_group = if opts.stalls {
        StallGroup::create().map_err(|why| notes.push(format!("stalls not measured: {why}"))).ok()
    } else {
        None
    };
    let mut hold = held(launch);
    hold.cgroup_procs.extend(stall_group.as_ref().map(StallGroup::procs_file));
    let mut running = spawn(&hold)?;
    let pid = running.pid();
    if !wait_stopped(pid)? {
        return Err(failed(&cmd, reap(&mut running)?));
    }
    // An error here drops `running`, which kills the held job.
    let counters = attach(pid, opts.syscalls, opts.hw_counters, &mut notes).map_err(ProfileError::Counters)?;
    let watch = ExitWatch::new(pid);
    let mut sampler = TreeSampler::new(pid, opts.host_cores);
    let cpu0 = thread_cpu_s();
    let mut samples = vec![sampler.sample(counters.syscalls_now())];
    let stalls0 = stall_group.as_ref().and_then(StallGroup::totals);
    let outside0 = launch.cpus.as_ref().and_then(|own| busy_outside_s(own));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGCONT)
        .map_err(|e| LaunchError::Wait { pid, source: e.into() })?;
    let mut next = sampler.start() + opts.interval;
    loop {
        if let Some(sig) = interrupted() {
            return Err(LaunchError::Interrupted(sig).into());
        }
        if watch.wait_until(next.min(Instant::now() + INTERRUPT_CHECK)) {
            samples.push(sampler.sample(counters.syscalls_now()));
            break;
        }
        let now = Instant::now();
        if now >= next {
            samples.push(sampler.sample(counters.syscalls_now()));
            // A fixed grid, not "interval after the last sample": sampling
            // cost and wake-up latency do not stretch the interval, and a
            // late wake-up skips ticks rather than bunching them.
            while next <= now {
                next += opts.interval;
            }
        }
    }
    let sampler_cpu_s = thread_cpu_s() - cpu0;
    // The sampling thread is not pinned and may have run outside the job's
    // CPUs: its time is taken off, so an idle node reads about 0.
    let collateral_s = match (outside0, launch.cpus.as_ref().and_then(|own| busy_outside_s(own))) {
        (Some(a), Some(b)) => Some(b - a - sampler_cpu_s),
        _ => None,
    };
    // Read while the job is an unreaped zombie, as the final sample is.
    let stall_s = match (stalls0, stall_group.as_ref().and_then(StallGroup::totals)) {
        (Some(a), Some(b)) => Some(b.since(a)),
        _ => None,
    };
    let outcome = reap(&mut running)?;
    let counted = match counters.finish() {
        Ok(c) => c,
        // The samples still hold syscr/syscw: with Auto, a lower bound beats
        // losing the run.
        Err(e) if opts.syscalls == SyscallMethod::Auto => {
            notes.push(format!("reading the syscall count: {e}"));
            Counted { source: SyscallSource::ProcSyscrSyscw, syscall_total: None, counters: Default::default() }
        }
        Err(e) => return Err(ProfileError::Counters(e)),
    };
    if !outcome.exit.success() {
        return Err(failed(&cmd, outcome));
    }
    let facts = RunFacts {
        syscall_source: counted.source,
        syscall_total: counted.syscall_total,
        counters: counted.counters,
        stall_s,
        collateral_s,
    };
    let mut summary =
        summarize(&samples, opts.host_cores, facts).ok_or_else(|| ProfileError::NoSummary(cmd.clone()))?;
    summary.max_rss_kib = summary.max_rss_kib.max(outcome.max_rss_kib);
    Ok(ProfileRun { outcome, samples, summary, notes, sampler_cpu_s })
}

/// Seconds the CPUs other than `own` have been busy since boot (user,
/// nice, system, irq, softirq; not idle, iowait or steal), from
/// /proc/stat; `None` if it cannot be read or no other CPU exists.
fn busy_outside_s(own: &[u32]) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    busy_outside(&stat, own).map(|t| t as f64 / ticks as f64)
}

/// The busy ticks of the CPUs of `stat` (/proc/stat text) not in `own`.
fn busy_outside(stat: &str, own: &[u32]) -> Option<u64> {
    let mut total = None;
    for line in stat.lines() {
        // `cpu ` (the total) is not a CPU.
        let Some(rest) = line.strip_prefix("cpu").filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) else { continue };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(str::parse::<u32>) else { continue };
        if own.contains(&cpu) {
            continue;
        }
        let v: Vec<u64> = f.take(7).filter_map(|x| x.parse().ok()).collect();
        if v.len() < 7 {
            return None;
        }
        // user nice system idle iowait irq softirq
        *total.get_or_insert(0) += v[0] + v[1] + v[2] + v[5] + v[6];
    }
    total
}

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

/// CPU time of the whole calling process (all its threads), seconds: what a
/// benchmark cost in CPU, which a busy node does not inflate as it does wall
/// time.
pub fn process_cpu_s() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

/// The shell script that holds a job: it stops itself, and once continued,
/// replaces itself with the job's command (`$@`), keeping its pid.
const HOLD: &str = r#"kill -STOP $$; exec "$@""#;

fn held(launch: &Launch) -> Launch {
    let mut l = launch.clone();
    l.argv = ["/bin/sh", "-c", HOLD, "cosched-held"].iter().map(|s| s.to_string()).collect();
    l.argv.extend(launch.argv.iter().cloned());
    l
}

/// Blocks until the held job has stopped itself (true) or has ended (false),
/// leaving it waitable for its `Running`.
fn wait_stopped(pid: i32) -> Result<bool, LaunchError> {
    loop {
        // SAFETY: siginfo_t is plain data for which all-zero is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, exclusively borrowed out-pointer for the
        // call; WNOWAIT leaves the state to be collected by `Running`.
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WSTOPPED | libc::WEXITED | libc::WNOWAIT)
        };
        if r == 0 {
            return Ok(info.si_code == libc::CLD_STOPPED);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(LaunchError::Wait { pid, source: err });
        }
        if let Some(sig) = interrupted() {
            return Err(LaunchError::Interrupted(sig));
        }
    }
}

/// Collects a job known to have exited.
fn reap(running: &mut Running) -> Result<ExitReport, LaunchError> {
    loop {
        if let Some(o) = running.try_wait()? {
            return Ok(o);
        }
        std::thread::sleep(POLL);
    }
}

fn failed(cmd: &str, o: ExitReport) -> ProfileError {
    ProfileError::Failed { cmd: cmd.to_string(), exit: o.exit, stderr: o.stderr_tail }
}

/// The work that makes one run of a kernel last about `seconds` on `cpus`,
/// from one warm-up run at the catalogue's calibration work.
pub fn kernel_work_for(
    kernel: &str,
    params: &std::collections::BTreeMap<String, String>,
    threads: u32,
    cpus: &[u32],
    seconds: f64,
) -> Result<u64, ProfileError> {
    let base = cosched_model::kernel::kernel(kernel).map(|k| k.calibration_work).unwrap_or(1);
    let (_, rep) = run_kernel(&kernel_argv(kernel, base, threads, params), cpus)?;
    Ok(if rep.rate.is_finite() && rep.rate > 0.0 { ((rep.rate * seconds).round() as u64).max(1) } else { base })
}

/// A job's run time with the sampler at one interval over its run time
/// without, run by run.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalOverhead {
    pub interval_s: f64,
    pub sampled_s: Vec<f64>,
    /// sampled / plain of the same repeat.
    pub ratios: Vec<f64>,
    pub ratio: Summary,
    /// Samples per run (median), baseline and final included.
    pub samples_per_run: f64,
    /// The sampling thread's CPU time over the sampled run's time, per run:
    /// the share of one core the sampler itself takes.
    pub sampler_core_share: Summary,
}

/// What sampling costs a job: `cosched bench profile`.
#[derive(Debug, Clone, Serialize)]
pub struct SamplerOverhead {
    pub command: String,
    /// "work-phase" (a kernel's own timing) or "process".
    pub timing: &'static str,
    pub syscall_source: cosched_model::profile::SyscallSource,
    /// The job's system calls per second (median over the sampled runs).
    pub syscall_rate: Option<f64>,
    pub plain_s: Vec<f64>,
    pub intervals: Vec<IntervalOverhead>,
    pub notes: Vec<String>,
}

/// Runs `launch` `repeats` times plainly and once per interval with the
/// sampler in each repeat, rotating the order from repeat to repeat so that no
/// variant always runs first (warm caches) or last (a drifting node); each
/// ratio is taken within one repeat. `on_run(done, total)` reports progress.
pub fn sampler_overhead(
    launch: &Launch,
    intervals: &[Duration],
    repeats: usize,
    host_cores: u32,
    syscalls: SyscallMethod,
    on_run: &mut dyn FnMut(usize, usize),
) -> Result<SamplerOverhead, ProfileError> {
    let cmd = launch.argv.join(" ");
    let variants = intervals.len() + 1;
    let mut plain = Vec::with_capacity(repeats);
    let mut sampled: Vec<Vec<f64>> = vec![Vec::with_capacity(repeats); intervals.len()];
    let mut counts: Vec<Vec<f64>> = vec![Vec::with_capacity(repeats); intervals.len()];
    let mut shares: Vec<Vec<f64>> = vec![Vec::with_capacity(repeats); intervals.len()];
    let (mut timing, mut source, mut notes, mut rates) = ("process", None, Vec::new(), Vec::new());
    for r in 0..repeats {
        for k in 0..variants {
            let v = (k + r) % variants;
            std::thread::sleep(SETTLE);
            if v == 0 {
                let o = run(launch)?;
                if !o.exit.success() {
                    return Err(failed(&cmd, o));
                }
                let (t, how) = job_time(&o);
                plain.push(t);
                timing = how;
            } else {
                let mut opts = ProfileOptions::new(intervals[v - 1], host_cores);
                opts.syscalls = syscalls;
                let p = profile_job_with(launch, &opts)?;
                sampled[v - 1].push(p.job_time().0);
                counts[v - 1].push(p.samples.len() as f64);
                shares[v - 1].push(p.sampler_cpu_s / p.summary.wall_s);
                source = Some(p.summary.syscall_source);
                rates.extend(p.summary.syscall_rate);
                if notes.is_empty() {
                    notes = p.notes;
                }
            }
            on_run(r * variants + k + 1, repeats * variants);
        }
    }
    let none = || ProfileError::NoSummary(cmd.clone());
    let intervals = intervals
        .iter()
        .zip(sampled)
        .zip(counts.iter().zip(&shares))
        .map(|((iv, s), (c, sh))| {
            let ratios: Vec<f64> = s.iter().zip(&plain).map(|(a, b)| a / b).collect();
            Ok(IntervalOverhead {
                interval_s: iv.as_secs_f64(),
                ratio: Summary::of(&ratios).ok_or_else(none)?,
                ratios,
                sampled_s: s,
                samples_per_run: cosched_model::stats::median(c),
                sampler_core_share: Summary::of(sh).ok_or_else(none)?,
            })
        })
        .collect::<Result<Vec<_>, ProfileError>>()?;
    Ok(SamplerOverhead {
        command: cmd.clone(),
        timing,
        syscall_source: source.ok_or(ProfileError::NoSummary(cmd))?,
        syscall_rate: (!rates.is_empty()).then(|| cosched_model::stats::median(&rates)),
        plain_s: plain,
        intervals,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_ticks_outside_the_jobs_cpus_leave_out_idle_iowait_and_steal() {
        let stat = "cpu  10 0 10 100 5 0 0 3 0 0\n\
                    cpu0 1 2 3 40 5 6 7 8 0 0\n\
                    cpu1 10 20 30 400 50 60 70 80 0 0\n\
                    intr 12345\n";
        assert_eq!(busy_outside(stat, &[0]), Some(10 + 20 + 30 + 60 + 70));
        assert_eq!(busy_outside(stat, &[1]), Some(1 + 2 + 3 + 6 + 7));
        assert_eq!(busy_outside(stat, &[0, 1]), None, "no other CPU");
    }
}
