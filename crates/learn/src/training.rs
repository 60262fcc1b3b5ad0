//! Training sets: what the store holds about a workload, as the predictors'
//! `TrainingSet`, with where each part came from. `predict`,
//! `evaluate-predictors`, `bench predictors`, `run` and `demo` fit on it.

use std::path::Path;

use cosched_model::regime::CacheRegime;
use cosched_model::workload::Workload;
use cosched_predict::predictors::parse_spec;
use cosched_predict::regime::{RegimeChoice, RegimeUse};
use cosched_predict::{predictor_by_name, Characterization, PairSamples, Predictor, TrainingSet};
use cosched_store::{CampaignRecord, Measurements, ProbePointRecord, Store};
use serde::Serialize;

use crate::amounts::{other_amounts, OtherAmountUse};
use crate::campaigns::UsedCampaign;
use crate::curve::{points_of, probe_llc_kib, stressor_points};
use crate::error::bad_input;
use crate::knowledge::KbScope;
use crate::selection::{select, LabelledSample};

/// An unfitted predictor from `NAME[:key=value,...]`; a bad spec is exit code 2.
pub fn build(spec: &str) -> anyhow::Result<Box<dyn Predictor>> {
    let (name, params) = parse_spec(spec).map_err(|e| bad_input(format!("--model {spec}: {e}")))?;
    predictor_by_name(&name, &params).map_err(|e| bad_input(format!("--model {spec}: {e}")))
}

/// Where a training set came from: campaign ids by kind, and whether the
/// pairs campaign is still running (its whole repeats count).
#[derive(Debug, Clone, Serialize)]
pub struct Sources {
    pub profile: Vec<i64>,
    pub probe: Vec<i64>,
    pub pairs: i64,
    pub pairs_status: String,
    pub pair_runs: usize,
    /// Pair samples from real runs (`cosched run`) of the workload.
    pub run_pairs: usize,
    /// Settled online estimates of running pairs (`online_samples`) of the
    /// workload's real runs, each a sample of its run's regime.
    #[serde(skip_serializing_if = "is_zero")]
    pub online_pairs: usize,
    /// Every campaign above with its status, date and node conditions;
    /// filled where the store is at hand (`training_set`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub campaigns: Vec<UsedCampaign>,
    /// What the knowledge base of other workloads added ([`with_knowledge`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knowledge: Option<String>,
    /// Which cache regime's repeats the pairs are from, pair by pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regime: Option<RegimeUse>,
    /// Ordered pairs of the workload's programs that its newest pairs
    /// campaign left to other campaigns (its older ones, or another
    /// workload file's; a workload grown with `pairs --skip-known`), by job
    /// name.
    #[serde(skip_serializing_if = "is_zero")]
    pub older_pairs: usize,
    /// Ordered pairs of its programs no campaign measured as they are,
    /// read from the same programs at another work amount
    /// ([`with_other_amounts`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_amounts: Option<OtherAmountUse>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Sources {
    /// One line for people: which data a predictor was fitted on.
    pub fn describe(&self) -> String {
        let ids = |v: &[i64]| if v.is_empty() { "none".to_string() } else { v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",") };
        let pairs = if self.pairs > 0 {
            format!("pairs campaign {} ({}, {} repeats)", self.pairs, self.pairs_status, self.pair_runs)
        } else {
            "no pairs campaign".to_string()
        };
        let older = if self.older_pairs > 0 { format!(", {} ordered pair(s) of its programs from other campaigns", self.older_pairs) } else { String::new() };
        let kb = self.knowledge.as_ref().map_or(String::new(), |k| format!("; from other workloads: {k}"));
        let regime = self.regime.as_ref().map_or(String::new(), |r| format!("; {}", r.describe()));
        let online = if self.online_pairs > 0 { format!(", {} settled online sample(s)", self.online_pairs) } else { String::new() };
        let amounts = self.other_amounts.as_ref().map_or(String::new(), |a| format!("; {}", a.describe()));
        format!(
            "profile campaign(s) {}, probe campaign(s) {}, {pairs}{older}, {} pair sample(s) from real runs{online}{amounts}{kb}{regime}",
            ids(&self.profile),
            ids(&self.probe),
            self.run_pairs
        )
    }
}

/// The training set of a workload from the store: each job's latest
/// finished profile and probe, and the latest pairs campaign; with
/// `knowledge`, enlarged by other workloads' measurements of the same
/// programs and of others ([`with_knowledge`]). A job without a profile,
/// a job without a probe where others have one, or no pairs, is an error
/// (exit code 1) naming the command that measures it; a program with a
/// miss-ratio curve and no probe reads its curve at this node's last level
/// ([`with_node_llc`]).
pub fn training_set(store: &Store, w: &Workload, path: &Path, knowledge: bool) -> anyhow::Result<(TrainingSet, Sources)> {
    training_set_in(store, w, path, knowledge.then(KbScope::default).as_ref(), RegimeChoice::Any)
}

/// [`training_set`] from the repeats of one cache regime
/// ([`crate::selection::select`]: each ordered pair's repeats in
/// the regime, else all of them), with the knowledge base of other
/// workloads in `knowledge`'s scope when given (its pairs and probes
/// chosen by regime the same way).
pub fn training_set_in(
    store: &Store,
    w: &Workload,
    path: &Path,
    knowledge: Option<&KbScope>,
    regime: RegimeChoice,
) -> anyhow::Result<(TrainingSet, Sources)> {
    // Under a regime, the pairs of the newest campaign with repeats in it:
    // a workload measured in both regimes has a campaign for each.
    let m = store.measurements_in(&w.name, regime.only())?;
    let file = path.display();
    let missing = |what: &str, verb: &str, jobs: &[&str]| {
        anyhow::anyhow!(
            "{}: no {what} of {} in the database {}; run `cosched {verb} --workload {file}` first",
            w.name,
            jobs.join(", "),
            store.path().display()
        )
    };
    let (train, sources) = available_training_set_in(&m, w, regime)?;
    let (train, sources) = with_older_pairs(store, w, train, sources, regime, knowledge)?;
    let (train, mut sources) = match knowledge {
        Some(scope) => with_knowledge_in(store, w, train, sources, regime, scope)?,
        None => (train, sources),
    };
    let lacking = |has: &dyn Fn(&Characterization) -> bool| -> Vec<&str> {
        w.jobs.iter().filter(|j| !train.programs.get(&j.name).is_some_and(has)).map(|j| j.name.as_str()).collect()
    };
    let no_profile = lacking(&|c| c.profile.is_some());
    if !no_profile.is_empty() {
        return Err(missing("finished profile", "profile", &no_profile));
    }
    // A workload probed not at all is fitted without probes (the
    // predictors that read them refuse, naming `cosched probe`); probed in
    // part, the unprobed jobs would read as insensitive to everything.
    let no_probe = lacking(&|c| !c.probe.is_empty());
    if !no_probe.is_empty() && no_probe.len() < w.jobs.len() {
        return Err(missing("finished probe", "probe", &no_probe));
    }
    if train.pairs.is_empty() {
        let probe = if no_probe.is_empty() { String::new() } else { format!(" (and `cosched probe --workload {file}` for the predictors that read probe curves)") };
        return Err(anyhow::anyhow!("{}{probe}", missing("pairs campaign", "pairs", &[w.name.as_str()])));
    }
    let train = with_node_llc(train, this_node_llc);
    sources.campaigns = used_campaigns(store, &m)?;
    Ok((train, sources))
}

/// This node's last-level cache size (KiB), read from /sys (no process
/// runs: the learning loop measures nothing); `None` where it cannot be.
pub fn this_node_llc() -> Option<u64> {
    use cosched_measure::topology::{detect_with, TopologySource};
    let node = detect_with(TopologySource::Sysfs).ok()?;
    node.llc().map(|c| c.size_bytes / 1024)
}

/// A program's miss-ratio curve is read at its node's last-level size
/// (`reuse`), which only a probe campaign records: a program with a curve
/// and no probe takes `node_llc`, this node's, read only when such a
/// program is there.
pub fn with_node_llc(mut train: TrainingSet, node_llc: impl FnOnce() -> Option<u64>) -> TrainingSet {
    let needs = |c: &Characterization| c.probe.is_empty() && c.llc_kib.is_none() && c.profile.as_ref().is_some_and(|p| !p.miss_curve.is_empty());
    if !train.programs.values().any(needs) {
        return train;
    }
    if let Some(llc) = node_llc() {
        for c in train.programs.values_mut() {
            if needs(c) {
                c.llc_kib = Some(llc);
            }
        }
    }
    train
}

/// The campaigns `m` was gathered from: pairs first, then profiles and
/// probes by id.
pub fn used_campaigns(store: &Store, m: &Measurements) -> anyhow::Result<Vec<UsedCampaign>> {
    let mut records: Vec<&CampaignRecord> = m.pairs.iter().map(|(c, _)| c).collect();
    let mut rest: Vec<&CampaignRecord> = m.profiles.iter().map(|(c, _)| c).chain(m.probes.iter().map(|(c, _, _)| c)).collect();
    rest.sort_by_key(|c| c.id);
    rest.dedup_by_key(|c| c.id);
    records.extend(rest);
    records.into_iter().map(|c| UsedCampaign::of(store, c)).collect()
}

/// The training set from whatever the store holds: a job's profile and
/// probe where measured (predictors read missing ones as absent), the
/// latest pairs campaign's repeats, the pair samples of real runs and the
/// settled online samples of running pairs. For
/// `cosched run` and `cosched demo`, which fit what they can and say so.
pub fn available_training_set(m: &Measurements, w: &Workload) -> anyhow::Result<(TrainingSet, Sources)> {
    available_training_set_in(m, w, RegimeChoice::Any)
}

/// [`available_training_set`] from the repeats of one cache regime, pair
/// by pair (samples of finished real runs carry no regime: they enter
/// through a pair's fallback or `any`; an online sample carries its run's).
pub fn available_training_set_in(
    m: &Measurements,
    w: &Workload,
    regime: RegimeChoice,
) -> anyhow::Result<(TrainingSet, Sources)> {
    let mut programs = Vec::new();
    for job in &w.jobs {
        let profile = m.profiles.iter().find(|(_, p)| p.job == job.name).map(|(_, p)| p.summary.clone());
        // Level by level from the newest campaign that measured it; the LLC
        // size from the newest.
        let entries: Vec<_> = m.probes.iter().filter(|(_, j, _)| *j == job.name).collect();
        let (probe, stressors, llc_kib) = match entries.first() {
            Some((newest, _, _)) => {
                let refs: Vec<&ProbePointRecord> = entries.iter().flat_map(|(_, _, records)| records).collect();
                (points_of(&refs), stressor_points(&refs), probe_llc_kib(newest)?)
            }
            None => (Vec::new(), Default::default(), None),
        };
        programs.push(Characterization {
            name: job.name.clone(),
            program: job.program_key(),
            cores: job.cores,
            profile,
            probe,
            llc_kib,
            stressors,
        });
    }
    let known = |n: &str| w.jobs.iter().any(|j| j.name == n);
    let mut labelled = Vec::new();
    let sample = |victim: &str, aggressor: &str, slowdown: f64, regime| LabelledSample {
        victim: victim.to_string(),
        aggressor: aggressor.to_string(),
        slowdown,
        regime,
    };
    if let Some((_, runs)) = &m.pairs {
        for r in runs.iter().filter(|r| known(&r.fg_job) && known(&r.bg_job)) {
            labelled.push(sample(&r.fg_job, &r.bg_job, r.fg_slowdown(), r.regime.regime()));
            labelled.push(sample(&r.bg_job, &r.fg_job, r.bg_slowdown(), r.regime.regime()));
        }
    }
    let mut run_pairs = 0;
    for r in m.run_pairs.iter().filter(|r| known(&r.victim) && known(&r.co_runner)) {
        labelled.push(sample(&r.victim, &r.co_runner, r.slowdown, None));
        run_pairs += 1;
    }
    // A running pair's settled online estimate is a sample of the regime
    // its run read: it may be the only word on a pair never co-run.
    let mut online_pairs = 0;
    for (_, o) in m.online_pairs.iter().filter(|(_, o)| known(&o.victim) && known(&o.beside)) {
        labelled.push(sample(&o.victim, &o.beside, o.slowdown, regime_named(o.regime.as_deref())));
        online_pairs += 1;
    }
    let (pairs, regime_use) = select(&labelled, regime);
    let train = TrainingSet::new(programs, pairs).map_err(|e| anyhow::anyhow!("the stored pairs of {}: {e}", w.name))?;
    let mut profile: Vec<i64> = m.profiles.iter().map(|(c, _)| c.id.0).collect();
    profile.sort();
    profile.dedup();
    let mut probe: Vec<i64> = m.probes.iter().map(|(c, _, _)| c.id.0).collect();
    probe.sort();
    probe.dedup();
    let sources = Sources {
        profile,
        probe,
        pairs: m.pairs.as_ref().map_or(0, |(c, _)| c.id.0),
        pairs_status: m.pairs.as_ref().map_or(String::new(), |(c, _)| c.status.to_string()),
        pair_runs: m.pairs.as_ref().map_or(0, |(_, r)| r.len()),
        run_pairs,
        online_pairs,
        campaigns: Vec::new(),
        knowledge: None,
        regime: (regime != RegimeChoice::Any).then_some(regime_use),
        older_pairs: 0,
        other_amounts: None,
    };
    Ok((train, sources))
}

/// `train` with the pairs of the workload's programs that its newest pairs
/// campaign did not measure, from any other campaign that did (its own
/// older ones, or another workload file's; each pair from the newest
/// campaign of a workload that measured it, in `regime` where it has
/// repeats in it): after `pairs --skip-known` the newest campaign holds
/// only the co-runs that were new. A job the workload never profiled or
/// probed takes its program's profile and probe likewise (what
/// `characterize` counts as known). Pairs with a program outside the
/// workload do not join here ([`with_knowledge`] adds those). Campaigns
/// outside `scope` (`--kb-node`, `--kb-since`) are left out.
fn with_older_pairs(
    store: &Store,
    w: &Workload,
    mut train: TrainingSet,
    mut sources: Sources,
    regime: RegimeChoice,
    scope: Option<&KbScope>,
) -> anyhow::Result<(TrainingSet, Sources)> {
    let jobs_of = crate::knowledge::jobs_by_program(store, w)?;
    let filter = crate::knowledge::KbFilter {
        node: scope.and_then(|s| s.node.clone()),
        since_unix: scope.and_then(|s| s.since_unix),
        regime: regime.only(),
        programs: Some(jobs_of.keys().cloned().collect()),
        ..Default::default()
    };
    let own = crate::knowledge::knowledge_base(store, &filter)?;
    for (key, jobs) in &jobs_of {
        let Some(known) = own.set.programs.get(key) else { continue };
        for j in jobs {
            let Some(c) = train.programs.get_mut(j) else { continue };
            if c.profile.is_none() {
                c.profile = known.profile.clone();
            }
            if c.probe.is_empty() {
                (c.probe, c.llc_kib, c.stressors) = (known.probe.clone(), known.llc_kib, known.stressors.clone());
            }
        }
    }
    let have: std::collections::BTreeSet<(&str, &str)> = train.pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str())).collect();
    let mut older = Vec::new();
    for p in &own.set.pairs {
        let (Some(vs), Some(os)) = (jobs_of.get(&p.victim), jobs_of.get(&p.aggressor)) else { continue };
        for v in vs {
            for o in os.iter().filter(|o| !have.contains(&(v.as_str(), o.as_str()))) {
                older.push(PairSamples { victim: v.clone(), aggressor: o.clone(), slowdowns: p.slowdowns.clone() });
            }
        }
    }
    if older.is_empty() {
        return Ok((train, sources));
    }
    sources.older_pairs = older.len();
    let programs: Vec<Characterization> = train.programs.values().cloned().collect();
    let pairs = train.pairs.iter().cloned().chain(older).collect();
    let train = TrainingSet::new(programs, pairs).map_err(|e| anyhow::anyhow!("the pairs of {} from other campaigns: {e}", w.name))?;
    Ok((train, sources))
}

/// `train` with the ordered pairs of the workload's programs that nothing
/// measured as they are (no pair of their jobs in it) read from the same
/// two programs at another work amount ([`crate::amounts`]: the kernel
/// and its parameters without the work, which a job sized in `seconds`
/// takes from this node's calibration), so a workload sized anew, or a
/// dataset from another node, still informs its pairs. Assumes a
/// slowdown does not depend on the amount of work, and says so in
/// [`Sources::describe`] with the workloads and nodes it read.
pub fn with_other_amounts(
    store: &Store,
    w: &Workload,
    train: TrainingSet,
    mut sources: Sources,
    regime: RegimeChoice,
    scope: &KbScope,
) -> anyhow::Result<(TrainingSet, Sources)> {
    let jobs_of = crate::knowledge::jobs_by_program(store, w)?;
    let have: std::collections::BTreeSet<(&str, &str)> = train.pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str())).collect();
    // Program pairs none of whose job pairs is in the set.
    let mut wanted = Vec::new();
    for (kv, vs) in &jobs_of {
        for (ka, os) in &jobs_of {
            if !vs.iter().any(|v| os.iter().any(|o| have.contains(&(v.as_str(), o.as_str())))) {
                wanted.push((kv.clone(), ka.clone()));
            }
        }
    }
    if wanted.is_empty() {
        return Ok((train, sources));
    }
    let found = other_amounts(store, &wanted, regime, scope, &[])?;
    if found.is_empty() {
        return Ok((train, sources));
    }
    let mut added = Vec::new();
    for f in &found {
        for v in &jobs_of[&f.victim] {
            for o in &jobs_of[&f.beside] {
                added.push(PairSamples { victim: v.clone(), aggressor: o.clone(), slowdowns: f.slowdowns.clone() });
            }
        }
    }
    let here = cosched_measure::provenance::here("", "", None).hostname;
    sources.other_amounts = Some(OtherAmountUse::of(&found, &here));
    let programs: Vec<Characterization> = train.programs.values().cloned().collect();
    let pairs = train.pairs.iter().cloned().chain(added).collect();
    let train = TrainingSet::new(programs, pairs).map_err(|e| anyhow::anyhow!("the pairs of {} at another work amount: {e}", w.name))?;
    Ok((train, sources))
}

/// `train` (a workload's own measurements, by job name) enlarged by what
/// the store knows from other workloads ([`crate::knowledge`]): first its
/// own programs' profiles, probes and pairs measured by any campaign
/// ([`with_older_pairs`]), then every other program and pair under its
/// identity (no job name has a space, no identity lacks one), so
/// predictors fit on more than one workload.
pub fn with_knowledge(store: &Store, w: &Workload, train: TrainingSet, sources: Sources) -> anyhow::Result<(TrainingSet, Sources)> {
    let (train, sources) = with_older_pairs(store, w, train, sources, RegimeChoice::Any, None)?;
    let (train, sources) = with_other_amounts(store, w, train, sources, RegimeChoice::Any, &KbScope::default())?;
    with_knowledge_in(store, w, train, sources, RegimeChoice::Any, &KbScope::default())
}

/// The other workloads' programs and pairs, from their repeats of
/// `regime` pair by pair and probe by probe where they have any, and
/// their campaigns in `scope`. The workload's own programs are
/// [`with_older_pairs`]'s, which runs first: a pair of two of them is
/// left to it here, and one with a single side in it keeps the job's name
/// for that side.
pub fn with_knowledge_in(
    store: &Store,
    w: &Workload,
    train: TrainingSet,
    mut sources: Sources,
    regime: RegimeChoice,
    scope: &KbScope,
) -> anyhow::Result<(TrainingSet, Sources)> {
    let mut others: Vec<String> = store.campaigns()?.into_iter().map(|c| c.workload).filter(|n| *n != w.name).collect();
    others.sort();
    others.dedup();
    if others.is_empty() {
        return Ok((train, sources));
    }
    // Each pair's and probe's repeats in the regime where it has any, else
    // all of them (the regime is read from the node when not given, and a
    // flicker of the host's must not make other workloads vanish).
    let filter = crate::knowledge::KbFilter {
        workloads: others,
        node: scope.node.clone(),
        since_unix: scope.since_unix,
        regime: regime.only(),
        ..Default::default()
    };
    let kb = crate::knowledge::knowledge_base(store, &filter)?;
    let jobs_of = crate::knowledge::jobs_by_program(store, w)?;
    let mut foreign = 0;
    let mut programs: Vec<Characterization> = train.programs.values().cloned().collect();
    let mut pairs = train.pairs.clone();
    for (key, c) in &kb.set.programs {
        if !jobs_of.contains_key(key) {
            programs.push(c.clone());
        }
    }
    for p in &kb.set.pairs {
        match (jobs_of.get(&p.victim), jobs_of.get(&p.aggressor)) {
            (Some(_), Some(_)) => {}
            (None, None) => {
                pairs.push(p.clone());
                foreign += 1;
            }
            // One side in this workload: that side keeps its job's name,
            // so the pair stays coherent with the programs above.
            _ => {
                let name = |k: &String| jobs_of.get(k).and_then(|v| v.first()).cloned().unwrap_or_else(|| k.clone());
                pairs.push(PairSamples { victim: name(&p.victim), aggressor: name(&p.aggressor), slowdowns: p.slowdowns.clone() });
                foreign += 1;
            }
        }
    }
    let train = TrainingSet::new(programs, pairs).map_err(|e| anyhow::anyhow!("joining the knowledge base to {}: {e}", w.name))?;
    sources.knowledge = Some(format!(
        "{}; {foreign} pair(s) of other programs{}",
        kb.describe(),
        scope.describe()
    ));
    Ok((train, sources))
}

/// The cache regime an online sample's run read, by the name the run
/// stored (`CacheRegime::name`, or the short name `--regime` takes).
pub fn regime_named(name: Option<&str>) -> Option<CacheRegime> {
    let n = name?;
    [CacheRegime::Shared, CacheRegime::Apart]
        .into_iter()
        .find(|g| n == g.name() || RegimeChoice::parse(n).ok().and_then(RegimeChoice::only) == Some(*g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::profile::{JobProfile, MissPoint, ProfileSummary, SyscallSource};

    fn program(name: &str, curve: bool, llc_kib: Option<u64>) -> Characterization {
        let s = ProfileSummary {
            wall_s: 1.0,
            host_load_mean: 0.5,
            host_load_peak: 0.5,
            cores_used: 1.0,
            syscall_rate: None,
            syscall_count: None,
            syscall_source: SyscallSource::ProcSyscrSyscw,
            vol_ctx_rate: 0.0,
            invol_ctx_rate: 0.0,
            read_bps: 0.0,
            write_bps: 0.0,
            max_rss_kib: 1000,
            fault_rate: 0.0,
            counters: Default::default(),
            stall: None,
            collateral: None,
        };
        let mut profile = JobProfile::from_runs(&[(1.0, s)], "process", None, Vec::new()).unwrap();
        if curve {
            profile.miss_curve = vec![MissPoint { ll_kib: 1024, refs: 10, misses: 5, ratio: 0.5 }];
        }
        Characterization {
            name: name.into(),
            program: name.into(),
            cores: 1,
            profile: Some(profile),
            probe: Vec::new(),
            stressors: Default::default(),
            llc_kib,
        }
    }

    #[test]
    fn only_a_program_with_a_curve_and_no_last_level_size_takes_the_nodes() {
        let set = |progs: Vec<Characterization>| TrainingSet::new(progs, Vec::new()).unwrap();
        let filled = with_node_llc(set(vec![program("a", true, None), program("b", false, None), program("c", true, Some(512))]), || Some(32768));
        let llc = |n: &str| filled.programs[n].llc_kib;
        assert_eq!((llc("a"), llc("b"), llc("c")), (Some(32768), None, Some(512)));
        // Without such a program the node is not read at all.
        let untouched = with_node_llc(set(vec![program("b", false, None)]), || panic!("read the node for nothing"));
        assert_eq!(untouched.programs["b"].llc_kib, None);
    }
}
