//! What `slurm serve` learns from each finished job: the job's time from
//! Slurm's record (and, when it is safe to read, the kernel's own
//! work-phase time from its output), checked against what any run could
//! take, as a `run_jobs` row of its node's run (series
//! `slurm:PARTITION:NODE`), so `measured` and `learned` fit on cluster
//! history and `slurm report` reads it back.

use std::collections::{BTreeMap, BTreeSet};

use cosched_model::run::JobStatus;
use cosched_model::text::printable;
use cosched_model::workload::Workload;
use cosched_slurm::{AcctJob, Decision, JobState, QueueJob, Slurm};
use cosched_store::{ExecRunId, RunJobEnd, RunJobStart, RunStatus, Store};

use super::{Catalog, State};
use crate::common::{provenance, Ctx};

/// A job's time below this fraction of its solo time is no run's: refused
/// for learning (a printed `wall_s` of 1e-6, a clock gone wrong).
pub const MIN_PLAUSIBLE_SLOWDOWN: f64 = 0.5;

/// Jobs the controller forgot whose name and comment `serve` asks `sacct`
/// for, at most, per round (two `sacct` each).
const LOOKUPS_PER_ROUND: usize = 16;

/// `time` seconds as a run of a job whose wall time Slurm recorded as
/// `wall` and whose solo time is `solo`, or why no run takes that long.
pub(crate) fn plausible(time: f64, wall: Option<f64>, solo: Option<f64>) -> Result<f64, String> {
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

/// A finished job tied to workload job `index`, as the store records it.
struct Finished<'a> {
    index: usize,
    solo: Option<f64>,
    job: &'a AcctJob,
    /// cosched's co-runners and predicted slowdown for it, if it released it.
    decision: Option<(Vec<u64>, f64)>,
    /// The kernel's own work-phase time, when read.
    work_s: Option<f64>,
}

/// What the store learns from a finished Slurm job.
pub(crate) struct Learner {
    series: String,
    policy: String,
    /// Slurm job ids already recorded (the `pgid` column of slurm runs).
    pub(crate) seen: BTreeSet<u64>,
    runs: BTreeMap<String, ExecRunId>,
}

impl Learner {
    pub(crate) fn new(store: &Store, partition: &str, policy: &str) -> anyhow::Result<Learner> {
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

    /// The partition whose jobs it learns from.
    fn partition(&self) -> &str {
        self.series.trim_start_matches("slurm:").trim_end_matches(':')
    }

    /// Records a finished job; refused times are added to `rejected`.
    fn record(&mut self, store: &mut Store, ctx: &Ctx, w: &Workload, f: Finished, rejected: &mut Vec<String>) -> anyhow::Result<bool> {
        let Finished { index, solo, job, decision, work_s } = f;
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
                #[derive(serde::Serialize)]
                struct SeriesParams<'a> {
                    node: &'a str,
                    partition: &'a str,
                }
                let params = serde_json::to_string(&SeriesParams { node, partition })?;
                // A series per node; a new run of it each time a policy starts serving it.
                let series = format!("{}{node}", self.series);
                let repeat = store.runs()?.iter().filter(|r| r.series == series && r.policy == self.policy).count() as u32;
                let r = store.begin_run(&series, &w.name, &self.policy, repeat, &params, &prov)?;
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
pub(crate) struct Accounting {
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

/// What `serve` keeps to learn from finished jobs.
pub(crate) struct Learning {
    store: Store,
    learner: Learner,
    acct: Accounting,
    /// Jobs the controller forgot whose name and comment sacct was asked for.
    looked_up: BTreeSet<u64>,
    /// Accounting is read from this Unix time on.
    since: i64,
    /// Whether no round has learned yet: the first reads accounting whatever the queue says.
    first: bool,
    /// Refused times already logged.
    rejected_said: usize,
}

impl Learning {
    pub(crate) fn new(store: Store, partition: &str, policy: &str, since: i64) -> anyhow::Result<Learning> {
        let learner = Learner::new(&store, partition, policy)?;
        Ok(Learning {
            store,
            learner,
            acct: Accounting { sacct: true, completion: false },
            looked_up: BTreeSet::new(),
            since,
            first: true,
            rejected_said: 0,
        })
    }

    /// Learns from the jobs that ended and are not learned yet. Accounting
    /// is read only when a job of `queue` ended that is not learned yet,
    /// and at the first round, so jobs that ended while cosched was down
    /// are learned too (once each): each read spawns `sacct`, which a busy
    /// node pays.
    pub(crate) fn learn(&mut self, slurm: &Slurm, catalog: &Catalog, queue: &[QueueJob], st: &mut State, ctx: &Ctx) -> anyhow::Result<()> {
        let first = std::mem::replace(&mut self.first, false);
        let unlearned = |j: &QueueJob| j.state.is_final() && !self.learner.seen.contains(&j.id);
        let Some(w) = &catalog.workload else { return Ok(()) };
        if !(first || queue.iter().any(unlearned)) {
            return Ok(());
        }
        let partition = self.learner.partition().to_string();
        let since = self.since;
        let mut lookups = 0;
        for job in finished_jobs(slurm, &partition, queue, since, &mut self.acct) {
            if self.learner.seen.contains(&job.id) || job.partition != partition {
                continue;
            }
            let known = queue.iter().find(|q| q.id == job.id);
            let (comment, name, admin) = match known {
                Some(q) => (q.comment.clone(), q.name.clone(), q.admin_comment.clone()),
                None if lookups < LOOKUPS_PER_ROUND && self.looked_up.insert(job.id) => {
                    lookups += 1;
                    let text = |f: &str| slurm.acct_text(job.id, f, since, self.acct.completion).unwrap_or_default();
                    (text("Comment"), text("JobName"), String::new())
                }
                None => continue,
            };
            let program = st.programs().get(&job.id).map(String::as_str);
            let Some(index) = catalog.index_of(program, &comment, &name) else { continue };
            let wall = job.start.zip(job.end).map(|(s, e)| (e - s) as f64);
            // Only a time there is a solo reference to check against is read.
            let work_s = known.filter(|_| catalog.solo[index].is_some()).and_then(|q| match cosched_slurm::output::read_output(q) {
                Ok(text) => match cosched_slurm::output::kernel_work_s(&text).map(|t| plausible(t, wall, catalog.solo[index])) {
                    Some(Ok(t)) => Some(t),
                    Some(Err(why)) => {
                        st.report.rejected.push(format!("job {}: printed time refused, Slurm's used: {why}", job.id));
                        None
                    }
                    None => None,
                },
                // Not a kernel's file to read: Slurm's times are enough.
                Err(_) => None,
            });
            let decision = st.decisions.get(&job.id).cloned().or_else(|| Decision::read_unverified(&admin).ok().map(|d| (d.beside, d.predicted)));
            let mut rejected = Vec::new();
            let f = Finished { index, solo: catalog.solo[index], job: &job, decision, work_s };
            if self.learner.record(&mut self.store, ctx, w, f, &mut rejected)? {
                st.report.learned += 1;
            }
            st.report.rejected.extend(rejected);
        }
        for r in &st.report.rejected[self.rejected_said..] {
            ctx.step(&printable(r));
        }
        self.rejected_said = st.report.rejected.len();
        Ok(())
    }
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
