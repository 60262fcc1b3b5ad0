//! Where a job runs on this node, decided once for every verb that runs
//! jobs: the node runner (`cosched run`), and the pairs and probe campaigns
//! that measure what the runner's policies decide from.
//!
//! A workload's pools are laid over the node's CPUs by [`NodePools::new`]:
//! cpu pools take consecutive CPUs, accelerator pools run on the host
//! pool's CPUs and share them (this node has no accelerator: an accelerator
//! job is a host process that services its device, the SX-Aurora paper). A job that
//! starts holds cores of its pool chosen by the engine's one choice
//! ([`CoreMap::choose`], compact), and [`NodePools::cpus_of`] maps them to
//! CPUs: the node runner's executor does exactly that. [`NodePools::pair`]
//! is the same two steps for two jobs starting together on an idle node,
//! so `cosched pairs` measures an accelerator job beside a host job with
//! both on the host's CPUs, as `cosched run` runs them.
//!
//! Memory follows the cores: [`mems_of`] gives the NUMA nodes of a job's
//! CPUs, which the executor writes to its cpuset's `cpuset.mems`.

use cosched_engine::cores::CoreMap;
use cosched_engine::Cores;
use cosched_model::regime::CacheRegime;
use cosched_model::placement::{sharing_level, SharingLevel};
use cosched_model::topology::Node;

/// The CPUs of each pool of a workload on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePools {
    /// CPUs of each pool, in pool order (an accelerator pool: the host's).
    pub cpus: Vec<Vec<u32>>,
    /// Accelerator pools share their CPUs instead of handing them out.
    pub shared: Vec<bool>,
    /// Cores (accelerator pools: job slots) the engine hands out per pool.
    pub slots: Vec<u32>,
}

/// The CPUs two jobs of a pair get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairPlacement {
    pub cpus: [Vec<u32>; 2],
    /// The two jobs hold a CPU in common: an accelerator job on the host
    /// CPUs beside a host job, or a node too small for both.
    pub shared_cpus: bool,
}

impl NodePools {
    /// Lays pools `(cores, accelerator)` over `node_cpus`: cpu pools take
    /// consecutive CPUs in order; accelerator pools get the first cpu
    /// pool's CPUs (else the whole node) and share them.
    pub fn new(pools: &[(u32, bool)], node_cpus: &[u32]) -> Result<NodePools, String> {
        let mut next = 0usize;
        let mut cpus = Vec::new();
        let mut shared = Vec::new();
        let mut host: Option<Vec<u32>> = None;
        for &(cores, accel) in pools {
            if accel {
                cpus.push(Vec::new());
                shared.push(true);
                continue;
            }
            let end = next + cores as usize;
            if end > node_cpus.len() {
                return Err(format!("the pools need {end} CPUs; this node has {}", node_cpus.len()));
            }
            let mine = node_cpus[next..end].to_vec();
            host.get_or_insert_with(|| mine.clone());
            cpus.push(mine);
            shared.push(false);
            next = end;
        }
        let host = host.unwrap_or_else(|| node_cpus.to_vec());
        for (c, &s) in cpus.iter_mut().zip(&shared) {
            if s {
                *c = host.clone();
            }
        }
        Ok(NodePools { cpus, shared, slots: pools.iter().map(|p| p.0).collect() })
    }

    /// The CPUs of pool core indices `idx` (see [`cpus_of`]).
    pub fn cpus_of(&self, pool: usize, idx: &[u32]) -> Result<Vec<u32>, String> {
        cpus_of(&self.cpus, &self.shared, pool, idx)
    }

    /// Where jobs `a` and `b`, each `(pool, cores)`, run when they start
    /// together, `a` first, on an idle node: each takes the engine's
    /// compact choice of its pool's free cores (busy ones, least held
    /// first, when its pool has too few left), mapped to CPUs as the node
    /// runner maps them.
    pub fn pair(&self, a: (usize, u32), b: (usize, u32)) -> Result<PairPlacement, String> {
        let mut map = CoreMap::new(self.slots.iter().copied());
        let mut out: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
        for (k, &(pool, cores)) in [a, b].iter().enumerate() {
            let slots = *self.slots.get(pool).ok_or_else(|| format!("no pool {pool}"))?;
            // A job wider than its pool cannot run there at all; the
            // workload parser refuses it, so this is a caller's mistake.
            let n = cores.max(1);
            if n > slots {
                return Err(format!("a job of {n} cores does not fit pool {pool} of {slots}"));
            }
            let idx = map
                .choose(pool, n, &Cores::Compact, false)
                .or_else(|_| map.choose(pool, n, &Cores::Compact, true))
                .map_err(|e| format!("no cores for a job of {n} in pool {pool}: {e:?}"))?;
            map.hold(pool, &idx);
            out[k] = self.cpus_of(pool, &idx)?;
        }
        let shared_cpus = out[0].iter().any(|c| out[1].contains(c));
        Ok(PairPlacement { cpus: out, shared_cpus })
    }
}

/// The CPUs of pool core indices `idx`: a cpu pool's `idx`-th CPUs; an
/// accelerator pool's jobs share the host CPUs, whatever slots they hold.
pub fn cpus_of(pool_cpus: &[Vec<u32>], shared: &[bool], pool: usize, idx: &[u32]) -> Result<Vec<u32>, String> {
    let all = pool_cpus.get(pool).ok_or_else(|| format!("no pool {pool}"))?;
    if shared.get(pool).copied().unwrap_or(false) {
        return Ok(all.clone());
    }
    idx.iter()
        .map(|&i| all.get(i as usize).copied().ok_or_else(|| format!("pool {pool} has {} CPUs; no core {i}", all.len())))
        .collect()
}

/// The NUMA nodes of `cpus` on `node`, ascending: where a job's memory is
/// bound (cpuset.mems) so that it follows its cores. Empty when the
/// topology names no NUMA node for them (then memory is left unbound).
pub fn mems_of(node: &Node, cpus: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = cpus.iter().filter_map(|&c| node.numa_of(c)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Two distinct CPUs, one of each job, to read the cache-line round trip
/// between: the first CPU of `a` and the first of `b` that differs from
/// it; when the two jobs hold one CPU only, the node's first two CPUs.
/// `None` on a one-CPU node.
pub fn regime_cpus(a: &[u32], b: &[u32], node_cpus: &[u32]) -> Option<[u32; 2]> {
    for &x in a {
        if let Some(&y) = b.iter().find(|&&y| y != x) {
            return Some([x, y]);
        }
    }
    match node_cpus {
        [x, y, ..] => Some([*x, *y]),
        _ => None,
    }
}

/// What two CPUs shared during a repeat: the declared topology's level,
/// demoted to [`SharingLevel::SameNuma`] (one memory, caches apart) when
/// the declared level shares a cache but the round trip said the caches
/// were apart. On a VM the declared topology is the hypervisor's promise
/// and the round trip what the repeat got; on this node both vCPUs are
/// one declared domain, so the level observed is the regime. A round trip
/// never promotes a level: a fast one across sockets is not a shared cache.
/// Without a topology, the regime alone: shared is `SameLlc`, apart
/// `SameNuma`.
pub fn observed_level(node: Option<&Node>, cpus: [u32; 2], regime: Option<CacheRegime>) -> Option<SharingLevel> {
    let declared = node.map(|n| sharing_level(n, cpus[0], cpus[1]));
    match (declared, regime) {
        (Some(l), Some(CacheRegime::Apart)) if l <= SharingLevel::SameLlc => Some(SharingLevel::SameNuma),
        (Some(l), _) => Some(l),
        (None, Some(CacheRegime::Shared)) => Some(SharingLevel::SameLlc),
        (None, Some(CacheRegime::Apart)) => Some(SharingLevel::SameNuma),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_split_the_node_and_accelerators_share_the_host_cpus() {
        let p = NodePools::new(&[(1, false), (2, true), (1, false)], &[0, 1]).unwrap();
        assert_eq!(p.cpus, vec![vec![0], vec![0], vec![1]]);
        assert_eq!(p.shared, vec![false, true, false]);
        assert_eq!(p.slots, vec![1, 2, 1]);
        assert!(NodePools::new(&[(3, false)], &[0, 1]).unwrap_err().contains("need 3"));
    }

    /// seed000.toml on this node: `vh` takes both CPUs, `ve` has 2 slots.
    fn seed000() -> NodePools {
        NodePools::new(&[(2, false), (2, true)], &[0, 1]).unwrap()
    }

    #[test]
    fn an_accelerator_job_runs_on_the_host_cpus_beside_a_host_job() {
        let p = seed000();
        let vh_ve = p.pair((0, 1), (1, 1)).unwrap();
        assert_eq!(vh_ve, PairPlacement { cpus: [vec![0], vec![0, 1]], shared_cpus: true });
        // The other way round: the accelerator job holds a slot, not a CPU,
        // so the host job still gets the host pool's first core.
        assert_eq!(p.pair((1, 1), (0, 1)).unwrap().cpus, [vec![0, 1], vec![0]]);
        assert_eq!(p.pair((1, 1), (1, 1)).unwrap().cpus, [vec![0, 1], vec![0, 1]]);
    }

    #[test]
    fn two_host_jobs_get_cpus_of_their_own_until_the_pool_is_full() {
        let p = seed000();
        assert_eq!(p.pair((0, 1), (0, 1)).unwrap(), PairPlacement { cpus: [vec![0], vec![1]], shared_cpus: false });
        // Two cores and one: the second overbooks the least-held core.
        assert_eq!(p.pair((0, 2), (0, 1)).unwrap(), PairPlacement { cpus: [vec![0, 1], vec![0]], shared_cpus: true });
        assert!(p.pair((0, 3), (0, 1)).is_err());
        let two_pools = NodePools::new(&[(1, false), (1, false)], &[0, 1]).unwrap();
        assert_eq!(two_pools.pair((1, 1), (0, 1)).unwrap().cpus, [vec![1], vec![0]]);
    }

    #[test]
    fn the_round_trip_is_read_between_one_cpu_of_each_job() {
        assert_eq!(regime_cpus(&[0], &[1], &[0, 1]), Some([0, 1]));
        assert_eq!(regime_cpus(&[0], &[0, 1], &[0, 1]), Some([0, 1]));
        assert_eq!(regime_cpus(&[3], &[3], &[0, 1, 2, 3]), Some([0, 1]), "one CPU for both: the node's first two");
        assert_eq!(regime_cpus(&[0], &[0], &[0]), None);
    }

    #[test]
    fn an_apart_reading_demotes_a_declared_shared_cache_and_never_promotes() {
        use CacheRegime::{Apart, Shared};
        assert_eq!(observed_level(None, [0, 1], Some(Shared)), Some(SharingLevel::SameLlc));
        assert_eq!(observed_level(None, [0, 1], Some(Apart)), Some(SharingLevel::SameNuma));
        assert_eq!(observed_level(None, [0, 1], None), None);
    }
}
