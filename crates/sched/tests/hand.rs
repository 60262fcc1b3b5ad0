//! Tiny schedules worked out by hand: exact starts, finishes and makespans.

use cosched_model::metrics::{compute, EventKind};
use cosched_model::workload::PoolKind;
use cosched_sched::{
    policy_by_name, simulate, Event, PairTable, Params, Platform, PoolInfo, SimJob,
};

fn pool(name: &str, cores: u32, kind: PoolKind) -> PoolInfo {
    PoolInfo {
        name: name.into(),
        cores,
        kind,
    }
}

fn job(name: &str, pool: usize, solo: f64, program: &str) -> SimJob {
    SimJob {
        name: name.into(),
        arrival: 0.0,
        solo,
        pool,
        cores: 1,
        program: program.into(),
    }
}

fn run(
    policy: &str,
    params: &[(&str, &str)],
    platform: &Platform,
    jobs: &[SimJob],
    table: &PairTable,
) -> Vec<Event> {
    let params: Params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut p = policy_by_name(policy, &params).unwrap();
    simulate(platform, jobs, table, p.as_mut()).unwrap()
}

fn starts(trace: &[Event]) -> Vec<usize> {
    trace
        .iter()
        .filter(|e| e.kind == EventKind::Start)
        .map(|e| e.job)
        .collect()
}

fn finish_of(trace: &[Event], job: usize) -> f64 {
    trace
        .iter()
        .find(|e| e.kind == EventKind::Finish && e.job == job)
        .unwrap()
        .time
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// Seed 000's shape: a host pool and an accelerator pool of one slot each,
/// two jobs per pool of 100 s. H1 beside V1 conflicts (1.5 / 1.25, score 50);
/// every other cross pair is mild (score 10 or 20).
fn seed000_like() -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform {
        pools: vec![
            pool("host", 1, PoolKind::Cpu),
            pool("ve", 1, PoolKind::Accelerator { host_load: 0.5 }),
        ],
    };
    let jobs = vec![
        job("H1", 0, 100.0, "h1"),
        job("H2", 0, 100.0, "h2"),
        job("V1", 1, 100.0, "v1"),
        job("V2", 1, 100.0, "v2"),
    ];
    let table = PairTable::new(vec![
        vec![1.0, 2.0, 1.5, 1.1],
        vec![2.0, 1.0, 1.1, 1.2],
        vec![1.25, 1.1, 1.0, 2.0],
        vec![1.1, 1.2, 2.0, 1.0],
    ])
    .unwrap();
    (platform, jobs, table)
}

#[test]
fn exclusive_runs_one_job_at_a_time() {
    let (platform, jobs, table) = seed000_like();
    let t = run("exclusive", &[], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 1, 2, 3]);
    for j in 0..4 {
        close(finish_of(&t, j), 100.0 * (j + 1) as f64);
    }
    let m = compute(&t, &[100.0; 4]).unwrap();
    close(m.makespan, 400.0);
    close(m.avg_turnaround, 250.0);
    close(m.worst_slowdown, 1.0);
}

#[test]
fn noplan_rates_change_when_co_runners_change() {
    let (platform, jobs, table) = seed000_like();
    let t = run("noplan", &[], &platform, &jobs, &table);
    // t=0: H1 (x1.5) with V1 (x1.25); V1 ends at 125 with H1 at 83.33 s of work.
    // t=125: V2 joins; H1's last 16.67 s take x1.1 -> ends at 143.33, V2 at 16.67 s.
    // t=143.33: H2 joins V2, both x1.2; V2's 83.33 s end at 243.33, H2 then at
    // 83.33 s finishes alone at 260.
    assert_eq!(starts(&t), vec![0, 2, 3, 1]);
    close(finish_of(&t, 2), 125.0);
    close(finish_of(&t, 0), 430.0 / 3.0);
    close(finish_of(&t, 3), 730.0 / 3.0);
    close(finish_of(&t, 1), 260.0);
    let m = compute(&t, &[100.0; 4]).unwrap();
    close(m.makespan, 260.0);
    close(m.worst_turnaround, 260.0);
    close(
        m.avg_turnaround,
        (430.0 / 3.0 + 260.0 + 125.0 + 730.0 / 3.0) / 4.0,
    );
    close(m.worst_slowdown, 430.0 / 3.0 / 100.0);
}

#[test]
fn conflict_aware_keeps_the_conflicting_pair_apart() {
    let (platform, jobs, table) = seed000_like();
    let t = run(
        "conflict-aware",
        &[("threshold", "30")],
        &platform,
        &jobs,
        &table,
    );
    // t=0: heads H1, V1 conflict (50 > 30); queues tie, so the first pool's head
    // H1 starts; the idle ve pool skips V1 and takes V2 (score 10). Both x1.1
    // end at 110; then H2 and V1 (score 10) both x1.1 end at 220.
    assert_eq!(starts(&t), vec![0, 3, 1, 2]);
    for (j, f) in [(0, 110.0), (3, 110.0), (1, 220.0), (2, 220.0)] {
        close(finish_of(&t, j), f);
    }
    let m = compute(&t, &[100.0; 4]).unwrap();
    close(m.makespan, 220.0);
    close(m.avg_turnaround, 165.0);
    close(m.worst_slowdown, 1.1);
}

#[test]
fn conflict_aware_waits_when_nothing_fits_the_threshold() {
    let (platform, jobs, table) = seed000_like();
    // T = 5: no cross pair is within it, so nothing ever co-runs: the longer
    // queue's head starts alone each time the node empties (host first on ties).
    let t = run(
        "conflict-aware",
        &[("threshold", "5")],
        &platform,
        &jobs,
        &table,
    );
    assert_eq!(starts(&t), vec![0, 2, 1, 3]);
    close(compute(&t, &[100.0; 4]).unwrap().makespan, 400.0);
}

#[test]
fn conflict_aware_uses_c_all_with_host_loads() {
    let (platform, jobs, _) = seed000_like();
    // Host loads make C_all(H1, V1) = 120 % and every other cross pair 40-90 %, so
    // T = 100 separates the same pair as the slowdown score did.
    let table = PairTable::new(vec![vec![1.0; 4]; 4])
        .unwrap()
        .with_host_loads(vec![0.8, 0.3, 0.4, 0.1])
        .unwrap();
    let t = run(
        "conflict-aware",
        &[("threshold", "100%")],
        &platform,
        &jobs,
        &table,
    );
    assert_eq!(starts(&t), vec![0, 3, 1, 2]);
    close(compute(&t, &[100.0; 4]).unwrap().makespan, 200.0);
}

/// One pool of two cores, two programs with two instances each; twins slow
/// each other x2, different programs x1.25.
fn twins() -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform {
        pools: vec![pool("cpu", 2, PoolKind::Cpu)],
    };
    let jobs = vec![
        job("a.0", 0, 100.0, "a"),
        job("a.1", 0, 100.0, "a"),
        job("b.0", 0, 50.0, "b"),
        job("b.1", 0, 50.0, "b"),
    ];
    let table = PairTable::new(vec![
        vec![1.0, 2.0, 1.25, 1.25],
        vec![2.0, 1.0, 1.25, 1.25],
        vec![1.25, 1.25, 1.0, 2.0],
        vec![1.25, 1.25, 2.0, 1.0],
    ])
    .unwrap();
    (platform, jobs, table)
}

#[test]
fn noplan_co_runs_twins() {
    let (platform, jobs, table) = twins();
    let t = run("noplan", &[], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 1, 2, 3]);
    for (j, f) in [(0, 200.0), (1, 200.0), (2, 300.0), (3, 300.0)] {
        close(finish_of(&t, j), f);
    }
}

#[test]
fn no_twins_pairs_different_programs() {
    let (platform, jobs, table) = twins();
    let t = run("no-twins", &[], &platform, &jobs, &table);
    // t=0: a.0 with b.0 (x1.25): b.0 ends at 62.5 with a.0 at 50 s of work;
    // b.1 joins (a.1 is a twin of a.0) and both end at 125; a.1 runs alone to 225.
    assert_eq!(starts(&t), vec![0, 2, 3, 1]);
    for (j, f) in [(0, 125.0), (2, 62.5), (3, 125.0), (1, 225.0)] {
        close(finish_of(&t, j), f);
    }
    let m = compute(&t, &[100.0, 100.0, 50.0, 50.0]).unwrap();
    close(m.makespan, 225.0);
    close(m.avg_turnaround, (125.0 + 225.0 + 62.5 + 125.0) / 4.0);
    close(m.worst_wait, 125.0);
}

#[test]
fn late_arrivals_leave_the_node_idle_and_count_from_arrival() {
    let platform = Platform {
        pools: vec![pool("cpu", 1, PoolKind::Cpu)],
    };
    let mut jobs = vec![job("x", 0, 10.0, "x"), job("y", 0, 10.0, "y")];
    jobs[1].arrival = 20.0;
    let table = PairTable::new(vec![vec![1.0; 2]; 2]).unwrap();
    let t = run("noplan", &[], &platform, &jobs, &table);
    let kinds: Vec<(f64, usize, EventKind)> = t.iter().map(|e| (e.time, e.job, e.kind)).collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        vec![
            (0.0, 0, Arrive),
            (0.0, 0, Start),
            (10.0, 0, Finish),
            (20.0, 1, Arrive),
            (20.0, 1, Start),
            (30.0, 1, Finish)
        ]
    );
    let m = compute(&t, &[10.0, 10.0]).unwrap();
    close(m.makespan, 30.0);
    close(m.avg_turnaround, 10.0);
}

#[test]
fn trace_serializes_to_json() {
    let (platform, jobs, table) = seed000_like();
    let t = run("noplan", &[], &platform, &jobs, &table);
    let text = serde_json::to_string(&t).unwrap();
    assert!(
        text.starts_with(r#"[{"time":0.0,"job":0,"kind":"arrive"}"#),
        "{text}"
    );
    let back: Vec<Event> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, t);
}

#[test]
fn bad_inputs_and_decisions_are_errors() {
    use cosched_sched::{Decision, Policy, SimError, View};
    let (platform, mut jobs, table) = seed000_like();
    struct Twice;
    impl Policy for Twice {
        fn decide(&mut self, view: &View) -> Vec<Decision> {
            view.queue
                .iter()
                .take(1)
                .flat_map(|q| {
                    [Decision::Start {
                        job: q.id,
                        pool: q.pool,
                    }; 2]
                })
                .collect()
        }
    }
    assert!(matches!(
        simulate(&platform, &jobs, &table, &mut Twice),
        Err(SimError::Decision { .. })
    ));
    struct Never;
    impl Policy for Never {
        fn decide(&mut self, _: &View) -> Vec<Decision> {
            Vec::new()
        }
    }
    assert!(matches!(
        simulate(&platform, &jobs, &table, &mut Never),
        Err(SimError::Stalled { .. })
    ));
    jobs[0].cores = 2;
    let mut p = policy_by_name("noplan", &Params::new()).unwrap();
    assert!(matches!(
        simulate(&platform, &jobs, &table, p.as_mut()),
        Err(SimError::Input(_))
    ));
}

#[test]
fn a_blind_predictor_costs_what_noplan_costs() {
    use cosched_sched::simulate_predicted;
    let (platform, jobs, truth) = seed000_like();
    // A predictor that sees no conflict lets conflict-aware start H1 with V1,
    // and the true slowdowns then give noplan's schedule exactly.
    let blind = PairTable::new(vec![vec![1.0; 4]; 4]).unwrap();
    let mut p = policy_by_name(
        "conflict-aware",
        &[("threshold".to_string(), "30".to_string())].into(),
    )
    .unwrap();
    let t = simulate_predicted(&platform, &jobs, &truth, &blind, p.as_mut()).unwrap();
    assert_eq!(t, run("noplan", &[], &platform, &jobs, &truth));
    close(compute(&t, &[100.0; 4]).unwrap().makespan, 260.0);
}
