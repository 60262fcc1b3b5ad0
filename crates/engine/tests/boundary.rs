//! Issue 43's bar for the boundary: the same decisions, on hand-made
//! states, through the four engines' view builders and the one validation,
//! get the same accepted / refused answers.
//!
//! Each engine builds its view through `engine::view`, saying what it
//! knows as it does in its own code: the node runner (`run_node`) names
//! each running job's cores and knows the time it ran; the simulator
//! (`sched::sim`) names the cores and knows the work left; the cluster
//! simulator (`cluster::engine`) counts cores without naming them and knows
//! the work left; the Slurm engine (`slurm::tick`) names cores the way it
//! lays them out (running jobs the first free cores in placement order,
//! suspended ones the first cores whether busy or not) under Slurm's job
//! ids and knows the time run. Every view is checked by
//! `validate::check_view`, and the state itself as the runner, the
//! simulator and Slurm check it, decision by decision, with
//! `validate::check_decision` over a core map.

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::{Cores, Decision, PoolInfo, QueuedJob, RunningJob, Variant};
use cosched_engine::slowdown::SlowdownSource;
use cosched_engine::validate::{check_decision, check_view, Act, JobState, Refusal};
use cosched_engine::view::{self, Seat, Work};
use cosched_engine::{JobId, SimJob};
use cosched_model::workload::PoolKind;
use proptest::prelude::*;

struct Flat;

impl SlowdownSource for Flat {
    fn slowdown(&self, _: JobId, _: &[JobId]) -> f64 {
        1.0
    }
    fn score(&self, _: JobId, _: JobId) -> f64 {
        0.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Where {
    Waiting,
    Running,
    Suspended,
}

/// A hand-made node: its pools' cores, and its jobs with where they are.
#[derive(Debug, Clone)]
struct State {
    pools: Vec<u32>,
    jobs: Vec<SimJob>,
    at: Vec<Where>,
    /// The cores each running or suspended job holds (Slurm's layout).
    cpus: Vec<Vec<u32>>,
}

fn state() -> impl Strategy<Value = State> {
    let pools = prop::collection::vec(1u32..=6, 1..=2);
    pools.prop_flat_map(|pools| {
        let np = pools.len();
        let job = (0..np, 1u32..=6, 0u8..3, prop::bool::weighted(0.3), 1.0f64..100.0);
        (Just(pools), prop::collection::vec(job, 1..=8))
    })
    .prop_map(|(pools, specs)| {
        let mut map = CoreMap::new(pools.iter().copied());
        let mut jobs = Vec::new();
        let mut at = Vec::new();
        for (i, &(pool, cores, w, variants, solo)) in specs.iter().enumerate() {
            let cores = cores.min(pools[pool]);
            let mut j = SimJob { name: format!("j{i}"), arrival: 0.0, solo, pool, cores, program: format!("p{}", i % 3), variants: vec![] };
            let mut w = [Where::Waiting, Where::Running, Where::Suspended][w as usize];
            if variants && w == Where::Waiting {
                // Its own way first, then one core of its pool. (Not another
                // pool: a job running as such a variant is moved within its
                // workload's pool by the engines that keep a core map, and
                // within the pool it runs on by a view.)
                j.variants = vec![
                    Variant { name: "own".into(), pool, cores, solo },
                    Variant { name: "one".into(), pool, cores: 1, solo: 2.0 * solo },
                ];
            }
            if w == Where::Running && map.free(pool) < cores {
                w = Where::Waiting;
            }
            if w == Where::Running {
                map.hold(pool, &map.choose(pool, cores, &Cores::Compact, false).unwrap());
            }
            jobs.push(j);
            at.push(w);
        }
        // Laid out as the Slurm engine does: running jobs first, in order,
        // on the first free cores; then suspended ones on the first cores.
        let mut lay = CoreMap::new(pools.iter().copied());
        let mut cpus = vec![Vec::new(); jobs.len()];
        for (i, j) in jobs.iter().enumerate().filter(|(i, _)| at[*i] == Where::Running) {
            let c = lay.choose(j.pool, j.cores, &Cores::Compact, true).unwrap();
            lay.hold(j.pool, &c);
            cpus[i] = c;
        }
        for (i, j) in jobs.iter().enumerate().filter(|(i, _)| at[*i] == Where::Suspended) {
            cpus[i] = lay.choose(j.pool, j.cores, &Cores::Compact, true).unwrap();
        }
        State { pools, jobs, at, cpus }
    })
}

fn decision(n: usize) -> impl Strategy<Value = Decision> {
    let job = 0..n + 1;
    let cores = prop::collection::vec(0u32..7, 0..4);
    (0u8..8, job, 0usize..3, cores, prop::bool::ANY).prop_map(|(kind, job, pool, cores, overbook)| match kind {
        0 | 1 => Decision::Start { job, pool },
        2 => Decision::StartVariant { job, variant: pool },
        3 => Decision::StartOn { job, pool, cores: if overbook { Cores::Spread } else { Cores::Compact }, overbook: false },
        4 => Decision::StartOn { job, pool, cores: Cores::Given(cores), overbook },
        5 => Decision::Suspend { job },
        6 => Decision::Resume { job },
        _ => Decision::Move { job, cores },
    })
}

/// The first acts and the first refusal (its index, and why), with the
/// jobs named by their index in the state.
type Answer = (Vec<Act>, Option<(usize, Refusal)>);

/// How an engine shows a job: under which id, and what it knows of it.
#[derive(Debug, Clone, Copy)]
enum Engine {
    Runner,
    Simulator,
    Cluster,
    Slurm,
}

/// Slurm's job ids are its own, not the round's indices.
const SLURM_ID: JobId = 1_000;

impl Engine {
    fn id(self, local: JobId) -> JobId {
        match self {
            Engine::Slurm => local + SLURM_ID,
            _ => local,
        }
    }

    fn local(self, id: JobId) -> JobId {
        match self {
            Engine::Slurm => id - SLURM_ID,
            _ => id,
        }
    }

    /// The answer of [`check_view`] on the view this engine builds of `s`.
    fn answer(self, s: &State, ds: &[Decision]) -> Answer {
        let pools: Vec<PoolInfo> = s.pools.iter().enumerate().map(|(k, &c)| PoolInfo { name: format!("p{k}"), cores: c, kind: PoolKind::Cpu }).collect();
        let queue: Vec<QueuedJob> = (0..s.jobs.len())
            .filter(|&i| s.at[i] == Where::Waiting)
            .map(|i| {
                let j = &s.jobs[i];
                match self {
                    // Engines whose jobs are a workload's show its variants.
                    Engine::Runner | Engine::Simulator => view::waiting(self.id(i), j),
                    Engine::Cluster | Engine::Slurm if j.variants.is_empty() => view::waiting_one_way(self.id(i), &j.name, j.pool, j.cores, j.solo, &j.program),
                    Engine::Cluster | Engine::Slurm => view::waiting(self.id(i), j),
                }
            })
            .collect();
        let running: Vec<RunningJob> = (0..s.jobs.len())
            .filter(|&i| s.at[i] != Where::Waiting)
            .map(|i| {
                let j = &s.jobs[i];
                let cpus: &[u32] = if matches!(self, Engine::Cluster) { &[] } else { &s.cpus[i] };
                let seat = Seat { pool: j.pool, cores: j.cores, cpus, suspended: s.at[i] == Where::Suspended, suspended_s: 0.0 };
                let work = match self {
                    Engine::Runner | Engine::Slurm => Work::Ran(j.solo / 2.0),
                    Engine::Simulator | Engine::Cluster => Work::Left(j.solo / 2.0),
                };
                view::running(self.id(i), j.solo, &j.program, seat, work)
            })
            .collect();
        let v = view::view(0.0, &queue, &running, &pools, &Flat);
        let ds: Vec<Decision> = ds.iter().map(|d| with_job(d, self.id(d.job()))).collect();
        let (acts, refused) = match check_view(&v, &ds) {
            Ok(acts) => (acts, None),
            Err((k, why)) => {
                // The acts before it, as the engine would carry them out.
                let acts = check_view(&v, &ds[..k]).expect("a prefix of an answer refused later passes");
                (acts, Some((k, why)))
            }
        };
        let acts = acts.into_iter().map(|a| act_job(a, |j| self.local(j))).collect();
        (acts, refused.map(|(k, r)| (k, refusal_job(r, ds[k].job(), self.local(ds[k].job())))))
    }
}

fn with_job(d: &Decision, job: JobId) -> Decision {
    match d.clone() {
        Decision::Start { pool, .. } => Decision::Start { job, pool },
        Decision::StartOn { pool, cores, overbook, .. } => Decision::StartOn { job, pool, cores, overbook },
        Decision::StartVariant { variant, .. } => Decision::StartVariant { job, variant },
        Decision::Suspend { .. } => Decision::Suspend { job },
        Decision::Resume { .. } => Decision::Resume { job },
        Decision::Move { cores, .. } => Decision::Move { job, cores },
    }
}

fn act_job(a: Act, f: impl Fn(JobId) -> JobId) -> Act {
    match a {
        Act::Start { job, pool, cpus, variant } => Act::Start { job: f(job), pool, cpus, variant },
        Act::Suspend { job } => Act::Suspend { job: f(job) },
        Act::Resume { job } => Act::Resume { job: f(job) },
        Act::Move { job, pool, cpus } => Act::Move { job: f(job), pool, cpus },
    }
}

/// `r` naming `local` where it names `id` (a refusal names one job).
fn refusal_job(r: Refusal, id: JobId, local: JobId) -> Refusal {
    let f = |j: JobId| if j == id { local } else { j };
    match r {
        Refusal::NotWaiting { job } => Refusal::NotWaiting { job: f(job) },
        Refusal::WrongPool { job, pool, belongs } => Refusal::WrongPool { job: f(job), pool, belongs },
        Refusal::NoRoom { job, pool, needs, free } => Refusal::NoRoom { job: f(job), pool, needs, free },
        Refusal::NotRunning { job } => Refusal::NotRunning { job: f(job) },
        Refusal::NotSuspended { job } => Refusal::NotSuspended { job: f(job) },
        Refusal::AlreadySuspended { job } => Refusal::AlreadySuspended { job: f(job) },
        Refusal::NoSuchCore { job, pool, core, cores } => Refusal::NoSuchCore { job: f(job), pool, core, cores },
        Refusal::DuplicateCore { job, core } => Refusal::DuplicateCore { job: f(job), core },
        Refusal::NoCores { job } => Refusal::NoCores { job: f(job) },
        Refusal::Busy { job, pool, core } => Refusal::Busy { job: f(job), pool, core },
        Refusal::NoSuchVariant { job, variant, variants } => Refusal::NoSuchVariant { job: f(job), variant, variants },
    }
}

/// The answer of the engines that keep a core map and each job's state
/// (runner, simulator, Slurm): `check_decision` per decision, each act
/// carried out before the next.
fn engine_state_answer(s: &State, ds: &[Decision]) -> Answer {
    let mut map = CoreMap::new(s.pools.iter().copied());
    let mut at = s.at.clone();
    let mut cpus = s.cpus.clone();
    let mut pool_of: Vec<usize> = s.jobs.iter().map(|j| j.pool).collect();
    for i in 0..s.jobs.len() {
        if at[i] == Where::Running {
            map.hold(s.jobs[i].pool, &cpus[i]);
        }
    }
    let mut acts = Vec::new();
    for (k, d) in ds.iter().enumerate() {
        let state = |j: JobId| match at.get(j) {
            Some(Where::Waiting) => JobState::Waiting,
            Some(Where::Running) => JobState::Running,
            Some(Where::Suspended) => JobState::Suspended,
            None => JobState::Elsewhere,
        };
        let act = match check_decision(d, &s.jobs, state, &map) {
            Ok(a) => a,
            Err(why) => return (acts, Some((k, why))),
        };
        match &act {
            Act::Start { job, pool, cpus: c, .. } => {
                map.hold(*pool, c);
                cpus[*job] = c.clone();
                pool_of[*job] = *pool;
                at[*job] = Where::Running;
            }
            Act::Suspend { job } => {
                map.release(pool_of[*job], &cpus[*job]);
                at[*job] = Where::Suspended;
            }
            Act::Resume { job } => {
                map.hold(pool_of[*job], &cpus[*job]);
                at[*job] = Where::Running;
            }
            Act::Move { job, pool, cpus: c } => {
                if at[*job] == Where::Running {
                    map.release(*pool, &cpus[*job]);
                    map.hold(*pool, c);
                }
                cpus[*job] = c.clone();
            }
        }
        acts.push(act);
    }
    (acts, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn every_engines_view_and_the_engine_state_check_answer_alike(
        (s, ds) in state().prop_flat_map(|s| {
            let n = s.jobs.len();
            (Just(s), prop::collection::vec(decision(n), 0..12))
        })
    ) {
        let expected = engine_state_answer(&s, &ds);
        for e in [Engine::Runner, Engine::Simulator, Engine::Cluster, Engine::Slurm] {
            prop_assert_eq!(&e.answer(&s, &ds), &expected, "{:?}", e);
        }
    }
}

#[test]
fn a_suspension_frees_the_cores_a_start_in_the_same_answer_takes_in_every_engine() {
    // One pool of 2 cores, A and B running, C waiting: starting C alone is
    // refused, after suspending B it takes B's core.
    let job = |n: &str| SimJob { name: n.into(), arrival: 0.0, solo: 10.0, pool: 0, cores: 1, program: n.into(), variants: vec![] };
    let s = State {
        pools: vec![2],
        jobs: vec![job("a"), job("b"), job("c")],
        at: vec![Where::Running, Where::Running, Where::Waiting],
        cpus: vec![vec![0], vec![1], vec![]],
    };
    let alone = [Decision::Start { job: 2, pool: 0 }];
    let after = [Decision::Suspend { job: 1 }, Decision::Start { job: 2, pool: 0 }];
    for e in [Engine::Runner, Engine::Simulator, Engine::Cluster, Engine::Slurm] {
        assert_eq!(e.answer(&s, &alone), (vec![], Some((0, Refusal::NoRoom { job: 2, pool: 0, needs: 1, free: 0 }))), "{e:?}");
        let started = Act::Start { job: 2, pool: 0, cpus: vec![1], variant: 0 };
        assert_eq!(e.answer(&s, &after), (vec![Act::Suspend { job: 1 }, started], None), "{e:?}");
    }
}
