//! One decision round over a Slurm cluster: what the queue and the nodes
//! look like to a policy, node by node, and what the policy's starts become
//! in Slurm's terms.
//!
//! Slurm is the source of truth. A round is computed from one reading of
//! `squeue` and `sinfo` alone, so cosched keeps no state of its own between
//! rounds and a restarted cosched decides as the one before it would have:
//!
//! - **waiting**: jobs of the partition held for cosched (priority 0 and
//!   the submission rule's mark), in submission order; the queue every
//!   node's view shares;
//! - **placed on a node**: jobs running there, and jobs cosched released
//!   onto it that Slurm has not started yet (pending, priority above 0,
//!   that node their required node list), so a release is never repeated
//!   and its cores are never given twice. A completing job (its batch
//!   script has exited; Slurm is cleaning up) is not: its work is done, and
//!   a job released now beside the others starts when Slurm frees its
//!   cores, in the scheduling pass Slurm runs at that moment, instead of
//!   waiting a round and then Slurm's next periodic pass;
//! - **stranded**: released jobs whose node went down or drained before
//!   they started, jobs Slurm did not start within [`Checks::start_bound_s`]
//!   of their release (a dependency never met, a begin time, a limit), and
//!   marked jobs released without cosched's verified decision ([`mark`]:
//!   by their user's `scontrol release`, or with a node or CPU count changed
//!   since); they are held again and decided anew;
//! - **set aside**: held jobs no node of the partition can ever fit, whose
//!   dependency failed, or that Slurm did not start in time when last
//!   released (until serve offers them again): reported, never queued, so
//!   no policy waits on them.
//!
//! Which jobs are cosched's is Slurm's AdminComment: `cosched;held` from
//! the submission rule (`job_submit.lua`), cosched's signed decision once
//! cosched released it.
//!
//! The engine carries out starts only; [`refused_policy`] names the
//! policies whose other decisions (suspend, resume, move, overbooked
//! cores) it cannot carry out, which `serve` refuses before it begins.

use std::collections::BTreeSet;

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;
use cosched_engine::validate::{check_decision, Act, JobState};
use cosched_engine::{JobId, Policy, PoolInfo, QueuedJob, RunningJob, SimJob, SlowdownSource, View};
use cosched_model::workload::PoolKind;

use crate::mark::{Decision, Key, Signed};
use crate::parse::{JobState as SlurmState, NodeInfo, QueueJob};

/// Policies whose decisions the Slurm engine cannot carry out, with why;
/// `serve` refuses them when it starts instead of at the first full node.
pub const REFUSED: &[(&str, &str)] = &[
    ("surpass", "it suspends running jobs, and this engine only starts jobs (Slurm's own suspend is issue 37)"),
    ("timeshare", "its jobs take turns by suspend and resume, and this engine only starts jobs"),
    ("sidestep", "it re-pins running jobs onto other cores, which Slurm cannot do to a running job"),
    ("overbook", "it starts jobs on busy cores, and Slurm's partition gives each job cores of its own (OverSubscribe=NO)"),
];

/// Why the Slurm engine refuses the policy named `name`, if it does.
pub fn refused_policy(name: &str) -> Option<&'static str> {
    REFUSED.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

/// What a reading is checked against besides what Slurm says.
#[derive(Debug, Clone)]
pub struct Checks<'a> {
    /// The key of cosched's marks; `None` takes marks as they read (for
    /// display only: `status`).
    pub key: Option<&'a Key>,
    /// Unix seconds of the reading.
    pub now: i64,
    /// Seconds a released job may stay pending before it is held again.
    pub start_bound_s: i64,
    /// Held jobs not to offer the policy this round (not started in time
    /// when last released), with why.
    pub deferred: &'a BTreeSet<u64>,
}

/// What cosched knows of a job besides what Slurm says: its program
/// identity (equal keys are twins) and its solo time estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub program: String,
    pub solo: f64,
}

/// A job of the round; its [`JobId`] is its index in [`Round::jobs`].
#[derive(Debug, Clone, PartialEq)]
pub struct RoundJob {
    pub slurm: u64,
    pub name: String,
    pub program: String,
    pub solo: f64,
    pub cores: u32,
    /// When it started, Unix seconds (placed jobs Slurm started).
    pub start: Option<i64>,
}

/// A node the policy is asked about, with the jobs placed on it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundNode {
    pub name: String,
    pub cpus: u32,
    pub placed: Vec<JobId>,
}

/// What cosched asks Slurm to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `scontrol update JobId=job ReqNodeList=node`, then `scontrol release job`.
    Release {
        job: u64,
        node: String,
        /// Slurm ids of the jobs placed on the node at the decision.
        beside: Vec<u64>,
        /// The source's slowdown of the job beside them.
        predicted: f64,
    },
    /// `scontrol hold job` and the submission rule's mark again: released
    /// without cosched's verified decision, or onto a node that cannot
    /// start it, or not started by Slurm in time (`late`).
    Rehold { job: u64, why: String, late: bool },
}

/// One reading of the cluster, ready for the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub jobs: Vec<RoundJob>,
    /// Waiting jobs in queue order.
    pub queue: Vec<JobId>,
    /// Usable nodes of the partition, in `sinfo` order.
    pub nodes: Vec<RoundNode>,
    /// Jobs to hold again: (job, why, not started in time).
    pub stranded: Vec<(u64, String, bool)>,
    /// Held jobs not offered to the policy: (job, why).
    pub aside: Vec<(u64, String)>,
}

impl Round {
    /// Reads `jobs` and `nodes` (of every partition; only `partition`'s are
    /// used), asking `identify` for each job's program and solo time.
    pub fn new(jobs: &[QueueJob], nodes: &[NodeInfo], partition: &str, identify: &dyn Fn(&QueueJob) -> Identity, checks: &Checks) -> Round {
        let mut round = Round { jobs: Vec::new(), queue: Vec::new(), nodes: Vec::new(), stranded: Vec::new(), aside: Vec::new() };
        let mut mine: Vec<&QueueJob> = jobs.iter().filter(|j| j.partition == partition).collect();
        mine.sort_by_key(|j| (j.submit.unwrap_or(i64::MAX), j.id));
        let add = |round: &mut Round, j: &QueueJob| -> JobId {
            let id = identify(j);
            round.jobs.push(RoundJob {
                slurm: j.id,
                name: j.name.clone(),
                program: id.program,
                solo: id.solo,
                cores: j.cpus.max(1),
                start: j.start.filter(|_| j.state.holds_cores()),
            });
            round.jobs.len() - 1
        };
        for n in nodes.iter().filter(|n| n.partition == partition && n.usable()) {
            if round.nodes.iter().any(|r| r.name == n.name) {
                continue;
            }
            round.nodes.push(RoundNode { name: n.name.clone(), cpus: n.cpus, placed: Vec::new() });
        }
        // The largest node of the partition, usable now or not: a job larger
        // than it can never start, however long it waits.
        let largest = nodes.iter().filter(|n| n.partition == partition).map(|n| n.cpus).max();
        for j in &mine {
            if j.held_for_cosched() {
                if let Some(max) = largest.filter(|&m| j.cpus > m) {
                    round.aside.push((j.id, format!("needs {} CPUs; no node of partition {partition} has more than {max}", j.cpus)));
                } else if j.dependency_failed() {
                    round.aside.push((j.id, format!("its dependency can never be met ({})", j.dependency)));
                } else if checks.deferred.contains(&j.id) {
                    round.aside.push((j.id, "Slurm did not start it in time when it was last released; offered again later".into()));
                } else {
                    let id = add(&mut round, j);
                    round.queue.push(id);
                }
            } else if j.state == SlurmState::Completing {
                // Done: see the module doc.
            } else if j.state.holds_cores() {
                let on: Vec<usize> = (0..round.nodes.len()).filter(|&k| j.nodes.contains(&round.nodes[k].name)).collect();
                if !on.is_empty() {
                    let id = add(&mut round, j);
                    for k in on {
                        round.nodes[k].placed.push(id);
                    }
                }
            } else if j.released_marked() {
                let decision = match checks.key {
                    Some(key) => Decision::verify(key, &Signed { id: j.id, submit: j.submit, cpus: j.cpus }, &j.admin_comment),
                    None => Decision::read_unverified(&j.admin_comment),
                };
                let d = match decision {
                    Ok(d) if j.requested == [d.node.clone()] => d,
                    Ok(d) => {
                        let why = format!("released onto {} by cosched, but its required nodes are now `{}`", d.node, j.requested.join(","));
                        round.stranded.push((j.id, why, false));
                        continue;
                    }
                    Err(why) => {
                        round.stranded.push((j.id, format!("released without cosched's verified decision: {why}"), false));
                        continue;
                    }
                };
                let late = checks.now - d.at;
                if checks.key.is_some() && late > checks.start_bound_s {
                    let why = format!("released onto {} {late} s ago and not started by Slurm (its reason: {})", d.node, j.reason);
                    round.stranded.push((j.id, why, true));
                    continue;
                }
                match round.nodes.iter().position(|n| n.name == d.node) {
                    Some(k) => {
                        let id = add(&mut round, j);
                        round.nodes[k].placed.push(id);
                    }
                    None => {
                        let state = nodes.iter().find(|n| n.name == d.node).map_or("gone".to_string(), |n| n.state.clone());
                        round.stranded.push((j.id, format!("released onto {}, which is {state}", d.node), false));
                    }
                }
            }
        }
        round
    }

    /// Slurm ids of the round's jobs, by [`JobId`].
    pub fn slurm_ids(&self) -> Vec<u64> {
        self.jobs.iter().map(|j| j.slurm).collect()
    }

    /// Asks `policy` node by node (the queue shared, each start taken out of
    /// it) until it returns no decision for any node; `t` is the engine's
    /// clock and `now` the Unix time progress is reckoned at. Every decision
    /// goes through the one validation of `cosched-engine`. A decision it
    /// refuses, or one this engine cannot carry out, ends that node's turn
    /// for the round with a note (the other nodes are still asked): a round
    /// never stops on one policy's mistake.
    pub fn decide(&self, policy: &mut dyn Policy, source: &dyn SlowdownSource, t: f64, now: i64) -> (Vec<Action>, Vec<String>) {
        let mut notes = Vec::new();
        let mut actions: Vec<Action> =
            self.stranded.iter().map(|(job, why, late)| Action::Rehold { job: *job, why: why.clone(), late: *late }).collect();
        let sim: Vec<SimJob> = self
            .jobs
            .iter()
            .map(|j| SimJob { name: j.name.clone(), arrival: 0.0, solo: j.solo, pool: 0, cores: j.cores, program: j.program.clone(), variants: vec![] })
            .collect();
        let mut queue = self.queue.clone();
        'nodes: for node in &self.nodes {
            let pools = [PoolInfo { name: "host".into(), cores: node.cpus, kind: PoolKind::Cpu }];
            let mut placed = node.placed.clone();
            // Slurm binds a job to whichever cores cons_tres gives it; to the
            // policy and the validation, the jobs on the node hold the first
            // free cores in placement order.
            let mut map = CoreMap::new([node.cpus]);
            let mut cpus_of: Vec<(JobId, Vec<u32>)> = Vec::new();
            for &id in &placed {
                let c = map.choose(0, self.jobs[id].cores.min(node.cpus), &Cores::Compact, true).unwrap_or_default();
                map.hold(0, &c);
                cpus_of.push((id, c));
            }
            loop {
                let q: Vec<QueuedJob> = queue
                    .iter()
                    .map(|&id| {
                        let j = &self.jobs[id];
                        QueuedJob { id, name: &j.name, pool: 0, cores: j.cores, solo: j.solo, program: &j.program, variants: &[] }
                    })
                    .collect();
                let r: Vec<RunningJob> = cpus_of
                    .iter()
                    .map(|(id, cpus)| {
                        let j = &self.jobs[*id];
                        // Released but not started yet: no progress. A job
                        // is never done in the policy's eyes while it runs.
                        let progress = j.start.map_or(0.0, |s| ((now - s) as f64 / j.solo).clamp(0.0, 0.99));
                        RunningJob {
                            id: *id,
                            pool: 0,
                            cores: j.cores,
                            cpus,
                            suspended: false,
                            suspended_s: 0.0,
                            progress,
                            solo: j.solo,
                            program: &j.program,
                        }
                    })
                    .collect();
                let view = View { time: t, queue: &q, running: &r, pools: &pools, slowdown: source };
                let decisions = policy.decide(&view);
                if decisions.is_empty() {
                    break;
                }
                for d in decisions {
                    let state = |j: JobId| {
                        if queue.contains(&j) {
                            JobState::Waiting
                        } else if placed.contains(&j) {
                            JobState::Running
                        } else {
                            JobState::Elsewhere
                        }
                    };
                    let (job, cpus) = match check_decision(&d, &sim, state, &map) {
                        Ok(Act::Start { job, cpus, .. }) => (job, cpus),
                        // Slurm's own suspend and its core binding are not
                        // driven by cosched: only starts are carried out.
                        Ok(other) => {
                            notes.push(format!("node {}: `{d}` ({other:?}) is not something the Slurm engine carries out; it only starts jobs", node.name));
                            continue 'nodes;
                        }
                        Err(why) => {
                            notes.push(format!("node {}: policy decision {d} refused: {why}", node.name));
                            continue 'nodes;
                        }
                    };
                    let predicted = source.slowdown(job, &placed);
                    actions.push(Action::Release {
                        job: self.jobs[job].slurm,
                        node: node.name.clone(),
                        beside: placed.iter().map(|&p| self.jobs[p].slurm).collect(),
                        predicted,
                    });
                    map.hold(0, &cpus);
                    queue.retain(|&q| q != job);
                    placed.push(job);
                    cpus_of.push((job, cpus));
                }
            }
        }
        (actions, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::JobState;
    use cosched_engine::Decision as Dec;

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
        };
        j.admin_comment = match (reason, requested.first()) {
            ("JobHeldAdmin", _) => crate::parse::HELD.to_string(),
            (_, Some(node)) => mark(&j, node, NOW - 10),
            _ => String::new(),
        };
        j
    }

    fn mark(j: &QueueJob, node: &str, at: i64) -> String {
        let d = crate::mark::Decision { policy: "noplan".into(), node: node.into(), beside: vec![], predicted: 1.0, at };
        d.write(&KEY, &Signed { id: j.id, submit: j.submit, cpus: j.cpus })
    }

    fn held(id: u64, name: &str) -> QueueJob {
        job(id, JobState::Pending, "JobHeldAdmin", 0, &[], &[], name)
    }

    fn node(name: &str, state: &str) -> NodeInfo {
        NodeInfo { name: name.into(), cpus: 2, state: state.into(), partition: "cosched".into() }
    }

    fn by_name(j: &QueueJob) -> Identity {
        Identity { program: j.name.clone(), solo: 10.0 }
    }

    fn round(jobs: &[QueueJob], nodes: &[NodeInfo]) -> Round {
        round_deferring(jobs, nodes, &BTreeSet::new())
    }

    fn round_deferring(jobs: &[QueueJob], nodes: &[NodeInfo], deferred: &BTreeSet<u64>) -> Round {
        Round::new(jobs, nodes, "cosched", &by_name, &Checks { key: Some(&KEY), now: NOW, start_bound_s: BOUND, deferred })
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
        let (actions, notes) = r.decide(&mut Fill, &src, 0.0, NOW);
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
        let (a, _) = r.decide(&mut Fill, &src, 0.0, NOW);
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
        let (a, _) = r.decide(&mut Fill, &src, 0.0, NOW);
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
        assert_eq!(r.aside[0].1, "needs 64 CPUs; no node of partition cosched has more than 2");
        let src = TwinsHurt(&r);
        // An exclusive-like FCFS policy would wait for ever on job 1 at the head.
        assert_eq!(released(&r.decide(&mut Fill, &src, 0.0, NOW).0), [(4, "n1".to_string())]);
    }

    #[test]
    fn twins_are_kept_apart_by_a_policy_that_reads_the_score_and_not_by_one_that_fills() {
        let jobs = vec![held(1, "stream"), held(2, "stream"), held(3, "compute")];
        let r = round(&jobs, &[node("n1", "idle")]);
        let src = TwinsHurt(&r);
        let ids = |a: (Vec<Action>, Vec<String>)| released(&a.0).into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids(r.decide(&mut Fill, &src, 0.0, NOW)), [1, 2]);
        assert_eq!(ids(r.decide(&mut NoTwin, &src, 0.0, NOW)), [1, 3]);
    }

    #[test]
    fn a_release_records_what_it_was_placed_beside_and_its_prediction() {
        let jobs = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "stream"), held(2, "stream")];
        let r = round(&jobs, &[node("n1", "mixed")]);
        let src = TwinsHurt(&r);
        let (a, _) = r.decide(&mut Fill, &src, 0.0, 105);
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
        let (a, _) = r.decide(&mut NoTwin, &src, 0.0, NOW);
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
        assert_eq!(released(&r.decide(&mut Fill, &src, 0.0, NOW).0), [(3, "n2".to_string()), (4, "n2".to_string())]);
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
        let (a, notes) = r.decide(&mut Greedy, &src, 0.0, NOW);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("node n1") && notes[0].contains("needs 1 cores; pool 0 has 0 free"), "{notes:?}");
        // n1 took what fit; the job it had no room for went to n2.
        assert_eq!(released(&a), [(1, "n1".to_string()), (2, "n1".to_string()), (3, "n2".to_string())]);

        struct Suspender;
        impl Policy for Suspender {
            fn decide(&mut self, v: &View) -> Vec<Dec> {
                v.running.iter().map(|r| Dec::Suspend { job: r.id }).collect()
            }
        }
        let jobs = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "a"), held(2, "b")];
        let r = round(&jobs, &[node("n1", "mixed")]);
        let src = TwinsHurt(&r);
        let (a, notes) = r.decide(&mut Suspender, &src, 0.0, NOW);
        assert!(a.is_empty());
        assert!(notes[0].contains("only starts jobs"), "{notes:?}");
    }

    #[test]
    fn policies_that_suspend_move_or_overbook_are_refused_by_name() {
        for name in ["surpass", "timeshare", "sidestep", "overbook"] {
            assert!(refused_policy(name).is_some(), "{name}");
        }
        for name in ["exclusive", "noplan", "conflict-aware", "no-twins", "wait", "colocate"] {
            assert_eq!(refused_policy(name), None, "{name}");
        }
    }
}
