//! Every decision of every shipped Lua strategy (`examples/lua/`) on seeded
//! scenarios, held twice: against its Rust counterpart where one exists
//! (`conflict-aware.lua` and `conflict-aware`, `noplan.lua` and `noplan`,
//! `suspend-harm.lua` and `react:inner=noplan,action=suspend`), decision
//! for decision at the same instants; and, for every strategy, against
//! digests of its decisions recorded in `tests/fixtures/decisions.txt`
//! before the bridge was made faster (issue 42), so no change to how
//! cosched calls a script may change what the script decides.
//!
//! A deliberate change of a strategy re-records them:
//! `COSCHED_RECORD_DECISIONS=1 cargo test --release -p cosched-lua --test decisions`
//! rewrites the file, and the diff shows which cases moved.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use cosched_engine::policy::{Decision, JobOutcome, Params, Policy, PoolInfo, View};
use cosched_engine::run::run_node;
use cosched_lua::{Builder, Log};
use cosched_model::workload::PoolKind;
use cosched_sched::montecarlo::order;
use cosched_sched::scenario::Scenario;
use cosched_sched::{policy_from_spec, simulate_with, PairTable, Platform, SimJob, SimOptions, VirtualNode};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decisions.txt")
}

/// Every decision a policy made, with the engine's time when it made it.
/// Answers are flattened, so a policy that starts one job per call and one
/// that starts them all in one answer record the same list; an empty
/// answer records nothing, so an engine that skips asking where the answer
/// could only be empty records the same list too.
type Decisions = Vec<(f64, Decision)>;

/// A policy that records what the policy inside it decides.
struct Recorder<'a> {
    inner: &'a mut dyn Policy,
    seen: Decisions,
}

impl Policy for Recorder<'_> {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let ds = self.inner.decide(view);
        self.seen.extend(ds.iter().map(|d| (view.time, d.clone())));
        ds
    }
    fn observe(&mut self, outcome: &JobOutcome) {
        self.inner.observe(outcome);
    }
    fn acts_on_running(&self) -> bool {
        self.inner.acts_on_running()
    }
    fn shares_nodes(&self) -> bool {
        self.inner.shares_nodes()
    }
    fn wake_at(&self) -> Option<f64> {
        self.inner.wake_at()
    }
}

fn params(kv: &[(&str, &str)]) -> Params {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A Lua policy of `examples/lua/SCRIPT` with `kv`, and the log its notes
/// go to.
fn lua(b: &Builder, script: &str, kv: &[(&str, &str)]) -> Box<dyn Policy> {
    let path = root().join("examples/lua").join(script).display().to_string();
    let mut p = params(kv);
    p.insert("path".into(), path);
    Box::new(b.build(&p).unwrap())
}

/// Orders `0..orders` of `scenario` (the Monte-Carlo's, seed 1) under
/// `opts`, each run by a fresh policy from `make`: every decision of every
/// order, each order's list after the last.
fn orders(scenario: &Scenario, count: usize, opts: SimOptions, make: &mut dyn FnMut() -> Box<dyn Policy>) -> Vec<Decisions> {
    let n = scenario.job_program.len();
    (0..count)
        .map(|index| {
            let ord = order(n, 1, index);
            let (jobs, table) = (scenario.jobs_in(&ord), scenario.source_in(&ord));
            let mut p = make();
            let mut r = Recorder { inner: p.as_mut(), seen: Vec::new() };
            simulate_with(&scenario.platform, &jobs, &table, &table, &mut r, &opts).unwrap();
            r.seen
        })
        .collect()
}

fn scenario(name: &str) -> Scenario {
    Scenario::load(&root().join("examples/scenarios").join(name)).unwrap()
}

/// FNV-1a over every decision's time (its bits: identical means identical)
/// and the decision as the engine prints it.
fn digest(all: &[Decisions]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (k, run) in all.iter().enumerate() {
        eat(&(k as u64).to_le_bytes());
        for (t, d) in run {
            eat(&t.to_bits().to_le_bytes());
            eat(format!("{d:?}").as_bytes());
        }
    }
    h
}

/// The node of `tests/react.rs`: a 2-core pool; A (100 s) beside B1 and B2
/// (10 s each) is slowed by 3, every other pair by nothing; the policy is
/// shown every pair as 1 and the node is read every second.
fn react_node() -> (Platform, Vec<SimJob>, PairTable, PairTable) {
    let platform = Platform { pools: vec![PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }] };
    let job = |name: &str, program: &str, solo: f64| SimJob { name: name.into(), arrival: 0.0, solo, pool: 0, cores: 1, program: program.into(), variants: vec![] };
    let jobs = vec![job("A", "a", 100.0), job("B1", "b", 10.0), job("B2", "b", 10.0), job("C", "c", 10.0)];
    let mut m = vec![vec![1.0; 4]; 4];
    for b in [1, 2] {
        m[0][b] = 3.0;
        m[b][0] = 3.0;
    }
    (platform, jobs, PairTable::new(m).unwrap(), PairTable::new(vec![vec![1.0; 4]; 4]).unwrap())
}

/// Every decision of `policy` on the sampled node of [`react_node`],
/// through the real runs' loop (`run_node`).
fn on_react_node(policy: &mut dyn Policy) -> Decisions {
    let (p, j, truth, blind) = react_node();
    let mut node = VirtualNode::new(&j, &truth).sampled(1.0);
    let mut r = Recorder { inner: policy, seen: Vec::new() };
    run_node(&p, &j, &blind, &mut r, &mut node, &[]).unwrap();
    r.seen
}

/// The cases: a name, the script it runs, and every decision of it.
fn cases() -> Vec<(String, &'static str, Vec<Decisions>)> {
    let mut out = Vec::new();
    let log = Arc::new(Log::default());
    let b = Builder::simulation(log.clone());
    let seed000 = scenario("seed000.toml");
    let one = SimOptions { nodes: 1, window: None };
    // Two nodes asked in turn over a window of the queue: the view's queue
    // then changes anywhere, not only at its head.
    let two = SimOptions { nodes: 2, window: Some(5) };
    for (opts, label) in [(one, "1 node"), (two, "2 nodes, window 5")] {
        for t in ["100", "0", "50", "150", "inf"] {
            let count = if t == "100" { 300 } else { 60 };
            let kv = [("threshold", t)];
            let rust = orders(&seed000, count, opts, &mut || policy_from_spec(&format!("conflict-aware:threshold={t}")).unwrap());
            let got = orders(&seed000, count, opts, &mut || lua(&b, "conflict-aware.lua", &kv));
            for (k, (g, r)) in got.iter().zip(&rust).enumerate() {
                assert_eq!(g, r, "conflict-aware.lua threshold={t}, {label}, order {k}: not the Rust conflict-aware's decisions");
            }
            out.push((format!("conflict-aware.lua threshold={t} seed000 {count} orders {label}"), "conflict-aware.lua", got));
        }
        let rust = orders(&seed000, 300, opts, &mut || policy_from_spec("noplan").unwrap());
        let got = orders(&seed000, 300, opts, &mut || lua(&b, "noplan.lua", &[]));
        assert_eq!(got, rust, "noplan.lua, {label}: not the Rust noplan's decisions");
        out.push((format!("noplan.lua seed000 300 orders {label}"), "noplan.lua", got));
    }

    let rust = on_react_node(policy_from_spec("react:inner=noplan,threshold=1.3,action=suspend,resume=own").unwrap().as_mut());
    let got = on_react_node(lua(&b, "suspend-harm.lua", &[("threshold", "1.3")]).as_mut());
    assert_eq!(got, rust, "suspend-harm.lua: not the decisions of react:inner=noplan,action=suspend");
    out.push(("suspend-harm.lua threshold=1.3 sampled node".into(), "suspend-harm.lua", vec![got]));
    // Without estimates it suspends on the predicted slowdown.
    let got = orders(&seed000, 60, one, &mut || lua(&b, "suspend-harm.lua", &[("threshold", "1.3")]));
    out.push(("suspend-harm.lua threshold=1.3 seed000 60 orders 1 node".into(), "suspend-harm.lua", got));

    for sc in ["varysched.toml", "varysched-lama.toml"] {
        let s = scenario(sc);
        for script in ["short-term.lua", "long-term.lua", "banking.lua", "constraint.lua"] {
            for level in ["high", "low"] {
                let got = orders(&s, 20, one, &mut || lua(&b, script, &[("governor", level)]));
                out.push((format!("{script} governor={level} {sc} 20 orders"), script, got));
            }
        }
    }
    assert!(log.notes().is_empty(), "the scripts reported: {:?}", log.summary());
    out
}

/// `NAME<TAB>DECISIONS<TAB>DIGEST` lines, one per case.
fn render(cases: &[(String, &'static str, Vec<Decisions>)]) -> String {
    let mut s = String::from("# Every decision of each shipped Lua strategy: case, decisions, FNV-1a digest (crates/lua/tests/decisions.rs).\n");
    for (name, _, all) in cases {
        let n: usize = all.iter().map(Vec::len).sum();
        writeln!(s, "{name}\t{n}\t{:016x}", digest(all)).unwrap();
    }
    s
}

#[test]
fn every_shipped_strategy_decides_as_its_rust_counterpart_and_as_recorded() {
    let cases = cases();
    let text = render(&cases);
    if std::env::var_os("COSCHED_RECORD_DECISIONS").is_some() {
        std::fs::write(fixture(), &text).unwrap();
    }
    let recorded = std::fs::read_to_string(fixture()).unwrap();
    let lines = |t: &str| -> BTreeMap<String, String> {
        t.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let (want, got) = (lines(&recorded), lines(&text));
    for (name, v) in &got {
        match want.get(name) {
            Some(w) => assert_eq!(v, w, "{name}: decisions (count, digest) moved from the recorded ones"),
            None => panic!("{name}: no recorded digest (COSCHED_RECORD_DECISIONS=1 records it)"),
        }
    }
    assert_eq!(want.len(), got.len(), "recorded cases that no longer run: {:?}", want.keys().filter(|k| !got.contains_key(*k)).collect::<Vec<_>>());
    // Every case decided something: a digest of nothing pins nothing down.
    for (name, _, all) in &cases {
        assert!(all.iter().any(|d| !d.is_empty()), "{name}: no decision at all");
    }
    // Every script shipped is one of the cases.
    let mut shipped: Vec<String> = std::fs::read_dir(root().join("examples/lua"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lua"))
        .collect();
    shipped.sort();
    for s in &shipped {
        assert!(cases.iter().any(|(_, script, _)| script == s), "examples/lua/{s} has no case here: add one");
    }
}
