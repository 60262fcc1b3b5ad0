//! `cosched profile`: each job alone, pinned as it will be when shared, its
//! process tree sampled at an interval; solo runs, samples and one profile
//! per job stored in a `profile` campaign.

use std::time::Duration;

use clap::Args;
use cosched_app::common::parse_interval;
use cosched_app::profile::{profile, ProfileReport, ProfileRequest, Syscalls};
use cosched_model::profile::SyscallSource;
use cosched_report::{fmt_ci_auto, si, table};

use super::common::{ctx, print_json, DbArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched profile --workload examples/mixed.toml\n  \
    cosched profile --workload examples/mixed.toml --job sys --job io --repeats 5\n  \
    cosched profile --workload examples/characterize.toml --interval 250ms --json > profiles.json\n  \
    cosched profile --workload examples/mixed.toml --syscalls proc   # no perf at all\n\n\
    Each job runs alone on CPUs 0..cores (as it is pinned when it shares the node):\n\
    first once with its system calls counted (--syscalls), then --repeats times\n\
    timed. Counting with perf costs every call (it doubles the run time of a\n\
    syscall-heavy job on a VM), so the timed runs count with /proc only: the solo\n\
    time and every rate come from them, and the system-call rate is the counted\n\
    run's calls over their median wall time. Every run is stored with its samples\n\
    as soon as it ends; `cosched db export --format json --table profiles` gives\n\
    the profiles.")]
pub struct ProfileArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Profile only this job (repeatable); a name written with `count` selects
    /// all its copies. Default: every job.
    #[arg(long = "job", value_name = "NAME")]
    pub jobs: Vec<String>,
    /// Time between samples (`1s`, `250ms`, `0.5s`).
    #[arg(long, default_value = "1s", value_parser = parse_interval, value_name = "DURATION")]
    pub interval: Duration,
    /// Timed runs per job (the solo time is their median).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// How the one counted run counts system calls: auto (the best that works
    /// here), tracepoint, perf-stat, or proc (no counted run: the timed runs'
    /// /proc read/write-class calls, a lower bound).
    #[arg(long, default_value = "auto", value_name = "METHOD")]
    pub syscalls: Syscalls,
    /// Also a miss-ratio curve per job at these last-level sizes (the DistGen
    /// paper's reuse distances): one run under valgrind's cachegrind a size,
    /// 20-100x slower than alone; stored in the profile (`miss_curve`),
    /// which the `reuse` predictor reads; skipped with a note without
    /// valgrind.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = cosched_app::profile::parse_kib)]
    pub miss_curve: Vec<u64>,
    // With --json: the stored profile records.
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: ProfileArgs) -> anyhow::Result<()> {
    let req = ProfileRequest {
        workload: a.workload.workload,
        jobs: a.jobs,
        interval: a.interval,
        repeats: a.repeats,
        syscalls: a.syscalls,
        db: a.db.db,
        miss_curve: a.miss_curve,
    };
    let r = profile(&req, &ctx())?;
    if a.json.json {
        return print_json(&r.records);
    }
    print(&r);
    Ok(())
}

/// The profiles as a table with what each figure means; also the demo's.
pub fn print(r: &ProfileReport) {
    let (profiles, host_cores, interval) = (&r.profiles, r.host_cores, r.interval);
    let counter_names: Vec<String> = {
        let mut names: Vec<String> = profiles
            .iter()
            .flat_map(|(_, p)| p.counted_run.iter().flat_map(|c| c.counters.keys().cloned()))
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let rows: Vec<Vec<String>> = profiles
        .iter()
        .map(|(job, p)| {
            let s = &p.summary;
            let syscalls = match p.syscall_rate {
                Some(r) if p.syscall_source.is_lower_bound() => format!("{} (lower bound)", fmt_rate(r)),
                Some(r) => fmt_rate(r),
                None => "-".into(),
            };
            let mut row = vec![
                job.clone(),
                format!("{} n={}", fmt_ci_auto(&p.solo_s), p.solo_s.n),
                p.timing.clone(),
                format!("{:.2} / {:.2}", s.host_load_mean, s.host_load_peak),
                format!("{:.2}", s.cores_used),
                syscalls,
                format!("{} / {}", fmt_rate(s.vol_ctx_rate), fmt_rate(s.invol_ctx_rate)),
                format!("{:.1} / {:.1}", s.read_bps / 1e6, s.write_bps / 1e6),
                format!("{:.1}", s.max_rss_kib as f64 / 1024.0),
                fmt_rate(s.fault_rate),
                s.stall.map_or_else(|| "-".into(), |t| format!("{:.2} / {:.2} / {:.2}", t.cpu, t.io, t.memory)),
                s.collateral.map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            ];
            for name in &counter_names {
                let v = p.counted_run.as_ref().and_then(|c| c.counters.get(name));
                row.push(v.map(|&v| si(v)).unwrap_or_else(|| "-".into()));
            }
            row
        })
        .collect();
    let solo = format!("solo s, median [{}]", cosched_report::interval_name(profiles.iter().map(|(_, p)| p.solo_s.n)));
    let mut headers: Vec<String> = [
        "job",
        &solo,
        "timed by",
        "U mean / peak",
        "cores used",
        "syscalls/s",
        "ctx sw/s vol / invol",
        "read / write MB/s",
        "max RSS MiB",
        "faults/s",
        "stalled cpu / io / mem",
        "cores busy elsewhere",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    headers.extend(counter_names.iter().map(|n| format!("{n} per run")));
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    println!("profile of {}: each job alone on CPUs 0..its cores, host pool of {host_cores} cores\n", r.workload);
    println!("{}", table(&h, &rows));
    let n = profiles.first().map(|(_, p)| p.solo_s.n).unwrap_or(0);
    println!(
        "\nsolo s: median over {n} timed runs with its 95% interval (below 6 runs, the range); a kernel's work-phase \
         time, else the process's wall time.\n\
         U = CPU time of the job's process tree / (wall time x {host_cores} host cores): over the run / the busiest \
         {interval:?} interval; cores used = U x {host_cores}. Every figure but system calls is the median over the \
         timed runs.\n\
         stalled: share of the wall time in which some of the job's tasks waited for a CPU / on I/O / for memory \
         (the kernel's pressure stall information of the job's own cgroup; - where the kernel keeps none). Two jobs \
         that both wait on I/O most of their time queue on one device.\n\
         cores busy elsewhere: CPU the node's other CPUs spent while the job ran pinned (kernel work on its behalf, \
         helpers outside its pinning), in cores; an idle node reads a few hundredths. It lands on a co-runner's core."
    );
    let mut sources: Vec<SyscallSource> = Vec::new();
    for (_, p) in profiles {
        if !sources.contains(&p.syscall_source) {
            sources.push(p.syscall_source);
        }
    }
    for src in sources {
        if src.is_lower_bound() {
            println!("syscalls/s ({src}): {}; median over the timed runs.", src.describe());
        } else {
            println!(
                "syscalls/s ({src}): the calls of one counted run ({}) / the timed runs' median wall time. Counting \
                 with perf costs every call (it doubles the run time of a syscall-heavy job on a VM) while the calls \
                 of fixed work do not change, so the timed runs count with /proc only.",
                src.describe()
            );
        }
    }
    for (job, p) in profiles.iter().filter(|(_, p)| !p.miss_curve.is_empty()) {
        let points: Vec<String> = p.miss_curve.iter().map(|m| format!("{} KiB {:.2} %", m.ll_kib, m.ratio * 100.0)).collect();
        println!("miss-ratio curve ({job}): {}", points.join(", "));
    }
    if profiles.iter().any(|(_, p)| !p.miss_curve.is_empty()) {
        println!(
            "miss-ratio curve: the share of the job's data references that miss a simulated last level of each size \
             (cachegrind, 16 ways, 64 B lines), the complement of its reuse-distance distribution."
        );
    }
    for (job, p) in profiles {
        for note in &p.notes {
            println!("note ({job}): {note}");
        }
    }
    println!("campaign {} in {}", r.campaign, r.db.display());
}

/// A rate to three significant figures, with an SI prefix from a thousand on:
/// `377`, `15.5`, `7.77`, `3.741M`.
fn fmt_rate(v: f64) -> String {
    if v.abs() >= 1000.0 {
        return si(v);
    }
    let digits = if v == 0.0 || v.abs() >= 100.0 { 0 } else if v.abs() >= 10.0 { 1 } else { 2 };
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_with_three_significant_figures() {
        assert_eq!(fmt_rate(376.788), "377");
        assert_eq!(fmt_rate(15.538), "15.5");
        assert_eq!(fmt_rate(7.769), "7.77");
        assert_eq!(fmt_rate(0.0), "0");
        assert_eq!(fmt_rate(3_741_282.6), "3.741M");
    }

}
