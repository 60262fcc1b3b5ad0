//! The nOS-V paper's co-execution at process level: jobs take turns on the cores
//! with a time quantum, and the static co-location baseline.
//!
//! `timeshare` starts every job as it arrives and lets them take turns: the
//! job whose turn it is runs, with every other job whose cores do not
//! overlap what already runs; the rest are suspended. After each quantum
//! the turn passes to the next job in arrival order. With `affinity=strict`
//! a job keeps the cores it was started on (compact, busy ones shared),
//! so jobs on disjoint cores run side by side; with `preferred` it may run
//! on every core of its pool, so one job at a time has the node. A job
//! alone is never suspended and the policy sleeps until something changes.
//! nOS-V switches tasks inside one scheduler; here a switch is a freeze
//! and a thaw of whole processes, which costs milliseconds, so the 20 ms
//! default quantum is the nOS-V paper's value but the overhead is the node's.
//!
//! Priorities (the nOS-V paper's per-application priorities, the workload's
//! `priority`) weigh the turns: a job of priority p holds its turn for p
//! quanta, so over a round the jobs share the node in proportion to their
//! priorities, as an OS weighs processes by their priority. Longer turns
//! rather than p separate turns: the share is the same and a switch (a
//! freeze and a thaw) costs the node milliseconds, so fewer is better.
//! Strict precedence (the highest priority runs until it ends) is what
//! the quantum exists to prevent in nOS-V: no job starves. A turn whose
//! job ends early is not inherited: the next job gets a whole turn of its own.
//!
//! `colocate` splits the free cores once among the waiting jobs (each
//! gets its share, at least one core, its threads squeezed onto them) and
//! never moves them: the nOS-V paper's static co-location.

use std::collections::BTreeMap;
use std::ops::Bound;

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;

use cosched_engine::policy::{Decision, Policy, View};
use cosched_model::params::{Kind, Param, Range};
use crate::registry::PolicyEntry;
use crate::JobId;

pub(crate) const TIMESHARE: PolicyEntry = PolicyEntry {
    name: "timeshare",
    summary: "nOS-V's co-execution at process level: every job starts at once and they take turns on the cores, a quantum each (freeze/thaw)",
    params: &[
        Param::new(
            "quantum",
            // A floor: a quantum of 1e-9 s never ends a run (crate::MIN_WAIT_S).
            Kind::Float(Range { lo: Bound::Included(crate::MIN_WAIT_S), hi: Bound::Included(cosched_model::workload::limits::MAX_SECONDS) }),
            "0.02",
            "seconds a job's turn lasts per unit of its priority (workload `priority`, default 1); at least 0.001",
        ),
        Param::new(
            "affinity",
            Kind::Word(&["preferred", "strict"]),
            "preferred",
            "preferred: a job's turn gives it every core of its pool; strict: it keeps its own cores and jobs on other cores run beside it",
        ),
    ],
    make: |p| Ok(Box::new(Timeshare::new(p.float("quantum"), p.word("affinity") == "strict"))),
};

/// `timeshare`: turns of `quantum` seconds.
#[derive(Debug, Clone)]
pub struct Timeshare {
    quantum: f64,
    strict: bool,
    /// Jobs in turn order; the first one has the turn.
    order: Vec<JobId>,
    /// When the turn passes next.
    next: Option<f64>,
    /// The job whose turn `next` ends.
    turn_of: Option<JobId>,
    /// Priorities by job name (`Policy::set_priorities`), and by job once
    /// seen in the queue.
    by_name: BTreeMap<String, u32>,
    priority: BTreeMap<JobId, u32>,
}

impl Timeshare {
    pub fn new(quantum: f64, strict: bool) -> Timeshare {
        Timeshare { quantum, strict, order: Vec::new(), next: None, turn_of: None, by_name: BTreeMap::new(), priority: BTreeMap::new() }
    }

    /// How long `job`'s turn lasts: a quantum per unit of its priority
    /// (1 for a job never seen waiting, such as one a resumed run found running).
    fn turn(&self, job: JobId) -> f64 {
        self.quantum * f64::from(self.priority.get(&job).copied().unwrap_or(1))
    }
}

impl Policy for Timeshare {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let mut out = Vec::new();
        let mut map = CoreMap::new(view.pools.iter().map(|p| p.cores));
        for r in view.running.iter().filter(|r| !r.suspended) {
            map.hold(r.pool, r.cpus);
        }
        // Where each job is, once this call's starts apply.
        let mut cpus: Vec<(JobId, usize, Vec<u32>, bool)> =
            view.running.iter().map(|r| (r.id, r.pool, r.cpus.to_vec(), r.suspended)).collect();
        for q in view.queue {
            self.priority.insert(q.id, self.by_name.get(q.name).copied().unwrap_or(1));
            let how = if self.strict { Cores::Compact } else { Cores::Given((0..view.pools[q.pool].cores).collect()) };
            let on = map.choose(q.pool, q.cores, &how, true).expect("overbooking fits any job its pool holds");
            map.hold(q.pool, &on);
            out.push(Decision::StartOn { job: q.id, pool: q.pool, cores: how, overbook: true });
            cpus.push((q.id, q.pool, on, false));
        }
        self.order.retain(|j| cpus.iter().any(|c| c.0 == *j));
        for c in &cpus {
            if !self.order.contains(&c.0) {
                self.order.push(c.0);
            }
        }
        if self.order.len() <= 1 {
            self.next = None;
            self.turn_of = None;
        } else {
            let expired = self.next.is_some_and(|t| view.time + 1e-12 >= t);
            if expired && self.turn_of == Some(self.order[0]) {
                self.order.rotate_left(1);
            }
            if expired || self.turn_of != Some(self.order[0]) {
                self.turn_of = Some(self.order[0]);
                self.next = Some(view.time + self.turn(self.order[0]));
            }
        }
        // Who runs: the turn's job, then every later one that fits beside.
        let mut taken = CoreMap::new(view.pools.iter().map(|p| p.cores));
        for &j in &self.order {
            let (_, pool, on, suspended) = cpus.iter().find(|c| c.0 == j).expect("ordered jobs are placed");
            let fits = on.iter().all(|&c| taken.holders(*pool)[c as usize] == 0);
            if fits {
                taken.hold(*pool, on);
                if *suspended {
                    out.push(Decision::Resume { job: j });
                }
            } else if !*suspended {
                out.push(Decision::Suspend { job: j });
            }
        }
        out
    }

    fn acts_on_running(&self) -> bool {
        true
    }

    fn wake_at(&self) -> Option<f64> {
        self.next
    }

    fn set_priorities(&mut self, by_name: &BTreeMap<String, u32>) {
        self.by_name = by_name.clone();
    }
}

/// `colocate`: the free cores split once among the waiting jobs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Colocate;

impl Policy for Colocate {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let mut out = Vec::new();
        for pool in 0..view.pools.len() {
            let mut free: Vec<u32> = view.holders(pool).iter().enumerate().filter(|(_, &h)| h == 0).map(|(c, _)| c as u32).collect();
            let waiting: Vec<_> = view.queue.iter().filter(|q| q.pool == pool).collect();
            for (i, q) in waiting.iter().enumerate() {
                let share = (free.len() / (waiting.len() - i)).max(1).min(q.cores as usize);
                if free.len() < share || share == 0 {
                    break;
                }
                let on: Vec<u32> = free.drain(..share).collect();
                out.push(Decision::StartOn { job: q.id, pool, cores: Cores::Given(on), overbook: false });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use cosched_model::metrics::job_times;
    use cosched_model::workload::PoolKind;

    use super::*;
    use cosched_engine::run_node;
    use crate::{simulate, PairTable, Platform, PoolInfo, SimJob, VirtualNode};

    /// Two jobs of 1 s that each want both cores of a 2-core pool, `a`
    /// first, turns of 0.25 s per unit of priority: (finish, suspended)
    /// per job from the simulator, checked against the runner's loop over
    /// the virtual node (both engines' loops).
    fn two_wide(pa: u32, pb: u32) -> Vec<(f64, f64)> {
        let p = Platform { pools: vec![PoolInfo { name: "host".into(), cores: 2, kind: PoolKind::Cpu }] };
        let j = |n: &str| SimJob { name: n.into(), arrival: 0.0, solo: 1.0, pool: 0, cores: 2, program: n.into(), variants: vec![] };
        let jobs = [j("a"), j("b")];
        let t = PairTable::new(vec![vec![1.0, 1.0], vec![1.0, 1.0]]).unwrap();
        let policy = || {
            let mut ts = Timeshare::new(0.25, false);
            ts.set_priorities(&BTreeMap::from([("a".to_string(), pa), ("b".to_string(), pb)]));
            ts
        };
        let sim = job_times(&simulate(&p, &jobs, &t, &mut policy()).unwrap(), 2).unwrap();
        let real = run_node(&p, &jobs, &t, &mut policy(), &mut VirtualNode::new(&jobs, &t), &[]).unwrap();
        let real = job_times(&real.events, 2).unwrap();
        for (s, r) in sim.iter().zip(&real) {
            assert!((s.finish - r.finish).abs() < 1e-9 && (s.suspended - r.suspended).abs() < 1e-9, "{sim:?} vs {real:?}");
        }
        sim.iter().map(|x| (x.finish, x.suspended)).collect()
    }

    fn close(x: &[(f64, f64)], want: [(f64, f64); 2]) -> bool {
        x.iter().zip(want).all(|(a, b)| (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9)
    }

    #[test]
    fn a_job_of_priority_3_holds_its_turn_3_quanta_and_gets_3_of_4_shares() {
        // a (3): 0-.75, b (1): .75-1, a: 1-1.25 (done, 0.25 of a 0.75 s
        // turn), b alone 1.25-2 (done). In the first round a ran 0.75 s
        // and b 0.25 s: shares 3:1.
        let x = two_wide(3, 1);
        assert!(close(&x, [(1.25, 0.25), (2.0, 1.0)]), "{x:?}");
        // b (3) second in turn order: a .0-.25, b .25-1, a 1-1.25, b
        // 1.25-1.5 (done), a alone 1.5-2: the later job of higher priority
        // finishes first.
        let x = two_wide(1, 3);
        assert!(close(&x, [(2.0, 1.0), (1.5, 0.5)]), "{x:?}");
    }

    #[test]
    fn equal_priorities_take_single_quantum_turns_as_without_priorities() {
        // Turns of 0.25 s alternate: a ends at 1.75 in its own turn, b at 2.
        assert!(close(&two_wide(1, 1), [(1.75, 0.75), (2.0, 1.0)]));
        assert!(close(&two_wide(2, 2), [(1.5, 0.5), (2.0, 1.0)]));
    }
}
