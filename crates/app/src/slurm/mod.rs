//! `cosched slurm serve|status`: cosched deciding for a Slurm cluster.
//!
//! `serve` reads the cluster each round (`cosched_slurm::Slurm`), asks the
//! chosen policy node by node with the chosen predictor's slowdowns
//! (fitted on the store, as `cosched run` does), releases the held jobs the
//! policy starts onto their nodes, and learns from every job that ends: a
//! job tied to a workload job becomes a `run_jobs` row of its node's run
//! (series `slurm:PARTITION`), so `measured` and `learned` fit on cluster
//! history as on real runs.
//!
//! A Slurm job is tied to a workload job by its comment (`sbatch
//! --comment=cosched:NAME`), else by its name (`sbatch -J NAME`); its
//! program identity is then that job's program, else the comment, else the
//! job name. Each release also writes cosched's decision into the job's
//! `AdminComment` (node, co-runners, predicted slowdown), signed with a key
//! only `serve` reads (`cosched_slurm::mark`), so Slurm holds it, `status`
//! or a restarted cosched reads it back, and a job released by anyone
//! else is held again.
//!
//! Every field a user sets is untrusted: one job that cannot be read or
//! never can start is skipped with a logged reason, and no round stops on
//! it. Finished jobs are timed from Slurm's record; their output file is
//! read only when it is safe (`cosched_slurm::output`), and a time no run
//! could take (non-positive, longer than the job, far below its solo
//! time) is refused with the reason, never stored.

mod learn;
mod report;
mod status;

pub use learn::MIN_PLAUSIBLE_SLOWDOWN;
pub use report::{report, Hours, NodeUse, PairUse, ReportJob, ReportRequest, Slowdowns, SlurmReport, UserUse};
pub use status::{batch_script, status, submit, AcceleratorRow, JobRow, NodeRow, PairRow, StatusReport, SubmitRequest, Submitted};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cosched_measure::launch::{install_interrupt_handler, interrupted};
use cosched_model::text::printable;
use cosched_model::workload::Workload;
use cosched_predict::{Characterization, Predictor};
use cosched_sched::registry::{policy_from_spec, resolve_spec};
use cosched_sched::{JobId, SlowdownSource};
use cosched_slurm::{refused_policy, Action, Checks, Decision, Identity, JobState, Key, NodePolicies, QueueJob, Round, Scope, Signed, Slurm, SlurmError, Step, Wake};
use cosched_store::Store;
use serde::Serialize;

use crate::common::{db_path, load_workload, open_store, Ctx};
use crate::error::{bad_input, stopped};
use cosched_learn::run_inputs::solo_time;
use cosched_learn::training::{available_training_set, build};
use learn::Learning;

/// Solo time assumed for a job cosched knows nothing about, seconds; it only
/// sets how far along policies think such a job is.
const UNKNOWN_SOLO_S: f64 = 60.0;

/// The prefix of a comment that ties a Slurm job to a workload job.
pub const COMMENT_PREFIX: &str = "cosched:";

/// How long `status` and `serve` wait for the controller's first answer
/// before saying what to check.
pub(crate) const CHECK_WITHIN: Duration = Duration::from_secs(4);

#[derive(Debug, Clone)]
pub struct SlurmTarget {
    /// `SLURM_CONF` for Slurm's commands; `None`: their default.
    pub conf: Option<PathBuf>,
    /// The partition whose held jobs cosched decides for.
    pub partition: String,
    /// Ties jobs to programs, solo times and stored measurements.
    pub workload: Option<PathBuf>,
    /// Predictor: NAME or NAME:key=value,...
    pub predictor: String,
    pub db: Option<PathBuf>,
    /// The key that signs cosched's decisions; `None`: `slurm-mark.key`
    /// beside the database.
    pub key: Option<PathBuf>,
}

impl SlurmTarget {
    pub(crate) fn key_path(&self) -> PathBuf {
        self.key.clone().unwrap_or_else(|| db_path(self.db.as_deref()).with_file_name("slurm-mark.key"))
    }
}

#[derive(Debug, Clone)]
pub struct ServeRequest {
    pub target: SlurmTarget,
    /// Policy as NAME or NAME:KEY=VALUE,...
    pub policy: String,
    /// Seconds between rounds.
    pub interval: f64,
    /// Stop after the partition has had no job waiting or running for this
    /// many seconds (scripts and tests); `None`: until SIGINT / SIGTERM.
    pub exit_idle: Option<f64>,
    /// The abstract socket name `cosched slurm hook` wakes this serve on
    /// at each job's end (an epilog runs the hook); `None`: polling only.
    pub hook: Option<String>,
    /// Seconds a released job may stay pending before it is held again
    /// and its cores freed (a dependency never met, a begin time).
    pub start_bound: f64,
    /// Which jobs may share a node: `any`, `user`, `account` or `qos`.
    pub share_scope: String,
    /// Stop after this many rounds (benchmarks: scripts/slurm-scale.sh).
    pub rounds: Option<u64>,
    /// Read and decide, but release and hold nothing: the decisions are
    /// counted (`planned`), and the cluster is left as it is.
    pub dry_run: bool,
}

/// Slurm's gang scheduling turns (`SchedulerTimeSlice`) are whole seconds,
/// and each turn here costs a suspend and a resume RPC: no shorter turn.
pub const MIN_TURN_S: f64 = 1.0;

/// One policy per node, built from one spec: a policy keeps what it knows
/// of the jobs it saw (turns, whom it suspended) per node, as on the node
/// runner.
struct PerNode {
    spec: String,
    nodes: BTreeMap<String, Box<dyn cosched_sched::Policy>>,
}

impl NodePolicies for PerNode {
    fn on(&mut self, node: &str) -> &mut dyn cosched_sched::Policy {
        let spec = &self.spec;
        self.nodes.entry(node.to_string()).or_insert_with(|| policy_from_spec(spec).expect("checked when serve began")).as_mut()
    }
}

impl PerNode {
    /// The earliest time a node's policy wants to be asked again.
    fn wake_at(&self) -> Option<f64> {
        self.nodes.values().filter_map(|p| p.wake_at()).min_by(f64::total_cmp)
    }
}

/// What cosched did to a running job (or parked a held one).
#[derive(Debug, Clone, Serialize)]
pub struct Acted {
    pub job: u64,
    /// `suspend`, `resume` or `park`.
    pub act: String,
    pub node: String,
    /// Seconds since `serve` began.
    pub t: f64,
}

/// One release cosched made.
#[derive(Debug, Clone, Serialize)]
pub struct Released {
    pub job: u64,
    pub node: String,
    pub beside: Vec<u64>,
    pub predicted: f64,
    /// The round that released it ([`RoundSeen::round`]).
    pub round: u64,
    /// Seconds since `serve` began.
    pub t: f64,
    /// Unix times, seconds, when cosched began the release and when
    /// Slurm had taken it (for the latency budget, beside Slurm's logs and
    /// the jobs' time stamps).
    pub decided: f64,
    pub unix: f64,
}

/// When `serve` first read that a job had ended (completing or gone).
#[derive(Debug, Clone, Serialize)]
pub struct Noticed {
    pub job: u64,
    /// Unix time, seconds, of the reading.
    pub unix: f64,
    /// The round was started by a hook, not by the poll.
    pub woken: bool,
}

/// What one round saw and did: the round log of `serve --json`, by which
/// "no job held for more than two rounds after it could start" is
/// checked in rounds, whatever a round's wall time.
#[derive(Debug, Clone, Serialize)]
pub struct RoundSeen {
    /// 1 for the first round that read the cluster.
    pub round: u64,
    /// Unix times, seconds, when the round began reading the cluster and
    /// when it had read it: Slurm's state was read between the two.
    pub unix: f64,
    pub read: f64,
    /// Jobs waiting for cosched, offered to the policy.
    pub waiting: usize,
    /// CPUs of the partition's usable nodes, and those held by running
    /// jobs and by jobs released and not started yet
    /// ([`cosched_slurm::Room`]).
    pub cores: u32,
    pub busy: u32,
    /// Jobs this round released.
    pub released: usize,
    /// Waiting jobs a free slot existed for (the site constraints
    /// admitting them, in queue order) that this round did not release:
    /// empty while the policy starts whatever fits and Slurm takes every
    /// release.
    pub passed: Vec<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ServeReport {
    pub rounds: u64,
    pub released: Vec<Released>,
    /// Jobs held again because their node went down or drained.
    pub reheld: Vec<u64>,
    /// Finished jobs recorded in the store.
    pub learned: usize,
    /// Rounds skipped because the controller did not answer.
    pub unreachable: u64,
    /// Releases and holds Slurm refused (the job ended or was cancelled
    /// between the reading and the command): the next round reads anew.
    pub refused: Vec<String>,
    /// What the policy decided with.
    pub source: String,
    /// Job ends as `serve` noticed them.
    pub noticed: Vec<Noticed>,
    /// Rounds started by a hook rather than the poll.
    pub woken: u64,
    /// Submissions heard from the submission rule (`hook --submitted`).
    pub submissions: u64,
    /// Jobs skipped or set aside, and policy decisions not carried out,
    /// each reason once (printable).
    pub skipped: Vec<String>,
    /// Readings of the queue that could not be parsed at all (the round was skipped).
    pub unreadable: u64,
    /// Times refused for learning, with why.
    pub rejected: Vec<String>,
    /// Suspensions, resumptions and parkings, in order.
    pub acted: Vec<Acted>,
    /// Wall time of each round that read the cluster, seconds (reading,
    /// deciding, acting, learning).
    pub round_s: Vec<f64>,
    /// Releases and holds decided but not carried out (`--dry-run`).
    pub planned: u64,
    /// Each round that read the cluster, in order.
    pub round_log: Vec<RoundSeen>,
}

/// The workload's view of Slurm jobs: which workload job each one is, its
/// program and solo time, and the fitted predictor.
pub(crate) struct Catalog {
    pub(crate) workload: Option<Workload>,
    pub(crate) solo: Vec<Option<f64>>,
    fitted: Option<(Box<dyn Predictor>, Vec<Characterization>)>,
    note: String,
}

impl Catalog {
    pub(crate) fn load(target: &SlurmTarget, store: &Store) -> anyhow::Result<Catalog> {
        let Some(path) = &target.workload else {
            return Ok(Catalog {
                workload: None,
                solo: Vec::new(),
                fitted: None,
                note: "no --workload: every predicted slowdown is 1, programs are comments or job names".into(),
            });
        };
        let w = load_workload(path)?;
        let cals = store.calibrations()?;
        let m = store.measurements(&w.name)?;
        let mut solo = Vec::new();
        for i in 0..w.jobs.len() {
            solo.push(solo_time(store, &m, &w, i, &cals)?.map(|s| s.0));
        }
        let mut predictor = build(&target.predictor)?;
        let (train, sources) = available_training_set(&m, &w)?;
        let fit = if train.pairs.is_empty() {
            Err("no measured pairs of the workload".to_string())
        } else {
            predictor.fit(&train).map_err(|e| e.to_string())
        };
        let (fitted, note) = match fit {
            Ok(()) => {
                let chars = w.jobs.iter().map(|j| train.programs[&j.name].clone()).collect();
                let note = format!(
                    "predictor {} fitted on {} ordered pairs of `{}`: {}",
                    target.predictor,
                    train.pairs.len(),
                    w.name,
                    sources.describe()
                );
                (Some((predictor, chars)), note)
            }
            Err(why) => (None, format!("predictor {} could not be fitted ({why}): every predicted slowdown is 1", target.predictor)),
        };
        Ok(Catalog { workload: Some(w), solo, fitted, note })
    }

    /// The workload job a Slurm job is: the batch script's `#COSCHED
    /// program=NAME` (read by the submission rule into the hold mark),
    /// else `--comment=cosched:NAME`, else its name.
    pub(crate) fn index_of(&self, program: Option<&str>, comment: &str, name: &str) -> Option<usize> {
        let w = self.workload.as_ref()?;
        let by = |n: &str| w.jobs.iter().position(|j| j.name == n);
        program.and_then(by).or_else(|| comment.strip_prefix(COMMENT_PREFIX).and_then(|n| by(n.trim()))).or_else(|| by(name))
    }

    pub(crate) fn identify(&self, j: &QueueJob, program: Option<&str>) -> Identity {
        let program = program.or(j.held_program());
        match self.index_of(program, &j.comment, &j.name) {
            Some(i) => {
                let w = self.workload.as_ref().expect("indexed");
                Identity { program: w.jobs[i].program_key(), solo: self.solo[i].unwrap_or(UNKNOWN_SOLO_S) }
            }
            None => {
                let program = match program {
                    Some(p) => p.to_string(),
                    None if j.comment.is_empty() => j.name.clone(),
                    None => j.comment.clone(),
                };
                Identity { program, solo: UNKNOWN_SOLO_S }
            }
        }
    }
}

/// The fitted predictor over one round's jobs: job k is workload job
/// `map[k]`. Jobs cosched cannot tie to the workload are predicted 1 beside
/// anything (score 0), as `cosched run` predicts without measurements.
pub(crate) struct RoundSource<'a> {
    pub(crate) catalog: &'a Catalog,
    pub(crate) map: Vec<Option<usize>>,
}

impl SlowdownSource for RoundSource<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        let (Some((p, chars)), Some(i)) = (&self.catalog.fitted, self.map[job]) else { return 1.0 };
        beside
            .iter()
            .filter(|&&b| b != job)
            .filter_map(|&b| self.map[b])
            .map(|k| p.predict_pair(&chars[i], &chars[k]).slowdown)
            .product()
    }

    fn score(&self, a: JobId, b: JobId) -> f64 {
        match (&self.catalog.fitted, self.map[a], self.map[b]) {
            (Some((p, chars)), Some(i), Some(k)) => p.score(&chars[i], &chars[k]),
            _ => 0.0,
        }
    }
}

pub(crate) fn unix_now() -> i64 {
    unix_f64() as i64
}

pub(crate) fn unix_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Serves until SIGINT / SIGTERM (exit 130 / 143) or `exit_idle`.
pub fn serve(req: &ServeRequest, ctx: &Ctx) -> anyhow::Result<ServeReport> {
    if !(req.interval.is_finite() && req.interval > 0.0) {
        return Err(bad_input(format!("--interval {}: expected a positive number of seconds", req.interval)));
    }
    if !(req.start_bound.is_finite() && req.start_bound >= 1.0) {
        return Err(bad_input(format!("--start-bound {}: expected seconds, at least 1", req.start_bound)));
    }
    let spec = resolve_spec(&req.policy).map_err(|e| bad_input(format!("--policy {}: {e}", req.policy)))?;
    if let Some(why) = refused_policy(spec.entry.name) {
        return Err(bad_input(format!(
            "--policy {}: the Slurm engine cannot carry out this policy's decisions: {why}; choose another (exclusive, noplan, conflict-aware, no-twins, best-match, surpass, timeshare:quantum=1, ...)",
            req.policy
        )));
    }
    if spec.entry.name == "timeshare" && spec.params.float("quantum") < MIN_TURN_S {
        return Err(bad_input(format!(
            "--policy {}: a timeshare quantum of {} s is shorter than the Slurm engine's turns (at least {MIN_TURN_S} s, as Slurm's own SchedulerTimeSlice); give timeshare:quantum=1 or more",
            req.policy,
            spec.params.float("quantum")
        )));
    }
    let scope = Scope::parse(&req.share_scope).map_err(|e| bad_input(format!("--share-scope {e}")))?;
    policy_from_spec(&req.policy).map_err(|e| bad_input(format!("--policy {}: {e}", req.policy)))?;
    let mut policy = PerNode { spec: req.policy.clone(), nodes: BTreeMap::new() };
    let target = &req.target;
    let key = Key::load_or_create(&target.key_path()).map_err(bad_input)?;
    let store = open_store(&db_path(target.db.as_deref()))?;
    let catalog = Catalog::load(target, &store)?;
    ctx.step(&catalog.note);
    let slurm = Slurm { conf: target.conf.clone() };
    // A wrong configuration stops serve at its start, within seconds and
    // naming what to check; once serving, a controller that stops
    // answering is waited for (the round is retried).
    slurm.check(CHECK_WITHIN).map_err(bad_input)?;
    // Jobs that ended while cosched was down are learned too (once each), a day back.
    let mut learning = Learning::new(store, &target.partition, &req.policy, unix_now() - 86_400)?;
    install_interrupt_handler();
    let report = ServeReport { source: catalog.note.clone(), ..ServeReport::default() };
    let env = Env { slurm, req, scope, catalog, began: Instant::now() };
    let serving = Serving { key, late: BTreeMap::new(), said: BTreeSet::new(), programs: BTreeMap::new() };
    let mut st = State { report, decisions: BTreeMap::new(), serving };
    let mut idle_since: Option<Instant> = None;
    let mut down_reported = false;
    let wake = match &req.hook {
        Some(name) => Some(Wake::bind(name).map_err(|e| {
            bad_input(format!("--hook {name}: cannot listen on it ({e}); is another `cosched slurm serve` using this name?"))
        })?),
        None => None,
    };
    // Hooks that woke this round, answered once it is done.
    let mut waiting = Vec::new();
    let mut ended: BTreeSet<u64> = BTreeSet::new();
    let mut first = true;
    let began = env.began;
    loop {
        if let Some(sig) = interrupted() {
            let notice = format!("stopped serving after {} rounds; held jobs stay held in Slurm until cosched serves again", st.report.rounds);
            return Err(stopped(sig, notice));
        }
        let read_at = unix_f64();
        let round_began = Instant::now();
        match round(&env, &mut policy, &mut st, ctx) {
            Ok((queue, active)) => {
                if down_reported {
                    ctx.step("the Slurm controller answers again");
                    down_reported = false;
                }
                for j in queue.iter().filter(|j| j.state.is_final() || j.state == JobState::Completing) {
                    // Jobs that ended before this serve began are not its to time.
                    if ended.insert(j.id) && !first && j.start.is_some() {
                        st.report.noticed.push(Noticed { job: j.id, unix: read_at, woken: !waiting.is_empty() });
                    }
                }
                // Answered now: Slurm's pass at the end of the woken
                // epilogs starts what this round released.
                if let Some(w) = &wake {
                    w.answer(&waiting);
                }
                waiting.clear();
                learning.learn(&env.slurm, &env.catalog, &queue, &mut st, ctx)?;
                first = false;
                st.report.round_s.push(round_began.elapsed().as_secs_f64());
                if req.rounds.is_some_and(|n| st.report.rounds >= n) {
                    return Ok(st.report);
                }
                idle_since = if active { None } else { Some(idle_since.unwrap_or_else(Instant::now)) };
                if let (Some(limit), Some(since)) = (req.exit_idle, idle_since) {
                    if since.elapsed().as_secs_f64() >= limit {
                        return Ok(st.report);
                    }
                }
            }
            Err(e) if e.transient() => {
                st.report.unreachable += 1;
                if let Some(w) = &wake {
                    w.answer(&waiting);
                }
                waiting.clear();
                if !down_reported {
                    ctx.step(&format!("the Slurm controller does not answer; retrying every {}s: {}", req.interval, printable(&e.to_string())));
                    down_reported = true;
                }
            }
            // Output no parser can read (a Slurm upgrade, a truncated
            // answer): this round is skipped and the next reads anew.
            Err(SlurmError::Parse(e)) => {
                st.report.unreadable += 1;
                ctx.step(&format!("round skipped: {}", printable(&e.to_string())));
            }
            Err(e) => return Err(e.into()),
        }
        // A policy's own time (a time-sharing turn) comes sooner than the
        // poll, never sooner than a turn's floor.
        let pause = match policy.wake_at() {
            Some(w) => req.interval.min((w - began.elapsed().as_secs_f64()).max(MIN_TURN_S)),
            None => req.interval,
        };
        match &wake {
            Some(w) => {
                waiting = w.wait(Duration::from_secs_f64(pause))?;
                st.report.woken += u64::from(!waiting.is_empty());
                st.report.submissions += waiting.iter().filter(|w| w.text.starts_with("submit ")).count() as u64;
            }
            None => std::thread::sleep(Duration::from_secs_f64(pause)),
        }
    }
}

/// What `serve` keeps between rounds.
struct Serving {
    key: Key,
    /// Jobs held again because Slurm did not start them in time: (times, not before).
    late: BTreeMap<u64, (u32, i64)>,
    /// Reasons already logged, so each is logged once.
    said: BTreeSet<String>,
    /// Programs the hold marks named (`#COSCHED program=NAME`), by job.
    programs: BTreeMap<u64, String>,
}

impl Serving {
    fn say(&mut self, ctx: &Ctx, report: &mut ServeReport, what: String) {
        let what = printable(&what).into_owned();
        if self.said.insert(what.clone()) {
            ctx.step(&what);
            report.skipped.push(what);
        }
    }
}

/// What a round reads and decides with, fixed while `serve` runs.
struct Env<'a> {
    slurm: Slurm,
    req: &'a ServeRequest,
    scope: Scope,
    catalog: Catalog,
    began: Instant,
}

/// What rounds change: the report, cosched's decisions by job, and what
/// `serve` remembers between rounds.
pub(crate) struct State {
    pub(crate) report: ServeReport,
    /// Each released job's co-runners and predicted slowdown.
    pub(crate) decisions: BTreeMap<u64, (Vec<u64>, f64)>,
    serving: Serving,
}

impl State {
    /// Programs the hold marks (or cosched's own marks) named, by job.
    pub(crate) fn programs(&self) -> &BTreeMap<u64, String> {
        &self.serving.programs
    }
}

/// One round: read, decide, release. Returns the queue it read and whether
/// cosched has anything to act on (jobs waiting for it, placed or released).
fn round(env: &Env, policy: &mut dyn NodePolicies, st: &mut State, ctx: &Ctx) -> Result<(Vec<QueueJob>, bool), SlurmError> {
    let Env { slurm, req, scope, catalog, began } = env;
    let (scope, began) = (*scope, *began);
    let State { report, decisions, serving } = st;
    let partition = &req.target.partition;
    let read_at = unix_f64();
    let (queue, skipped) = slurm.queue(partition)?;
    let nodes = slurm.nodes(partition)?;
    let read = unix_f64();
    report.rounds += 1;
    let n = report.rounds;
    for s in skipped {
        let job = s.job.map_or("a job".to_string(), |j| format!("job {j}"));
        serving.say(ctx, report, format!("{job} skipped: Slurm's record of it cannot be read: {}", s.why));
    }
    let now = unix_now();
    // Jobs Slurm did not start in time wait a bound that doubles each time (at most an hour).
    let deferred: BTreeSet<u64> = serving.late.iter().filter(|(_, (_, until))| *until > now).map(|(j, _)| *j).collect();
    let checks = Checks { key: Some(&serving.key), now, start_bound_s: req.start_bound as i64, deferred: &deferred, scope };
    // The hold mark names the program only while the job is held: kept
    // for its end, when `serve` learns from it.
    for q in &queue {
        if let Some(p) = q.held_program() {
            serving.programs.insert(q.id, p.to_string());
        } else if !serving.programs.contains_key(&q.id) && q.admin_comment.starts_with(cosched_slurm::parse::MARK) {
            // Released before this serve began: the program is in cosched's
            // own signed decision, trusted only if it verifies.
            let signed = Signed { id: q.id, submit: q.submit, cpus: q.cpus };
            if let Some(p) = Decision::verify(&serving.key, &signed, &q.admin_comment).ok().and_then(|d| d.program) {
                serving.programs.insert(q.id, p);
            }
        }
    }
    let programs = &serving.programs;
    let r = Round::new(&queue, &nodes, partition, &|j| catalog.identify(j, programs.get(&j.id).map(String::as_str)), &checks);
    let room = r.room();
    let mut seen = RoundSeen { round: n, unix: read_at, read, waiting: r.queue.len(), cores: room.cores, busy: room.busy, released: 0, passed: room.fits };
    for (job, why) in &r.aside {
        serving.say(ctx, report, format!("job {job} set aside: {why}"));
    }
    let map = queue_map(&r, &queue, catalog, &serving.programs);
    let source = RoundSource { catalog, map };
    let t = began.elapsed().as_secs_f64();
    let (actions, notes) = r.decide(policy, &source, t, now);
    for n in notes {
        serving.say(ctx, report, format!("policy {}: {n}", req.policy));
    }
    let active = !r.queue.is_empty() || r.nodes.iter().any(|n| !n.placed.is_empty()) || !actions.is_empty();
    if req.dry_run {
        report.planned += actions.len() as u64;
        report.round_log.push(seen);
        return Ok((queue, active));
    }
    // Starts placed (node and mark written, still held), released together.
    let mut placed: Vec<Released> = Vec::new();
    for a in actions {
        let decided = unix_f64();
        // cosched's signed decision on `job`, for its AdminComment.
        let note = |job: u64, node: &str, beside: &[u64], predicted: f64, step: Step| {
            let q = queue.iter().find(|q| q.id == job).expect("decided jobs are read");
            let program = serving.programs.get(&job).cloned();
            let d = Decision { policy: req.policy.clone(), node: node.to_string(), beside: beside.to_vec(), predicted, at: unix_now(), step, program, gres: q.site.gres.clone() };
            d.write(&serving.key, &Signed { id: q.id, submit: q.submit, cpus: q.cpus })
        };
        let done = match &a {
            // Placed now, released with the round's other starts below.
            Action::Release { job, node, beside, predicted } => slurm.place(*job, node, &note(*job, node, beside, *predicted, Step::Start)),
            Action::Suspend { job, node, beside } => slurm.suspend(*job, &note(*job, node, beside, 1.0, Step::Suspend)),
            Action::Resume { job, node, beside, predicted } => slurm.resume(*job, &note(*job, node, beside, *predicted, Step::Resume)),
            Action::Park { job, node, beside } => slurm.park(*job, &note(*job, node, beside, 1.0, Step::Park)),
            Action::Rehold { job, .. } => slurm.hold(*job, serving.programs.get(job).map(String::as_str)),
        };
        match (done, a) {
            (Err(e), _) if e.transient() => return Err(e),
            // The rest of this round's decisions assumed this one; decide
            // again from a fresh reading.
            (Err(e), _) => {
                let hint = if e.denied() { ": is the user serve runs as a Slurm operator, or SlurmUser? (docs/slurm.md, step 5)" } else { "" };
                serving.say(ctx, report, format!("Slurm refused {e}{hint}"));
                report.refused.push(e.to_string());
                break;
            }
            (Ok(()), Action::Release { job, node, beside, predicted }) => placed.push(Released { job, node, beside, predicted, round: n, t, decided, unix: 0.0 }),
            (Ok(()), Action::Suspend { job, node, .. }) => report.acted.push(Acted { job, act: "suspend".into(), node, t }),
            (Ok(()), Action::Resume { job, node, .. }) => report.acted.push(Acted { job, act: "resume".into(), node, t }),
            (Ok(()), Action::Park { job, node, .. }) => report.acted.push(Acted { job, act: "park".into(), node, t }),
            (Ok(()), Action::Rehold { job, why, late }) => {
                if late {
                    let e = serving.late.entry(job).or_insert((0, 0));
                    e.0 += 1;
                    e.1 = now + (req.start_bound as i64).saturating_mul(1 << e.0.min(12)).min(3600);
                }
                serving.say(ctx, report, format!("job {job} held again: {why}"));
                report.reheld.push(job);
            }
        }
    }
    // Also after a refusal: the starts placed before it stand.
    let ids: Vec<u64> = placed.iter().map(|p| p.job).collect();
    let released = slurm.release(&ids)?;
    let unix = unix_f64();
    for (p, (_, done)) in placed.into_iter().zip(released) {
        match done {
            Ok(()) => {
                decisions.insert(p.job, (p.beside.clone(), p.predicted));
                seen.passed.retain(|&j| j != p.job);
                seen.released += 1;
                report.released.push(Released { unix, ..p });
            }
            // Placed and still held: the next round holds it again and decides anew.
            Err(e) => {
                serving.say(ctx, report, format!("Slurm refused {e}"));
                report.refused.push(e.to_string());
            }
        }
    }
    report.round_log.push(seen);
    Ok((queue, active))
}

pub(crate) fn queue_map(r: &Round, queue: &[QueueJob], catalog: &Catalog, programs: &BTreeMap<u64, String>) -> Vec<Option<usize>> {
    r.jobs
        .iter()
        .map(|rj| {
            let q = queue.iter().find(|q| q.id == rj.slurm)?;
            let program = programs.get(&q.id).map(String::as_str).or(q.held_program());
            catalog.index_of(program, &q.comment, &q.name)
        })
        .collect()
}

/// `cosched slurm hook`: tells the serve listening on `name` that `job`
/// ended and waits at most `wait` seconds for its round ([`cosched_slurm::hook`]).
/// With `submitted`, says a job was submitted instead (the submission rule).
pub fn hook(name: &str, job: &str, wait: f64, submitted: bool) -> std::io::Result<cosched_slurm::Heard> {
    let wait = if wait.is_finite() && wait > 0.0 { Duration::from_secs_f64(wait.min(60.0)) } else { Duration::ZERO };
    let what = if submitted { "submit" } else { "end" };
    cosched_slurm::hook::send(name, &format!("{what} {job}"), wait)
}
