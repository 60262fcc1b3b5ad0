//! One knowledge base across workloads: every campaign of every workload in
//! the store, its jobs named by the program they run
//! ([`cosched_measure::identity::program_key`]) instead of by their name in
//! one workload file, so a program measured under `predict12.toml` is known
//! when `mixed.toml` runs it too, and predictors fit on everything.
//!
//! A job's identity comes from the campaign that measured it: the key the
//! campaign recorded, else (campaigns older than the key) one derived from
//! the command it stored, with a command's executable hashed as it is now.

use std::collections::{BTreeMap, BTreeSet};

use cosched_measure::identity::{is_kernel_argv as is_kernel, program_key};
use cosched_model::regime::CacheRegime;
use cosched_predict::regime::{RegimeChoice, RegimeUse};
use cosched_predict::{Characterization, TrainingSet};
use cosched_store::{CampaignKind, CampaignParams, CampaignRecord, CampaignStatus, ProbePointRecord, Store};
use serde::Serialize;

use crate::campaigns::UsedCampaign;
use crate::curve::{points_of, probe_llc_kib, stressor_points};
use crate::selection::{select_newest, LabelledSample, SourcedSample};

/// Which campaigns, repeats and programs a knowledge base may use.
#[derive(Debug, Clone, Default)]
pub struct KbFilter {
    /// Only these workloads (their names in the store); empty: all.
    pub workloads: Vec<String>,
    /// Only campaigns taken on this host (provenance hostname).
    pub node: Option<String>,
    /// Only campaigns started at or after this Unix time.
    pub since_unix: Option<u64>,
    /// Fit on the repeats of this cache regime: each pair's and each
    /// probe's newest repeats in it where there are any, else all of the
    /// newest ones ([`crate::selection::select_newest`]). `None`:
    /// every regime.
    pub regime: Option<CacheRegime>,
    /// Only these programs (identity keys); `None`: every program.
    pub programs: Option<BTreeSet<String>>,
    /// With a regime: leave out the pairs with no repeat in it, rather
    /// than fall back to all their repeats. What a regime's accuracy is
    /// scored on: a pair measured only in the other regime is not a
    /// measurement of this one.
    pub strict_regime: bool,
}

/// Where and when a knowledge base's campaigns may come from, as a user
/// narrows it (`--kb-node`, `--kb-since`): another node's pairs, or
/// campaigns from before a change to the node, can be left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KbScope {
    /// Only campaigns taken on this host (provenance hostname).
    pub node: Option<String>,
    /// Only campaigns started at or after this Unix time.
    pub since_unix: Option<u64>,
}

impl KbScope {
    /// From the command line: `since` as `YYYY-MM-DD[ HH:MM[:SS]]` UTC; a
    /// bad date is exit code 2.
    pub fn parse(node: Option<String>, since: Option<&str>) -> anyhow::Result<KbScope> {
        let since_unix = match since {
            None => None,
            Some(s) => Some(cosched_store::parse_utc(s).ok_or_else(|| {
                crate::error::bad_input(format!("--kb-since {s}: not a UTC date; expected YYYY-MM-DD, YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS"))
            })?),
        };
        if node.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(crate::error::bad_input("--kb-node: empty host name"));
        }
        Ok(KbScope { node, since_unix })
    }

    pub fn is_empty(&self) -> bool {
        self.node.is_none() && self.since_unix.is_none()
    }

    /// `; campaigns of node n1 since 2026-11-24 00:00:00 UTC only`, or nothing.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = &self.node {
            parts.push(format!("of node {n}"));
        }
        if let Some(t) = self.since_unix {
            parts.push(format!("since {} UTC", cosched_store::format_unix_utc(t)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("; campaigns {} only", parts.join(" "))
        }
    }
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
    /// Which repeats of which regime the pairs are, pair by pair.
    pub regime: RegimeUse,
    /// Pair samples of older campaigns that a newer one of the same
    /// workload measured again.
    pub superseded: usize,
    /// Ordered pairs left out for having no repeat in the regime
    /// ([`KbFilter::strict_regime`]).
    pub out_of_regime: usize,
    /// Per program: the probe levels (stressor, working set KiB, intensity
    /// bits) with points in the filter's regime (every probed level when
    /// the filter has none). A level outside it is read from another
    /// regime's points, the fallback.
    #[serde(skip)]
    pub levels_in_regime: BTreeMap<String, BTreeSet<(String, u64, u64)>>,
}

impl KnowledgeBase {
    /// One line: `3 workloads, 21 programs, 412 pair samples (mixed: ..., ...)`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.parts.iter().map(|p| format!("{}: {} programs, {} pair samples", p.workload, p.programs, p.pair_samples)).collect();
        let mut s = format!(
            "{} workload(s), {} program(s), {} ordered pair(s) ({})",
            self.parts.len(),
            self.set.programs.len(),
            self.set.pairs.len(),
            parts.join("; ")
        );
        if self.regime.regime != RegimeChoice::Any {
            s.push_str(&format!("; {}", self.regime.describe()));
        }
        if self.superseded > 0 {
            s.push_str(&format!("; {} sample(s) of pairs measured again later left out", self.superseded));
        }
        if self.out_of_regime > 0 {
            s.push_str(&format!("; {} ordered pair(s) with no repeat in the regime left out", self.out_of_regime));
        }
        s
    }
}

fn keep(c: &CampaignRecord, f: &KbFilter) -> bool {
    !(f.node.as_ref().is_some_and(|n| *n != c.provenance.hostname) || f.since_unix.is_some_and(|s| c.started_unix < s))
}

/// The identity of each job a campaign measured, by its name there.
pub fn identities(c: &CampaignRecord) -> anyhow::Result<BTreeMap<String, (String, u32)>> {
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
/// by program identity. A program's profile is the newest of any
/// workload's; each level of its probe curve the newest with points in
/// the filter's regime (else the newest); its pairs every workload's newest campaign of each
/// pair ([`select_newest`]: a pair measured again replaces the older
/// measurement, so re-measuring a few pairs updates just those), with
/// the pair samples of real runs and the settled online samples of
/// running pairs (marked online, in their run's regime) as two more
/// sources.
pub fn knowledge_base(store: &Store, filter: &KbFilter) -> anyhow::Result<KnowledgeBase> {
    let all = store.campaigns()?;
    let mut names: Vec<String> = all.iter().map(|c| c.workload.clone()).collect();
    names.sort();
    names.dedup();
    if !filter.workloads.is_empty() {
        names.retain(|n| filter.workloads.contains(n));
    }
    let wanted = |key: &str| filter.programs.as_ref().is_none_or(|p| p.contains(key));
    let in_regime = |r: &ProbePointRecord| filter.regime.is_none_or(|g| r.regime.regime() == Some(g));
    // Per program: its characterization, and the campaigns its profile
    // and probe came from (the probe's rank: points in the regime first,
    // then the newest).
    let mut programs: BTreeMap<String, Characterization> = BTreeMap::new();
    let mut profile_from: BTreeMap<String, i64> = BTreeMap::new();
    // Per program and level (stressor, size, intensity bits): the
    // campaign's rank (points in the regime, id) and its points; the LLC
    // size of the newest probe campaign.
    type Level = (String, u64, u64);
    type Ranked = ((bool, i64), Vec<ProbePointRecord>);
    let mut probe_levels: BTreeMap<String, BTreeMap<Level, Ranked>> = BTreeMap::new();
    let mut probe_llc: BTreeMap<String, (i64, Option<u64>)> = BTreeMap::new();
    let mut samples: Vec<SourcedSample> = Vec::new();
    // Per workload: the campaigns considered and the programs it knows.
    let mut considered: Vec<(String, Vec<&CampaignRecord>, BTreeSet<String>)> = Vec::new();
    let touch = |programs: &mut BTreeMap<String, Characterization>, key: &str, cores: u32| {
        programs.entry(key.to_string()).or_insert_with(|| Characterization {
            name: key.into(),
            program: key.into(),
            cores,
            profile: None,
            probe: Vec::new(),
            llc_kib: None,
            stressors: Default::default(),
        });
    };
    let sample = |source: &str, campaign: i64, v: &str, a: &str, slowdown: f64, regime| SourcedSample {
        source: source.to_string(),
        campaign,
        sample: LabelledSample { victim: v.to_string(), aggressor: a.to_string(), slowdown, regime },
    };
    for wl in names {
        let mut used: Vec<&CampaignRecord> = Vec::new();
        // Job name in this workload -> identity; campaigns in id order, so
        // the newest campaign's identity of a name wins.
        let mut ids: BTreeMap<String, String> = BTreeMap::new();
        let name: &str = &wl;
        let of_kind = |k: CampaignKind| all.iter().filter(move |c| c.workload == name && c.kind == k && keep(c, filter));
        for c in of_kind(CampaignKind::Profile).filter(|c| c.status == CampaignStatus::Done) {
            let jobs = identities(c)?;
            for p in store.profiles(c.id)? {
                let Some((key, cores)) = jobs.get(&p.job).filter(|(k, _)| wanted(k)).cloned() else { continue };
                touch(&mut programs, &key, cores);
                if profile_from.get(&key).is_none_or(|&from| c.id.0 >= from) {
                    programs.get_mut(&key).expect("touched").profile = Some(p.summary.clone());
                    profile_from.insert(key.clone(), c.id.0);
                }
                ids.insert(p.job.clone(), key);
                used.push(c);
            }
        }
        for c in of_kind(CampaignKind::Probe).filter(|c| c.status == CampaignStatus::Done) {
            let points = store.probe_points(c.id)?;
            for (job, (key, cores)) in identities(c)? {
                if !wanted(&key) {
                    continue;
                }
                let mine: Vec<&ProbePointRecord> = points.iter().filter(|p| p.job == job).collect();
                if mine.is_empty() {
                    continue;
                }
                touch(&mut programs, &key, cores);
                let mut by_level: BTreeMap<Level, Vec<&ProbePointRecord>> = BTreeMap::new();
                for p in mine {
                    by_level.entry((p.stressor.clone(), p.working_set_kib, p.intensity.to_bits())).or_default().push(p);
                }
                let levels = probe_levels.entry(key.clone()).or_default();
                for (level, at) in by_level {
                    let in_it: Vec<&ProbePointRecord> = at.iter().copied().filter(|p| in_regime(p)).collect();
                    let rank = (!in_it.is_empty(), c.id.0);
                    if levels.get(&level).is_none_or(|(from, _)| rank >= *from) {
                        let chosen = if in_it.is_empty() { at } else { in_it };
                        levels.insert(level, (rank, chosen.into_iter().cloned().collect()));
                    }
                }
                if probe_llc.get(&key).is_none_or(|(id, _)| c.id.0 >= *id) {
                    probe_llc.insert(key.clone(), (c.id.0, probe_llc_kib(c)?));
                }
                ids.insert(job, key);
                used.push(c);
            }
        }
        // Pairs: every finished or interrupted campaign (the newest of each
        // pair wins; a stored repeat is whole either way, and a gated
        // campaign is often stopped with the regime's windows too short
        // to finish it); with none, the one the workload's figures come
        // from. A campaign still running is left to finish.
        let mut pair_campaigns: Vec<&CampaignRecord> = of_kind(CampaignKind::Pairs)
            .filter(|c| matches!(c.status, CampaignStatus::Done | CampaignStatus::Interrupted))
            .collect();
        if pair_campaigns.is_empty() {
            if let Some(f) = store.figures_campaign(CampaignKind::Pairs, &wl)? {
                pair_campaigns.extend(all.iter().find(|c| c.id == f.id && keep(c, filter)));
            }
        }
        for c in pair_campaigns {
            let pair_ids = identities(c)?;
            for (name, (key, cores)) in pair_ids.iter().filter(|(_, (k, _))| wanted(k)) {
                touch(&mut programs, key, *cores);
                ids.entry(name.clone()).or_insert_with(|| key.clone());
            }
            for r in store.pair_runs(c.id)? {
                let (Some((v, _)), Some((a, _))) = (pair_ids.get(&r.fg_job), pair_ids.get(&r.bg_job)) else { continue };
                if !(wanted(v) && wanted(a)) {
                    continue;
                }
                let regime = r.regime.regime();
                samples.push(sample(&wl, c.id.0, v, a, r.fg_slowdown(), regime));
                samples.push(sample(&wl, c.id.0, a, v, r.bg_slowdown(), regime));
            }
            used.push(c);
        }
        // Real runs of the workload name jobs as its campaigns did; their
        // samples carry no regime, so they count under `any` or a pair's
        // fallback only.
        for r in &store.run_pair_samples(&wl)? {
            let (Some(v), Some(a)) = (ids.get(&r.victim), ids.get(&r.co_runner)) else { continue };
            samples.push(sample(&runs_source(&wl), 0, v, a, r.slowdown, None));
        }
        // Settled online estimates carry their run's regime; each run is
        // a campaign of its own, so a pair settled again in a newer run
        // replaces the older estimate.
        for (run, o) in &store.workload_online_samples(&wl)? {
            let (Some(v), Some(a)) = (ids.get(&o.victim), ids.get(&o.beside)) else { continue };
            samples.push(sample(&online_source(&wl), run.0, v, a, o.slowdown, crate::training::regime_named(o.regime.as_deref())));
        }
        considered.push((wl, used, ids.into_values().collect()));
    }
    // A program's probe curve: each level from the campaign chosen for it
    // (points in the regime first, then the newest), so a level probed
    // again replaces just that level.
    let mut probe_used: BTreeSet<i64> = BTreeSet::new();
    let mut levels_in_regime: BTreeMap<String, BTreeSet<(String, u64, u64)>> = BTreeMap::new();
    for (key, levels) in &probe_levels {
        levels_in_regime.insert(key.clone(), levels.iter().filter(|(_, ((in_it, _), _))| *in_it).map(|(l, _)| l.clone()).collect());
        let records: Vec<&ProbePointRecord> = levels.values().flat_map(|(_, ps)| ps).collect();
        probe_used.extend(levels.values().map(|((_, id), _)| *id));
        let e = programs.get_mut(key).expect("touched");
        e.probe = points_of(&records);
        e.stressors = stressor_points(&records);
        e.llc_kib = probe_llc.get(key).and_then(|(_, llc)| *llc);
    }
    let choice = filter.regime.map_or(RegimeChoice::Any, RegimeChoice::Only);
    let (mut pairs, mut regime, newest) = select_newest(&samples, choice);
    let mut out_of_regime = 0;
    if let (true, Some(g)) = (filter.strict_regime, filter.regime) {
        let measured_in: BTreeSet<(&str, &str)> = samples
            .iter()
            .filter(|s| s.sample.regime == Some(g))
            .map(|s| (s.sample.victim.as_str(), s.sample.aggressor.as_str()))
            .collect();
        let before = pairs.len();
        pairs.retain(|p| measured_in.contains(&(p.victim.as_str(), p.aggressor.as_str())));
        out_of_regime = before - pairs.len();
        regime.fell_back -= out_of_regime.min(regime.fell_back);
    }
    let mut parts = Vec::new();
    for (wl, mut used, known) in considered {
        // Only what the fit took: a program's newest profile and its
        // chosen probe, and pair campaigns with a sample used.
        let (runs, online) = (runs_source(&wl), online_source(&wl));
        let pair_samples: usize = newest.used_by.iter().filter(|((s, _), _)| *s == wl || *s == runs || *s == online).map(|(_, n)| n).sum();
        used.retain(|c| match c.kind {
            CampaignKind::Profile => profile_from.values().any(|&id| id == c.id.0),
            CampaignKind::Probe => probe_used.contains(&c.id.0),
            CampaignKind::Pairs => newest.used_by.contains_key(&(wl.clone(), c.id.0)),
        });
        used.sort_by_key(|c| c.id);
        used.dedup_by_key(|c| c.id);
        if known.is_empty() && pair_samples == 0 {
            continue;
        }
        parts.push(KbPart {
            workload: wl.clone(),
            programs: known.len(),
            pair_samples,
            campaigns: used.into_iter().map(|c| UsedCampaign::of(store, c)).collect::<anyhow::Result<_>>()?,
        });
    }
    let set = TrainingSet::new(programs.into_values().collect(), pairs)
        .map_err(|e| anyhow::anyhow!("the store's pairs across workloads: {e}"))?;
    let set = crate::training::with_node_llc(set, crate::training::this_node_llc);
    Ok(KnowledgeBase { set, parts, regime, superseded: newest.superseded, out_of_regime, levels_in_regime })
}

/// A workload file's jobs by the program they run (identity key -> job
/// names): twins share a key. A job whose command cannot be formed here
/// (a kernel never calibrated) is left out.
pub fn jobs_by_program(store: &Store, w: &cosched_model::workload::Workload) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let cals = store.calibrations()?;
    let mut jobs_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for job in &w.jobs {
        let Ok(argv) = cosched_measure::kernel::job_argv(job, &cals) else { continue };
        jobs_of.entry(program_key(job.kernel().is_some(), &argv, job.cores)).or_default().push(job.name.clone());
    }
    Ok(jobs_of)
}

/// The source name of a workload's real runs among its campaigns'.
fn runs_source(workload: &str) -> String {
    format!("{workload} (real runs)")
}

/// The source name of the settled online samples of a workload's runs.
fn online_source(workload: &str) -> String {
    format!("{workload} (online)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::provenance::Provenance;
    use cosched_store::{CampaignId, ProbeParams, RepeatRegime};

    fn prov() -> Provenance {
        cosched_measure::provenance::here("cosched probe", "g", None)
    }

    /// A done probe campaign of job `a` (program `prog A`): per point its
    /// size, job slowdown and CPU round trip (ns) before and after.
    fn probe(store: &mut Store, n: u32, points: &[(u64, f64, f64)]) -> CampaignId {
        let params = CampaignParams::Probe(ProbeParams {
            job: "a".into(),
            program: None,
            identity: Some("prog A".into()),
            argv: vec!["true".into()],
            job_cpus: vec![0],
            stressor: "distgen".into(),
            stressor_cpus: vec![1],
            stressor_seconds: 1.0 + n as f64,
            levels: Vec::new(),
            repeats: 1,
            l2_kib: Some(1024),
            llc_kib: Some(32768),
        });
        let c = store.begin_campaign_typed("w", &params, &prov()).unwrap();
        for &(size, slowdown, ns) in points {
            let r = ProbePointRecord {
                job: "a".into(),
                stressor: "distgen".into(),
                working_set_kib: size,
                intensity: 1.0,
                repeat: 0,
                job_solo_s: 1.0,
                job_corun_s: slowdown,
                stressor_solo_s: 1.0,
                stressor_corun_s: 1.0,
                regime: RepeatRegime { cpus: vec![0, 1], before_ns: Some(ns), after_ns: Some(ns) },
            };
            store.add_probe_point(c, &r).unwrap();
        }
        store.finish_campaign(c, CampaignStatus::Done).unwrap();
        c
    }

    fn curve(kb: &KnowledgeBase) -> Vec<(u64, f64)> {
        kb.set.programs["prog A"].probe.iter().map(|p| (p.level.size_kib, p.job_slowdown.median)).collect()
    }

    #[test]
    fn a_probe_curve_takes_each_level_from_the_newest_campaign_in_the_regime() {
        let mut store = Store::open_in_memory().unwrap();
        // The full curve, caches apart; then 512 KiB again, caches apart;
        // then 512 KiB once more, but shared.
        let full = probe(&mut store, 1, &[(512, 1.0, 350.0), (65536, 1.5, 350.0)]);
        let again = probe(&mut store, 2, &[(512, 1.2, 360.0)]);
        let shared = probe(&mut store, 3, &[(512, 1.4, 50.0)]);
        let any = knowledge_base(&store, &KbFilter::default()).unwrap();
        assert_eq!(curve(&any), vec![(512, 1.4), (65536, 1.5)], "every regime: the newest of each level");
        let apart = knowledge_base(&store, &KbFilter { regime: Some(CacheRegime::Apart), ..Default::default() }).unwrap();
        assert_eq!(curve(&apart), vec![(512, 1.2), (65536, 1.5)], "apart: the newest in the regime");
        let used: Vec<i64> = apart.parts[0].campaigns.iter().map(|c| c.id).collect();
        assert_eq!(used, vec![full.0, again.0]);
        assert!(!used.contains(&shared.0), "the shared campaign fed nothing");
    }

    /// A pairs campaign of `a` beside `b` (identities `prog A`, `prog B`),
    /// one repeat per round trip in `ns`, with `a` slowed `slowdown`.
    fn pairs(store: &mut Store, status: CampaignStatus, slowdown: f64, ns: &[f64]) -> CampaignId {
        use cosched_store::{PairRunRecord, PairsJob, PairsParams};
        let job = |n: &str, id: &str| PairsJob { name: n.into(), argv: vec!["true".into()], cores: 1, identity: Some(id.into()) };
        let params = CampaignParams::Pairs(PairsParams {
            jobs: vec![job("a", "prog A"), job("b", "prog B")],
            stop: cosched_model::matrix::StopRule { min_repeats: 1, max_repeats: 1, rel_halfwidth: 0.05, settle: None },
            in_regime: None,
        });
        let c = store.begin_campaign_typed("w", &params, &prov()).unwrap();
        for (i, &ns) in ns.iter().enumerate() {
            let r = PairRunRecord {
                fg_job: "a".into(),
                bg_job: "b".into(),
                repeat: i as u32,
                fg_cpus: vec![0],
                bg_cpus: vec![1],
                shared_cpus: false,
                fg_solo_s: 1.0,
                fg_corun_s: slowdown,
                bg_solo_s: 1.0,
                bg_corun_s: 1.0,
                fg_relaunches: 0,
                bg_relaunches: 0,
                fg_timing: "process".into(),
                bg_timing: "process".into(),
                regime: RepeatRegime { cpus: vec![0, 1], before_ns: Some(ns), after_ns: Some(ns) },
                level: None,
            };
            store.add_pair_run(c, &r).unwrap();
        }
        store.finish_campaign(c, status).unwrap();
        c
    }

    fn slowdowns_of_a(kb: &KnowledgeBase) -> Vec<f64> {
        kb.set.pairs.iter().filter(|p| p.victim == "prog A").flat_map(|p| p.slowdowns.clone()).collect()
    }

    #[test]
    fn an_interrupted_gated_campaign_feeds_its_regime_and_a_strict_regime_drops_the_rest() {
        let mut store = Store::open_in_memory().unwrap();
        // Measured shared to the end; then an apart campaign interrupted
        // after one repeat.
        pairs(&mut store, CampaignStatus::Done, 1.8, &[50.0, 52.0]);
        let apart = |strict_regime| KbFilter { regime: Some(CacheRegime::Apart), strict_regime, ..Default::default() };
        let kb = knowledge_base(&store, &apart(false)).unwrap();
        assert_eq!(slowdowns_of_a(&kb), vec![1.8, 1.8], "no apart repeat yet: the shared ones, as a fallback");
        let strict = knowledge_base(&store, &apart(true)).unwrap();
        assert_eq!(slowdowns_of_a(&strict), Vec::<f64>::new(), "strict: no apart measurement, no pair");
        assert_eq!(strict.out_of_regime, 2, "both ordered pairs left out");
        pairs(&mut store, CampaignStatus::Interrupted, 1.1, &[400.0]);
        let kb = knowledge_base(&store, &apart(true)).unwrap();
        assert_eq!(slowdowns_of_a(&kb), vec![1.1], "the interrupted campaign's stored repeat counts");
        let shared = knowledge_base(&store, &KbFilter { regime: Some(CacheRegime::Shared), strict_regime: true, ..Default::default() }).unwrap();
        assert_eq!(slowdowns_of_a(&shared), vec![1.8, 1.8]);
    }

    #[test]
    fn a_settled_online_sample_joins_the_knowledge_base_in_its_runs_regime() {
        let mut store = Store::open_in_memory().unwrap();
        // a beside b measured apart (1.8); a run saw it settle at 1.5 with
        // the cache shared.
        pairs(&mut store, CampaignStatus::Done, 1.8, &[400.0]);
        let run = store.begin_run("s", "w", "noplan", 0, "{}", &prov()).unwrap();
        let online = cosched_store::OnlineSample {
            t_s: 3.0,
            victim: "a".into(),
            beside: "b".into(),
            victim_program: "a".into(),
            beside_program: "b".into(),
            slowdown: 1.5,
            lo: 1.4,
            hi: Some(1.6),
            segments: 6,
            signal: "progress".into(),
            predicted: 1.0,
            regime: Some(CacheRegime::Shared.name().into()),
        };
        store.add_online_sample(run, &online).unwrap();
        let strict = |g| KbFilter { regime: Some(g), strict_regime: true, ..Default::default() };
        assert_eq!(slowdowns_of_a(&knowledge_base(&store, &strict(CacheRegime::Shared)).unwrap()), vec![1.5], "the one shared sample");
        assert_eq!(slowdowns_of_a(&knowledge_base(&store, &strict(CacheRegime::Apart)).unwrap()), vec![1.8]);
        let any = knowledge_base(&store, &KbFilter::default()).unwrap();
        assert_eq!(slowdowns_of_a(&any), vec![1.8, 1.5], "two sources add up");
        assert_eq!(any.parts[0].pair_samples, 3, "a-b and b-a of the campaign, a-b online");
    }

    #[test]
    fn the_levels_in_a_regime_are_those_with_points_in_it_and_without_one_every_level() {
        // What `characterize --in-regime` reads to probe only what a regime
        // lacks: 512 KiB was probed in both regimes, 64 MiB apart only.
        let mut store = Store::open_in_memory().unwrap();
        probe(&mut store, 1, &[(512, 1.0, 350.0), (65536, 1.5, 350.0)]);
        probe(&mut store, 2, &[(512, 1.4, 50.0)]);
        let level = |kib: u64| ("distgen".to_string(), kib, 1.0f64.to_bits());
        let levels = |regime| knowledge_base(&store, &KbFilter { regime, ..Default::default() }).unwrap().levels_in_regime;
        assert_eq!(levels(Some(CacheRegime::Shared))["prog A"], [level(512)].into());
        assert_eq!(levels(Some(CacheRegime::Apart))["prog A"], [level(512), level(65536)].into());
        assert_eq!(levels(None)["prog A"], [level(512), level(65536)].into());
    }
}
