//! One knowledge base across workloads: every campaign of every workload in
//! the store, its jobs named by the program they run
//! ([`cosched_measure::identity::program_key`]) instead of by their name in
//! one workload file, so a program measured under `predict12.toml` is known
//! when `mixed.toml` runs it too, and predictors fit on everything.
//!
//! A job's identity comes from the campaign that measured it: the key the
//! campaign recorded, else (campaigns older than the key) one derived from
//! the command it stored, with a command's executable hashed as it is now.

use std::collections::BTreeMap;

use cosched_measure::identity::{is_kernel_argv as is_kernel, program_key};
use cosched_predict::{Characterization, PairSamples, TrainingSet};
use cosched_store::{CampaignParams, CampaignRecord, ProbePointRecord, Store};
use serde::Serialize;

use crate::common::UsedCampaign;
use crate::probe::points_of;
use crate::training::probe_llc_kib;

/// Which campaigns a knowledge base may use.
#[derive(Debug, Clone, Default)]
pub struct KbFilter {
    /// Only these workloads (their names in the store); empty: all.
    pub workloads: Vec<String>,
    /// Only campaigns taken on this host (provenance hostname).
    pub node: Option<String>,
    /// Only campaigns started at or after this Unix time.
    pub since_unix: Option<u64>,
    /// Only campaigns whose first node reading was in this cache regime
    /// (`true`: the CPU 0-1 round trip said shared; `false`: apart).
    pub shared_cache: Option<bool>,
}

/// What a knowledge base was fitted on, per workload.
#[derive(Debug, Clone, Serialize)]
pub struct KbPart {
    pub workload: String,
    /// Distinct programs of the workload it knows.
    pub programs: usize,
    /// Ordered pair samples it contributed.
    pub pair_samples: usize,
    pub campaigns: Vec<UsedCampaign>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KnowledgeBase {
    /// Keyed by program identity: a characterization's `name` and
    /// `program` are both the key.
    #[serde(skip)]
    pub set: TrainingSet,
    pub parts: Vec<KbPart>,
}

impl KnowledgeBase {
    /// One line: `3 workloads, 21 programs, 412 pair samples (mixed: ..., ...)`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.parts.iter().map(|p| format!("{}: {} programs, {} pair samples", p.workload, p.programs, p.pair_samples)).collect();
        format!(
            "{} workload(s), {} program(s), {} ordered pair(s) ({})",
            self.parts.len(),
            self.set.programs.len(),
            self.set.pairs.len(),
            parts.join("; ")
        )
    }
}

fn keep(store: &Store, c: &CampaignRecord, f: &KbFilter) -> anyhow::Result<bool> {
    if f.node.as_ref().is_some_and(|n| *n != c.provenance.hostname) || f.since_unix.is_some_and(|s| c.started_unix < s) {
        return Ok(false);
    }
    if let Some(want) = f.shared_cache {
        let regime = store
            .conditions(c.id)?
            .first()
            .and_then(|n| n.c2c.as_ref().map(|(_, ns)| cosched_model::compare::CacheRegime::of_round_trip(*ns)));
        match regime {
            Some(r) if (r == cosched_model::compare::CacheRegime::Shared) == want => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// The identity of each job a campaign measured, by its name there.
fn identities(c: &CampaignRecord) -> anyhow::Result<BTreeMap<String, (String, u32)>> {
    let mut out = BTreeMap::new();
    match c.parameters()? {
        CampaignParams::Pairs(p) => {
            for j in p.jobs {
                let key = j.identity.unwrap_or_else(|| program_key(is_kernel(&j.argv), &j.argv, j.cores));
                out.insert(j.name, (key, j.cores));
            }
        }
        CampaignParams::Profile(p) => {
            for j in p.jobs {
                let cores = j.cpus.len().max(1) as u32;
                let key = j.identity.unwrap_or_else(|| program_key(is_kernel(&j.argv), &j.argv, cores));
                out.insert(j.name, (key, cores));
            }
        }
        CampaignParams::Probe(p) => {
            let cores = p.job_cpus.len().max(1) as u32;
            let key = p.identity.unwrap_or_else(|| program_key(is_kernel(&p.argv), &p.argv, cores));
            out.insert(p.job, (key, cores));
        }
    }
    Ok(out)
}

/// Every workload's measurements in the store that pass `filter`, merged
/// by program identity. A program's profile and probe are the newest of
/// any workload's; its pair samples are all of them.
pub fn knowledge_base(store: &Store, filter: &KbFilter) -> anyhow::Result<KnowledgeBase> {
    let mut names: Vec<String> = store.campaigns()?.into_iter().map(|c| c.workload).collect();
    names.sort();
    names.dedup();
    if !filter.workloads.is_empty() {
        names.retain(|n| filter.workloads.contains(n));
    }
    // Newest campaign id wins for profiles and probes.
    let mut programs: BTreeMap<String, (i64, Characterization)> = BTreeMap::new();
    let mut pairs: Vec<PairSamples> = Vec::new();
    let mut parts = Vec::new();
    for wl in names {
        let m = store.measurements(&wl)?;
        let mut used = Vec::new();
        let mut ids: BTreeMap<String, (String, u32)> = BTreeMap::new();
        let touch = |programs: &mut BTreeMap<String, (i64, Characterization)>, key: &str, cores: u32| {
            programs.entry(key.to_string()).or_insert_with(|| {
                (
                    -1,
                    Characterization { name: key.into(), program: key.into(), cores, profile: None, probe: Vec::new(), llc_kib: None },
                )
            });
        };
        for (c, p) in &m.profiles {
            if !keep(store, c, filter)? {
                continue;
            }
            let Some((key, cores)) = identities(c)?.remove(&p.job) else { continue };
            touch(&mut programs, &key, cores);
            let e = programs.get_mut(&key).unwrap();
            if e.1.profile.is_none() || c.id.0 >= e.0 {
                e.1.profile = Some(p.summary.clone());
                e.0 = e.0.max(c.id.0);
            }
            ids.insert(p.job.clone(), (key, cores));
            used.push(c);
        }
        for (c, job, records) in &m.probes {
            if !keep(store, c, filter)? {
                continue;
            }
            let Some((key, cores)) = identities(c)?.remove(job) else { continue };
            touch(&mut programs, &key, cores);
            let refs: Vec<&ProbePointRecord> = records.iter().collect();
            let llc = probe_llc_kib(c)?;
            let e = programs.get_mut(&key).unwrap();
            e.1.probe = points_of(&refs);
            e.1.llc_kib = llc;
            ids.insert(job.clone(), (key, cores));
            used.push(c);
        }
        let mut samples = 0;
        if let Some((c, runs)) = &m.pairs {
            if keep(store, c, filter)? {
                let pair_ids = identities(c)?;
                for (name, (key, cores)) in &pair_ids {
                    touch(&mut programs, key, *cores);
                    ids.entry(name.clone()).or_insert_with(|| (key.clone(), *cores));
                }
                for r in runs {
                    let (Some((v, _)), Some((a, _))) = (pair_ids.get(&r.fg_job), pair_ids.get(&r.bg_job)) else { continue };
                    pairs.push(PairSamples { victim: v.clone(), aggressor: a.clone(), slowdowns: vec![r.fg_slowdown()] });
                    pairs.push(PairSamples { victim: a.clone(), aggressor: v.clone(), slowdowns: vec![r.bg_slowdown()] });
                    samples += 2;
                }
                used.push(c);
            }
        }
        // Real runs of the workload name jobs as its pairs campaign did.
        for r in &m.run_pairs {
            let (Some((v, _)), Some((a, _))) = (ids.get(&r.victim), ids.get(&r.co_runner)) else { continue };
            pairs.push(PairSamples { victim: v.clone(), aggressor: a.clone(), slowdowns: vec![r.slowdown] });
            samples += 1;
        }
        used.sort_by_key(|c| c.id);
        used.dedup_by_key(|c| c.id);
        if ids.is_empty() && samples == 0 {
            continue;
        }
        let mut distinct: Vec<&String> = ids.values().map(|(k, _)| k).collect();
        distinct.sort();
        distinct.dedup();
        parts.push(KbPart {
            workload: wl.clone(),
            programs: distinct.len(),
            pair_samples: samples,
            campaigns: used.into_iter().map(|c| UsedCampaign::of(store, c)).collect::<anyhow::Result<_>>()?,
        });
    }
    let set = TrainingSet::new(programs.into_values().map(|(_, c)| c).collect(), pairs)
        .map_err(|e| anyhow::anyhow!("the store's pairs across workloads: {e}"))?;
    Ok(KnowledgeBase { set, parts })
}
