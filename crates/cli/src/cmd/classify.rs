//! `cosched classify`: class N / C / S of each probed job (seed 003 a), from
//! its latest finished probe, with the measured reason and, where a profile
//! exists, its host load U.

use std::path::PathBuf;

use clap::Args;
use cosched_model::probe::{classify, Class, ClassRule};
use cosched_model::profile::JobProfile;
use cosched_model::workload::Workload;
use cosched_report::curves::fmt_kib;
use cosched_report::table;
use cosched_store::{CampaignId, CampaignKind, CampaignRecord, CampaignStatus, ProbePointRecord, Store};
use serde::Serialize;

use super::common::{load_workload, DbArgs};
use super::probe::points_of;
use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched classify\n  \
    cosched classify --workload examples/characterize.toml   # also lists jobs not probed yet\n  \
    cosched classify --json --db results/cosched.db\n\n\
    Each job's latest finished probe (cosched probe) is split at the LLC size: a job\n\
    slowed by more than --significant already while the stressor fits the LLC is C\n\
    (LLC-sensitive), one slowed only once the stressor streams from memory is S\n\
    (streaming), one never slowed is N (core-bound). The figures behind the class are\n\
    printed beside it.")]
pub struct ClassifyArgs {
    /// Classify this workload's jobs (and list those never probed); default:
    /// every job with a finished probe in the database.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// LLC size in KiB that splits each curve into cache and memory sides
    /// (default: the LLC detected on the node that ran the probe, recorded
    /// with it, else this node's).
    #[arg(long, value_name = "KIB")]
    pub llc_kib: Option<u64>,
    /// A median slowdown above this counts as slowed.
    #[arg(long, default_value_t = ClassRule::default().significant, value_name = "X")]
    pub significant: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The verdict for one job.
#[derive(Debug, Serialize)]
struct Row {
    workload: String,
    job: String,
    /// `classified`, `unclassifiable` (the probe lacks one side of the LLC)
    /// or `not probed`.
    status: &'static str,
    class: Option<Class>,
    /// The figures behind the class (see `model::probe::Classification`).
    baseline: Option<f64>,
    sens_llc: Option<f64>,
    sens_mem: Option<f64>,
    cont_max: Option<f64>,
    reason: String,
    /// Probe campaign the class comes from.
    campaign: Option<CampaignId>,
    llc_kib: Option<u64>,
    /// Levels of the probe curve.
    levels: usize,
    /// Host load U of the job's latest solo profile, when one is stored.
    host_load: Option<f64>,
}

/// The points of one job in its latest finished probe campaign.
struct Probed {
    workload: String,
    job: String,
    campaign: CampaignRecord,
    records: Vec<ProbePointRecord>,
}

pub fn run(a: ClassifyArgs) -> anyhow::Result<()> {
    if !(a.significant > 1.0 && a.significant.is_finite()) {
        return Err(bad_input("--significant must be a slowdown above 1, e.g. 1.10"));
    }
    if a.llc_kib == Some(0) {
        return Err(bad_input("--llc-kib must be a size in KiB above 0"));
    }
    let w = a.workload.as_deref().map(load_workload).transpose()?;
    let store = a.db.open_existing()?;
    let probed = latest_probes(&store, w.as_ref().map(|w| w.name.as_str()))?;
    let rule = ClassRule { significant: a.significant };
    let mut here_llc: Option<Option<u64>> = None;
    let mut llc_of = |c: &CampaignRecord| -> Option<u64> {
        a.llc_kib.or_else(|| c.params.get("llc_kib").and_then(|v| v.as_u64())).or_else(|| {
            *here_llc.get_or_insert_with(|| {
                cosched_measure::topology::detect().ok().and_then(|n| n.llc().map(|c| c.size_bytes / 1024))
            })
        })
    };

    let mut rows = Vec::new();
    match &w {
        Some(w) => {
            for job in &w.jobs {
                match probed.iter().find(|p| p.job == job.name) {
                    Some(p) => rows.push(row(&store, p, llc_of(&p.campaign), rule, Some(&job.program_key()))?),
                    None => {
                        rows.push(not_probed(&store, w, &job.name, &job.program_key(), a.workload.as_deref().unwrap())?)
                    }
                }
            }
        }
        None => {
            if probed.is_empty() {
                anyhow::bail!(
                    "{}: no finished probe; run `cosched probe --workload FILE` first",
                    store.path().display()
                );
            }
            for p in &probed {
                let program = p.campaign.params.get("program").and_then(|v| v.as_str()).map(str::to_string);
                rows.push(row(&store, p, llc_of(&p.campaign), rule, program.as_deref())?);
            }
        }
    }

    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let show_workload = w.is_none() && rows.iter().any(|r| r.workload != rows[0].workload);
    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            if show_workload {
                v.push(r.workload.clone());
            }
            v.extend([
                r.job.clone(),
                r.class.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                f(r.baseline),
                f(r.sens_llc),
                f(r.sens_mem),
                f(r.cont_max),
                f(r.host_load),
                r.llc_kib.map(fmt_kib).unwrap_or_else(|| "-".into()),
                r.campaign.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                r.reason.clone(),
            ]);
            v
        })
        .collect();
    let mut headers = Vec::new();
    if show_workload {
        headers.push("workload");
    }
    headers.extend(["job", "class", "baseline", "sens. in LLC", "sens. beyond", "content.", "U", "LLC", "probe", "reason"]);
    println!("{}", table(&headers, &table_rows));
    println!(
        "\nN core-bound, C LLC-sensitive, S streaming (seed 003 a). baseline: the job's slowdown beside the stressor in\n\
         private cache (core sharing); sens.: largest median slowdown of the job with the stressor inside / beyond\n\
         the LLC, divided by the baseline; content.: largest median slowdown of the stressor beside the job;\n\
         slowed means above {:.2}. U: host load of the job's latest solo profile (cosched profile), '-' when none.",
        a.significant
    );
    Ok(())
}

/// For each job, the points of the latest `done` probe campaign holding it:
/// an interrupted probe has only part of a curve, which could miss the side
/// of the LLC that decides the class.
fn latest_probes(store: &Store, workload: Option<&str>) -> anyhow::Result<Vec<Probed>> {
    let mut out: Vec<Probed> = Vec::new();
    let mut campaigns = store.campaigns()?;
    campaigns.retain(|c| {
        c.kind == CampaignKind::Probe
            && c.status == CampaignStatus::Done
            && (workload.is_none() || workload == Some(c.workload.as_str()))
    });
    for c in campaigns.into_iter().rev() {
        let records = store.probe_points(c.id)?;
        let mut jobs: Vec<String> = Vec::new();
        for r in &records {
            if !jobs.contains(&r.job) {
                jobs.push(r.job.clone());
            }
        }
        for job in jobs {
            if out.iter().any(|p| p.workload == c.workload && p.job == job) {
                continue;
            }
            let mine = records.iter().filter(|r| r.job == job).cloned().collect();
            out.push(Probed { workload: c.workload.clone(), job, campaign: c.clone(), records: mine });
        }
    }
    out.sort_by(|a, b| (&a.workload, &a.job).cmp(&(&b.workload, &b.job)));
    Ok(out)
}

fn row(store: &Store, p: &Probed, llc_kib: Option<u64>, rule: ClassRule, program: Option<&str>) -> anyhow::Result<Row> {
    let llc = llc_kib.ok_or_else(|| {
        anyhow::anyhow!(
            "the LLC size for the probe of `{}` is not recorded and cannot be detected here; pass --llc-kib",
            p.job
        )
    })?;
    let refs: Vec<&ProbePointRecord> = p.records.iter().collect();
    let points = points_of(&refs);
    let c = classify(&points, llc, rule);
    let (status, reason) = match &c {
        Some(c) => ("classified", c.reason.clone()),
        None => (
            "unclassifiable",
            format!(
                "the probe needs a stressor size beyond the LLC ({}) and one more besides the smallest; probe again with such sizes",
                fmt_kib(llc)
            ),
        ),
    };
    Ok(Row {
        workload: p.workload.clone(),
        job: p.job.clone(),
        status,
        class: c.as_ref().map(|c| c.class),
        baseline: c.as_ref().map(|c| c.baseline),
        sens_llc: c.as_ref().map(|c| c.sens_llc),
        sens_mem: c.as_ref().map(|c| c.sens_mem),
        cont_max: c.as_ref().map(|c| c.cont_max),
        reason,
        campaign: Some(p.campaign.id),
        llc_kib: Some(llc),
        levels: points.len(),
        host_load: host_load(store, program, &p.workload, &p.job)?,
    })
}

fn not_probed(store: &Store, w: &Workload, job: &str, program: &str, path: &std::path::Path) -> anyhow::Result<Row> {
    Ok(Row {
        workload: w.name.clone(),
        job: job.to_string(),
        status: "not probed",
        class: None,
        baseline: None,
        sens_llc: None,
        sens_mem: None,
        cont_max: None,
        reason: format!("not probed: run cosched probe --workload {} --job {job}", path.display()),
        campaign: None,
        llc_kib: None,
        levels: 0,
        host_load: host_load(store, Some(program), &w.name, job)?,
    })
}

/// U of the job's latest solo profile: by its program (what ran, whatever
/// the job is called), else by name among the finished profile campaigns of
/// its workload.
fn host_load(store: &Store, program: Option<&str>, workload: &str, job: &str) -> anyhow::Result<Option<f64>> {
    if let Some(program) = program {
        if let Some((_, p)) = store.latest_profile(program)? {
            if let Some(u) = load_in(&p.summary) {
                return Ok(Some(u));
            }
        }
    }
    for c in store.campaigns()?.iter().rev() {
        if c.kind != CampaignKind::Profile || c.status != CampaignStatus::Done || c.workload != workload {
            continue;
        }
        if let Some(p) = store.profiles(c.id)?.into_iter().find(|p| p.job == job) {
            if let Some(u) = load_in(&p.summary) {
                return Ok(Some(u));
            }
        }
    }
    Ok(None)
}

/// The host load U of a stored profile: the median over its timed runs
/// (`JobProfile::summary`), not the perf-counted run's, which counting slows
/// for a syscall-heavy job.
fn load_in(v: &serde_json::Value) -> Option<f64> {
    serde_json::from_value::<JobProfile>(v.clone()).ok().map(|p| p.summary.host_load_mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::profile::{summarize, RunFacts, Sample, SyscallSource};

    fn sample(t_s: f64, cpu_s: f64) -> Sample {
        Sample { t_s, cpu_user_s: cpu_s, nprocs: 1, ..Sample::default() }
    }

    #[test]
    fn host_load_comes_from_the_timed_runs_of_a_stored_profile() {
        let facts = || RunFacts {
            syscall_source: SyscallSource::ProcSyscrSyscw,
            syscall_total: None,
            counters: Default::default(),
        };
        // One core busy on a 2-core host: U = 0.5; the counted run reads 0.9.
        let timed = summarize(&[sample(0.0, 0.0), sample(2.0, 2.0)], 2, facts()).unwrap();
        let counted = summarize(&[sample(0.0, 0.0), sample(2.0, 3.6)], 2, facts()).unwrap();
        let p = JobProfile::from_runs(&[(2.0, timed)], "process", Some(counted), Vec::new()).unwrap();
        assert_eq!(load_in(&serde_json::to_value(&p).unwrap()), Some(0.5));
        assert_eq!(load_in(&serde_json::json!({"solo_s": 1.9})), None, "not a profile");
    }
}
