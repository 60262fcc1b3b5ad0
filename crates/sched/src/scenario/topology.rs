//! A scenario's `[topology]`: the node's hwloc file, each pool's PUs, the
//! strategy of starts and the per-level slowdown matrices.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosched_engine::placement::Placement;
use cosched_model::levels::LevelMatrix;
use cosched_model::placement::{strategy_by_name, SharingLevel, Strategy};

use super::{limits, read_bounded, RawKind, RawPool, RawTopology};

/// A scenario's node topology: starts are placed on it, and pairs slow
/// down by the level their jobs share.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioTopology {
    /// The topology file as the scenario names it.
    pub file: String,
    /// PUs of the node.
    pub pus: usize,
    /// The topology, each pool's PUs and the strategy of starts.
    pub placement: Arc<Placement>,
    /// Program pairs per sharing level over [`Scenario::slowdown`]; no
    /// levels given: `slowdown` at every level.
    pub levels: Arc<LevelMatrix>,
}

/// Reads `[topology]`: the hwloc XML file (relative to the scenario's
/// directory), each cpu pool's PUs (`cpus`, else the next free PUs by
/// number; accelerator pools only with `cpus`), the strategy, and the
/// per-level matrices over `slowdown`.
pub(super) fn topology(
    raw: &RawTopology,
    pools: &[RawPool],
    dir: Option<&Path>,
    slowdown: &[Vec<f64>],
    levels: Option<BTreeMap<String, Vec<Vec<f64>>>>,
) -> Result<ScenarioTopology, String> {
    let path = dir.map_or_else(|| PathBuf::from(&raw.file), |d| d.join(&raw.file));
    let text = read_bounded(&path, limits::MAX_INPUT_BYTES).map_err(|e| format!("topology.file: {}: {e}", path.display()))?;
    let node = cosched_model::topology::parse_hwloc_xml(&text).map_err(|e| format!("topology.file: {}: {e}", path.display()))?;
    let strategy = match &raw.placement {
        Some(name) => strategy_by_name(name).map_err(|e| format!("topology.placement: {e}"))?,
        None => Strategy::Compact,
    };
    let all = node.pus();
    let mut taken: Vec<u32> = Vec::new();
    let mut cpus: Vec<Option<Vec<u32>>> = vec![None; pools.len()];
    for (i, p) in pools.iter().enumerate() {
        let Some(list) = &p.cpus else { continue };
        let v = cosched_model::topology::parse_cpulist(list).map_err(|e| format!("pools[{i}].cpus: `{list}`: {e}"))?;
        if v.len() != p.cores as usize {
            return Err(format!("pools[{i}].cpus: {} CPUs for a pool of {} cores", v.len(), p.cores));
        }
        if let Some(c) = v.iter().find(|c| !all.contains(c)) {
            return Err(format!("pools[{i}].cpus: CPU {c} is not on the topology ({} PUs)", all.len()));
        }
        if let Some(c) = v.iter().find(|c| taken.contains(c)) {
            return Err(format!("pools[{i}].cpus: CPU {c} is in another pool too"));
        }
        taken.extend(&v);
        cpus[i] = Some(v);
    }
    for (i, p) in pools.iter().enumerate() {
        if p.cpus.is_some() || matches!(p.kind, RawKind::Accelerator) {
            continue;
        }
        let v: Vec<u32> = all.iter().copied().filter(|c| !taken.contains(c)).take(p.cores as usize).collect();
        if v.len() < p.cores as usize {
            return Err(format!("pools[{i}].cores: pool `{}` of {} cores has {} CPUs of the topology left", p.name, p.cores, v.len()));
        }
        taken.extend(&v);
        cpus[i] = Some(v);
    }
    let mut tables = Vec::new();
    for (name, m) in levels.unwrap_or_default() {
        let Some(level) = SharingLevel::ALL.into_iter().find(|l| l.name() == name) else {
            let known: Vec<&str> = SharingLevel::ALL.iter().map(|l| l.name()).collect();
            return Err(format!("slowdown.levels.{name}: unknown sharing level; expected one of {}", known.join(", ")));
        };
        if let Some((i, j, v)) = m.iter().enumerate().flat_map(|(i, r)| r.iter().enumerate().map(move |(j, v)| (i, j, *v))).find(|x| x.2 > limits::MAX_SLOWDOWN) {
            return Err(format!("slowdown.levels.{name}[{i}][{j}]: {v:e}; expected a slowdown of at most {}", limits::MAX_SLOWDOWN));
        }
        tables.push((level, m));
    }
    let levels = LevelMatrix::new(slowdown.to_vec(), tables).map_err(|e| format!("slowdown.levels.{e}"))?;
    let placement = Placement::new(&node, strategy, cpus)?;
    Ok(ScenarioTopology { file: raw.file.clone(), pus: all.len(), placement: Arc::new(placement), levels: Arc::new(levels) })
}
