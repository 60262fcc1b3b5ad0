//! Tests of the Slurm engine's round: decisions from hand-made queues and
//! node readings, without a controller.

use super::*;
use crate::parse::JobState;
use cosched_engine::Decision as Dec;
use cosched_engine::View;

const KEY: Key = Key::from_bytes([9; 32]);
const NOW: i64 = 1000;
const BOUND: i64 = 60;

/// A job; pending with a priority and a required node: released by
/// cosched at `NOW - 10`, its mark signed.
fn job(id: u64, state: JobState, reason: &str, priority: u64, nodes: &[&str], requested: &[&str], name: &str) -> QueueJob {
    let mut j = QueueJob {
        admin_comment: String::new(),
        stdout: String::new(),
        work_dir: String::new(),
        id,
        partition: "cosched".into(),
        state,
        reason: reason.into(),
        priority,
        cpus: 1,
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        requested: requested.iter().map(|s| s.to_string()).collect(),
        submit: Some(id as i64),
        start: Some(100),
        end: None,
        exit_code: 0,
        dependency: String::new(),
        user_id: Some(1000),
        name: name.into(),
        command: String::new(),
        comment: String::new(),
        site: Default::default(),
    };
    j.admin_comment = match (reason, requested.first()) {
        ("JobHeldAdmin", _) => crate::parse::HELD.to_string(),
        (_, Some(node)) => mark(&j, node, NOW - 10),
        _ => String::new(),
    };
    j
}

fn mark(j: &QueueJob, node: &str, at: i64) -> String {
    let d = crate::mark::Decision { policy: "noplan".into(), node: node.into(), beside: vec![], predicted: 1.0, at, step: Step::Start, program: None, gres: vec![] };
    d.write(&KEY, &Signed { id: j.id, submit: j.submit, cpus: j.cpus })
}

fn held(id: u64, name: &str) -> QueueJob {
    job(id, JobState::Pending, "JobHeldAdmin", 0, &[], &[], name)
}

fn node(name: &str, state: &str) -> NodeInfo {
    NodeInfo { name: name.into(), cpus: 2, state: state.into(), partition: "cosched".into(), memory_mb: 1000, gres: vec![] }
}

fn by_name(j: &QueueJob) -> Identity {
    Identity { program: j.name.clone(), solo: 10.0 }
}

fn round(jobs: &[QueueJob], nodes: &[NodeInfo]) -> Round {
    round_deferring(jobs, nodes, &BTreeSet::new())
}

fn round_deferring(jobs: &[QueueJob], nodes: &[NodeInfo], deferred: &BTreeSet<u64>) -> Round {
    Round::new(jobs, nodes, "cosched", &by_name, &Checks { key: Some(&KEY), now: NOW, start_bound_s: BOUND, deferred, scope: Scope::Any })
}

fn released(a: &[Action]) -> Vec<(u64, String)> {
    a.iter().filter_map(|a| match a { Action::Release { job, node, .. } => Some((*job, node.clone())), _ => None }).collect()
}

fn reheld(a: &[Action]) -> Vec<u64> {
    a.iter().filter_map(|a| match a { Action::Rehold { job, .. } => Some(*job), _ => None }).collect()
}

/// Twins (same program) slow each other 2x; anything else 1x.
struct TwinsHurt<'a>(&'a Round);
impl SlowdownSource for TwinsHurt<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        beside.iter().filter(|&&b| b != job && self.0.jobs[b].program == self.0.jobs[job].program).map(|_| 2.0).product()
    }
    fn score(&self, a: JobId, b: JobId) -> f64 {
        if self.0.jobs[a].program == self.0.jobs[b].program { 100.0 } else { 0.0 }
    }
}

/// Unconditional co-execution: start queue heads while they fit.
struct Fill;
impl Policy for Fill {
    fn decide(&mut self, v: &View) -> Vec<Dec> {
        match v.queue.first() {
            Some(q) if v.free_cores(0) >= q.cores => vec![Dec::Start { job: q.id, pool: 0 }],
            _ => Vec::new(),
        }
    }
}

/// Refuses to start a job beside its twin.
struct NoTwin;
impl Policy for NoTwin {
    fn decide(&mut self, v: &View) -> Vec<Dec> {
        v.queue
            .iter()
            .find(|q| v.free_cores(0) >= q.cores && v.running.iter().all(|r| v.slowdown.score(q.id, r.id) < 50.0))
            .map(|q| vec![Dec::Start { job: q.id, pool: 0 }])
            .unwrap_or_default()
    }
}

#[test]
fn held_jobs_queue_in_submission_order_and_placed_jobs_sit_on_their_nodes() {
    let jobs = vec![
        held(5, "b"),
        held(3, "a"),
        job(1, JobState::Running, "None", 1, &["n1"], &[], "r"),
        job(2, JobState::Pending, "Resources", 1, &[], &["n2"], "released"),
        job(4, JobState::Pending, "JobHeldUser", 0, &[], &[], "user-held"),
    ];
    let r = round(&jobs, &[node("n1", "mixed"), node("n2", "idle")]);
    let q: Vec<u64> = r.queue.iter().map(|&i| r.jobs[i].slurm).collect();
    assert_eq!(q, [3, 5], "a user's own hold is not cosched's to release");
    let on = |k: usize| r.nodes[k].placed.iter().map(|&i| r.jobs[i].slurm).collect::<Vec<_>>();
    assert_eq!((on(0), on(1)), (vec![1], vec![2]));
    assert!(r.stranded.is_empty() && r.aside.is_empty());
}

#[test]
fn a_released_job_whose_node_drained_is_held_again_and_the_node_gets_nothing() {
    let jobs = vec![job(2, JobState::Pending, "ReqNodeNotAvail", 1, &[], &["n1"], "x"), held(3, "y")];
    let r = round(&jobs, &[node("n1", "drained"), node("n2", "idle")]);
    assert_eq!(r.stranded, [(2, "released onto n1, which is drained".to_string(), false)]);
    let src = TwinsHurt(&r);
    let (actions, notes) = r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW);
    assert!(notes.is_empty());
    assert_eq!(reheld(&actions), [2]);
    assert_eq!(released(&actions), [(3, "n2".to_string())]);
}

#[test]
fn a_marked_job_released_without_a_verified_decision_is_held_again() {
    // Released by its user (still marked held), with a mark its user
    // could have got into the AdminComment through a parser or an
    // operator, signed for another job, or moved to another node.
    let mut by_user = held(4, "x");
    by_user.priority = 1000;
    let mut forged = job(5, JobState::Pending, "Resources", 1, &[], &["n1"], "x");
    forged.admin_comment = "cosched;policy=x;node=n1;beside=-;predicted=1.000;at=990".into();
    let mut copied = job(6, JobState::Pending, "Resources", 1, &[], &["n1"], "x");
    copied.admin_comment = job(7, JobState::Pending, "Resources", 1, &[], &["n1"], "x").admin_comment;
    let mut moved = job(8, JobState::Pending, "Resources", 1, &[], &["n1"], "x");
    moved.requested = vec!["n2".into()];
    let mut grown = job(9, JobState::Pending, "Resources", 1, &[], &["n1"], "x");
    grown.cpus = 2;
    let r = round(&[by_user, forged, copied, moved, grown], &[node("n1", "idle"), node("n2", "idle")]);
    assert!(r.queue.is_empty() && r.nodes.iter().all(|n| n.placed.is_empty()), "{r:?}");
    let src = TwinsHurt(&r);
    let (a, _) = r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW);
    assert_eq!(reheld(&a), [4, 5, 6, 8, 9]);
    assert!(r.stranded.iter().filter(|s| s.0 != 8).all(|s| s.1.starts_with("released without cosched's verified decision")), "{:?}", r.stranded);
    assert!(r.stranded.iter().any(|s| s.0 == 8 && s.1.contains("required nodes are now `n2`")));
}

#[test]
fn a_released_job_slurm_does_not_start_within_the_bound_is_held_again_and_its_cores_freed() {
    let mut late = job(2, JobState::Pending, "Dependency", 1, &[], &["n1"], "x");
    late.admin_comment = mark(&late, "n1", NOW - BOUND - 1);
    let on_time = job(3, JobState::Pending, "Resources", 1, &[], &["n1"], "y");
    let r = round(&[late, on_time, held(4, "z")], &[node("n1", "idle")]);
    assert_eq!(r.stranded.len(), 1);
    let (job, why, is_late) = &r.stranded[0];
    assert_eq!((*job, *is_late), (2, true));
    assert_eq!(why, "released onto n1 61 s ago and not started by Slurm (its reason: Dependency)");
    let src = TwinsHurt(&r);
    let (a, _) = r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW);
    // Its core is free again: the held job takes it beside job 3.
    assert_eq!(released(&a), [(4, "n1".to_string())]);
}

#[test]
fn jobs_that_can_never_start_are_set_aside_and_the_queue_behind_them_runs() {
    let mut huge = held(1, "huge");
    huge.cpus = 64;
    let mut orphan = held(2, "orphan");
    orphan.dependency = "afterok:1(failed)".into();
    let deferred: BTreeSet<u64> = [3].into();
    let r = round_deferring(&[huge, orphan, held(3, "late"), held(4, "a")], &[node("n1", "idle"), node("n2", "drained")], &deferred);
    assert_eq!(r.aside.iter().map(|a| a.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(r.aside[0].1, "needs 64 CPUs per node; no node of partition cosched has more than 2");
    let src = TwinsHurt(&r);
    // An exclusive-like FCFS policy would wait for ever on job 1 at the head.
    assert_eq!(released(&r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW).0), [(4, "n1".to_string())]);
}

#[test]
fn twins_are_kept_apart_by_a_policy_that_reads_the_score_and_not_by_one_that_fills() {
    let jobs = vec![held(1, "stream"), held(2, "stream"), held(3, "compute")];
    let r = round(&jobs, &[node("n1", "idle")]);
    let src = TwinsHurt(&r);
    let ids = |a: (Vec<Action>, Vec<String>)| released(&a.0).into_iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(ids(r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW)), [1, 2]);
    assert_eq!(ids(r.decide(&mut Shared(&mut NoTwin), &src, 0.0, NOW)), [1, 3]);
}

#[test]
fn a_release_records_what_it_was_placed_beside_and_its_prediction() {
    let jobs = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "stream"), held(2, "stream")];
    let r = round(&jobs, &[node("n1", "mixed")]);
    let src = TwinsHurt(&r);
    let (a, _) = r.decide(&mut Shared(&mut Fill), &src, 0.0, 105);
    assert_eq!(a, [Action::Release { job: 2, node: "n1".into(), beside: vec![1], predicted: 2.0 }]);
}

#[test]
fn a_completing_job_frees_its_cores_to_the_policy_and_is_not_beside_the_next() {
    let jobs = vec![
        job(1, JobState::Completing, "None", 1, &["n1"], &[], "stream"),
        job(2, JobState::Running, "None", 1, &["n1"], &[], "compute"),
        held(3, "stream"),
    ];
    let r = round(&jobs, &[node("n1", "mixed")]);
    assert_eq!(r.nodes[0].placed.iter().map(|&i| r.jobs[i].slurm).collect::<Vec<_>>(), [2]);
    let src = TwinsHurt(&r);
    let (a, _) = r.decide(&mut Shared(&mut NoTwin), &src, 0.0, NOW);
    assert_eq!(a, [Action::Release { job: 3, node: "n1".into(), beside: vec![2], predicted: 1.0 }]);
}

#[test]
fn a_full_node_gets_nothing_and_the_next_node_takes_the_queue() {
    let jobs = vec![
        job(1, JobState::Running, "None", 1, &["n1"], &[], "a"),
        job(2, JobState::Running, "None", 1, &["n1"], &[], "b"),
        held(3, "c"),
        held(4, "d"),
        held(5, "e"),
    ];
    let r = round(&jobs, &[node("n1", "allocated"), node("n2", "idle")]);
    let src = TwinsHurt(&r);
    assert_eq!(released(&r.decide(&mut Shared(&mut Fill), &src, 0.0, NOW).0), [(3, "n2".to_string()), (4, "n2".to_string())]);
}

#[test]
fn a_decision_refused_or_not_carried_out_on_one_node_leaves_the_other_nodes_asked() {
    struct Greedy;
    impl Policy for Greedy {
        fn decide(&mut self, v: &View) -> Vec<Dec> {
            v.queue.iter().map(|q| Dec::Start { job: q.id, pool: 0 }).collect()
        }
    }
    let jobs = vec![held(1, "a"), held(2, "b"), held(3, "c")];
    let r = round(&jobs, &[node("n1", "idle"), node("n2", "idle")]);
    let src = TwinsHurt(&r);
    let (a, notes) = r.decide(&mut Shared(&mut Greedy), &src, 0.0, NOW);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("node n1") && notes[0].contains("needs 1 cores; pool 0 has 0 free"), "{notes:?}");
    // n1 took what fit; the job it had no room for went to n2.
    assert_eq!(released(&a), [(1, "n1".to_string()), (2, "n1".to_string()), (3, "n2".to_string())]);

    struct Mover;
    impl Policy for Mover {
        fn decide(&mut self, v: &View) -> Vec<Dec> {
            v.running.iter().map(|r| Dec::Move { job: r.id, cores: vec![1] }).collect()
        }
    }
    let jobs = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), held(2, "b")];
    let r = round(&jobs, &[node("n1", "mixed")]);
    let src = TwinsHurt(&r);
    let (a, notes) = r.decide(&mut Shared(&mut Mover), &src, 0.0, NOW);
    assert!(a.is_empty());
    assert!(notes[0].contains("Slurm cannot re-pin a running job's cores"), "{notes:?}");
}

#[test]
fn only_policies_that_move_or_overbook_are_refused_by_name() {
    for name in ["sidestep", "overbook"] {
        assert!(refused_policy(name).is_some(), "{name}");
    }
    for name in ["surpass", "timeshare", "exclusive", "noplan", "conflict-aware", "no-twins", "wait", "colocate"] {
        assert_eq!(refused_policy(name), None, "{name}");
    }
}

fn wide(mut j: QueueJob, cpus: u32) -> QueueJob {
    j.cpus = cpus;
    j
}

/// A queue head that finds no room suspends every running job and
/// starts (surpass's way), once; it resumes them when the node is free.
struct Preempt;
impl Policy for Preempt {
    fn decide(&mut self, v: &View) -> Vec<Dec> {
        let Some(q) = v.queue.first() else {
            let idle = v.running.iter().all(|r| r.suspended);
            return v.running.iter().filter(|r| r.suspended && idle).take(1).map(|r| Dec::Resume { job: r.id }).collect();
        };
        let mut out: Vec<Dec> = Vec::new();
        if v.free_cores(0) < q.cores {
            out.extend(v.running.iter().filter(|r| !r.suspended).map(|r| Dec::Suspend { job: r.id }));
        }
        out.push(Dec::Start { job: q.id, pool: 0 });
        out
    }
}

#[test]
fn a_suspension_is_carried_out_before_the_start_it_makes_room_for() {
    let jobs = vec![wide(job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), 2), wide(held(2, "b"), 2)];
    let r = round(&jobs, &[node("n1", "allocated")]);
    let src = TwinsHurt(&r);
    let (a, notes) = r.decide(&mut Shared(&mut Preempt), &src, 0.0, NOW);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        a,
        [
            Action::Suspend { job: 1, node: "n1".into(), beside: vec![2] },
            Action::Release { job: 2, node: "n1".into(), beside: vec![], predicted: 1.0 }
        ]
    );
}

#[test]
fn a_suspended_job_reads_as_suspended_with_its_time_and_is_resumed_when_the_node_frees() {
    let mut s = wide(job(1, JobState::Suspended, "None", 1, &["n1"], &[], "a"), 2);
    s.start = Some(NOW - 100);
    s.site.pre_sus_s = 40;
    s.site.suspend_time = Some(NOW - 60);
    let r = round(&[s], &[node("n1", "idle")]);
    assert_eq!((r.jobs[0].placed, r.jobs[0].suspended_s), (Placed::Suspended, 60.0));
    let src = TwinsHurt(&r);
    let (a, _) = r.decide(&mut Shared(&mut Preempt), &src, 0.0, NOW);
    assert_eq!(a, [Action::Resume { job: 1, node: "n1".into(), beside: vec![], predicted: 1.0 }]);
}

/// Starts every queued job overbooking the node and lets only the
/// first placed job run (timeshare's way with a turn not yet theirs).
struct Turns;
impl Policy for Turns {
    fn decide(&mut self, v: &View) -> Vec<Dec> {
        let mut out = Vec::new();
        for q in v.queue {
            out.push(Dec::StartOn { job: q.id, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: true });
            out.push(Dec::Suspend { job: q.id });
        }
        out
    }
}

#[test]
fn a_job_started_and_suspended_in_one_answer_is_parked_and_read_back_on_its_node() {
    let jobs = vec![wide(job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), 2), wide(held(2, "b"), 2)];
    let r = round(&jobs, &[node("n1", "allocated")]);
    let src = TwinsHurt(&r);
    let (a, notes) = r.decide(&mut Shared(&mut Turns), &src, 0.0, NOW);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(a, [Action::Park { job: 2, node: "n1".into(), beside: vec![1] }]);
    // Next round: still held, marked parked on n1; it is placed there,
    // suspended, and a resume (the turn passing) releases it there once
    // the running job is suspended.
    let mut parked = wide(held(2, "b"), 2);
    let d = crate::mark::Decision { policy: "t".into(), node: "n1".into(), beside: vec![1], predicted: 1.0, at: NOW - 5, step: Step::Park, program: None, gres: vec![] };
    parked.admin_comment = d.write(&KEY, &Signed { id: 2, submit: parked.submit, cpus: 2 });
    let r = round(&[jobs[0].clone(), parked.clone()], &[node("n1", "allocated")]);
    assert!(r.queue.is_empty() && r.stranded.is_empty(), "{r:?}");
    assert_eq!((r.jobs[1].placed, r.jobs[1].suspended_s), (Placed::Parked, 5.0));
    /// Passes the turn once.
    struct Swap(bool);
    impl Policy for Swap {
        fn decide(&mut self, v: &View) -> Vec<Dec> {
            let (s, r): (Vec<&RunningJob>, Vec<&RunningJob>) = v.running.iter().partition(|r| r.suspended);
            if std::mem::replace(&mut self.0, true) {
                return vec![];
            }
            // Resume first, then suspend: the engine suspends first anyway.
            vec![Dec::Resume { job: s[0].id }, Dec::Suspend { job: r[0].id }]
        }
    }
    let src = TwinsHurt(&r);
    let (a, notes) = r.decide(&mut Shared(&mut Swap(false)), &src, 0.0, NOW);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        a,
        [
            Action::Suspend { job: 1, node: "n1".into(), beside: vec![2] },
            Action::Release { job: 2, node: "n1".into(), beside: vec![], predicted: 1.0 }
        ]
    );
    // Released by its user while parked: not cosched's release.
    parked.priority = 100;
    parked.requested = vec!["n1".into()];
    let r = round(&[parked], &[node("n1", "idle")]);
    assert_eq!(reheld(&r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW).0), [2]);
}

#[test]
fn an_answer_that_would_run_more_cores_than_the_node_has_is_not_carried_out() {
    struct Overbook;
    impl Policy for Overbook {
        fn decide(&mut self, v: &View) -> Vec<Dec> {
            v.queue.iter().map(|q| Dec::StartOn { job: q.id, pool: 0, cores: Cores::Given(vec![0, 1]), overbook: true }).collect()
        }
    }
    let jobs = vec![wide(job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), 2), wide(held(2, "b"), 2)];
    let r = round(&jobs, &[node("n1", "allocated")]);
    let (a, notes) = r.decide(&mut Shared(&mut Overbook), &TwinsHurt(&r), 0.0, NOW);
    assert!(a.is_empty());
    assert!(notes[0].contains("leaves 4 cores running on a node of 2: Slurm gives each job cores of its own"), "{notes:?}");
}

#[test]
fn exclusive_memory_and_scope_keep_jobs_apart_whatever_the_policy_fills() {
    let mut n2 = node("n2", "idle");
    n2.memory_mb = 1000;
    let with = |mut j: QueueJob, f: &dyn Fn(&mut QueueJob)| {
        f(&mut j);
        j
    };
    // Exclusive: alone on an empty node, nothing beside it.
    let jobs = vec![
        job(1, JobState::Running, "None", 1, &["n1"], &[], "a"),
        with(held(2, "x"), &|j| j.site.exclusive = true),
        held(3, "c"),
    ];
    let r = round(&jobs, &[node("n1", "mixed"), n2.clone()]);
    assert_eq!(released(&r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW).0), [(3, "n1".to_string()), (2, "n2".to_string())]);
    // Memory: 600 MB jobs on 1000 MB nodes, one per node.
    let big = |id| with(held(id, "m"), &|j| j.site.mem_per_node_mb = Some(600));
    let r = round(&[big(1), big(2), big(3)], &[node("n1", "idle"), n2.clone()]);
    assert_eq!(released(&r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW).0), [(1, "n1".to_string()), (2, "n2".to_string())]);
    // A job no node can ever hold is set aside with why.
    let r = round(&[with(held(4, "huge"), &|j| j.site.mem_per_node_mb = Some(5000))], &[node("n1", "idle")]);
    assert!(r.aside[0].1.contains("needs 5000 MB of memory; the node has 1000 MB free"), "{:?}", r.aside);
    // Scope user: alice's and bob's jobs never share.
    let user = |id, u: &'static str| with(held(id, "u"), &move |j| j.site.user = u.into());
    let jobs = [user(1, "alice"), user(2, "bob"), user(3, "alice")];
    let r = Round::new(&jobs, &[node("n1", "idle"), n2], "cosched", &by_name, &Checks { key: Some(&KEY), now: NOW, start_bound_s: BOUND, deferred: &BTreeSet::new(), scope: Scope::User });
    assert_eq!(
        released(&r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW).0),
        [(1, "n1".to_string()), (3, "n1".to_string()), (2, "n2".to_string())]
    );
}

#[test]
fn a_two_node_job_is_released_onto_two_nodes_with_its_worst_prediction_and_read_back_on_both() {
    let mut two = wide(held(2, "stream"), 2);
    two.site.node_count = 2;
    let jobs = vec![job(1, JobState::Running, "None", 1, &["n2"], &[], "stream"), two];
    let r = round(&jobs, &[node("n1", "idle"), node("n2", "mixed"), node("n3", "allocated")]);
    assert_eq!(r.jobs[1].cores, 1, "2 CPUs over 2 nodes");
    let (a, notes) = r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(a, [Action::Release { job: 2, node: "n1,n2".into(), beside: vec![], predicted: 2.0 }]);
    // Released: its mark names both nodes, and it holds a core on each.
    let mut rel = wide(job(2, JobState::Pending, "Resources", 1, &[], &["n1", "n2"], "stream"), 2);
    rel.site.node_count = 2;
    rel.admin_comment = mark(&rel, "n1,n2", NOW - 1);
    let r = round(&[rel], &[node("n1", "idle"), node("n2", "idle")]);
    assert!(r.stranded.is_empty(), "{:?}", r.stranded);
    assert!(r.nodes.iter().all(|n| n.placed == [0]));
}

#[test]
fn the_room_a_round_offers_is_the_free_cores_the_site_constraints_admit_in_queue_order() {
    let mut exclusive = held(3, "x");
    exclusive.site.exclusive = true;
    let jobs = vec![
        job(1, JobState::Running, "None", 1, &["n1"], &[], "a"),
        job(2, JobState::Pending, "Resources", 1, &[], &["n2"], "released"),
        exclusive,
        held(4, "b"),
        held(5, "c"),
        held(6, "d"),
    ];
    let r = round(&jobs, &[node("n1", "mixed"), node("n2", "idle")]);
    // Job 2 was released and not started: its core is taken. No node is
    // empty for the exclusive job 3; 4 and 5 take the last core of each node.
    assert_eq!(r.room(), Room { cores: 4, busy: 2, fits: vec![4, 5] });
    // A policy that fills every free core starts exactly these.
    let mut started: Vec<u64> = released(&r.decide(&mut Shared(&mut Fill), &TwinsHurt(&r), 0.0, NOW).0).into_iter().map(|x| x.0).collect();
    started.sort();
    assert_eq!(started, r.room().fits);
    // A full partition offers nothing; an empty one, a node per two-CPU job.
    let full = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), held(4, "b")];
    assert_eq!(round(&wide_all(full), &[node("n1", "allocated")]).room(), Room { cores: 2, busy: 2, fits: vec![] });
    let r = round(&wide_all(vec![held(7, "p"), held(8, "q"), held(9, "r")]), &[node("n1", "idle"), node("n2", "idle")]);
    assert_eq!(r.room(), Room { cores: 4, busy: 0, fits: vec![7, 8] });
}

/// Every job two CPUs wide.
fn wide_all(jobs: Vec<QueueJob>) -> Vec<QueueJob> {
    jobs.into_iter().map(|j| wide(j, 2)).collect()
}
