//! The simulator on nodes with a topology: starts placed by a registered
//! strategy, pairs slowed by the level their CPUs share, and the one-domain
//! node that changes nothing.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cosched_engine::placement::Placement;
use cosched_model::levels::LevelMatrix;
use cosched_model::metrics::EventKind;
use cosched_model::placement::{SharingLevel, Strategy, STRATEGIES};
use cosched_model::topology::{parse_hwloc_xml, Cache, CacheKind, Core, Node, NumaNode, TopologySource};
use cosched_sched::montecarlo::run_orders_with;
use cosched_sched::Spec;
use cosched_sched::scenario::{Scenario, ScenarioTopology};
use cosched_sched::{policy_by_name, simulate_placed, Cores, Decision, Params, Platform, Policy, PoolInfo, ProgramTable, SimJob, SimOptions, View};
use proptest::prelude::*;

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../model/tests/fixtures/topology").join(name)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Two single-core jobs a and b on four PUs of the 2-socket Xeon: PU 0,
/// PU 1 (another core, same L3), PU 16 (the other socket) and PU 32 (PU
/// 0's SMT sibling); pool core indices 0, 1, 2, 3 in that order. Beside
/// each other they run twice as slow on one core, 1.5 on one L3 and 1.1
/// across sockets.
fn xeon_pair(placement: &str) -> String {
    format!(
        r#"
[topology]
file = "{}"
placement = "{placement}"
[[pools]]
name = "host"
cores = 4
kind = "cpu"
cpus = "0,1,16,32"
[[programs]]
name = "a"
pool = "host"
solo = 10.0
count = 1
[[programs]]
name = "b"
pool = "host"
solo = 10.0
count = 1
[slowdown]
matrix = [[1.0, 2.0], [2.0, 1.0]]
[slowdown.levels]
same-llc = [[1.0, 1.5], [1.5, 1.0]]
other-socket = [[1.0, 1.1], [1.1, 1.0]]
"#,
        fixture_path("xeon-2s-2numa-smt2.hwloc2.xml").display()
    )
}

/// Job b's start under each strategy, computed by hand (job a takes PU 0
/// under all): compact walks PU 0's core before the next, so b gets the
/// sibling PU 32; scatter and range want another core of the same L3, PU
/// 1; NUMA-first fills PU 0's NUMA node, sibling first; interference-aware
/// prices PU 32 at (2.0 - 1) x 2, PU 1's domain is the same L3 as PU 0's,
/// and PU 16 at (1.1 - 1) x 2, the cheapest.
#[test]
fn each_strategy_places_the_second_job_where_the_hand_computation_says_and_it_runs_at_that_level() {
    let cases: [(&str, u32, u32, SharingLevel, f64); 5] = [
        ("compact", 3, 32, SharingLevel::SmtSibling, 20.0),
        ("scatter", 1, 1, SharingLevel::SameLlc, 15.0),
        ("range", 1, 1, SharingLevel::SameLlc, 15.0),
        ("numa-first", 3, 32, SharingLevel::SmtSibling, 20.0),
        ("interference-aware", 2, 16, SharingLevel::OtherSocket, 11.0),
    ];
    for (name, index, pu, level, finish) in cases {
        let s = Scenario::parse(&xeon_pair(name), "pair.toml").unwrap();
        let placement = s.placement().unwrap();
        assert_eq!(placement.name(), name);
        let (jobs, table) = (s.jobs(), s.source_in(&[0, 1]));
        let mut policy = policy_by_name("noplan", &Params::new()).unwrap();
        let t = simulate_placed(&s.platform, &jobs, &table, &table, policy.as_mut(), &SimOptions::default(), Some(placement)).unwrap();
        assert_eq!(t.cpus, vec![vec![0], vec![pu]], "{name}");
        assert_eq!(placement.pus(0, &[index]), vec![pu], "{name}: pool core {index} is PU {pu}");
        assert_eq!(placement.level(0, &[0], 0, &[index]), Some(level), "{name}");
        let finishes: Vec<f64> = t.events.iter().filter(|e| e.kind == EventKind::Finish).map(|e| e.time).collect();
        assert_eq!(finishes, vec![finish, finish], "{name}: both run at the {} slowdown", level.name());
        assert_eq!(placement.mems(0, &[index]), vec![if pu == 16 { 1 } else { 0 }], "{name}: memory follows the cores");
    }
}

#[test]
fn given_cores_are_kept_and_spread_is_scatter_on_a_topology() {
    struct Once(Vec<Decision>);
    impl Policy for Once {
        fn decide(&mut self, _: &View) -> Vec<Decision> {
            std::mem::take(&mut self.0)
        }
    }
    let s = Scenario::parse(&xeon_pair("interference-aware"), "pair.toml").unwrap();
    let (jobs, table) = (s.jobs(), s.source_in(&[0, 1]));
    let run = |decisions: Vec<Decision>| {
        let mut p = Once(decisions);
        simulate_placed(&s.platform, &jobs, &table, &table, &mut p, &SimOptions::default(), s.placement()).unwrap().cpus
    };
    let on = |job, cores| Decision::StartOn { job, pool: 0, cores, overbook: false };
    // Given: exactly those pool cores, whatever the strategy.
    assert_eq!(run(vec![on(0, Cores::Given(vec![3])), on(1, Cores::Given(vec![0]))]), vec![vec![32], vec![0]]);
    // Compact and Spread name their strategies, not the scenario's.
    assert_eq!(run(vec![on(0, Cores::Compact), on(1, Cores::Compact)]), vec![vec![0], vec![32]]);
    assert_eq!(run(vec![on(0, Cores::Compact), on(1, Cores::Spread)]), vec![vec![0], vec![1]]);
}

/// A node with one socket, one NUMA node and one L3 over `n` PUs, no SMT:
/// the development VM's shape at any size.
fn one_domain(n: u32) -> Node {
    let cpus: Vec<u32> = (0..n).collect();
    Node {
        hostname: None,
        cpu_model: None,
        sockets: 1,
        numa_nodes: vec![NumaNode { os_index: 0, cpus: cpus.clone(), memory_bytes: None }],
        cores: (0..n).map(|i| Core { index: i, socket: 0, numa: Some(0), pus: vec![i] }).collect(),
        caches: vec![Cache { level: 3, kind: CacheKind::Unified, size_bytes: 32 << 20, line_bytes: Some(64), cpus }],
        memory_bytes: None,
        source: TopologySource::Hwloc,
        notes: Vec::new(),
    }
}

/// Every example scenario on a one-domain node of its cpu pools' size,
/// with no levels: every strategy gives the very schedule of the engine
/// without a topology, order by order.
#[test]
fn a_one_domain_node_reduces_to_todays_model_on_every_example_scenario() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("examples/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        let Ok(plain) = Scenario::load(&path) else { continue }; // measured cells need the store
        if plain.topology.is_some() {
            continue;
        }
        let mut pools = Vec::new();
        let mut next = 0u32;
        for p in &plain.platform.pools {
            if matches!(p.kind, cosched_model::workload::PoolKind::Cpu) {
                pools.push(Some((next..next + p.cores).collect::<Vec<u32>>()));
                next += p.cores;
            } else {
                pools.push(None);
            }
        }
        let node = one_domain(next);
        let mut placed = plain.clone();
        placed.topology = Some(ScenarioTopology {
            file: "one domain".into(),
            pus: next as usize,
            placement: Arc::new(Placement::new(&node, Strategy::Compact, pools).unwrap()),
            levels: Arc::new(LevelMatrix::single(plain.slowdown.clone()).unwrap()),
        });
        let policies: Vec<Spec> = ["noplan", "conflict-aware", "best-match"].iter().map(|n| Spec::new(n, Params::new())).collect();
        let build = |n: &str, p: &Params| policy_by_name(n, p);
        let want = run_orders_with(&plain, &policies, 5, 7, &build).unwrap();
        let strategies: Vec<Strategy> = STRATEGIES.iter().map(|e| e.strategy).collect();
        // Every strategy as a spec's `placement=NAME`, side by side.
        let swept: Vec<Spec> = strategies.iter().flat_map(|&s| policies.iter().map(move |p| p.clone().placed(Some(s)))).collect();
        let got = run_orders_with(&placed, &swept, 5, 7, &build).unwrap();
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(w.baseline, g.baseline, "{}", path.display());
            for (k, e) in STRATEGIES.iter().enumerate() {
                for (i, Spec { name, .. }) in policies.iter().enumerate() {
                    let o = &g.outcomes[k * policies.len() + i];
                    assert_eq!(w.outcomes[i].metrics, o.metrics, "{}: {name} under {}", path.display(), e.name);
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} example scenarios parsed without a store");
}

#[test]
fn scenario_topology_mistakes_are_named() {
    let fails = |text: &str| Scenario::parse(text, "s.toml").unwrap_err().to_string();
    let base = xeon_pair("compact");
    let e = fails(&base.replace("placement = \"compact\"", "placement = \"round-robin\""));
    assert!(e.contains("s.toml: topology.placement: unknown placement `round-robin`"), "{e}");
    let e = fails(&base.replace("cpus = \"0,1,16,32\"", "cpus = \"0,1,16\""));
    assert!(e.contains("pools[0].cpus: 3 CPUs for a pool of 4 cores"), "{e}");
    let e = fails(&base.replace("cpus = \"0,1,16,32\"", "cpus = \"0,1,16,99\""));
    assert!(e.contains("pools[0].cpus: CPU 99 is not on the topology (64 PUs)"), "{e}");
    let e = fails(&base.replace("other-socket =", "other-planet ="));
    assert!(e.contains("slowdown.levels.other-planet: unknown sharing level; expected one of smt-sibling, same-llc"), "{e}");
    let e = fails(&base.replace("same-llc = [[1.0, 1.5], [1.5, 1.0]]", "same-llc = [[1.0, 1.5]]"));
    assert!(e.contains("slowdown.levels.same-llc: 1 rows for 2"), "{e}");
    let e = fails(&base.replace("file = \"", "file = \"/no/such/"));
    assert!(e.contains("topology.file: /no/such/") && e.contains("cannot read the file"), "{e}");
    let no_topology = base.split("[[pools]]").nth(1).map(|rest| format!("[[pools]]{rest}")).unwrap();
    let e = fails(&no_topology);
    assert!(e.contains("pools[0].cpus: CPUs of a pool need a [topology]"), "{e}");
    let e = fails(&no_topology.replace("cpus = \"0,1,16,32\"", ""));
    assert!(e.contains("slowdown.levels: levels need a [topology]"), "{e}");
    let plain = Scenario::parse(no_topology.replace("cpus = \"0,1,16,32\"", "").split("[slowdown.levels]").next().unwrap(), "s.toml").unwrap();
    assert!(plain.with_placement(Strategy::Scatter).unwrap_err().contains("no [topology]"));
}

#[test]
fn the_fixture_scenarios_load_with_their_levels() {
    for (file, pus, levels) in [
        ("epyc-8ccx-nps4.toml", 128, vec![SharingLevel::SameNuma, SharingLevel::SameSocket]),
        ("xeon-2s-smt.toml", 64, vec![SharingLevel::SameLlc, SharingLevel::OtherSocket]),
        ("arm-2s.toml", 128, vec![SharingLevel::OtherSocket]),
    ] {
        let s = Scenario::load(&root().join("examples/scenarios").join(file)).unwrap();
        let t = s.topology.as_ref().unwrap();
        assert_eq!((t.pus, t.levels.levels()), (pus, levels), "{file}");
        assert_eq!(s.placement().unwrap().strategy(), Strategy::Compact, "{file}: compact unless told");
        assert!(s.by_level());
    }
}

fn fixture(k: usize) -> &'static Node {
    static NODES: OnceLock<Vec<Node>> = OnceLock::new();
    let nodes = NODES.get_or_init(|| {
        ["xeon-2s-2numa-smt2.hwloc2.xml", "epyc-64c-8ccx-nps4-smt2.hwloc2.xml", "arm-2s-128c.hwloc2.xml"]
            .iter()
            .map(|f| parse_hwloc_xml(&std::fs::read_to_string(fixture_path(f)).unwrap()).unwrap())
            .collect()
    });
    &nodes[k]
}

/// Starts every waiting job that fits, by `Start`, `StartOn` compact or
/// `StartOn` spread in turn, never overbooking.
struct Mixed;

impl Policy for Mixed {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let Some(q) = view.queue.iter().find(|q| q.cores <= view.free_cores(q.pool)) else { return Vec::new() };
        vec![match q.id % 3 {
            0 => Decision::Start { job: q.id, pool: q.pool },
            1 => Decision::StartOn { job: q.id, pool: q.pool, cores: Cores::Compact, overbook: false },
            _ => Decision::StartOn { job: q.id, pool: q.pool, cores: Cores::Spread, overbook: false },
        }]
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the fixture, the pool's PUs, the strategy and the jobs, no
    /// two jobs running at once hold one PU when no decision overbooks.
    #[test]
    fn no_two_running_jobs_share_a_pu_without_overbooking(
        pick in 0usize..3,
        which in 0usize..5,
        mask in prop::collection::vec(any::<bool>(), 128),
        raw in prop::collection::vec((1u32..=6, 1u32..=50, 0u32..=30, 0usize..3), 1..=14),
        cells in prop::collection::vec(0.8f64..2.5, 9 * 5),
    ) {
        let node = fixture(pick);
        let mut cpus: Vec<u32> = node.pus().into_iter().filter(|&p| mask[p as usize % 128]).collect();
        if cpus.len() < 6 {
            cpus = node.pus()[..6].to_vec();
        }
        let n = cpus.len() as u32;
        let placement = Placement::new(node, STRATEGIES[which].strategy, vec![Some(cpus)]).unwrap();
        let platform = Platform { pools: vec![PoolInfo { name: "host".into(), cores: n, kind: cosched_model::workload::PoolKind::Cpu }] };
        let jobs: Vec<SimJob> = raw
            .iter()
            .enumerate()
            .map(|(i, &(cores, solo, arrival, program))| SimJob {
                name: format!("j{i}"),
                arrival: arrival as f64,
                solo: solo as f64,
                pool: 0,
                cores,
                program: format!("p{program}"),
                variants: vec![],
            })
            .collect();
        let m = |k: usize| -> Vec<Vec<f64>> { (0..3).map(|i| (0..3).map(|j| cells[k * 9 + i * 3 + j]).collect()).collect() };
        let levels = LevelMatrix::new(m(0), SharingLevel::ALL[..4].iter().enumerate().map(|(k, &l)| (l, m(k + 1))).collect()).unwrap();
        let table = ProgramTable::new(raw.iter().map(|r| r.3).collect(), m(0), None).unwrap().with_levels(Arc::new(levels)).unwrap();
        let t = simulate_placed(&platform, &jobs, &table, &table, &mut Mixed, &SimOptions::default(), Some(&placement)).unwrap();
        let span = |j: usize| {
            let at = |k: EventKind| t.events.iter().find(|e| e.job == j && e.kind == k).unwrap().time;
            (at(EventKind::Start), at(EventKind::Finish))
        };
        for a in 0..jobs.len() {
            prop_assert_eq!(t.cpus[a].len(), jobs[a].cores as usize);
            for b in a + 1..jobs.len() {
                let ((sa, fa), (sb, fb)) = (span(a), span(b));
                if sa < fb && sb < fa {
                    prop_assert!(t.cpus[a].iter().all(|c| !t.cpus[b].contains(c)), "jobs {} and {} share a PU: {:?} {:?}", a, b, t.cpus[a], t.cpus[b]);
                }
            }
        }
    }
}

/// The node runner's loop over a virtual node on the same topology places
/// and slows every job as the simulator does: one placement, two engines.
#[test]
fn run_node_in_virtual_time_reproduces_the_placed_simulation_on_each_fixture_scenario() {
    use cosched_engine::run_node_placed;
    use cosched_sched::VirtualNode;
    for file in ["epyc-8ccx-nps4.toml", "xeon-2s-smt.toml", "arm-2s.toml"] {
        let base = Scenario::load(&root().join("examples/scenarios").join(file)).unwrap();
        for e in STRATEGIES {
            let s = base.with_placement(e.strategy).unwrap();
            let order = cosched_sched::montecarlo::order(s.job_program.len(), 3, 1);
            let (jobs, table) = (s.jobs_in(&order), s.source_in(&order));
            for policy in ["noplan", "best-match"] {
                let mut p = policy_by_name(policy, &Params::new()).unwrap();
                let sim = simulate_placed(&s.platform, &jobs, &table, &table, p.as_mut(), &SimOptions::default(), s.placement()).unwrap();
                let mut p = policy_by_name(policy, &Params::new()).unwrap();
                let mut ex = VirtualNode::new(&jobs, &table).placed(s.placement().unwrap());
                let real = run_node_placed(&s.platform, &jobs, &table, p.as_mut(), &mut ex, &[], s.placement()).unwrap();
                let a = cosched_model::metrics::job_times(&sim.events, jobs.len()).unwrap();
                let b = cosched_model::metrics::job_times(&real.events, jobs.len()).unwrap();
                for (k, (x, y)) in a.iter().zip(&b).enumerate() {
                    let what = format!("{file} {} {policy} job {k}", e.name);
                    assert!((x.start - y.start).abs() < 1e-6 && (x.finish - y.finish).abs() < 1e-6, "{what}: {x:?} vs {y:?}");
                    let plan = ex.starts().iter().find(|p| p.job == k).unwrap();
                    assert_eq!(s.placement().unwrap().pus(plan.pool, &plan.cpus), sim.cpus[k], "{what}: the same PUs");
                }
            }
        }
    }
}
