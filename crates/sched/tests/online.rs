//! Online estimates, learning and reaction in virtual time (issue 38): the
//! runner's loop over a `VirtualNode` whose truth differs from what the
//! policy is shown, read every second, by hand.
//!
//! A 2-core pool; job A (program a, 100 s alone), B1 and B2 (program b,
//! 10 s) and C (program c, 10 s), one core each, all waiting at t = 0.
//! The truth: a and b slow each other by 3, every other pair by nothing.
//! The policy is shown the blind prediction: every pair 1.

use std::collections::BTreeMap;

use cosched_engine::online::{Estimate, Signal};
use cosched_model::metrics::{EventKind, JobId};
use cosched_model::workload::PoolKind;
use cosched_engine::run::run_node;
use cosched_sched::{policy_from_spec, PairTable, Platform, PoolInfo, RunningJob, SimJob, SlowdownSource, View, VirtualNode};
use proptest::prelude::*;

fn platform() -> Platform {
    Platform { pools: vec![PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }] }
}

fn job(name: &str, program: &str, solo: f64) -> SimJob {
    SimJob { name: name.into(), arrival: 0.0, solo, pool: 0, cores: 1, program: program.into(), variants: vec![] }
}

fn jobs() -> Vec<SimJob> {
    vec![job("A", "a", 100.0), job("B1", "b", 10.0), job("B2", "b", 10.0), job("C", "c", 10.0)]
}

fn truth() -> PairTable {
    let mut m = vec![vec![1.0; 4]; 4];
    for b in [1, 2] {
        m[0][b] = 3.0;
        m[b][0] = 3.0;
    }
    PairTable::new(m).unwrap()
}

fn blind() -> PairTable {
    PairTable::new(vec![vec![1.0; 4]; 4]).unwrap()
}

/// Start order and the trace of `spec` shown the blind prediction, the
/// node read every second when `sampled`.
fn run(spec: &str, sampled: bool) -> (Vec<JobId>, cosched_model::trace::Trace) {
    let (p, j, t, b) = (platform(), jobs(), truth(), blind());
    let mut node = VirtualNode::new(&j, &t);
    if sampled {
        node = node.sampled(1.0);
    }
    let trace = run_node(&p, &j, &b, policy_from_spec(spec).unwrap().as_mut(), &mut node, &[]).unwrap();
    (node.starts().iter().map(|s| s.job).collect(), trace)
}

fn at(trace: &cosched_model::trace::Trace, job: JobId, kind: EventKind) -> Option<f64> {
    trace.events.iter().find(|e| e.job == job && e.kind == kind).map(|e| e.time)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn a_settled_misprediction_changes_the_next_start() {
    // Blind, best-match sees no difference between the jobs and takes the
    // queue's order: A and B1 at 0; B1 (3x slower) ends at 30, then B2.
    let (order, _) = run("best-match:window=0", false);
    assert_eq!(order, vec![0, 1, 2, 3]);
    // Read every second, B1's phase beside A starts at its first reading
    // (t = 1); six segments later (t = 7) its estimate is 3 with an
    // interval of exactly 3, which excludes the prediction 1: the run
    // learns a|b = 3 both ways. At t = 30 best-match prices B2 beside A at
    // 3 x 3 and C at 1, and starts C.
    let (order, trace) = run("best-match:window=0", true);
    assert_eq!(order, vec![0, 1, 3, 2]);
    assert!(close(at(&trace, 3, EventKind::Start).unwrap(), 30.0));
    let first = trace.estimates.iter().find(|e| e.job == 1 && e.time >= 7.0 - 1e-9).unwrap();
    assert!(close(first.time, 7.0) && close(first.slowdown, 3.0) && close(first.lo, 3.0), "{first:?}");
    assert_eq!(first.signal, "progress");
}

#[test]
fn react_suspends_the_newer_of_a_harmful_pair_and_the_inner_policy_fills_the_core() {
    // Without reaction noplan runs A beside B1 until B1 ends at 30.
    let (_, plain) = run("noplan", true);
    assert!(close(at(&plain, 1, EventKind::Finish).unwrap(), 30.0));
    assert!(at(&plain, 1, EventKind::Suspend).is_none());
    // With it, B1 (the newer) is suspended once the estimate settles at
    // t = 7; noplan starts B2 on the freed core, which the run now knows
    // hurts as much: suspended at 7 + 7 = 14 after its own six segments
    // (a new phase starts at its first reading, t = 8); then C at 14.
    let (order, trace) = run("react:inner=noplan,threshold=1.3,action=suspend", true);
    assert!(close(at(&trace, 1, EventKind::Suspend).unwrap(), 7.0), "{:?}", trace.events);
    assert!(close(at(&trace, 2, EventKind::Start).unwrap(), 7.0), "{:?}", trace.events);
    assert!(close(at(&trace, 2, EventKind::Suspend).unwrap(), 14.0), "{:?}", trace.events);
    assert!(close(at(&trace, 3, EventKind::Start).unwrap(), 14.0));
    assert_eq!(order, vec![0, 1, 2, 3]);
    // Both resume once A, whom they were suspended beside, has ended.
    let a_end = at(&trace, 0, EventKind::Finish).unwrap();
    for b in [1, 2] {
        assert!(at(&trace, b, EventKind::Resume).unwrap() >= a_end - 1e-9);
    }
    assert!(never_alone_suspended(&trace));
}

/// Whether every suspension in the trace left another job running.
fn never_alone_suspended(trace: &cosched_model::trace::Trace) -> bool {
    let mut events = trace.events.clone();
    events.sort_by(|a, b| a.time.total_cmp(&b.time));
    let mut active: Vec<JobId> = Vec::new();
    for e in &events {
        match e.kind {
            EventKind::Start | EventKind::Resume => active.push(e.job),
            EventKind::Finish => active.retain(|&j| j != e.job),
            EventKind::Suspend => {
                if active.len() < 2 {
                    return false;
                }
                active.retain(|&j| j != e.job);
            }
            _ => {}
        }
    }
    true
}

/// A source that shows fixed online estimates.
struct Seen(BTreeMap<JobId, Estimate>);

impl SlowdownSource for Seen {
    fn slowdown(&self, _: JobId, _: &[JobId]) -> f64 {
        1.0
    }
    fn score(&self, _: JobId, _: JobId) -> f64 {
        0.0
    }
    fn online(&self, job: JobId) -> Option<Estimate> {
        self.0.get(&job).copied()
    }
}

fn estimate(s: f64) -> Estimate {
    Estimate { time: 1.0, slowdown: s, lo: s, hi: s, n: 20, signal: Signal::Progress }
}

proptest! {
    #[test]
    fn the_wrapper_never_suspends_a_job_alone_on_its_node(
        jobs in proptest::collection::vec((any::<bool>(), 1.0f64..10.0), 1..5),
    ) {
        let pools = [PoolInfo { name: "cpu".into(), cores: 8, kind: PoolKind::Cpu }];
        let cpus: Vec<[u32; 1]> = (0..jobs.len() as u32).map(|c| [c]).collect();
        let running: Vec<RunningJob> = jobs
            .iter()
            .enumerate()
            .map(|(i, &(suspended, _))| RunningJob {
                id: i, pool: 0, cores: 1, cpus: &cpus[i], suspended, suspended_s: 0.0, progress: 0.5, solo: 10.0, program: "p",
            })
            .collect();
        let seen = Seen(jobs.iter().enumerate().map(|(i, &(_, s))| (i, estimate(s))).collect());
        let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
        let mut policy = policy_from_spec("react:inner=noplan,threshold=1.3").unwrap();
        let active = jobs.iter().filter(|j| !j.0).count();
        for d in policy.decide(&view) {
            if let cosched_sched::Decision::Suspend { .. } = d {
                prop_assert!(active >= 2, "suspended with {active} running");
            }
        }
    }
}

#[test]
fn the_wrapper_leaves_a_lone_harmed_job_and_one_without_an_estimate_alone() {
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    let running = [RunningJob { id: 0, pool: 0, cores: 1, cpus: &[0], suspended: false, suspended_s: 0.0, progress: 0.5, solo: 10.0, program: "p" }];
    let seen = Seen([(0, estimate(9.0))].into_iter().collect());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert!(policy_from_spec("react:inner=noplan").unwrap().decide(&view).is_empty());
    // Two jobs, no estimates: nothing to react to.
    let running = [running[0], RunningJob { id: 1, cpus: &[1], ..running[0] }];
    let none = Seen(BTreeMap::new());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &none };
    assert!(policy_from_spec("react:inner=noplan").unwrap().decide(&view).is_empty());
    // Two jobs, one harmed: the newer one is suspended.
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert_eq!(policy_from_spec("react:inner=noplan").unwrap().decide(&view), vec![cosched_sched::Decision::Suspend { job: 1 }]);
}

/// A running job of program `program` on CPU `cpu`.
fn on<'a>(id: JobId, cpu: &'a [u32], program: &'a str, suspended: bool) -> RunningJob<'a> {
    RunningJob { id, pool: 0, cores: 1, cpus: cpu, suspended, suspended_s: 0.0, progress: 0.5, solo: 10.0, program }
}

#[test]
fn harm_that_follows_a_job_to_another_programs_co_runner_is_its_own_and_its_held_job_resumes() {
    use cosched_sched::Decision::{Resume, Suspend};
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    // Job 0 (flops) runs at 2.4x whoever is beside it.
    let seen = Seen([(0, estimate(2.4))].into_iter().collect());
    let mut policy = policy_from_spec("react:inner=noplan,threshold=1.3").unwrap();
    let mut decide = |running: &[RunningJob]| policy.decide(&View { time: 1.0, queue: &[], running, pools: &pools, slowdown: &seen });
    // Beside an io job: the io job is blamed and suspended.
    assert_eq!(decide(&[on(0, &[0], "flops", false), on(1, &[1], "io", false)]), vec![Suspend { job: 1 }]);
    // Still harmed beside a flops job on the freed core: not interference,
    // nothing is suspended, and job 1 waits only for its core.
    assert_eq!(decide(&[on(0, &[0], "flops", false), on(1, &[1], "io", true), on(2, &[1], "flops", false)]), vec![]);
    // Job 2 ended: job 1 resumes beside job 0, harmed as it still is.
    assert_eq!(decide(&[on(0, &[0], "flops", false), on(1, &[1], "io", true)]), vec![Resume { job: 1 }]);
    assert_eq!(decide(&[on(0, &[0], "flops", false), on(1, &[1], "io", false)]), vec![]);
}

#[test]
fn harm_from_a_second_job_of_the_blamed_program_is_still_interference() {
    use cosched_sched::Decision::Suspend;
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    let seen = Seen([(0, estimate(1.6))].into_iter().collect());
    let mut policy = policy_from_spec("react:inner=noplan,threshold=1.3").unwrap();
    let mut decide = |running: &[RunningJob]| policy.decide(&View { time: 1.0, queue: &[], running, pools: &pools, slowdown: &seen });
    assert_eq!(decide(&[on(0, &[0], "io", false), on(1, &[1], "io", false)]), vec![Suspend { job: 1 }]);
    assert_eq!(decide(&[on(0, &[0], "io", false), on(1, &[1], "io", true), on(2, &[1], "io", false)]), vec![Suspend { job: 2 }]);
}

#[test]
fn a_job_slow_while_alone_is_never_taken_as_harmed() {
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    let seen = Seen([(0, estimate(2.0))].into_iter().collect());
    let mut policy = policy_from_spec("react:inner=noplan,threshold=1.3").unwrap();
    let mut decide = |running: &[RunningJob]| policy.decide(&View { time: 1.0, queue: &[], running, pools: &pools, slowdown: &seen });
    assert_eq!(decide(&[on(0, &[0], "flops", false)]), vec![]);
    assert_eq!(decide(&[on(0, &[0], "flops", false), on(1, &[1], "io", false)]), vec![], "slow alone, so not hurt by job 1");
}

/// Noplan's decisions, recording the progress each decision saw of job A.
struct Spy {
    inner: Box<dyn cosched_sched::Policy>,
    seen: Vec<(f64, f64)>,
}

impl cosched_sched::Policy for Spy {
    fn decide(&mut self, view: &View) -> Vec<cosched_sched::Decision> {
        if let Some(a) = view.running.iter().find(|r| r.id == 0) {
            self.seen.push((view.time, a.progress));
        }
        self.inner.decide(view)
    }
}

#[test]
fn a_read_job_shows_its_policy_the_progress_it_made_not_its_time_run() {
    // A runs beside B1 at a third of its pace from 0 to 30: at 30 it has
    // done 10 of its 100 solo-seconds, progress 0.1, where its time run
    // reads 0.3. Read every second, the loop carries A's last reading
    // forward at its settled estimate (3) and shows 0.1; unread, 0.3.
    let seen_at_30 = |sampled: bool| {
        let (p, j, t, b) = (platform(), jobs(), truth(), blind());
        let mut node = VirtualNode::new(&j, &t);
        if sampled {
            node = node.sampled(1.0);
        }
        let mut spy = Spy { inner: policy_from_spec("noplan").unwrap(), seen: Vec::new() };
        run_node(&p, &j, &b, &mut spy, &mut node, &[]).unwrap();
        spy.seen.iter().find(|(time, _)| close(*time, 30.0)).map(|&(_, progress)| progress).unwrap()
    };
    assert!(close(seen_at_30(true), 0.1), "{}", seen_at_30(true));
    assert!(close(seen_at_30(false), 0.3), "{}", seen_at_30(false));
}
