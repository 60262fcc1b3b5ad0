//! `cosched runs`: past real runs with their key figures, one line each
//! (as Slurm's `sacct` lists jobs), and one run in full with `runs show ID`.

use std::path::PathBuf;

use cosched_model::run::JobStatus;
use cosched_store::{format_unix_utc, ExecRunId, RunJobRecord, RunRecord};
use serde::Serialize;

use crate::common::{db_path, open_read_only_store};
use crate::error::bad_input;
use crate::render::{ratio, secs, Doc, Render};

#[derive(Debug, Clone, Default)]
pub struct RunsRequest {
    pub db: Option<PathBuf>,
    /// Only runs of this workload.
    pub workload: Option<String>,
    /// Only the newest N runs (0: all).
    pub last: usize,
    /// Leave out the solo passes that precede repeats.
    pub no_passes: bool,
}

/// One run as `cosched runs` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub series: String,
    pub workload: String,
    pub policy: String,
    /// 0-based, as stored (the text shows it 1-based, as `cosched run` does).
    pub repeat: u32,
    pub status: String,
    /// UTC, `YYYY-MM-DD HH:MM:SS`.
    pub started: String,
    pub jobs: usize,
    /// Jobs whose final attempt did not end `ok`, as `name: status`.
    pub not_ok: Vec<String>,
    /// Last end minus first arrival, seconds; `None` until every job ended.
    pub makespan_s: Option<f64>,
    pub mean_turnaround_s: Option<f64>,
    pub worst_slowdown: Option<f64>,
    /// Under `exclusive` every job runs alone and should take its solo
    /// time: the jobs that took outside [`ALONE_BAND`] of it, as `name at
    /// slowdown`. Any means the solo reference is suspect (a busy node at
    /// the solo pass or during the run); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub solo_reference_suspect: Vec<String>,
}

/// How far a job running alone may stray from its solo time before its
/// solo reference is suspect (issue 40).
pub const ALONE_BAND: (f64, f64) = (0.9, 1.1);

/// The suspect-solo-reference lines of runs, for the text under a table.
fn suspect_lines(runs: &[RunRow]) -> Vec<String> {
    runs.iter()
        .filter(|r| !r.solo_reference_suspect.is_empty())
        .map(|r| {
            format!(
                "run {} ({}): solo reference suspect: alone, {} of the solo time (expected {}-{}); measure the solo pass again on a quiet node",
                r.id,
                r.policy,
                r.solo_reference_suspect.join(", "),
                ALONE_BAND.0,
                ALONE_BAND.1
            )
        })
        .collect()
}

/// One job of `runs show`: its final attempt.
#[derive(Debug, Clone, Serialize)]
pub struct JobRow {
    pub job: String,
    pub attempts: u32,
    pub cpus: Vec<u32>,
    pub arrival_s: f64,
    pub start_s: f64,
    pub end_s: Option<f64>,
    pub status: String,
    pub predicted: f64,
    pub slowdown: Option<f64>,
    pub beside: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunShow {
    pub run: RunRow,
    pub jobs: Vec<JobRow>,
    /// The command line and machine that made it.
    pub command: String,
    pub host: String,
    pub git_commit: String,
}

/// `cosched runs`: the runs listed; `--json` is the array of rows.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct RunList {
    pub runs: Vec<RunRow>,
}

const HEAD: [&str; 10] =
    ["run", "started (UTC)", "workload", "policy", "repeat", "status", "jobs", "makespan s", "mean TAT s", "worst slowdown"];

fn line(r: &RunRow) -> Vec<String> {
    let not_ok = if r.not_ok.is_empty() { "all ok".to_string() } else { r.not_ok.join("; ") };
    vec![
        r.id.to_string(),
        r.started.clone(),
        r.workload.clone(),
        r.policy.clone(),
        // 1-based, as `cosched run` counts repeats (the store's is 0-based).
        (r.repeat + 1).to_string(),
        r.status.clone(),
        format!("{} ({not_ok})", r.jobs),
        secs(r.makespan_s),
        secs(r.mean_turnaround_s),
        ratio(r.worst_slowdown),
    ]
}

impl Render for RunList {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        if self.runs.is_empty() {
            d.line("no runs in the database yet (`cosched run --workload FILE` makes one)");
        } else {
            d.table(&HEAD, self.runs.iter().map(line).collect());
            for l in suspect_lines(&self.runs) {
                d.line(l);
            }
        }
        d
    }
}

impl Render for RunShow {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        d.table(&HEAD, vec![line(&self.run)]);
        for l in suspect_lines(std::slice::from_ref(&self.run)) {
            d.line(l);
        }
        d.line(format!("series {}, on {}, commit {}: {}\n", self.run.series, self.host, self.git_commit, self.command));
        let rows = self
            .jobs
            .iter()
            .map(|j| {
                vec![
                    j.job.clone(),
                    cosched_model::topology::format_cpulist(&j.cpus),
                    format!("{:.2}", j.arrival_s),
                    format!("{:.2}", j.start_s),
                    secs(j.end_s),
                    j.status.clone(),
                    j.attempts.max(1).to_string(),
                    format!("{:.3}", j.predicted),
                    ratio(j.slowdown),
                    if j.beside.is_empty() { "-".into() } else { j.beside.join(", ") },
                ]
            })
            .collect();
        let head = ["job", "CPUs", "arrival s", "start s", "end s", "status", "attempts", "predicted", "slowdown", "beside at start"];
        d.table(&head, rows);
        d
    }
}

/// The final attempt of each job with its number of attempts.
fn final_attempts(jobs: Vec<RunJobRecord>) -> Vec<(u32, RunJobRecord)> {
    let n = jobs.iter().map(|j| j.start.job_index as usize + 1).max().unwrap_or(0);
    let attempts = |i: u32| jobs.iter().filter(|j| j.start.job_index == i).count() as u32;
    crate::run::final_attempts(&jobs, n).into_iter().map(|j| (attempts(j.start.job_index), j.clone())).collect()
}

fn row(r: &RunRecord, jobs: &[(u32, RunJobRecord)]) -> RunRow {
    let not_ok = jobs
        .iter()
        .filter_map(|(_, j)| match &j.end {
            Some(e) if e.status == JobStatus::Ok => None,
            Some(e) => Some(format!("{}: {}", j.start.job, e.status)),
            None => Some(format!("{}: did not end", j.start.job)),
        })
        .collect();
    let all_ended = !jobs.is_empty() && jobs.iter().all(|(_, j)| j.end.is_some());
    let (mut first, mut last, mut tat, mut worst) = (f64::INFINITY, 0f64, 0.0, None::<f64>);
    for (_, j) in jobs {
        first = first.min(j.start.arrival_s);
        if let Some(e) = &j.end {
            last = last.max(e.end_s);
            tat += e.end_s - j.start.arrival_s;
            if let Some(s) = e.slowdown.filter(|_| e.status == JobStatus::Ok) {
                worst = Some(worst.map_or(s, |w: f64| w.max(s)));
            }
        }
    }
    RunRow {
        id: r.id.0,
        series: r.series.clone(),
        workload: r.workload.clone(),
        policy: r.policy.clone(),
        repeat: r.repeat,
        status: r.status.as_str().to_string(),
        started: format_unix_utc(r.started_unix),
        jobs: jobs.len(),
        not_ok,
        makespan_s: all_ended.then_some(last - first),
        mean_turnaround_s: all_ended.then_some(tat / jobs.len() as f64),
        worst_slowdown: worst,
        solo_reference_suspect: solo_reference_suspect(&r.policy, jobs),
    }
}

/// The jobs of an `exclusive` run that took outside [`ALONE_BAND`] of
/// their solo time (see [`RunRow::solo_reference_suspect`]).
fn solo_reference_suspect(policy: &str, jobs: &[(u32, RunJobRecord)]) -> Vec<String> {
    if policy != "exclusive" && !policy.starts_with("exclusive:") {
        return Vec::new();
    }
    jobs.iter()
        .filter_map(|(_, j)| {
            let e = j.end.as_ref().filter(|e| e.status == JobStatus::Ok)?;
            let s = e.slowdown?;
            (!(ALONE_BAND.0..=ALONE_BAND.1).contains(&s)).then(|| format!("{} at {s:.2}", j.start.job))
        })
        .collect()
}

/// Runs of the database, oldest first (the newest `last` when set).
pub fn runs(req: &RunsRequest) -> anyhow::Result<RunList> {
    // No database yet is no runs yet, as sacct lists no jobs: not an error.
    let store = match cosched_store::Store::open_read_only(&db_path(req.db.as_deref())) {
        Err(cosched_store::StoreError::Missing { .. }) => return Ok(RunList { runs: Vec::new() }),
        other => other.map_err(crate::common::store_input_error)?,
    };
    let mut out = Vec::new();
    for r in store.runs()? {
        if req.workload.as_ref().is_some_and(|w| *w != r.workload) || (req.no_passes && r.policy == "solo-pass") {
            continue;
        }
        let jobs = final_attempts(store.run_jobs(r.id)?);
        out.push(row(&r, &jobs));
    }
    out.sort_by_key(|r| r.id);
    if req.last > 0 && out.len() > req.last {
        out.drain(..out.len() - req.last);
    }
    Ok(RunList { runs: out })
}

/// One run with every job's final attempt.
pub fn show(db: Option<&std::path::Path>, id: i64) -> anyhow::Result<RunShow> {
    let store = open_read_only_store(&db_path(db))?;
    let Some(r) = store.run(ExecRunId(id))? else {
        return Err(bad_input(format!("no run {id} in the database (`cosched runs` lists them)")));
    };
    let attempts = final_attempts(store.run_jobs(r.id)?);
    let jobs = attempts
        .iter()
        .map(|(n, j)| JobRow {
            job: j.start.job.clone(),
            attempts: *n,
            cpus: j.start.cpus.clone(),
            arrival_s: j.start.arrival_s,
            start_s: j.start.start_s,
            end_s: j.end.as_ref().map(|e| e.end_s),
            status: j.end.as_ref().map_or("did not end".to_string(), |e| e.status.to_string()),
            predicted: j.start.predicted,
            slowdown: j.end.as_ref().and_then(|e| e.slowdown),
            beside: j.start.beside.clone(),
        })
        .collect();
    Ok(RunShow {
        run: row(&r, &attempts),
        jobs,
        command: r.provenance.command.clone(),
        host: r.provenance.hostname.clone(),
        git_commit: r.provenance.git_commit.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_store::{RunJobEnd, RunJobStart};

    fn job(name: &str, slowdown: f64, status: JobStatus) -> (u32, RunJobRecord) {
        let start = RunJobStart {
            job: name.into(),
            job_index: 0,
            attempt: 0,
            arrival_s: 0.0,
            start_s: 0.0,
            cpus: vec![0],
            mems: vec![],
            pgid: 1,
            beside: vec![],
            predicted: 1.0,
            solo_s: Some(1.0),
        };
        (1, RunJobRecord { start, end: Some(RunJobEnd { end_s: slowdown, status, work_s: None, slowdown: Some(slowdown) }) })
    }

    #[test]
    fn an_exclusive_run_whose_jobs_stray_from_their_solo_time_flags_its_solo_reference() {
        let jobs = [job("a", 0.34, JobStatus::Ok), job("b", 1.05, JobStatus::Ok), job("c", 1.4, JobStatus::Failed(1))];
        assert_eq!(solo_reference_suspect("exclusive", &jobs), ["a at 0.34"]);
        assert_eq!(solo_reference_suspect("exclusive:placement=scatter", &jobs[..1]), ["a at 0.34"]);
        // Beside co-runners a slowdown is expected: no flag.
        assert!(solo_reference_suspect("noplan", &jobs).is_empty());
        // The band's edges are within it.
        assert!(solo_reference_suspect("exclusive", &[job("d", 0.9, JobStatus::Ok), job("e", 1.1, JobStatus::Ok)]).is_empty());
    }
}
