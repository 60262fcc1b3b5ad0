//! `react`: a wrapper that acts on what a run sees (issue 38). Around any
//! registered policy, it watches each running job's online slowdown
//! estimate (`SlowdownSource::online`, which the run loop fills from the
//! jobs' progress); when a job's estimate passes the threshold with its
//! whole interval, it asks the engine to suspend the newest job of the
//! node (the co-runner that came last), to move it onto free cores, or
//! nothing, and lets the inner policy start what fits on the freed cores
//! (the run has learned the pair by then, so the inner policy's source no
//! longer calls it harmless). A job suspended for harm resumes once every
//! job it was suspended beside has ended or been suspended, on free cores.
//! A job alone on its node is never suspended: there is no one to blame.
//!
//! Harm is blamed on a co-runner only while it looks like interference. A
//! job whose estimate passes the threshold while it runs alone, or beside a
//! co-runner of another program than the one already suspended for it, is
//! slow on its own (a busy host, a solo reference taken in a quicker
//! moment): it is left out from then on, and the jobs held for it resume.
//! Without this, one slow job emptied the other core job after job: on
//! 2026-11-28 a flops job ran 2.46x its solo time on a noisy node and the
//! wrapper suspended three co-runners of two programs in turn, leaving a
//! core idle for 3.5 s.

use std::collections::{BTreeMap, BTreeSet};

use cosched_engine::online::MIN_SEGMENTS;

use cosched_engine::policy::{Decision, JobOutcome, Policy, View};
use crate::JobId;

/// What `react` does to the newest job of a harmful co-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Suspend,
    /// Re-pin it onto free cores of its pool when there are enough,
    /// else leave it.
    Move,
    /// Only watch (estimates still reach the trace and the store).
    Nothing,
}

impl Action {
    pub const NAMES: &'static [&'static str] = &["suspend", "move", "nothing"];

    pub fn by_name(name: &str) -> Option<Action> {
        match name {
            "suspend" => Some(Action::Suspend),
            "move" => Some(Action::Move),
            "nothing" => Some(Action::Nothing),
            _ => None,
        }
    }
}

pub struct React {
    inner: Box<dyn Policy>,
    threshold: f64,
    action: Action,
    /// When each job was first seen running, and in which order, so "the
    /// newest" does not depend on an engine's listing order.
    seen: BTreeMap<JobId, (f64, u64)>,
    next_seq: u64,
    /// Jobs this wrapper suspended, with the jobs they hurt or were hurt by.
    held: BTreeMap<JobId, Vec<JobId>>,
    /// Jobs moved once already (a move is not repeated for the same job).
    moved: Vec<JobId>,
    /// Each harmed job and the program of the co-runner blamed for it.
    blamed: BTreeMap<JobId, String>,
    /// Jobs slow on their own: never taken as harmed again.
    exempt: BTreeSet<JobId>,
}

impl React {
    pub fn new(inner: Box<dyn Policy>, threshold: f64, action: Action) -> React {
        React {
            inner,
            threshold,
            action,
            seen: BTreeMap::new(),
            next_seq: 0,
            held: BTreeMap::new(),
            moved: Vec::new(),
            blamed: BTreeMap::new(),
            exempt: BTreeSet::new(),
        }
    }

    fn resumes(&mut self, view: &View) -> Vec<Decision> {
        let mut out = Vec::new();
        for r in view.running.iter().filter(|r| r.suspended) {
            let Some(beside) = self.held.get(&r.id) else { continue };
            let still = beside.iter().any(|b| !self.exempt.contains(b) && view.running.iter().any(|o| o.id == *b && !o.suspended));
            let holders = view.holders(r.pool);
            let free = r.cpus.iter().all(|&c| holders.get(c as usize).is_some_and(|&h| h == 0))
                && (!r.cpus.is_empty() || view.free_cores(r.pool) >= r.cores);
            if !still && free {
                out.push(Decision::Resume { job: r.id });
            }
        }
        for d in &out {
            self.held.remove(&d.job());
        }
        out
    }

    fn reaction(&mut self, view: &View) -> Vec<Decision> {
        let active: Vec<_> = view.running.iter().filter(|r| !r.suspended).collect();
        let harmed = |id: JobId| {
            view.slowdown
                .online(id)
                .is_some_and(|e| e.signal.decisive() && e.n >= MIN_SEGMENTS && e.lo > self.threshold)
        };
        if let [alone] = active[..] {
            // Slow with no one beside it: its slowness is its own.
            if harmed(alone.id) {
                self.exempt.insert(alone.id);
            }
        }
        // Never a job alone: a reaction needs a co-runner to blame.
        if active.len() < 2 || self.action == Action::Nothing {
            return Vec::new();
        }
        let Some(victim) = active.iter().find(|r| !self.exempt.contains(&r.id) && harmed(r.id)) else {
            return Vec::new();
        };
        let newest = active.iter().max_by_key(|r| self.seen.get(&r.id).map_or(u64::MAX, |&(_, s)| s)).expect("two or more");
        let others: Vec<JobId> = active.iter().filter(|r| r.id != newest.id).map(|r| r.id).collect();
        // The co-runner blamed: the newest, or beside a newest victim the
        // oldest other job.
        let culprit = if newest.id != victim.id { newest } else { active.iter().find(|r| r.id != victim.id).expect("two or more") };
        match self.blamed.get(&victim.id) {
            Some(p) if *p != culprit.program => {
                // The harm followed it to another program's job.
                self.exempt.insert(victim.id);
                return Vec::new();
            }
            _ => {
                self.blamed.insert(victim.id, culprit.program.to_string());
            }
        }
        match self.action {
            Action::Suspend => {
                self.held.insert(newest.id, others);
                vec![Decision::Suspend { job: newest.id }]
            }
            Action::Move => {
                if self.moved.contains(&newest.id) {
                    return Vec::new();
                }
                let holders = view.holders(newest.pool);
                let free: Vec<u32> = (0..holders.len() as u32).filter(|&c| holders[c as usize] == 0).take(newest.cores as usize).collect();
                if free.len() < newest.cores as usize || free.is_empty() {
                    return Vec::new();
                }
                self.moved.push(newest.id);
                vec![Decision::Move { job: newest.id, cores: free }]
            }
            Action::Nothing => Vec::new(),
        }
    }
}

impl Policy for React {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        for r in view.running {
            if !self.seen.contains_key(&r.id) {
                self.seen.insert(r.id, (view.time, self.next_seq));
                self.next_seq += 1;
            }
        }
        self.seen.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        self.held.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        self.blamed.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        self.exempt.retain(|j| view.running.iter().any(|r| r.id == *j));
        let out = self.resumes(view);
        if !out.is_empty() {
            return out;
        }
        let out = self.reaction(view);
        if !out.is_empty() {
            return out;
        }
        if self.held.is_empty() {
            return self.inner.decide(view);
        }
        // The jobs it holds are its own business: to the inner policy they
        // hold no core (most policies count a suspended job's cores as
        // taken, since they never suspend one without a plan for it).
        let running: Vec<_> = view.running.iter().filter(|r| !self.held.contains_key(&r.id)).copied().collect();
        let inner = View { time: view.time, queue: view.queue, running: &running, pools: view.pools, slowdown: view.slowdown };
        self.inner.decide(&inner)
    }

    fn observe(&mut self, outcome: &JobOutcome) {
        self.inner.observe(outcome);
    }

    fn acts_on_running(&self) -> bool {
        true
    }

    fn wake_at(&self) -> Option<f64> {
        self.inner.wake_at()
    }

    fn set_priorities(&mut self, by_name: &BTreeMap<String, u32>) {
        self.inner.set_priorities(by_name);
    }
}
