//! Solo profiles: what a job asks of the node when it runs alone.
//!
//! A profile is a series of [`Sample`]s of the job's whole process tree taken
//! at a fixed interval (seed 000 samples the "VH load" once a second) and a
//! [`ProfileSummary`] of the run. Samples hold *cumulative* counters, so any
//! rate over any span is a difference of two samples divided by the time
//! between them; the summary is computed from the first and the last sample
//! by [`summarize`], a pure function so that stored samples can be
//! re-summarised later and the arithmetic is pinned by hand-computed tests.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The state of a job's process tree at one instant.
///
/// Counters are cumulative since the job started (the first sample, taken
/// when the job is released, is the baseline). They include processes of the
/// tree that have already ended: their CPU time, faults and I/O through the
/// `cutime`/`cstime`/`cminflt`/`cmajflt` and I/O accounting of the parent
/// that reaped them, their context switches as last seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// A solo run in a few figures. Rates are per second of wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// From the baseline sample to the last one.
    pub wall_s: f64,
    /// U over the whole run: total CPU / (wall x host cores) (seed 000).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn zero() -> Sample {
        Sample {
            t_s: 0.0,
            host_load: 0.0,
            cpu_user_s: 0.0,
            cpu_sys_s: 0.0,
            vol_ctx: 0,
            invol_ctx: 0,
            syscalls: Some(0),
            read_bytes: 0,
            write_bytes: 0,
            disk_read_bytes: 0,
            disk_write_bytes: 0,
            syscr: 0,
            syscw: 0,
            rss_kib: 0,
            minflt: 0,
            majflt: 0,
            nprocs: 1,
        }
    }

    fn facts(source: SyscallSource) -> RunFacts {
        RunFacts { syscall_source: source, syscall_total: None, counters: BTreeMap::new() }
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
    fn no_summary_without_a_span() {
        let f = || facts(SyscallSource::ProcSyscrSyscw);
        assert_eq!(summarize(&[], 2, f()), None);
        assert_eq!(summarize(&[zero()], 2, f()), None);
        assert_eq!(summarize(&[zero(), zero()], 2, f()), None);
        assert_eq!(summarize(&run(), 0, f()), None);
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
