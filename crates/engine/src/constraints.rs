//! What a site asks of co-location beyond cores: exclusive jobs, sharing
//! scopes, memory and accelerators (GRES) per node. Pure and I/O-free, so
//! every engine that knows such demands (the Slurm engine reads them from
//! the queue) checks them alike, beside the one validation of decisions
//! ([`check_decision`](crate::validate::check_decision)): see
//! [`check_on_site`].
//!
//! A job without demands ([`Demand::default`]) is admissible wherever its
//! cores fit, so engines that carry no constraints (the node runner, the
//! simulator) behave as they always did.

use std::fmt;

use crate::cores::CoreMap;
use crate::platform::SimJob;
use crate::policy::Decision;
use crate::validate::{check_decision, Act, JobState, Refusal};
use crate::JobId;

/// What a job demands of each node it runs on, beyond its cores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Demand {
    /// Megabytes of the node's memory it holds (0: none counted).
    pub mem_mb: u64,
    /// It never shares a node: only admissible on an empty node, and
    /// nothing is admissible beside it.
    pub exclusive: bool,
    /// Its sharing scope (a user, account or QOS name; empty when jobs of
    /// any scope may share): jobs of different scopes never share a node.
    pub scope: String,
    /// Accelerator units per kind (`gpu`), per node.
    pub gres: Vec<(String, u32)>,
}

/// What a node offers beyond its cores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// Its memory, megabytes (`RealMemory`).
    pub mem_mb: u64,
    /// Its accelerator pools: units per kind.
    pub gres: Vec<(String, u32)>,
}

/// Why a job is not admissible on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// An exclusive job on a node where `beside` jobs are placed.
    Exclusive { beside: usize },
    /// A job beside `other`, which is exclusive.
    BesideExclusive { other: JobId },
    /// A job of scope `scope` beside `other`, of scope `theirs`.
    Scope { scope: String, other: JobId, theirs: String },
    Memory { needs: u64, free: u64 },
    Gres { kind: String, needs: u32, free: u32 },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Exclusive { beside } => write!(f, "it is exclusive and the node holds {beside} job(s)"),
            Why::BesideExclusive { other } => write!(f, "job {other} on the node is exclusive"),
            Why::Scope { scope, other, theirs } => {
                write!(f, "its sharing scope `{scope}` is not that of job {other} on the node (`{theirs}`)")
            }
            Why::Memory { needs, free } => write!(f, "it needs {needs} MB of memory; the node has {free} MB free"),
            Why::Gres { kind, needs, free } => write!(f, "it needs {needs} {kind}; the node has {free} free"),
        }
    }
}

fn units(list: &[(String, u32)], kind: &str) -> u32 {
    list.iter().filter(|(k, _)| k == kind).map(|(_, n)| *n).sum()
}

/// Whether `job` (demanding `demand`) may join the jobs `holding` a node
/// that offers `offer`. Suspended jobs hold their memory, accelerators and
/// scope as running ones do: their processes stay on the node.
pub fn admissible(demand: &Demand, offer: &Offer, holding: &[(JobId, &Demand)]) -> Result<(), Why> {
    if demand.exclusive && !holding.is_empty() {
        return Err(Why::Exclusive { beside: holding.len() });
    }
    if let Some((other, _)) = holding.iter().find(|(_, d)| d.exclusive) {
        return Err(Why::BesideExclusive { other: *other });
    }
    if let Some((other, d)) = holding.iter().find(|(_, d)| d.scope != demand.scope) {
        return Err(Why::Scope { scope: demand.scope.clone(), other: *other, theirs: d.scope.clone() });
    }
    if demand.mem_mb > 0 {
        let used: u64 = holding.iter().map(|(_, d)| d.mem_mb).sum();
        let free = offer.mem_mb.saturating_sub(used);
        if demand.mem_mb > free {
            return Err(Why::Memory { needs: demand.mem_mb, free });
        }
    }
    for (kind, needs) in &demand.gres {
        let used: u32 = holding.iter().map(|(_, d)| units(&d.gres, kind)).sum();
        let free = units(&offer.gres, kind).saturating_sub(used);
        if *needs > free {
            return Err(Why::Gres { kind: kind.clone(), needs: *needs, free });
        }
    }
    Ok(())
}

/// Whether a job could ever run on a node offering `offer`, alone.
pub fn fits_empty(demand: &Demand, offer: &Offer) -> Result<(), Why> {
    admissible(demand, offer, &[])
}

/// A node with constraints as [`check_on_site`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    pub offer: &'a Offer,
    /// Each job's demand, by [`JobId`].
    pub demands: &'a [Demand],
    /// Jobs placed on the node, running or suspended.
    pub holding: &'a [JobId],
}

/// A decision refused by the validation or by the site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Decision(Refusal),
    Site { job: JobId, why: Why },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Decision(r) => r.fmt(f),
            Refused::Site { job, why } => write!(f, "job {job} is not admissible on the node: {why}"),
        }
    }
}

/// [`check_decision`], then the site's constraints on a start: the one
/// check of engines that carry constraints.
pub fn check_on_site(
    decision: &Decision,
    jobs: &[SimJob],
    state: impl Fn(JobId) -> JobState,
    map: &CoreMap,
    site: &Site,
) -> Result<Act, Refused> {
    let act = check_decision(decision, jobs, state, map).map_err(Refused::Decision)?;
    if let Act::Start { job, .. } = &act {
        let none = Demand::default();
        let demand_of = |j: JobId| site.demands.get(j).unwrap_or(&none);
        let holding: Vec<(JobId, &Demand)> = site.holding.iter().filter(|&&h| h != *job).map(|&h| (h, demand_of(h))).collect();
        admissible(demand_of(*job), site.offer, &holding).map_err(|why| Refused::Site { job: *job, why })?;
    }
    Ok(act)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(mem_mb: u64, exclusive: bool, scope: &str, gpus: u32) -> Demand {
        let gres = if gpus > 0 { vec![("gpu".to_string(), gpus)] } else { vec![] };
        Demand { mem_mb, exclusive, scope: scope.into(), gres }
    }

    fn offer(mem_mb: u64, gpus: u32) -> Offer {
        Offer { mem_mb, gres: vec![("gpu".into(), gpus)] }
    }

    #[test]
    fn a_job_without_demands_is_admissible_beside_any_job_without_demands() {
        let none = Demand::default();
        assert_eq!(admissible(&none, &Offer::default(), &[(0, &none), (1, &none)]), Ok(()));
    }

    #[test]
    fn an_exclusive_job_runs_alone_and_nothing_joins_it() {
        let (x, plain) = (d(0, true, "", 0), Demand::default());
        assert_eq!(admissible(&x, &Offer::default(), &[]), Ok(()));
        assert_eq!(admissible(&x, &Offer::default(), &[(3, &plain)]), Err(Why::Exclusive { beside: 1 }));
        let e = admissible(&plain, &Offer::default(), &[(3, &x)]).unwrap_err();
        assert_eq!(e.to_string(), "job 3 on the node is exclusive");
    }

    #[test]
    fn jobs_of_two_scopes_never_share_and_memory_and_gpus_are_counted() {
        let e = admissible(&d(0, false, "alice", 0), &Offer::default(), &[(1, &d(0, false, "bob", 0))]).unwrap_err();
        assert_eq!(e.to_string(), "its sharing scope `alice` is not that of job 1 on the node (`bob`)");
        let o = offer(1000, 2);
        let held = d(600, false, "", 1);
        assert_eq!(admissible(&d(400, false, "", 1), &o, &[(0, &held)]), Ok(()));
        assert_eq!(admissible(&d(401, false, "", 0), &o, &[(0, &held)]), Err(Why::Memory { needs: 401, free: 400 }));
        let e = admissible(&d(0, false, "", 2), &o, &[(0, &held)]).unwrap_err();
        assert_eq!(e.to_string(), "it needs 2 gpu; the node has 1 free");
        assert_eq!(fits_empty(&d(1001, false, "", 0), &o), Err(Why::Memory { needs: 1001, free: 1000 }));
    }

    #[test]
    fn check_on_site_refuses_a_start_the_site_forbids_and_passes_other_decisions() {
        let job = |n: &str| SimJob { name: n.into(), arrival: 0.0, solo: 1.0, pool: 0, cores: 1, program: n.into(), variants: vec![] };
        let jobs = [job("a"), job("b")];
        let demands = [d(0, true, "", 0), Demand::default()];
        let o = Offer::default();
        let mut map = CoreMap::new([4]);
        map.hold(0, &[0]);
        let site = Site { offer: &o, demands: &demands, holding: &[0] };
        let st = |j: JobId| if j == 0 { JobState::Running } else { JobState::Waiting };
        let r = check_on_site(&Decision::Start { job: 1, pool: 0 }, &jobs, st, &map, &site);
        assert_eq!(r, Err(Refused::Site { job: 1, why: Why::BesideExclusive { other: 0 } }));
        assert_eq!(check_on_site(&Decision::Suspend { job: 0 }, &jobs, st, &map, &site), Ok(Act::Suspend { job: 0 }));
        let r = check_on_site(&Decision::Start { job: 0, pool: 0 }, &jobs, st, &map, &site);
        assert_eq!(r, Err(Refused::Decision(Refusal::NotWaiting { job: 0 })));
    }

    fn demand() -> impl Strategy<Value = Demand> {
        (0u64..700, prop::bool::weighted(0.2), prop::sample::select(vec!["", "alice", "bob"]), 0u32..3)
            .prop_map(|(m, x, s, g)| d(m, x, s, g))
    }

    proptest! {
        /// Whatever a policy asks, in whatever order, the starts the check
        /// accepts never exceed the node's memory or accelerators, never mix
        /// scopes and never put anything beside an exclusive job.
        #[test]
        fn no_accepted_sequence_oversubscribes_mixes_scopes_or_shares_an_exclusive_job(
            demands in prop::collection::vec(demand(), 1..12),
            mem in 0u64..2000,
            gpus in 0u32..4,
            order in prop::collection::vec((0usize..12, prop::bool::weighted(0.2)), 0..40),
        ) {
            let jobs: Vec<SimJob> = (0..demands.len())
                .map(|i| SimJob { name: format!("j{i}"), arrival: 0.0, solo: 1.0, pool: 0, cores: 1, program: "p".into(), variants: vec![] })
                .collect();
            let o = offer(mem, gpus);
            let mut placed: Vec<JobId> = Vec::new();
            let mut done: Vec<JobId> = Vec::new();
            for (pick, end) in order {
                let job = pick % jobs.len();
                if end {
                    // A job ends: it leaves the node for good.
                    if let Some(k) = placed.iter().position(|&p| p == job) {
                        placed.remove(k);
                        done.push(job);
                    }
                    continue;
                }
                let map = CoreMap::new([64]);
                let st = |j: JobId| if placed.contains(&j) { JobState::Running } else if done.contains(&j) { JobState::Elsewhere } else { JobState::Waiting };
                let site = Site { offer: &o, demands: &demands, holding: &placed };
                if check_on_site(&Decision::Start { job, pool: 0 }, &jobs, st, &map, &site).is_ok() {
                    placed.push(job);
                }
                let on: Vec<&Demand> = placed.iter().map(|&p| &demands[p]).collect();
                prop_assert!(on.iter().map(|d| d.mem_mb).sum::<u64>() <= mem);
                prop_assert!(on.iter().map(|d| units(&d.gres, "gpu")).sum::<u32>() <= gpus);
                prop_assert!(on.windows(2).all(|w| w[0].scope == w[1].scope));
                prop_assert!(on.len() <= 1 || on.iter().all(|d| !d.exclusive));
            }
        }
    }
}
