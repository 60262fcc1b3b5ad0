//! Batsim's `jobs.csv` from the one trace, so evalys reads a real run
//! (`run --report`) as it reads a simulated one (`simulate --swf`).
//!
//! One line per job that started and finished, in job order. Resources are
//! CPUs: `allocated_resources` is Batsim's interval set of the CPUs the job
//! held (`0-1 4`), numbered `node x width + cpu` where `width` is one past
//! the highest CPU of the trace, so jobs on different nodes of one trace
//! hold different resources; `requested_number_of_resources` is its size.
//! `requested_time` is the job's solo time estimate (`-1` when not known),
//! `profile` its program, `metadata` its solo time and slowdown
//! (`solo=...;slowdown=...`). Energy is not measured (`-1`, as Batsim
//! writes without its energy plugin). Through the `csv` crate, as every CSV
//! cosched writes.

use crate::metrics::{EventKind, JobId};
use crate::run::JobStatus;
use crate::trace::Trace;

/// Batsim's job output columns, in its order.
pub const JOBS_CSV_HEAD: [&str; 17] = [
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
];

/// Batsim's `success` and `final_state` for how a job ended (a trace
/// without statuses, as the simulator's, ended well).
pub fn final_state(status: Option<&JobStatus>) -> (u8, &'static str) {
    match status {
        None | Some(JobStatus::Ok) => (1, "COMPLETED_SUCCESSFULLY"),
        Some(JobStatus::Timeout) => (0, "COMPLETED_WALLTIME_REACHED"),
        Some(JobStatus::Killed) => (0, "COMPLETED_KILLED"),
        Some(JobStatus::Failed(_) | JobStatus::Signal(_) | JobStatus::Oom | JobStatus::SpawnFailed) => (0, "COMPLETED_FAILED"),
    }
}

/// Sorted resource numbers as Batsim's interval set: `0-3 8`.
pub fn interval_set(resources: &[u64]) -> String {
    let ids: Vec<i64> = resources.iter().map(|&r| r as i64).collect();
    crate::topology::format_ranges(&ids, " ")
}

/// The trace as Batsim's `jobs.csv` of workload `workload` (see the module doc).
pub fn jobs_csv(trace: &Trace, workload: &str) -> String {
    let width = trace.jobs.iter().flat_map(|j| j.cpus.iter()).max().map_or(1, |&c| c as u64 + 1);
    let first = |job: JobId, kind: EventKind| trace.events.iter().find(|e| e.job == job && e.kind == kind).map(|e| e.time);
    let last = |job: JobId, kind: EventKind| trace.events.iter().rev().find(|e| e.job == job && e.kind == kind).map(|e| e.time);
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let io = "writing CSV to memory cannot fail";
    w.write_record(JOBS_CSV_HEAD).expect(io);
    for j in &trace.jobs {
        let (Some(start), Some(finish)) = (first(j.job, EventKind::Start), last(j.job, EventKind::Finish)) else { continue };
        let submit = first(j.job, EventKind::Arrive).unwrap_or(start);
        let (exec, turnaround) = (finish - start, finish - submit);
        let (success, state) = final_state(j.status.as_ref());
        let resources: Vec<u64> = j.cpus.iter().map(|&c| j.node as u64 * width + c as u64).collect();
        let slowdown = j.solo.filter(|s| *s > 0.0).map_or(String::new(), |s| (exec / s).to_string());
        let row = [
            j.job.to_string(),
            workload.to_string(),
            j.program.clone(),
            submit.to_string(),
            resources.len().to_string(),
            j.solo.map_or("-1".into(), |s| s.to_string()),
            success.to_string(),
            state.to_string(),
            start.to_string(),
            exec.to_string(),
            finish.to_string(),
            (start - submit).to_string(),
            turnaround.to_string(),
            (if exec > 0.0 { turnaround / exec } else { 1.0 }).to_string(),
            interval_set(&resources),
            "-1".into(),
            format!("solo={};slowdown={slowdown}", j.solo.map_or(String::new(), |s| s.to_string())),
        ];
        w.write_record(&row).expect(io);
    }
    String::from_utf8(w.into_inner().expect(io)).expect("the fields are UTF-8")
}

/// The share of `resources` CPUs the trace's jobs held between the first
/// start and the last finish, as evalys' mean utilisation of
/// [`jobs_csv`]'s file counts it (`allocated_resources` x
/// `execution_time`); `None` for a trace with no job that started and
/// finished or a span of zero.
pub fn held_utilization(trace: &Trace, resources: u64) -> Option<f64> {
    let (mut first, mut last, mut held) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for j in &trace.jobs {
        let start = trace.events.iter().find(|e| e.job == j.job && e.kind == EventKind::Start).map(|e| e.time);
        let finish = trace.events.iter().rev().find(|e| e.job == j.job && e.kind == EventKind::Finish).map(|e| e.time);
        if let (Some(s), Some(f)) = (start, finish) {
            first = first.min(s);
            last = last.max(f);
            held += (f - s) * j.cpus.len() as f64;
        }
    }
    let span = (last - first) * resources as f64;
    (span > 0.0).then(|| held / span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Event;
    use crate::trace::TraceJob;

    fn job(id: JobId, cpus: &[u32], status: Option<JobStatus>) -> TraceJob {
        TraceJob { program: format!("p{id}"), cpus: cpus.to_vec(), solo: Some(10.0), status, ..TraceJob::bare(id) }
    }

    fn ev(time: f64, job: JobId, kind: EventKind) -> Event {
        Event { time, job, kind }
    }

    #[test]
    fn interval_sets_join_runs_of_neighbours() {
        assert_eq!(interval_set(&[3, 0, 1, 2, 8]), "0-3 8");
        assert_eq!(interval_set(&[5]), "5");
        assert_eq!(interval_set(&[]), "");
        assert_eq!(interval_set(&[1, 1, 2]), "1-2");
    }

    #[test]
    fn a_real_runs_trace_becomes_batsims_columns_job_by_job() {
        let trace = Trace {
            jobs: vec![job(0, &[0, 1], Some(JobStatus::Ok)), job(1, &[2], Some(JobStatus::Failed(3))), job(2, &[3], None)],
            events: vec![
                ev(0.0, 0, EventKind::Arrive),
                ev(0.0, 1, EventKind::Arrive),
                ev(0.0, 2, EventKind::Arrive),
                ev(0.5, 0, EventKind::Start),
                ev(1.0, 1, EventKind::Start),
                ev(12.5, 0, EventKind::Finish),
                ev(6.0, 1, EventKind::Finish),
            ],
            estimates: Vec::new(),
        };
        let text = jobs_csv(&trace, "w, one");
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), JOBS_CSV_HEAD);
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        // Job 2 never started: no line.
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!(&a[1], "w, one");
        assert_eq!((&a[3], &a[4], &a[5], &a[6], &a[7]), ("0", "2", "10", "1", "COMPLETED_SUCCESSFULLY"));
        assert_eq!((&a[8], &a[9], &a[10], &a[11], &a[12]), ("0.5", "12", "12.5", "0.5", "12.5"));
        assert_eq!((&a[14], &a[15], &a[16]), ("0-1", "-1", "solo=10;slowdown=1.2"));
        let b = &rows[1];
        assert_eq!((&b[6], &b[7], &b[14]), ("0", "COMPLETED_FAILED", "2"));
    }

    #[test]
    fn held_utilization_counts_cpus_times_run_time_from_the_first_start() {
        let trace = Trace {
            jobs: vec![job(0, &[0, 1], None), job(1, &[2], None), job(2, &[3], None)],
            events: vec![
                ev(0.0, 0, EventKind::Arrive),
                ev(1.0, 0, EventKind::Start),
                ev(5.0, 0, EventKind::Finish),
                ev(3.0, 1, EventKind::Start),
                ev(5.0, 1, EventKind::Finish),
            ],
            estimates: Vec::new(),
        };
        // 2 x 4 + 1 x 2 core-seconds over 4 CPUs x 4 s.
        assert_eq!(held_utilization(&trace, 4), Some(10.0 / 16.0));
        assert_eq!(held_utilization(&Trace::default(), 4), None);
    }

    #[test]
    fn jobs_on_different_nodes_hold_different_resources() {
        let mut a = job(0, &[0, 1], None);
        let mut b = job(1, &[0, 1], None);
        a.node = 0;
        b.node = 1;
        let events = (0..2).flat_map(|j| [ev(0.0, j, EventKind::Start), ev(1.0, j, EventKind::Finish)]).collect();
        let text = jobs_csv(&Trace { jobs: vec![a, b], events, estimates: Vec::new() }, "w");
        let sets: Vec<String> = csv::Reader::from_reader(text.as_bytes()).records().map(|r| r.unwrap()[14].to_string()).collect();
        assert_eq!(sets, ["0-1", "2-3"]);
    }
}
