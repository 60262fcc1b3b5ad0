//! Real runs on a node (`cosched run`): the run, each job attempt, and the
//! journal. Every state transition is one transaction that writes the
//! attempt's row and its journal line together, so after a SIGKILL the
//! database says exactly which jobs ended, how, and which were running.

use cosched_model::provenance::Provenance;
use cosched_model::run::JobStatus;
use cosched_model::topology::format_cpulist;
use rusqlite::{params, OptionalExtension, Row};

use super::{
    canonical_params, cpus, json_col, nonempty, now_unix, parse_text, positive, provenance_from_row, provenance_id,
    sql_err, Result, Store, StoreError,
};
use crate::records::{ExecRunId, JournalEntry, OnlineSample, RunJobEnd, RunJobRecord, RunJobStart, RunRecord, RunStatus};

const RUN_SELECT: &str = "SELECT r.id, r.series, r.workload, r.policy, r.repeat_index, r.params_json, r.status,
    r.started_unix, r.finished_unix,
    p.hostname, p.cpu_model, p.cores, p.kernel_version, p.cosched_version, p.git_commit, p.command, p.seed, p.started_unix
    FROM runs r JOIN provenance p ON p.id = r.provenance_id";

fn run_from_row(r: &Row) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: ExecRunId(r.get(0)?),
        series: r.get(1)?,
        workload: r.get(2)?,
        policy: r.get(3)?,
        repeat: r.get(4)?,
        params: json_col(r, 5)?,
        status: parse_text(r, 6)?,
        started_unix: r.get(7)?,
        finished_unix: r.get(8)?,
        provenance: provenance_from_row(r, 9)?,
    })
}

/// The journal's word for a run found `running` with its runner gone.
pub const ORPHAN_NOTE: &str = "its runner died (found running when the node lock was next taken)";

fn finite(what: &str, field: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(StoreError::Invalid { what: what.into(), why: format!("{field} = {v} is not a non-negative number") })
    }
}

/// One journal line of a job: `suspend`, `resume` or `move` at `t_s` on
/// the run's clock.
#[derive(Debug, Clone, Copy)]
pub struct JobEvent<'a> {
    pub t_s: f64,
    pub event: &'a str,
    pub job: &'a str,
    pub detail: &'a str,
}

fn journal(tx: &rusqlite::Transaction, run: ExecRunId, t: f64, event: &str, job: Option<&str>, detail: &str) -> Result<()> {
    // Cached: a run writes a line per start, end and turn (issue 42).
    tx.prepare_cached("INSERT INTO run_journal (run_id, t_s, event, job, detail) VALUES (?1, ?2, ?3, ?4, ?5)")
        .and_then(|mut st| st.execute(params![run.0, t, event, job, detail]))
        .map_err(|source| sql_err(tx, "writing the run journal", source))?;
    Ok(())
}

impl Store {
    /// Starts a run (status `running`) with its `begin` journal line.
    pub fn begin_run(
        &mut self,
        series: &str,
        workload: &str,
        policy: &str,
        repeat: u32,
        params_json: &str,
        provenance: &Provenance,
    ) -> Result<ExecRunId> {
        nonempty("run", "series", series)?;
        nonempty("run", "workload", workload)?;
        nonempty("run", "policy", policy)?;
        let params = canonical_params(params_json)?;
        self.write("starting a run", |tx| {
            let err = |source| sql_err(tx, "starting a run", source);
            let prov = provenance_id(tx, provenance).map_err(err)?;
            tx.execute(
                "INSERT INTO runs (series, workload, policy, repeat_index, params_json, status, provenance_id, started_unix)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7)",
                params![series, workload, policy, repeat, params, prov, provenance.started_unix],
            )
            .map_err(err)?;
            let id = ExecRunId(tx.last_insert_rowid());
            journal(tx, id, 0.0, "begin", None, &format!("{policy} repeat {repeat}"))?;
            Ok(id)
        })
    }

    fn run_status_in(tx: &rusqlite::Transaction, run: ExecRunId) -> Result<RunStatus> {
        let s: Option<String> = tx
            .prepare_cached("SELECT status FROM runs WHERE id = ?1")
            .and_then(|mut st| st.query_row([run.0], |r| r.get(0)).optional())
            .map_err(|source| sql_err(tx, "reading a run", source))?;
        s.ok_or(StoreError::NoSuchRun(run))?
            .parse::<RunStatus>()
            .map_err(|why| StoreError::Invalid { what: format!("run {run}"), why })
    }

    /// Records that a job attempt started: its row and a `start` line.
    pub fn run_job_started(&mut self, run: ExecRunId, s: &RunJobStart) -> Result<()> {
        let what = format!("start of job {} in run {run}", s.job);
        nonempty(&what, "job", &s.job)?;
        finite(&what, "arrival_s", s.arrival_s)?;
        finite(&what, "start_s", s.start_s)?;
        positive(&what, "predicted", s.predicted)?;
        if let Some(solo) = s.solo_s {
            positive(&what, "solo_s", solo)?;
        }
        self.write("recording a job start", |tx| {
            let status = Store::run_status_in(tx, run)?;
            if status != RunStatus::Running {
                return Err(StoreError::Invalid { what: what.clone(), why: format!("the run is {status}") });
            }
            tx.prepare_cached(
                "INSERT INTO run_jobs (run_id, job, job_index, attempt, arrival_s, start_s, cpus, pgid, beside_json,
                    predicted, solo_s, mems) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .and_then(|mut st| st.execute(params![
                    run.0,
                    s.job,
                    s.job_index,
                    s.attempt,
                    s.arrival_s,
                    s.start_s,
                    format_cpulist(&s.cpus),
                    s.pgid,
                    serde_json::to_string(&s.beside).expect("strings serialize"),
                    s.predicted,
                    s.solo_s,
                    (!s.mems.is_empty()).then(|| format_cpulist(&s.mems)),
                ]))
            .map_err(|source| sql_err(tx, &what, source))?;
            let mems = if s.mems.is_empty() { String::new() } else { format!(" mems {}", format_cpulist(&s.mems)) };
            let detail = format!("cpus {}{mems} pgid {} predicted {:.3}", format_cpulist(&s.cpus), s.pgid, s.predicted);
            journal(tx, run, s.start_s, "start", Some(&s.job), &detail)
        })
    }

    /// Records how a job attempt ended: completes its row, writes an `end` line.
    pub fn run_job_ended(&mut self, run: ExecRunId, job_index: u32, attempt: u32, e: &RunJobEnd) -> Result<()> {
        let what = format!("end of job {job_index} attempt {attempt} in run {run}");
        finite(&what, "end_s", e.end_s)?;
        for (name, v) in [("work_s", e.work_s), ("slowdown", e.slowdown)] {
            if let Some(v) = v {
                positive(&what, name, v)?;
            }
        }
        self.write("recording a job end", |tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE run_jobs SET end_s = ?4, status = ?5, status_value = ?6, work_s = ?7, slowdown = ?8
                     WHERE run_id = ?1 AND job_index = ?2 AND attempt = ?3 AND end_s IS NULL",
                )
                .and_then(|mut st| st.execute(params![run.0, job_index, attempt, e.end_s, e.status.name(), e.status.value(), e.work_s, e.slowdown]))
                .map_err(|source| sql_err(tx, &what, source))?;
            if n != 1 {
                return Err(StoreError::Invalid { what: what.clone(), why: "no such running attempt".into() });
            }
            let job: String = tx
                .prepare_cached("SELECT job FROM run_jobs WHERE run_id = ?1 AND job_index = ?2 AND attempt = ?3")
                .and_then(|mut st| st.query_row(params![run.0, job_index, attempt], |r| r.get(0)))
                .map_err(|source| sql_err(tx, &what, source))?;
            let detail = match e.status.value() {
                Some(v) => format!("{} {v}", e.status.name()),
                None => e.status.name().to_string(),
            };
            journal(tx, run, e.end_s, "end", Some(&job), &detail)
        })
    }

    /// Records that a running job was suspended, resumed or moved: a
    /// `suspend`, `resume` or `move` journal line naming it, so a resumed
    /// run knows which jobs were suspended and for how long.
    pub fn run_job_event(&mut self, run: ExecRunId, t_s: f64, event: &str, job: &str, detail: &str) -> Result<()> {
        self.run_job_events(run, &[JobEvent { t_s, event, job, detail }])
    }

    /// [`Store::run_job_event`] for several lines, in order, in one
    /// transaction: a turn's suspension and resumption cost one write (one
    /// sync to disk) instead of two.
    pub fn run_job_events(&mut self, run: ExecRunId, events: &[JobEvent]) -> Result<()> {
        for e in events {
            let what = format!("{} of job {} in run {run}", e.event, e.job);
            finite(&what, "t_s", e.t_s)?;
            nonempty(&what, "job", e.job)?;
            if !["suspend", "resume", "move"].contains(&e.event) {
                return Err(StoreError::Invalid { what, why: "the event is suspend, resume or move".into() });
            }
        }
        if events.is_empty() {
            return Ok(());
        }
        self.write("recording a job event", |tx| {
            let status = Store::run_status_in(tx, run)?;
            if status != RunStatus::Running {
                let e = &events[0];
                return Err(StoreError::Invalid { what: format!("{} of job {} in run {run}", e.event, e.job), why: format!("the run is {status}") });
            }
            events.iter().try_for_each(|e| journal(tx, run, e.t_s, e.event, Some(e.job), e.detail))
        })
    }

    /// Ends a run (`done`, `interrupted` or `failed`) with a journal line at
    /// `t_s` on the run's clock.
    pub fn finish_run(&mut self, run: ExecRunId, status: RunStatus, t_s: f64, detail: &str) -> Result<()> {
        if status == RunStatus::Running {
            return Err(StoreError::Invalid {
                what: format!("finishing run {run}"),
                why: "a finished run is done, interrupted or failed".into(),
            });
        }
        self.write("finishing a run", |tx| {
            Store::run_status_in(tx, run)?;
            tx.execute(
                "UPDATE runs SET status = ?2, finished_unix = ?3 WHERE id = ?1",
                params![run.0, status.as_str(), now_unix()],
            )
            .map_err(|source| sql_err(tx, "finishing a run", source))?;
            journal(tx, run, t_s, status.as_str(), None, detail)
        })
    }

    /// Ends as `interrupted` (resumable) every run still `running` that
    /// began on `hostname`, and returns them. Called by a verb that holds
    /// the node lock, so no runner of this node is alive: a run found
    /// `running` lost its runner to a SIGKILL (an `evaluate`, which never
    /// resumes, would otherwise leave it `running` for good).
    pub fn interrupt_orphaned_runs(&mut self, hostname: &str) -> Result<Vec<ExecRunId>> {
        self.write("marking runs whose runner died", |tx| {
            let err = |source| sql_err(tx, "marking runs whose runner died", source);
            let found: Vec<(i64, f64)> = {
                let mut st = tx
                    .prepare(
                        "SELECT r.id, coalesce((SELECT max(t_s) FROM run_journal j WHERE j.run_id = r.id), 0)
                         FROM runs r JOIN provenance p ON p.id = r.provenance_id
                         WHERE r.status = 'running' AND p.hostname = ?1 ORDER BY r.id",
                    )
                    .map_err(err)?;
                let rows = st.query_map([hostname], |r| Ok((r.get(0)?, r.get(1)?))).map_err(err)?;
                rows.collect::<rusqlite::Result<_>>().map_err(err)?
            };
            for &(id, t) in &found {
                tx.execute(
                    "UPDATE runs SET status = ?2, finished_unix = ?3 WHERE id = ?1",
                    params![id, RunStatus::Interrupted.as_str(), now_unix()],
                )
                .map_err(err)?;
                journal(tx, ExecRunId(id), t, RunStatus::Interrupted.as_str(), None, ORPHAN_NOTE)?;
            }
            Ok(found.into_iter().map(|(id, _)| ExecRunId(id)).collect())
        })
    }

    /// Makes an unfinished run `running` again for `--resume`: attempts
    /// left without an end (the runner died under them) are ended as
    /// `killed` at `t_s`, and a `resume` line is written; all in one
    /// transaction. Returns how many attempts were ended so.
    pub fn resume_run(&mut self, run: ExecRunId, t_s: f64) -> Result<usize> {
        finite("resuming a run", "t_s", t_s)?;
        self.write("resuming a run", |tx| {
            let status = Store::run_status_in(tx, run)?;
            if status == RunStatus::Done {
                return Err(StoreError::Invalid { what: format!("resuming run {run}"), why: "it is done".into() });
            }
            let err = |source| sql_err(tx, "resuming a run", source);
            let open: Vec<String> = {
                let mut st = tx
                    .prepare("SELECT job FROM run_jobs WHERE run_id = ?1 AND end_s IS NULL ORDER BY id")
                    .map_err(err)?;
                let rows = st.query_map([run.0], |r| r.get(0)).map_err(err)?;
                rows.collect::<rusqlite::Result<_>>().map_err(err)?
            };
            for job in &open {
                journal(tx, run, t_s, "end", Some(job), "killed (the runner died)")?;
            }
            tx.execute(
                "UPDATE run_jobs SET end_s = max(start_s, ?2), status = ?3 WHERE run_id = ?1 AND end_s IS NULL",
                params![run.0, t_s, cosched_model::run::JobStatus::Killed.name()],
            )
            .map_err(err)?;
            tx.execute(
                "UPDATE runs SET status = ?2, finished_unix = NULL WHERE id = ?1",
                params![run.0, RunStatus::Running.as_str()],
            )
            .map_err(err)?;
            journal(tx, run, t_s, "resume", None, &format!("was {status}"))?;
            Ok(open.len())
        })
    }

    /// One run.
    pub fn run(&self, id: ExecRunId) -> Result<Option<RunRecord>> {
        let sql = format!("{RUN_SELECT} WHERE r.id = ?1");
        Ok(self.query(&sql, [id.0], "reading a run", run_from_row)?.pop())
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRecord>> {
        let sql = format!("{RUN_SELECT} ORDER BY r.id");
        self.query(&sql, [], "reading runs", run_from_row)
    }

    /// The runs of the newest series started with these parameters (JSON,
    /// compared with keys sorted) whose repeats start at `first_repeat`:
    /// what `cosched run --resume` continues (repeat 0), and each order of
    /// `cosched evaluate --resume` (its own repeat).
    pub fn latest_series(&self, params_json: &str, first_repeat: u32) -> Result<Vec<RunRecord>> {
        let params = canonical_params(params_json)?;
        let series: Option<String> = self
            .conn
            .query_row(
                "SELECT series FROM runs WHERE params_json = ?1 AND series IN
                   (SELECT series FROM runs GROUP BY series HAVING MIN(repeat_index) = ?2)
                 ORDER BY id DESC LIMIT 1",
                rusqlite::params![&params, first_repeat],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.sql("finding a run series"))?;
        let Some(series) = series else { return Ok(Vec::new()) };
        let sql = format!("{RUN_SELECT} WHERE r.series = ?1 ORDER BY r.id");
        self.query(&sql, [series], "reading a run series", run_from_row)
    }

    /// Every job attempt of a run, in the order they started.
    pub fn run_jobs(&self, run: ExecRunId) -> Result<Vec<RunJobRecord>> {
        self.query(
            "SELECT job, job_index, attempt, arrival_s, start_s, cpus, pgid, beside_json, predicted, solo_s,
                    end_s, status, status_value, work_s, slowdown, mems
             FROM run_jobs WHERE run_id = ?1 ORDER BY id",
            [run.0],
            "reading the jobs of a run",
            |r| {
                let end_s: Option<f64> = r.get(10)?;
                let end = match end_s {
                    Some(end_s) => Some(RunJobEnd {
                        end_s,
                        status: {
                            let name = r.get::<_, Option<String>>(11)?.unwrap_or_default();
                            JobStatus::parse_parts(&name, r.get(12)?)
                                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(11, rusqlite::types::Type::Text, e.into()))?
                        },
                        work_s: r.get(13)?,
                        slowdown: r.get(14)?,
                    }),
                    None => None,
                };
                Ok(RunJobRecord {
                    start: RunJobStart {
                        job: r.get(0)?,
                        job_index: r.get(1)?,
                        attempt: r.get(2)?,
                        arrival_s: r.get(3)?,
                        start_s: r.get(4)?,
                        cpus: cpus(r, 5)?,
                        mems: match r.get::<_, Option<String>>(15)? {
                            Some(_) => cpus(r, 15)?,
                            None => Vec::new(),
                        },
                        pgid: r.get(6)?,
                        beside: json_col(r, 7)?,
                        predicted: r.get(8)?,
                        solo_s: r.get(9)?,
                    },
                    end,
                })
            },
        )
    }

    /// A journal line of the run that is no job's start or end, at `t_s` on
    /// the run's clock: what its policy reported (a Lua script swapped in,
    /// a swap refused, a fallback).
    pub fn run_note(&mut self, run: ExecRunId, t_s: f64, event: &str, detail: &str) -> Result<()> {
        finite("noting a run event", "t_s", t_s)?;
        self.write("noting a run event", |tx| {
            Store::run_status_in(tx, run)?;
            journal(tx, run, t_s, event, None, detail)
        })
    }

    /// Keeps a running pair's settled online estimate at once (one
    /// transaction), so the next run's figures can use it.
    pub fn add_online_sample(&mut self, run: ExecRunId, s: &OnlineSample) -> Result<()> {
        let what = format!("the online sample of job {} in run {run}", s.victim);
        finite(&what, "t_s", s.t_s)?;
        nonempty(&what, "victim", &s.victim)?;
        nonempty(&what, "beside", &s.beside)?;
        for (field, v) in [("slowdown", s.slowdown), ("lo", s.lo)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(StoreError::Invalid { what, why: format!("{field} = {v} is not a positive number") });
            }
        }
        finite(&what, "predicted", s.predicted)?;
        self.write("recording an online sample", |tx| {
            Store::run_status_in(tx, run)?;
            tx.execute(
                "INSERT INTO online_samples (run_id, t_s, victim, beside, victim_program, beside_program, slowdown, lo, hi, segments, signal, predicted, regime)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![run.0, s.t_s, s.victim, s.beside, s.victim_program, s.beside_program, s.slowdown, s.lo, s.hi.filter(|h| h.is_finite()), s.segments, s.signal, s.predicted, s.regime],
            )
            .map_err(|source| sql_err(tx, "recording an online sample", source))?;
            Ok(())
        })
    }

    /// A run's online samples, in the order they settled.
    pub fn online_samples(&self, run: ExecRunId) -> Result<Vec<OnlineSample>> {
        let sql = format!("SELECT {ONLINE_COLS} FROM online_samples o WHERE o.run_id = ?1 ORDER BY o.id");
        self.query(&sql, [run.0], "reading online samples", online_from_row)
    }

    /// The online samples of every run of `workload`, each with its run,
    /// oldest run first and in the order they settled within a run: what
    /// the learning loop reads back into training sets.
    pub fn workload_online_samples(&self, workload: &str) -> Result<Vec<(ExecRunId, OnlineSample)>> {
        let sql = format!(
            "SELECT {ONLINE_COLS}, o.run_id FROM online_samples o JOIN runs r ON r.id = o.run_id
             WHERE r.workload = ?1 ORDER BY o.run_id, o.id"
        );
        self.query(&sql, [workload], "reading online samples", |r| Ok((ExecRunId(r.get(12)?), online_from_row(r)?)))
    }

    /// A run's journal, in order.
    pub fn run_journal(&self, run: ExecRunId) -> Result<Vec<JournalEntry>> {
        self.query(
            "SELECT t_s, event, job, detail FROM run_journal WHERE run_id = ?1 ORDER BY id",
            [run.0],
            "reading a run journal",
            |r| Ok(JournalEntry { t_s: r.get(0)?, event: r.get(1)?, job: r.get(2)?, detail: r.get(3)? }),
        )
    }
}

/// The columns [`online_from_row`] reads, in its order.
const ONLINE_COLS: &str =
    "o.t_s, o.victim, o.beside, o.victim_program, o.beside_program, o.slowdown, o.lo, o.hi, o.segments, o.signal, o.predicted, o.regime";

fn online_from_row(r: &rusqlite::Row) -> rusqlite::Result<OnlineSample> {
    Ok(OnlineSample {
        t_s: r.get(0)?,
        victim: r.get(1)?,
        beside: r.get(2)?,
        victim_program: r.get(3)?,
        beside_program: r.get(4)?,
        slowdown: r.get(5)?,
        lo: r.get(6)?,
        hi: r.get(7)?,
        segments: r.get(8)?,
        signal: r.get(9)?,
        predicted: r.get(10)?,
        regime: r.get(11)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov() -> Provenance {
        crate::test_provenance("cosched run", 0)
    }

    #[test]
    fn a_policy_note_is_a_journal_line_in_order_and_other_events_are_refused() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "lua:path=a.lua", 0, "{}", &prov()).unwrap();
        s.run_note(run, 1.5, "policy-swap", "a.lua swapped in (3 lines)").unwrap();
        s.run_note(run, 2.0, "policy-swap-refused", "a.lua:2: no; the running script keeps deciding").unwrap();
        assert!(s.run_note(run, 2.5, "policy-coffee", "x").is_err(), "the journal keeps its events");
        assert!(s.run_note(run, f64::NAN, "policy-swap", "x").is_err());
        let j = s.run_journal(run).unwrap();
        let seen: Vec<(f64, &str, Option<&str>)> = j.iter().map(|e| (e.t_s, e.event.as_str(), e.job.as_deref())).collect();
        assert_eq!(seen, vec![(0.0, "begin", None), (1.5, "policy-swap", None), (2.0, "policy-swap-refused", None)]);
        assert_eq!(j[2].detail, "a.lua:2: no; the running script keeps deciding");
    }

    fn start(job: &str, index: u32, attempt: u32, t: f64) -> RunJobStart {
        RunJobStart {
            job: job.into(),
            job_index: index,
            attempt,
            arrival_s: 0.0,
            start_s: t,
            cpus: vec![index],
            mems: if index == 0 { vec![0] } else { Vec::new() },
            pgid: 100 + index as i32,
            beside: vec![],
            predicted: 1.0,
            solo_s: Some(1.0),
        }
    }

    fn end(t: f64, status: JobStatus) -> RunJobEnd {
        RunJobEnd { end_s: t, status, work_s: None, slowdown: Some(1.1) }
    }

    #[test]
    fn a_killed_run_resumes_with_its_open_attempts_ended_as_killed() {
        let mut s = Store::open_in_memory().unwrap();
        let p = r#"{"policy": "noplan", "workload": "w"}"#;
        let run = s.begin_run("s1", "w", "noplan", 0, p, &prov()).unwrap();
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        s.run_job_started(run, &start("b", 1, 0, 0.5)).unwrap();
        s.run_job_ended(run, 0, 0, &end(1.0, JobStatus::Ok)).unwrap();
        // The runner dies here: b has no end. A new runner finds the series.
        let series = s.latest_series(r#"{"workload": "w", "policy": "noplan"}"#, 0).unwrap();
        assert!(s.latest_series(r#"{"workload": "w", "policy": "noplan"}"#, 1).unwrap().is_empty(), "no series starting at repeat 1");
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].status, RunStatus::Running);
        assert_eq!(s.resume_run(run, 1.2).unwrap(), 1);
        let jobs = s.run_jobs(run).unwrap();
        assert_eq!(jobs[1].end.as_ref().unwrap().status, JobStatus::Killed);
        assert_eq!(jobs[1].end.as_ref().unwrap().end_s, 1.2);
        s.run_job_started(run, &start("b", 1, 1, 1.2)).unwrap();
        s.run_job_ended(run, 1, 1, &end(2.0, JobStatus::Failed(3))).unwrap();
        s.finish_run(run, RunStatus::Done, 2.0, "").unwrap();
        let events: Vec<String> = s.run_journal(run).unwrap().into_iter().map(|e| e.event).collect();
        assert_eq!(events, ["begin", "start", "start", "end", "end", "resume", "start", "end", "done"]);
        assert_eq!(s.run(run).unwrap().unwrap().status, RunStatus::Done);
        assert!(s.resume_run(run, 3.0).is_err(), "a done run is not resumed");
    }

    #[test]
    fn a_jobs_memory_nodes_are_stored_and_journaled_beside_its_cpus() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "noplan", 0, "{}", &prov()).unwrap();
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        s.run_job_started(run, &start("b", 1, 0, 0.0)).unwrap();
        let jobs = s.run_jobs(run).unwrap();
        assert_eq!((jobs[0].start.mems.clone(), jobs[1].start.mems.clone()), (vec![0], vec![]), "unbound reads back as none");
        let j = s.run_journal(run).unwrap();
        assert_eq!(j[1].detail, "cpus 0 mems 0 pgid 100 predicted 1.000");
        assert_eq!(j[2].detail, "cpus 1 pgid 101 predicted 1.000");
    }

    #[test]
    fn suspensions_and_moves_are_journal_lines_naming_the_job() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "surpass", 0, "{}", &prov()).unwrap();
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        s.run_job_event(run, 0.5, "suspend", "a", "").unwrap();
        s.run_job_event(run, 0.7, "move", "a", "cpus 1").unwrap();
        s.run_job_event(run, 0.9, "resume", "a", "").unwrap();
        assert!(s.run_job_event(run, 1.0, "pause", "a", "").unwrap_err().to_string().contains("suspend, resume or move"));
        assert!(s.run_job_event(run, f64::NAN, "suspend", "a", "").is_err());
        let j = s.run_journal(run).unwrap();
        let lines: Vec<(f64, &str, Option<&str>)> = j.iter().map(|e| (e.t_s, e.event.as_str(), e.job.as_deref())).collect();
        assert_eq!(&lines[2..], [(0.5, "suspend", Some("a")), (0.7, "move", Some("a")), (0.9, "resume", Some("a"))]);
        s.finish_run(run, RunStatus::Done, 1.0, "").unwrap();
        assert!(s.run_job_event(run, 1.1, "suspend", "a", "").is_err(), "a finished run takes no events");
    }

    #[test]
    fn several_job_events_are_written_in_order_together_or_not_at_all() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "timeshare", 0, "{}", &prov()).unwrap();
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        s.run_job_started(run, &start("b", 1, 0, 0.0)).unwrap();
        let ev = |t_s, event, job| JobEvent { t_s, event, job, detail: "" };
        s.run_job_events(run, &[ev(0.02, "suspend", "a"), ev(0.021, "resume", "b")]).unwrap();
        // One bad line refuses them all.
        let bad = s.run_job_events(run, &[ev(0.04, "suspend", "b"), ev(0.041, "pause", "a")]).unwrap_err();
        assert!(bad.to_string().contains("pause of job a"), "{bad}");
        s.run_job_events(run, &[]).unwrap();
        let j = s.run_journal(run).unwrap();
        let lines: Vec<(f64, &str, Option<&str>)> = j.iter().skip(3).map(|e| (e.t_s, e.event.as_str(), e.job.as_deref())).collect();
        assert_eq!(lines, [(0.02, "suspend", Some("a")), (0.021, "resume", Some("b"))]);
    }

    #[test]
    fn bad_records_write_nothing() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "noplan", 0, "{}", &prov()).unwrap();
        let mut bad = start("a", 0, 0, 0.0);
        bad.predicted = f64::NAN;
        assert!(s.run_job_started(run, &bad).is_err());
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        // A bad status name or a `failed` without its code cannot be built
        // (`model::run::JobStatus`); one stored by hand is refused on reading
        // (`a_stored_status_without_its_code_is_refused_on_reading`).
        let mut bad_end = end(1.0, JobStatus::Ok);
        bad_end.slowdown = Some(-1.0);
        assert!(s.run_job_ended(run, 0, 0, &bad_end).is_err(), "a negative slowdown");
        assert!(s.run_job_ended(run, 0, 7, &end(1.0, JobStatus::Ok)).is_err(), "no such attempt");
        assert_eq!(s.run_jobs(run).unwrap().len(), 1);
        assert_eq!(s.run_jobs(run).unwrap()[0].end, None);
        assert_eq!(s.run_journal(run).unwrap().len(), 2, "begin and one start");
        s.finish_run(run, RunStatus::Interrupted, 1.0, "SIGINT").unwrap();
        assert!(s.run_job_started(run, &start("b", 1, 0, 1.0)).is_err(), "an interrupted run takes no starts");
    }

    #[test]
    fn a_stored_status_without_its_code_is_refused_on_reading() {
        let mut s = Store::open_in_memory().unwrap();
        let run = s.begin_run("s1", "w", "noplan", 0, "{}", &prov()).unwrap();
        s.run_job_started(run, &start("a", 0, 0, 0.0)).unwrap();
        s.run_job_ended(run, 0, 0, &end(1.0, JobStatus::Signal(9))).unwrap();
        assert_eq!(s.run_jobs(run).unwrap()[0].end.as_ref().unwrap().status, JobStatus::Signal(9));
        // The schema checks the name but not that `signal` has its number.
        s.conn.execute("UPDATE run_jobs SET status_value = NULL", []).unwrap();
        let e = s.run_jobs(run).unwrap_err().to_string();
        assert!(e.contains("status `signal` needs its code"), "{e}");
    }
}
