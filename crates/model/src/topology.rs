//! Node topology: processing units, cores, sockets, NUMA nodes, caches, memory.
//!
//! Two parsers fill the same [`Node`]:
//! - [`parse_hwloc_xml`] reads what `lstopo --of xml` prints (hwloc 2.x, and
//!   1.x files kept from older machines);
//! - [`parse_sysfs`] reads Linux's `/sys` and `/proc` through a [`SysfsView`],
//!   so that this crate stays free of I/O: `cosched-measure` hands it the real
//!   files, tests hand it a [`MapView`] snapshot of another machine.
//!
//! Both parsers funnel into one assembly step that sorts and numbers
//! everything the same way, so a Node from hwloc and one from sysfs of the
//! same machine compare equal field by field (except for what the sources
//! genuinely report differently, see [`Node::memory_bytes`]).
//!
//! CPU numbers are always the operating system's ids (what `taskset`,
//! `sched_setaffinity` and `/sys` use, hwloc's `P#`), never hwloc's logical
//! `L#` indices: they are what the launcher pins to.

mod cpulist;
mod hwloc;
mod sysfs;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use cpulist::{format_cpulist, format_ranges, parse_cpulist, CpulistError, MAX_CPU_ID};
pub use hwloc::parse_hwloc_xml;
pub use sysfs::{meminfo_total, parse_sysfs, MapView, RecordingView, SysfsView};

/// The topology of one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Host name as the source reported it.
    pub hostname: Option<String>,
    /// CPU model string (`model name` of /proc/cpuinfo, hwloc's `CPUModel`).
    pub cpu_model: Option<String>,
    /// Number of sockets (packages) that hold at least one online PU.
    pub sockets: u32,
    /// NUMA nodes sorted by OS index. Memory-only nodes (CXL, HBM) have no cpus.
    pub numa_nodes: Vec<NumaNode>,
    /// Cores sorted by socket, then by their lowest PU; `Core::index` is the
    /// position in this list.
    pub cores: Vec<Core>,
    /// One entry per cache instance, sorted by level, kind, then lowest CPU.
    pub caches: Vec<Cache>,
    /// Total memory of the node in bytes: the kernel's `MemTotal` from sysfs.
    /// hwloc XML does not carry it, so [`parse_hwloc_xml`] gives the sum of
    /// the NUMA nodes' memory (detection on a live node then fills in
    /// `MemTotal`). The two can differ (see [`Node::memory_disagreement`]).
    pub memory_bytes: Option<u64>,
    /// Where the topology came from.
    pub source: TopologySource,
    /// Remarks about how the topology was obtained or what is missing from it,
    /// for people to read (e.g. why hwloc was not used).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A NUMA node: a memory domain and the CPUs local to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    pub os_index: u32,
    /// Online CPUs local to this node, sorted.
    pub cpus: Vec<u32>,
    /// Memory of this node in bytes, when the source reports it.
    pub memory_bytes: Option<u64>,
}

/// A physical core and its hardware threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// Position in [`Node::cores`]; unique on the node, unlike Linux's
    /// `core_id`, which repeats across sockets and may have gaps.
    pub index: u32,
    /// Physical package id of the socket holding this core.
    pub socket: u32,
    /// OS index of the NUMA node local to this core's first PU.
    pub numa: Option<u32>,
    /// The core's PUs (hardware threads), sorted OS ids.
    pub pus: Vec<u32>,
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

impl CacheKind {
    /// The conventional short name of a cache of this kind at `level`:
    /// `L1d`, `L1i`, `L2`, `L3`.
    pub fn label(self, level: u32) -> String {
        match self {
            CacheKind::Data => format!("L{level}d"),
            CacheKind::Instruction => format!("L{level}i"),
            CacheKind::Unified => format!("L{level}"),
        }
    }
}

/// One cache instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// 1 for L1, 2 for L2, ...
    pub level: u32,
    pub kind: CacheKind,
    /// Size of this one instance in bytes.
    pub size_bytes: u64,
    /// Coherency line size in bytes, when known.
    pub line_bytes: Option<u32>,
    /// Online CPUs sharing this instance, sorted.
    pub cpus: Vec<u32>,
}

/// The source a [`Node`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TopologySource {
    /// hwloc's XML export (`lstopo --of xml`).
    Hwloc,
    /// Linux's /sys/devices/system/{cpu,node} and /proc.
    Sysfs,
}

impl TopologySource {
    pub fn name(self) -> &'static str {
        match self {
            TopologySource::Hwloc => "hwloc",
            TopologySource::Sysfs => "sysfs",
        }
    }
}

impl std::fmt::Display for TopologySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TopologySource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hwloc" => Ok(TopologySource::Hwloc),
            "sysfs" => Ok(TopologySource::Sysfs),
            other => Err(format!(
                "unknown topology source `{other}`; expected `hwloc` or `sysfs`"
            )),
        }
    }
}

/// All caches of one kind, level, size and sharing, counted: one row of a
/// summary table (`L3  32 MiB  x2  shared by 16 PUs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGroup {
    pub level: u32,
    pub kind: CacheKind,
    pub size_bytes: u64,
    pub line_bytes: Option<u32>,
    /// Number of instances.
    pub instances: usize,
    /// PUs sharing each instance.
    pub pus_per_instance: usize,
}

/// Why a topology could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Cpulist(#[from] CpulistError),
    #[error("hwloc XML is not well-formed at line {line}, column {column}: {message}")]
    Xml {
        line: u32,
        column: u32,
        message: String,
    },
    #[error("hwloc XML, line {line}: {message}")]
    Hwloc { line: u32, message: String },
    #[error("{path}: {message}")]
    Sysfs { path: String, message: String },
    #[error("sysfs snapshot, line {line}: {message}")]
    Snapshot { line: usize, message: String },
    #[error("inconsistent topology: {0}")]
    Inconsistent(String),
}

impl Node {
    /// Number of processing units (hardware threads).
    pub fn n_pus(&self) -> usize {
        self.cores.iter().map(|c| c.pus.len()).sum()
    }

    /// Number of physical cores.
    pub fn n_cores(&self) -> usize {
        self.cores.len()
    }

    /// All PUs, sorted.
    pub fn pus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .cores
            .iter()
            .flat_map(|c| c.pus.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }

    /// Hardware threads per core: the largest count on any core, so a hybrid
    /// CPU with 2-thread performance cores and 1-thread efficiency cores
    /// reports 2. 0 only for a node without cores.
    pub fn smt_width(&self) -> usize {
        self.cores.iter().map(|c| c.pus.len()).max().unwrap_or(0)
    }

    /// The core holding `pu`.
    pub fn core_of(&self, pu: u32) -> Option<&Core> {
        self.cores.iter().find(|c| c.pus.contains(&pu))
    }

    /// The SMT siblings of `pu`: all PUs of its core, `pu` included (as in
    /// Linux's `thread_siblings_list`). `None` if `pu` is not on this node.
    pub fn siblings(&self, pu: u32) -> Option<&[u32]> {
        self.core_of(pu).map(|c| c.pus.as_slice())
    }

    /// OS index of the NUMA node local to `pu` (the lowest one if several
    /// memory nodes share its locality).
    pub fn numa_of(&self, pu: u32) -> Option<u32> {
        self.numa_nodes
            .iter()
            .find(|n| n.cpus.contains(&pu))
            .map(|n| n.os_index)
    }

    /// Cores whose NUMA node is `numa` (an OS index).
    pub fn cores_of_numa(&self, numa: u32) -> Vec<&Core> {
        self.cores.iter().filter(|c| c.numa == Some(numa)).collect()
    }

    /// Cores on socket `socket` (a physical package id).
    pub fn cores_of_socket(&self, socket: u32) -> Vec<&Core> {
        self.cores.iter().filter(|c| c.socket == socket).collect()
    }

    /// The last-level cache: an instance of the highest-level data or unified
    /// cache (the one holding the lowest CPU). Its `size_bytes` is what one
    /// group of cores shares, not the node's total; `cpus` says which group.
    pub fn llc(&self) -> Option<&Cache> {
        let level = self
            .caches
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction)
            .map(|c| c.level)
            .max()?;
        self.caches
            .iter()
            .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
            .min_by_key(|c| (c.cpus.first().copied(), c.kind == CacheKind::Data))
    }

    /// The closest data or unified cache the topology says `a` and `b` share
    /// (lowest level holding both), if any.
    pub fn shared_cache(&self, a: u32, b: u32) -> Option<&Cache> {
        self.caches
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction && c.cpus.contains(&a) && c.cpus.contains(&b))
            .min_by_key(|c| c.level)
    }

    /// Caches counted by level, kind, size and sharing, in level order
    /// (L1d, L1i, L2, L3, ...).
    pub fn cache_groups(&self) -> Vec<CacheGroup> {
        let mut groups: BTreeMap<(u32, CacheKind, u64, usize, Option<u32>), usize> =
            BTreeMap::new();
        for c in &self.caches {
            *groups
                .entry((c.level, c.kind, c.size_bytes, c.cpus.len(), c.line_bytes))
                .or_default() += 1;
        }
        groups
            .into_iter()
            .map(
                |((level, kind, size_bytes, pus_per_instance, line_bytes), instances)| CacheGroup {
                    level,
                    kind,
                    size_bytes,
                    line_bytes,
                    instances,
                    pus_per_instance,
                },
            )
            .collect()
    }

    /// Sum of the NUMA nodes' memory, when every node reports it.
    pub fn numa_memory_total(&self) -> Option<u64> {
        if self.numa_nodes.is_empty() {
            return None;
        }
        self.numa_nodes.iter().map(|n| n.memory_bytes).sum()
    }

    /// A remark when the NUMA nodes' memory and the node's total disagree by
    /// more than 10%. Some hypervisors add memory the kernel counts in
    /// `MemTotal` but not in any node's `MemTotal`; per-node figures are then
    /// too low for capacity planning.
    pub fn memory_disagreement(&self) -> Option<String> {
        let (numa, total) = (self.numa_memory_total()?, self.memory_bytes?);
        let (lo, hi) = (numa.min(total), numa.max(total));
        if hi == 0 || (hi - lo) as f64 / hi as f64 <= 0.10 {
            return None;
        }
        Some(format!(
            "NUMA nodes report {} of memory in total but the kernel's MemTotal is {}; per-node memory figures do not add up to the node's memory",
            format_bytes(numa),
            format_bytes(total)
        ))
    }
}

/// Formats a byte count with binary units: `512 B`, `32 KiB`, `1.5 MiB`, `4.3 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if (value - value.round()).abs() < 0.05 {
        format!("{:.0} {}", value.round(), UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// What a parser found, before ordering and numbering. Both parsers build one
/// and call [`Parts::assemble`], which is what makes their results comparable.
#[derive(Debug, Default)]
struct Parts {
    hostname: Option<String>,
    cpu_model: Option<String>,
    /// (socket, PUs) per core, in any order.
    cores: Vec<(u32, Vec<u32>)>,
    numa_nodes: Vec<NumaNode>,
    caches: Vec<Cache>,
    memory_bytes: Option<u64>,
    notes: Vec<String>,
}

impl Parts {
    fn assemble(self, source: TopologySource) -> Result<Node, TopologyError> {
        let mut cores = self.cores;
        for (_, pus) in &mut cores {
            pus.sort_unstable();
            pus.dedup();
        }
        cores.retain(|(_, pus)| !pus.is_empty());
        if cores.is_empty() {
            return Err(TopologyError::Inconsistent(
                "no processing units (CPUs) found".into(),
            ));
        }
        let mut owner: BTreeMap<u32, usize> = BTreeMap::new();
        for (i, (_, pus)) in cores.iter().enumerate() {
            for &pu in pus {
                if let Some(prev) = owner.insert(pu, i) {
                    return Err(TopologyError::Inconsistent(format!(
                        "CPU {pu} belongs to two cores (with CPUs {} and {})",
                        format_cpulist(&cores[prev].1),
                        format_cpulist(pus)
                    )));
                }
            }
        }
        let all: BTreeSet<u32> = owner.keys().copied().collect();

        let mut numa_nodes = self.numa_nodes;
        for n in &mut numa_nodes {
            n.cpus.retain(|c| all.contains(c));
            n.cpus.sort_unstable();
            n.cpus.dedup();
        }
        numa_nodes.sort_by_key(|n| n.os_index);
        if let Some(w) = numa_nodes
            .windows(2)
            .find(|w| w[0].os_index == w[1].os_index)
        {
            return Err(TopologyError::Inconsistent(format!(
                "NUMA node {} appears twice",
                w[0].os_index
            )));
        }

        // Nodes are sorted, so the first insert for a CPU is its lowest node.
        let mut numa_of: BTreeMap<u32, u32> = BTreeMap::new();
        for n in &numa_nodes {
            for &c in &n.cpus {
                numa_of.entry(c).or_insert(n.os_index);
            }
        }
        cores.sort_by_key(|(socket, pus)| (*socket, pus[0]));
        let cores: Vec<Core> = cores
            .into_iter()
            .enumerate()
            .map(|(i, (socket, pus))| Core {
                index: i as u32,
                socket,
                numa: numa_of.get(&pus[0]).copied(),
                pus,
            })
            .collect();
        let sockets = cores
            .iter()
            .map(|c| c.socket)
            .collect::<BTreeSet<_>>()
            .len() as u32;

        let mut caches = self.caches;
        for c in &mut caches {
            c.cpus.retain(|p| all.contains(p));
            c.cpus.sort_unstable();
            c.cpus.dedup();
        }
        caches.retain(|c| !c.cpus.is_empty());
        caches.sort_by(|a, b| (a.level, a.kind, &a.cpus).cmp(&(b.level, b.kind, &b.cpus)));
        caches.dedup();

        Ok(Node {
            hostname: self.hostname.filter(|h| !h.is_empty()),
            cpu_model: self.cpu_model.filter(|m| !m.is_empty()),
            sockets,
            numa_nodes,
            cores,
            caches,
            memory_bytes: self.memory_bytes,
            source,
            notes: self.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts_2x2() -> Parts {
        Parts {
            cores: vec![(1, vec![3, 1]), (0, vec![2, 0])],
            numa_nodes: vec![
                NumaNode {
                    os_index: 1,
                    cpus: vec![1, 3],
                    memory_bytes: Some(2 << 30),
                },
                NumaNode {
                    os_index: 0,
                    cpus: vec![0, 2],
                    memory_bytes: Some(2 << 30),
                },
            ],
            caches: vec![
                Cache {
                    level: 3,
                    kind: CacheKind::Unified,
                    size_bytes: 8 << 20,
                    line_bytes: Some(64),
                    cpus: vec![1, 3],
                },
                Cache {
                    level: 1,
                    kind: CacheKind::Data,
                    size_bytes: 32 << 10,
                    line_bytes: Some(64),
                    cpus: vec![0, 2],
                },
                Cache {
                    level: 3,
                    kind: CacheKind::Unified,
                    size_bytes: 8 << 20,
                    line_bytes: Some(64),
                    cpus: vec![0, 2],
                },
                Cache {
                    level: 1,
                    kind: CacheKind::Data,
                    size_bytes: 32 << 10,
                    line_bytes: Some(64),
                    cpus: vec![1, 3],
                },
            ],
            memory_bytes: Some(4 << 30),
            ..Parts::default()
        }
    }

    #[test]
    fn assemble_orders_cores_by_socket_then_first_pu_and_numbers_them() {
        let n = parts_2x2().assemble(TopologySource::Sysfs).unwrap();
        assert_eq!(n.sockets, 2);
        assert_eq!(
            n.cores[0],
            Core {
                index: 0,
                socket: 0,
                numa: Some(0),
                pus: vec![0, 2]
            }
        );
        assert_eq!(
            n.cores[1],
            Core {
                index: 1,
                socket: 1,
                numa: Some(1),
                pus: vec![1, 3]
            }
        );
        assert_eq!(n.numa_nodes[0].os_index, 0);
        assert_eq!(n.caches[0].cpus, vec![0, 2]);
        assert_eq!(n.caches[0].level, 1);
    }

    #[test]
    fn helpers_answer_from_the_cores() {
        let n = parts_2x2().assemble(TopologySource::Sysfs).unwrap();
        assert_eq!((n.n_pus(), n.n_cores(), n.smt_width()), (4, 2, 2));
        assert_eq!(n.pus(), vec![0, 1, 2, 3]);
        assert_eq!(n.siblings(3), Some(&[1, 3][..]));
        assert_eq!(n.siblings(9), None);
        assert_eq!(n.numa_of(2), Some(0));
        assert_eq!(n.cores_of_numa(1).len(), 1);
        assert_eq!(n.cores_of_socket(0)[0].pus, vec![0, 2]);
        let llc = n.llc().unwrap();
        assert_eq!(
            (llc.level, llc.size_bytes, llc.cpus.clone()),
            (3, 8 << 20, vec![0, 2])
        );
        // SMT siblings share their L1 (the closest), other sockets nothing.
        assert_eq!(n.shared_cache(0, 2).map(|c| c.level), Some(1));
        assert_eq!(n.shared_cache(0, 1), None);
        let groups = n.cache_groups();
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[1].instances, groups[1].pus_per_instance), (2, 2));
        assert_eq!(n.memory_disagreement(), None);
    }

    #[test]
    fn a_pu_in_two_cores_is_an_error_not_a_panic() {
        let mut p = parts_2x2();
        p.cores.push((0, vec![0]));
        let e = p.assemble(TopologySource::Hwloc).unwrap_err();
        assert!(e.to_string().contains("CPU 0 belongs to two cores"), "{e}");
    }

    #[test]
    fn no_pus_is_an_error() {
        let e = Parts::default()
            .assemble(TopologySource::Hwloc)
            .unwrap_err();
        assert!(e.to_string().contains("no processing units"), "{e}");
    }

    #[test]
    fn memory_disagreement_is_reported_beyond_ten_percent() {
        let mut n = parts_2x2().assemble(TopologySource::Sysfs).unwrap();
        n.memory_bytes = Some(24 << 30);
        let note = n.memory_disagreement().unwrap();
        assert!(note.contains("4 GiB") && note.contains("24 GiB"), "{note}");
    }

    #[test]
    fn format_bytes_uses_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(32 << 10), "32 KiB");
        assert_eq!(format_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(format_bytes(4657545216), "4.3 GiB");
    }

    #[test]
    fn source_parses_from_its_name() {
        assert_eq!("hwloc".parse::<TopologySource>(), Ok(TopologySource::Hwloc));
        assert!("lstopo"
            .parse::<TopologySource>()
            .unwrap_err()
            .contains("expected `hwloc` or `sysfs`"));
    }
}
