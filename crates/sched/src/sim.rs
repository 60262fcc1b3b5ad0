//! Discrete-event simulation of identical nodes in virtual time.
//!
//! Progress-rate model: a running job advances at share / slowdown(current
//! co-runners) solo-seconds per second, so its rate changes whenever a
//! co-runner on its node starts, finishes, is suspended, resumed or moved,
//! not only at its own start. `share` is 1 on cores of its own and less on
//! overbooked ones (`engine::cores::shares`: a core's time is split evenly
//! among the threads placed on it); a suspended job advances at 0 and
//! slows nobody.
//!
//! Why it is fast enough for 100,000 jobs on 1,000 nodes: each node keeps its
//! own running jobs, their rates and the time they were last brought up to
//! date, so an event touches only the node it happens on; the next finish of
//! every node sits in one heap (stale entries are skipped by a per-node
//! version); the queue is scanned only as far as the policy's window. What
//! still costs O(nodes) per instant is a policy that leaves many nodes idle
//! while jobs wait (conflict-aware refusing): each idle node is asked again
//! at every instant, since the queue or what the policy learnt may have
//! changed.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::fmt;

use serde::Serialize;

use cosched_engine::cores::{shares, CoreMap, Placed};
use cosched_engine::placement::{Neighbour, PlaceCtx, Placement};
use cosched_engine::run::{ExecError, Executor, EndedJob, StartPlan};
use cosched_engine::online::{Reading, Sample, Signal};
use cosched_engine::validate::{check_decision_in, check_jobs, Act, JobState};
use cosched_engine::view::{self, Seat, Work};
use cosched_model::placement::SharingLevel;
use cosched_model::run::JobStatus;
use cosched_model::trace::TraceJob;

use cosched_engine::policy::{Decision, JobOutcome, Policy, QueuedJob, RunningJob};
use crate::tables::SlowdownSource;
use crate::{Event, EventKind, JobId};

pub use cosched_engine::platform::{Platform, SimJob};

/// How the engine runs, beyond the node and the jobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimOptions {
    /// Identical nodes, each with the platform's pools.
    pub nodes: usize,
    /// The policy sees at most this many waiting jobs, the oldest first (a
    /// batch scheduler's look-ahead); `None` shows the whole queue, which is
    /// what the SX-Aurora paper's strategy searches.
    pub window: Option<usize>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { nodes: 1, window: None }
    }
}

/// What a simulation produced: the event trace that `model::metrics` scores,
/// and where each job ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    pub events: Vec<Event>,
    /// Node of each job, by job index.
    pub node: Vec<usize>,
    /// The variant each job ran as, by job index (0 for jobs without).
    pub variant: Vec<usize>,
    /// The PUs each job started on, by job index, when the engine placed
    /// on a topology (`simulate_placed`); empty otherwise.
    pub cpus: Vec<Vec<u32>>,
}

impl Trace {
    /// The trace with job names, programs, pools and nodes, in the model's
    /// one trace format (`model::trace`: CSV or JSON), every job `ok`.
    pub fn export(&self, platform: &Platform, jobs: &[SimJob]) -> cosched_model::trace::Trace {
        let jobs = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let v = self.variant.get(i).copied().unwrap_or(0);
                let (pool, _, solo) = j.variant(v).unwrap_or((j.pool, j.cores, j.solo));
                TraceJob {
                    job: i,
                    name: j.name.clone(),
                    program: j.program.clone(),
                    pool: platform.pools[pool].name.clone(),
                    node: self.node[i],
                    nodes: Vec::new(),
                    cpus: self.cpus.get(i).cloned().unwrap_or_default(),
                    solo: Some(solo),
                    status: Some(JobStatus::Ok),
                    variant: j.variant_name(v),
                }
            })
            .collect();
        cosched_model::trace::Trace { jobs, events: self.events.clone(), estimates: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The inputs cannot be simulated (bad pool, cores, times).
    Input(String),
    /// The policy asked for something the engine cannot do.
    Decision {
        time: f64,
        decision: Decision,
        why: String,
    },
    /// Jobs wait, nothing runs and nothing will arrive: the policy deadlocked.
    Stalled { time: f64, waiting: Vec<JobId> },
    /// The slowdown source gave a value that is not positive and finite.
    Slowdown {
        job: JobId,
        beside: Vec<JobId>,
        value: f64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Input(m) => write!(f, "invalid simulation input: {m}"),
            SimError::Decision {
                time,
                decision,
                why,
            } => {
                write!(f, "at t={time}: the policy's decision `{decision}` was refused: {why}")
            }
            SimError::Stalled { time, waiting } => {
                let shown: Vec<_> = waiting.iter().take(20).collect();
                let more = if waiting.len() > 20 { format!(" and {} more", waiting.len() - 20) } else { String::new() };
                write!(f, "at t={time}: nothing runs or arrives but jobs {shown:?}{more} wait; the policy stalled")
            }
            SimError::Slowdown { job, beside, value } => {
                write!(f, "slowdown of job {job} beside {beside:?} is {value}, not a positive finite number")
            }
        }
    }
}

impl std::error::Error for SimError {}

struct Run {
    id: JobId,
    /// Pool, cores and solo time of the variant it runs as.
    pool: usize,
    cores: u32,
    solo: f64,
    start: f64,
    /// Solo-seconds of work left at the node's `since`.
    left: f64,
    rate: f64,
    /// Pool cores it is placed on.
    cpus: Vec<u32>,
    suspended_at: Option<f64>,
    /// Seconds suspended before `suspended_at`.
    suspended_s: f64,
}

impl Run {
    fn suspended_until(&self, t: f64) -> f64 {
        self.suspended_s + self.suspended_at.map_or(0.0, |s| (t - s).max(0.0))
    }
}

#[derive(Default)]
struct Node {
    running: Vec<Run>,
    /// Which cores running jobs hold, per pool.
    map: CoreMap,
    /// The time `left` of every running job refers to.
    since: f64,
    /// Bumped whenever the running set changes, to skip stale heap entries.
    version: u64,
    /// `stamp` when this node last answered "wait".
    asked_at: u64,
}

fn check(platform: &Platform, jobs: &[SimJob], opts: &SimOptions) -> Result<(), SimError> {
    if opts.nodes == 0 {
        return Err(SimError::Input("a cluster needs at least one node".into()));
    }
    if opts.window == Some(0) {
        return Err(SimError::Input("a window of 0 jobs shows the policy nothing".into()));
    }
    check_jobs(platform, jobs).map_err(SimError::Input)
}

/// Runs `jobs` on one node of `platform` under `policy`, with `truth` giving
/// the slowdowns that drive progress and that the policy sees, and returns
/// the trace. Events at one instant come finishes first, then arrivals, then
/// starts, so a pool freed at t can be refilled at t.
pub fn simulate(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    policy: &mut dyn Policy,
) -> Result<Vec<Event>, SimError> {
    simulate_predicted(platform, jobs, truth, truth, policy)
}

/// As [`simulate`], but the policy sees `predicted` while `truth` drives
/// progress, so the cost of a predictor's mistakes can be simulated.
pub fn simulate_predicted(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    predicted: &dyn SlowdownSource,
    policy: &mut dyn Policy,
) -> Result<Vec<Event>, SimError> {
    simulate_with(platform, jobs, truth, predicted, policy, &SimOptions::default()).map(|t| t.events)
}

/// The engine: `opts.nodes` copies of `platform`. The policy is asked node by
/// node, in node order, with a [`View`](cosched_engine::policy::View) of that node and the shared queue; its
/// `Start` decisions apply to that node. After a start anywhere, nodes that
/// said "wait" earlier are asked again, since the queue they saw changed.
/// When a job finishes, the policy [observes](Policy::observe) its outcome
/// before anything else is decided.
pub fn simulate_with(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    predicted: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    opts: &SimOptions,
) -> Result<Trace, SimError> {
    simulate_placed(platform, jobs, truth, predicted, policy, opts, None)
}

/// [`simulate_with`] on nodes with a topology: every start is placed by
/// `placement` (`engine::placement`; interference-aware against
/// `predicted`, what the policy sees), and when `truth` has levels
/// ([`SlowdownSource::by_level`]) each running pair slows down by the
/// closest level between its two jobs' CPUs. Without a placement this is
/// `simulate_with`, start for start.
pub fn simulate_placed(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    predicted: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    opts: &SimOptions,
    placement: Option<&Placement>,
) -> Result<Trace, SimError> {
    check(platform, jobs, opts)?;
    if let Some(p) = placement {
        p.check(&platform.pools).map_err(SimError::Input)?;
    }
    // Levels are computed only for a truth that reads them.
    let leveled = placement.filter(|_| truth.by_level());
    let mut levels: Vec<Option<SharingLevel>> = Vec::new();
    let mut cpus_of: Vec<Vec<u32>> = if placement.is_some() { vec![Vec::new(); jobs.len()] } else { Vec::new() };
    let npools = platform.pools.len();
    let mut arrivals: Vec<JobId> = (0..jobs.len()).collect();
    // Stable sort: equal arrivals keep workload order, which is queue order.
    arrivals.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    // Each job's place in `arrivals`: the queue is sorted by it, so a
    // started job is found in the policy's view by bisection.
    let mut place: Vec<usize> = vec![0; jobs.len()];
    for (k, &id) in arrivals.iter().enumerate() {
        place[id] = k;
    }
    let mut next_arrival = 0;
    // Arrived jobs in queue order; started ones stay as holes that scans
    // skip, and `head` moves past the leading ones.
    let mut queue: Vec<JobId> = Vec::with_capacity(jobs.len());
    let mut head = 0usize;
    let mut waiting = 0usize;
    // 0 not arrived, 1 waiting, 2 started.
    let mut state: Vec<u8> = vec![0; jobs.len()];
    let mut node_of: Vec<usize> = vec![usize::MAX; jobs.len()];
    let mut variant_of: Vec<usize> = vec![0; jobs.len()];
    let mut nodes: Vec<Node> = (0..opts.nodes)
        .map(|_| Node { map: CoreMap::new(platform.pools.iter().map(|p| p.cores)), ..Node::default() })
        .collect();
    let _ = npools;
    // A policy that suspends, moves or overbooks is asked about every node
    // at every instant, full or not, and when nothing waits.
    let acting = policy.acts_on_running();
    let mut heap: BinaryHeap<Reverse<(OrdF64, usize, u64)>> = BinaryHeap::new();
    let mut trace = Vec::with_capacity(jobs.len() * 3);
    let mut now = 0.0_f64;
    // Bumped at every instant and every start: what a node saw when it
    // last answered "wait" is still current while `asked_at == stamp`.
    let mut stamp: u64 = 0;
    // Nodes with a free core in some pool, in node order.
    let mut open: BTreeSet<usize> = (0..opts.nodes).collect();
    // What the policy sees of the queue. Without a window it is kept up to
    // date job by job (most instants change one or two jobs of it); with one
    // it is rebuilt from the queue's head for each question.
    let mut qbuf: Vec<QueuedJob> = Vec::new();
    // Without a window the view is `qbuf[qhead..]`: a start takes its job
    // out by moving the jobs on its shorter side one place, those before
    // it back (starts are mostly near the head, so few move; `Vec::remove`
    // alone moved every job behind it: quadratic in the queue on a million
    // jobs) or those after it forward (a list order starts anywhere).
    let mut qhead = 0usize;
    let mut beside: Vec<JobId> = Vec::new();
    let mut running_total = 0usize;

    loop {
        // Finishes at `now`: every node whose next finish is due.
        while let Some(&Reverse((OrdF64(t), n, version))) = heap.peek() {
            if t > now {
                break;
            }
            heap.pop();
            if nodes[n].version != version {
                continue;
            }
            let node = &mut nodes[n];
            advance(node, now);
            // The job whose finish this entry predicted is done exactly now;
            // float steps leave the others crumbs, so a job within a relative
            // 1e-9 of done is done now rather than at a spurious event later.
            let first = node
                .running
                .iter()
                .enumerate()
                .min_by(|a, b| (a.1.left / a.1.rate).total_cmp(&(b.1.left / b.1.rate)))
                .map(|(i, _)| i)
                .expect("a scheduled node runs something");
            node.running[first].left = 0.0;
            let mut k = 0;
            while k < node.running.len() {
                let r = &node.running[k];
                if r.left <= r.solo * 1e-9 {
                    let r = node.running.remove(k);
                    let j = &jobs[r.id];
                    if r.suspended_at.is_none() {
                        node.map.release(r.pool, &r.cpus);
                    }
                    running_total -= 1;
                    trace.push(Event { time: now, job: r.id, kind: EventKind::Finish });
                    let suspended_s = r.suspended_until(now);
                    policy.observe(&JobOutcome {
                        job: r.id,
                        program: &j.program,
                        arrival: j.arrival,
                        start: r.start,
                        finish: now,
                        solo: r.solo,
                        slowdown: (now - r.start - suspended_s) / r.solo,
                        suspended_s,
                    });
                } else {
                    k += 1;
                }
            }
            node.version += 1;
            open.insert(n);
            reschedule(node, n, truth, &mut beside, &mut heap, leveled, &mut levels)?;
        }

        while next_arrival < arrivals.len() && jobs[arrivals[next_arrival]].arrival <= now {
            let id = arrivals[next_arrival];
            trace.push(Event { time: now, job: id, kind: EventKind::Arrive });
            queue.push(id);
            if opts.window.is_none() {
                qbuf.push(queued(jobs, id));
            }
            state[id] = 1;
            waiting += 1;
            next_arrival += 1;
        }

        // Passes over the open nodes until a pass starts nothing. A node that
        // said "wait" since the last change (a new instant or a start
        // anywhere) would say it again, so it is not asked.
        stamp += 1;
        while waiting > 0 || acting {
            let mut any = false;
            // Walks the open set in node order by range queries, since a
            // node may leave it on the way; copying it would cost O(nodes).
            let mut cursor = 0usize;
            while let Some(&n) = open.range(cursor..).next() {
                cursor = n + 1;
                if nodes[n].asked_at == stamp {
                    continue;
                }
                let mut changed = false;
                loop {
                    if let Some(limit) = opts.window {
                        while head < queue.len() && state[queue[head]] == 2 {
                            head += 1;
                        }
                        qbuf.clear();
                        for &id in &queue[head..] {
                            if qbuf.len() >= limit {
                                break;
                            }
                            if state[id] == 1 {
                                qbuf.push(queued(jobs, id));
                            }
                        }
                    }
                    let node = &nodes[n];
                    let dt = now - node.since;
                    // Built per question: the view borrows each job's cores
                    // from the node, which the decisions then change.
                    let mut rbuf: Vec<RunningJob> = Vec::with_capacity(node.running.len());
                    rbuf.extend(node.running.iter().map(|run| {
                        let seat = Seat { pool: run.pool, cores: run.cores, cpus: &run.cpus, suspended: run.suspended_at.is_some(), suspended_s: run.suspended_until(now) };
                        view::running(run.id, run.solo, &jobs[run.id].program, seat, Work::Left(run.left - dt * run.rate))
                    }));
                    let view = view::view(now, &qbuf[qhead..], &rbuf, &platform.pools, predicted);
                    let decisions = policy.decide(&view);
                    if decisions.is_empty() {
                        break;
                    }
                    let node = &mut nodes[n];
                    if !changed {
                        advance(node, now);
                        changed = true;
                    }
                    for d in decisions {
                        let st = |j: JobId| match state[j] {
                            1 => JobState::Waiting,
                            2 => match node.running.iter().find(|r| r.id == j) {
                                Some(r) if r.suspended_at.is_some() => JobState::Suspended,
                                Some(_) => JobState::Running,
                                None => JobState::Elsewhere,
                            },
                            _ => JobState::Elsewhere,
                        };
                        // Built only on a topology: the jobs a start is placed against.
                        let neighbours: Vec<Neighbour> = match placement {
                            Some(_) => node
                                .running
                                .iter()
                                .filter(|r| r.suspended_at.is_none())
                                .map(|r| Neighbour { job: r.id, pool: jobs[r.id].pool, cpus: &r.cpus })
                                .collect(),
                            None => Vec::new(),
                        };
                        let ctx = placement.map(|placement| PlaceCtx { placement, running: &neighbours, predicted });
                        let act = check_decision_in(&d, jobs, st, &node.map, ctx.as_ref())
                            .map_err(|why| SimError::Decision { time: now, decision: d.clone(), why: why.to_string() })?;
                        drop(neighbours);
                        stamp += 1;
                        let k_of = |node: &Node, job: JobId| node.running.iter().position(|r| r.id == job).expect("checked: it runs here");
                        match act {
                            Act::Start { job, pool, cpus, variant } => {
                                let (_, cores, solo) = jobs[job].variant(variant).expect("checked: the variant exists");
                                variant_of[job] = variant;
                                state[job] = 2;
                                waiting -= 1;
                                if opts.window.is_none() {
                                    let pos = qhead
                                        + qbuf[qhead..].binary_search_by_key(&place[job], |q| place[q.id]).expect("waiting jobs are in the view");
                                    if pos - qhead <= qbuf.len() - 1 - pos {
                                        qbuf[qhead..=pos].rotate_right(1);
                                        qhead += 1;
                                    } else {
                                        qbuf.remove(pos);
                                    }
                                    if qhead >= 4096 && 2 * qhead >= qbuf.len() {
                                        qbuf.drain(..qhead);
                                        qhead = 0;
                                    }
                                }
                                node_of[job] = n;
                                if let Some(p) = placement {
                                    cpus_of[job] = p.pus(pool, &cpus);
                                }
                                node.map.hold(pool, &cpus);
                                node.running.push(Run { id: job, pool, cores, solo, start: now, left: solo, rate: 1.0, cpus, suspended_at: None, suspended_s: 0.0 });
                                running_total += 1;
                                trace.push(Event { time: now, job, kind: EventKind::Start });
                            }
                            Act::Suspend { job } => {
                                let k = k_of(node, job);
                                node.map.release(node.running[k].pool, &node.running[k].cpus);
                                node.running[k].suspended_at = Some(now);
                                trace.push(Event { time: now, job, kind: EventKind::Suspend });
                            }
                            Act::Resume { job } => {
                                let k = k_of(node, job);
                                let r = &mut node.running[k];
                                r.suspended_s = r.suspended_until(now);
                                r.suspended_at = None;
                                node.map.hold(r.pool, &r.cpus);
                                trace.push(Event { time: now, job, kind: EventKind::Resume });
                            }
                            Act::Move { job, pool, cpus } => {
                                let k = k_of(node, job);
                                let r = &mut node.running[k];
                                if r.suspended_at.is_none() {
                                    node.map.release(pool, &r.cpus);
                                    node.map.hold(pool, &cpus);
                                }
                                r.cpus = cpus;
                                trace.push(Event { time: now, job, kind: EventKind::Move });
                            }
                        }
                    }
                    any = true;
                    // A policy that only starts jobs on free cores has
                    // nothing to say about a full node: not asked again.
                    if !acting && node.map.full() {
                        break;
                    }
                }
                let node = &mut nodes[n];
                node.asked_at = stamp;
                if changed {
                    node.version += 1;
                    reschedule(node, n, truth, &mut beside, &mut heap, leveled, &mut levels)?;
                    if !acting && node.map.full() {
                        open.remove(&n);
                    }
                }
            }
            if !any {
                break;
            }
        }

        let next_finish = loop {
            match heap.peek() {
                Some(&Reverse((_, n, v))) if nodes[n].version != v => {
                    heap.pop();
                }
                Some(&Reverse((OrdF64(t), _, _))) => break t,
                None => break f64::INFINITY,
            }
        };
        let next_arrival_t = arrivals.get(next_arrival).map_or(f64::INFINITY, |&a| jobs[a].arrival);
        // A wake-up the policy asked for (a quantum), if still ahead.
        let wake = policy.wake_at().filter(|&w| w > now).unwrap_or(f64::INFINITY);
        // Nothing finishes (nothing runs, or only suspended jobs), nothing
        // arrives and the policy sleeps: done, or stalled.
        if next_finish == f64::INFINITY && next_arrival_t == f64::INFINITY && wake == f64::INFINITY {
            if waiting == 0 && running_total == 0 {
                return Ok(Trace { events: trace, node: node_of, variant: variant_of, cpus: cpus_of });
            }
            let mut w: Vec<JobId> = queue[head..].iter().copied().filter(|&id| state[id] == 1).collect();
            w.extend(nodes.iter().flat_map(|nd| nd.running.iter().map(|r| r.id)));
            return Err(SimError::Stalled { time: now, waiting: w });
        }
        let next = next_arrival_t.min(wake);
        // A finish a float crumb after an arrival or a wake-up is taken as
        // at it and first, as the virtual node (and a real one) sees it:
        // otherwise a policy acting at that instant would suspend a job
        // with a crumb of work left.
        now = if next_finish <= next || next_finish - next <= 1e-9 * next.abs().max(1.0) { next_finish } else { next };
    }
}

fn queued(jobs: &[SimJob], id: JobId) -> QueuedJob<'_> {
    view::waiting(id, &jobs[id])
}

/// Brings the node's remaining work up to `now` at the current rates.
fn advance(node: &mut Node, now: f64) {
    let dt = now - node.since;
    if dt > 0.0 {
        for r in &mut node.running {
            r.left -= dt * r.rate;
        }
    }
    node.since = now;
}

/// New rates after the node's running set changed, and its next finish.
/// With `leveled`, each co-runner counts at the closest level its CPUs
/// share with the job's.
fn reschedule(
    node: &mut Node,
    n: usize,
    truth: &dyn SlowdownSource,
    beside: &mut Vec<JobId>,
    heap: &mut BinaryHeap<Reverse<(OrdF64, usize, u64)>>,
    leveled: Option<&Placement>,
    levels: &mut Vec<Option<SharingLevel>>,
) -> Result<(), SimError> {
    if node.running.is_empty() {
        return Ok(());
    }
    let share = node_shares(&node.running);
    let mut soonest = f64::INFINITY;
    for i in 0..node.running.len() {
        if node.running[i].suspended_at.is_some() {
            node.running[i].rate = 0.0;
            continue;
        }
        beside.clear();
        beside.extend(
            node.running.iter().enumerate().filter(|&(k, r)| k != i && r.suspended_at.is_none()).map(|(_, r)| r.id),
        );
        let id = node.running[i].id;
        let s = match leveled {
            None => truth.slowdown(id, beside),
            Some(p) => {
                let me = &node.running[i];
                levels.clear();
                levels.extend(node.running.iter().enumerate().filter(|&(k, r)| k != i && r.suspended_at.is_none()).map(|(_, r)| {
                    p.level(me.pool, &me.cpus, r.pool, &r.cpus)
                }));
                truth.slowdown_at(id, beside, levels)
            }
        };
        if !(s.is_finite() && s > 0.0) {
            return Err(SimError::Slowdown { job: id, beside: beside.clone(), value: s });
        }
        let r = &mut node.running[i];
        r.rate = share.as_ref().map_or(1.0, |v| v[i]) / s;
        soonest = soonest.min(r.left / r.rate);
    }
    if soonest.is_finite() {
        heap.push(Reverse((OrdF64(node.since + soonest), n, node.version)));
    }
    Ok(())
}

/// Each job's share of its cores (`engine::cores::shares`), `None` when
/// every running job has cores of its own, which is every node of a policy
/// that never overbooks: the common case costs a scan, not the model.
fn node_shares(running: &[Run]) -> Option<Vec<f64>> {
    let active = || running.iter().filter(|r| r.suspended_at.is_none());
    let squeezed = active().any(|r| (r.cpus.len() as u32) < r.cores);
    let overlap = active().enumerate().any(|(i, a)| {
        active().skip(i + 1).any(|b| a.pool == b.pool && a.cpus.iter().any(|c| b.cpus.contains(c)))
    });
    if !squeezed && !overlap {
        return None;
    }
    let placed: Vec<Placed> = running
        .iter()
        .map(|r| Placed {
            pool: r.pool,
            cpus: if r.suspended_at.is_some() { &[] } else { &r.cpus },
            threads: if r.suspended_at.is_some() { 0 } else { r.cores },
        })
        .collect();
    Some(shares(&placed))
}

/// Finite times ordered for the heap (ties broken by node index).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One node in virtual time with the simulator's progress-rate model, as an
/// [`Executor`] driven from the outside by `cosched_engine::run_node`: a
/// second, independent executor of the same decisions, so the runner's loop
/// can be checked against the simulator and a policy tried through the
/// runner without processes.
pub struct VirtualNode<'a> {
    jobs: &'a [SimJob],
    truth: &'a dyn SlowdownSource,
    now: f64,
    running: Vec<VRun>,
    starts: Vec<StartPlan>,
    /// The topology starts are placed on, for a truth with levels.
    placement: Option<&'a Placement>,
    /// Seconds between readings of the jobs' virtual progress, when the
    /// run observes it (`VirtualNode::sampled`).
    every: Option<f64>,
}

struct VRun {
    id: JobId,
    /// Pool, cores and solo time of the variant it runs as.
    pool: usize,
    cores: u32,
    solo: f64,
    start: f64,
    /// Solo-seconds of work left.
    left: f64,
    cpus: Vec<u32>,
    suspended: bool,
}

impl<'a> VirtualNode<'a> {
    /// A node whose clock reads 0, `truth` driving progress.
    pub fn new(jobs: &'a [SimJob], truth: &'a dyn SlowdownSource) -> VirtualNode<'a> {
        VirtualNode { jobs, truth, now: 0.0, running: Vec::new(), starts: Vec::new(), placement: None, every: None }
    }

    /// The same node on a topology: with a truth that has levels, each
    /// running pair slows down by the closest level its CPUs share, as in
    /// [`simulate_placed`] (the cores come from `run_node_placed`'s plans).
    pub fn placed(mut self, placement: &'a Placement) -> VirtualNode<'a> {
        self.placement = Some(placement);
        self
    }

    /// The same node read every `every` seconds: each running job's work
    /// done (solo-seconds, out of its solo time), so `run_node` estimates
    /// its slowdown online from the truth while the policy's source
    /// predicts it: a misprediction and the reaction to it in virtual time.
    pub fn sampled(mut self, every: f64) -> VirtualNode<'a> {
        self.every = Some(every);
        self
    }

    /// The same node with its clock at `t` (a resumed run's).
    pub fn at(mut self, t: f64) -> VirtualNode<'a> {
        self.now = t;
        self
    }

    /// Every start so far, as the runner planned it.
    pub fn starts(&self) -> &[StartPlan] {
        &self.starts
    }

    fn find(&mut self, job: JobId) -> Result<&mut VRun, ExecError> {
        self.running.iter_mut().find(|r| r.id == job).ok_or_else(|| ExecError::Fatal(format!("job {job} is not on this node")))
    }
}

impl Executor for VirtualNode<'_> {
    fn now(&mut self) -> f64 {
        self.now
    }

    fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError> {
        let (pool, cores, solo) = self.jobs[plan.job]
            .variant(plan.variant)
            .ok_or_else(|| ExecError::Fatal(format!("job {} has no variant {}", plan.job, plan.variant)))?;
        self.running.push(VRun { id: plan.job, pool, cores, solo, start: self.now, left: solo, cpus: plan.cpus.clone(), suspended: false });
        self.starts.push(plan.clone());
        Ok(self.now)
    }

    fn suspend(&mut self, job: JobId) -> Result<f64, ExecError> {
        self.find(job)?.suspended = true;
        Ok(self.now)
    }

    fn resume(&mut self, job: JobId) -> Result<f64, ExecError> {
        self.find(job)?.suspended = false;
        Ok(self.now)
    }

    fn move_to(&mut self, job: JobId, cpus: &[u32]) -> Result<f64, ExecError> {
        self.find(job)?.cpus = cpus.to_vec();
        Ok(self.now)
    }

    fn sample_every(&self) -> Option<f64> {
        self.every
    }

    fn sample(&mut self) -> Result<Vec<(JobId, Sample)>, ExecError> {
        let now = self.now;
        Ok(self
            .running
            .iter()
            .filter(|r| !r.suspended)
            .map(|r| (r.id, Sample::Reading(Reading { time: now, done: r.solo - r.left, total: Some(r.solo), solo_rate: None, signal: Signal::Progress })))
            .collect())
    }

    fn wait(&mut self, until: Option<f64>) -> Result<Vec<EndedJob>, ExecError> {
        let ids: Vec<JobId> = self.running.iter().filter(|r| !r.suspended).map(|r| r.id).collect();
        let placed: Vec<Placed> = self
            .running
            .iter()
            .map(|r| Placed {
                pool: r.pool,
                cpus: if r.suspended { &[] } else { &r.cpus },
                threads: if r.suspended { 0 } else { r.cores },
            })
            .collect();
        let share = shares(&placed);
        let mut rates = Vec::with_capacity(self.running.len());
        for (r, sh) in self.running.iter().zip(&share) {
            if r.suspended {
                rates.push(0.0);
                continue;
            }
            let beside: Vec<JobId> = ids.iter().copied().filter(|&b| b != r.id).collect();
            let s = match self.placement.filter(|_| self.truth.by_level()) {
                None => self.truth.slowdown(r.id, &beside),
                Some(p) => {
                    let level = |b: JobId| {
                        let other = self.running.iter().find(|o| o.id == b).expect("beside jobs run here");
                        p.level(self.jobs[r.id].pool, &r.cpus, self.jobs[b].pool, &other.cpus)
                    };
                    let levels: Vec<Option<SharingLevel>> = beside.iter().map(|&b| level(b)).collect();
                    self.truth.slowdown_at(r.id, &beside, &levels)
                }
            };
            if !(s.is_finite() && s > 0.0) {
                return Err(ExecError::Fatal(SimError::Slowdown { job: r.id, beside, value: s }.to_string()));
            }
            rates.push(sh / s);
        }
        let dt_end = self
            .running
            .iter()
            .zip(&rates)
            .filter(|(_, &rate)| rate > 0.0)
            .map(|(r, rate)| r.left / rate)
            .fold(f64::INFINITY, f64::min);
        let dt = until.map_or(dt_end, |u| dt_end.min(u - self.now));
        if !dt.is_finite() {
            return Err(ExecError::Fatal("nothing runs and nothing will arrive: waiting would never end".into()));
        }
        // Reaching `until` lands on it exactly, as the simulator's clock
        // does, so wake-ups (quanta) fall on the same instants in both.
        match until {
            Some(u) if dt_end >= u - self.now => self.now = u,
            _ => self.now += dt,
        }
        let mut ended = Vec::new();
        for (r, rate) in self.running.iter_mut().zip(&rates) {
            r.left -= dt * rate;
            // As in the simulator: float steps leave crumbs of work.
            if *rate > 0.0 && r.left <= r.solo * 1e-9 {
                ended.push(EndedJob { job: r.id, status: JobStatus::Ok, start: r.start, end: self.now, work_s: None, cpus: Vec::new() });
            }
        }
        self.running.retain(|r| !ended.iter().any(|e| e.job == r.id));
        Ok(ended)
    }
}
