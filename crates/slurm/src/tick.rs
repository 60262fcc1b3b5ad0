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
//! - **suspended**: jobs cosched suspended (`scontrol suspend`; Slurm's
//!   state SUSPENDED), placed on their nodes but holding no core there
//!   (cons_tres gives a suspended job's cores to other jobs), and jobs
//!   cosched *parked*: started and suspended in one decision (a
//!   time-sharing turn not yet theirs), still held in Slurm, marked with
//!   their node; a resume releases them there.
//!
//! Besides cores, each node's view offers only the jobs its site
//! constraints admit ([`cosched_engine::constraints`]: `--exclusive`, the
//! sharing [`Scope`], `--mem` against RealMemory, GRES), and every
//! decision is checked against them by the engine's one validation. A
//! multi-node job (`-N 2`) started on one node is placed on as many nodes
//! as it asks (the first that admit it), its predicted slowdown the worst
//! over them.
//!
//! The engine carries out starts, suspends and resumes; [`refused_policy`]
//! names the policies whose other decisions (moving cores, overbooked
//! cores) it cannot carry out, which `serve` refuses before it begins.

use std::collections::{BTreeMap, BTreeSet};

use cosched_engine::constraints::{check_on_site, fits_empty, Demand, Offer, Site};
use cosched_engine::cores::CoreMap;
use cosched_engine::policy::Cores;
use cosched_engine::validate::{Act, JobState};
use cosched_engine::view::{self, Seat, Work};
use cosched_engine::{JobId, Policy, PoolInfo, QueuedJob, RunningJob, SimJob, SlowdownSource};
use cosched_model::workload::PoolKind;

use crate::mark::{Decision, Key, Signed, Step};
use crate::parse::{JobState as SlurmState, NodeInfo, QueueJob};

/// Policies whose decisions the Slurm engine cannot carry out, with why;
/// `serve` refuses them when it starts instead of at the first full node.
pub const REFUSED: &[(&str, &str)] = &[
    ("sidestep", "it re-pins running jobs onto other cores, which Slurm cannot do to a running job"),
    ("overbook", "it starts jobs on busy cores, and Slurm's partition gives each job cores of its own (OverSubscribe=NO)"),
];

/// Why the Slurm engine refuses the policy named `name`, if it does.
pub fn refused_policy(name: &str) -> Option<&'static str> {
    REFUSED.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

/// Which jobs may share a node: any, or only jobs of one user, account or
/// QOS (`serve --share-scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    #[default]
    Any,
    User,
    Account,
    Qos,
}

impl Scope {
    pub fn parse(s: &str) -> Result<Scope, String> {
        match s {
            "any" => Ok(Scope::Any),
            "user" => Ok(Scope::User),
            "account" => Ok(Scope::Account),
            "qos" => Ok(Scope::Qos),
            _ => Err(format!("`{s}`: expected any, user, account or qos")),
        }
    }

    /// The scope `j` belongs to (empty: any).
    pub fn of(self, j: &QueueJob) -> String {
        match self {
            Scope::Any => String::new(),
            Scope::User if j.site.user.is_empty() => format!("uid {}", j.user_id.map_or("?".into(), |u| u.to_string())),
            Scope::User => format!("user {}", j.site.user),
            Scope::Account => format!("account {}", j.site.account),
            Scope::Qos => format!("qos {}", j.site.qos),
        }
    }
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
    /// Which jobs may share a node.
    pub scope: Scope,
}

/// What cosched knows of a job besides what Slurm says: its program
/// identity (equal keys are twins) and its solo time estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub program: String,
    pub solo: f64,
}

/// Where a job of the round is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Held for cosched, in the queue.
    Waiting,
    /// Running, or released onto its nodes and not started yet.
    Running,
    /// Suspended in Slurm (`scontrol suspend`).
    Suspended,
    /// Parked: held in Slurm, placed on its nodes by cosched's mark.
    Parked,
}

/// A job of the round; its [`JobId`] is its index in [`Round::jobs`]. The
/// policy sees it as its Slurm id, which stays the same from round to round.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundJob {
    pub slurm: u64,
    pub name: String,
    pub program: String,
    pub solo: f64,
    /// CPUs on each of its nodes.
    pub cores: u32,
    /// Nodes it runs on.
    pub nodes: u32,
    /// When it started, Unix seconds (placed jobs Slurm started).
    pub start: Option<i64>,
    pub placed: Placed,
    /// Seconds spent suspended (or parked) so far.
    pub suspended_s: f64,
    /// What it asks of each node beyond cores.
    pub demand: Demand,
}

/// A node the policy is asked about, with the jobs placed on it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundNode {
    pub name: String,
    pub cpus: u32,
    pub placed: Vec<JobId>,
    pub offer: Offer,
}

/// What cosched asks Slurm to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `scontrol update JobId=job ReqNodeList=node AdminComment=...`, then
    /// `scontrol release` with the round's other starts: a start, or the
    /// resumption of a parked job. `node` lists a
    /// multi-node job's nodes, comma-separated.
    Release {
        job: u64,
        node: String,
        /// Slurm ids of the jobs running beside it at the decision.
        beside: Vec<u64>,
        /// The source's slowdown of the job beside them (the worst over its nodes).
        predicted: f64,
    },
    /// `scontrol suspend job`: its cores go to the jobs `beside`.
    Suspend { job: u64, node: String, beside: Vec<u64> },
    /// `scontrol resume job`.
    Resume { job: u64, node: String, beside: Vec<u64>, predicted: f64 },
    /// A held job started and suspended in one decision: it stays held,
    /// marked as placed on `node`, until a resume releases it there.
    Park { job: u64, node: String, beside: Vec<u64> },
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

/// The policy asked about each node: one for the whole cluster
/// ([`Shared`]), or one per node, so a policy that keeps state about the
/// jobs it sees (turns, whom it suspended) keeps it per node as on the
/// node runner.
pub trait NodePolicies {
    fn on(&mut self, node: &str) -> &mut dyn Policy;
}

/// One policy asked about every node.
pub struct Shared<'a>(pub &'a mut dyn Policy);

impl NodePolicies for Shared<'_> {
    fn on(&mut self, _: &str) -> &mut dyn Policy {
        self.0
    }
}

/// The round's source, asked with Slurm ids (what policies see).
struct BySlurmId<'a> {
    inner: &'a dyn SlowdownSource,
    local: &'a BTreeMap<usize, JobId>,
}

impl SlowdownSource for BySlurmId<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        let Some(&j) = self.local.get(&job) else { return 1.0 };
        let b: Vec<JobId> = beside.iter().filter_map(|x| self.local.get(x).copied()).collect();
        self.inner.slowdown(j, &b)
    }

    fn score(&self, a: JobId, b: JobId) -> f64 {
        match (self.local.get(&a), self.local.get(&b)) {
            (Some(&a), Some(&b)) => self.inner.score(a, b),
            _ => 0.0,
        }
    }
}

impl Round {
    /// Reads `jobs` and `nodes` (of every partition; only `partition`'s are
    /// used), asking `identify` for each job's program and solo time.
    pub fn new(jobs: &[QueueJob], nodes: &[NodeInfo], partition: &str, identify: &dyn Fn(&QueueJob) -> Identity, checks: &Checks) -> Round {
        let mut round = Round { jobs: Vec::new(), queue: Vec::new(), nodes: Vec::new(), stranded: Vec::new(), aside: Vec::new() };
        let mut mine: Vec<&QueueJob> = jobs.iter().filter(|j| j.partition == partition).collect();
        mine.sort_by_key(|j| (j.submit.unwrap_or(i64::MAX), j.id));
        let now = checks.now;
        let add = |round: &mut Round, j: &QueueJob, placed: Placed, suspended_s: f64| -> JobId {
            let id = identify(j);
            let per_node = j.cpus.max(1).div_ceil(j.site.nodes());
            round.jobs.push(RoundJob {
                slurm: j.id,
                name: j.name.clone(),
                program: id.program,
                solo: id.solo,
                cores: per_node,
                nodes: j.site.nodes(),
                start: j.start.filter(|_| j.state.holds_cores()),
                placed,
                suspended_s,
                demand: demand_of(j, checks.scope),
            });
            round.jobs.len() - 1
        };
        for n in nodes.iter().filter(|n| n.partition == partition && n.usable()) {
            if round.nodes.iter().any(|r| r.name == n.name) {
                continue;
            }
            let offer = Offer { mem_mb: n.memory_mb, gres: n.gres.clone() };
            round.nodes.push(RoundNode { name: n.name.clone(), cpus: n.cpus, placed: Vec::new(), offer });
        }
        let all: Vec<&NodeInfo> = nodes.iter().filter(|n| n.partition == partition).collect();
        let mut names: Vec<&str> = all.iter().map(|n| n.name.as_str()).collect();
        names.dedup();
        // The largest node of the partition, usable now or not: a job larger
        // than it can never start, however long it waits.
        let largest = all.iter().map(|n| n.cpus).max();
        // Each node's placement by the mark of a released or parked job:
        // the nodes, or why the job is stranded.
        let usable: Vec<String> = round.nodes.iter().map(|n| n.name.clone()).collect();
        let marked = |j: &QueueJob, parked: bool| -> Result<(Decision, Vec<usize>), (String, bool)> {
            let decision = match checks.key {
                Some(key) => Decision::verify(key, &Signed { id: j.id, submit: j.submit, cpus: j.cpus }, &j.admin_comment),
                None => Decision::read_unverified(&j.admin_comment),
            };
            let d = decision.map_err(|why| (format!("released without cosched's verified decision: {why}"), false))?;
            if parked != (d.step == Step::Park) {
                let why = if parked { "held with a mark that parks it nowhere" } else { "released while cosched had parked it" };
                return Err((format!("released without cosched's verified decision: {why}"), false));
            }
            let on: Vec<&str> = d.node.split(',').collect();
            if !parked && j.requested.iter().map(String::as_str).ne(on.iter().copied()) {
                return Err((format!("released onto {} by cosched, but its required nodes are now `{}`", d.node, j.requested.join(",")), false));
            }
            let late = now - d.at;
            if !parked && checks.key.is_some() && late > checks.start_bound_s {
                return Err((format!("released onto {} {late} s ago and not started by Slurm (its reason: {})", d.node, j.reason), true));
            }
            let mut at = Vec::new();
            for n in &on {
                match usable.iter().position(|r| r == n) {
                    Some(k) => at.push(k),
                    None => {
                        let state = nodes.iter().find(|x| x.name == *n).map_or("gone".to_string(), |x| x.state.clone());
                        let verb = if parked { "parked on" } else { "released onto" };
                        return Err((format!("{verb} {n}, which is {state}"), false));
                    }
                }
            }
            Ok((d, at))
        };
        for j in &mine {
            if j.held_for_cosched() {
                let per_node = j.cpus.max(1).div_ceil(j.site.nodes());
                let demand = demand_of(j, checks.scope);
                let admits = all.iter().filter(|n| fits_empty(&demand, &Offer { mem_mb: n.memory_mb, gres: n.gres.clone() }).is_ok()).count();
                if let Some(max) = largest.filter(|&m| per_node > m) {
                    round.aside.push((j.id, format!("needs {per_node} CPUs per node; no node of partition {partition} has more than {max}")));
                } else if j.site.nodes() as usize > names.len() {
                    round.aside.push((j.id, format!("needs {} nodes; partition {partition} has {}", j.site.nodes(), names.len())));
                } else if admits < j.site.nodes() as usize {
                    let why = all
                        .iter()
                        .find_map(|n| fits_empty(&demand, &Offer { mem_mb: n.memory_mb, gres: n.gres.clone() }).err())
                        .map_or("too few nodes admit it".to_string(), |w| format!("on node after node, {w}"));
                    round.aside.push((j.id, format!("no {} node(s) of partition {partition} can ever hold it: {why}", j.site.nodes())));
                } else if j.dependency_failed() {
                    round.aside.push((j.id, format!("its dependency can never be met ({})", j.dependency)));
                } else if checks.deferred.contains(&j.id) {
                    round.aside.push((j.id, "Slurm did not start it in time when it was last released; offered again later".into()));
                } else {
                    let id = add(&mut round, j, Placed::Waiting, 0.0);
                    round.queue.push(id);
                }
            } else if j.state == SlurmState::Completing {
                // Done: see the module doc.
            } else if j.state.holds_cores() {
                let on: Vec<usize> = (0..round.nodes.len()).filter(|&k| j.nodes.contains(&round.nodes[k].name)).collect();
                if !on.is_empty() {
                    let (placed, s) = if j.state == SlurmState::Suspended { (Placed::Suspended, j.site.suspended_s(&j.state, j.start, now)) } else { (Placed::Running, j.site.suspended_s(&j.state, j.start, now)) };
                    let id = add(&mut round, j, placed, s);
                    for k in on {
                        round.nodes[k].placed.push(id);
                    }
                }
            } else if j.released_marked() || j.held_marked() {
                let parked = j.held_marked();
                match marked(j, parked) {
                    Ok((d, at)) => {
                        let (placed, s) = if parked { (Placed::Parked, (now - d.at).max(0) as f64) } else { (Placed::Running, 0.0) };
                        let id = add(&mut round, j, placed, s);
                        for k in at {
                            round.nodes[k].placed.push(id);
                        }
                    }
                    Err((why, late)) => round.stranded.push((j.id, why, late)),
                }
            }
        }
        round
    }

    /// Asks the policy of each node (the queue shared, each start taken out
    /// of it) until it returns no decision for any node; `t` is the
    /// engine's clock and `now` the Unix time progress is reckoned at.
    /// Policies see jobs by their Slurm ids. Every decision goes through
    /// the one validation of `cosched-engine` and the node's site
    /// constraints; a policy's answer is carried out whole or not at all:
    /// one it refuses, one this engine cannot carry out (a move, a suspend
    /// of a job Slurm has not started), or one that leaves more cores
    /// running than the node has (Slurm cannot overbook), ends that node's
    /// turn for the round with a note (the other nodes are still asked): a
    /// round never stops on one policy's mistake.
    pub fn decide(&self, policies: &mut dyn NodePolicies, source: &dyn SlowdownSource, t: f64, now: i64) -> (Vec<Action>, Vec<String>) {
        let mut notes = Vec::new();
        let mut actions: Vec<Action> =
            self.stranded.iter().map(|(job, why, late)| Action::Rehold { job: *job, why: why.clone(), late: *late }).collect();
        let sim: Vec<SimJob> = self
            .jobs
            .iter()
            .map(|j| SimJob { name: j.name.clone(), arrival: 0.0, solo: j.solo, pool: 0, cores: j.cores, program: j.program.clone(), variants: vec![] })
            .collect();
        let demands: Vec<Demand> = self.jobs.iter().map(|j| j.demand.clone()).collect();
        let local: BTreeMap<usize, JobId> = self.jobs.iter().enumerate().map(|(i, j)| (j.slurm as usize, i)).collect();
        let by_slurm = BySlurmId { inner: source, local: &local };
        let mut queue = self.queue.clone();
        let mut status: Vec<Placed> = self.jobs.iter().map(|j| j.placed).collect();
        let mut placed: Vec<Vec<JobId>> = self.nodes.iter().map(|n| n.placed.clone()).collect();
        // The jobs of `on` that hold cores: running, or released and not
        // started yet (suspended and parked ones hold none).
        let active = |status: &[Placed], on: &[JobId]| -> Vec<JobId> { on.iter().copied().filter(|&j| status[j] == Placed::Running).collect() };
        for (k, node) in self.nodes.iter().enumerate() {
            let policy = policies.on(&node.name);
            let mut pools = vec![PoolInfo { name: "host".into(), cores: node.cpus, kind: PoolKind::Cpu }];
            // GRES as accelerator pools the policy sees; jobs run on the host
            // pool and their GRES are counted by the site constraints.
            pools.extend(node.offer.gres.iter().map(|(kind, n)| PoolInfo { name: kind.clone(), cores: *n, kind: PoolKind::Accelerator { host_load: 0.0 } }));
            loop {
                // Slurm binds a job to whichever cores cons_tres gives it; to
                // the policy and the validation, the running jobs on the node
                // hold the first free cores in placement order, and suspended
                // ones the first cores whether busy or not.
                let mut map = CoreMap::new([node.cpus]);
                let mut cpus_of: BTreeMap<JobId, Vec<u32>> = BTreeMap::new();
                for &id in &placed[k] {
                    let n = self.jobs[id].cores.min(node.cpus);
                    if status[id] == Placed::Running {
                        let c = map.choose(0, n, &Cores::Compact, true).unwrap_or_default();
                        map.hold(0, &c);
                        cpus_of.insert(id, c);
                    }
                }
                for &id in &placed[k] {
                    if status[id] != Placed::Running {
                        cpus_of.insert(id, map.choose(0, self.jobs[id].cores.min(node.cpus), &Cores::Compact, true).unwrap_or_default());
                    }
                }
                let holding: Vec<JobId> = placed[k].clone();
                let site = Site { offer: &node.offer, demands: &demands, holding: &holding };
                // Only jobs the node admits, and multi-node jobs only while
                // enough other nodes admit them with room.
                let h: Vec<(JobId, &Demand)> = holding.iter().map(|&h| (h, &demands[h])).collect();
                let room_elsewhere = |job: JobId| {
                    let others = (0..self.nodes.len()).filter(|&o| o != k && self.admits(o, job, &status, &placed[o], &demands)).count();
                    others + 1 >= self.jobs[job].nodes as usize
                };
                let q: Vec<QueuedJob> = queue
                    .iter()
                    .filter(|&&id| cosched_engine::constraints::admissible(&demands[id], &node.offer, &h).is_ok())
                    .filter(|&&id| self.jobs[id].nodes <= 1 || room_elsewhere(id))
                    .map(|&id| {
                        let j = &self.jobs[id];
                        view::waiting_one_way(j.slurm as usize, &j.name, 0, j.cores, j.solo, &j.program)
                    })
                    .collect();
                let r: Vec<RunningJob> = placed[k]
                    .iter()
                    .map(|id| {
                        let j = &self.jobs[*id];
                        // Released but not started yet: no progress. A job
                        // is never done in the policy's eyes while it runs.
                        let ran = j.start.map_or(0.0, |s| (now - s) as f64 - j.suspended_s);
                        let seat = Seat { pool: 0, cores: j.cores, cpus: &cpus_of[id], suspended: status[*id] != Placed::Running, suspended_s: j.suspended_s };
                        view::running(j.slurm as usize, j.solo, &j.program, seat, Work::Ran(ran))
                    })
                    .collect();
                let view = view::view(t, &q, &r, &pools, &by_slurm);
                let decisions = policy.decide(&view);
                if decisions.is_empty() {
                    break;
                }
                // The answer on a copy, carried out only if all of it can be.
                let (mut st, mut on, mut m) = (status.clone(), placed[k].clone(), map.clone());
                let mut started: Vec<JobId> = Vec::new();
                let mut refused = None;
                for d in &decisions {
                    let Some(&job) = local.get(&d.job()) else {
                        refused = Some(format!("policy decision `{d}` names no job of the round"));
                        break;
                    };
                    let local_d = remap(d, job);
                    let state = |j: JobId| match st[j] {
                        Placed::Waiting if queue.contains(&j) => JobState::Waiting,
                        Placed::Running if on.contains(&j) => JobState::Running,
                        Placed::Suspended | Placed::Parked if on.contains(&j) => JobState::Suspended,
                        _ => JobState::Elsewhere,
                    };
                    let site = Site { offer: site.offer, demands: site.demands, holding: &on };
                    match check_on_site(&local_d, &sim, state, &m, &site) {
                        Ok(Act::Start { job, cpus, .. }) => {
                            m.hold(0, &cpus);
                            cpus_of.insert(job, cpus);
                            st[job] = Placed::Running;
                            on.push(job);
                            started.push(job);
                        }
                        Ok(Act::Suspend { job }) => {
                            if self.jobs[job].nodes > 1 {
                                refused = Some(format!("`{d}`: job {} runs on {} nodes; cosched suspends single-node jobs only", self.jobs[job].slurm, self.jobs[job].nodes));
                                break;
                            }
                            if !started.contains(&job) && self.jobs[job].start.is_none() && st[job] == Placed::Running && status[job] == Placed::Running {
                                refused = Some(format!("`{d}`: Slurm has not started job {} yet, so it cannot be suspended", self.jobs[job].slurm));
                                break;
                            }
                            m.release(0, &cpus_of[&job]);
                            st[job] = if status[job] == Placed::Waiting || status[job] == Placed::Parked { Placed::Parked } else { Placed::Suspended };
                        }
                        Ok(Act::Resume { job }) => {
                            m.hold(0, &cpus_of[&job]);
                            st[job] = Placed::Running;
                        }
                        Ok(Act::Move { .. }) => {
                            refused = Some(format!("`{d}` is not something the Slurm engine carries out: Slurm cannot re-pin a running job's cores"));
                            break;
                        }
                        Err(why) => {
                            // The refusal names jobs by their round index: say them by Slurm id.
                            let why = why.to_string().replace(&format!("job {job}"), &format!("job {}", self.jobs[job].slurm));
                            refused = Some(format!("policy decision {d} refused: {why}"));
                            break;
                        }
                    }
                }
                // A refused decision ends the node's turn; what the answer
                // decided before it is carried out if it can be whole.
                let stop = refused.take();
                let running: Vec<JobId> = active(&st, &on);
                let busy: u32 = running.iter().map(|&j| self.jobs[j].cores).sum();
                if busy > node.cpus {
                    let said: Vec<String> = decisions.iter().map(|d| d.to_string()).collect();
                    refused = Some(format!("`{}` leaves {busy} cores running on a node of {}: Slurm gives each job cores of its own", said.join("; "), node.cpus));
                }
                // A multi-node job started here takes the first other nodes
                // that admit it with room (as Slurm would need them now).
                let mut more: Vec<(JobId, Vec<usize>)> = Vec::new();
                for &job in started.iter().filter(|&&j| self.jobs[j].nodes > 1 && st[j] == Placed::Running) {
                    if refused.is_some() {
                        break;
                    }
                    let want = self.jobs[job].nodes as usize - 1;
                    let others: Vec<usize> =
                        (0..self.nodes.len()).filter(|&o| o != k && self.admits(o, job, &status, &placed[o], &demands)).take(want).collect();
                    if others.len() < want {
                        refused = Some(format!("job {} needs {} nodes; only {} other node(s) admit it now", self.jobs[job].slurm, want + 1, others.len()));
                    }
                    more.push((job, others));
                }
                if let Some(why) = refused {
                    notes.push(format!("node {}: {why}", node.name));
                    break;
                }
                // Carried out: suspensions first, so the cores they free are
                // there for what starts or resumes (Slurm resumes a job onto
                // its cores whether another job holds them or not).
                for (job, others) in &more {
                    for &o in others {
                        placed[o].push(*job);
                    }
                }
                let beside = |j: JobId, on: &[JobId], st: &[Placed]| -> Vec<u64> { active(st, on).into_iter().filter(|&b| b != j).map(|b| self.jobs[b].slurm).collect() };
                let mut now_on: Vec<(JobId, Vec<usize>)> = Vec::new();
                for &job in &on {
                    let mut nodes_of = vec![k];
                    if let Some((_, o)) = more.iter().find(|(j, _)| *j == job) {
                        nodes_of.extend(o);
                    }
                    now_on.push((job, nodes_of));
                }
                let names = |ks: &[usize]| ks.iter().map(|&x| self.nodes[x].name.clone()).collect::<Vec<_>>().join(",");
                let predicted = |job: JobId, ks: &[usize]| -> f64 {
                    ks.iter()
                        .map(|&x| {
                            let on = if x == k { &on } else { &placed[x] };
                            source.slowdown(job, &active(&st, on).into_iter().filter(|&b| b != job).collect::<Vec<_>>())
                        })
                        .fold(1.0_f64, f64::max)
                };
                let mut suspends = Vec::new();
                let mut rest = Vec::new();
                for (job, ks) in &now_on {
                    let (job, was, is) = (*job, status[*job], st[*job]);
                    let slurm = self.jobs[job].slurm;
                    let action = match (was, is) {
                        (Placed::Running, Placed::Suspended) => {
                            suspends.push(Action::Suspend { job: slurm, node: node.name.clone(), beside: beside(job, &on, &st) });
                            continue;
                        }
                        (Placed::Waiting | Placed::Parked, Placed::Running) => {
                            Action::Release { job: slurm, node: names(ks), beside: beside(job, &on, &st), predicted: predicted(job, ks) }
                        }
                        (Placed::Suspended, Placed::Running) => {
                            Action::Resume { job: slurm, node: node.name.clone(), beside: beside(job, &on, &st), predicted: predicted(job, ks) }
                        }
                        (Placed::Waiting, Placed::Parked) => Action::Park { job: slurm, node: node.name.clone(), beside: beside(job, &on, &st) },
                        _ => continue,
                    };
                    rest.push(action);
                }
                actions.extend(suspends);
                actions.extend(rest);
                queue.retain(|q| !on.contains(q));
                status = st;
                placed[k] = on;
                if let Some(why) = stop {
                    notes.push(format!("node {}: {why}", node.name));
                    break;
                }
            }
        }
        (actions, notes)
    }
}

/// What a round offered before any decision (`serve`'s round log): the
/// CPUs of the usable nodes, those held by running jobs and by jobs
/// released and not started yet, and the waiting jobs a free slot existed
/// for: in queue order, each taking its cores on the first nodes that
/// admit it under the site constraints. A policy that starts whatever
/// fits starts exactly these; one that keeps cores empty by choice
/// (`exclusive`, `no-twins`) starts fewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    pub cores: u32,
    pub busy: u32,
    /// Slurm ids.
    pub fits: Vec<u64>,
}

impl Round {
    /// The room this reading offers waiting jobs ([`Room`]).
    pub fn room(&self) -> Room {
        let mut status: Vec<Placed> = self.jobs.iter().map(|j| j.placed).collect();
        let mut on: Vec<Vec<JobId>> = self.nodes.iter().map(|n| n.placed.clone()).collect();
        let demands: Vec<Demand> = self.jobs.iter().map(|j| j.demand.clone()).collect();
        let busy = |status: &[Placed], on: &[Vec<JobId>]| -> u32 {
            (0..self.nodes.len())
                .map(|k| on[k].iter().filter(|&&j| status[j] == Placed::Running).map(|&j| self.jobs[j].cores).sum::<u32>().min(self.nodes[k].cpus))
                .sum()
        };
        let held = busy(&status, &on);
        let mut fits = Vec::new();
        for &job in &self.queue {
            let want = self.jobs[job].nodes.max(1) as usize;
            let at: Vec<usize> = (0..self.nodes.len()).filter(|&o| self.admits(o, job, &status, &on[o], &demands)).take(want).collect();
            if at.len() == want {
                for o in at {
                    on[o].push(job);
                }
                status[job] = Placed::Running;
                fits.push(self.jobs[job].slurm);
            }
        }
        Room { cores: self.nodes.iter().map(|n| n.cpus).sum(), busy: held, fits }
    }

    /// Whether node `o`, holding `on`, has room for `job` now and admits it.
    fn admits(&self, o: usize, job: JobId, status: &[Placed], on: &[JobId], demands: &[Demand]) -> bool {
        let busy: u32 = on.iter().filter(|&&j| status[j] == Placed::Running).map(|&j| self.jobs[j].cores).sum();
        let h: Vec<(JobId, &Demand)> = on.iter().map(|&h| (h, &demands[h])).collect();
        busy + self.jobs[job].cores <= self.nodes[o].cpus && cosched_engine::constraints::admissible(&demands[job], &self.nodes[o].offer, &h).is_ok()
    }
}

/// `d` with its job (a Slurm id, as policies see jobs) replaced by the round's `job`.
fn remap(d: &cosched_engine::Decision, job: JobId) -> cosched_engine::Decision {
    use cosched_engine::Decision as D;
    match d.clone() {
        D::Start { pool, .. } => D::Start { job, pool },
        D::StartOn { pool, cores, overbook, .. } => D::StartOn { job, pool, cores, overbook },
        D::Suspend { .. } => D::Suspend { job },
        D::Resume { .. } => D::Resume { job },
        D::Move { cores, .. } => D::Move { job, cores },
        D::StartVariant { variant, .. } => D::StartVariant { job, variant },
    }
}

/// What `j` asks of each node it runs on, under sharing scope `scope`.
pub fn demand_of(j: &QueueJob, scope: Scope) -> Demand {
    let per_node = j.cpus.max(1).div_ceil(j.site.nodes());
    Demand { mem_mb: j.site.mem_mb(per_node), exclusive: j.site.exclusive, scope: scope.of(j), gres: j.site.gres.clone() }
}

#[cfg(test)]
mod tests;
