//! The ParaStation paper's allocation-internal policies in the simulator, by hand: a
//! 2-core pool, a "simulation" of 10 s on both cores from t=0 and an
//! "analysis" of 2 s on one core arriving at t=2; no memory contention
//! (every pair slowdown 1) unless said, so only the cores decide.

use cosched_model::metrics::{job_times, Event, EventKind, JobTimes};
use cosched_model::workload::PoolKind;
use cosched_engine::run::run_node;
use cosched_sched::{policy_from_spec, simulate, PairTable, Platform, PoolInfo, SimJob, VirtualNode};

fn platform() -> Platform {
    Platform { pools: vec![PoolInfo { name: "host".into(), cores: 2, kind: PoolKind::Cpu }] }
}

fn jobs() -> Vec<SimJob> {
    vec![
        SimJob { name: "simulation".into(), arrival: 0.0, solo: 10.0, pool: 0, cores: 2, program: "stream".into(), variants: vec![] },
        SimJob { name: "analysis".into(), arrival: 2.0, solo: 2.0, pool: 0, cores: 1, program: "stream".into(), variants: vec![] },
    ]
}

fn table(pair: f64) -> PairTable {
    PairTable::new(vec![vec![1.0, pair], vec![pair, 1.0]]).unwrap()
}

/// The simulator's events under `spec`, checked against the runner's loop
/// over the virtual node (the same decisions, the same model).
fn run(spec: &str, pair: f64) -> (Vec<Event>, Vec<JobTimes>) {
    let (p, j, t) = (platform(), jobs(), table(pair));
    let events = simulate(&p, &j, &t, policy_from_spec(spec).unwrap().as_mut()).unwrap();
    let times = job_times(&events, 2).unwrap();
    let mut ex = VirtualNode::new(&j, &t);
    let real = run_node(&p, &j, &t, policy_from_spec(spec).unwrap().as_mut(), &mut ex, &[]).unwrap();
    let vt = job_times(&real.events, 2).unwrap();
    for (a, b) in times.iter().zip(&vt) {
        assert!((a.start - b.start).abs() < 1e-9 && (a.finish - b.finish).abs() < 1e-9 && (a.suspended - b.suspended).abs() < 1e-9, "{spec}: {times:?} vs {vt:?}");
    }
    (events, times)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn wait_runs_the_analysis_after_the_simulation() {
    let (_, t) = run("wait", 1.0);
    assert!(close(t[0].finish, 10.0) && close(t[1].start, 10.0) && close(t[1].finish, 12.0), "{t:?}");
}

#[test]
fn surpass_suspends_the_simulation_while_the_analysis_runs() {
    let (events, t) = run("surpass", 1.0);
    // Suspended 2-4 while the analysis runs alone; 8 s left after.
    assert!(close(t[1].start, 2.0) && close(t[1].finish, 4.0), "{t:?}");
    assert!(close(t[0].suspended, 2.0) && close(t[0].finish, 12.0), "{t:?}");
    let kinds: Vec<(EventKind, usize)> = events.iter().filter(|e| e.job == 0).map(|e| (e.kind, e.job)).collect();
    assert!(kinds.contains(&(EventKind::Suspend, 0)) && kinds.contains(&(EventKind::Resume, 0)));
}

#[test]
fn overbook_shares_core_0_between_the_two() {
    // Core 0 carries 2 threads: the analysis runs at 1/2 (4 s), the
    // simulation at (1/2 + 1)/2 = 3/4 meanwhile: 2 + 3 s done at t=6,
    // 5 s left alone: 11.
    let (_, t) = run("overbook", 1.0);
    assert!(close(t[1].start, 2.0) && close(t[1].finish, 6.0) && close(t[0].finish, 11.0), "{t:?}");
    // Unpinned: 3 threads over 2 cores, 2/3 each: the analysis takes 3 s;
    // the simulation does 2 s of work meanwhile, 6 s left: 11.
    let (_, t) = run("overbook:pin=off", 1.0);
    assert!(close(t[1].finish, 5.0) && close(t[0].finish, 11.0), "{t:?}");
}

#[test]
fn sidestep_squeezes_the_simulation_onto_core_1_and_moves_it_back() {
    // The analysis alone on core 0 (2 s); the simulation's 2 threads on
    // core 1 at 1/2: 1 s of work by t=4, back on both cores, 7 s left: 11.
    let (events, t) = run("sidestep", 1.0);
    assert!(close(t[1].finish, 4.0) && close(t[0].finish, 11.0), "{t:?}");
    assert_eq!(events.iter().filter(|e| e.kind == EventKind::Move && e.job == 0).count(), 2, "away and back");
}

#[test]
fn memory_contention_multiplies_into_the_core_shares() {
    // Overbooked with a pair slowdown of 1.5: the analysis runs at
    // 1/2 / 1.5 = 1/3 (6 s, ends at 8), the simulation at 3/4 / 1.5 = 1/2
    // meanwhile (3 s of work), 5 s left alone: 13.
    let (_, t) = run("overbook", 1.5);
    assert!(close(t[1].finish, 8.0) && close(t[0].finish, 13.0), "{t:?}");
    // Surpassed, nothing runs beside anything: contention never applies.
    let (_, t) = run("surpass", 1.5);
    assert!(close(t[0].finish, 12.0) && close(t[1].finish, 4.0), "{t:?}");
}

#[test]
fn the_djsb_figures_of_the_four_policies_by_hand() {
    use cosched_model::djsb::{djsb, DjsbJob, DjsbParams};
    let jobs = [DjsbJob { solo: 10.0, threads: 2 }, DjsbJob { solo: 2.0, threads: 1 }];
    let p = DjsbParams { normalisation: 8.0, static_wait: 0.0 };
    let d = |spec| djsb(&run(spec, 1.0).1, &jobs, 2, &p).unwrap().dynamicity;
    // Expected slowdowns: simulation 1.1, analysis 2 (module doc).
    // wait: 1.1/1 * 2/1 * 8/(8+8); surpass: 1.1/1.2 * 2 * 1;
    // overbook: 1.1/1.1 * 2/2 * 1; sidestep: 1.1/1.1 * 2/1 * 1.
    assert!(close(d("wait"), 1.1));
    assert!(close(d("surpass"), 2.2 / 1.2));
    assert!(close(d("overbook"), 1.0));
    assert!(close(d("sidestep"), 2.0));
}

fn two_wide(pair: f64) -> (Vec<SimJob>, PairTable) {
    let j = |name: &str| SimJob { name: name.into(), arrival: 0.0, solo: 1.0, pool: 0, cores: 2, program: name.into(), variants: vec![] };
    (vec![j("a"), j("b")], table(pair))
}

fn run_jobs(spec: &str, jobs: &[SimJob], t: &PairTable) -> Vec<JobTimes> {
    let events = simulate(&platform(), jobs, t, policy_from_spec(spec).unwrap().as_mut()).unwrap();
    let times = job_times(&events, jobs.len()).unwrap();
    let real = run_node(&platform(), jobs, t, policy_from_spec(spec).unwrap().as_mut(), &mut VirtualNode::new(jobs, t), &[]).unwrap();
    let vt = job_times(&real.events, jobs.len()).unwrap();
    for (a, b) in times.iter().zip(&vt) {
        assert!((a.finish - b.finish).abs() < 1e-9 && (a.suspended - b.suspended).abs() < 1e-9, "{spec}: {times:?} vs {vt:?}");
    }
    times
}

#[test]
fn timeshare_gives_two_wide_jobs_the_node_in_turns_of_a_quantum() {
    // Quantum 0.25 s, both need both cores for 1 s: a 0-.25, b .25-.5,
    // a .5-.75, b .75-1, a 1-1.25, b 1.25-1.5, a 1.5-1.75 (done), b alone
    // 1.75-2 (done): a was suspended 0.75 s, b 1 s.
    let (jobs, t) = two_wide(1.0);
    let x = run_jobs("timeshare:quantum=0.25", &jobs, &t);
    assert!(close(x[0].finish, 1.75) && close(x[1].finish, 2.0), "{x:?}");
    assert!(close(x[0].suspended, 0.75) && close(x[1].suspended, 1.0), "{x:?}");
    // Taking turns, they never meet: a pair slowdown does not apply.
    let (jobs, t) = two_wide(1.5);
    assert!(close(run_jobs("timeshare:quantum=0.25", &jobs, &t)[1].finish, 2.0));
}

#[test]
fn strict_timeshare_runs_jobs_on_disjoint_cores_side_by_side() {
    let j = |name: &str| SimJob { name: name.into(), arrival: 0.0, solo: 1.0, pool: 0, cores: 1, program: name.into(), variants: vec![] };
    let x = run_jobs("timeshare:quantum=0.25,affinity=strict", &[j("a"), j("b")], &table(1.0));
    assert!(close(x[0].finish, 1.0) && close(x[1].finish, 1.0) && x[0].suspended == 0.0, "{x:?}");
}

#[test]
fn colocate_splits_the_cores_once_and_oversubscription_shares_them() {
    // Each 2-thread job squeezed onto one core: half speed, 2 s each.
    let (jobs, t) = two_wide(1.0);
    let x = run_jobs("colocate", &jobs, &t);
    assert!(close(x[0].finish, 2.0) && close(x[1].finish, 2.0), "{x:?}");
    // Oversubscription (all jobs on all cores): 4 threads on 2 cores, the
    // same half speed; with a pair slowdown 1.5 both take 3 s, while
    // taking turns still takes 2 s.
    let (jobs, t) = two_wide(1.5);
    let x = run_jobs("overbook:pin=off", &jobs, &t);
    assert!(close(x[0].finish, 3.0) && close(x[1].finish, 3.0), "{x:?}");
}
