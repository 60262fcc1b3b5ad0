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
//!   they started, and marked jobs someone else released; they are held
//!   again and decided anew.
//!
//! Which jobs are cosched's is Slurm's AdminComment: `cosched;held` from
//! the submission rule (`job_submit.lua`), `cosched;policy=...` once
//! cosched released it.

use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;
use cosched_engine::validate::{check_decision, Act, JobState};
use cosched_engine::{JobId, Policy, PoolInfo, QueuedJob, RunningJob, SimJob, SlowdownSource, View};
use cosched_model::workload::PoolKind;

use crate::parse::{JobState as SlurmState, NodeInfo, QueueJob};

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
    /// `scontrol hold job`: released onto `node`, which can no longer start
    /// it (its state says why), or released by someone else (no node).
    Rehold { job: u64, node: String, state: String },
}

/// One reading of the cluster, ready for the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub jobs: Vec<RoundJob>,
    /// Waiting jobs in queue order.
    pub queue: Vec<JobId>,
    /// Usable nodes of the partition, in `sinfo` order.
    pub nodes: Vec<RoundNode>,
    /// Released jobs whose node cannot start them any more: (job, node, node state).
    pub stranded: Vec<(u64, String, String)>,
}

impl Round {
    /// Reads `jobs` and `nodes` (of every partition; only `partition`'s are
    /// used), asking `identify` for each job's program and solo time.
    pub fn new(jobs: &[QueueJob], nodes: &[NodeInfo], partition: &str, identify: &dyn Fn(&QueueJob) -> Identity) -> Round {
        let mut round = Round { jobs: Vec::new(), queue: Vec::new(), nodes: Vec::new(), stranded: Vec::new() };
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
        for j in &mine {
            if j.held_for_cosched() {
                let id = add(&mut round, j);
                round.queue.push(id);
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
            } else if j.escaped() {
                round.stranded.push((j.id, String::new(), "released without a decision".into()));
            } else if j.released_pending() && j.requested.len() == 1 {
                let node = &j.requested[0];
                match round.nodes.iter().position(|n| n.name == *node) {
                    Some(k) => {
                        let id = add(&mut round, j);
                        round.nodes[k].placed.push(id);
                    }
                    None => {
                        let state = nodes.iter().find(|n| n.name == *node).map_or("gone".to_string(), |n| n.state.clone());
                        round.stranded.push((j.id, node.clone(), state));
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
    /// goes through the one validation of `cosched-engine`.
    pub fn decide(&self, policy: &mut dyn Policy, source: &dyn SlowdownSource, t: f64, now: i64) -> Result<Vec<Action>, String> {
        let mut actions: Vec<Action> =
            self.stranded.iter().map(|(job, node, state)| Action::Rehold { job: *job, node: node.clone(), state: state.clone() }).collect();
        let sim: Vec<SimJob> = self
            .jobs
            .iter()
            .map(|j| SimJob { name: j.name.clone(), arrival: 0.0, solo: j.solo, pool: 0, cores: j.cores, program: j.program.clone(), variants: vec![] })
            .collect();
        let mut queue = self.queue.clone();
        for node in &self.nodes {
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
                    let act = check_decision(&d, &sim, state, &map)
                        .map_err(|why| format!("node {}: policy decision {d} refused: {why}", node.name))?;
                    let (job, cpus) = match act {
                        Act::Start { job, cpus, .. } => (job, cpus),
                        // Slurm's own suspend and its core binding are not
                        // driven by cosched: only starts are carried out.
                        other => return Err(format!("node {}: `{d}` ({other:?}) is not something the Slurm engine carries out; it only starts jobs", node.name)),
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
        Ok(actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_engine::Decision;
    use crate::parse::JobState;

    fn job(id: u64, state: JobState, reason: &str, priority: u64, nodes: &[&str], requested: &[&str], name: &str) -> QueueJob {
        let admin_comment = match (reason, requested.is_empty()) {
            ("JobHeldAdmin", _) => crate::parse::HELD.to_string(),
            (_, false) => format!("{}noplan;node={}", crate::parse::RELEASED, requested[0]),
            _ => String::new(),
        };
        QueueJob {
            admin_comment,
            stdout: String::new(),
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
            name: name.into(),
            command: String::new(),
            comment: String::new(),
        }
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
        fn decide(&mut self, v: &View) -> Vec<Decision> {
            match v.queue.first() {
                Some(q) if v.free_cores(0) >= q.cores => vec![Decision::Start { job: q.id, pool: 0 }],
                _ => Vec::new(),
            }
        }
    }

    /// Refuses to start a job beside its twin.
    struct NoTwin;
    impl Policy for NoTwin {
        fn decide(&mut self, v: &View) -> Vec<Decision> {
            v.queue
                .iter()
                .find(|q| v.free_cores(0) >= q.cores && v.running.iter().all(|r| v.slowdown.score(q.id, r.id) < 50.0))
                .map(|q| vec![Decision::Start { job: q.id, pool: 0 }])
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
        let r = Round::new(&jobs, &[node("n1", "mixed"), node("n2", "idle")], "cosched", &by_name);
        let q: Vec<u64> = r.queue.iter().map(|&i| r.jobs[i].slurm).collect();
        assert_eq!(q, [3, 5], "a user's own hold is not cosched's to release");
        let on = |k: usize| r.nodes[k].placed.iter().map(|&i| r.jobs[i].slurm).collect::<Vec<_>>();
        assert_eq!((on(0), on(1)), (vec![1], vec![2]));
        assert!(r.stranded.is_empty());
    }

    #[test]
    fn a_released_job_whose_node_drained_is_held_again_and_the_node_gets_nothing() {
        let jobs = vec![job(2, JobState::Pending, "ReqNodeNotAvail", 1, &[], &["n1"], "x"), held(3, "y")];
        let r = Round::new(&jobs, &[node("n1", "drained"), node("n2", "idle")], "cosched", &by_name);
        assert_eq!(r.stranded, [(2, "n1".to_string(), "drained".to_string())]);
        let src = TwinsHurt(&r);
        let actions = r.decide(&mut Fill, &src, 0.0, 100).unwrap();
        assert_eq!(actions[0], Action::Rehold { job: 2, node: "n1".into(), state: "drained".into() });
        assert!(matches!(&actions[1], Action::Release { job: 3, node, .. } if node == "n2"));
        assert_eq!(actions.len(), 2);
    }

    #[test]
    fn a_marked_job_released_without_a_decision_is_held_again() {
        // Released by its user, or by a cosched stopped between the release
        // and writing its decision: pending, priority above 0, still marked.
        let mut j = held(4, "x");
        j.priority = 1000;
        let r = Round::new(&[j], &[node("n1", "idle")], "cosched", &by_name);
        assert!(r.queue.is_empty());
        let src = TwinsHurt(&r);
        let a = r.decide(&mut Fill, &src, 0.0, 100).unwrap();
        assert_eq!(a, [Action::Rehold { job: 4, node: String::new(), state: "released without a decision".into() }]);
    }

    #[test]
    fn twins_are_kept_apart_by_a_policy_that_reads_the_score_and_not_by_one_that_fills() {
        let jobs = vec![held(1, "stream"), held(2, "stream"), held(3, "compute")];
        let r = Round::new(&jobs, &[node("n1", "idle")], "cosched", &by_name);
        let src = TwinsHurt(&r);
        let released = |a: Vec<Action>| {
            a.into_iter().map(|a| match a { Action::Release { job, .. } => job, other => panic!("{other:?}") }).collect::<Vec<_>>()
        };
        assert_eq!(released(r.decide(&mut Fill, &src, 0.0, 100).unwrap()), [1, 2]);
        assert_eq!(released(r.decide(&mut NoTwin, &src, 0.0, 100).unwrap()), [1, 3]);
    }

    #[test]
    fn a_release_records_what_it_was_placed_beside_and_its_prediction() {
        let jobs = vec![job(1, JobState::Running, "None", 1, &["n1"], &[], "stream"), held(2, "stream")];
        let r = Round::new(&jobs, &[node("n1", "mixed")], "cosched", &by_name);
        let src = TwinsHurt(&r);
        let a = r.decide(&mut Fill, &src, 0.0, 105).unwrap();
        assert_eq!(a, [Action::Release { job: 2, node: "n1".into(), beside: vec![1], predicted: 2.0 }]);
    }

    #[test]
    fn a_completing_job_frees_its_cores_to_the_policy_and_is_not_beside_the_next() {
        // Job 1's script has exited (Slurm still cleans up): the node's two
        // cores are job 2's and the next job's, and the release names only
        // job 2 as a co-runner.
        let jobs = vec![
            job(1, JobState::Completing, "None", 1, &["n1"], &[], "stream"),
            job(2, JobState::Running, "None", 1, &["n1"], &[], "compute"),
            held(3, "stream"),
        ];
        let r = Round::new(&jobs, &[node("n1", "mixed")], "cosched", &by_name);
        assert_eq!(r.nodes[0].placed.iter().map(|&i| r.jobs[i].slurm).collect::<Vec<_>>(), [2]);
        let src = TwinsHurt(&r);
        let a = r.decide(&mut NoTwin, &src, 0.0, 100).unwrap();
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
        let r = Round::new(&jobs, &[node("n1", "allocated"), node("n2", "idle")], "cosched", &by_name);
        let src = TwinsHurt(&r);
        let a = r.decide(&mut Fill, &src, 0.0, 100).unwrap();
        let placed: Vec<(u64, String)> = a
            .into_iter()
            .map(|a| match a { Action::Release { job, node, .. } => (job, node), other => panic!("{other:?}") })
            .collect();
        assert_eq!(placed, [(3, "n2".to_string()), (4, "n2".to_string())]);
    }

    #[test]
    fn a_decision_the_node_has_no_room_for_is_refused_by_the_engine_validation() {
        struct Greedy;
        impl Policy for Greedy {
            fn decide(&mut self, v: &View) -> Vec<Decision> {
                v.queue.iter().map(|q| Decision::Start { job: q.id, pool: 0 }).collect()
            }
        }
        let jobs = vec![held(1, "a"), held(2, "b"), held(3, "c")];
        let r = Round::new(&jobs, &[node("n1", "idle")], "cosched", &by_name);
        let src = TwinsHurt(&r);
        let e = r.decide(&mut Greedy, &src, 0.0, 100).unwrap_err();
        assert!(e.contains("node n1") && e.contains("needs 1 cores; pool 0 has 0 free"), "{e}");
    }
}
