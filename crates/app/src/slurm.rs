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

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cosched_measure::launch::{install_interrupt_handler, interrupted};
use cosched_model::run::JobStatus;
use cosched_model::text::printable;
use cosched_model::workload::Workload;
use cosched_predict::{Characterization, Predictor};
use cosched_sched::registry::{policy_from_spec, resolve_spec};
use cosched_sched::{JobId, SlowdownSource};
use cosched_slurm::{
    refused_policy, AcctJob, Action, Checks, Decision, Identity, JobState, Key, NodePolicies, QueueJob, Round, Scope, Signed, Slurm, SlurmError, Step, Wake,
};
use cosched_store::{ExecRunId, RunJobEnd, RunJobStart, RunStatus, Store};
use serde::Serialize;

use crate::common::{db_path, load_workload, open_store, provenance, Ctx};
use crate::error::{bad_input, stopped};
use crate::source::solo_time;
use crate::training::{available_training_set, build};

/// Solo time assumed for a job cosched knows nothing about, seconds; it only
/// sets how far along policies think such a job is.
const UNKNOWN_SOLO_S: f64 = 60.0;

/// The prefix of a comment that ties a Slurm job to a workload job.
pub const COMMENT_PREFIX: &str = "cosched:";

/// A job's time below this fraction of its solo time is no run's: refused
/// for learning (a printed `wall_s` of 1e-6, a clock gone wrong).
pub const MIN_PLAUSIBLE_SLOWDOWN: f64 = 0.5;

/// How long `status` and `serve` wait for the controller's first answer
/// before saying what to check.
const CHECK_WITHIN: Duration = Duration::from_secs(4);

/// Jobs the controller forgot whose name and comment `serve` asks `sacct`
/// for, at most, per round (two `sacct` each).
const LOOKUPS_PER_ROUND: usize = 16;

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
    fn key_path(&self) -> PathBuf {
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
}

/// The workload's view of Slurm jobs: which workload job each one is, its
/// program and solo time, and the fitted predictor.
struct Catalog {
    workload: Option<Workload>,
    solo: Vec<Option<f64>>,
    fitted: Option<(Box<dyn Predictor>, Vec<Characterization>)>,
    note: String,
}

impl Catalog {
    fn load(target: &SlurmTarget, store: &Store) -> anyhow::Result<Catalog> {
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
    fn index_of(&self, program: Option<&str>, comment: &str, name: &str) -> Option<usize> {
        let w = self.workload.as_ref()?;
        let by = |n: &str| w.jobs.iter().position(|j| j.name == n);
        program.and_then(by).or_else(|| comment.strip_prefix(COMMENT_PREFIX).and_then(|n| by(n.trim()))).or_else(|| by(name))
    }

    fn identify(&self, j: &QueueJob, program: Option<&str>) -> Identity {
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
struct RoundSource<'a> {
    catalog: &'a Catalog,
    map: Vec<Option<usize>>,
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

fn unix_now() -> i64 {
    unix_f64() as i64
}

fn unix_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// `time` seconds as a run of a job whose wall time Slurm recorded as
/// `wall` and whose solo time is `solo`, or why no run takes that long.
fn plausible(time: f64, wall: Option<f64>, solo: Option<f64>) -> Result<f64, String> {
    if !(time.is_finite() && time > 0.0) {
        return Err(format!("{time} s is not a positive time"));
    }
    // Slurm's times are whole seconds.
    if let Some(w) = wall.filter(|w| time > w + 1.0) {
        return Err(format!("{time} s is longer than the job's {w} s in Slurm"));
    }
    if let Some(s) = solo.filter(|s| time < s * MIN_PLAUSIBLE_SLOWDOWN) {
        return Err(format!("{time} s is far below its solo time {s:.3} s (slowdown {:.3e} < {MIN_PLAUSIBLE_SLOWDOWN})", time / s));
    }
    Ok(time)
}

/// What the store learns from a finished Slurm job.
struct Learner {
    series: String,
    policy: String,
    /// Slurm job ids already recorded (the `pgid` column of slurm runs).
    seen: BTreeSet<u64>,
    runs: BTreeMap<String, ExecRunId>,
}

impl Learner {
    fn new(store: &Store, partition: &str, policy: &str) -> anyhow::Result<Learner> {
        let series = format!("slurm:{partition}:");
        let mut seen = BTreeSet::new();
        let mut runs = BTreeMap::new();
        for r in store.runs()?.into_iter().filter(|r| r.series.starts_with(&series)) {
            for j in store.run_jobs(r.id)? {
                seen.insert(j.start.pgid as u64);
            }
            if r.status == RunStatus::Running && r.policy == policy {
                if let Some(node) = r.params.get("node").and_then(|n| n.as_str()) {
                    runs.insert(format!("{}\u{0}{node}", r.workload), r.id);
                }
            }
        }
        Ok(Learner { series, policy: policy.to_string(), seen, runs })
    }

    /// Records a finished job tied to workload job `index`.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        store: &mut Store,
        ctx: &Ctx,
        w: &Workload,
        index: usize,
        solo: Option<f64>,
        job: &AcctJob,
        decision: Option<(Vec<u64>, f64)>,
        work_s: Option<f64>,
        rejected: &mut Vec<String>,
    ) -> anyhow::Result<bool> {
        if self.seen.contains(&job.id) {
            return Ok(false);
        }
        let (Some(start), Some(end), Some(node)) = (job.start, job.end, job.nodes.first()) else {
            // Never ran (cancelled while it waited): nothing to learn.
            self.seen.insert(job.id);
            return Ok(false);
        };
        let key = format!("{}\u{0}{node}", w.name);
        let run = match self.runs.get(&key) {
            Some(&r) => r,
            None => {
                let mut prov = provenance(ctx);
                // The run's clock starts at the first job it records, so no
                // recorded time is negative; later jobs start later.
                prov.started_unix = start.max(0) as u64;
                let partition = self.series.trim_start_matches("slurm:").trim_end_matches(':');
                let params = serde_json::json!({ "node": node, "partition": partition });
                // A series per node; a new run of it each time a policy starts serving it.
                let series = format!("{}{node}", self.series);
                let repeat = store.runs()?.iter().filter(|r| r.series == series && r.policy == self.policy).count() as u32;
                let r = store.begin_run(&series, &w.name, &self.policy, repeat, &params.to_string(), &prov)?;
                self.runs.insert(key, r);
                r
            }
        };
        let origin = store.run(run)?.map_or(start, |r| r.started_unix as i64);
        if start < origin {
            // Started before its node's run began (cosched was not serving):
            // its co-runners are not all in this run.
            self.seen.insert(job.id);
            return Ok(false);
        }
        let attempt = store.run_jobs(run)?.iter().filter(|j| j.start.job_index == index as u32).count() as u32;
        let (beside, predicted) = decision.unwrap_or((Vec::new(), 1.0));
        let status = match &job.state {
            JobState::Completed => JobStatus::Ok,
            JobState::Failed => JobStatus::Failed(job.exit.0.max(1)),
            JobState::Timeout => JobStatus::Timeout,
            JobState::OutOfMemory => JobStatus::Oom,
            _ if job.exit.1 > 0 => JobStatus::Signal(job.exit.1),
            _ => JobStatus::Killed,
        };
        let wall = (end - start) as f64;
        let time = work_s.unwrap_or(wall);
        let slowdown = match solo.filter(|_| status.is_ok()).map(|s| plausible(time, Some(wall), Some(s)).map(|t| t / s)) {
            Some(Ok(x)) => Some(x),
            Some(Err(why)) => {
                rejected.push(format!("job {}: slowdown not stored: {why}", job.id));
                None
            }
            None => None,
        };
        store.run_job_started(
            run,
            &RunJobStart {
                job: w.jobs[index].name.clone(),
                job_index: index as u32,
                attempt,
                arrival_s: (start - origin) as f64,
                start_s: (start - origin) as f64,
                cpus: Vec::new(),
                mems: Vec::new(),
                // The Slurm job id: what identifies (and cancels) the job.
                pgid: job.id as i32,
                beside: beside.iter().map(u64::to_string).collect(),
                predicted: if predicted > 0.0 { predicted } else { 1.0 },
                solo_s: solo,
            },
        )?;
        store.run_job_ended(run, index as u32, attempt, &RunJobEnd { end_s: (end - origin) as f64, status, work_s, slowdown })?;
        self.seen.insert(job.id);
        Ok(true)
    }
}

/// How `serve` reads finished jobs.
struct Accounting {
    /// `sacct` answers (its database, or its completion log).
    sacct: bool,
    /// Only the completion log (`sacct --completion`) has them.
    completion: bool,
}

/// Finished jobs to learn from: those the controller still knows, from its
/// own record (the reading), then those only `sacct` has (an id it lists
/// twice is left out: which record is the job's cannot be told).
fn finished_jobs(slurm: &Slurm, partition: &str, queue: &[QueueJob], since: i64, acct: &mut Accounting) -> Vec<AcctJob> {
    let mut out: Vec<AcctJob> = queue
        .iter()
        .filter(|j| j.state.is_final())
        .map(|j| AcctJob {
            id: j.id,
            partition: j.partition.clone(),
            state: j.state.clone(),
            start: j.start,
            end: j.end,
            nodes: j.nodes.clone(),
            cpus: j.cpus,
            // A wait status: exit code above, signal below.
            exit: (((j.exit_code >> 8) & 0xff) as i32, (j.exit_code & 0x7f) as i32),
            user_id: j.user_id,
        })
        .collect();
    if acct.sacct {
        match slurm.finished(partition, since, &mut acct.completion) {
            Ok(jobs) => {
                let mut count: BTreeMap<u64, usize> = BTreeMap::new();
                for j in &jobs {
                    *count.entry(j.id).or_default() += 1;
                }
                out.extend(jobs.into_iter().filter(|j| count[&j.id] == 1 && !queue.iter().any(|q| q.id == j.id)));
            }
            Err(_) => acct.sacct = false,
        }
    }
    out
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
    let mut store = open_store(&db_path(target.db.as_deref()))?;
    let catalog = Catalog::load(target, &store)?;
    ctx.step(&catalog.note);
    let slurm = Slurm { conf: target.conf.clone() };
    // A wrong configuration stops serve at its start, within seconds and
    // naming what to check; once serving, a controller that stops
    // answering is waited for (the round is retried).
    slurm.check(CHECK_WITHIN).map_err(bad_input)?;
    let mut learner = Learner::new(&store, &target.partition, &req.policy)?;
    install_interrupt_handler();
    let mut report = ServeReport { source: catalog.note.clone(), ..ServeReport::default() };
    let began = Instant::now();
    let began_unix = unix_now();
    let mut idle_since: Option<Instant> = None;
    let mut acct = Accounting { sacct: true, completion: false };
    let mut decisions: BTreeMap<u64, (Vec<u64>, f64)> = BTreeMap::new();
    let mut serving = Serving { key, late: BTreeMap::new(), said: BTreeSet::new(), rejected_said: 0, programs: BTreeMap::new() };
    let mut looked_up: BTreeSet<u64> = BTreeSet::new();
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
    loop {
        if let Some(sig) = interrupted() {
            let notice = format!("stopped serving after {} rounds; held jobs stay held in Slurm until cosched serves again", report.rounds);
            return Err(stopped(sig, notice));
        }
        let read_at = unix_f64();
        let round_began = Instant::now();
        match round(&slurm, req, scope, &catalog, &mut policy, began, &mut report, &mut decisions, &mut serving, ctx) {
            Ok((queue, active)) => {
                if down_reported {
                    ctx.step("the Slurm controller answers again");
                    down_reported = false;
                }
                for j in queue.iter().filter(|j| j.state.is_final() || j.state == JobState::Completing) {
                    // Jobs that ended before this serve began are not its to time.
                    if ended.insert(j.id) && !first && j.start.is_some() {
                        report.noticed.push(Noticed { job: j.id, unix: read_at, woken: !waiting.is_empty() });
                    }
                }
                // Answered now: Slurm's pass at the end of the woken
                // epilogs starts what this round released.
                if let Some(w) = &wake {
                    w.answer(&waiting);
                }
                waiting.clear();
                // Accounting is read only when a job ended that is not
                // learned yet, and at the first round, a day back, so jobs
                // that ended while cosched was down are learned too (once
                // each): each read spawns `sacct`, which a busy node pays.
                let unlearned = |j: &QueueJob| j.state.is_final() && !learner.seen.contains(&j.id);
                if let (Some(w), true) = (&catalog.workload, first || queue.iter().any(unlearned)) {
                    let since = began_unix - 86_400;
                    let mut lookups = 0;
                    for job in finished_jobs(&slurm, &target.partition, &queue, since, &mut acct) {
                        if learner.seen.contains(&job.id) || job.partition != target.partition {
                            continue;
                        }
                        let known = queue.iter().find(|q| q.id == job.id);
                        let (comment, name, admin) = match known {
                            Some(q) => (q.comment.clone(), q.name.clone(), q.admin_comment.clone()),
                            None if lookups < LOOKUPS_PER_ROUND && looked_up.insert(job.id) => {
                                lookups += 1;
                                let text = |f: &str| slurm.acct_text(job.id, f, since, acct.completion).unwrap_or_default();
                                (text("Comment"), text("JobName"), String::new())
                            }
                            None => continue,
                        };
                        let program = serving.programs.get(&job.id).map(String::as_str);
                        let Some(index) = catalog.index_of(program, &comment, &name) else { continue };
                        let wall = job.start.zip(job.end).map(|(s, e)| (e - s) as f64);
                        // Only a time there is a solo reference to check against is read.
                        let work_s = known.filter(|_| catalog.solo[index].is_some()).and_then(|q| match cosched_slurm::output::read_output(q) {
                            Ok(text) => match cosched_slurm::output::kernel_work_s(&text).map(|t| plausible(t, wall, catalog.solo[index])) {
                                Some(Ok(t)) => Some(t),
                                Some(Err(why)) => {
                                    report.rejected.push(format!("job {}: printed time refused, Slurm's used: {why}", job.id));
                                    None
                                }
                                None => None,
                            },
                            // Not a kernel's file to read: Slurm's times are enough.
                            Err(_) => None,
                        });
                        let decision = decisions
                            .get(&job.id)
                            .cloned()
                            .or_else(|| Decision::read_unverified(&admin).ok().map(|d| (d.beside, d.predicted)));
                        let mut rejected = Vec::new();
                        if learner.record(&mut store, ctx, w, index, catalog.solo[index], &job, decision, work_s, &mut rejected)? {
                            report.learned += 1;
                        }
                        report.rejected.extend(rejected);
                    }
                    for r in &report.rejected[serving.rejected_said..] {
                        ctx.step(&printable(r));
                    }
                    serving.rejected_said = report.rejected.len();
                }
                first = false;
                report.round_s.push(round_began.elapsed().as_secs_f64());
                if req.rounds.is_some_and(|n| report.rounds >= n) {
                    return Ok(report);
                }
                idle_since = if active { None } else { Some(idle_since.unwrap_or_else(Instant::now)) };
                if let (Some(limit), Some(since)) = (req.exit_idle, idle_since) {
                    if since.elapsed().as_secs_f64() >= limit {
                        return Ok(report);
                    }
                }
            }
            Err(e) if e.transient() => {
                report.unreachable += 1;
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
                report.unreadable += 1;
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
                report.woken += u64::from(!waiting.is_empty());
                report.submissions += waiting.iter().filter(|w| w.text.starts_with("submit ")).count() as u64;
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
    rejected_said: usize,
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

/// One round: read, decide, release. Returns the queue it read and whether
/// cosched has anything to act on (jobs waiting for it, placed or released).
#[allow(clippy::too_many_arguments)]
fn round(
    slurm: &Slurm,
    req: &ServeRequest,
    scope: Scope,
    catalog: &Catalog,
    policy: &mut dyn NodePolicies,
    began: Instant,
    report: &mut ServeReport,
    decisions: &mut BTreeMap<u64, (Vec<u64>, f64)>,
    serving: &mut Serving,
    ctx: &Ctx,
) -> Result<(Vec<QueueJob>, bool), SlurmError> {
    let partition = &req.target.partition;
    let (queue, skipped) = slurm.queue(partition)?;
    let nodes = slurm.nodes(partition)?;
    report.rounds += 1;
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
        }
    }
    let programs = &serving.programs;
    let r = Round::new(&queue, &nodes, partition, &|j| catalog.identify(j, programs.get(&j.id).map(String::as_str)), &checks);
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
        return Ok((queue, active));
    }
    for a in actions {
        let decided = unix_f64();
        // cosched's signed decision on `job`, for its AdminComment.
        let note = |job: u64, node: &str, beside: &[u64], predicted: f64, step: Step| {
            let q = queue.iter().find(|q| q.id == job).expect("decided jobs are read");
            let d = Decision { policy: req.policy.clone(), node: node.to_string(), beside: beside.to_vec(), predicted, at: unix_now(), step };
            d.write(&serving.key, &Signed { id: q.id, submit: q.submit, cpus: q.cpus })
        };
        let done = match &a {
            Action::Release { job, node, beside, predicted } => slurm.release_on(*job, node, &note(*job, node, beside, *predicted, Step::Start)),
            Action::Suspend { job, node, beside } => slurm.suspend(*job, &note(*job, node, beside, 1.0, Step::Suspend)),
            Action::Resume { job, node, beside, predicted } => slurm.resume(*job, &note(*job, node, beside, *predicted, Step::Resume)),
            Action::Park { job, node, beside } => slurm.park(*job, &note(*job, node, beside, 1.0, Step::Park)),
            Action::Rehold { job, .. } => slurm.hold(*job),
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
            (Ok(()), Action::Release { job, node, beside, predicted }) => {
                decisions.insert(job, (beside.clone(), predicted));
                report.released.push(Released { job, node, beside, predicted, t, decided, unix: unix_f64() });
            }
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
    Ok((queue, active))
}

fn queue_map(r: &Round, queue: &[QueueJob], catalog: &Catalog, programs: &BTreeMap<u64, String>) -> Vec<Option<usize>> {
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

#[derive(Debug, Clone)]
pub struct SubmitRequest {
    pub target: SlurmTarget,
    /// Where the batch scripts and the jobs' output go.
    pub dir: PathBuf,
    /// Submit each job at its arrival time (seconds after the first); else all at once.
    pub arrivals: bool,
}

/// One job submitted with `sbatch`.
#[derive(Debug, Clone, Serialize)]
pub struct Submitted {
    pub name: String,
    pub job: u64,
    /// Seconds after the first submission.
    pub at: f64,
    /// Unix time, seconds, when `sbatch` returned.
    pub unix: f64,
    pub script: PathBuf,
}

/// The batch script of a workload job: its command between two time stamps
/// (`cosched-start` / `cosched-end`, Unix seconds with nanoseconds), so a
/// makespan through Slurm is measured from inside the jobs, not from
/// Slurm's whole-second accounting.
pub fn batch_script(argv: &[String]) -> String {
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
    format!(
        "#!/bin/sh\n# Written by cosched slurm submit.\necho \"cosched-start $(date +%s.%N)\"\n{}\nrc=$?\necho \"cosched-end $(date +%s.%N)\"\nexit $rc\n",
        quoted.join(" ")
    )
}

/// Submits every job of the workload with `sbatch` to the partition, tied
/// to its workload job by `--comment=cosched:NAME`: kernels with their work
/// resolved from the store's calibrations, as `cosched run` runs them.
pub fn submit(req: &SubmitRequest, ctx: &Ctx) -> anyhow::Result<Vec<Submitted>> {
    let target = &req.target;
    let Some(path) = &target.workload else { return Err(bad_input("--workload FILE is required")) };
    let w = load_workload(path)?;
    let store = open_store(&db_path(target.db.as_deref()))?;
    let cals = store.calibrations()?;
    std::fs::create_dir_all(&req.dir).map_err(|e| bad_input(format!("{}: {e}", req.dir.display())))?;
    let mut scripts = Vec::new();
    for job in &w.jobs {
        let argv = cosched_measure::kernel::job_argv(job, &cals).map_err(|e| {
            bad_input(format!("{}: job `{}`: {e} (run `cosched calibrate --workload {}` first)", path.display(), job.name, path.display()))
        })?;
        let script = req.dir.join(format!("{}.sh", job.name));
        std::fs::write(&script, batch_script(&argv))?;
        scripts.push(script);
    }
    let slurm = Slurm { conf: target.conf.clone() };
    let mut order: Vec<usize> = (0..w.jobs.len()).collect();
    order.sort_by(|&a, &b| w.jobs[a].arrival.total_cmp(&w.jobs[b].arrival));
    let began = Instant::now();
    let mut out = Vec::new();
    for i in order {
        let job = &w.jobs[i];
        if req.arrivals {
            let wait = job.arrival - began.elapsed().as_secs_f64();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
        }
        let args = vec![
            format!("--partition={}", target.partition),
            format!("--job-name={}", job.name),
            format!("--comment={COMMENT_PREFIX}{}", job.name),
            "--ntasks=1".to_string(),
            format!("--cpus-per-task={}", job.cores),
            format!("--output={}", req.dir.join(format!("{}-%j.out", job.name)).display()),
        ];
        let id = slurm.sbatch(&args, &scripts[i])?;
        ctx.step(&format!("submitted {} as job {id}", job.name));
        out.push(Submitted { name: job.name.clone(), job: id, at: began.elapsed().as_secs_f64(), unix: unix_f64(), script: scripts[i].clone() });
    }
    Ok(out)
}

/// A job as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobRow {
    pub id: u64,
    pub name: String,
    pub program: String,
    pub state: String,
    pub reason: String,
    pub node: String,
    /// cosched's decision as Slurm holds it (the AdminComment), or why it waits.
    pub decision: String,
}

/// Two jobs sharing a node, with each one's predicted slowdown beside the other.
#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub node: String,
    pub a: u64,
    pub b: u64,
    pub slowdown_a: f64,
    pub slowdown_b: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    pub name: String,
    pub state: String,
    pub cpus: u32,
    pub usable: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub partition: String,
    pub nodes: Vec<NodeRow>,
    pub jobs: Vec<JobRow>,
    pub pairs: Vec<PairRow>,
    pub source: String,
}

/// Pending and running jobs of the partition with cosched's decisions and
/// the predicted slowdown of every pair sharing a node.
pub fn status(target: &SlurmTarget) -> anyhow::Result<StatusReport> {
    let store = open_store(&db_path(target.db.as_deref()))?;
    let catalog = Catalog::load(target, &store)?;
    let slurm = Slurm { conf: target.conf.clone() };
    slurm.check(CHECK_WITHIN).map_err(bad_input)?;
    let (queue, _) = slurm.queue(&target.partition)?;
    let nodes = slurm.nodes(&target.partition)?;
    // The key, if this user may read it: marks are then checked as serve checks them.
    let path = target.key_path();
    let key = path.exists().then(|| Key::load_or_create(&path).ok()).flatten();
    let deferred = BTreeSet::new();
    let checks = Checks { key: key.as_ref(), now: unix_now(), start_bound_s: i64::MAX, deferred: &deferred, scope: Scope::Any };
    let r = Round::new(&queue, &nodes, &target.partition, &|j| catalog.identify(j, None), &checks);
    let map = queue_map(&r, &queue, &catalog, &BTreeMap::new());
    let source = RoundSource { catalog: &catalog, map };
    let mut jobs = Vec::new();
    for q in queue.iter().filter(|q| !q.state.is_final()) {
        let decision = if q.held_for_cosched() {
            "held: waiting for cosched".to_string()
        } else if q.admin_comment.starts_with(cosched_slurm::parse::MARK) {
            let signed = Signed { id: q.id, submit: q.submit, cpus: q.cpus };
            let d = match &key {
                Some(k) => Decision::verify(k, &signed, &q.admin_comment).map(|_| "verified"),
                None => Decision::read_unverified(&q.admin_comment).map(|_| "not checked: no key"),
            };
            match d {
                Ok(how) => format!("{} ({how})", q.admin_comment.split(";sig=").next().unwrap_or("").trim_start_matches("cosched;").replace(';', " ")),
                Err(why) => format!("not cosched's decision: {why}"),
            }
        } else {
            "not decided by cosched".to_string()
        };
        jobs.push(JobRow {
            id: q.id,
            name: q.name.clone(),
            program: catalog.identify(q, None).program,
            state: q.state.to_string(),
            reason: q.reason.clone(),
            node: if q.nodes.is_empty() { q.requested.join(",") } else { q.nodes.join(",") },
            decision,
        });
    }
    let mut pairs = Vec::new();
    for n in &r.nodes {
        for (x, &a) in n.placed.iter().enumerate() {
            for &b in &n.placed[x + 1..] {
                pairs.push(PairRow {
                    node: n.name.clone(),
                    a: r.jobs[a].slurm,
                    b: r.jobs[b].slurm,
                    slowdown_a: source.slowdown(a, &[b]),
                    slowdown_b: source.slowdown(b, &[a]),
                });
            }
        }
    }
    let nodes = nodes
        .iter()
        .filter(|n| n.partition == target.partition)
        .map(|n| NodeRow { name: n.name.clone(), state: n.state.clone(), cpus: n.cpus, usable: n.usable() })
        .collect();
    Ok(StatusReport { partition: target.partition.clone(), nodes, jobs, pairs, source: catalog.note.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_no_run_could_take_is_refused_with_the_reason() {
        assert_eq!(plausible(2.5, Some(3.0), Some(2.0)), Ok(2.5));
        // Issue 36: a printed `{"wall_s": 0.000001}` was stored as a slowdown of 4.95e-7.
        let e = plausible(0.000001, Some(3.0), Some(2.02)).unwrap_err();
        assert!(e.contains("far below its solo time"), "{e}");
        assert!(plausible(0.0, None, None).unwrap_err().contains("not a positive time"));
        assert!(plausible(f64::NAN, None, None).is_err());
        assert!(plausible(9.0, Some(3.0), None).unwrap_err().contains("longer than the job's 3 s"));
        // Whole-second accounting: a 3.4 s run may read as 3 s.
        assert_eq!(plausible(3.4, Some(3.0), None), Ok(3.4));
    }
}
