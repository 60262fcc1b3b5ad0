//! The nOS-V paper's static and dynamic co-location in the simulator, by
//! hand: a 2-core pool, jobs of two threads squeezed onto one core each
//! run at half speed; `colocate:rebalance=on` hands a finished job's core
//! to the survivor and takes it back for a newcomer. Every case is checked
//! against the runner's loop over the virtual node too.

use cosched_model::metrics::{job_times, Event, EventKind, JobTimes};
use cosched_model::workload::PoolKind;
use cosched_engine::run::run_node;
use cosched_sched::{policy_from_spec, simulate, PairTable, Platform, PoolInfo, SimJob, VirtualNode};

const DYNAMIC: &str = "colocate:rebalance=on";

fn platform() -> Platform {
    Platform { pools: vec![PoolInfo { name: "host".into(), cores: 2, kind: PoolKind::Cpu }] }
}

fn job(name: &str, arrival: f64, solo: f64, cores: u32) -> SimJob {
    SimJob { name: name.into(), arrival, solo, pool: 0, cores, program: name.into(), variants: vec![] }
}

fn table(n: usize, pair: f64) -> PairTable {
    PairTable::new((0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { pair }).collect()).collect()).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The simulator's events and job times under `spec`, checked against the
/// runner's loop over the virtual node (the same decisions and model).
fn run(spec: &str, jobs: &[SimJob], t: &PairTable) -> (Vec<Event>, Vec<JobTimes>) {
    let events = simulate(&platform(), jobs, t, policy_from_spec(spec).unwrap().as_mut()).unwrap();
    let times = job_times(&events, jobs.len()).unwrap();
    let real = run_node(&platform(), jobs, t, policy_from_spec(spec).unwrap().as_mut(), &mut VirtualNode::new(jobs, t), &[]).unwrap();
    let vt = job_times(&real.events, jobs.len()).unwrap();
    for (a, b) in times.iter().zip(&vt) {
        assert!(close(a.start, b.start) && close(a.finish, b.finish), "{spec}: {times:?} vs {vt:?}");
    }
    let moves = |e: &[Event]| e.iter().filter(|e| e.kind == EventKind::Move).map(|e| (e.job, e.time)).collect::<Vec<_>>();
    assert_eq!(moves(&events), moves(&real.events), "{spec}: the same moves at the same times");
    (events, times)
}

fn moves_of(events: &[Event], job: usize) -> Vec<f64> {
    events.iter().filter(|e| e.kind == EventKind::Move && e.job == job).map(|e| e.time).collect()
}

#[test]
fn the_survivor_of_a_pair_gets_the_finished_jobs_core_and_static_colocation_leaves_it_idle() {
    // a (1 s) and b (2 s), two threads each, one core each: half speed.
    // a ends at 2; b has done 1 s. Static: still half speed, ends at 4.
    // Dynamic: b moves onto both cores at 2, full speed, ends at 3.
    let jobs = [job("a", 0.0, 1.0, 2), job("b", 0.0, 2.0, 2)];
    let (events, x) = run("colocate", &jobs, &table(2, 1.0));
    assert!(close(x[0].finish, 2.0) && close(x[1].finish, 4.0), "{x:?}");
    assert!(moves_of(&events, 1).is_empty(), "static co-location never moves");
    let (events, x) = run(DYNAMIC, &jobs, &table(2, 1.0));
    assert!(close(x[0].finish, 2.0) && close(x[1].finish, 3.0), "{x:?}");
    assert_eq!(moves_of(&events, 1), [2.0]);
    assert!(moves_of(&events, 0).is_empty());
    // With a pair slowdown of 1.5 (memory contention) while both run: rate
    // 1/2 / 1.5 = 1/3, a ends at 3 with b 1 s done; b alone: static at 1/2
    // (ends at 5), dynamic at 1 (ends at 4).
    let (_, x) = run("colocate", &jobs, &table(2, 1.5));
    assert!(close(x[0].finish, 3.0) && close(x[1].finish, 5.0), "{x:?}");
    let (_, x) = run(DYNAMIC, &jobs, &table(2, 1.5));
    assert!(close(x[0].finish, 3.0) && close(x[1].finish, 4.0), "{x:?}");
}

#[test]
fn a_newcomer_takes_the_lent_core_back_and_gives_it_again_when_it_ends() {
    // a (1 s) and b (4 s), two threads each, share the cores until a ends
    // at 2 (b: 1 s done), b then runs on both at full speed; c (1 s, one
    // thread) arrives at 3 (b: 2 s done): b moves home to core 1 (half
    // speed), c starts on core 0 and ends at 4 (b: 2.5 s done); b gets
    // core 0 back and ends at 5.5.
    let jobs = [job("a", 0.0, 1.0, 2), job("b", 0.0, 4.0, 2), job("c", 3.0, 1.0, 1)];
    let (events, x) = run(DYNAMIC, &jobs, &table(3, 1.0));
    assert!(close(x[0].finish, 2.0) && close(x[2].start, 3.0) && close(x[2].finish, 4.0) && close(x[1].finish, 5.5), "{x:?}");
    assert_eq!(moves_of(&events, 1), [2.0, 3.0, 4.0], "out, home, out again");
    // Static: a's core idles from 2 until c comes at 3; b runs at half
    // speed throughout and ends at 8.
    let (_, x) = run("colocate", &jobs, &table(3, 1.0));
    assert!(close(x[2].start, 3.0) && close(x[2].finish, 4.0) && close(x[1].finish, 8.0), "{x:?}");
}

#[test]
fn a_third_job_waits_for_a_core_and_no_job_gets_more_cores_than_threads() {
    // Three one-thread jobs of 1, 2 and 3 s on two cores: the third waits
    // for the first's core; nobody is squeezed, so nothing is lent and
    // nothing moves: the dynamic policy is the static one here.
    let jobs = [job("a", 0.0, 1.0, 1), job("b", 0.0, 2.0, 1), job("c", 0.0, 3.0, 1)];
    let (events, x) = run(DYNAMIC, &jobs, &table(3, 1.0));
    assert!(close(x[0].finish, 1.0) && close(x[1].finish, 2.0) && close(x[2].start, 1.0) && close(x[2].finish, 4.0), "{x:?}");
    assert!(events.iter().all(|e| e.kind != EventKind::Move), "one-thread jobs are never given a second core");
}
