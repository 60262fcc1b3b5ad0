//! Where on a node's topology the engine starts a job: a registered
//! strategy of `model::placement` (compact, scatter, range, NUMA-first,
//! interference-aware) over the pools' CPUs.
//!
//! A [`Placement`] maps each pool's core indices (what decisions and the
//! [`CoreMap`] speak) to PUs of a topology, so a start is placed by the
//! same function that `pairs` and `run` use on a real node. The one
//! validation asks it for a start's cores ([`crate::validate::check_decision_in`]):
//! `Decision::Start` (the engine picks) gets the chosen strategy,
//! `StartOn` with `Cores::Compact` or `Cores::Spread` the compact or
//! scatter strategy, and `Cores::Given` exactly the cores named, as
//! without a topology. A pool off the topology (an accelerator's) and an
//! overbooking start that does not fit in the free cores are placed as
//! without one. Without a `Placement` nothing changes: the engines place
//! through [`CoreMap::choose`] alone, as before.
//!
//! `interference-aware` prices each candidate domain by the predicted pair
//! slowdowns of the jobs running on the node, from the source the policy
//! sees: per level when the source has levels
//! ([`SlowdownSource::by_level`]), else its one number per pair weighted
//! by what the CPUs share ([`SharingLevel::weight`]).

use std::collections::BTreeSet;

use cosched_model::placement::{Layout, SharingLevel, Strategy, STRATEGIES};
use cosched_model::topology::Node;

use crate::cores::{ChoiceError, CoreMap};
use crate::policy::PoolInfo;
use crate::slowdown::SlowdownSource;
use crate::JobId;

/// A node's topology, the PUs of each pool, and the strategy a start the
/// engine places goes through.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    strategy: Strategy,
    layout: Layout,
    /// Per pool, the PU of each core index; `None`: the pool is not on the
    /// topology (an accelerator) and is placed as without one.
    pools: Vec<Option<Vec<u32>>>,
    /// Per PU number, its (pool, core index).
    slot: Vec<Option<(usize, u32)>>,
}

/// A job running (not suspended) on the node, as placement sees it.
#[derive(Debug, Clone, Copy)]
pub struct Neighbour<'a> {
    pub job: JobId,
    pub pool: usize,
    /// Its pool core indices.
    pub cpus: &'a [u32],
}

/// What a start is placed against.
#[derive(Clone, Copy)]
pub struct PlaceCtx<'a> {
    pub placement: &'a Placement,
    pub running: &'a [Neighbour<'a>],
    /// The source the policy sees: interference-aware prices candidates by it.
    pub predicted: &'a dyn SlowdownSource,
}

impl PlaceCtx<'_> {
    /// The cores of `pool` (indices, ascending) a start of `job` on `n`
    /// cores gets by `strategy`. `None`: place as without a topology (the
    /// pool is off it, or an overbooking start does not fit in the free
    /// cores, which `CoreMap::choose` shares out).
    pub fn choose(
        &self,
        map: &CoreMap,
        job: JobId,
        pool: usize,
        n: u32,
        strategy: Strategy,
        overbook: bool,
    ) -> Option<Result<Vec<u32>, ChoiceError>> {
        let p = self.placement;
        let pus = p.pool_cpus(pool)?;
        let busy: Vec<u32> = map.holders(pool).iter().zip(pus).filter(|(h, _)| **h > 0).map(|(_, &p)| p).collect();
        let cost = |cand: &[u32]| -> f64 {
            if strategy != Strategy::InterferenceAware {
                return 0.0;
            }
            p.cost(self, job, cand)
        };
        match p.layout.place(strategy, pus, n, &busy, &cost) {
            Some(placed) => {
                let mut idx: Vec<u32> = placed.cpus.iter().filter_map(|&pu| p.slot[pu as usize].map(|s| s.1)).collect();
                idx.sort_unstable();
                Some(Ok(idx))
            }
            None if overbook => None,
            None => Some(Err(ChoiceError::NoRoom { needs: n, free: map.free(pool) })),
        }
    }
}

impl Placement {
    /// `pools[p]`: the PUs of pool p's core indices, in index order, or
    /// `None` for a pool off the topology. A PU not on `node`, or in two
    /// pools, is refused.
    pub fn new(node: &Node, strategy: Strategy, pools: Vec<Option<Vec<u32>>>) -> Result<Placement, String> {
        let layout = Layout::new(node);
        let mut seen = BTreeSet::new();
        let top = pools.iter().flatten().flatten().max().map_or(0, |&m| m as usize + 1);
        let mut slot = vec![None; top];
        for (p, cpus) in pools.iter().enumerate() {
            for (i, &c) in cpus.iter().flatten().enumerate() {
                if !layout.has(c) {
                    return Err(format!("pool {p}: CPU {c} is not on the topology"));
                }
                if !seen.insert(c) {
                    return Err(format!("pool {p}: CPU {c} is in another pool too"));
                }
                slot[c as usize] = Some((p, i as u32));
            }
        }
        Ok(Placement { strategy, layout, pools, slot })
    }

    /// The same topology and pools with another strategy.
    pub fn with_strategy(&self, strategy: Strategy) -> Placement {
        Placement { strategy, ..self.clone() }
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The strategy's registered name.
    pub fn name(&self) -> &'static str {
        STRATEGIES.iter().find(|e| e.strategy == self.strategy).map_or("?", |e| e.name)
    }

    /// The PUs of `pool`'s core indices, if the pool is on the topology.
    pub fn pool_cpus(&self, pool: usize) -> Option<&[u32]> {
        self.pools.get(pool).and_then(|p| p.as_deref())
    }

    /// The PUs of core indices `cpus` of `pool`; empty off the topology.
    pub fn pus(&self, pool: usize, cpus: &[u32]) -> Vec<u32> {
        let Some(map) = self.pool_cpus(pool) else { return Vec::new() };
        let mut v: Vec<u32> = cpus.iter().filter_map(|&c| map.get(c as usize).copied()).collect();
        v.sort_unstable();
        v
    }

    /// NUMA nodes of core indices `cpus` of `pool`: where the job's memory
    /// is bound.
    pub fn mems(&self, pool: usize, cpus: &[u32]) -> Vec<u32> {
        self.layout.mems(&self.pus(pool, cpus))
    }

    /// Checks that the platform has the pools this placement maps, each
    /// placed pool with as many cores as PUs.
    pub fn check(&self, pools: &[PoolInfo]) -> Result<(), String> {
        if pools.len() != self.pools.len() {
            return Err(format!("the placement maps {} pools; the platform has {}", self.pools.len(), pools.len()));
        }
        for (p, (info, cpus)) in pools.iter().zip(&self.pools).enumerate() {
            if let Some(c) = cpus {
                if c.len() != info.cores as usize {
                    return Err(format!("pool {p} `{}` has {} cores but {} CPUs on the topology", info.name, info.cores, c.len()));
                }
            }
        }
        Ok(())
    }

    /// The closest level between any CPU of one job and any of the other
    /// (core indices of their pools); `None` when either pool is off the
    /// topology.
    pub fn level(&self, pool_a: usize, a: &[u32], pool_b: usize, b: &[u32]) -> Option<SharingLevel> {
        let (ma, mb) = (self.pool_cpus(pool_a)?, self.pool_cpus(pool_b)?);
        let mut best = SharingLevel::OtherSocket;
        for &x in a {
            for &y in b {
                best = best.min(self.layout.level(ma[x as usize], mb[y as usize]));
                if best == SharingLevel::SmtSibling {
                    return Some(best);
                }
            }
        }
        Some(best)
    }

    /// What placing `job` on PUs `cand` costs in predicted harm: each
    /// neighbour's pair slowdowns above 1, at the level they would share.
    fn cost(&self, ctx: &PlaceCtx, job: JobId, cand: &[u32]) -> f64 {
        let src = ctx.predicted;
        let by_level = src.by_level();
        ctx.running
            .iter()
            .filter(|nb| nb.job != job)
            .filter_map(|nb| {
                let theirs = self.pool_cpus(nb.pool)?;
                let mut level = SharingLevel::OtherSocket;
                for &x in cand {
                    for &c in nb.cpus {
                        level = level.min(self.layout.level(x, theirs[c as usize]));
                    }
                }
                let harm = |s: f64| (s - 1.0).max(0.0);
                Some(if by_level {
                    let l = [Some(level)];
                    harm(src.slowdown_at(job, &[nb.job], &l)) + harm(src.slowdown_at(nb.job, &[job], &l))
                } else {
                    (harm(src.slowdown(job, &[nb.job])) + harm(src.slowdown(nb.job, &[job]))) * level.weight()
                })
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::topology::{Cache, CacheKind, Core, NumaNode, TopologySource};
    use cosched_model::workload::PoolKind;

    /// Two sockets, each one NUMA node and one L3 over two cores of two
    /// threads: PUs 0 and 4 are siblings, as are 1-5, 2-6, 3-7; socket 0
    /// holds cores of PUs 0, 1 (and 4, 5).
    fn node() -> Node {
        let core = |index: u32, socket: u32, pus: Vec<u32>| Core { index, socket, numa: Some(socket), pus };
        let l3 = |cpus: Vec<u32>| Cache { level: 3, kind: CacheKind::Unified, size_bytes: 1 << 20, line_bytes: None, cpus };
        Node {
            hostname: None,
            cpu_model: None,
            sockets: 2,
            numa_nodes: vec![
                NumaNode { os_index: 0, cpus: vec![0, 1, 4, 5], memory_bytes: None },
                NumaNode { os_index: 1, cpus: vec![2, 3, 6, 7], memory_bytes: None },
            ],
            cores: vec![core(0, 0, vec![0, 4]), core(1, 0, vec![1, 5]), core(2, 1, vec![2, 6]), core(3, 1, vec![3, 7])],
            caches: vec![l3(vec![0, 1, 4, 5]), l3(vec![2, 3, 6, 7])],
            memory_bytes: None,
            source: TopologySource::Hwloc,
            notes: Vec::new(),
        }
    }

    struct Flat(f64);
    impl SlowdownSource for Flat {
        fn slowdown(&self, _: JobId, beside: &[JobId]) -> f64 {
            self.0.powi(beside.len() as i32)
        }
        fn score(&self, _: JobId, _: JobId) -> f64 {
            0.0
        }
    }

    #[test]
    fn pools_map_core_indices_to_pus_and_off_topology_pools_are_left_to_the_core_map() {
        let p = Placement::new(&node(), Strategy::Compact, vec![Some(vec![0, 4, 2]), None]).unwrap();
        assert_eq!(p.pus(0, &[2, 0]), vec![0, 2]);
        assert_eq!(p.mems(0, &[1, 2]), vec![0, 1]);
        assert_eq!(p.level(0, &[0], 0, &[1]), Some(SharingLevel::SmtSibling));
        assert_eq!(p.level(0, &[0, 1], 0, &[2]), Some(SharingLevel::OtherSocket));
        assert_eq!(p.level(0, &[0], 1, &[0]), None);
        let map = CoreMap::new([3, 2]);
        let ctx = PlaceCtx { placement: &p, running: &[], predicted: &Flat(1.0) };
        assert_eq!(ctx.choose(&map, 0, 1, 1, Strategy::Compact, false), None, "pool 1 is off the topology");
        assert_eq!(ctx.choose(&map, 0, 0, 2, Strategy::Compact, false), Some(Ok(vec![0, 1])), "PU 0 then its sibling 4");
        assert_eq!(ctx.choose(&map, 0, 0, 2, Strategy::Scatter, false), Some(Ok(vec![0, 2])), "one PU per socket");
        let pools = [PoolInfo { name: "a".into(), cores: 3, kind: PoolKind::Cpu }, PoolInfo { name: "b".into(), cores: 2, kind: PoolKind::Cpu }];
        assert_eq!(p.check(&pools), Ok(()));
        assert!(p.check(&pools[..1]).unwrap_err().contains("maps 2 pools; the platform has 1"));
        assert!(Placement::new(&node(), Strategy::Compact, vec![Some(vec![0]), Some(vec![0])]).unwrap_err().contains("CPU 0 is in another pool"));
        assert!(Placement::new(&node(), Strategy::Compact, vec![Some(vec![8])]).unwrap_err().contains("CPU 8 is not on the topology"));
    }

    #[test]
    fn a_full_pool_is_no_room_unless_overbooking_which_the_core_map_shares_out() {
        let p = Placement::new(&node(), Strategy::Compact, vec![Some(vec![0, 1, 2, 3])]).unwrap();
        let mut map = CoreMap::new([4]);
        map.hold(0, &[0, 1, 2]);
        let ctx = PlaceCtx { placement: &p, running: &[], predicted: &Flat(1.0) };
        assert_eq!(ctx.choose(&map, 0, 0, 2, Strategy::Compact, false), Some(Err(ChoiceError::NoRoom { needs: 2, free: 1 })));
        assert_eq!(ctx.choose(&map, 0, 0, 2, Strategy::Compact, true), None);
        assert_eq!(ctx.choose(&map, 0, 0, 1, Strategy::Compact, true), Some(Ok(vec![3])), "room enough: placed");
    }

    #[test]
    fn interference_aware_without_levels_weights_the_pair_by_what_the_cpus_share() {
        // Job 0 runs on PU 0; job 1 hurts it: the other socket (weight
        // 0.05) beats PU 0's sibling (1.0) and PU 1 (same L3, 1.0).
        let p = Placement::new(&node(), Strategy::InterferenceAware, vec![Some((0..8).collect())]).unwrap();
        let mut map = CoreMap::new([8]);
        map.hold(0, &[0]);
        let running = [Neighbour { job: 0, pool: 0, cpus: &[0] }];
        let ctx = PlaceCtx { placement: &p, running: &running, predicted: &Flat(1.5) };
        assert_eq!(ctx.choose(&map, 1, 0, 1, Strategy::InterferenceAware, false), Some(Ok(vec![2])));
        assert!((p.cost(&ctx, 1, &[4]) - 1.0).abs() < 1e-12 && (p.cost(&ctx, 1, &[2]) - 0.05).abs() < 1e-12);
        // With nobody hurt, every domain costs nothing: the first, on a
        // core no job uses (PU 1) rather than job 0's sibling (PU 4).
        let ctx = PlaceCtx { predicted: &Flat(1.0), ..ctx };
        assert_eq!(ctx.choose(&map, 1, 0, 1, Strategy::InterferenceAware, false), Some(Ok(vec![1])));
    }
}
