//! Job variants in the engines: a start runs the variant the policy names,
//! or the first that fits; a job whose only variant is itself schedules as
//! a plain job under every registered policy; the simulator and the node
//! runner's loop (over a virtual node) run the same variants.

use cosched_model::metrics::EventKind;
use cosched_model::workload::PoolKind;
use cosched_engine::run::run_node;
use cosched_sched::{
    policy_by_name, simulate, simulate_with, Decision, Event, PairTable, Params, Platform, Policy, PoolInfo, SimError,
    SimJob, SimOptions, Variant, View, VirtualNode,
};

/// A CPU pool of 4 cores and one accelerator slot.
fn platform() -> Platform {
    Platform {
        pools: vec![
            PoolInfo { name: "cpu".into(), cores: 4, kind: PoolKind::Cpu },
            PoolInfo { name: "gpu".into(), cores: 1, kind: PoolKind::Accelerator { host_load: 0.0 } },
        ],
    }
}

/// A job preferring all 4 cores (2 s), then the accelerator (3 s), then
/// one core (6 s).
fn collection(name: &str) -> SimJob {
    let v = |name: &str, pool, cores, solo| Variant { name: name.into(), pool, cores, solo };
    SimJob {
        name: name.into(),
        arrival: 0.0,
        solo: 2.0,
        pool: 0,
        cores: 4,
        program: "mm".into(),
        variants: vec![v("all", 0, 4, 2.0), v("gpu", 1, 1, 3.0), v("one", 0, 1, 6.0)],
    }
}

/// Starts each waiting job as its first variant with free cores, counting
/// what this answer already took.
struct FirstFreeVariant;

impl Policy for FirstFreeVariant {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let mut free: Vec<u32> = (0..view.pools.len()).map(|p| view.free_cores(p)).collect();
        let mut out = Vec::new();
        for q in view.queue {
            if let Some(k) = q.variants.iter().position(|v| v.cores <= free[v.pool]) {
                free[q.variants[k].pool] -= q.variants[k].cores;
                out.push(Decision::StartVariant { job: q.id, variant: k });
            }
        }
        out
    }
}

fn times(events: &[Event], kind: EventKind) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = events.iter().filter(|e| e.kind == kind).map(|e| (e.job, e.time)).collect();
    v.sort_by_key(|&(j, _)| j);
    v
}

#[track_caller]
fn close(got: &[(usize, f64)], want: &[(usize, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(g.0 == w.0 && (g.1 - w.1).abs() < 1e-9, "{got:?} != {want:?}");
    }
}

#[test]
fn each_job_runs_the_variant_its_policy_chose_for_that_variants_time_on_its_pool() {
    let jobs = vec![collection("a"), collection("b"), collection("c")];
    // No job slows another.
    let table = PairTable::new(vec![vec![1.0; 3]; 3]).unwrap();
    let trace = simulate_with(&platform(), &jobs, &table, &table, &mut FirstFreeVariant, &SimOptions::default()).unwrap();
    // t=0: a takes the 4 cores (2 s), b the accelerator (3 s), c waits
    // (no core free for even its one-core way); t=2: a ends, c takes all
    // 4 cores (2 s) and ends at 4; b ends at 3.
    close(&times(&trace.events, EventKind::Start), &[(0, 0.0), (1, 0.0), (2, 2.0)]);
    close(&times(&trace.events, EventKind::Finish), &[(0, 2.0), (1, 3.0), (2, 4.0)]);
    assert_eq!(trace.variant, vec![0, 1, 0]);
    let t = trace.export(&platform(), &jobs);
    let shown: Vec<(&str, Option<&str>, Option<f64>)> = t.jobs.iter().map(|j| (j.pool.as_str(), j.variant.as_deref(), j.solo)).collect();
    assert_eq!(shown, vec![("cpu", Some("all"), Some(2.0)), ("gpu", Some("gpu"), Some(3.0)), ("cpu", Some("all"), Some(2.0))]);
    assert_eq!(t.metrics().unwrap().makespan, 4.0);
}

#[test]
fn a_variant_progresses_at_its_own_solo_time_slowed_by_its_co_runners() {
    let jobs = vec![collection("a"), collection("b"), collection("c")];
    // Every pair slows both by 1.5.
    let table = PairTable::new(vec![vec![1.5, 1.5, 1.5], vec![1.5, 1.5, 1.5], vec![1.5, 1.5, 1.5]]).unwrap();
    let trace = simulate_with(&platform(), &jobs, &table, &table, &mut FirstFreeVariant, &SimOptions::default()).unwrap();
    // a (2 s) and b (3 s) at 1/1.5 from 0: a ends at 3, b has 1 s left.
    // c starts at 3 on all cores beside b, both at 1/1.5: b ends at 4.5,
    // when c has done 1 of its 2 s; c alone does the other by 5.5.
    close(&times(&trace.events, EventKind::Finish), &[(0, 3.0), (1, 4.5), (2, 5.5)]);
}

#[test]
fn the_node_runners_loop_runs_the_same_variants_as_the_simulator() {
    let jobs = vec![collection("a"), collection("b"), collection("c")];
    let table = PairTable::new(vec![vec![1.5; 3]; 3]).unwrap();
    let sim = simulate(&platform(), &jobs, &table, &mut FirstFreeVariant).unwrap();
    let mut node = VirtualNode::new(&jobs, &table);
    let trace = run_node(&platform(), &jobs, &table, &mut FirstFreeVariant, &mut node, &[]).unwrap();
    close(&times(&trace.events, EventKind::Finish), &times(&sim, EventKind::Finish));
    close(&times(&trace.events, EventKind::Start), &times(&sim, EventKind::Start));
    let plans: Vec<(usize, usize, usize)> = node.starts().iter().map(|p| (p.job, p.pool, p.variant)).collect();
    assert_eq!(plans, vec![(0, 0, 0), (1, 1, 1), (2, 0, 0)]);
    assert_eq!(trace.jobs[1].variant.as_deref(), Some("gpu"));
    assert_eq!((trace.jobs[1].pool.as_str(), trace.jobs[1].solo), ("gpu", Some(3.0)));
}

/// Names a variant the first waiting job does not have.
struct Bogus;

impl Policy for Bogus {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        view.queue.first().map(|q| vec![Decision::StartVariant { job: q.id, variant: 3 }]).unwrap_or_default()
    }
}

#[test]
fn a_variant_the_job_does_not_have_is_refused_by_the_engine() {
    let jobs = vec![collection("a")];
    let table = PairTable::new(vec![vec![1.0]]).unwrap();
    match simulate(&platform(), &jobs, &table, &mut Bogus) {
        Err(SimError::Decision { why, .. }) => assert_eq!(why, "job 0 has no variant 3 (it has 3)"),
        other => panic!("{other:?}"),
    }
}

/// Small platforms and job lists, each job its own only variant or not.
fn cases() -> Vec<(Platform, Vec<SimJob>, PairTable)> {
    let mut out = Vec::new();
    let mut x: u64 = 7;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for _ in 0..12 {
        let cores = 1 + next(4) as u32;
        let platform = Platform {
            pools: vec![
                PoolInfo { name: "cpu".into(), cores, kind: PoolKind::Cpu },
                PoolInfo { name: "acc".into(), cores: 1, kind: PoolKind::Accelerator { host_load: 0.2 } },
            ],
        };
        let n = 3 + next(6) as usize;
        let jobs: Vec<SimJob> = (0..n)
            .map(|i| {
                let pool = next(2) as usize;
                let c = if pool == 0 { 1 + next(cores as u64) as u32 } else { 1 };
                SimJob {
                    name: format!("j{i}"),
                    arrival: next(3) as f64,
                    solo: 1.0 + next(9) as f64,
                    pool,
                    cores: c,
                    program: format!("p{}", next(3)),
                    variants: vec![],
                }
            })
            .collect();
        let m: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { 1.0 + next(5) as f64 / 4.0 }).collect()).collect();
        out.push((platform, jobs, PairTable::new(m).unwrap()));
    }
    out
}

#[test]
fn a_job_whose_only_variant_is_itself_schedules_as_a_plain_job_under_every_policy() {
    for name in cosched_sched::registry::POLICIES.iter().map(|e| e.name) {
        for (k, (platform, jobs, table)) in cases().into_iter().enumerate() {
            let own: Vec<SimJob> = jobs
                .iter()
                .map(|j| SimJob { variants: vec![Variant { name: "own".into(), pool: j.pool, cores: j.cores, solo: j.solo }], ..j.clone() })
                .collect();
            let run = |jobs: &[SimJob]| -> Result<Vec<Event>, String> {
                let mut p = policy_by_name(name, &Params::new())?;
                simulate(&platform, jobs, &table, p.as_mut()).map_err(|e| e.to_string())
            };
            assert_eq!(run(&jobs), run(&own), "policy {name}, case {k}");
        }
    }
}
