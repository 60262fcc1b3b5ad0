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
        variants: vec![],
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

/// The SX-Aurora paper's shape: a host pool and an accelerator pool of one slot each,
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
                    let d = Decision::Start { job: q.id, pool: q.pool };
                    [d.clone(), d]
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

/// A long host job H1 (300 s) and three accelerator jobs of 100 s: V1 conflicts
/// with H1 (both x1.5), V2 and V3 are mild (both x1.1).
fn one_long_host_job() -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform {
        pools: vec![
            pool("host", 1, PoolKind::Cpu),
            pool("ve", 1, PoolKind::Accelerator { host_load: 0.5 }),
        ],
    };
    let jobs = vec![
        job("H1", 0, 300.0, "h1"),
        job("V1", 1, 100.0, "v1"),
        job("V2", 1, 100.0, "v2"),
        job("V3", 1, 100.0, "v3"),
    ];
    let table = PairTable::new(vec![
        vec![1.0, 1.5, 1.1, 1.1],
        vec![1.5, 1.0, 1.0, 1.0],
        vec![1.1, 1.0, 1.0, 1.0],
        vec![1.1, 1.0, 1.0, 1.0],
    ])
    .unwrap();
    (platform, jobs, table)
}

#[test]
fn best_match_greedy_takes_the_cheapest_co_runner() {
    let (platform, jobs, table) = seed000_like();
    // t=0: H1 starts (an empty node costs nothing); beside it V1 costs
    // 0.25 + 0.5 and V2 0.1 + 0.1, so V2 starts. Both x1.1 end at 110; then H2
    // with V1 (0.1 + 0.1), both x1.1, end at 220.
    let t = run("best-match", &[("aging", "10"), ("window", "0")], &platform, &jobs, &table);
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
fn best_match_greedy_aging_bounds_how_often_a_job_is_passed_over() {
    let (platform, jobs, table) = one_long_host_job();
    // Never forced (aging 2 is never reached by V1): V2, V3, then V1.
    // t=0 H1+V2 x1.1: V2 ends 110 (H1 at 100 s of work); V3 likewise to 220
    // (H1 at 200); V1 then runs with H1 x1.5, and both have 100 s of work
    // left: they end together at 370.
    let t = run("best-match", &[("aging", "2"), ("window", "0")], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 2, 3, 1]);
    close(finish_of(&t, 2), 110.0);
    close(finish_of(&t, 3), 220.0);
    close(finish_of(&t, 0), 370.0);
    close(finish_of(&t, 1), 370.0);
    let m = compute(&t, &[300.0, 100.0, 100.0, 100.0]).unwrap();
    close(m.makespan, 370.0);
    close(m.worst_slowdown, 1.5);

    // aging 1: V1 was passed over once at t=0, so it goes next at 110, x1.5 with
    // H1 until 260 (H1 at 200); V3 then ends with H1 at 370.
    let t = run("best-match", &[("aging", "1"), ("window", "0")], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 2, 1, 3]);
    for (j, f) in [(2, 110.0), (1, 260.0), (0, 370.0), (3, 370.0)] {
        close(finish_of(&t, j), f);
    }
    let m = compute(&t, &[300.0, 100.0, 100.0, 100.0]).unwrap();
    close(m.makespan, 370.0);
    close(m.avg_turnaround, (370.0 + 260.0 + 110.0 + 370.0) / 4.0);
    close(m.worst_wait, 260.0);

    // aging 0 forces the queue's order: noplan.
    let t = run("best-match", &[("aging", "0"), ("window", "0")], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 1, 2, 3]);
    assert_eq!(t, run("noplan", &[], &platform, &jobs, &table));
}

/// seed000_like with H2 beside V2 changed to a pair that breaks a bound of 1.3
/// at score 45 (H2 x1.45, V2 x1.2); H1-V1 is score 50, the rest score 10.
fn learnable() -> (Platform, Vec<SimJob>, PairTable) {
    let (platform, jobs, _) = seed000_like();
    let table = PairTable::new(vec![
        vec![1.0, 1.0, 1.5, 1.1],
        vec![1.0, 1.0, 1.1, 1.45],
        vec![1.25, 1.1, 1.0, 1.0],
        vec![1.1, 1.2, 1.0, 1.0],
    ])
    .unwrap();
    (platform, jobs, table)
}

#[test]
fn auto_threshold_learns_from_a_job_over_its_bound() {
    let (platform, jobs, table) = learnable();
    let params = [("bound", "1.3"), ("start", "60"), ("step", "10"), ("explore", "off")];
    // t=0: T=60 admits H1+V1 (score 50): x1.5 / x1.25. V1 ends at 125 within
    // the bound: T=max(60, 50+10)=60. V2 joins H1 (score 10); H1 ends at 143.33, slowdown 1.43
    // over the bound after a co-run at 50: bad=50, T=40. H2 beside V2 scores
    // 45 > 40, so the host waits; V2 ends alone at 226.67, and H2 runs alone
    // to 326.67.
    let t = run("auto-threshold", &params, &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 2, 3, 1]);
    for (j, f) in [(2, 125.0), (0, 430.0 / 3.0), (3, 680.0 / 3.0), (1, 980.0 / 3.0)] {
        close(finish_of(&t, j), f);
    }
    let m = compute(&t, &[100.0; 4]).unwrap();
    close(m.makespan, 980.0 / 3.0);
    close(m.avg_turnaround, (430.0 / 3.0 + 980.0 / 3.0 + 125.0 + 680.0 / 3.0) / 4.0);
    close(m.worst_slowdown, 1.43 + 1.0 / 300.0);

    // The fixed threshold it started from co-runs H2 with V2 at 143.33: V2's
    // 83.33 s take x1.2 to 243.33; H2 has 68.97 s done and ends alone at
    // 243.33 + 31.03, over the bound (x1.31).
    let fixed = run("conflict-aware", &[("threshold", "60")], &platform, &jobs, &table);
    assert_eq!(starts(&fixed), vec![0, 2, 3, 1]);
    close(finish_of(&fixed, 3), 730.0 / 3.0);
    close(finish_of(&fixed, 1), 730.0 / 3.0 + 100.0 - 100.0 / 1.45);

    // Exploring, the host does not idle at 143.33: score 45 is above T = 40
    // but below bad = 50, so H2 is tried beside V2, which is the fixed
    // threshold's schedule; H2 over the bound then makes 45 bad too.
    let t = run("auto-threshold", &params[..3], &platform, &jobs, &table);
    assert_eq!(t, fixed);
}

#[test]
fn auto_threshold_threshold_moves_by_its_rule() {
    use cosched_sched::policies::AutoThreshold;
    use cosched_sched::{JobOutcome, Policy};
    let (platform, jobs, table) = learnable();
    let mut p = AutoThreshold::new(1.3, 60.0, 10.0).unwrap().exploring(false);
    simulate(&platform, &jobs, &table, &mut p).unwrap();
    // V1 within at 50 (60), H1 over at 50 (40), V2 within at 10 (40), H2 ran
    // alone (40).
    close(p.threshold(), 40.0);
    let mut p = AutoThreshold::new(1.3, 60.0, 10.0).unwrap();
    simulate(&platform, &jobs, &table, &mut p).unwrap();
    // As above to H1; then V2 within at 45 (capped at 50 - 10 = 40) and the
    // explored H2 over at 45 (45 - 10).
    close(p.threshold(), 35.0);
    let mut p = AutoThreshold::new(1.5, 0.0, 5.0).unwrap();
    let done = |job, slowdown| JobOutcome {
        suspended_s: 0.0,
        job,
        program: "x",
        arrival: 0.0,
        start: 0.0,
        finish: slowdown,
        solo: 1.0,
        slowdown,
    };
    // A job the policy never saw co-run changes nothing.
    p.observe(&done(7, 3.0));
    close(p.threshold(), 0.0);
    // a and b co-run at C_all 30. a within the bound keeps T at
    // max(40, 30 + 5) = 40; b over it makes bad = 30 and T = 30 - 5.
    let platform = Platform { pools: vec![pool("cpu", 2, PoolKind::Cpu)] };
    let two = [job("a", 0, 1.0, "a"), job("b", 0, 1.0, "b")];
    let scores = PairTable::new(vec![vec![1.0; 2]; 2]).unwrap().with_host_loads(vec![0.1, 0.2]).unwrap();
    let q: Vec<cosched_sched::QueuedJob> = two
        .iter()
        .enumerate()
        .map(|(id, j)| cosched_sched::QueuedJob { id, name: &j.name, pool: 0, cores: 1, solo: 1.0, program: &j.program, variants: &[] })
        .collect();
    let view = cosched_sched::View { time: 0.0, queue: &q, running: &[], pools: &platform.pools, slowdown: &scores };
    let mut p = AutoThreshold::new(1.5, 40.0, 5.0).unwrap();
    assert_eq!(p.decide(&view).len(), 2, "score 30 <= 40: both start");
    p.observe(&done(0, 1.2));
    close(p.threshold(), 40.0);
    p.observe(&done(1, 1.6));
    close(p.threshold(), 25.0);
    assert!(AutoThreshold::new(0.5, 100.0, 10.0).is_err());
    assert!(AutoThreshold::new(1.5, 100.0, 0.0).is_err());
}

#[test]
fn jobs_spread_over_nodes_and_wait_for_the_first_free_one() {
    use cosched_sched::{simulate_with, SimOptions};
    let platform = Platform {
        pools: vec![pool("cpu", 1, PoolKind::Cpu)],
    };
    let jobs = vec![
        job("a", 0, 30.0, "a"),
        job("b", 0, 10.0, "b"),
        job("c", 0, 20.0, "c"),
        job("d", 0, 5.0, "d"),
    ];
    let table = PairTable::new(vec![vec![2.0; 4]; 4]).unwrap();
    let mut p = policy_by_name("noplan", &Params::new()).unwrap();
    let opts = SimOptions { nodes: 2, window: None };
    let t = simulate_with(&platform, &jobs, &table, &table, p.as_mut(), &opts).unwrap();
    // a on node 0, b on node 1; b ends at 10 and c takes node 1 to 30, where a
    // also ends: node 0 comes first, so d runs there to 35.
    assert_eq!(t.node, vec![0, 1, 1, 0]);
    assert_eq!(starts(&t.events), vec![0, 1, 2, 3]);
    for (j, f) in [(0, 30.0), (1, 10.0), (2, 30.0), (3, 35.0)] {
        close(finish_of(&t.events, j), f);
    }
    // A window of one job shows a policy only the queue's head.
    let mut p = policy_by_name("best-match", &Params::new()).unwrap();
    let opts = SimOptions { nodes: 1, window: Some(1) };
    let t = simulate_with(&platform, &jobs, &table, &table, p.as_mut(), &opts).unwrap();
    assert_eq!(starts(&t.events), vec![0, 1, 2, 3]);
    close(compute(&t.events, &[30.0, 10.0, 20.0, 5.0]).unwrap().makespan, 65.0);
}

/// examples/memory-half.toml by hand: four triads (jobs 0-3, 1.6 beside each
/// other) queued before four core-bound loops (jobs 4-7; a loop is 1.02
/// beside a triad, a triad 1.0 beside a loop, two loops 1.0), all 1.5 s.
fn memory_half() -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform { pools: vec![pool("host", 2, PoolKind::Cpu)] };
    let jobs: Vec<SimJob> = (0..8)
        .map(|i| if i < 4 { job(&format!("triad{i}"), 0, 1.5, "triad") } else { job(&format!("loop{i}"), 0, 1.5, "loop") })
        .collect();
    let cell = |a: usize, b: usize| match (a < 4, b < 4) {
        _ if a == b => 1.0,
        (true, true) => 1.6,
        (false, true) => 1.02,
        _ => 1.0,
    };
    let table = PairTable::new((0..8).map(|a| (0..8).map(|b| cell(a, b)).collect()).collect()).unwrap();
    (platform, jobs, table)
}

fn triads_overlap(trace: &[Event]) -> bool {
    let start_of = |j: usize| trace.iter().find(|e| e.kind == EventKind::Start && e.job == j).unwrap().time;
    (0..4).any(|a| (a + 1..4).any(|b| start_of(a) < finish_of(trace, b) && start_of(b) < finish_of(trace, a)))
}

#[test]
fn best_match_greedy_burns_the_loops_and_pairs_the_last_triads() {
    let (platform, jobs, table) = memory_half();
    // t=0: triad0 (empty node), then loop4 (0.02 against 1.2). Beside a
    // running loop another loop costs 0 and a triad 0.02, so loops 5, 6, 7
    // follow each other; triad1 starts beside the last loop at 3.03, and
    // triads 2 and 3 are left to run beside each other.
    let t = run("best-match", &[("window", "0")], &platform, &jobs, &table);
    assert_eq!(starts(&t), vec![0, 4, 5, 6, 7, 1, 2, 3]);
    close(finish_of(&t, 0), 1.5);
    // loop4 did 1.5 / 1.02 beside triad0, the rest alongside loop5 at 1.0.
    close(finish_of(&t, 4), 1.5 + 0.03 / 1.02);
    assert!(triads_overlap(&t));
    let m = compute(&t, &[1.5; 8]).unwrap();
    close(m.worst_slowdown, 1.6);
}

#[test]
fn best_match_rollout_pairs_every_triad_with_a_loop() {
    let (platform, jobs, table) = memory_half();
    let t = run("best-match", &[("window", "8")], &platform, &jobs, &table);
    // t=0 triad0 + loop4. At 1.5 loop4 has 0.03 / 1.02 s left: a triad
    // beside it would soon be alone, so loop5 starts and triad1 joins it when
    // loop4 ends; the same twice more. Each triad runs beside one loop only
    // (rate 1), each loop 0.03 / 1.02 s beside another loop and the rest
    // beside a triad (rate 1 / 1.02).
    assert_eq!(starts(&t), vec![0, 4, 5, 1, 2, 6, 7, 3]);
    let e = 0.03 / 1.02;
    for (j, f) in [(0, 1.5), (4, 1.5 + e), (5, 3.0 + e), (1, 3.0 + e), (2, 4.5 + e), (6, 4.5 + 2.0 * e), (7, 6.0 + 2.0 * e), (3, 6.0 + 2.0 * e)] {
        close(finish_of(&t, j), f);
    }
    assert!(!triads_overlap(&t));
    // The worst is loop5 (or loop7): 1.5 + 0.03 / 1.02 s for 1.5 s of work.
    let m = compute(&t, &[1.5; 8]).unwrap();
    close(m.worst_slowdown, 1.0 + 0.02 / 1.02);
    close(m.makespan, 6.0 + 2.0 * e);
}

#[test]
fn conflict_aware_gain_co_runs_a_refused_pair_only_when_it_beats_running_them_in_turn() {
    let platform = Platform { pools: vec![pool("host", 2, PoolKind::Cpu)] };
    let jobs = vec![job("a", 0, 10.0, "a"), job("b", 0, 10.0, "b")];
    let pair = |s: f64| PairTable::new(vec![vec![1.0, s], vec![s, 1.0]]).unwrap();
    // Score of the pair: 90 % (1.9), over the threshold of 50.
    let slow = pair(1.9);
    let seq = run("conflict-aware", &[("threshold", "50")], &platform, &jobs, &slow);
    assert_eq!(starts(&seq), vec![0, 1]);
    close(finish_of(&seq, 1), 20.0);
    // 1/1.9 + 1/1.9 = 1.05 > 1: the pair runs, both end at 19.
    let t = run("conflict-aware", &[("threshold", "50"), ("idle", "gain")], &platform, &jobs, &slow);
    close(finish_of(&t, 0), 19.0);
    close(finish_of(&t, 1), 19.0);
    // 1/2.1 + 1/2.1 < 1: running them in turn is faster, so b waits.
    let worse = pair(2.1);
    let t = run("conflict-aware", &[("threshold", "50"), ("idle", "gain")], &platform, &jobs, &worse);
    close(finish_of(&t, 0), 10.0);
    close(finish_of(&t, 1), 20.0);
    assert_eq!(t, run("conflict-aware", &[("threshold", "50")], &platform, &jobs, &worse));
}
