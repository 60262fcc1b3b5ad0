//! `react`: a wrapper that acts on what a run sees (issue 38). Around any
//! registered policy, it watches each running job's online slowdown
//! estimate (`SlowdownSource::online`, which the run loop fills from the
//! jobs' progress); when a job's estimate passes the threshold with its
//! whole interval, it asks the engine to suspend one job of the harmful
//! pair (`victim`: the newest, or the one with the most work left), to move
//! it onto free cores, or nothing, and lets the inner policy start what
//! fits on the freed cores (the run has learned the pair by then, so the
//! inner policy's source no longer calls it harmless). With `gain=on` it
//! acts only when the estimates say suspending pays (below). A job
//! suspended for harm resumes (`resume`) once every job it was suspended
//! beside has ended or been suspended, on its own cores, or on any free
//! ones beside jobs the run's knowledge says it fits beside. A job alone
//! on its node is never suspended: there is no one to blame.
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
//!
//! The expected gain (`gain=on`): suspending a job of a harmful pair pays
//! when a waiting job fits the freed cores beside the job kept (the run's
//! knowledge puts both below the threshold; when jobs wait and none fits,
//! the one started in its place would be harmed in turn), or, with nothing
//! waiting, when the two jobs' summed completion times are shorter one after the
//! other than side by side at the paces seen (remaining work r, slowdown s
//! beside the other: side by side the first ends at d = min(r_k s_k, r_v
//! s_v) and the other d + r_o - d / s_o later; one after the other r_k and
//! r_k + r_v). Equal jobs slowed by s gain r (2 s - 3): a pair slowed by
//! less than 1.5 is left to run, and so is one whose suspended job would
//! have ended first.
//!
//! With `plan=learned`, once the run has learned a pair (the source's
//! [`knowledge`](crate::tables::SlowdownSource::knowledge) moves) the jobs
//! start in a planned order instead of the inner policy's choice: the rest
//! of the queue, the held jobs included, ordered over everything learned so
//! far by the oracle's search from the node's present state (`plan.rs`),
//! planned again whenever another pair is learned or the plan's jobs have
//! all started. The reaction and the resumptions stay as they are. Only
//! over an inner policy that starts jobs and nothing else: one that
//! suspends, moves or time-shares (`acts_on_running`) keeps deciding, since
//! a plan would leave what it holds held.

use std::collections::{BTreeMap, BTreeSet};

use cosched_engine::online::MIN_SEGMENTS;
use cosched_engine::policy::RunningJob;
use cosched_model::params::ParamSet;

use cosched_engine::policy::{Decision, JobOutcome, Policy, View};
use super::plan::{fits, Plan, Priors};
use crate::JobId;

/// What `react` does to the chosen job of a harmful co-run.
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

/// Which job of a harmful pair `react` acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victim {
    /// The newest job of the node (the co-runner that came last).
    Newest,
    /// Of the harmed job and the co-runner blamed, the one with the most
    /// work left (ties: the newer), so the one nearer its end runs on.
    MostLeft,
}

impl Victim {
    pub const NAMES: &'static [&'static str] = &["newest", "most-left"];

    pub fn by_name(name: &str) -> Option<Victim> {
        match name {
            "newest" => Some(Victim::Newest),
            "most-left" => Some(Victim::MostLeft),
            _ => None,
        }
    }
}

/// When a job `react` suspended resumes: in both, once no job it was
/// suspended beside still runs (or they are slow on their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeWhen {
    /// When its own cores are free. Two jobs held on the same cores
    /// resume onto them together and share them, even with other cores
    /// idle: the rule before `free`, kept as it was.
    Own,
    /// When enough cores of its pool are free (moved onto them if its own
    /// are taken) and the run's knowledge puts it below the threshold
    /// beside every job running there, each of them beside it, those
    /// resumed at the same time included: two jobs held for the same
    /// co-runner do not resume into the same harm.
    Free,
}

impl ResumeWhen {
    pub const NAMES: &'static [&'static str] = &["own", "free"];

    pub fn by_name(name: &str) -> Option<ResumeWhen> {
        match name {
            "own" => Some(ResumeWhen::Own),
            "free" => Some(ResumeWhen::Free),
            _ => None,
        }
    }
}

/// Who chooses the next start once the run has learned a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Planning {
    /// The inner policy, throughout: the rule before `learned`.
    Off,
    /// A plan of the rest of the queue over what the run has learned
    /// (module doc).
    Learned,
}

impl Planning {
    pub const NAMES: &'static [&'static str] = &["off", "learned"];

    pub fn by_name(name: &str) -> Option<Planning> {
        match name {
            "off" => Some(Planning::Off),
            "learned" => Some(Planning::Learned),
            _ => None,
        }
    }
}

/// How `react` chooses and when it acts; [`Rules::DEFAULT`] is what
/// `react` runs without keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub victim: Victim,
    pub resume: ResumeWhen,
    /// Act only when the expected gain is positive (module doc).
    pub gain: bool,
    pub plan: Planning,
}

impl Rules {
    pub const DEFAULT: Rules = Rules { victim: Victim::Newest, resume: ResumeWhen::Free, gain: false, plan: Planning::Off };
}

pub struct React {
    inner: Box<dyn Policy>,
    threshold: f64,
    action: Action,
    rules: Rules,
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
    /// The source's knowledge fingerprint at the last decision.
    knowledge: u64,
    /// The plan jobs start in (`plan=learned`, once a pair is learned).
    plan: Option<Plan>,
    /// Something was learned since the plan was made.
    stale: bool,
    /// Plans made so far: the seed of the next one's local search.
    plans: u64,
    /// Pairs seen and programs mispredicted, for the plan (`plan.rs`).
    priors: Priors,
    /// Each held job's progress when suspended: an engine that reads
    /// progress reads none of a suspended job and shows its time run,
    /// which overstates what a job slowed by its co-runner has done.
    held_at: BTreeMap<JobId, f64>,
}

/// Solo-seconds of work a running job has left.
fn left(r: &RunningJob) -> f64 {
    (1.0 - r.progress).max(0.0) * r.solo
}

impl React {
    pub fn new(inner: Box<dyn Policy>, threshold: f64, action: Action) -> React {
        React::with_rules(inner, threshold, action, Rules::DEFAULT)
    }

    pub fn with_rules(inner: Box<dyn Policy>, threshold: f64, action: Action, rules: Rules) -> React {
        React {
            inner,
            threshold,
            action,
            rules,
            seen: BTreeMap::new(),
            next_seq: 0,
            held: BTreeMap::new(),
            moved: Vec::new(),
            blamed: BTreeMap::new(),
            exempt: BTreeSet::new(),
            knowledge: 0,
            plan: None,
            stale: false,
            plans: 0,
            priors: Priors::default(),
            held_at: BTreeMap::new(),
        }
    }

    /// From `react`'s parameters as the registry declares them
    /// (`threshold`, `action`, `victim`, `resume`, `gain`, `plan`).
    pub fn from_params(inner: Box<dyn Policy>, p: &ParamSet) -> React {
        let rules = Rules {
            victim: Victim::by_name(p.word("victim")).expect("checked against Victim::NAMES"),
            resume: ResumeWhen::by_name(p.word("resume")).expect("checked against ResumeWhen::NAMES"),
            gain: p.flag("gain"),
            plan: Planning::by_name(p.word("plan")).expect("checked against Planning::NAMES"),
        };
        let action = Action::by_name(p.word("action")).expect("checked against Action::NAMES");
        React::with_rules(inner, p.float("threshold"), action, rules)
    }

    /// The slowdown of `job` beside `other`: its settled online estimate
    /// while it runs beside that job alone, else what the source knows.
    fn pace(view: &View, job: JobId, other: JobId, pair: bool) -> f64 {
        match view.slowdown.online(job) {
            Some(e) if pair && e.signal.decisive() && e.n >= MIN_SEGMENTS => e.slowdown,
            _ => view.slowdown.slowdown(job, &[other]),
        }
        .max(1.0)
    }

    /// Whether the run's knowledge puts `job` below the threshold beside
    /// each of `beside` and each of them beside it.
    fn fits(&self, view: &View, job: JobId, beside: impl IntoIterator<Item = JobId>) -> bool {
        fits(view.slowdown, self.threshold, job, beside)
    }

    /// Notes the node's running pair as seen once its estimates settle,
    /// and its programs as mispredicted once the run has learned it.
    fn note_seen(&mut self, view: &View) {
        let active: Vec<&RunningJob> = view.running.iter().filter(|r| !r.suspended).collect();
        let [x, y] = active[..] else { return };
        for (a, b) in [(x, y), (y, x)] {
            if !view.slowdown.online(a.id).is_some_and(|e| e.signal.decisive() && e.n >= MIN_SEGMENTS) {
                continue;
            }
            self.priors.seen.insert((a.program.to_string(), b.program.to_string()));
            if view.slowdown.learned(a.id, b.id).is_some() {
                self.priors.distrusted.insert(a.program.to_string());
                self.priors.distrusted.insert(b.program.to_string());
            }
        }
    }

    /// Whether starts follow a plan: a pair is learned, and the inner
    /// policy only starts jobs (module doc).
    fn planning(&self) -> bool {
        self.rules.plan == Planning::Learned && self.knowledge != 0 && !self.inner.acts_on_running()
    }

    /// The plan's start, planning first when something was learned since
    /// the last plan or its jobs have all started; `None` when no plan can
    /// be made (the inner policy decides). `view` hides the held jobs,
    /// `held` are they.
    fn planned(&mut self, view: &View, held: &[RunningJob]) -> Option<Vec<Decision>> {
        let room = view.queue.iter().any(|q| view.free_cores(q.pool) >= q.cores);
        if room && (self.stale || !self.plan.as_ref().is_some_and(|p| p.covers(view))) {
            self.plan = Plan::search(view, held, self.threshold, &self.priors, self.plans);
            self.plans += 1;
            self.stale = false;
        }
        let plan = self.plan.as_ref()?;
        Some(plan.next(view, self.threshold).into_iter().collect())
    }

    /// The expected gain of suspending `target` beside `kept` (module doc).
    fn pays(&self, view: &View, target: &RunningJob, kept: &RunningJob, pair: bool) -> bool {
        let freed = view.free_cores(target.pool) + target.cores;
        let waiting: Vec<JobId> = view.queue.iter().filter(|q| q.pool == target.pool && q.cores <= freed).map(|q| q.id).collect();
        if !waiting.is_empty() {
            // Whatever starts on the freed cores runs beside the kept job:
            // only one that fits it makes the suspension pay; another
            // would be harmed in turn.
            return waiting.iter().any(|&q| self.fits(view, q, [kept.id]));
        }
        let (rk, rv) = (left(kept), left(target));
        let (sk, sv) = (React::pace(view, kept.id, target.id, pair), React::pace(view, target.id, kept.id, pair));
        let d = (rk * sk).min(rv * sv);
        let (ro, so) = if rk * sk <= rv * sv { (rv, sv) } else { (rk, sk) };
        let side_by_side = 2.0 * d + ro - d / so;
        let in_turn = 2.0 * rk + rv;
        in_turn < side_by_side
    }

    fn resumes(&mut self, view: &View) -> Vec<Decision> {
        let mut out = Vec::new();
        // Cores and jobs taken by the resumptions decided so far.
        let mut taken: Vec<(usize, u32)> = Vec::new();
        let mut resumed: Vec<&RunningJob> = Vec::new();
        for r in view.running.iter().filter(|r| r.suspended) {
            let Some(beside) = self.held.get(&r.id) else { continue };
            if beside.iter().any(|b| !self.exempt.contains(b) && view.running.iter().any(|o| o.id == *b && !o.suspended)) {
                continue;
            }
            let holders = view.holders(r.pool);
            let idle = |c: u32| holders.get(c as usize).is_some_and(|&h| h == 0) && !taken.contains(&(r.pool, c));
            let unplaced: u32 = resumed.iter().filter(|o| o.pool == r.pool && o.cpus.is_empty()).map(|o| o.cores).sum();
            let own = if r.cpus.is_empty() { view.free_cores(r.pool) >= r.cores + unplaced } else { r.cpus.iter().all(|&c| idle(c)) };
            match self.rules.resume {
                ResumeWhen::Own => {
                    // Two jobs held on one core both resume onto it (the
                    // rule examples/lua/suspend-harm.lua copies).
                    if own {
                        out.push(Decision::Resume { job: r.id });
                    }
                }
                ResumeWhen::Free => {
                    let there = view.running.iter().filter(|o| o.pool == r.pool && !o.suspended).chain(resumed.iter().copied()).map(|o| o.id);
                    if !self.fits(view, r.id, there) {
                        continue;
                    }
                    if own {
                        taken.extend(r.cpus.iter().map(|&c| (r.pool, c)));
                        out.push(Decision::Resume { job: r.id });
                    } else {
                        let free: Vec<u32> = (0..holders.len() as u32).filter(|&c| idle(c)).take(r.cores as usize).collect();
                        if r.cpus.is_empty() || free.len() < r.cores as usize || free.is_empty() {
                            continue;
                        }
                        taken.extend(free.iter().map(|&c| (r.pool, c)));
                        out.push(Decision::Move { job: r.id, cores: free });
                        out.push(Decision::Resume { job: r.id });
                    }
                    resumed.push(r);
                }
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
        let seq = |r: &RunningJob| self.seen.get(&r.id).map_or(u64::MAX, |&(_, s)| s);
        let newest = *active.iter().max_by_key(|r| seq(r)).expect("two or more");
        // The co-runner blamed: the newest, or beside a newest victim the
        // oldest other job.
        let culprit = if newest.id != victim.id { newest } else { *active.iter().find(|r| r.id != victim.id).expect("two or more") };
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
        let target = match self.rules.victim {
            Victim::Newest => newest,
            Victim::MostLeft => {
                let (a, b) = (*victim, culprit);
                // Ties go to the newer of the two.
                if left(a) > left(b) || left(a) == left(b) && seq(a) > seq(b) {
                    *victim
                } else {
                    culprit
                }
            }
        };
        let kept = if target.id == victim.id { culprit } else { *victim };
        if self.rules.gain && !self.pays(view, target, kept, active.len() == 2) {
            return Vec::new();
        }
        let others: Vec<JobId> = active.iter().filter(|r| r.id != target.id).map(|r| r.id).collect();
        match self.action {
            Action::Suspend => {
                self.held.insert(target.id, others);
                self.held_at.insert(target.id, target.progress);
                vec![Decision::Suspend { job: target.id }]
            }
            Action::Move => {
                if self.moved.contains(&target.id) {
                    return Vec::new();
                }
                let holders = view.holders(target.pool);
                let free: Vec<u32> = (0..holders.len() as u32).filter(|&c| holders[c as usize] == 0).take(target.cores as usize).collect();
                if free.len() < target.cores as usize || free.is_empty() {
                    return Vec::new();
                }
                self.moved.push(target.id);
                vec![Decision::Move { job: target.id, cores: free }]
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
        self.held_at.retain(|j, _| self.held.contains_key(j));
        self.blamed.retain(|j, _| view.running.iter().any(|r| r.id == *j));
        self.exempt.retain(|j| view.running.iter().any(|r| r.id == *j));
        if self.rules.plan == Planning::Learned {
            let k = view.slowdown.knowledge();
            if k != self.knowledge {
                self.knowledge = k;
                self.stale = true;
            }
            self.note_seen(view);
        }
        let out = self.resumes(view);
        if !out.is_empty() {
            return out;
        }
        let out = self.reaction(view);
        if !out.is_empty() {
            return out;
        }
        if self.held.is_empty() && !self.planning() {
            return self.inner.decide(view);
        }
        // The jobs it holds are its own business: to the inner policy they
        // hold no core (most policies count a suspended job's cores as
        // taken, since they never suspend one without a plan for it).
        let (held, running): (Vec<_>, Vec<_>) = view.running.iter().copied().partition(|r| self.held.contains_key(&r.id));
        let inner = View { time: view.time, queue: view.queue, running: &running, pools: view.pools, slowdown: view.slowdown };
        if self.planning() {
            let held: Vec<RunningJob> = held.into_iter().map(|r| RunningJob { progress: self.held_at.get(&r.id).copied().unwrap_or(r.progress), ..r }).collect();
            if let Some(out) = self.planned(&inner, &held) {
                return out;
            }
        }
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

use crate::registry::{policy_by_name, Params, PolicyEntry, POLICIES};
use cosched_model::params::{Kind, Param, Range};

pub(crate) const REACT: PolicyEntry = PolicyEntry {
    name: "react",
    summary: "issue 38: another policy, plus a reaction when a running job's online slowdown estimate passes the threshold with its interval (suspend or move a job of the harmful pair; resume it once its co-runners are gone)",
    params: &[
        Param::new("inner", Kind::WordOf(inner_names), "best-match", "the policy that starts jobs (with its defaults)"),
        Param::new("threshold", Kind::Float(Range::at_least(1.0)), "1.3", "slowdown whose excess, with the whole interval above it, is harm"),
        Param::new("action", Kind::Word(Action::NAMES), "suspend", "what is done to the chosen job of a harmful co-run: suspend, move (onto free cores) or nothing"),
        Param::new("victim", Kind::Word(Victim::NAMES), "newest", "which job of the harmful pair: newest (the node's), most-left (of the pair, the one with the most work left)").before("newest"),
        Param::new("resume", Kind::Word(ResumeWhen::NAMES), "free", "a suspended job resumes once the jobs it was suspended beside are gone, on its own cores (own) or on any free ones beside jobs the run knows it fits (free)").before("own"),
        Param::new("gain", Kind::Flag, "off", "act only when suspending is expected to pay: a waiting job fits the freed cores, or the pair's summed completion times shrink").before("off"),
        Param::new("plan", Kind::Word(Planning::NAMES), "off", "off: the inner policy starts every job; learned: once the run learns a pair, jobs start in a planned order (the oracle's search over what the run knows, from the node's present state, harmful pairs kept apart), planned again at each pair learned").before("off"),
    ],
    make: |p| {
        let inner = policy_by_name(p.word("inner"), &Params::new())?;
        Ok(Box::new(React::from_params(inner, p)))
    },
};

/// Policies `react` may wrap: every one but itself.
fn inner_names() -> Vec<&'static str> {
    POLICIES.iter().map(|e| e.name).filter(|&n| n != "react").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registered_defaults_are_the_rules_a_wrapper_built_in_code_gets() {
        let entry = crate::registry::POLICIES.iter().find(|e| e.name == "react").unwrap();
        let p = ParamSet::from_map(entry.params, &Default::default()).unwrap();
        let built = React::from_params(crate::registry::policy_by_name("noplan", &Default::default()).unwrap(), &p);
        assert_eq!(built.rules, Rules::DEFAULT);
    }
}
