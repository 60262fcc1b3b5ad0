//! `cosched profile`: each job alone, pinned as it will be when shared, its
//! process tree sampled at an interval; solo runs, samples and one profile
//! per job stored in a `profile` campaign.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use cosched_measure::corun::SETTLE;
use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{install_interrupt_handler, interrupted, Exit, Launch, LaunchError};
use cosched_measure::perf::SyscallMethod;
use cosched_measure::profile::{profile_job_with, ProfileError, ProfileOptions, ProfileRun};
use cosched_model::profile::{JobProfile, SyscallSource};
use cosched_model::workload::{Job, Workload};
use cosched_report::{fmt_ci_auto, si, table};
use cosched_store::{CampaignId, CampaignKind, CampaignStatus, ProfileRecord, SoloRunRecord, Store};

use super::bench::parse_interval;
use super::calibrate::calibrate_missing;
use super::common::{command_line, load_workload, DbArgs, GIT_COMMIT};
use crate::exit::{bad_input, Interrupted};
use crate::progress::{step, Progress};

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
    /// Workload file whose jobs are profiled.
    #[arg(long, value_name = "FILE")]
    pub workload: PathBuf,
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
    pub syscalls: SyscallMethod,
    /// Print the stored profile records as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// One job as it will be run.
struct Planned<'a> {
    job: &'a Job,
    argv: Vec<String>,
    cpus: Vec<u32>,
}

pub fn run(a: ProfileArgs) -> anyhow::Result<()> {
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    let w = load_workload(&a.workload)?;
    let selected = select_jobs(&w, &a.jobs)?;
    let mut store = a.db.open()?;
    install_interrupt_handler();
    // Only the selected jobs' `seconds` need a calibration.
    let chosen = Workload { jobs: selected.iter().map(|&j| j.clone()).collect(), ..w.clone() };
    if let Err(e) = calibrate_missing(&chosen, &mut store) {
        return Err(match interrupted() {
            Some(sig) => anyhow::Error::new(Interrupted(sig)).context("interrupted while calibrating; nothing profiled"),
            None => e,
        });
    }
    let cals = store.calibrations()?;
    let node_cpus = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let host_cores = w.host_pool().and_then(|p| p.cores).unwrap_or(node_cpus);
    let plan: Vec<Planned> = selected
        .iter()
        .map(|&job| {
            let argv = job_argv(job, &cals).map_err(anyhow::Error::msg)?;
            let cpus = (0..job.cores.clamp(1, node_cpus)).collect();
            Ok(Planned { job, argv, cpus })
        })
        .collect::<anyhow::Result<_>>()?;
    let counted = a.syscalls != SyscallMethod::Proc;
    let params = serde_json::json!({
        "jobs": plan.iter().map(|p| serde_json::json!({"name": p.job.name, "argv": p.argv, "cpus": p.cpus})).collect::<Vec<_>>(),
        "interval_s": a.interval.as_secs_f64(),
        "repeats": a.repeats,
        "syscalls": a.syscalls.name(),
        "host_cores": host_cores,
        // Where the counted run sits among a job's solo runs.
        "counted_run_repeat": counted.then_some(a.repeats),
    })
    .to_string();
    let prov = cosched_measure::provenance::here(&command_line(), GIT_COMMIT, None);
    let campaign = store.begin_campaign(CampaignKind::Profile, &w.name, &params, &prov)?;
    super::common::record_conditions(&mut store, campaign, true)?;
    let per_job = a.repeats + usize::from(counted);
    step(&format!(
        "profile: {} jobs, {}{} timed runs each, sampled every {:?}, campaign {campaign}",
        plan.len(),
        if counted { format!("1 counted run ({}) + ", a.syscalls.name()) } else { String::new() },
        a.repeats,
        a.interval
    ));
    let progress = Progress::new("profile", (plan.len() * per_job) as u64);
    let mut done = 0u64;
    let mut profiles = Vec::new();
    let mut result = Ok(());
    for p in &plan {
        match profile_one(&a, p, host_cores, campaign, &mut store, &mut |label| {
            progress.set(done, &format!("{}: {label}", p.job.name));
            done += 1;
        }) {
            Ok(prof) => profiles.push((p.job, prof)),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    progress.finish();
    if let Err(e) = result {
        store.finish_campaign(campaign, CampaignStatus::Interrupted)?;
        if let Some(sig) = interrupted() {
            eprintln!(
                "cosched: interrupted; campaign {campaign} is marked interrupted, with every finished run stored \
                 and the profiles of {} of {} jobs",
                profiles.len(),
                plan.len()
            );
            return Err(anyhow::Error::new(Interrupted(sig)));
        }
        return Err(e);
    }
    store.finish_campaign(campaign, CampaignStatus::Done)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&store.profiles(campaign)?)?);
        return Ok(());
    }
    show(&w, &profiles, host_cores, a.interval);
    println!("campaign {campaign} in {}", store.path().display());
    Ok(())
}

/// The jobs named by `--job` (by name, or by the name written in the file
/// for copies made by `count`), in workload order; all jobs when none is named.
fn select_jobs<'a>(w: &'a Workload, names: &[String]) -> anyhow::Result<Vec<&'a Job>> {
    if w.jobs.is_empty() {
        return Err(bad_input("the workload has no jobs to profile"));
    }
    if let Some(bad) = names.iter().find(|n| !w.jobs.iter().any(|j| j.name == **n || j.base_name == **n)) {
        let known: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
        return Err(bad_input(format!("--job {bad}: no such job in {}; its jobs are: {}", w.name, known.join(", "))));
    }
    Ok(w.jobs.iter().filter(|j| names.is_empty() || names.iter().any(|n| *n == j.name || *n == j.base_name)).collect())
}

/// Runs one job: the counted run (unless system calls are counted with /proc
/// only), then the timed runs, each stored as it ends; then its profile.
fn profile_one(
    a: &ProfileArgs,
    p: &Planned,
    host_cores: u32,
    campaign: CampaignId,
    store: &mut Store,
    on_run: &mut dyn FnMut(&str),
) -> anyhow::Result<JobProfile> {
    let launch = Launch::new(p.argv.clone()).pinned(p.cpus.clone());
    let mut run_once = |method: SyscallMethod, repeat: usize, label: &str| -> anyhow::Result<ProfileRun> {
        on_run(label);
        // Between runs nothing waits on a job, so a Ctrl-C since the last one
        // is seen here rather than after starting another.
        if let Some(sig) = interrupted() {
            return Err(LaunchError::Interrupted(sig).into());
        }
        std::thread::sleep(SETTLE);
        let opts = ProfileOptions { interval: a.interval, host_cores, syscalls: method, hw_counters: true };
        let run = profile_job_with(&launch, &opts).map_err(|e| job_error(p.job, e))?;
        store.add_solo_run(campaign, &solo_record(p, a.interval, repeat, &run), &run.samples)?;
        Ok(run)
    };
    // First, so that an unavailable --syscalls method fails before the timed
    // runs, and so that it warms the caches for them rather than they for it.
    let counted = match a.syscalls {
        SyscallMethod::Proc => None,
        m => Some(run_once(m, a.repeats, "counted run")?),
    };
    let mut timed = Vec::with_capacity(a.repeats);
    let mut timing = "process";
    for r in 0..a.repeats {
        let run = run_once(SyscallMethod::Proc, r, &format!("timed run {}/{}", r + 1, a.repeats))?;
        let (t, how) = run.job_time();
        timing = how;
        timed.push((t, run.summary));
    }
    let mut notes: Vec<String> = Vec::new();
    for n in counted.iter().flat_map(|c| c.notes.iter()) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    let prof = JobProfile::from_runs(&timed, timing, counted.map(|c| c.summary), notes)
        .ok_or_else(|| anyhow::anyhow!("job {}: its runs gave no profile (a solo time that is not finite?)", p.job.name))?;
    let record = ProfileRecord { job: p.job.name.clone(), program: p.job.program_key(), summary: serde_json::to_value(&prof)? };
    store.put_profile(campaign, &record)?;
    Ok(prof)
}

fn job_error(job: &Job, e: ProfileError) -> anyhow::Error {
    match e {
        // Kept bare, so the interrupt is reported as such and not as a failure of the job.
        ProfileError::Launch(LaunchError::Interrupted(_)) => e.into(),
        other => anyhow::Error::new(other).context(format!("job {} (line {})", job.name, job.line)),
    }
}

fn solo_record(p: &Planned, interval: Duration, repeat: usize, run: &ProfileRun) -> SoloRunRecord {
    let (exit_code, exit_signal) = match run.outcome.exit {
        Exit::Code(c) => (Some(c), None),
        Exit::Signal(s) => (None, Some(s)),
    };
    let (time_s, timing) = run.job_time();
    let s = &run.summary;
    SoloRunRecord {
        job: p.job.name.clone(),
        program: p.job.program_key(),
        cpus: p.cpus.clone(),
        repeat: repeat as u32,
        interval_s: interval.as_secs_f64(),
        wall_s: run.outcome.wall_s,
        time_s,
        timing: timing.to_string(),
        exit_code,
        exit_signal,
        syscall_source: Some(s.syscall_source.name().to_string()),
        // Only `perf stat` counts for the run as a whole; the other sources
        // are in the samples.
        syscall_total: if s.syscall_source == SyscallSource::PerfStat { s.syscall_count } else { None },
        counters: s.counters.clone(),
    }
}



fn show(w: &Workload, profiles: &[(&Job, JobProfile)], host_cores: u32, interval: Duration) {
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
                job.name.clone(),
                format!("{} n={}", fmt_ci_auto(&p.solo_s), p.solo_s.n),
                p.timing.clone(),
                format!("{:.2} / {:.2}", s.host_load_mean, s.host_load_peak),
                format!("{:.2}", s.cores_used),
                syscalls,
                format!("{} / {}", fmt_rate(s.vol_ctx_rate), fmt_rate(s.invol_ctx_rate)),
                format!("{:.1} / {:.1}", s.read_bps / 1e6, s.write_bps / 1e6),
                format!("{:.1}", s.max_rss_kib as f64 / 1024.0),
                fmt_rate(s.fault_rate),
            ];
            for name in &counter_names {
                let v = p.counted_run.as_ref().and_then(|c| c.counters.get(name));
                row.push(v.map(|&v| si(v)).unwrap_or_else(|| "-".into()));
            }
            row
        })
        .collect();
    let mut headers: Vec<String> = [
        "job",
        "solo s, median [95% CI]",
        "timed by",
        "U mean / peak",
        "cores used",
        "syscalls/s",
        "ctx sw/s vol / invol",
        "read / write MB/s",
        "max RSS MiB",
        "faults/s",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    headers.extend(counter_names.iter().map(|n| format!("{n} per run")));
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    println!("profile of {}: each job alone on CPUs 0..its cores, host pool of {host_cores} cores\n", w.name);
    println!("{}", table(&h, &rows));
    let n = profiles.first().map(|(_, p)| p.solo_s.n).unwrap_or(0);
    println!(
        "\nsolo s: median over {n} timed runs with its 95% interval (below 6 runs, the range); a kernel's work-phase \
         time, else the process's wall time.\n\
         U = CPU time of the job's process tree / (wall time x {host_cores} host cores): over the run / the busiest \
         {interval:?} interval; cores used = U x {host_cores}. Every figure but system calls is the median over the \
         timed runs."
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
    for (job, p) in profiles {
        for note in &p.notes {
            println!("note ({}): {note}", job.name);
        }
    }
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

    fn workload() -> Workload {
        let text = "[[jobs]]\nname = \"a\"\ncommand = \"true\"\n\n\
                    [[jobs]]\nname = \"b\"\ncommand = \"true\"\ncount = 2\n";
        cosched_model::workload::parse_workload(text, "w.toml", Some(2)).unwrap()
    }

    fn names(jobs: &[&Job]) -> Vec<String> {
        jobs.iter().map(|j| j.name.clone()).collect()
    }

    #[test]
    fn jobs_are_selected_by_name_or_by_the_name_written_for_their_copies() {
        let w = workload();
        assert_eq!(names(&select_jobs(&w, &[]).unwrap()), ["a", "b.1", "b.2"]);
        assert_eq!(names(&select_jobs(&w, &["b".into()]).unwrap()), ["b.1", "b.2"]);
        // Workload order, whatever the order asked.
        assert_eq!(names(&select_jobs(&w, &["b.2".into(), "a".into()]).unwrap()), ["a", "b.2"]);
    }

    #[test]
    fn an_unknown_job_is_bad_input_that_lists_the_jobs() {
        let e = select_jobs(&workload(), &["a".into(), "c".into()]).unwrap_err();
        assert_eq!(crate::exit::code_of(&e), 2);
        assert_eq!(e.to_string(), "--job c: no such job in w; its jobs are: a, b.1, b.2");
    }
}
