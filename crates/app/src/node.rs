//! `cosched node`: this node's topology, and on request the core-to-core
//! latency of its CPUs.

use anyhow::Context;
use cosched_measure::topology;
use cosched_model::topology::{Node, TopologySource};
use serde::Serialize;

use crate::common::{node_cpu_count, parse_cpus, Ctx};
use crate::error::bad_input;

/// Where to read the topology from, and what latency to measure.
#[derive(Debug, Clone, Default)]
pub struct NodeRequest {
    /// One source only; default: hwloc when lstopo is installed, else sysfs.
    pub source: Option<TopologySource>,
    pub latency: Option<LatencyRequest>,
}

/// Core-to-core latency: which CPUs, how many round trips per measurement,
/// how many measurements per pair.
#[derive(Debug, Clone)]
pub struct LatencyRequest {
    pub cpus: Option<String>,
    pub round_trips: u64,
    pub repeats: usize,
}

/// One measured pair of CPUs.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyRow {
    pub a: u32,
    pub b: u32,
    /// Round trip of one cache line, nanoseconds: median and spread.
    pub round_trip_ns: cosched_model::stats::Summary,
    /// The closest cache the declared topology says the two share (`L2`,
    /// `L3`), if any.
    pub declared_shared: Option<String>,
}

/// The node, and its latencies when asked. As JSON: the node's fields,
/// `huge_pages`, and `latency` when measured.
#[derive(Debug, serde::Serialize)]
pub struct NodeReport {
    #[serde(flatten)]
    pub node: Node,
    /// The kernel's transparent huge page policy, when readable: not part
    /// of the topology, but it moves memory-bound programs' times, and
    /// campaigns store it with the node's conditions.
    pub huge_pages: Option<cosched_model::provenance::HugePages>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Vec<LatencyRow>>,
}

pub fn node(req: &NodeRequest, ctx: &Ctx) -> anyhow::Result<NodeReport> {
    let node = match req.source {
        None => topology::detect(),
        Some(s) => topology::detect_with(s),
    }
    .context("cannot detect this node's topology")?;
    let _lock = match req.latency {
        Some(_) => crate::lock::take("node --latency", None)?,
        None => None,
    };
    let latency = req.latency.as_ref().map(|l| measure_latency(l, &node, ctx)).transpose()?;
    Ok(NodeReport { node, huge_pages: cosched_measure::provenance::huge_pages(), latency })
}

/// The /sys and /proc files the topology is read from, in the snapshot
/// format of the test fixtures, headed by a comment naming the machine.
pub fn sysfs_snapshot() -> anyhow::Result<String> {
    let (node, snapshot) = topology::sysfs_snapshot().context("cannot read this node's topology from /sys")?;
    let comment = format!(
        "cosched sysfs snapshot of {} ({}): {}\nread it with cosched_model::topology::MapView::from_snapshot",
        node.hostname.as_deref().unwrap_or("unknown host"),
        node.cpu_model.as_deref().unwrap_or("unknown CPU"),
        counts_line(&node),
    );
    Ok(snapshot.to_snapshot(&comment))
}

/// `1 socket, 1 NUMA node, 2 cores, 4 PUs, 2 threads per core (SMT)`.
pub fn counts_line(n: &Node) -> String {
    let count = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    format!(
        "{}, {}, {}, {}, {}",
        count(n.sockets as usize, "socket", "sockets"),
        count(n.numa_nodes.len(), "NUMA node", "NUMA nodes"),
        count(n.n_cores(), "core", "cores"),
        count(n.n_pus(), "PU", "PUs"),
        count(n.smt_width(), "thread per core", "threads per core (SMT)"),
    )
}

/// The pairs `--latency` measures: every pair of `cpus`, or on a node of
/// more than 8 CPUs with no list given, the first CPU against each other.
fn latency_pairs(cpus: &[u32], listed: bool) -> Vec<(u32, u32)> {
    if !listed && cpus.len() > 8 {
        return cpus[1..].iter().map(|&b| (cpus[0], b)).collect();
    }
    let mut v = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            v.push((a, b));
        }
    }
    v
}

fn measure_latency(req: &LatencyRequest, node: &Node, ctx: &Ctx) -> anyhow::Result<Vec<LatencyRow>> {
    let cpus = match &req.cpus {
        Some(list) => parse_cpus(list).map_err(|e| bad_input(format!("--cpus {list}: {e}")))?,
        None => (0..node_cpu_count()).collect(),
    };
    let pairs = latency_pairs(&cpus, req.cpus.is_some());
    if pairs.is_empty() {
        return Err(bad_input("--latency needs at least two CPUs (--cpus lists one)"));
    }
    if req.repeats == 0 || req.round_trips == 0 {
        return Err(bad_input("--repeats and --round-trips must be at least 1"));
    }
    let progress = ctx.progress.task("latency", pairs.len() as u64);
    let mut rows = Vec::new();
    for (i, &(a, b)) in pairs.iter().enumerate() {
        progress.set(i as u64, &format!("CPU {a} <-> CPU {b}"));
        let s = cosched_measure::c2c::measure_pair(a, b, req.round_trips, req.repeats)?;
        let declared_shared = node.shared_cache(a, b).map(|c| c.kind.label(c.level));
        rows.push(LatencyRow { a, b, round_trip_ns: s, declared_shared });
    }
    progress.finish();
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_pairs_are_every_pair_of_a_short_list_or_the_first_cpu_against_the_rest() {
        assert_eq!(latency_pairs(&[0, 1, 2], false), vec![(0, 1), (0, 2), (1, 2)]);
        let many: Vec<u32> = (0..10).collect();
        assert_eq!(latency_pairs(&many, false).len(), 9);
        assert_eq!(latency_pairs(&many, true).len(), 45, "a list given is measured whole");
        assert!(latency_pairs(&[3], true).is_empty());
    }
}
