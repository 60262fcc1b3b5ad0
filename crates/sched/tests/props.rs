//! Properties every policy and the simulator keep on random small nodes.

use cosched_model::metrics::{compute, job_times, EventKind, JobTimes};
use cosched_model::workload::PoolKind;
use cosched_sched::{
    policy_by_name, simulate, Event, PairTable, Params, Platform, PoolInfo, SimJob, SlowdownSource,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    platform: Platform,
    jobs: Vec<SimJob>,
    table: PairTable,
}

fn case(with_arrivals: bool) -> impl Strategy<Value = Case> {
    (prop::collection::vec(1u32..=3, 1..=3), 1usize..=7).prop_flat_map(move |(pool_cores, n)| {
        let pools = pool_cores.len();
        let job = (0..pools, 1u32..=3, 1u32..=200, 0u32..=100, 0usize..3).prop_map(
            move |(pool, cores, solo, arrival, program)| (pool, cores, solo, arrival, program),
        );
        (
            Just(pool_cores),
            prop::collection::vec(job, n),
            prop::collection::vec(prop::collection::vec(0.5f64..3.0, n), n),
        )
            .prop_map(move |(pool_cores, raw, matrix)| {
                let platform = Platform {
                    pools: pool_cores
                        .iter()
                        .enumerate()
                        .map(|(i, &c)| PoolInfo {
                            name: format!("p{i}"),
                            cores: c,
                            kind: PoolKind::Cpu,
                        })
                        .collect(),
                };
                let jobs = raw
                    .iter()
                    .enumerate()
                    .map(|(i, &(pool, cores, solo, arrival, program))| SimJob {
                        name: format!("j{i}"),
                        arrival: if with_arrivals { arrival as f64 } else { 0.0 },
                        solo: solo as f64,
                        pool,
                        cores: cores.min(pool_cores[pool]),
                        program: format!("prog{program}"),
                        variants: vec![],
                    })
                    .collect();
                Case {
                    platform,
                    jobs,
                    table: PairTable::new(matrix).unwrap(),
                }
            })
    })
}

fn run(c: &Case, name: &str, threshold: Option<&str>) -> Vec<Event> {
    let mut params = Params::new();
    if let Some(t) = threshold {
        for kv in t.split(',') {
            match kv.split_once('=') {
                Some((k, v)) => params.insert(k.into(), v.into()),
                None => params.insert("threshold".into(), kv.into()),
            };
        }
    }
    let mut p = policy_by_name(name, &params).unwrap();
    simulate(&c.platform, &c.jobs, &c.table, p.as_mut()).unwrap()
}

fn overlap(a: &JobTimes, b: &JobTimes) -> bool {
    a.start < b.finish && b.start < a.finish
}

/// Every job arrives, starts and finishes once, never before it arrives, and
/// no pool ever holds more cores than it has.
fn sound(c: &Case, trace: &[Event]) -> Result<Vec<JobTimes>, TestCaseError> {
    prop_assert_eq!(trace.len(), 3 * c.jobs.len());
    let times = job_times(trace, c.jobs.len()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (t, j) in times.iter().zip(&c.jobs) {
        prop_assert_eq!(t.arrive, j.arrival);
    }
    for w in trace.windows(2) {
        prop_assert!(w[0].time <= w[1].time, "trace out of time order");
    }
    for (i, t) in times.iter().enumerate() {
        for (p, pool) in c.platform.pools.iter().enumerate() {
            let held: u32 = times
                .iter()
                .zip(&c.jobs)
                .filter(|(u, j)| j.pool == p && u.start <= t.start && t.start < u.finish)
                .map(|(_, j)| j.cores)
                .sum();
            prop_assert!(
                held <= pool.cores,
                "pool {} over capacity when job {} starts",
                p,
                i
            );
        }
    }
    Ok(times)
}

const POLICIES: &[(&str, Option<&str>)] = &[
    ("exclusive", None),
    ("noplan", None),
    ("no-twins", None),
    ("conflict-aware", Some("0")),
    ("conflict-aware", Some("50")),
    ("conflict-aware", Some("100")),
    ("conflict-aware", Some("inf")),
    ("best-match", Some("aging=0")),
    ("best-match", Some("aging=2")),
    ("best-match", Some("aging=1000")),
    ("best-match", Some("aging=0,window=8")),
    ("best-match", Some("aging=2,window=3")),
    ("best-match", Some("aging=1000,window=16")),
    ("conflict-aware", Some("threshold=0,idle=gain")),
    ("conflict-aware", Some("threshold=50,idle=gain")),
    ("auto-threshold", None),
    ("auto-threshold", Some("bound=1.2,start=0,step=30")),
    ("auto-threshold", Some("bound=2,start=150,step=5")),
    ("auto-threshold", Some("bound=1.1,start=20,step=10,explore=off")),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_job_lost_or_run_twice(c in case(true)) {
        for &(name, t) in POLICIES {
            sound(&c, &run(&c, name, t))?;
        }
    }

    #[test]
    fn exclusive_makespan_is_the_sum_of_solo_times(c in case(false)) {
        let trace = run(&c, "exclusive", None);
        let times = sound(&c, &trace)?;
        for (i, a) in times.iter().enumerate() {
            for b in &times[i + 1..] {
                prop_assert!(!overlap(a, b));
            }
        }
        let solo: Vec<f64> = c.jobs.iter().map(|j| j.solo).collect();
        let sum: f64 = solo.iter().sum();
        let m = compute(&trace, &solo).unwrap();
        prop_assert!((m.makespan - sum).abs() <= 1e-9 * sum, "{} vs {}", m.makespan, sum);
        prop_assert!((m.worst_slowdown - 1.0).abs() < 1e-9);
    }

    #[test]
    fn conflict_aware_at_inf_is_noplan(c in case(true)) {
        prop_assert_eq!(run(&c, "conflict-aware", Some("inf")), run(&c, "noplan", None));
    }

    #[test]
    fn conflict_aware_never_co_runs_a_pair_over_threshold(c in case(true), t in 0.0f64..250.0) {
        let trace = run(&c, "conflict-aware", Some(&t.to_string()));
        let times = sound(&c, &trace)?;
        for (i, a) in times.iter().enumerate() {
            for (k, b) in times.iter().enumerate().skip(i + 1) {
                if overlap(a, b) {
                    prop_assert!(c.table.score(i, k) <= t, "jobs {} and {} co-run with score {}", i, k, c.table.score(i, k));
                }
            }
        }
    }

    #[test]
    fn no_job_lost_or_run_twice_on_several_nodes(c in case(true), nodes in 1usize..=3, window in prop::option::of(1usize..=4)) {
        use cosched_sched::{simulate_with, SimOptions};
        for &(name, t) in POLICIES {
            let mut params = Params::new();
            for kv in t.into_iter().flat_map(|t| t.split(',')) {
                match kv.split_once('=') {
                    Some((k, v)) => params.insert(k.into(), v.into()),
                    None => params.insert("threshold".into(), kv.into()),
                };
            }
            let mut p = policy_by_name(name, &params).unwrap();
            let opts = SimOptions { nodes, window };
            let trace = simulate_with(&c.platform, &c.jobs, &c.table, &c.table, p.as_mut(), &opts).unwrap();
            prop_assert_eq!(trace.events.len(), 3 * c.jobs.len());
            let times = job_times(&trace.events, c.jobs.len()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for w in trace.events.windows(2) {
                prop_assert!(w[0].time <= w[1].time, "trace out of time order");
            }
            for (i, t) in times.iter().enumerate() {
                prop_assert!(trace.node[i] < nodes);
                prop_assert_eq!(t.arrive, c.jobs[i].arrival);
                for (p, pool) in c.platform.pools.iter().enumerate() {
                    let held: u32 = times
                        .iter()
                        .zip(&c.jobs)
                        .enumerate()
                        .filter(|(k, (u, j))| trace.node[*k] == trace.node[i] && j.pool == p && u.start <= t.start && t.start < u.finish)
                        .map(|(_, (_, j))| j.cores)
                        .sum();
                    prop_assert!(held <= pool.cores, "node {} pool {} over capacity", trace.node[i], p);
                }
            }
        }
    }

    #[test]
    fn best_match_without_aging_is_noplan(c in case(true)) {
        prop_assert_eq!(run(&c, "best-match", Some("aging=0")), run(&c, "noplan", None));
    }

    #[test]
    fn best_match_with_any_window_never_stalls_and_finishes_every_job(c in case(true), w in 0u32..=16, aging in 0u32..=6) {
        let trace = run(&c, "best-match", Some(&format!("aging={aging},window={w}")));
        sound(&c, &trace)?;
        prop_assert_eq!(trace.iter().filter(|e| e.kind == EventKind::Finish).count(), c.jobs.len());
    }

    #[test]
    fn no_twins_never_co_runs_twins(c in case(true)) {
        let trace = run(&c, "no-twins", None);
        let times = sound(&c, &trace)?;
        for (i, a) in times.iter().enumerate() {
            for (k, b) in times.iter().enumerate().skip(i + 1) {
                prop_assert!(!(overlap(a, b) && c.jobs[i].program == c.jobs[k].program), "twins {} and {} co-run", i, k);
            }
        }
    }

    #[test]
    fn starts_happen_only_at_events(c in case(true)) {
        // Only arrivals and finishes change what a policy sees, so every start
        // shares its instant with one of them.
        let trace = run(&c, "noplan", None);
        for e in trace.iter().filter(|e| e.kind == EventKind::Start) {
            prop_assert!(trace.iter().any(|o| o.kind != EventKind::Start && o.time == e.time));
        }
    }
}
