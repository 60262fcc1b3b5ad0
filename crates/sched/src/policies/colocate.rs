//! The nOS-V paper's dynamic co-location (`colocate:rebalance=on`): the
//! static split of `colocate`, and cores that no job of the split uses
//! lent to the jobs squeezed below their thread count.
//!
//! The paper's dynamic strategy is DLB's LeWI: a partition whose program
//! no longer uses its cores lends them to the others and takes them back
//! when it needs them. At process level the only moment a partition
//! frees for good is its job's end, so that is when this policy acts:
//! the survivors are re-pinned (`Decision::Move`, a cpuset or affinity
//! change of the running processes) onto the freed cores, one core at a
//! time to the job with the fewest cores per thread, never beyond a job's
//! thread count (more cores than threads gain it nothing). A job that
//! arrives while cores are lent takes them back: every lender is first
//! moved home (onto the cores it started on, those it still holds), then
//! the free cores are split among the waiting jobs as `colocate` splits
//! them, and what is left is lent again. A running job is only moved when
//! its cores change, so a call with nothing to change decides nothing.
//! LeWI also lends the cores of a partition idle at a barrier; that needs
//! the program's runtime (DLB is linked into it), which a process-level
//! runner does not have.

use std::collections::BTreeMap;

use cosched_engine::policy::Cores;

use cosched_engine::policy::{Decision, Policy, View};
use cosched_model::params::{Kind, Param};
use super::Colocate;
use crate::registry::PolicyEntry;
use crate::JobId;

pub(crate) const COLOCATE: PolicyEntry = PolicyEntry {
    name: "colocate",
    summary: "nOS-V's co-location: the free cores split among the waiting jobs; static, or re-balanced when a job ends (its cores go to the survivors)",
    params: &[Param::new(
        "rebalance",
        Kind::Flag,
        "off",
        "off: the nOS-V paper's static co-location, never moved; on: its dynamic co-location (DLB at job ends), a finished job's cores lent to the squeezed survivors, taken back for a newcomer",
    )],
    make: |p| if p.flag("rebalance") { Ok(Box::new(Rebalancing::new())) } else { Ok(Box::new(Colocate)) },
};

/// `colocate:rebalance=on`: static co-location whose finished partitions'
/// cores go to the survivors.
#[derive(Debug, Clone, Default)]
pub struct Rebalancing {
    /// The cores each job was started on: what it keeps when a newcomer
    /// takes lent cores back.
    home: BTreeMap<JobId, Vec<u32>>,
}

impl Rebalancing {
    pub fn new() -> Rebalancing {
        Rebalancing::default()
    }
}

/// A job whose cores this call decides.
struct Placed {
    id: JobId,
    threads: u32,
    cpus: Vec<u32>,
    /// Started by this call (its cores go into its start, not a move).
    new: bool,
}

impl Policy for Rebalancing {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        self.home.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        for r in view.running {
            // A job found running (a resumed run) is at home where it is.
            self.home.entry(r.id).or_insert_with(|| r.cpus.to_vec());
        }
        let (mut shrink, mut starts, mut grow) = (Vec::new(), Vec::new(), Vec::new());
        for pool in 0..view.pools.len() {
            let running: Vec<_> = view.running.iter().filter(|r| r.pool == pool && !r.suspended && !r.cpus.is_empty()).collect();
            let waiting: Vec<_> = view.queue.iter().filter(|q| q.pool == pool).collect();
            let mut placed: Vec<Placed> = running
                .iter()
                .map(|r| {
                    let mut cpus = r.cpus.to_vec();
                    if !waiting.is_empty() {
                        let home: Vec<u32> = cpus.iter().copied().filter(|c| self.home[&r.id].contains(c)).collect();
                        if !home.is_empty() {
                            cpus = home;
                        }
                    }
                    Placed { id: r.id, threads: r.cores, cpus, new: false }
                })
                .collect();
            let held = |placed: &[Placed], c: u32| placed.iter().any(|p| p.cpus.contains(&c));
            // A suspended job keeps its cores (this policy suspends none;
            // one found suspended is not built on).
            let parked = |c: u32| view.running.iter().any(|r| r.pool == pool && r.suspended && r.cpus.contains(&c));
            let mut free: Vec<u32> = (0..view.pools[pool].cores).filter(|&c| !held(&placed, c) && !parked(c)).collect();
            // `colocate`'s split: each waiting job its share, at least one core.
            for (i, q) in waiting.iter().enumerate() {
                let share = (free.len() / (waiting.len() - i)).max(1).min(q.cores as usize);
                if free.len() < share || share == 0 {
                    break;
                }
                let on: Vec<u32> = free.drain(..share).collect();
                self.home.insert(q.id, on.clone());
                placed.push(Placed { id: q.id, threads: q.cores, cpus: on, new: true });
            }
            // Lend what is left, a core at a time, to the most squeezed job.
            while let Some(&c) = free.first() {
                let most = placed
                    .iter_mut()
                    .filter(|p| (p.cpus.len() as u32) < p.threads)
                    .min_by(|a, b| {
                        let ra = a.cpus.len() as f64 / f64::from(a.threads);
                        let rb = b.cpus.len() as f64 / f64::from(b.threads);
                        ra.total_cmp(&rb)
                    });
                let Some(p) = most else { break };
                p.cpus.push(c);
                p.cpus.sort_unstable();
                free.remove(0);
            }
            for p in placed {
                if p.new {
                    starts.push(Decision::StartOn { job: p.id, pool, cores: Cores::Given(p.cpus), overbook: false });
                    continue;
                }
                let now = running.iter().find(|r| r.id == p.id).expect("placed from running").cpus;
                if now == p.cpus.as_slice() {
                    continue;
                }
                // Shrinks free the cores the starts and the grows take, so
                // they go first (decisions apply in order); a job that gives
                // back a lent core and gets another does both, in two moves.
                let keep: Vec<u32> = now.iter().copied().filter(|c| p.cpus.contains(c)).collect();
                if keep.len() < now.len() && !keep.is_empty() {
                    shrink.push(Decision::Move { job: p.id, cores: keep.clone() });
                }
                if keep.len() < p.cpus.len() {
                    grow.push(Decision::Move { job: p.id, cores: p.cpus });
                }
            }
        }
        shrink.extend(starts);
        shrink.extend(grow);
        shrink
    }

    fn acts_on_running(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use cosched_model::workload::PoolKind;
    use proptest::prelude::*;

    use super::*;
    use cosched_engine::policy::{PoolInfo, QueuedJob, RunningJob};
    use crate::PairTable;

    /// A job the test drives: its threads and where the decisions put it.
    #[derive(Debug, Clone)]
    struct Job {
        id: JobId,
        threads: u32,
        cpus: Vec<u32>,
    }

    /// Applies one call's decisions in order, checking each against the
    /// cores as they stand: a start or the cores a move adds are free then
    /// (the policy never overbooks, not even between two decisions).
    fn apply(out: &[Decision], running: &mut Vec<Job>, queue: &mut Vec<Job>) {
        for d in out {
            let held = |running: &[Job], me: JobId| -> Vec<u32> { running.iter().filter(|j| j.id != me).flat_map(|j| j.cpus.clone()).collect() };
            match d {
                Decision::StartOn { job, cores: Cores::Given(on), overbook: false, .. } => {
                    let busy = held(running, *job);
                    assert!(on.iter().all(|c| !busy.contains(c)), "{job} started on held cores: {out:?}");
                    let k = queue.iter().position(|q| q.id == *job).expect("started from the queue");
                    let mut j = queue.remove(k);
                    j.cpus = on.clone();
                    running.push(j);
                }
                Decision::Move { job, cores } => {
                    let busy = held(running, *job);
                    let j = running.iter_mut().find(|j| j.id == *job).expect("moves a running job");
                    assert!(cores.iter().filter(|c| !j.cpus.contains(c)).all(|c| !busy.contains(c)), "{job} moved onto held cores: {out:?}");
                    j.cpus = cores.clone();
                }
                other => panic!("unexpected decision {other:?}"),
            }
        }
    }

    fn decide(p: &mut Rebalancing, running: &[Job], queue: &[Job], cores: u32) -> Vec<Decision> {
        let pools = [PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }];
        let t = PairTable::new(vec![vec![1.0; 64]; 64]).unwrap();
        let r: Vec<RunningJob> = running
            .iter()
            .map(|j| RunningJob { id: j.id, pool: 0, cores: j.threads, cpus: &j.cpus, suspended: false, suspended_s: 0.0, progress: 0.0, solo: 1.0, program: "p" })
            .collect();
        let q: Vec<QueuedJob> = queue.iter().map(|j| QueuedJob { id: j.id, name: "j", pool: 0, cores: j.threads, solo: 1.0, program: "p", variants: &[] }).collect();
        p.decide(&View { time: 0.0, queue: &q, running: &r, pools: &pools, slowdown: &t })
    }

    proptest! {
        /// Whatever arrives and ends, every running job holds at least one
        /// core and at most its threads, no core has two holders, a free
        /// core stays free only when no running job is squeezed, a second
        /// call with nothing changed decides nothing, and a waiting job
        /// waits only while every running job is at home.
        #[test]
        fn cores_are_never_shared_nor_left_idle_beside_a_squeezed_job(
            ops in prop::collection::vec((any::<bool>(), 1u32..5, 0usize..8), 1..40),
            cores in 1u32..6,
        ) {
            let mut p = Rebalancing::new();
            let (mut running, mut queue): (Vec<Job>, Vec<Job>) = (Vec::new(), Vec::new());
            for (n, (arrive, threads, pick)) in ops.into_iter().enumerate() {
                if arrive || running.is_empty() {
                    queue.push(Job { id: n, threads: threads.min(cores), cpus: Vec::new() });
                } else {
                    running.remove(pick % running.len());
                }
                let out = decide(&mut p, &running, &queue, cores);
                apply(&out, &mut running, &mut queue);
                let mut held: Vec<u32> = running.iter().flat_map(|j| j.cpus.clone()).collect();
                held.sort_unstable();
                let before = held.len();
                held.dedup();
                prop_assert_eq!(held.len(), before, "a core with two holders: {:?}", running);
                for j in &running {
                    prop_assert!(!j.cpus.is_empty() && j.cpus.len() as u32 <= j.threads, "{:?}", j);
                }
                if (held.len() as u32) < cores {
                    prop_assert!(running.iter().all(|j| j.cpus.len() as u32 == j.threads), "a free core beside a squeezed job: {:?}", running);
                }
                if !queue.is_empty() {
                    prop_assert!(held.len() as u32 == cores, "a job waits beside a free core: {:?} {:?}", running, queue);
                }
                prop_assert_eq!(decide(&mut p, &running, &queue, cores), Vec::new(), "a second call changes nothing");
            }
        }
    }

    #[test]
    fn a_newcomer_takes_back_the_lent_core_and_the_move_home_comes_first() {
        // A 2-thread and a 1-thread job on a 3-core pool: shares of 1 core
        // each (3 / 2, then 2 / 1 capped at its one thread), and the core
        // left over lent to the squeezed one.
        let mut p = Rebalancing::new();
        let (mut running, mut queue) = (Vec::new(), vec![Job { id: 0, threads: 2, cpus: vec![] }, Job { id: 1, threads: 1, cpus: vec![] }]);
        let out = decide(&mut p, &running, &queue, 3);
        apply(&out, &mut running, &mut queue);
        assert_eq!(running.iter().map(|j| j.cpus.clone()).collect::<Vec<_>>(), [vec![0, 2], vec![1]]);
        // A one-thread job arrives: a gives core 2 back (a move home
        // first), c starts on it; nothing is left to lend.
        queue.push(Job { id: 2, threads: 1, cpus: vec![] });
        let out = decide(&mut p, &running, &queue, 3);
        assert_eq!(
            out,
            [
                Decision::Move { job: 0, cores: vec![0] },
                Decision::StartOn { job: 2, pool: 0, cores: Cores::Given(vec![2]), overbook: false },
            ]
        );
    }
}
