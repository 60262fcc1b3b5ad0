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
        let active = jobs.iter().filter(|j| !j.0).count();
        for rules in ["", ",victim=most-left", ",gain=on", ",resume=own"] {
            let mut policy = policy_from_spec(&format!("react:inner=noplan,threshold=1.3{rules}")).unwrap();
            for d in policy.decide(&view) {
                if let cosched_sched::Decision::Suspend { .. } = d {
                    prop_assert!(active >= 2, "suspended with {active} running ({rules})");
                }
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

/// A source that shows fixed online estimates and knows some pairs (by
/// job), every other pair 1.
struct Known {
    online: BTreeMap<JobId, Estimate>,
    pairs: BTreeMap<(JobId, JobId), f64>,
}

impl SlowdownSource for Known {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        beside.iter().map(|b| self.pairs.get(&(job, *b)).copied().unwrap_or(1.0)).fold(1.0, f64::max)
    }
    fn score(&self, _: JobId, _: JobId) -> f64 {
        0.0
    }
    fn online(&self, job: JobId) -> Option<Estimate> {
        self.online.get(&job).copied()
    }
}

/// Job `id` on CPU `cpu`, `progress` of its 10 s done.
fn at_progress<'a>(id: JobId, cpu: &'a [u32], progress: f64) -> RunningJob<'a> {
    RunningJob { id, pool: 0, cores: 1, cpus: cpu, suspended: false, suspended_s: 0.0, progress, solo: 10.0, program: "p" }
}

#[test]
fn the_victim_rule_picks_the_newest_or_the_job_with_the_most_work_left() {
    use cosched_sched::Decision::Suspend;
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    // Job 0 (8 s of work left) is harmed beside job 1, the newer, which
    // has 1 s left.
    let running = [at_progress(0, &[0], 0.2), at_progress(1, &[1], 0.9)];
    let seen = Seen([(0, estimate(1.6))].into_iter().collect());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert_eq!(policy_from_spec("react:inner=noplan,victim=newest").unwrap().decide(&view), vec![Suspend { job: 1 }]);
    // The job with the most work left is the harmed one itself: job 1,
    // nearer its end, runs on.
    assert_eq!(policy_from_spec("react:inner=noplan,victim=most-left").unwrap().decide(&view), vec![Suspend { job: 0 }]);
}

#[test]
fn the_expected_gain_test_declines_when_the_suspended_job_would_have_ended_first() {
    use cosched_sched::Decision::Suspend;
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    // Nothing waits. Job 0 (8 s left) is seen at 1.6 beside job 1 (1 s
    // left, no estimate: the source says 1). Side by side job 1 ends at
    // d = min(8 x 1.6, 1 x 1) = 1 and job 0 at 1 + 8 - 1 / 1.6 = 8.375:
    // 9.375 s summed. Job 1 suspended: job 0 ends at 8, job 1 at 9: 17 s.
    let running = [at_progress(0, &[0], 0.2), at_progress(1, &[1], 0.9)];
    let seen = Seen([(0, estimate(1.6))].into_iter().collect());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert_eq!(policy_from_spec("react:inner=noplan,gain=off").unwrap().decide(&view), vec![Suspend { job: 1 }]);
    assert_eq!(policy_from_spec("react:inner=noplan,gain=on").unwrap().decide(&view), vec![]);
    // Both with 5 s left, each seen at 1.6: side by side both end at 8
    // (16 s summed), in turn at 5 and 10 (15 s): it pays, by 5 (2 x 1.6 - 3).
    let running = [at_progress(0, &[0], 0.5), at_progress(1, &[1], 0.5)];
    let seen = Seen([(0, estimate(1.6)), (1, estimate(1.6))].into_iter().collect());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert_eq!(policy_from_spec("react:inner=noplan,gain=on").unwrap().decide(&view), vec![Suspend { job: 1 }]);
    // At 1.4 each it does not: 14 s side by side against 15 in turn.
    let seen = Seen([(0, estimate(1.4)), (1, estimate(1.4))].into_iter().collect());
    let view = View { time: 1.0, queue: &[], running: &running, pools: &pools, slowdown: &seen };
    assert_eq!(policy_from_spec("react:inner=noplan,gain=on").unwrap().decide(&view), vec![]);
}

#[test]
fn the_expected_gain_test_counts_a_waiting_job_only_if_it_fits_beside_the_job_kept() {
    use cosched_sched::Decision::{Start, Suspend};
    use cosched_sched::QueuedJob;
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    // The 1.4 pair of the test above, which does not pay on its own, and
    // job 2 waiting.
    let running = [at_progress(0, &[0], 0.5), at_progress(1, &[1], 0.5)];
    let queue = [QueuedJob { id: 2, name: "w", pool: 0, cores: 1, solo: 10.0, program: "p", variants: &[] }];
    let online: BTreeMap<JobId, Estimate> = [(0, estimate(1.4)), (1, estimate(1.4))].into_iter().collect();
    // Job 2 fits beside job 0: suspending job 1 lets it start.
    let fits = Known { online: online.clone(), pairs: BTreeMap::new() };
    let view = View { time: 1.0, queue: &queue, running: &running, pools: &pools, slowdown: &fits };
    let mut policy = policy_from_spec("react:inner=noplan,gain=on").unwrap();
    assert_eq!(policy.decide(&view), vec![Suspend { job: 1 }]);
    let after = [running[0], RunningJob { suspended: true, ..running[1] }];
    let view = View { time: 1.0, queue: &queue, running: &after, pools: &pools, slowdown: &fits };
    assert_eq!(policy.decide(&view), vec![Start { job: 2, pool: 0 }]);
    // The run knows job 2 beside job 0 at 1.5: it would be harmed in turn.
    let harms = Known { online, pairs: [((2, 0), 1.5)].into_iter().collect() };
    let view = View { time: 1.0, queue: &queue, running: &running, pools: &pools, slowdown: &harms };
    assert_eq!(policy_from_spec("react:inner=noplan,gain=on").unwrap().decide(&view), vec![]);
}

#[test]
fn resume_free_moves_a_held_job_onto_a_free_core_and_never_resumes_two_into_known_harm() {
    use cosched_sched::Decision::{Move, Resume, Suspend};
    let pools = [PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }];
    let (c0, c1): (&[u32], &[u32]) = (&[0], &[1]);
    let known = |pairs: &[((JobId, JobId), f64)]| Known { online: [(0, estimate(1.6))].into_iter().collect(), pairs: pairs.iter().copied().collect() };
    for (resume, expect) in [("own", vec![]), ("free", vec![Move { job: 1, cores: vec![0] }, Resume { job: 1 }])] {
        let source = known(&[]);
        let mut policy = policy_from_spec(&format!("react:inner=noplan,resume={resume}")).unwrap();
        let mut decide = |running: &[RunningJob]| policy.decide(&View { time: 1.0, queue: &[], running, pools: &pools, slowdown: &source });
        assert_eq!(decide(&[on(0, c0, "io", false), on(1, c1, "io", false)]), vec![Suspend { job: 1 }]);
        // Job 2 took core 1; job 0 ended and freed core 0.
        assert_eq!(decide(&[on(1, c1, "io", true), on(2, c1, "flops", false)]), expect, "resume={resume}");
    }
    // Jobs 1 and 2 both held beside job 0, which ended: with nothing
    // known between them both resume, job 2 moved to core 0; known to
    // harm each other, one waits for the other.
    for (pairs, expect) in [
        (vec![], vec![Resume { job: 1 }, Move { job: 2, cores: vec![0] }, Resume { job: 2 }]),
        (vec![((1, 2), 1.6), ((2, 1), 1.6)], vec![Resume { job: 1 }]),
    ] {
        let source = Known { online: [(0, estimate(1.6)), (3, estimate(1.6))].into_iter().collect(), pairs: pairs.into_iter().collect() };
        let mut policy = policy_from_spec("react:inner=noplan,resume=free").unwrap();
        let mut decide = |running: &[RunningJob]| policy.decide(&View { time: 1.0, queue: &[], running, pools: &pools, slowdown: &source });
        assert_eq!(decide(&[on(0, c0, "io", false), on(1, c1, "io", false)]), vec![Suspend { job: 1 }]);
        assert_eq!(decide(&[on(0, c0, "io", false), on(1, c1, "io", true), on(2, c1, "io", false)]), vec![Suspend { job: 2 }]);
        assert_eq!(decide(&[on(1, c1, "io", true), on(2, c1, "io", true)]), expect);
    }
}

#[test]
fn held_jobs_of_one_core_resume_on_both_cores_with_resume_free_and_share_theirs_with_resume_own() {
    // A beside B1 (3x) from 0: B1 suspended at 7, B2 started on its core,
    // suspended at 14, then C (harmless, 10 s) to 24; core 1 idles until
    // A ends: A did 7 / 3 + 7 / 3 by 14 and runs alone or beside C after,
    // so it ends at 14 + 100 - 14 / 3 = 109.333. B1 and B2 each have
    // 10 - 7 / 3 = 7.667 s left, both held on core 1.
    let a_end = 14.0 + 100.0 - 14.0 / 3.0;
    let left = 10.0 - 7.0 / 3.0;
    // resume=free: B1 resumes on core 1, B2 moved to core 0 (b beside b
    // is harmless): both end at 117.
    let (_, trace) = run("react:inner=noplan,resume=free", true);
    assert!(close(at(&trace, 0, EventKind::Finish).unwrap(), a_end), "{:?}", trace.events);
    for b in [1, 2] {
        assert!(close(at(&trace, b, EventKind::Resume).unwrap(), a_end), "{:?}", trace.events);
        assert!(close(at(&trace, b, EventKind::Finish).unwrap(), a_end + left), "{:?}", trace.events);
    }
    assert!(close(at(&trace, 2, EventKind::Move).unwrap(), a_end));
    // resume=own: both resume onto core 1 and share it while core 0
    // idles, each at half its pace; their estimates settle at 2 after
    // the phase's first reading and six segments (109.333 + 7), and the
    // wrapper suspends B2, the newer: each did 3.5 s by then, so B1 ends
    // 4.167 s later (120.5) and B2 after as long again (124.667).
    let (_, trace) = run("react:inner=noplan,resume=own", true);
    let settled = a_end + 7.0;
    assert!(close(at(&trace, 2, EventKind::Suspend).unwrap_or(0.0), 14.0));
    assert!(trace.events.iter().any(|e| e.job == 2 && e.kind == EventKind::Suspend && close(e.time, settled)), "{:?}", trace.events);
    assert!(close(at(&trace, 1, EventKind::Finish).unwrap(), settled + left - 3.5), "{:?}", trace.events);
    assert!(close(at(&trace, 2, EventKind::Finish).unwrap(), a_end + 2.0 * left), "{:?}", trace.events);
    assert!(at(&trace, 2, EventKind::Move).is_none());
    assert!(never_alone_suspended(&trace));
}
