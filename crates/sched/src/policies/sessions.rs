//! The ParaStation paper's allocation-internal policies (ParaStation psmgmt): what
//! happens when a session arrives while earlier ones hold every core of
//! the allocation (here: of its pool).
//!
//! All four start the queue's sessions in arrival order, each on free
//! cores when there are enough (compact, or `spread`); they differ when
//! there are not:
//! - `wait`: the session waits for cores to free up (noplan's rule);
//! - `surpass`: the newest session suspends running ones (latest first)
//!   until its cores are free; a suspended session is resumed as soon as
//!   every core it holds is free again, i.e. when its successor ended;
//! - `overbook`: the session starts on busy cores and the OS time-shares
//!   them; with `pin=off` it may run on every core of the pool (the
//!   processes "flow freely");
//! - `sidestep`: running sessions are re-pinned off the cores the new one
//!   gets (onto their remaining cores, squeezing their threads), so only
//!   their cores are overbooked; each is moved back onto its own cores
//!   once they are free again.
//!
//! The `spread` option places the new session's threads spread over the
//! pool's free cores instead of compactly; on a pool with no free core it
//! changes nothing (this node model has no domains, such as the paper's
//! nodes, to spread across).

use std::collections::BTreeMap;

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;

use cosched_engine::policy::{Decision, Policy, QueuedJob, View};
use cosched_model::params::{Kind, Param};
use crate::registry::PolicyEntry;
use crate::JobId;

/// The cores running jobs hold, as the engine's map will be once the
/// decisions so far are applied.
fn map_of(view: &View) -> CoreMap {
    let mut m = CoreMap::new(view.pools.iter().map(|p| p.cores));
    for r in view.running.iter().filter(|r| !r.suspended) {
        m.hold(r.pool, r.cpus);
    }
    m
}

fn placement(spread: bool) -> Cores {
    if spread {
        Cores::Spread
    } else {
        Cores::Compact
    }
}

/// The head of each pool's queue: sessions start in arrival order.
fn heads<'a>(view: &View<'a>) -> Vec<QueuedJob<'a>> {
    (0..view.pools.len()).filter_map(|p| view.queue.iter().find(|q| q.pool == p).copied()).collect()
}

/// Starts the head of each pool's queue when its cores are free; `busy`
/// decides for a head that does not fit, with the map as it stands.
fn sessions(
    view: &View,
    spread: bool,
    out: &mut Vec<Decision>,
    map: &mut CoreMap,
    mut busy: impl FnMut(&QueuedJob, &mut CoreMap, &mut Vec<Decision>),
) {
    for q in heads(view) {
        if map.free(q.pool) >= q.cores {
            let how = placement(spread);
            let cpus = map.choose(q.pool, q.cores, &how, false).expect("enough free cores");
            map.hold(q.pool, &cpus);
            out.push(Decision::StartOn { job: q.id, pool: q.pool, cores: how, overbook: false });
        } else {
            busy(&q, map, out);
        }
    }
}

pub(crate) const WAIT: PolicyEntry = PolicyEntry {
    name: "wait",
    summary: "ParaStation (Clauss et al.): sessions start in arrival order on free cores; one that finds none waits for them",
    params: &[],
    make: |_| Ok(Box::new(Wait)),
};

/// `wait`: a session that finds no free cores waits for them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wait;

impl Policy for Wait {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut out, mut map) = (Vec::new(), map_of(view));
        sessions(view, false, &mut out, &mut map, |_, _, _| {});
        out
    }
}

pub(crate) const SURPASS: PolicyEntry = PolicyEntry {
    name: "surpass",
    summary: "ParaStation (Clauss et al.): a session that finds no free cores suspends the running ones (latest first) until it ends",
    params: &[],
    make: |_| Ok(Box::new(Surpass::default())),
};

/// `surpass`: the newest session suspends earlier ones until it ends.
#[derive(Debug, Clone, Default)]
pub struct Surpass {
    /// Jobs this policy suspended, in the order it did.
    suspended: Vec<JobId>,
}

impl Policy for Surpass {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut out, mut map) = (Vec::new(), map_of(view));
        // Jobs that ended or were resumed elsewhere are forgotten.
        self.suspended.retain(|j| view.running.iter().any(|r| r.id == *j && r.suspended));
        let mut newly = Vec::new();
        sessions(view, false, &mut out, &mut map, |q, map, out| {
            // Latest started first: the running jobs of the pool by
            // decreasing id (sessions are numbered in arrival order).
            let mut victims: Vec<_> = view.running.iter().filter(|r| r.pool == q.pool && !r.suspended).collect();
            victims.sort_by_key(|r| std::cmp::Reverse(r.id));
            for r in victims {
                if map.free(q.pool) >= q.cores {
                    break;
                }
                map.release(r.pool, r.cpus);
                out.push(Decision::Suspend { job: r.id });
                newly.push(r.id);
            }
            if map.free(q.pool) >= q.cores {
                let cpus = map.choose(q.pool, q.cores, &Cores::Compact, false).expect("freed above");
                map.hold(q.pool, &cpus);
                out.push(Decision::StartOn { job: q.id, pool: q.pool, cores: Cores::Compact, overbook: false });
            }
        });
        self.suspended.extend(newly);
        // Resume the latest suspended first, once all its cores are free.
        if out.is_empty() {
            for &j in self.suspended.iter().rev() {
                let Some(r) = view.running.iter().find(|r| r.id == j) else { continue };
                if r.cpus.iter().all(|&c| map.holders(r.pool)[c as usize] == 0) {
                    map.hold(r.pool, r.cpus);
                    out.push(Decision::Resume { job: j });
                }
            }
        }
        out
    }

    fn acts_on_running(&self) -> bool {
        true
    }
}

pub(crate) const OVERBOOK: PolicyEntry = PolicyEntry {
    name: "overbook",
    summary: "ParaStation (Clauss et al.): a session that finds no free cores starts on busy ones; the OS time-shares them",
    params: &[
        Param::new("pin", Kind::Flag, "on", "on: pinned to the chosen cores; off: free to run on every core of the pool"),
        Param::new("spread", Kind::Flag, "off", "spread the session over the pool's free cores instead of compactly"),
    ],
    make: |p| Ok(Box::new(Overbook { pin: p.flag("pin"), spread: p.flag("spread") })),
};

/// `overbook`: a session that finds no free cores starts on busy ones.
#[derive(Debug, Clone, Copy)]
pub struct Overbook {
    /// Pinned to cores (`on`), or free to run on every core of the pool.
    pub pin: bool,
    pub spread: bool,
}

impl Policy for Overbook {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut out, mut map) = (Vec::new(), map_of(view));
        let (pin, spread) = (self.pin, self.spread);
        sessions(view, spread, &mut out, &mut map, |q, map, out| {
            let how = if pin { placement(spread) } else { Cores::Given((0..view.pools[q.pool].cores).collect()) };
            let cpus = map.choose(q.pool, q.cores, &how, true).expect("overbooking fits any job its pool holds");
            map.hold(q.pool, &cpus);
            out.push(Decision::StartOn { job: q.id, pool: q.pool, cores: how, overbook: true });
        });
        out
    }

    fn acts_on_running(&self) -> bool {
        true
    }
}

pub(crate) const SIDESTEP: PolicyEntry = PolicyEntry {
    name: "sidestep",
    summary: "ParaStation (Clauss et al.): running sessions are re-pinned off the new one's cores, so only theirs are overbooked",
    params: &[Param::new("spread", Kind::Flag, "off", "spread the session over the pool's free cores instead of compactly")],
    make: |p| Ok(Box::new(Sidestep::new(p.flag("spread")))),
};

/// `sidestep`: running sessions make room for the new one by moving onto
/// their other cores.
#[derive(Debug, Clone, Default)]
pub struct Sidestep {
    pub spread: bool,
    /// The cores each moved job held before it sidestepped.
    home: BTreeMap<JobId, Vec<u32>>,
}

impl Sidestep {
    pub fn new(spread: bool) -> Sidestep {
        Sidestep { spread, home: BTreeMap::new() }
    }
}

impl Policy for Sidestep {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let (mut out, mut map) = (Vec::new(), map_of(view));
        self.home.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        // Where each running job is once this call's moves apply.
        let mut now_on: BTreeMap<JobId, Vec<u32>> = view.running.iter().map(|r| (r.id, r.cpus.to_vec())).collect();
        let spread = self.spread;
        let home = &mut self.home;
        sessions(view, spread, &mut out, &mut map, |q, map, out| {
            let pool_cores = view.pools[q.pool].cores;
            let mine = map.choose(q.pool, q.cores, &placement(spread), true).expect("overbooking fits any job its pool holds");
            for r in view.running.iter().filter(|r| r.pool == q.pool && !r.suspended) {
                let on = &now_on[&r.id];
                if !on.iter().any(|c| mine.contains(c)) {
                    continue;
                }
                let mut rest: Vec<u32> = on.iter().copied().filter(|c| !mine.contains(c)).collect();
                if rest.is_empty() {
                    rest = (0..pool_cores).filter(|c| !mine.contains(c)).collect();
                }
                if rest.is_empty() {
                    // The new session takes the whole pool: nothing to step
                    // aside to, so this one shares its cores.
                    continue;
                }
                home.entry(r.id).or_insert_with(|| r.cpus.to_vec());
                map.release(q.pool, on);
                map.hold(q.pool, &rest);
                out.push(Decision::Move { job: r.id, cores: rest.clone() });
                now_on.insert(r.id, rest);
            }
            map.hold(q.pool, &mine);
            out.push(Decision::StartOn { job: q.id, pool: q.pool, cores: Cores::Given(mine), overbook: true });
        });
        // Back home once no other job holds any of its own cores.
        if out.is_empty() {
            let back: Vec<JobId> = home.keys().copied().collect();
            for j in back {
                let Some(r) = view.running.iter().find(|r| r.id == j) else { continue };
                let on = &now_on[&j];
                let own = &home[&j];
                if r.suspended || on == own {
                    continue;
                }
                map.release(r.pool, on);
                if own.iter().all(|&c| map.holders(r.pool)[c as usize] == 0) {
                    map.hold(r.pool, own);
                    out.push(Decision::Move { job: j, cores: own.clone() });
                    home.remove(&j);
                } else {
                    map.hold(r.pool, on);
                }
            }
        }
        out
    }

    fn acts_on_running(&self) -> bool {
        true
    }
}
