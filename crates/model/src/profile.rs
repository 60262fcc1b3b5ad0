//! Solo profiles: what a job asks of the node when it runs alone.
//!
//! A profile is a series of [`Sample`]s of the job's whole process tree taken
//! at a fixed interval (the SX-Aurora paper samples the "VH load" once a second) and a
//! [`ProfileSummary`] of the run. Samples hold *cumulative* counters, so any
//! rate over any span is a difference of two samples divided by the time
//! between them; the summary is computed from the first and the last sample
//! by [`summarize`], a pure function so that stored samples can be
//! re-summarised later and the arithmetic is pinned by hand-computed tests.
//! A job's profile over several runs is a [`JobProfile`]: the solo time over
//! repeats, each figure's median, and the exact system-call count of one
//! counted run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// The state of a job's process tree at one instant.
///
/// Counters are cumulative since the job started (the first sample, taken
/// when the job is released, is the baseline). They include processes of the
/// tree that have already ended: their CPU time, faults and I/O through the
/// `cutime`/`cstime`/`cminflt`/`cmajflt` and I/O accounting of the parent
/// that reaped them, their context switches as last seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the job was released (0 for the baseline).
    pub t_s: f64,
    /// Host load U over the interval ending at this sample: CPU seconds of the
    /// tree in the interval / (interval x host cores). 0 for the baseline.
    pub host_load: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub vol_ctx: u64,
    pub invol_ctx: u64,
    /// System calls entered by the tree, when counted per sample (the
    /// `raw_syscalls:sys_enter` tracepoint); `None` when only a total or a
    /// /proc lower bound is available.
    pub syscalls: Option<u64>,
    /// Bytes passed to read- and write-class system calls (`rchar`/`wchar`):
    /// files, pipes and sockets, whether or not they reach a device. This is
    /// what the job asks of the host's kernel.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes the block layer read / was asked to write for the tree
    /// (`read_bytes`/`write_bytes` of /proc/PID/io): storage traffic only.
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    /// Read- and write-class system calls (`syscr`/`syscw`).
    pub syscr: u64,
    pub syscw: u64,
    /// Resident set of the live processes of the tree (shared pages counted
    /// once per process), KiB. Not cumulative.
    pub rss_kib: u64,
    pub minflt: u64,
    pub majflt: u64,
    /// Live processes of the tree. Not cumulative.
    pub nprocs: u32,
}

impl Sample {
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_sys_s
    }
}

/// Where a profile's system-call rate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyscallSource {
    /// The `raw_syscalls:sys_enter` tracepoint counted by cosched itself
    /// through `perf_event_open`, inherited by every process and thread of
    /// the tree: exact, and available in every sample.
    PerfTracepoint,
    /// The same tracepoint counted by the `perf stat` tool attached to the
    /// job: exact, but a total for the run only.
    PerfStat,
    /// `syscr + syscw` of /proc/PID/io: only read- and write-class calls, so
    /// a lower bound of the true rate.
    ProcSyscrSyscw,
}

impl SyscallSource {
    pub const ALL: [SyscallSource; 3] =
        [SyscallSource::PerfTracepoint, SyscallSource::PerfStat, SyscallSource::ProcSyscrSyscw];

    /// Stable name, as stored and printed.
    pub fn name(self) -> &'static str {
        match self {
            SyscallSource::PerfTracepoint => "perf-tracepoint",
            SyscallSource::PerfStat => "perf-stat",
            SyscallSource::ProcSyscrSyscw => "proc-syscr-syscw",
        }
    }

    pub fn from_name(s: &str) -> Option<SyscallSource> {
        SyscallSource::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Whether the rate undercounts by construction.
    pub fn is_lower_bound(self) -> bool {
        self == SyscallSource::ProcSyscrSyscw
    }

    /// One line for people reading a profile.
    pub fn describe(self) -> &'static str {
        match self {
            SyscallSource::PerfTracepoint => "raw_syscalls:sys_enter tracepoint (perf_event_open), every call",
            SyscallSource::PerfStat => "raw_syscalls:sys_enter tracepoint via `perf stat`, every call",
            SyscallSource::ProcSyscrSyscw => "/proc syscr+syscw: read/write-class calls only, a lower bound",
        }
    }
}

impl std::fmt::Display for SyscallSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run knows besides its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub syscall_source: SyscallSource,
    /// The run's total system calls when they were counted for the run as a
    /// whole rather than per sample (`SyscallSource::PerfStat`).
    pub syscall_total: Option<u64>,
    /// Hardware counter totals for the run, by perf event name (a `:u` suffix
    /// marks user-space-only counts); empty where perf exposes none.
    pub counters: BTreeMap<String, f64>,
    /// Seconds of the run in which some of the job's tasks stalled, from the
    /// kernel's pressure stall information of the job's own cgroup; `None`
    /// where the kernel or the cgroup tree does not give it.
    pub stall_s: Option<Stall>,
    /// CPU seconds the node's other CPUs (those the job was not pinned to)
    /// were busy during the run, beyond cosched's own sampling; `None` for
    /// a job not pinned, or where /proc/stat cannot be read.
    pub collateral_s: Option<f64>,
}

/// Time in which at least one task of a job was stalled, per resource: as
/// seconds in [`RunFacts`], as shares of the run's wall time in a
/// [`ProfileSummary`]. What the kernel's pressure stall information (PSI)
/// calls `some`: runnable but waiting for a CPU, waiting on block I/O, or
/// reclaiming memory and faulting it back in.
///
/// Two jobs that each wait on the one disk most of their time queue behind
/// each other whatever cores they run on, while a job that leaves its core
/// to wait for I/O hardly notices how its co-runner uses the cache: the I/O
/// share is to I/O interference what a probe curve is to the cache's, and
/// it costs nothing to read (a profile run reads the job's group once
/// before and once after).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub cpu: f64,
    pub io: f64,
    pub memory: f64,
}

impl Stall {
    fn per(self, wall_s: f64) -> Stall {
        Stall { cpu: self.cpu / wall_s, io: self.io / wall_s, memory: self.memory / wall_s }
    }
}

/// A solo run in a few figures. Rates are per second of wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// From the baseline sample to the last one.
    pub wall_s: f64,
    /// U over the whole run: total CPU / (wall x host cores) (the SX-Aurora paper).
    pub host_load_mean: f64,
    /// Highest U of one interval (intervals shorter than half the typical one,
    /// such as the stub before the job's exit, are left out: a single clock
    /// tick in a 5 ms stub would read as a load of 2 cores).
    pub host_load_peak: f64,
    /// Total CPU / wall: how many cores' worth the job kept busy.
    pub cores_used: f64,
    /// `None` when the source gave nothing to compute it from.
    pub syscall_rate: Option<f64>,
    /// The system calls behind `syscall_rate`. For a fixed-work job the count
    /// does not depend on the run's speed, while counting with perf slows a
    /// syscall-heavy job (every call pays for it): count / an uncounted solo
    /// time is the job's undisturbed rate.
    pub syscall_count: Option<u64>,
    pub syscall_source: SyscallSource,
    pub vol_ctx_rate: f64,
    pub invol_ctx_rate: f64,
    pub read_bps: f64,
    pub write_bps: f64,
    pub max_rss_kib: u64,
    /// Minor + major page faults per second.
    pub fault_rate: f64,
    /// Hardware counter totals for the run, by perf event name; empty where
    /// perf exposes none.
    pub counters: BTreeMap<String, f64>,
    /// Shares of the wall time in which some of the job's tasks stalled
    /// (see [`Stall`]); absent from profiles taken before it was measured,
    /// or where the kernel does not give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    /// Cores' worth of CPU the node's *other* CPUs were busy while the job
    /// ran pinned (see [`RunFacts::collateral_s`]): work the job causes
    /// outside its cores (kernel threads, interrupts, page-cache work on
    /// its behalf, helpers that escape its pinning), which slows whatever
    /// runs there and which no per-process figure shows. An idle node
    /// reads a few hundredths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collateral: Option<f64>,
}

/// U of one interval: CPU seconds of the tree in it / (interval x host cores).
/// 0 for an empty interval or no cores, so a baseline sample reads as idle.
pub fn host_load(cpu_s: f64, interval_s: f64, host_cores: u32) -> f64 {
    if interval_s <= 0.0 || host_cores == 0 {
        return 0.0;
    }
    cpu_s / (interval_s * f64::from(host_cores))
}

/// Summarises a run from its samples (baseline first, in time order).
///
/// `None` when there are fewer than two samples, no cores, or no time between
/// the first and the last sample: there is no rate to give.
pub fn summarize(samples: &[Sample], host_cores: u32, facts: RunFacts) -> Option<ProfileSummary> {
    let (first, last) = (samples.first()?, samples.last()?);
    let wall_s = last.t_s - first.t_s;
    if samples.len() < 2 || host_cores == 0 || wall_s.is_nan() || wall_s <= 0.0 {
        return None;
    }
    let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / wall_s;
    let cpu = last.cpu_s() - first.cpu_s();
    let syscall_count = match facts.syscall_source {
        SyscallSource::PerfTracepoint => match (first.syscalls, last.syscalls) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        SyscallSource::PerfStat => facts.syscall_total,
        SyscallSource::ProcSyscrSyscw => Some((last.syscr + last.syscw).saturating_sub(first.syscr + first.syscw)),
    };
    Some(ProfileSummary {
        wall_s,
        host_load_mean: host_load(cpu, wall_s, host_cores),
        host_load_peak: peak_load(samples),
        cores_used: cpu / wall_s,
        syscall_rate: syscall_count.map(|n| n as f64 / wall_s),
        syscall_count,
        syscall_source: facts.syscall_source,
        vol_ctx_rate: rate(first.vol_ctx, last.vol_ctx),
        invol_ctx_rate: rate(first.invol_ctx, last.invol_ctx),
        read_bps: rate(first.read_bytes, last.read_bytes),
        write_bps: rate(first.write_bytes, last.write_bytes),
        max_rss_kib: samples.iter().map(|s| s.rss_kib).max().unwrap_or(0),
        fault_rate: rate(first.minflt + first.majflt, last.minflt + last.majflt),
        counters: facts.counters,
        stall: facts.stall_s.map(|s| s.per(wall_s)),
        collateral: facts.collateral_s.map(|c| c.max(0.0) / wall_s),
    })
}

/// Highest per-interval U over intervals at least half the median interval.
fn peak_load(samples: &[Sample]) -> f64 {
    let mut spans: Vec<f64> = samples.windows(2).map(|w| w[1].t_s - w[0].t_s).collect();
    if spans.is_empty() {
        return 0.0;
    }
    spans.sort_by(f64::total_cmp);
    let typical = crate::stats::median_sorted(&spans);
    samples
        .windows(2)
        .filter(|w| w[1].t_s - w[0].t_s >= typical / 2.0)
        .map(|w| w[1].host_load)
        .fold(0.0, f64::max)
}

/// A job's profile over several solo runs: what `cosched profile` stores per
/// job (the summary JSON of a `profiles` row).
///
/// Counting system calls with perf costs every call of the job (it doubles
/// the run time of the `syscall` kernel on a KVM guest), so the solo time and
/// the per-second figures come from *timed* runs whose system calls were
/// counted with /proc only, and the exact call count from one separate
/// *counted* run: the calls of fixed work do not depend on the run's speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobProfile {
    /// Solo time over the timed runs, seconds.
    pub solo_s: Summary,
    /// `work-phase` (a kernel's own timing) or `process` (wall time).
    pub timing: String,
    /// Each figure's median over the timed runs. Its system-call figures are
    /// /proc lower bounds; the job's are `syscall_*` below.
    pub summary: ProfileSummary,
    /// The run with the exact system-call count; `None` when calls were
    /// counted with /proc only, which costs nothing, so the timed runs serve.
    pub counted_run: Option<ProfileSummary>,
    pub syscall_source: SyscallSource,
    /// Calls of one run: the counted run's, else the timed runs' median.
    pub syscall_count: Option<u64>,
    /// `syscall_count` / the timed runs' median wall time (release to exit,
    /// the span the count covers): the job's undisturbed rate.
    pub syscall_rate: Option<f64>,
    /// Why the syscall source is not the best one, when it is not.
    pub notes: Vec<String>,
    /// The job's miss-ratio curve from a cache simulator, ascending in
    /// last-level size (`cosched profile --miss-curve`); empty when not
    /// measured. Profiles stored before it existed read as empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub miss_curve: Vec<MissPoint>,
}

/// One point of a miss-ratio curve: the share of a program's data
/// references that miss a last-level cache of `ll_kib`, by valgrind's
/// cachegrind. Over the sizes it is the complement of the program's
/// reuse-distance distribution (the DistGen paper's PinDist histograms):
/// a reference misses an LRU cache of size S when its reuse distance is
/// beyond S.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MissPoint {
    pub ll_kib: u64,
    /// Data reads and writes.
    pub refs: u64,
    /// Last-level data read and write misses.
    pub misses: u64,
    /// misses / refs; 0 for a program without data references.
    pub ratio: f64,
}

impl JobProfile {
    /// Assembles a profile from the timed runs (each its solo time and
    /// summary) and the counted run, if one was made. `None` without timed
    /// runs or with a solo time that is not finite.
    pub fn from_runs(
        timed: &[(f64, ProfileSummary)],
        timing: &str,
        counted_run: Option<ProfileSummary>,
        notes: Vec<String>,
    ) -> Option<JobProfile> {
        let times: Vec<f64> = timed.iter().map(|(t, _)| *t).collect();
        let solo_s = Summary::of(&times)?;
        let runs: Vec<ProfileSummary> = timed.iter().map(|(_, s)| s.clone()).collect();
        let summary = median_summary(&runs)?;
        let (syscall_source, syscall_count) = match &counted_run {
            Some(c) => (c.syscall_source, c.syscall_count),
            None => (summary.syscall_source, summary.syscall_count),
        };
        let syscall_rate = syscall_count.filter(|_| summary.wall_s > 0.0).map(|n| n as f64 / summary.wall_s);
        Some(JobProfile {
            solo_s,
            timing: timing.to_string(),
            summary,
            counted_run,
            syscall_source,
            syscall_count,
            syscall_rate,
            notes,
            miss_curve: Vec::new(),
        })
    }
}

/// Each figure's median over several summaries of one job. Optional figures
/// and counters are kept where every run has them; the source is the first
/// run's, and runs of different sources give `None`, since a median of
/// exact counts and lower bounds is neither.
pub fn median_summary(runs: &[ProfileSummary]) -> Option<ProfileSummary> {
    let first = runs.first()?;
    if runs.iter().any(|r| r.syscall_source != first.syscall_source) {
        return None;
    }
    let med = |f: fn(&ProfileSummary) -> f64| crate::stats::median(&runs.iter().map(f).collect::<Vec<_>>());
    let med_opt = |f: fn(&ProfileSummary) -> Option<f64>| {
        runs.iter().map(f).collect::<Option<Vec<f64>>>().map(|v| crate::stats::median(&v))
    };
    let counters = first
        .counters
        .keys()
        .filter_map(|k| {
            let v: Option<Vec<f64>> = runs.iter().map(|r| r.counters.get(k).copied()).collect();
            Some((k.clone(), crate::stats::median(&v?)))
        })
        .collect();
    Some(ProfileSummary {
        wall_s: med(|r| r.wall_s),
        host_load_mean: med(|r| r.host_load_mean),
        host_load_peak: med(|r| r.host_load_peak),
        cores_used: med(|r| r.cores_used),
        syscall_rate: med_opt(|r| r.syscall_rate),
        syscall_count: med_opt(|r| r.syscall_count.map(|n| n as f64)).map(|v| v.round() as u64),
        syscall_source: first.syscall_source,
        vol_ctx_rate: med(|r| r.vol_ctx_rate),
        invol_ctx_rate: med(|r| r.invol_ctx_rate),
        read_bps: med(|r| r.read_bps),
        write_bps: med(|r| r.write_bps),
        max_rss_kib: med(|r| r.max_rss_kib as f64).round() as u64,
        fault_rate: med(|r| r.fault_rate),
        counters,
        stall: runs.iter().map(|r| r.stall).collect::<Option<Vec<Stall>>>().map(|v| Stall {
            cpu: crate::stats::median(&v.iter().map(|s| s.cpu).collect::<Vec<_>>()),
            io: crate::stats::median(&v.iter().map(|s| s.io).collect::<Vec<_>>()),
            memory: crate::stats::median(&v.iter().map(|s| s.memory).collect::<Vec<_>>()),
        }),
        collateral: med_opt(|r| r.collateral),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero() -> Sample {
        Sample { syscalls: Some(0), nprocs: 1, ..Sample::default() }
    }

    fn facts(source: SyscallSource) -> RunFacts {
        RunFacts { syscall_source: source, syscall_total: None, counters: BTreeMap::new(), stall_s: None, collateral_s: None }
    }

    /// Three samples, 1 s apart, on a 4-core host: 1.5 CPU-s then 0.5 CPU-s.
    fn run() -> Vec<Sample> {
        let s0 = Sample { rss_kib: 100, ..zero() };
        let s1 = Sample {
            t_s: 1.0,
            host_load: host_load(1.5, 1.0, 4),
            cpu_user_s: 1.0,
            cpu_sys_s: 0.5,
            vol_ctx: 10,
            invol_ctx: 4,
            syscalls: Some(1000),
            read_bytes: 4096,
            write_bytes: 1000,
            syscr: 30,
            syscw: 10,
            rss_kib: 5000,
            minflt: 200,
            majflt: 2,
            nprocs: 2,
            ..zero()
        };
        let s2 = Sample {
            t_s: 2.0,
            host_load: host_load(0.5, 1.0, 4),
            cpu_user_s: 1.25,
            cpu_sys_s: 0.75,
            vol_ctx: 20,
            invol_ctx: 6,
            syscalls: Some(3000),
            read_bytes: 8192,
            write_bytes: 3000,
            syscr: 50,
            syscw: 30,
            rss_kib: 3000,
            minflt: 300,
            majflt: 4,
            ..zero()
        };
        vec![s0, s1, s2]
    }

    #[test]
    fn host_load_is_cpu_over_interval_times_cores() {
        assert_eq!(host_load(1.5, 1.0, 4), 0.375);
        assert_eq!(host_load(0.2, 0.1, 2), 1.0);
        assert_eq!(host_load(1.0, 0.0, 2), 0.0);
        assert_eq!(host_load(1.0, 1.0, 0), 0.0);
    }

    #[test]
    fn summary_of_a_hand_made_run() {
        let s = summarize(&run(), 4, facts(SyscallSource::PerfTracepoint)).unwrap();
        assert_eq!(s.wall_s, 2.0);
        // 2.0 CPU-s over 2 s on 4 cores.
        assert_eq!(s.host_load_mean, 0.25);
        assert_eq!(s.cores_used, 1.0);
        assert_eq!(s.host_load_peak, 0.375);
        assert_eq!(s.syscall_rate, Some(1500.0));
        assert_eq!(s.syscall_count, Some(3000));
        assert_eq!(s.syscall_source, SyscallSource::PerfTracepoint);
        assert_eq!(s.vol_ctx_rate, 10.0);
        assert_eq!(s.invol_ctx_rate, 3.0);
        assert_eq!(s.read_bps, 4096.0);
        assert_eq!(s.write_bps, 1500.0);
        assert_eq!(s.max_rss_kib, 5000);
        assert_eq!(s.fault_rate, 152.0);
        assert!(s.counters.is_empty());
    }

    #[test]
    fn rates_are_relative_to_the_baseline_not_to_zero() {
        // A job whose counters did not start at zero (the trampoline's own
        // start-up): only the differences count.
        let mut samples = run();
        for s in &mut samples {
            s.t_s += 10.0;
            s.cpu_user_s += 0.01;
            s.syscalls = s.syscalls.map(|n| n + 77);
            s.syscr += 5;
        }
        let s = summarize(&samples, 4, facts(SyscallSource::PerfTracepoint)).unwrap();
        assert_eq!(s.wall_s, 2.0);
        assert!((s.cores_used - 1.0).abs() < 1e-12, "{}", s.cores_used);
        assert_eq!(s.syscall_rate, Some(1500.0));
    }

    #[test]
    fn each_syscall_source_reads_its_own_figure() {
        let samples = run();
        let proc = summarize(&samples, 4, facts(SyscallSource::ProcSyscrSyscw)).unwrap();
        // (50 + 30) read/write-class calls in 2 s.
        assert_eq!(proc.syscall_rate, Some(40.0));
        assert_eq!(proc.syscall_count, Some(80));
        assert!(proc.syscall_source.is_lower_bound());
        let stat = RunFacts { syscall_total: Some(5000), ..facts(SyscallSource::PerfStat) };
        assert_eq!(summarize(&samples, 4, stat).unwrap().syscall_rate, Some(2500.0));
        // perf stat that produced no total: no rate rather than a wrong one.
        assert_eq!(summarize(&samples, 4, facts(SyscallSource::PerfStat)).unwrap().syscall_rate, None);
        let mut untraced = samples.clone();
        untraced[0].syscalls = None;
        assert_eq!(summarize(&untraced, 4, facts(SyscallSource::PerfTracepoint)).unwrap().syscall_rate, None);
    }

    #[test]
    fn a_short_final_interval_does_not_set_the_peak() {
        let mut samples = run();
        // 4 ms stub before the exit holding one 10 ms clock tick: U = 0.625.
        let last = samples.last().unwrap().clone();
        samples.push(Sample {
            t_s: last.t_s + 0.004,
            host_load: host_load(0.01, 0.004, 4),
            cpu_user_s: last.cpu_user_s + 0.01,
            ..last
        });
        let s = summarize(&samples, 4, facts(SyscallSource::PerfTracepoint)).unwrap();
        assert_eq!(s.host_load_peak, 0.375);
        // The stub's CPU still counts in the mean.
        assert!((s.host_load_mean - 2.01 / (2.004 * 4.0)).abs() < 1e-12);
    }

    #[test]
    fn counters_are_carried_through() {
        let mut counters = BTreeMap::new();
        counters.insert("instructions".to_string(), 1e9);
        let f = RunFacts { counters: counters.clone(), ..facts(SyscallSource::PerfTracepoint) };
        assert_eq!(summarize(&run(), 4, f).unwrap().counters, counters);
    }

    #[test]
    fn stalls_become_shares_of_the_wall_time() {
        // 2 s run: 0.5 s waiting for a CPU, 1.5 s on I/O, none on memory.
        let f = RunFacts { stall_s: Some(Stall { cpu: 0.5, io: 1.5, memory: 0.0 }), ..facts(SyscallSource::ProcSyscrSyscw) };
        assert_eq!(summarize(&run(), 4, f).unwrap().stall, Some(Stall { cpu: 0.25, io: 0.75, memory: 0.0 }));
        assert_eq!(summarize(&run(), 4, facts(SyscallSource::ProcSyscrSyscw)).unwrap().stall, None);
    }

    #[test]
    fn collateral_cpu_is_a_share_of_the_wall_time_never_below_zero() {
        // 2 s run: the other CPUs busy 0.3 s beyond the sampler's own.
        let f = RunFacts { collateral_s: Some(0.3), ..facts(SyscallSource::ProcSyscrSyscw) };
        assert_eq!(summarize(&run(), 4, f).unwrap().collateral, Some(0.15));
        // The sampler subtracted more than the CPUs showed (tick rounding).
        let f = RunFacts { collateral_s: Some(-0.01), ..facts(SyscallSource::ProcSyscrSyscw) };
        assert_eq!(summarize(&run(), 4, f).unwrap().collateral, Some(0.0));
    }

    #[test]
    fn stall_medians_need_every_run_and_old_profiles_load_without_them() {
        let with = |io| ProfileSummary { stall: Some(Stall { cpu: 0.0, io, memory: 0.1 }), ..timed(2.0, 0, 0.0) };
        let m = median_summary(&[with(0.2), with(0.9), with(0.4)]).unwrap();
        assert_eq!(m.stall, Some(Stall { cpu: 0.0, io: 0.4, memory: 0.1 }));
        assert_eq!(median_summary(&[with(0.2), timed(2.0, 0, 0.0)]).unwrap().stall, None);
        // A profile stored before stalls were measured has no `stall` key.
        let mut json = serde_json::to_value(timed(2.0, 0, 0.0)).unwrap();
        assert!(json.get("stall").is_none(), "absent stalls are not written");
        json.as_object_mut().unwrap().remove("stall");
        let back: ProfileSummary = serde_json::from_value(json).unwrap();
        assert_eq!(back.stall, None);
    }

    #[test]
    fn no_summary_without_a_span() {
        let f = || facts(SyscallSource::ProcSyscrSyscw);
        assert_eq!(summarize(&[], 2, f()), None);
        assert_eq!(summarize(&[zero()], 2, f()), None);
        assert_eq!(summarize(&[zero(), zero()], 2, f()), None);
        assert_eq!(summarize(&run(), 0, f()), None);
    }

    /// The hand-made run summarised as counted with /proc, with its wall
    /// time, resident set and read rate changed.
    fn timed(wall_s: f64, max_rss_kib: u64, read_bps: f64) -> ProfileSummary {
        let s = summarize(&run(), 4, facts(SyscallSource::ProcSyscrSyscw)).unwrap();
        ProfileSummary { wall_s, max_rss_kib, read_bps, ..s }
    }

    #[test]
    fn a_median_summary_takes_each_figure_median_on_its_own() {
        let runs = [timed(2.0, 5000, 10.0), timed(3.0, 1000, 30.0), timed(1.0, 9000, 20.0)];
        let m = median_summary(&runs).unwrap();
        // The three medians come from three different runs.
        assert_eq!((m.wall_s, m.max_rss_kib, m.read_bps), (2.0, 5000, 20.0));
        assert_eq!(m.syscall_count, Some(80));
        assert_eq!(m.syscall_source, SyscallSource::ProcSyscrSyscw);
        let even = median_summary(&[timed(2.0, 1000, 0.0), timed(3.0, 2000, 0.0)]).unwrap();
        assert_eq!((even.wall_s, even.max_rss_kib), (2.5, 1500));
        assert_eq!(median_summary(&[]), None);
    }

    #[test]
    fn a_median_summary_keeps_only_what_every_run_has() {
        let mut a = timed(2.0, 0, 0.0);
        let mut b = a.clone();
        a.counters.insert("cycles".into(), 10.0);
        a.counters.insert("instructions".into(), 5.0);
        b.counters.insert("cycles".into(), 20.0);
        b.syscall_rate = None;
        let m = median_summary(&[a.clone(), b]).unwrap();
        assert_eq!(m.counters.into_iter().collect::<Vec<_>>(), vec![("cycles".to_string(), 15.0)]);
        assert_eq!(m.syscall_rate, None);
        let exact = ProfileSummary { syscall_source: SyscallSource::PerfTracepoint, ..a.clone() };
        assert_eq!(median_summary(&[a, exact]), None, "exact counts and lower bounds do not mix");
    }

    #[test]
    fn a_job_profile_rates_the_counted_calls_over_the_timed_runs() {
        let timed_runs = [(1.9, timed(2.0, 0, 0.0)), (2.9, timed(3.0, 0, 0.0)), (2.4, timed(2.5, 0, 0.0))];
        // The counted run took twice as long: perf's cost per call.
        let counted = ProfileSummary { wall_s: 5.0, syscall_count: Some(3000), ..timed(5.0, 0, 0.0) };
        let counted = ProfileSummary { syscall_source: SyscallSource::PerfTracepoint, ..counted };
        let p = JobProfile::from_runs(&timed_runs, "work-phase", Some(counted), vec!["n".into()]).unwrap();
        assert_eq!((p.solo_s.median, p.solo_s.min, p.solo_s.max, p.solo_s.n), (2.4, 1.9, 2.9, 3));
        assert_eq!(p.timing, "work-phase");
        assert_eq!(p.syscall_source, SyscallSource::PerfTracepoint);
        assert_eq!(p.syscall_count, Some(3000));
        // 3000 calls over the timed runs' median wall time of 2.5 s.
        assert_eq!(p.syscall_rate, Some(1200.0));
        assert_eq!(p.summary.wall_s, 2.5);
        assert_eq!(p.notes, vec!["n".to_string()]);
        let back: JobProfile = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn a_job_profile_without_a_counted_run_uses_the_timed_lower_bound() {
        let p = JobProfile::from_runs(&[(2.0, timed(2.0, 0, 0.0)), (4.0, timed(4.0, 0, 0.0))], "process", None, vec![])
            .unwrap();
        assert_eq!(p.syscall_source, SyscallSource::ProcSyscrSyscw);
        assert_eq!(p.syscall_count, Some(80));
        assert_eq!(p.syscall_rate, Some(80.0 / 3.0));
        assert_eq!(p.counted_run, None);
        assert_eq!(JobProfile::from_runs(&[], "process", None, vec![]), None);
        assert_eq!(JobProfile::from_runs(&[(f64::NAN, timed(2.0, 0, 0.0))], "process", None, vec![]), None);
    }

    #[test]
    fn syscall_source_names_round_trip() {
        for s in SyscallSource::ALL {
            assert_eq!(SyscallSource::from_name(s.name()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
        }
        assert_eq!(SyscallSource::from_name("strace"), None);
    }
}
