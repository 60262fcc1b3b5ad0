//! Seed 004's co-execution at process level: jobs take turns on the cores
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
//! default quantum is seed 004's value but the overhead is the node's.
//!
//! `colocate` splits the free cores once among the waiting jobs (each
//! gets its share, at least one core, its threads squeezed onto them) and
//! never moves them: seed 004's static co-location.

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;

use crate::policy::{Decision, Policy, View};
use crate::JobId;

/// `timeshare`: turns of `quantum` seconds.
#[derive(Debug, Clone)]
pub struct Timeshare {
    quantum: f64,
    strict: bool,
    /// Jobs in turn order; the first one has the turn.
    order: Vec<JobId>,
    /// When the turn passes next.
    next: Option<f64>,
}

impl Timeshare {
    pub fn new(quantum: f64, strict: bool) -> Timeshare {
        Timeshare { quantum, strict, order: Vec::new(), next: None }
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
        } else {
            match self.next {
                Some(t) if view.time + 1e-12 >= t => {
                    self.order.rotate_left(1);
                    self.next = Some(view.time + self.quantum);
                }
                None => self.next = Some(view.time + self.quantum),
                _ => {}
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
