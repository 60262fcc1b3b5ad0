//! Placement strategies on machines we do not have, each case computed by
//! hand from the fixture's layout (see tests/fixtures/topology/README.md).

use cosched_model::placement::{place, sharing_level, strategy_by_name, Occupant, Placed, SharingLevel, Strategy, STRATEGIES};
use cosched_model::topology::{parse_hwloc_xml, Node};
use proptest::prelude::*;

fn fixture(name: &str) -> Node {
    let path = format!("{}/tests/fixtures/topology/{name}", env!("CARGO_MANIFEST_DIR"));
    parse_hwloc_xml(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn all(node: &Node) -> Vec<u32> {
    node.pus()
}

fn idle(cpus: &[u32]) -> Occupant {
    Occupant { cpus: cpus.to_vec(), slowdown_new: 1.0, slowdown_old: 1.0 }
}

fn hurting(cpus: &[u32], s: f64) -> Occupant {
    Occupant { cpus: cpus.to_vec(), slowdown_new: s, slowdown_old: s }
}

fn placed(cpus: &[u32], mems: &[u32]) -> Option<Placed> {
    Some(Placed { cpus: cpus.to_vec(), mems: mems.to_vec() })
}

/// 2 sockets x 16 cores x 2 threads; PU n and n+32 are siblings; a NUMA
/// node and an L3 per socket (cores 0-15 and siblings 32-47 on socket 0).
#[test]
fn xeon_two_sockets_with_smt() {
    let n = fixture("xeon-2s-2numa-smt2.hwloc2.xml");
    let a = all(&n);
    assert_eq!(place(&n, Strategy::Compact, &a, 4, &[]), placed(&[0, 1, 32, 33], &[0]), "two cores, both threads");
    assert_eq!(place(&n, Strategy::Scatter, &a, 4, &[]), placed(&[0, 1, 16, 17], &[0, 1]), "one thread per core, sockets alternating");
    assert_eq!(place(&n, Strategy::Range, &a, 4, &[]), placed(&[0, 1, 2, 3], &[0]));
    // NUMA-first joins the node that already has work: node 1.
    assert_eq!(place(&n, Strategy::NumaFirst, &a, 4, &[idle(&[16, 17])]), placed(&[18, 48, 49, 50], &[1]));
    // A stream job on cores 0-1: its siblings would share everything, so a
    // job it hurts goes to the other socket.
    assert_eq!(place(&n, Strategy::InterferenceAware, &a, 4, &[hurting(&[0, 1], 1.5)]), placed(&[16, 17, 48, 49], &[1]));
    assert_eq!(place(&n, Strategy::Compact, &a, 4, &[hurting(&[0, 1], 1.5)]), placed(&[2, 32, 33, 34], &[0]));
    assert_eq!(sharing_level(&n, 0, 32), SharingLevel::SmtSibling);
    assert_eq!(sharing_level(&n, 0, 15), SharingLevel::SameLlc);
    assert_eq!(sharing_level(&n, 0, 16), SharingLevel::OtherSocket);
}

/// 1 socket, 4 NUMA nodes (NPS4) of 2 CCXs x 8 cores x 2 threads; PU n and
/// n+64 are siblings; NUMA k holds cores 16k..16k+15.
#[test]
fn epyc_eight_ccx_nps4() {
    let n = fixture("epyc-64c-8ccx-nps4-smt2.hwloc2.xml");
    assert_eq!((n.n_pus(), n.numa_nodes.len()), (128, 4));
    let a = all(&n);
    assert_eq!(place(&n, Strategy::Scatter, &a, 8, &[]), placed(&[0, 8, 16, 24, 32, 40, 48, 56], &[0, 1, 2, 3]));
    let stream = hurting(&[0, 1, 2, 3, 4, 5, 6, 7], 1.8);
    // Compact takes the running job's SMT siblings; interference-aware the
    // next NUMA node's first CCX (same socket, weight 0.15, beats the same
    // node's other CCX, weight 0.5).
    assert_eq!(place(&n, Strategy::Compact, &a, 8, std::slice::from_ref(&stream)), placed(&[64, 65, 66, 67, 68, 69, 70, 71], &[0]));
    assert_eq!(
        place(&n, Strategy::InterferenceAware, &a, 8, &[stream]),
        placed(&[16, 17, 18, 19, 80, 81, 82, 83], &[1])
    );
    assert_eq!(sharing_level(&n, 0, 8), SharingLevel::SameNuma);
    assert_eq!(sharing_level(&n, 0, 16), SharingLevel::SameSocket);
}

/// 2 sockets x 64 cores, no SMT, a NUMA node and an L3 per socket.
#[test]
fn arm_two_sockets_without_smt() {
    let n = fixture("arm-2s-128c.hwloc2.xml");
    assert_eq!((n.n_pus(), n.smt_width()), (128, 1));
    let a = all(&n);
    assert_eq!(place(&n, Strategy::Range, &a, 4, &[idle(&[1])]), placed(&[2, 3, 4, 5], &[0]), "0, 2, 3, 4 is not a range");
    assert_eq!(place(&n, Strategy::NumaFirst, &a, 4, &[idle(&[1])]), placed(&[0, 2, 3, 4], &[0]));
    assert_eq!(place(&n, Strategy::Scatter, &a, 2, &[]), placed(&[0, 64], &[0, 1]));
    // A range that no NUMA node holds whole falls back to the node with most free PUs.
    let busy: Vec<u32> = (0..64).filter(|p| p % 2 == 1).collect();
    assert_eq!(place(&n, Strategy::Range, &a, 70, &[idle(&busy)]).unwrap().cpus.len(), 70);
}

/// The development VM: one socket, one NUMA node, one L3. Every strategy is
/// compact there, so placement changes nothing on a node with one domain.
#[test]
fn one_domain_every_strategy_is_compact() {
    let n = fixture("vm-epyc-2c.hwloc2.xml");
    for busy in [vec![], vec![0], vec![1]] {
        let running: Vec<Occupant> = busy.iter().map(|&c| hurting(&[c], 1.9)).collect();
        let want = place(&n, Strategy::Compact, &all(&n), 1, &running);
        for e in STRATEGIES {
            assert_eq!(place(&n, e.strategy, &all(&n), 1, &running), want, "{} with {busy:?} busy", e.name);
        }
    }
    assert_eq!(place(&n, Strategy::Compact, &all(&n), 3, &[]), None, "more cores than the node has");
}

#[test]
fn strategies_are_found_by_name_and_unknown_names_are_refused() {
    assert_eq!(strategy_by_name("numa-first"), Ok(Strategy::NumaFirst));
    let e = strategy_by_name("spread-out").unwrap_err();
    assert!(e.contains("compact, scatter, range, numa-first, interference-aware"), "{e}");
}

proptest! {
    /// No strategy places a job on a PU a running job holds or outside its
    /// pool, and it gets exactly the PUs it asked for, all distinct.
    #[test]
    fn placement_never_overlaps_a_running_job(
        busy_mask in proptest::collection::vec(any::<bool>(), 128),
        allowed_from in 0u32..64,
        cores in 1u32..24,
        which in 0usize..5,
        fixture_pick in 0usize..3,
    ) {
        let name = ["xeon-2s-2numa-smt2.hwloc2.xml", "epyc-64c-8ccx-nps4-smt2.hwloc2.xml", "arm-2s-128c.hwloc2.xml"][fixture_pick];
        let n = fixture(name);
        let allowed: Vec<u32> = n.pus().into_iter().filter(|&p| p >= allowed_from).collect();
        let busy: Vec<u32> = n.pus().into_iter().filter(|&p| busy_mask[p as usize % 128]).collect();
        let running = vec![hurting(&busy, 1.4)];
        if let Some(p) = place(&n, STRATEGIES[which].strategy, &allowed, cores, &running) {
            prop_assert_eq!(p.cpus.len(), cores as usize);
            let mut d = p.cpus.clone();
            d.dedup();
            prop_assert_eq!(d.len(), p.cpus.len());
            for c in &p.cpus {
                prop_assert!(allowed.contains(c) && !busy.contains(c));
            }
        } else {
            let free = allowed.iter().filter(|c| !busy.contains(c)).count();
            prop_assert!(free < cores as usize);
        }
    }
}

#[test]
fn domains_and_levels_each_fixture_offers() {
    use cosched_model::placement::{domains, levels_offered};
    let n = fixture("epyc-64c-8ccx-nps4-smt2.hwloc2.xml");
    let d = domains(&n);
    assert_eq!(d.len(), 8, "eight CCXs");
    assert_eq!(d[1].numa, Some(0));
    assert_eq!(d[2].numa, Some(1));
    assert_eq!(d[0].cpus, (0..8).chain(64..72).collect::<Vec<u32>>());
    assert_eq!(levels_offered(&n), SharingLevel::ALL[..4].to_vec(), "one socket: no other-socket level");
    assert_eq!(levels_offered(&fixture("vm-epyc-2c.hwloc2.xml")), vec![SharingLevel::SameLlc]);
    assert_eq!(levels_offered(&fixture("arm-2s-128c.hwloc2.xml")), vec![SharingLevel::SameLlc, SharingLevel::OtherSocket]);
}

/// The precomputed layout engines place with answers as the topology does.
#[test]
fn the_layout_names_the_same_level_as_the_topology_for_every_pair_of_every_fixture() {
    use cosched_model::placement::Layout;
    for name in ["xeon-2s-2numa-smt2.hwloc2.xml", "epyc-64c-8ccx-nps4-smt2.hwloc2.xml", "arm-2s-128c.hwloc2.xml", "vm-epyc-2c.hwloc2.xml"] {
        let n = fixture(name);
        let layout = Layout::new(&n);
        for a in n.pus() {
            for b in n.pus() {
                assert_eq!(layout.level(a, b), sharing_level(&n, a, b), "{name}: {a} {b}");
            }
        }
        assert_eq!(layout.closest(&[0], &n.pus()[1..]), levels_closest(&n), "{name}");
    }
}

fn levels_closest(n: &Node) -> SharingLevel {
    cosched_model::placement::levels_offered(n)[0]
}

/// Within the domain it picks, interference-aware takes a core no running
/// job uses before an SMT sibling of one, where compact takes the sibling.
#[test]
fn interference_aware_prefers_an_idle_core_to_a_running_jobs_sibling() {
    let n = fixture("xeon-2s-2numa-smt2.hwloc2.xml");
    let running = [hurting(&[0], 1.5), hurting(&[16], 1.5)];
    // Both sockets cost alike (one job in each L3): the first, socket 0.
    assert_eq!(place(&n, Strategy::InterferenceAware, &all(&n), 1, &running), placed(&[1], &[0]));
    assert_eq!(place(&n, Strategy::Compact, &all(&n), 1, &running), placed(&[32], &[0]));
    // A socket whose cores are all busy offers its siblings.
    let busy: Vec<u32> = (0..32).collect();
    assert_eq!(place(&n, Strategy::InterferenceAware, &all(&n), 2, &[idle(&busy)]), placed(&[32, 33], &[0]));
}
