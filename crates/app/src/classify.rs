//! `cosched classify`: class N / C / S of each probed job (the SCN paper), from
//! its latest finished probe, with the measured reason and, where a profile
//! exists, its host load U.

use std::path::PathBuf;

use cosched_model::probe::{classify as class_of, Class, ClassRule};
use cosched_model::profile::JobProfile;
use cosched_model::workload::Workload;
use cosched_report::curves::fmt_kib;
use cosched_store::{CampaignId, CampaignKind, CampaignParams, CampaignRecord, CampaignStatus, ProbePointRecord, Store};
use serde::Serialize;

use crate::common::{db_path, load_workload, open_read_only_store, UsedCampaign};
use crate::error::bad_input;
use cosched_learn::curve::{points_of, probe_llc_kib};

#[derive(Debug, Clone)]
pub struct ClassifyRequest {
    /// Classify this workload's jobs (and list those never probed); default:
    /// every job with a finished probe.
    pub workload: Option<PathBuf>,
    /// LLC size splitting each curve; default: the probe's recorded one,
    /// else this node's.
    pub llc_kib: Option<u64>,
    /// A median slowdown above this counts as slowed.
    pub significant: f64,
    pub db: Option<PathBuf>,
}

/// The verdict for one job.
#[derive(Debug, Serialize)]
pub struct ClassRow {
    pub workload: String,
    pub job: String,
    /// `classified`, `unclassifiable` (the probe lacks one side of the LLC)
    /// or `not probed`.
    pub status: &'static str,
    pub class: Option<Class>,
    /// The figures behind the class (see `model::probe::Classification`).
    pub baseline: Option<f64>,
    pub sens_llc: Option<f64>,
    pub sens_mem: Option<f64>,
    pub cont_max: Option<f64>,
    pub reason: String,
    /// Probe campaign the class comes from.
    pub campaign: Option<i64>,
    pub llc_kib: Option<u64>,
    /// Levels of the probe curve.
    pub levels: usize,
    /// Host load U of the job's latest solo profile, when one is stored.
    pub host_load: Option<f64>,
}

/// The points of one job in its latest finished probe campaign.
struct Probed {
    workload: String,
    job: String,
    campaign: CampaignRecord,
    records: Vec<ProbePointRecord>,
}

/// The verdicts and what they were read from.
#[derive(Debug)]
pub struct Classified {
    /// In workload order with a workload, else by workload and job.
    pub rows: Vec<ClassRow>,
    /// The probe campaigns of the classes and the profile campaigns of U, by id.
    pub campaigns: Vec<UsedCampaign>,
}

pub fn classify(a: &ClassifyRequest) -> anyhow::Result<Classified> {
    if !(a.significant > 1.0 && a.significant.is_finite()) {
        return Err(bad_input("--significant must be a slowdown above 1, e.g. 1.10"));
    }
    if a.llc_kib == Some(0) {
        return Err(bad_input("--llc-kib must be a size in KiB above 0"));
    }
    let w = a.workload.as_deref().map(load_workload).transpose()?;
    let store = open_read_only_store(&db_path(a.db.as_deref()))?;
    let probed = latest_probes(&store, w.as_ref().map(|w| w.name.as_str()))?;
    let rule = ClassRule { significant: a.significant };
    let mut here_llc: Option<Option<u64>> = None;
    let mut llc_of = |c: &CampaignRecord| -> Option<u64> {
        a.llc_kib.or_else(|| probe_llc_kib(c).ok().flatten()).or_else(|| {
            *here_llc.get_or_insert_with(|| {
                cosched_measure::topology::detect().ok().and_then(|n| n.llc().map(|c| c.size_bytes / 1024))
            })
        })
    };

    let mut rows = Vec::new();
    let mut used: Vec<CampaignId> = probed.iter().map(|p| p.campaign.id).collect();
    let mut load_of = |program: Option<&str>, workload: &str, job: &str| -> anyhow::Result<Option<f64>> {
        Ok(host_load(&store, program, workload, job)?.map(|(u, c)| {
            used.push(c);
            u
        }))
    };
    match &w {
        Some(w) => {
            for job in &w.jobs {
                match probed.iter().find(|p| p.job == job.name) {
                    Some(p) => {
                        let u = load_of(Some(&job.program_key()), &p.workload, &p.job)?;
                        rows.push(row(p, llc_of(&p.campaign), rule, u)?)
                    }
                    None => {
                        let u = load_of(Some(&job.program_key()), &w.name, &job.name)?;
                        rows.push(not_probed(w, &job.name, a.workload.as_deref().unwrap(), u))
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
                let program = match p.campaign.parameters()? {
                    CampaignParams::Probe(params) => params.program,
                    _ => None,
                };
                let u = load_of(program.as_deref(), &p.workload, &p.job)?;
                rows.push(row(p, llc_of(&p.campaign), rule, u)?);
            }
        }
    }
    used.sort();
    used.dedup();
    let mut campaigns = Vec::new();
    for id in used {
        let c = store.campaign(id)?.ok_or(cosched_store::StoreError::NoSuchCampaign(id))?;
        campaigns.push(UsedCampaign::of(&store, &c)?);
    }
    Ok(Classified { rows, campaigns })
}

/// For each job, its curve level by level from the latest `done` probe
/// campaign that measured the level (a job probed again at a few levels
/// keeps the rest); an interrupted probe has only part of a curve, which
/// could miss the side of the LLC that decides the class. `campaign` is the
/// newest.
fn latest_probes(store: &Store, workload: Option<&str>) -> anyhow::Result<Vec<Probed>> {
    let mut names: Vec<String> = store
        .campaigns()?
        .into_iter()
        .filter(|c| c.kind == CampaignKind::Probe && workload.is_none_or(|w| w == c.workload))
        .map(|c| c.workload)
        .collect();
    names.sort();
    names.dedup();
    let mut out: Vec<Probed> = Vec::new();
    for wl in names {
        for (c, job, records) in store.probe_curves(&wl)? {
            match out.iter_mut().find(|p| p.workload == wl && p.job == job) {
                Some(newest) => newest.records.extend(records),
                None => out.push(Probed { workload: wl.clone(), job, campaign: c, records }),
            }
        }
    }
    Ok(out)
}

fn row(p: &Probed, llc_kib: Option<u64>, rule: ClassRule, host_load: Option<f64>) -> anyhow::Result<ClassRow> {
    let llc = llc_kib.ok_or_else(|| {
        anyhow::anyhow!(
            "the LLC size for the probe of `{}` is not recorded and cannot be detected here; pass --llc-kib",
            p.job
        )
    })?;
    let refs: Vec<&ProbePointRecord> = p.records.iter().collect();
    let points = points_of(&refs);
    let c = class_of(&points, llc, rule);
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
    Ok(ClassRow {
        workload: p.workload.clone(),
        job: p.job.clone(),
        status,
        class: c.as_ref().map(|c| c.class),
        baseline: c.as_ref().map(|c| c.baseline),
        sens_llc: c.as_ref().map(|c| c.sens_llc),
        sens_mem: c.as_ref().map(|c| c.sens_mem),
        cont_max: c.as_ref().map(|c| c.cont_max),
        reason,
        campaign: Some(p.campaign.id.0),
        llc_kib: Some(llc),
        levels: points.len(),
        host_load,
    })
}

fn not_probed(w: &Workload, job: &str, path: &std::path::Path, host_load: Option<f64>) -> ClassRow {
    ClassRow {
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
        host_load,
    }
}

/// U of the job's latest solo profile: by its program (what ran, whatever
/// the job is called), else by name among the finished profile campaigns of
/// its workload; with the campaign it comes from.
fn host_load(store: &Store, program: Option<&str>, workload: &str, job: &str) -> anyhow::Result<Option<(f64, CampaignId)>> {
    if let Some(program) = program {
        if let Some((c, p)) = store.latest_job_profile(program)? {
            return Ok(Some((load_in(&p.summary), c)));
        }
    }
    for c in store.campaigns()?.iter().rev() {
        if c.kind != CampaignKind::Profile || c.status != CampaignStatus::Done || c.workload != workload {
            continue;
        }
        if let Some(p) = store.profiles(c.id)?.into_iter().find(|p| p.job == job) {
            return Ok(Some((load_in(&p.summary), c.id)));
        }
    }
    Ok(None)
}

/// The host load U of a stored profile: the median over its timed runs
/// (`JobProfile::summary`), not the perf-counted run's, which counting slows
/// for a syscall-heavy job.
fn load_in(p: &JobProfile) -> f64 {
    p.summary.host_load_mean
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
            stall_s: None,
            collateral_s: None,
        };
        // One core busy on a 2-core host: U = 0.5; the counted run reads 0.9.
        let timed = summarize(&[sample(0.0, 0.0), sample(2.0, 2.0)], 2, facts()).unwrap();
        let counted = summarize(&[sample(0.0, 0.0), sample(2.0, 3.6)], 2, facts()).unwrap();
        let p = JobProfile::from_runs(&[(2.0, timed)], "process", Some(counted), Vec::new()).unwrap();
        assert_eq!(load_in(&p), 0.5);
    }
}
