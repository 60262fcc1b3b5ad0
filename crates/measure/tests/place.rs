//! One placement for every verb that runs jobs: memory nodes computed on
//! machines we do not have (the model's topology fixtures), and the CPUs a
//! pair gets in `cosched pairs` equal to those the node runner gives the
//! same two jobs, an accelerator-pool job beside a host job included.

use cosched_engine::{run_node, Platform, PoolInfo, SimJob};
use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::node::{NodeConfig, NodeEvent, NodeExecutor, NodeJob};
use cosched_measure::place::{mems_of, NodePools};
use cosched_model::topology::{parse_hwloc_xml, parse_sysfs, MapView, Node};
use cosched_model::workload::PoolKind;

mod common;
use common::{Alone, FirstFit};

fn fixture(name: &str) -> Node {
    let path = format!("{}/../model/tests/fixtures/topology/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    if name.ends_with(".xml") {
        parse_hwloc_xml(&text).unwrap()
    } else {
        parse_sysfs(&MapView::from_snapshot(&text).unwrap()).unwrap()
    }
}

/// Hand-computed from each fixture's layout (its README): the NUMA nodes
/// a job's memory is bound to are exactly those of its CPUs.
#[test]
fn memory_nodes_are_those_of_the_jobs_cpus_on_every_fixture() {
    // 2 sockets, one NUMA node each; PU n and n+32 are siblings.
    let xeon = fixture("xeon-2s-2numa-smt2.hwloc2.xml");
    assert_eq!(mems_of(&xeon, &[0, 1, 32, 33]), vec![0]);
    assert_eq!(mems_of(&xeon, &[16, 48]), vec![1]);
    assert_eq!(mems_of(&xeon, &[15, 16]), vec![0, 1], "a job across the sockets gets both");
    // The same machine in hwloc 1.x gives the same nodes.
    assert_eq!(mems_of(&fixture("xeon-2s-2numa-smt2.hwloc1.xml"), &[15, 16]), vec![0, 1]);
    // NPS4: NUMA k holds cores 16k..16k+15 and their siblings 64 higher.
    let epyc = fixture("epyc-64c-8ccx-nps4-smt2.hwloc2.xml");
    assert_eq!(mems_of(&epyc, &[0, 8, 64]), vec![0]);
    assert_eq!(mems_of(&epyc, &[0, 16, 32, 48]), vec![0, 1, 2, 3]);
    assert_eq!(mems_of(&epyc, &[127]), vec![3]);
    // 2 sockets x 2 NUMA nodes of 8 cores (16 PUs with siblings 32 higher).
    let epyc2 = fixture("epyc-2s-4numa-smt2.hwloc2.xml");
    assert_eq!(mems_of(&epyc2, &[0, 7, 32]), vec![0]);
    assert_eq!(mems_of(&epyc2, &[8, 24]), vec![1, 3]);
    let arm = fixture("arm-2s-128c.hwloc2.xml");
    assert_eq!(mems_of(&arm, &[63, 64]), vec![0, 1]);
    // From /sys as an old kernel shows it: 4 cores x 2 threads per socket.
    let e5 = fixture("e5-2623v4-2s.sysfs.txt");
    assert_eq!(mems_of(&e5, &[0, 8]), vec![0]);
    assert_eq!(mems_of(&e5, &[4, 12]), vec![1]);
    // This VM, both ways: one NUMA node, so mems = "0" whatever the CPUs.
    for vm in [fixture("vm-epyc-2c.hwloc2.xml"), fixture("vm-epyc-2c.sysfs.txt")] {
        assert_eq!((mems_of(&vm, &[0]), mems_of(&vm, &[0, 1])), (vec![0], vec![0]));
    }
    assert!(mems_of(&xeon, &[4096]).is_empty(), "a CPU the topology does not know binds nothing");
}

fn sh(name: &str, pool: usize) -> NodeJob {
    NodeJob {
        name: name.into(),
        // Long enough that both jobs run at once, whatever the poll.
        argv: vec!["sleep".into(), "0.3".into()],
        pool,
        cores: 1,
        timeout: None,
        memory_mib: None,
        pids_max: None,
        solo: None,
        kernel: false,
        env: Vec::new(),
        workdir: None,
        stdout: None,
        stderr: None,
        variants: Vec::new(),
        progress: None,
    }
}

/// The CPUs the node runner gives `jobs` (each `(name, pool)`) arriving
/// together, in order, on seed000's pools: `vh` with both CPUs, `ve` an
/// accelerator pool of two slots.
fn cpus_in_a_run(pools: &NodePools, jobs: &[(&str, usize)]) -> Vec<Vec<u32>> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = NodeConfig {
        pool_cpus: pools.cpus.clone(),
        shared_pool: pools.shared.clone(),
        topology: None,
        scope: format!("test-place-{}", std::process::id()),
        log_dir: dir.path().to_path_buf(),
        user: None,
        isolation: Isolation::detect(Preference::None),
        clock_origin: 0.0,
        env: Vec::new(),
    };
    let node_jobs: Vec<NodeJob> = jobs.iter().map(|&(n, p)| sh(n, p)).collect();
    let sim: Vec<SimJob> = jobs
        .iter()
        .map(|&(n, p)| SimJob { name: n.into(), arrival: 0.0, solo: 0.3, pool: p, cores: 1, program: n.into(), variants: vec![] })
        .collect();
    let platform = Platform {
        pools: vec![
            PoolInfo { name: "vh".into(), cores: pools.slots[0], kind: PoolKind::Cpu },
            PoolInfo { name: "ve".into(), cores: pools.slots[1], kind: PoolKind::Accelerator { host_load: 0.2 } },
        ],
    };
    let mut started = vec![Vec::new(); jobs.len()];
    let mut sink = |e: NodeEvent| {
        if let NodeEvent::Started(s) = e {
            started[s.job] = s.cpus;
        }
        Ok(())
    };
    let trace = {
        let mut ex = NodeExecutor::new(cfg, &node_jobs, &mut sink).unwrap();
        run_node(&platform, &sim, &Alone, &mut FirstFit, &mut ex, &[]).unwrap()
    };
    // Both ran at once: the later start came before the earlier end.
    let (starts, ends): (Vec<f64>, Vec<f64>) = (0..jobs.len())
        .map(|j| {
            let t = |k| trace.events.iter().find(|e| e.job == j && e.kind == k).unwrap().time;
            (t(cosched_engine::EventKind::Start), t(cosched_engine::EventKind::Finish))
        })
        .unzip();
    assert!(starts.iter().cloned().fold(0.0, f64::max) < ends.iter().cloned().fold(f64::INFINITY, f64::min), "not co-run");
    for (j, t) in trace.jobs.iter().enumerate() {
        assert_eq!(t.cpus, started[j], "the trace and the journal agree");
    }
    started
}

#[test]
fn pairs_place_two_jobs_on_the_cpus_a_run_gives_them() {
    let node_cpus: Vec<u32> = (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).collect();
    if node_cpus.len() < 2 {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, "the host pool of the accelerator example needs two CPUs here");
        return;
    }
    let pools = NodePools::new(&[(2, false), (2, true)], &node_cpus[..2]).unwrap();
    // A host job beside an accelerator job (the SX-Aurora paper's central pair), two
    // host jobs, two accelerator jobs, and the accelerator job first.
    for jobs in [
        [("vh-syscall", 0), ("ve-chatty", 1)],
        [("vh-compute", 0), ("vh-stream", 0)],
        [("ve-quiet", 1), ("ve-chatty", 1)],
        [("ve-chatty", 1), ("vh-syscall", 0)],
    ] {
        let run = cpus_in_a_run(&pools, &jobs);
        let pair = pools.pair((jobs[0].1, 1), (jobs[1].1, 1)).unwrap();
        assert_eq!(pair.cpus.to_vec(), run, "{jobs:?}");
    }
    // The point of it: the accelerator job's host side shares the host
    // job's CPU, as in the run, where `assign_cpus` gave each its own.
    let central = pools.pair((0, 1), (1, 1)).unwrap();
    assert_eq!((central.cpus.clone(), central.shared_cpus), ([vec![0], vec![0, 1]], true));
}
