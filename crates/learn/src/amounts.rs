//! A program at another work amount: where no campaign measured a pair of
//! a workload's programs as they are, the same two programs measured at
//! another amount of work.
//!
//! A kernel job's identity ([`cosched_measure::identity::program_key`])
//! holds its resolved work (`--work 672`), which a job given in `seconds`
//! gets from this node's calibration: the same workload file sized on
//! another node, or with other `seconds`, is another program, and a
//! shipped dataset never matches a new node's jobs exactly. Without the
//! work, the key is the kernel, its other parameters, threads and cores:
//! what the job does per unit of work.
//!
//! Assumed, and said wherever it is used: a slowdown (co-run time over
//! solo time) does not depend on the amount of work. For the fixed-rate
//! kernels of the catalogue (a file-I/O loop, a STREAM triad, a
//! core-bound loop) a run is the same step repeated, and the ratio of two
//! times of the same steps is the ratio of their rates; it fails for a
//! job whose phases change with its size (a warm-up as long as the run,
//! a working set that grows with the work), and across nodes it holds
//! only as far as the two nodes contend alike.
//!
//! A command job's identity keeps its arguments whole: the workload file
//! does not say which argument sizes the work, so commands are matched
//! only exactly.

use std::collections::{BTreeMap, BTreeSet};

use cosched_predict::regime::RegimeChoice;
use cosched_store::Store;
use serde::Serialize;

use crate::knowledge::{knowledge_base, KbFilter, KbScope};

/// A kernel identity key without its work, and the work:
/// `kernel fileio --work 672 --threads 1 --file-mib 8 cores=1` is
/// (`kernel fileio --threads 1 --file-mib 8 cores=1`, 672). `None` for a
/// command or a key without `--work N`.
pub fn without_work(key: &str) -> Option<(String, u64)> {
    let rest = key.strip_prefix("kernel ")?;
    let tokens: Vec<&str> = rest.split(' ').collect();
    let at = tokens.iter().position(|t| *t == "--work")?;
    let work: u64 = tokens.get(at + 1)?.parse().ok()?;
    let kept: Vec<&str> = tokens[..at].iter().chain(&tokens[at + 2..]).copied().collect();
    Some((format!("kernel {}", kept.join(" ")), work))
}

/// An ordered pair of programs (identity keys) read from the same two
/// programs measured at another work amount.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherAmount {
    /// The programs asked for.
    pub victim: String,
    pub beside: String,
    /// The workload whose campaigns measured them, the two works there,
    /// and the nodes its campaigns ran on.
    pub workload: String,
    pub work: (u64, u64),
    pub nodes: Vec<String>,
    /// Its repeats (in the regime asked for where it has any).
    pub slowdowns: Vec<f64>,
}

impl OtherAmount {
    /// The median of the repeats.
    pub fn median(&self) -> f64 {
        cosched_model::stats::median(&self.slowdowns)
    }
}

/// For each ordered pair of `wanted` (identity keys), the same two
/// programs at another work amount, from the store's campaigns in `scope`
/// (each workload's knowledge base, its repeats of `regime` pair by pair
/// where it has any): the workload whose two works are nearest to the
/// pair's (by the sum of the two log ratios; ties to the first workload
/// by name). Only the workloads in `only` when it names any (a dataset's,
/// say). A pair measured exactly as asked, a command, or one no
/// workload measured in any amount is left out.
pub fn other_amounts(
    store: &Store,
    wanted: &[(String, String)],
    regime: RegimeChoice,
    scope: &KbScope,
    only: &[String],
) -> anyhow::Result<Vec<OtherAmount>> {
    // Each asked pair: both programs without their work, with the work.
    type Asked<'a> = ((String, u64), (String, u64), &'a (String, String));
    let asked: Vec<Asked> = wanted
        .iter()
        .filter_map(|p| Some((without_work(&p.0)?, without_work(&p.1)?, p)))
        .collect();
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    let free: BTreeSet<&str> = asked.iter().flat_map(|(v, a, _)| [v.0.as_str(), a.0.as_str()]).collect();
    let campaigns = store.campaigns()?;
    let mut workloads: Vec<&str> = campaigns.iter().map(|c| c.workload.as_str()).collect();
    workloads.sort();
    workloads.dedup();
    if !only.is_empty() {
        workloads.retain(|w| only.iter().any(|o| o == w));
    }
    // Per asked pair: (distance, the candidate).
    let mut best: BTreeMap<usize, (f64, OtherAmount)> = BTreeMap::new();
    for wl in workloads {
        let in_scope = |c: &&cosched_store::CampaignRecord| {
            c.workload == wl
                && scope.node.as_ref().is_none_or(|n| *n == c.provenance.hostname)
                && scope.since_unix.is_none_or(|s| c.started_unix >= s)
        };
        // Only the programs that are some asked program at another work.
        let programs: BTreeSet<String> = campaigns
            .iter()
            .filter(in_scope)
            .filter_map(|c| crate::knowledge::identities(c).ok())
            .flat_map(|ids| ids.into_values().map(|(k, _)| k))
            .filter(|k| without_work(k).is_some_and(|(f, _)| free.contains(f.as_str())))
            .collect();
        if programs.is_empty() {
            continue;
        }
        let filter = KbFilter {
            workloads: vec![wl.to_string()],
            node: scope.node.clone(),
            since_unix: scope.since_unix,
            regime: regime.only(),
            programs: Some(programs),
            ..Default::default()
        };
        let kb = knowledge_base(store, &filter)?;
        let mut nodes: Vec<String> = campaigns.iter().filter(in_scope).map(|c| c.provenance.hostname.clone()).collect();
        nodes.sort();
        nodes.dedup();
        for p in &kb.set.pairs {
            let (Some((fv, wv)), Some((fa, wa))) = (without_work(&p.victim), without_work(&p.aggressor)) else { continue };
            for (k, (v, a, keys)) in asked.iter().enumerate() {
                if fv != v.0 || fa != a.0 || (p.victim == keys.0 && p.aggressor == keys.1) || p.slowdowns.is_empty() {
                    continue;
                }
                let ratio = |x: u64, y: u64| ((x.max(1) as f64) / (y.max(1) as f64)).ln().abs();
                let distance = ratio(wv, v.1) + ratio(wa, a.1);
                if best.get(&k).is_none_or(|(d, _)| distance < *d) {
                    let found = OtherAmount {
                        victim: keys.0.clone(),
                        beside: keys.1.clone(),
                        workload: wl.to_string(),
                        work: (wv, wa),
                        nodes: nodes.clone(),
                        slowdowns: p.slowdowns.clone(),
                    };
                    best.insert(k, (distance, found));
                }
            }
        }
    }
    Ok(best.into_values().map(|(_, f)| f).collect())
}

/// What the pairs at another work amount added to a training set, for its
/// description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherAmountUse {
    /// Ordered pairs of programs filled this way.
    pub program_pairs: usize,
    /// Per workload they came from: its nodes and how many program pairs.
    pub from: Vec<(String, Vec<String>, usize)>,
    /// This node's name, so another node's measurements are called so.
    pub here: String,
}

impl OtherAmountUse {
    pub fn of(found: &[OtherAmount], here: &str) -> OtherAmountUse {
        let mut from: Vec<(String, Vec<String>, usize)> = Vec::new();
        for f in found {
            match from.iter_mut().find(|(w, _, _)| *w == f.workload) {
                Some(e) => e.2 += 1,
                None => from.push((f.workload.clone(), f.nodes.clone(), 1)),
            }
        }
        OtherAmountUse { program_pairs: found.len(), from, here: here.to_string() }
    }

    /// `2 ordered pair(s) of its programs at another work amount (io-half:
    /// 2, node vm, another node's; assumed: a slowdown does not depend on
    /// the amount of work)`.
    pub fn describe(&self) -> String {
        let from: Vec<String> = self
            .from
            .iter()
            .map(|(w, nodes, n)| format!("{w}: {n}, {}", nodes_phrase(nodes, &self.here)))
            .collect();
        format!(
            "{} ordered pair(s) of its programs at another work amount ({}; assumed: a slowdown does not depend on the amount of work)",
            self.program_pairs,
            from.join("; ")
        )
    }
}

/// `node vm`, `node vm, another node's` or `nodes a, b`, as measurements
/// are labelled: another node's are said to be.
pub fn nodes_phrase(nodes: &[String], here: &str) -> String {
    let noun = if nodes.len() == 1 { "node" } else { "nodes" };
    let foreign = nodes.iter().any(|n| n != here);
    format!("{noun} {}{}", nodes.join(", "), if foreign { ", another node's" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_key_loses_only_its_work_and_a_command_key_stays_whole() {
        assert_eq!(
            without_work("kernel fileio --work 672 --threads 1 --block-kib 256 --file-mib 8 cores=1"),
            Some(("kernel fileio --threads 1 --block-kib 256 --file-mib 8 cores=1".into(), 672))
        );
        assert_eq!(
            without_work("kernel compute --work 32641 --threads 1 cores=1").map(|k| k.0),
            without_work("kernel compute --work 5 --threads 1 cores=1").map(|k| k.0)
        );
        assert_ne!(
            without_work("kernel compute --work 5 --threads 1 cores=1").map(|k| k.0),
            without_work("kernel compute --work 5 --threads 2 cores=1").map(|k| k.0),
            "threads stay in the key"
        );
        assert_eq!(without_work("command sha256:0123 solver --work 5 cores=1"), None);
        assert_eq!(without_work("kernel compute --threads 1 cores=1"), None);
        assert_eq!(without_work("kernel compute --work many cores=1"), None);
    }

    use cosched_store::{CampaignParams, CampaignStatus, PairRunRecord, PairsJob, PairsParams};

    const TWO_JOBS: &str = "[[pools]]\nname = \"host\"\ncores = 2\n\
        [[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = 5\n\
        [[jobs]]\nname = \"b\"\nkernel = \"compute\"\nwork = 5\n";

    /// A done pairs campaign of `workload` on `node`: its jobs `a` and `b`
    /// with the identities given, `a` beside `b` once per slowdown of `a`
    /// (`b` unharmed).
    fn pairs_of(store: &mut Store, workload: &str, node: &str, ids: [&str; 2], slowdowns: &[f64]) {
        let mut prov = cosched_measure::provenance::here("cosched pairs", "g", None);
        prov.hostname = node.into();
        let job = |n: &str, id: &str| PairsJob { name: n.into(), argv: vec!["true".into()], cores: 1, identity: Some(id.into()) };
        let params = CampaignParams::Pairs(PairsParams {
            jobs: vec![job("a", ids[0]), job("b", ids[1])],
            stop: cosched_model::matrix::StopRule { min_repeats: 1, max_repeats: 1, rel_halfwidth: 0.05, settle: None },
            in_regime: None,
        });
        let c = store.begin_campaign_typed(workload, &params, &prov).unwrap();
        for (i, &s) in slowdowns.iter().enumerate() {
            let r = PairRunRecord {
                fg_job: "a".into(),
                bg_job: "b".into(),
                repeat: i as u32,
                fg_cpus: vec![0],
                bg_cpus: vec![1],
                shared_cpus: false,
                fg_solo_s: 1.0,
                fg_corun_s: s,
                bg_solo_s: 1.0,
                bg_corun_s: 1.0,
                fg_relaunches: 0,
                bg_relaunches: 0,
                fg_timing: "work-phase".into(),
                bg_timing: "work-phase".into(),
                regime: Default::default(),
                level: None,
            };
            store.add_pair_run(c, &r).unwrap();
        }
        store.finish_campaign(c, CampaignStatus::Done).unwrap();
    }

    #[test]
    fn a_pair_measured_at_one_work_amount_predicts_it_at_another_and_says_from_where() {
        use crate::training::{available_training_set, build, with_other_amounts};
        let w = cosched_model::workload::parse_workload(TWO_JOBS, "w.toml", Some(2)).unwrap();
        let mut store = Store::open_in_memory().unwrap();
        let keys = crate::knowledge::jobs_by_program(&store, &w).unwrap();
        let key = |job: &str| keys.iter().find(|(_, jobs)| jobs.contains(&job.to_string())).unwrap().0.clone();
        let (ka, kb) = (key("a"), key("b"));
        assert!(ka.contains(" --work 5 ") && kb.contains(" --work 5 "), "{ka} / {kb}");
        // Another node measured the same two kernels at 100 times the work
        // (and at 3 times in another workload file: the nearer one wins).
        let at = |k: &str, work: &str| k.replace(" --work 5 ", &format!(" --work {work} "));
        pairs_of(&mut store, "w-long", "node-b", [&at(&ka, "500"), &at(&kb, "500")], &[1.5, 1.75]);
        pairs_of(&mut store, "w-mid", "node-b", [&at(&ka, "15"), &at(&kb, "15")], &[1.25]);
        let m = store.measurements(&w.name).unwrap();
        let (train, sources) = available_training_set(&m, &w).unwrap();
        assert!(train.pairs.is_empty(), "nothing measured as the workload runs it");
        let (train, sources) = with_other_amounts(&store, &w, train, sources, RegimeChoice::Any, &KbScope::default()).unwrap();
        let slowdowns = |v: &str, o: &str| train.pairs.iter().find(|p| p.victim == v && p.aggressor == o).map(|p| p.slowdowns.clone());
        assert_eq!(slowdowns("a", "b"), Some(vec![1.25]), "the nearest work amount");
        assert_eq!(slowdowns("b", "a"), Some(vec![1.0]));
        assert_eq!(slowdowns("a", "a"), None, "a beside a was measured at no amount");
        let mut p = build("measured:fallback=blind").unwrap();
        p.fit(&train).unwrap();
        assert_eq!(p.predict_pair(&train.programs["a"], &train.programs["b"]).slowdown, 1.25);
        let here = cosched_measure::provenance::here("", "", None).hostname;
        let other = if here == "node-b" { "" } else { ", another node's" };
        assert!(
            sources.describe().contains(&format!(
                "; 2 ordered pair(s) of its programs at another work amount (w-mid: 2, node node-b{other}; assumed: a slowdown does not depend on the amount of work)"
            )),
            "{}",
            sources.describe()
        );

        // Measured as the workload runs it, a pair is never read from
        // another amount: the workload's own a-b and b-a stand.
        pairs_of(&mut store, &w.name, "node-b", [&ka, &kb], &[1.1]);
        let m = store.measurements(&w.name).unwrap();
        let (train, sources) = available_training_set(&m, &w).unwrap();
        let (train, sources) = with_other_amounts(&store, &w, train, sources, RegimeChoice::Any, &KbScope::default()).unwrap();
        assert_eq!(train.pairs.iter().find(|p| p.victim == "a" && p.aggressor == "b").unwrap().slowdowns, vec![1.1]);
        assert!(sources.other_amounts.is_none(), "a-a and b-b are measured nowhere: nothing added");
        // A scope of another node finds nothing.
        let scope = KbScope { node: Some("node-c".into()), since_unix: None };
        let none = other_amounts(&store, &[(ka.clone(), kb.clone())], RegimeChoice::Any, &scope, &[]).unwrap();
        assert!(none.is_empty());
        // Only the workloads asked for: w-long's, though w-mid's is nearer.
        let long = other_amounts(&store, &[(ka.clone(), kb.clone())], RegimeChoice::Any, &KbScope::default(), &["w-long".into()]).unwrap();
        assert_eq!((long[0].workload.as_str(), long[0].work, long[0].median()), ("w-long", (500, 500), 1.625));
    }

    #[test]
    fn another_nodes_measurements_are_labelled_so() {
        assert_eq!(nodes_phrase(&["vm".into()], "vm"), "node vm");
        assert_eq!(nodes_phrase(&["vm".into()], "n1"), "node vm, another node's");
        assert_eq!(nodes_phrase(&["a".into(), "n1".into()], "n1"), "nodes a, n1, another node's");
    }
}
