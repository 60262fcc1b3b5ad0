//! The one validation of what engines are given and what policies decide,
//! so the simulator and the node runner accept and refuse the same things.

use std::fmt;

use cosched_model::placement::Strategy;

use crate::cores::{ChoiceError, CoreMap};
use crate::placement::PlaceCtx;
use crate::platform::{Platform, SimJob};
use crate::policy::{Cores, Decision, QueuedJob, RunningJob, View};
use crate::JobId;

/// Why an engine refuses a policy's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The job is not in the queue: not arrived, already started, or unknown.
    NotWaiting { job: JobId },
    /// The decision names another pool than the job's.
    WrongPool { job: JobId, pool: usize, belongs: usize },
    /// The pool has fewer free cores than the job needs.
    NoRoom { job: JobId, pool: usize, needs: u32, free: u32 },
    /// Suspend or move of a job that is not running (nor suspended).
    NotRunning { job: JobId },
    /// Resume of a job that is not suspended.
    NotSuspended { job: JobId },
    /// Suspend of a job that is suspended already.
    AlreadySuspended { job: JobId },
    /// A core index outside the pool.
    NoSuchCore { job: JobId, pool: usize, core: u32, cores: u32 },
    /// A core named twice.
    DuplicateCore { job: JobId, core: u32 },
    /// An empty set of cores.
    NoCores { job: JobId },
    /// A named core is held by a running job and the start does not overbook.
    Busy { job: JobId, pool: usize, core: u32 },
    /// A variant index past the job's variants.
    NoSuchVariant { job: JobId, variant: usize, variants: usize },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::NotWaiting { job } => write!(f, "job {job} is not waiting"),
            Refusal::WrongPool { job, pool, belongs } => write!(f, "job {job} belongs to pool {belongs}, not {pool}"),
            Refusal::NoRoom { job, pool, needs, free } => {
                write!(f, "job {job} needs {needs} cores; pool {pool} has {free} free")
            }
            Refusal::NotRunning { job } => write!(f, "job {job} is not running"),
            Refusal::NotSuspended { job } => write!(f, "job {job} is not suspended"),
            Refusal::AlreadySuspended { job } => write!(f, "job {job} is suspended already"),
            Refusal::NoSuchCore { job, pool, core, cores } => {
                write!(f, "job {job}: pool {pool} has no core {core} (its cores are 0..{})", cores.saturating_sub(1))
            }
            Refusal::DuplicateCore { job, core } => write!(f, "job {job}: core {core} is named twice"),
            Refusal::NoCores { job } => write!(f, "job {job}: no cores named"),
            Refusal::Busy { job, pool, core } => {
                write!(f, "job {job}: core {core} of pool {pool} is held by a running job (overbook to share it)")
            }
            Refusal::NoSuchVariant { job, variant, variants } => {
                write!(f, "job {job} has no variant {variant} (it has {variants})")
            }
        }
    }
}

/// Where a job is, as an engine tells [`check_decision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Not arrived, finished, or not a job of the workload.
    Elsewhere,
    Waiting,
    Running,
    Suspended,
}

/// A decision checked and resolved: what the engine carries out, with the
/// cores chosen (pool core indices, ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// `variant`: which of the job's variants runs (0 for a job without).
    Start { job: JobId, pool: usize, cpus: Vec<u32>, variant: usize },
    Suspend { job: JobId },
    Resume { job: JobId },
    Move { job: JobId, pool: usize, cpus: Vec<u32> },
}

fn refusal(job: JobId, pool: usize, e: ChoiceError) -> Refusal {
    match e {
        ChoiceError::NoRoom { needs, free } => Refusal::NoRoom { job, pool, needs, free },
        ChoiceError::NoSuchCore { core, cores } => Refusal::NoSuchCore { job, pool, core, cores },
        ChoiceError::Duplicate { core } => Refusal::DuplicateCore { job, core },
        ChoiceError::Empty => Refusal::NoCores { job },
        ChoiceError::Busy { core } => Refusal::Busy { job, pool, core },
    }
}

/// The one check of every decision, for every engine: `state` says where
/// each job is, `map` which cores running jobs hold. A start gets its
/// cores from [`CoreMap::choose`], so each engine places alike. What is
/// refused: starting a job that is not waiting, on another pool, on too
/// few free cores or on busy ones without overbooking; suspending,
/// resuming or moving a job that is not running (resp. suspended);
/// cores that do not exist, repeated or none; a variant the job does not
/// have, or one that does not fit. A `Start` of a job with variants runs
/// the first of its variants on the decision's pool that fits.
pub fn check_decision(
    decision: &Decision,
    jobs: &[SimJob],
    state: impl Fn(JobId) -> JobState,
    map: &CoreMap,
) -> Result<Act, Refusal> {
    check_decision_in(decision, jobs, state, map, None)
}

/// [`check_decision`] on a node with a topology: a start's cores come
/// from the placement (`crate::placement`), by the strategy chosen for
/// `Start` and compact / scatter for `StartOn` with `Cores::Compact` /
/// `Cores::Spread`; given cores, and pools off the topology, as without.
pub fn check_decision_in(
    decision: &Decision,
    jobs: &[SimJob],
    state: impl Fn(JobId) -> JobState,
    map: &CoreMap,
    place: Option<&PlaceCtx>,
) -> Result<Act, Refusal> {
    let job = decision.job();
    let st = if job < jobs.len() { state(job) } else { JobState::Elsewhere };
    check_one(decision, jobs.get(job), st, map, place)
}

/// The ways a job may run, as the check reads them: a workload's job, a
/// waiting job of a view, or a running one (which runs one way, on its pool).
pub trait Ways {
    /// The pool a job is moved within.
    fn home(&self) -> usize;
    /// Pool, cores and solo time of its way `v` (0: its first).
    fn way(&self, v: usize) -> Option<(usize, u32, f64)>;
    fn ways(&self) -> usize;
}

impl Ways for SimJob {
    fn home(&self) -> usize {
        self.pool
    }
    fn way(&self, v: usize) -> Option<(usize, u32, f64)> {
        self.variant(v)
    }
    fn ways(&self) -> usize {
        self.variant_count()
    }
}

impl Ways for QueuedJob<'_> {
    fn home(&self) -> usize {
        self.pool
    }
    fn way(&self, v: usize) -> Option<(usize, u32, f64)> {
        match self.variants.get(v) {
            Some(x) => Some((x.pool, x.cores, x.solo)),
            None if v == 0 && self.variants.is_empty() => Some((self.pool, self.cores, self.solo)),
            None => None,
        }
    }
    fn ways(&self) -> usize {
        self.variants.len().max(1)
    }
}

impl Ways for RunningJob<'_> {
    fn home(&self) -> usize {
        self.pool
    }
    fn way(&self, v: usize) -> Option<(usize, u32, f64)> {
        (v == 0).then_some((self.pool, self.cores, self.solo))
    }
    fn ways(&self) -> usize {
        1
    }
}

/// The check itself, for a job `j` (`None`: unknown) in state `st`.
fn check_one<J: Ways + ?Sized>(decision: &Decision, j: Option<&J>, st: JobState, map: &CoreMap, place: Option<&PlaceCtx>) -> Result<Act, Refusal> {
    let job = decision.job();
    let st = if j.is_some() { st } else { JobState::Elsewhere };
    let start = |pool: usize, how: &Cores, overbook: bool, strategy: Option<Strategy>| {
        let (true, Some(j)) = (st == JobState::Waiting, j) else {
            return Err(Refusal::NotWaiting { job });
        };
        // The first variant on the pool that fits; a job without variants
        // has one, itself, so it is checked exactly as it always was.
        let mut first = None;
        for variant in 0..j.ways() {
            let Some((p, cores, _)) = j.way(variant) else { break };
            if p != pool {
                continue;
            }
            let placed = match (place, strategy) {
                (Some(ctx), Some(s)) => ctx.choose(map, job, pool, cores, s, overbook),
                _ => None,
            };
            match placed.unwrap_or_else(|| map.choose(pool, cores, how, overbook)) {
                Ok(cpus) => return Ok(Act::Start { job, pool, cpus, variant }),
                Err(e) => {
                    first.get_or_insert(refusal(job, pool, e));
                }
            }
        }
        Err(first.unwrap_or(Refusal::WrongPool { job, pool, belongs: j.home() }))
    };
    match decision {
        Decision::Start { pool, .. } => start(*pool, &Cores::Compact, false, place.map(|c| c.placement.strategy())),
        Decision::StartOn { pool, cores, overbook, .. } => {
            let strategy = match cores {
                Cores::Compact => Some(Strategy::Compact),
                Cores::Spread => Some(Strategy::Scatter),
                Cores::Given(_) => None,
            };
            start(*pool, cores, *overbook, strategy)
        }
        Decision::StartVariant { variant, .. } => {
            let (true, Some(j)) = (st == JobState::Waiting, j) else {
                return Err(Refusal::NotWaiting { job });
            };
            let (pool, cores, _) = j.way(*variant).ok_or(Refusal::NoSuchVariant { job, variant: *variant, variants: j.ways() })?;
            let placed = match place {
                Some(ctx) => ctx.choose(map, job, pool, cores, ctx.placement.strategy(), false),
                None => None,
            };
            let cpus = placed.unwrap_or_else(|| map.choose(pool, cores, &Cores::Compact, false)).map_err(|e| refusal(job, pool, e))?;
            Ok(Act::Start { job, pool, cpus, variant: *variant })
        }
        Decision::Suspend { .. } => match st {
            JobState::Running => Ok(Act::Suspend { job }),
            JobState::Suspended => Err(Refusal::AlreadySuspended { job }),
            _ => Err(Refusal::NotRunning { job }),
        },
        Decision::Resume { .. } => match st {
            JobState::Suspended => Ok(Act::Resume { job }),
            _ => Err(Refusal::NotSuspended { job }),
        },
        Decision::Move { cores, .. } => {
            let (true, Some(j)) = (matches!(st, JobState::Running | JobState::Suspended), j) else {
                return Err(Refusal::NotRunning { job });
            };
            let pool = j.home();
            let cpus = map.choose(pool, 1, &Cores::Given(cores.clone()), true).map_err(|e| refusal(job, pool, e))?;
            Ok(Act::Move { job, pool, cpus })
        }
    }
}

/// A running job as [`check_view`] tracks it through a batch.
struct OnNode {
    id: JobId,
    pool: usize,
    cores: u32,
    solo: f64,
    cpus: Vec<u32>,
    suspended: bool,
}

impl Ways for OnNode {
    fn home(&self) -> usize {
        self.pool
    }
    fn way(&self, v: usize) -> Option<(usize, u32, f64)> {
        (v == 0).then_some((self.pool, self.cores, self.solo))
    }
    fn ways(&self) -> usize {
        1
    }
}

/// The one check of a batch of decisions against the [`View`] a policy
/// made them on, for whoever holds a view and no engine state (a Lua
/// policy checks its script's answer with it, so a refused decision
/// reaches its fallback, not the engine; the cluster simulator checks
/// its policy's answers with it). Decisions apply in order, each to the
/// node the earlier ones left (a suspension frees the cores a start then
/// takes), exactly as [`check_decision`] checks them one by one in an
/// engine. A running job without named cores holds `cores` cores of its
/// pool, the lowest free first (running jobs before suspended ones); starts take the compact free cores (an
/// engine on a topology may place them elsewhere, on as many cores).
/// The acts, or the index of the first decision refused and why.
pub fn check_view(view: &View, decisions: &[Decision]) -> Result<Vec<Act>, (usize, Refusal)> {
    let mut map = CoreMap::new(view.pools.iter().map(|p| p.cores));
    let mut on: Vec<OnNode> = Vec::with_capacity(view.running.len());
    let pool_ok = |p: usize| p < view.pools.len();
    // Named cores first; then counted ones take the first free cores,
    // running jobs before suspended ones (which hold none until resumed),
    // as the Slurm engine lays out the jobs cons_tres placed.
    for (named, suspended) in [(true, false), (true, true), (false, false), (false, true)] {
        let these = view.running.iter().filter(|r| r.cpus.is_empty() != named && r.suspended == suspended && pool_ok(r.pool));
        for r in these {
            let cpus = if named { r.cpus.to_vec() } else { map.choose(r.pool, r.cores, &Cores::Compact, true).unwrap_or_default() };
            if !r.suspended {
                map.hold(r.pool, &cpus);
            }
            on.push(OnNode { id: r.id, pool: r.pool, cores: r.cores, solo: r.solo, cpus, suspended: r.suspended });
        }
    }
    let mut acts: Vec<Act> = Vec::with_capacity(decisions.len());
    for (k, d) in decisions.iter().enumerate() {
        let job = d.job();
        let at = on.iter().position(|o| o.id == job);
        let act = match at {
            Some(i) => {
                let st = if on[i].suspended { JobState::Suspended } else { JobState::Running };
                check_one(d, Some(&on[i]), st, &map, None)
            }
            None => {
                let q = view.queue.iter().find(|q| q.id == job && pool_ok(q.pool));
                check_one(d, q, JobState::Waiting, &map, None)
            }
        }
        .map_err(|r| (k, r))?;
        match &act {
            Act::Start { job, pool, cpus, variant } => {
                map.hold(*pool, cpus);
                let q = view.queue.iter().find(|q| q.id == *job).expect("checked: it waits");
                let (_, cores, solo) = q.way(*variant).expect("checked: the variant exists");
                on.push(OnNode { id: *job, pool: *pool, cores, solo, cpus: cpus.clone(), suspended: false });
            }
            Act::Suspend { .. } => {
                let o = &mut on[at.expect("checked: it runs")];
                map.release(o.pool, &o.cpus);
                o.suspended = true;
            }
            Act::Resume { .. } => {
                let o = &mut on[at.expect("checked: it is suspended")];
                map.hold(o.pool, &o.cpus);
                o.suspended = false;
            }
            Act::Move { pool, cpus, .. } => {
                let o = &mut on[at.expect("checked: it runs")];
                if !o.suspended {
                    map.release(*pool, &o.cpus);
                    map.hold(*pool, cpus);
                }
                o.cpus = cpus.clone();
            }
        }
        acts.push(act);
    }
    Ok(acts)
}

/// Checks that every job targets a pool of the platform that can hold it
/// and has proper times; the message names the job.
pub fn check_jobs(platform: &Platform, jobs: &[SimJob]) -> Result<(), String> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(pool) = platform.pools.get(j.pool) else {
            return Err(format!("job {i} `{}` targets pool {} of {}", j.name, j.pool, platform.pools.len()));
        };
        if j.cores == 0 || j.cores > pool.cores {
            return Err(format!("job {i} `{}` needs {} cores; pool `{}` has {}", j.name, j.cores, pool.name, pool.cores));
        }
        if !(j.arrival.is_finite() && j.arrival >= 0.0) {
            return Err(format!("job {i} `{}`: arrival {} is not a non-negative number", j.name, j.arrival));
        }
        if !(j.solo.is_finite() && j.solo > 0.0) {
            return Err(format!("job {i} `{}`: solo time {} is not a positive number", j.name, j.solo));
        }
        if let Some(v) = j.variants.first() {
            if (v.pool, v.cores, v.solo) != (j.pool, j.cores, j.solo) {
                return Err(format!("job {i} `{}`: its first variant `{}` is not the job's own pool, cores and solo time", j.name, v.name));
            }
        }
        for v in &j.variants {
            let fits = platform.pools.get(v.pool).is_some_and(|p| v.cores >= 1 && v.cores <= p.cores);
            if !(fits && v.solo.is_finite() && v.solo > 0.0) {
                return Err(format!(
                    "job {i} `{}`: variant `{}` (pool {}, {} cores, solo {}) does not fit the platform or has no positive solo time",
                    j.name, v.name, v.pool, v.cores, v.solo
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{PoolInfo, Variant};
    use cosched_model::workload::PoolKind;

    fn platform() -> Platform {
        Platform {
            pools: vec![
                PoolInfo { name: "host".into(), cores: 4, kind: PoolKind::Cpu },
                PoolInfo { name: "ve".into(), cores: 1, kind: PoolKind::Cpu },
            ],
        }
    }

    fn jobs() -> Vec<SimJob> {
        let job = |name: &str, pool, cores| SimJob { name: name.into(), arrival: 0.0, solo: 1.0, pool, cores, program: name.into(), variants: vec![] };
        vec![job("a", 0, 2), job("b", 1, 1)]
    }

    fn start(job: JobId, pool: usize) -> Decision {
        Decision::Start { job, pool }
    }

    /// The map of a node whose pools hold `used` cores, lowest first.
    fn used(used: [u32; 2]) -> CoreMap {
        let mut m = CoreMap::new(platform().pools.iter().map(|p| p.cores));
        for (p, &n) in used.iter().enumerate() {
            let cores = platform().pools[p].cores;
            let cpus: Vec<u32> = (0..n.min(cores)).collect();
            m.hold(p, &cpus);
        }
        m
    }

    fn waiting(j: JobId) -> JobState {
        if j < 2 { JobState::Waiting } else { JobState::Elsewhere }
    }

    #[test]
    fn a_waiting_job_on_its_pool_with_room_starts() {
        assert_eq!(check_decision(&start(0, 0), &jobs(), waiting, &used([2, 0])), Ok(Act::Start { job: 0, pool: 0, cpus: vec![2, 3], variant: 0 }));
        assert_eq!(check_decision(&start(1, 1), &jobs(), waiting, &used([4, 0])), Ok(Act::Start { job: 1, pool: 1, cpus: vec![0], variant: 0 }));
    }

    #[test]
    fn a_job_not_in_the_queue_or_unknown_is_not_waiting() {
        let st = |j| if j == 0 { JobState::Running } else { JobState::Waiting };
        let r = check_decision(&start(0, 0), &jobs(), st, &used([0, 0]));
        assert_eq!(r, Err(Refusal::NotWaiting { job: 0 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0 is not waiting");
        assert_eq!(check_decision(&start(7, 0), &jobs(), waiting, &used([0, 0])), Err(Refusal::NotWaiting { job: 7 }));
    }

    #[test]
    fn a_job_started_on_another_pool_is_refused() {
        let r = check_decision(&start(1, 0), &jobs(), waiting, &used([0, 0]));
        assert_eq!(r, Err(Refusal::WrongPool { job: 1, pool: 0, belongs: 1 }));
        assert_eq!(r.unwrap_err().to_string(), "job 1 belongs to pool 1, not 0");
    }

    #[test]
    fn a_job_needing_more_than_the_free_cores_is_refused() {
        let r = check_decision(&start(0, 0), &jobs(), waiting, &used([3, 0]));
        assert_eq!(r, Err(Refusal::NoRoom { job: 0, pool: 0, needs: 2, free: 1 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0 needs 2 cores; pool 0 has 1 free");
        assert_eq!(check_decision(&start(1, 1), &jobs(), waiting, &used([0, 1])), Err(Refusal::NoRoom { job: 1, pool: 1, needs: 1, free: 0 }));
    }

    fn states<'a>(w: &'a [JobId], r: &'a [JobId], s: &'a [JobId]) -> impl Fn(JobId) -> JobState + 'a {
        move |j| {
            if w.contains(&j) {
                JobState::Waiting
            } else if r.contains(&j) {
                JobState::Running
            } else if s.contains(&j) {
                JobState::Suspended
            } else {
                JobState::Elsewhere
            }
        }
    }

    #[test]
    fn a_start_gets_the_compact_free_cores_and_start_on_the_named_ones() {
        let mut map = CoreMap::new([4, 1]);
        map.hold(0, &[0]);
        let d = Decision::Start { job: 0, pool: 0 };
        assert_eq!(check_decision(&d, &jobs(), states(&[0], &[], &[]), &map), Ok(Act::Start { job: 0, pool: 0, cpus: vec![1, 2], variant: 0 }));
        let d = Decision::StartOn { job: 0, pool: 0, cores: Cores::Spread, overbook: false };
        assert_eq!(check_decision(&d, &jobs(), states(&[0], &[], &[]), &map), Ok(Act::Start { job: 0, pool: 0, cpus: vec![1, 3], variant: 0 }));
        let d = Decision::StartOn { job: 0, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: false };
        let r = check_decision(&d, &jobs(), states(&[0], &[], &[]), &map);
        assert_eq!(r, Err(Refusal::Busy { job: 0, pool: 0, core: 0 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0: core 0 of pool 0 is held by a running job (overbook to share it)");
        let d = Decision::StartOn { job: 0, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: true };
        assert_eq!(check_decision(&d, &jobs(), states(&[0], &[], &[]), &map), Ok(Act::Start { job: 0, pool: 0, cpus: vec![0, 1], variant: 0 }));
    }

    #[test]
    fn suspend_resume_and_move_need_a_job_in_the_right_state_and_real_cores() {
        let map = CoreMap::new([4, 1]);
        let st = || states(&[], &[0], &[1]);
        assert_eq!(check_decision(&Decision::Suspend { job: 0 }, &jobs(), st(), &map), Ok(Act::Suspend { job: 0 }));
        assert_eq!(check_decision(&Decision::Suspend { job: 1 }, &jobs(), st(), &map), Err(Refusal::AlreadySuspended { job: 1 }));
        assert_eq!(check_decision(&Decision::Resume { job: 1 }, &jobs(), st(), &map), Ok(Act::Resume { job: 1 }));
        let r = check_decision(&Decision::Resume { job: 0 }, &jobs(), st(), &map);
        assert_eq!(r.clone().unwrap_err().to_string(), "job 0 is not suspended");
        assert_eq!(check_decision(&Decision::Suspend { job: 9 }, &jobs(), st(), &map), Err(Refusal::NotRunning { job: 9 }));
        let mv = |job, cores: Vec<u32>| check_decision(&Decision::Move { job, cores }, &jobs(), st(), &map);
        assert_eq!(mv(0, vec![3, 1]), Ok(Act::Move { job: 0, pool: 0, cpus: vec![1, 3] }));
        assert_eq!(mv(1, vec![0]), Ok(Act::Move { job: 1, pool: 1, cpus: vec![0] }));
        assert_eq!(mv(0, vec![4]).unwrap_err().to_string(), "job 0: pool 0 has no core 4 (its cores are 0..3)");
        assert_eq!(mv(0, vec![1, 1]), Err(Refusal::DuplicateCore { job: 0, core: 1 }));
        assert_eq!(mv(0, vec![]), Err(Refusal::NoCores { job: 0 }));
        assert_eq!(check_decision(&Decision::Start { job: 0, pool: 0 }, &jobs(), st(), &map), Err(Refusal::NotWaiting { job: 0 }));
    }

    /// Job 0 of `jobs()` with three variants: 2 cores of pool 0, 1 core of
    /// pool 1, 1 core of pool 0 (in that preference).
    fn with_variants() -> Vec<SimJob> {
        let mut j = jobs();
        let v = |name: &str, pool, cores, solo| Variant { name: name.into(), pool, cores, solo };
        j[0].variants = vec![v("all", 0, 2, 1.0), v("acc", 1, 1, 0.5), v("one", 0, 1, 2.0)];
        j
    }

    #[test]
    fn a_start_runs_the_first_variant_on_its_pool_that_fits() {
        let d = start(0, 0);
        assert_eq!(check_decision(&d, &with_variants(), waiting, &used([2, 0])), Ok(Act::Start { job: 0, pool: 0, cpus: vec![2, 3], variant: 0 }));
        // Two cores are not free, one is: the one-core variant, not the accelerator's.
        assert_eq!(check_decision(&d, &with_variants(), waiting, &used([3, 0])), Ok(Act::Start { job: 0, pool: 0, cpus: vec![3], variant: 2 }));
        assert_eq!(check_decision(&start(0, 1), &with_variants(), waiting, &used([4, 0])), Ok(Act::Start { job: 0, pool: 1, cpus: vec![0], variant: 1 }));
        // None fits: the refusal is the first variant's on the pool.
        assert_eq!(check_decision(&d, &with_variants(), waiting, &used([4, 0])), Err(Refusal::NoRoom { job: 0, pool: 0, needs: 2, free: 0 }));
    }

    #[test]
    fn a_named_variant_starts_on_its_pool_or_is_refused_when_missing_or_too_big() {
        let sv = |job, variant| Decision::StartVariant { job, variant };
        let js = with_variants();
        assert_eq!(check_decision(&sv(0, 1), &js, waiting, &used([0, 0])), Ok(Act::Start { job: 0, pool: 1, cpus: vec![0], variant: 1 }));
        assert_eq!(check_decision(&sv(0, 2), &js, waiting, &used([1, 0])), Ok(Act::Start { job: 0, pool: 0, cpus: vec![1], variant: 2 }));
        let r = check_decision(&sv(0, 3), &js, waiting, &used([0, 0]));
        assert_eq!(r, Err(Refusal::NoSuchVariant { job: 0, variant: 3, variants: 3 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0 has no variant 3 (it has 3)");
        assert_eq!(check_decision(&sv(0, 1), &js, waiting, &used([0, 1])), Err(Refusal::NoRoom { job: 0, pool: 1, needs: 1, free: 0 }));
        // A job without variants has one, itself.
        assert_eq!(check_decision(&sv(1, 0), &js, waiting, &used([0, 0])), Ok(Act::Start { job: 1, pool: 1, cpus: vec![0], variant: 0 }));
        assert_eq!(check_decision(&sv(1, 1), &js, waiting, &used([0, 0])), Err(Refusal::NoSuchVariant { job: 1, variant: 1, variants: 1 }));
        assert_eq!(check_decision(&sv(0, 0), &js, |_| JobState::Running, &used([0, 0])), Err(Refusal::NotWaiting { job: 0 }));
        assert_eq!(sv(0, 2).to_string(), "start job 0 as its variant 2");
    }

    #[test]
    fn variants_that_disagree_with_the_job_or_do_not_fit_the_platform_are_named() {
        let mut j = with_variants();
        assert_eq!(check_jobs(&platform(), &j), Ok(()));
        j[0].variants[0].solo = 3.0;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("its first variant `all` is not the job's own"));
        j[0].variants[0].solo = 1.0;
        j[0].variants[1].cores = 2;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("variant `acc` (pool 1, 2 cores, solo 0.5) does not fit"));
    }

    #[test]
    fn decisions_read_as_what_they_ask() {
        assert_eq!(Decision::Start { job: 1, pool: 0 }.to_string(), "start job 1 on pool 0");
        let d = Decision::StartOn { job: 2, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: true };
        assert_eq!(d.to_string(), "start job 2 on pool 0, cores 0,1, overbooking");
        assert_eq!(Decision::Move { job: 3, cores: vec![1] }.to_string(), "move job 3 to cores 1");
        assert_eq!(Decision::Resume { job: 4 }.to_string(), "resume job 4");
    }

    #[test]
    fn jobs_that_no_pool_can_hold_or_with_improper_times_are_named() {
        let mut j = jobs();
        assert_eq!(check_jobs(&platform(), &j), Ok(()));
        j[1].cores = 2;
        assert_eq!(check_jobs(&platform(), &j).unwrap_err(), "job 1 `b` needs 2 cores; pool `ve` has 1");
        j[1].cores = 1;
        j[0].pool = 5;
        assert_eq!(check_jobs(&platform(), &j).unwrap_err(), "job 0 `a` targets pool 5 of 2");
        j[0].pool = 0;
        j[0].solo = f64::NAN;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("solo time NaN is not a positive number"));
        j[0].solo = 1.0;
        j[0].arrival = -1.0;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("arrival -1 is not a non-negative number"));
    }
}
