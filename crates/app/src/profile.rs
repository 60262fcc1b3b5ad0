//! `cosched profile`: each job alone, pinned as it will be when shared, its
//! process tree sampled at an interval; solo runs, samples and one profile
//! per job stored in a `profile` campaign.

use std::path::PathBuf;
use std::time::Duration;

use cosched_measure::corun::SETTLE;
use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{handle_terminal_stop, install_interrupt_handler, interrupted, Exit, Launch, LaunchError, TerminalStop};
use cosched_measure::perf::SyscallMethod;
use cosched_measure::profile::{profile_job_with, ProfileError, ProfileOptions, ProfileRun};
use cosched_model::profile::{JobProfile, SyscallSource};
use cosched_model::workload::{Job, Workload};
use cosched_store::{CampaignId, CampaignParams, CampaignStatus, ProfileJob, ProfileParams, ProfileRecord, SoloRunRecord, Store};

use crate::calibrate::calibrate_missing;
use crate::common::{db_path, load_workload, node_cpu_count, open_store, provenance, record_conditions, Ctx};
use crate::error::{bad_input, stopped, Interrupted};

/// How the one counted run counts system calls: `auto`, `tracepoint`,
/// `perf-stat` or `proc` (no counted run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Syscalls(SyscallMethod);

impl std::str::FromStr for Syscalls {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse().map(Syscalls)
    }
}

impl Syscalls {
    /// Counting with /proc only: no counted run.
    pub const PROC: Syscalls = Syscalls(SyscallMethod::Proc);

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub(crate) fn method(self) -> SyscallMethod {
        self.0
    }
}

#[derive(Debug, Clone)]
pub struct ProfileRequest {
    pub workload: PathBuf,
    /// Jobs to profile by name (or by the name written for `count` copies);
    /// empty: every job.
    pub jobs: Vec<String>,
    pub interval: Duration,
    /// Timed runs per job.
    pub repeats: usize,
    pub syscalls: Syscalls,
    pub db: Option<PathBuf>,
    /// Last-level sizes (KiB) of a miss-ratio curve per job by valgrind's
    /// cachegrind (`--miss-curve`); empty: none.
    pub miss_curve: Vec<u64>,
}

#[derive(Debug)]
pub struct ProfileReport {
    pub workload: String,
    pub campaign: i64,
    pub db: PathBuf,
    /// Cores of the workload's host pool, the denominator of host load U.
    pub host_cores: u32,
    pub interval: Duration,
    /// Each profiled job's name and profile, in workload order.
    pub profiles: Vec<(String, JobProfile)>,
    /// The stored profile records, as `cosched db export` gives them.
    pub records: serde_json::Value,
}

/// One job as it will be run.
struct Planned<'a> {
    job: &'a Job,
    argv: Vec<String>,
    cpus: Vec<u32>,
}

/// How each job is profiled: the part of a [`ProfileRequest`] that is not
/// where the workload and the store are.
#[derive(Debug, Clone, Copy)]
pub struct ProfileSettings {
    pub interval: Duration,
    /// Timed runs per job.
    pub repeats: usize,
    pub syscalls: Syscalls,
}

impl ProfileRequest {
    pub fn settings(&self) -> ProfileSettings {
        ProfileSettings { interval: self.interval, repeats: self.repeats, syscalls: self.syscalls }
    }
}

pub fn profile(req: &ProfileRequest, ctx: &Ctx) -> anyhow::Result<ProfileReport> {
    if req.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if let Some(bad) = req.miss_curve.iter().find(|&&k| !cosched_measure::cachegrind::valid_size(k)) {
        return Err(bad_input(format!(
            "--miss-curve {bad}K: a simulated last level is {} ways x {} B lines x a power of two sets (e.g. 256K, 1M, 8M)",
            cosched_measure::cachegrind::LL_ASSOC,
            cosched_measure::cachegrind::LL_LINE
        )));
    }
    let w = load_workload(&req.workload)?;
    let selected = select_jobs(&w, &req.jobs)?;
    let _lock = crate::lock::take("profile", None)?;
    let mut store = open_store(&db_path(req.db.as_deref()))?;
    install_interrupt_handler();
    handle_terminal_stop(TerminalStop::AtPausePoints);
    // Only the selected jobs' `seconds` need a calibration.
    let chosen = Workload { jobs: selected.iter().map(|&j| j.clone()).collect(), ..w.clone() };
    if let Err(e) = calibrate_missing(&chosen, &mut store, ctx) {
        return Err(match interrupted() {
            Some(sig) => anyhow::Error::new(Interrupted(sig)).context("interrupted while calibrating; nothing profiled"),
            None => e,
        });
    }
    let mut report = profile_in(&w, &selected, &mut store, &req.settings(), ctx)?;
    if !req.miss_curve.is_empty() {
        miss_curves(&mut report, &selected, &req.miss_curve, &mut store, ctx)?;
    }
    Ok(report)
}

/// A last-level size of `--miss-curve`: a number of KiB, or with a `K`,
/// `M` or `G` suffix (`512K`, `8M`).
pub fn parse_kib(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "K"),
    };
    let shift = match unit.to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "K" => 0,
        "M" => 10,
        "G" => 20,
        _ => return Err(format!("`{s}`: expected a size such as 512K, 8M or 1G")),
    };
    let n: u64 = num.trim().parse().map_err(|_| format!("`{s}`: expected a size such as 512K, 8M or 1G"))?;
    n.checked_shl(shift).filter(|&k| k > 0 && k >> shift == n).ok_or_else(|| format!("`{s}`: expected a size from 1K to 2^53 K"))
}

/// Each profiled job's miss-ratio curve (the DistGen paper's reuse
/// distances, `cosched_measure::cachegrind`), added to its stored profile:
/// the finished campaign is reopened for them and done again after, also
/// when they fail or are interrupted (its profiles stand as measured).
/// Without valgrind the curves are skipped, said on stderr and in each
/// profile's notes.
fn miss_curves(report: &mut ProfileReport, jobs: &[&Job], sizes: &[u64], store: &mut Store, ctx: &Ctx) -> anyhow::Result<()> {
    let campaign = CampaignId(report.campaign);
    store.reopen_campaign(campaign)?;
    let r = add_miss_curves(report, jobs, sizes, store, ctx);
    store.finish_campaign(campaign, CampaignStatus::Done)?;
    r?;
    report.records = serde_json::to_value(store.profiles(campaign)?)?;
    Ok(())
}

fn add_miss_curves(report: &mut ProfileReport, jobs: &[&Job], sizes: &[u64], store: &mut Store, ctx: &Ctx) -> anyhow::Result<()> {
    use cosched_measure::cachegrind;
    let campaign = CampaignId(report.campaign);
    let cals = store.calibrations()?;
    let skipped = cachegrind::unavailable();
    let dir = tempfile::tempdir()?;
    for (name, prof) in report.profiles.iter_mut() {
        let Some(job) = jobs.iter().find(|j| j.name == *name) else { continue };
        match &skipped {
            Some(why) => {
                eprintln!("skipped: miss-ratio curve of {name}: {why}");
                prof.notes.push(format!("no miss-ratio curve: {why}"));
            }
            None => {
                let argv = job_argv(job, &cals).map_err(anyhow::Error::msg)?;
                let env: Vec<(String, String)> = job.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut sorted = sizes.to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                for kib in sorted {
                    if let Some(sig) = interrupted() {
                        return Err(stopped(sig, format!("interrupted during the miss-ratio curves; campaign {campaign} holds the profiles without them")));
                    }
                    ctx.step(&format!("{name}: cachegrind with a last level of {kib} KiB"));
                    match cachegrind::miss_point(&argv, &env, kib, dir.path()) {
                        Ok(point) => prof.miss_curve.push(point),
                        // A Ctrl-C reaches valgrind too, which then fails.
                        Err(e) => {
                            return Err(match interrupted() {
                                Some(sig) => stopped(sig, format!("interrupted during the miss-ratio curves; campaign {campaign} holds the profiles without them")),
                                None => anyhow::anyhow!("job {name}: {e}"),
                            })
                        }
                    }
                }
            }
        }
        store.put_profile(campaign, &ProfileRecord { job: name.clone(), program: job.program_key(), summary: prof.clone() })?;
    }
    Ok(())
}

/// Profiles `selected` jobs of `w` into `store` in one campaign: the
/// caller has parsed the workload, opened the store, taken the node lock,
/// installed the interrupt handlers and calibrated what the jobs need.
pub fn profile_in(w: &Workload, selected: &[&Job], store: &mut Store, req: &ProfileSettings, ctx: &Ctx) -> anyhow::Result<ProfileReport> {
    if req.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    let cals = store.calibrations()?;
    let node_cpus = node_cpu_count();
    let host_cores = w.host_pool().and_then(|p| p.cores).unwrap_or(node_cpus);
    let plan: Vec<Planned> = selected
        .iter()
        .map(|&job| {
            let argv = job_argv(job, &cals).map_err(anyhow::Error::msg)?;
            let cpus = (0..job.cores.clamp(1, node_cpus)).collect();
            Ok(Planned { job, argv, cpus })
        })
        .collect::<anyhow::Result<_>>()?;
    let method = req.syscalls.method();
    let counted = method != SyscallMethod::Proc;
    let params = CampaignParams::Profile(ProfileParams {
        jobs: plan
            .iter()
            .map(|p| ProfileJob {
                name: p.job.name.clone(),
                argv: p.argv.clone(),
                cpus: p.cpus.clone(),
                identity: Some(cosched_measure::identity::program_key(p.job.kernel().is_some(), &p.argv, p.job.cores)),
            })
            .collect(),
        interval_s: req.interval.as_secs_f64(),
        repeats: req.repeats,
        syscalls: method.name().to_string(),
        host_cores,
        counted_run_repeat: counted.then_some(req.repeats),
    });
    let campaign = store.begin_campaign_typed(&w.name, &params, &provenance(ctx))?;
    record_conditions(ctx, store, campaign, true)?;
    let per_job = req.repeats + usize::from(counted);
    ctx.step(&format!(
        "profile: {} jobs, {}{} timed runs each, sampled every {:?}, campaign {campaign}",
        plan.len(),
        if counted { format!("1 counted run ({}) + ", method.name()) } else { String::new() },
        req.repeats,
        req.interval
    ));
    let progress = ctx.progress.task("profile", (plan.len() * per_job) as u64);
    let mut done = 0u64;
    let mut profiles = Vec::new();
    let mut result = Ok(());
    for p in &plan {
        match profile_one(req, p, host_cores, campaign, store, &mut |label| {
            progress.set(done, &format!("{}: {label}", p.job.name));
            done += 1;
        }) {
            Ok(prof) => profiles.push((p.job.name.clone(), prof)),
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
            return Err(stopped(
                sig,
                format!(
                    "interrupted; campaign {campaign} is marked interrupted, with every finished run stored \
                     and the profiles of {} of {} jobs",
                    profiles.len(),
                    plan.len()
                ),
            ));
        }
        return Err(e);
    }
    store.finish_campaign(campaign, CampaignStatus::Done)?;
    Ok(ProfileReport {
        workload: w.name.clone(),
        campaign: campaign.0,
        db: store.path().to_path_buf(),
        host_cores,
        interval: req.interval,
        profiles,
        records: serde_json::to_value(store.profiles(campaign)?)?,
    })
}

/// The jobs named (by name, or by the name written in the file for copies
/// made by `count`), in workload order; all jobs when none is named.
pub(crate) fn select_jobs<'a>(w: &'a Workload, names: &[String]) -> anyhow::Result<Vec<&'a Job>> {
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
    req: &ProfileSettings,
    p: &Planned,
    host_cores: u32,
    campaign: CampaignId,
    store: &mut Store,
    on_run: &mut dyn FnMut(&str),
) -> anyhow::Result<JobProfile> {
    let mut launch = Launch::new(p.argv.clone()).pinned(p.cpus.clone());
    let own: Vec<(String, String)> = p.job.env.clone().into_iter().collect();
    launch.env = cosched_measure::node::env_for(&p.job.name, p.job.cores, &own, &p.cpus, &[]);
    let mut run_once = |method: SyscallMethod, repeat: usize, label: &str| -> anyhow::Result<ProfileRun> {
        on_run(label);
        // Between runs nothing waits on a job, so a Ctrl-C or Ctrl-Z since
        // the last one is seen here rather than after starting another.
        cosched_measure::launch::pause_point();
        if let Some(sig) = interrupted() {
            return Err(LaunchError::Interrupted(sig).into());
        }
        std::thread::sleep(SETTLE);
        let opts = ProfileOptions { interval: req.interval, host_cores, syscalls: method, hw_counters: true, stalls: true };
        let run = profile_job_with(&launch, &opts).map_err(|e| job_error(p.job, e))?;
        store.add_solo_run(campaign, &solo_record(p, req.interval, repeat, &run), &run.samples)?;
        Ok(run)
    };
    // First, so that an unavailable --syscalls method fails before the timed
    // runs, and so that it warms the caches for them rather than they for it.
    let counted = match req.syscalls.method() {
        SyscallMethod::Proc => None,
        m => Some(run_once(m, req.repeats, "counted run")?),
    };
    let mut timed = Vec::with_capacity(req.repeats);
    let mut timing = "process";
    for r in 0..req.repeats {
        let run = run_once(SyscallMethod::Proc, r, &format!("timed run {}/{}", r + 1, req.repeats))?;
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
    let record = ProfileRecord { job: p.job.name.clone(), program: p.job.program_key(), summary: prof.clone() };
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn miss_curve_sizes_read_as_kib_with_k_m_g_suffixes() {
        assert_eq!(parse_kib("512"), Ok(512));
        assert_eq!(parse_kib("512K"), Ok(512));
        assert_eq!(parse_kib("8M"), Ok(8192));
        assert_eq!(parse_kib("8MiB"), Ok(8192));
        assert_eq!(parse_kib("1g"), Ok(1 << 20));
        assert!(parse_kib("0").is_err() && parse_kib("3T").unwrap_err().contains("512K") && parse_kib("").is_err());
    }

    #[test]
    fn an_unknown_job_is_bad_input_that_lists_the_jobs() {
        let e = select_jobs(&workload(), &["a".into(), "c".into()]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert_eq!(e.to_string(), "--job c: no such job in w; its jobs are: a, b.1, b.2");
    }
}
