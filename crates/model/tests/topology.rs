//! The topology parsers on fixtures of other machines (see
//! fixtures/topology/README.md): exact counts, SMT siblings, LLC sharing,
//! memory, agreement between hwloc and sysfs, and errors on bad input.

use cosched_model::topology::{
    parse_hwloc_xml, parse_sysfs, CacheKind, MapView, Node, NumaNode, TopologyError, TopologySource,
};

const XEON_V2: &str = include_str!("fixtures/topology/xeon-2s-2numa-smt2.hwloc2.xml");
const XEON_V1: &str = include_str!("fixtures/topology/xeon-2s-2numa-smt2.hwloc1.xml");
const EPYC_4NUMA: &str = include_str!("fixtures/topology/epyc-2s-4numa-smt2.hwloc2.xml");
const VM_XML: &str = include_str!("fixtures/topology/vm-epyc-2c.hwloc2.xml");
const VM_SYSFS: &str = include_str!("fixtures/topology/vm-epyc-2c.sysfs.txt");
const E5_SYSFS: &str = include_str!("fixtures/topology/e5-2623v4-2s.sysfs.txt");
const E5_XML: &str = include_str!("fixtures/topology/e5-2623v4-2s.hwloc2.xml");

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

fn sysfs(snapshot: &str) -> Node {
    parse_sysfs(&MapView::from_snapshot(snapshot).unwrap()).unwrap()
}

fn range(lo: u32, hi: u32) -> Vec<u32> {
    (lo..=hi).collect()
}

fn concat(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

/// (level, kind, size, instances, PUs per instance) of every cache group.
fn cache_shape(n: &Node) -> Vec<(u32, CacheKind, u64, usize, usize)> {
    n.cache_groups()
        .iter()
        .map(|g| {
            (
                g.level,
                g.kind,
                g.size_bytes,
                g.instances,
                g.pus_per_instance,
            )
        })
        .collect()
}

/// Everything but what the two sources legitimately report differently.
fn assert_same_hardware(a: &Node, b: &Node) {
    assert_eq!(a.sockets, b.sockets);
    assert_eq!(a.cores, b.cores);
    assert_eq!(a.numa_nodes, b.numa_nodes);
    assert_eq!(a.caches, b.caches);
}

#[test]
fn xeon_two_sockets_two_numa_nodes_smt2() {
    let n = parse_hwloc_xml(XEON_V2).unwrap();
    assert_eq!(n.source, TopologySource::Hwloc);
    assert_eq!(
        (
            n.sockets,
            n.numa_nodes.len(),
            n.n_cores(),
            n.n_pus(),
            n.smt_width()
        ),
        (2, 2, 32, 64, 2)
    );
    assert_eq!(n.pus(), range(0, 63));
    assert_eq!(n.siblings(0), Some(&[0, 32][..]));
    assert_eq!(n.siblings(47), Some(&[15, 47][..]));
    assert_eq!(n.siblings(64), None);
    assert_eq!(
        n.numa_nodes,
        vec![
            NumaNode {
                os_index: 0,
                cpus: concat(&[range(0, 15), range(32, 47)]),
                memory_bytes: Some(96 * GIB)
            },
            NumaNode {
                os_index: 1,
                cpus: concat(&[range(16, 31), range(48, 63)]),
                memory_bytes: Some(96 * GIB)
            },
        ]
    );
    assert_eq!(n.memory_bytes, Some(192 * GIB));
    assert_eq!(n.cores_of_numa(1).len(), 16);
    assert!(n.cores_of_numa(1).iter().all(|c| c.socket == 1));
    assert_eq!(n.cores[16].index, 16);
    assert_eq!(n.cores[16].pus, vec![16, 48]);
    assert_eq!(n.cores_of_socket(0).len(), 16);
    let llc = n.llc().unwrap();
    assert_eq!(
        (llc.level, llc.kind, llc.size_bytes),
        (3, CacheKind::Unified, 22 * MIB)
    );
    assert_eq!(llc.cpus, concat(&[range(0, 15), range(32, 47)]));
    assert_eq!(llc.line_bytes, Some(64));
    assert_eq!(
        cache_shape(&n),
        vec![
            (1, CacheKind::Data, 32 * KIB, 32, 2),
            (1, CacheKind::Instruction, 32 * KIB, 32, 2),
            (2, CacheKind::Unified, MIB, 32, 2),
            (3, CacheKind::Unified, 22 * MIB, 2, 32),
        ]
    );
    assert_eq!(
        (n.hostname.as_deref(), n.cpu_model.as_deref()),
        (None, None)
    );
    assert!(n.notes.is_empty(), "{:?}", n.notes);
}

#[test]
fn hwloc_1x_export_of_the_same_machine_parses_identically() {
    assert_eq!(
        parse_hwloc_xml(XEON_V1).unwrap(),
        parse_hwloc_xml(XEON_V2).unwrap()
    );
}

#[test]
fn epyc_two_sockets_four_numa_nodes_and_split_l3() {
    let n = parse_hwloc_xml(EPYC_4NUMA).unwrap();
    assert_eq!(
        (
            n.sockets,
            n.numa_nodes.len(),
            n.n_cores(),
            n.n_pus(),
            n.smt_width()
        ),
        (2, 4, 32, 64, 2)
    );
    for (i, numa) in n.numa_nodes.iter().enumerate() {
        let i = i as u32;
        assert_eq!(numa.os_index, i);
        assert_eq!(
            numa.cpus,
            concat(&[range(8 * i, 8 * i + 7), range(32 + 8 * i, 32 + 8 * i + 7)])
        );
        assert_eq!(numa.memory_bytes, Some(64 * GIB));
        let cores = n.cores_of_numa(i);
        assert_eq!(cores.len(), 8);
        assert!(
            cores.iter().all(|c| c.socket == i / 2),
            "NUMA node {i} lies in socket {}",
            i / 2
        );
    }
    assert_eq!(n.memory_bytes, Some(256 * GIB));
    assert_eq!(n.numa_of(40), Some(1));
    assert_eq!(n.siblings(9), Some(&[9, 41][..]));
    let llc = n.llc().unwrap();
    assert_eq!((llc.level, llc.size_bytes), (3, 16 * MIB));
    assert_eq!(llc.cpus, concat(&[range(0, 3), range(32, 35)]));
    assert_eq!(
        cache_shape(&n),
        vec![
            (1, CacheKind::Data, 32 * KIB, 32, 2),
            (1, CacheKind::Instruction, 32 * KIB, 32, 2),
            (2, CacheKind::Unified, 512 * KIB, 32, 2),
            (3, CacheKind::Unified, 16 * MIB, 8, 8),
        ]
    );
}

#[test]
fn this_vm_from_hwloc() {
    let n = parse_hwloc_xml(VM_XML).unwrap();
    assert_eq!(
        (
            n.sockets,
            n.numa_nodes.len(),
            n.n_cores(),
            n.n_pus(),
            n.smt_width()
        ),
        (1, 1, 2, 2, 1)
    );
    assert_eq!(n.hostname.as_deref(), Some("vm"));
    assert_eq!(n.cpu_model.as_deref(), Some("AMD EPYC"));
    assert_eq!(n.siblings(1), Some(&[1][..]));
    assert_eq!(n.numa_nodes[0].cpus, vec![0, 1]);
    assert_eq!(n.numa_nodes[0].memory_bytes, Some(5_060_198_400));
    // hwloc XML has no MemTotal: the total is the NUMA nodes' sum.
    assert_eq!(n.memory_bytes, Some(5_060_198_400));
    let llc = n.llc().unwrap();
    assert_eq!((llc.size_bytes, llc.cpus.clone()), (32 * MIB, vec![0, 1]));
    assert_eq!(
        cache_shape(&n),
        vec![
            (1, CacheKind::Data, 32 * KIB, 2, 1),
            (1, CacheKind::Instruction, 32 * KIB, 2, 1),
            (2, CacheKind::Unified, 512 * KIB, 2, 1),
            (3, CacheKind::Unified, 32 * MIB, 1, 2),
        ]
    );
}

#[test]
fn this_vm_from_sysfs_notes_the_memory_the_numa_node_does_not_count() {
    let n = sysfs(VM_SYSFS);
    assert_eq!(n.source, TopologySource::Sysfs);
    assert_eq!(
        (
            n.sockets,
            n.numa_nodes.len(),
            n.n_cores(),
            n.n_pus(),
            n.smt_width()
        ),
        (1, 1, 2, 2, 1)
    );
    assert_eq!(n.hostname.as_deref(), Some("vm"));
    assert_eq!(n.cpu_model.as_deref(), Some("AMD EPYC"));
    assert_eq!(n.memory_bytes, Some(24_683_656 * KIB));
    assert_eq!(n.numa_nodes[0].memory_bytes, Some(4_941_600 * KIB));
    assert_eq!(n.notes.len(), 1, "{:?}", n.notes);
    assert!(
        n.notes[0].contains("MemTotal is 23.5 GiB"),
        "{}",
        n.notes[0]
    );
}

#[test]
fn hwloc_and_sysfs_agree_on_this_vm() {
    let hw = parse_hwloc_xml(VM_XML).unwrap();
    let fs = sysfs(VM_SYSFS);
    assert_same_hardware(&hw, &fs);
    assert_eq!(hw.hostname, fs.hostname);
    assert_eq!(hw.cpu_model, fs.cpu_model);
}

#[test]
fn e5_box_from_sysfs_of_an_old_kernel() {
    let n = sysfs(E5_SYSFS);
    assert_eq!(
        (
            n.sockets,
            n.numa_nodes.len(),
            n.n_cores(),
            n.n_pus(),
            n.smt_width()
        ),
        (2, 2, 8, 16, 2)
    );
    assert_eq!(n.siblings(5), Some(&[5, 13][..]));
    assert_eq!(n.siblings(8), Some(&[0, 8][..]));
    assert_eq!(n.cores[4].socket, 1);
    assert_eq!(n.cores[4].numa, Some(1));
    assert_eq!(n.cores[4].pus, vec![4, 12]);
    assert_eq!(n.numa_nodes[0].cpus, concat(&[range(0, 3), range(8, 11)]));
    assert_eq!(n.numa_nodes[1].memory_bytes, Some(32_803_648 * KIB));
    assert_eq!(n.memory_bytes, Some(65_607_296 * KIB));
    let llc = n.llc().unwrap();
    assert_eq!(
        (llc.size_bytes, llc.cpus.clone()),
        (10 * MIB, concat(&[range(0, 3), range(8, 11)]))
    );
    assert_eq!(
        cache_shape(&n),
        vec![
            (1, CacheKind::Data, 32 * KIB, 8, 2),
            (1, CacheKind::Instruction, 32 * KIB, 8, 2),
            (2, CacheKind::Unified, 256 * KIB, 8, 2),
            (3, CacheKind::Unified, 10 * MIB, 2, 8),
        ]
    );
    assert_eq!(
        n.cpu_model.as_deref(),
        Some("Intel(R) Xeon(R) CPU E5-2623 v4 @ 2.60GHz")
    );
    assert_eq!(n.hostname.as_deref(), Some("cn042"));
    assert!(n.notes.is_empty(), "{:?}", n.notes);
}

#[test]
fn hwloc_and_sysfs_agree_on_the_e5_box() {
    let hw = parse_hwloc_xml(E5_XML).unwrap();
    let fs = sysfs(E5_SYSFS);
    assert_same_hardware(&hw, &fs);
    assert_eq!(hw.memory_bytes, fs.memory_bytes);
}

#[test]
fn node_json_round_trips() {
    for xml in [XEON_V2, EPYC_4NUMA, VM_XML] {
        let n = parse_hwloc_xml(xml).unwrap();
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(serde_json::from_str::<Node>(&json).unwrap(), n);
    }
    let json = serde_json::to_value(sysfs(VM_SYSFS)).unwrap();
    assert_eq!(json["source"], "sysfs");
    assert_eq!(json["caches"][0]["kind"], "data");
}

#[test]
fn truncated_xml_is_an_error_with_a_position_never_a_panic() {
    let cut = &VM_XML[..VM_XML.len() / 2];
    match parse_hwloc_xml(cut).unwrap_err() {
        TopologyError::Xml {
            line,
            column,
            message,
        } => assert!(line > 1, "{line}:{column} {message}"),
        other => panic!("expected an XML error, got {other:?}"),
    }
    for end in (0..VM_XML.len()).step_by(37) {
        let _ = parse_hwloc_xml(&VM_XML[..end]);
    }
}

#[test]
fn a_missing_sysfs_file_never_panics() {
    let full = MapView::from_snapshot(E5_SYSFS).unwrap();
    for path in full.0.keys() {
        let mut v = full.clone();
        v.0.remove(path);
        let result = parse_sysfs(&v);
        if path == "/sys/devices/system/cpu/online" {
            assert!(result.unwrap_err().to_string().contains("cannot be read"));
        } else {
            let n = result.unwrap_or_else(|e| panic!("without {path}: {e}"));
            assert_eq!(n.n_pus(), 16, "without {path}");
        }
    }
}

#[test]
fn a_bad_cpulist_in_sysfs_names_the_file() {
    let broken = E5_SYSFS.replace(
        "=== /sys/devices/system/node/node1/cpulist\n4-7,12-15",
        "=== /sys/devices/system/node/node1/cpulist\n4-7,12-",
    );
    let e = parse_sysfs(&MapView::from_snapshot(&broken).unwrap()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("/sys/devices/system/node/node1/cpulist: bad cpulist `4-7,12-`"),
        "{msg}"
    );
    assert!(msg.contains("column 5"), "{msg}");
}

#[test]
fn contradicting_sibling_lists_are_an_inconsistency_error() {
    let broken = E5_SYSFS.replace(
        "=== /sys/devices/system/cpu/cpu8/topology/thread_siblings_list\n0,8",
        "=== /sys/devices/system/cpu/cpu8/topology/thread_siblings_list\n8,9",
    );
    let e = parse_sysfs(&MapView::from_snapshot(&broken).unwrap()).unwrap_err();
    assert!(matches!(e, TopologyError::Inconsistent(_)), "{e}");
}
