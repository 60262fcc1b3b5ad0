//! Journal replay: what a run's stored journal and job records say about
//! it, for resuming it (the jobs done, the attempts made, suspensions) and
//! for scoring a run an earlier invocation finished (its trace).

use cosched_model::metrics::{Event, EventKind};
use cosched_model::run::JobStatus;
use cosched_model::trace::Trace;
use cosched_engine::run::Done;
use cosched_sched::{Platform, SimJob};
use cosched_store::{JournalEntry, RunJobRecord};


/// (from, to) of each suspension of a job attempt that ran from `start`
/// to `end`, from the journal's `suspend` and `resume` lines; one still
/// open at `end` lasts until it.
pub(super) fn suspensions(journal: &[JournalEntry], job: &str, start: f64, end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut open: Option<f64> = None;
    for e in journal.iter().filter(|e| e.job.as_deref() == Some(job) && e.t_s >= start && e.t_s <= end) {
        match (e.event.as_str(), open) {
            ("suspend", None) => open = Some(e.t_s),
            ("resume", Some(from)) => {
                out.push((from, e.t_s));
                open = None;
            }
            _ => {}
        }
    }
    out.extend(open.map(|from| (from, end)));
    out
}

/// Jobs whose attempt was suspended (no `resume` after its `suspend`)
/// and had not ended when the runner died.
pub(super) fn suspended_at_death(journal: &[JournalEntry], recs: &[RunJobRecord]) -> Vec<String> {
    recs.iter()
        .filter(|r| r.end.is_none())
        .filter(|r| !suspensions(journal, &r.start.job, r.start.start_s, f64::INFINITY).iter().all(|s| s.1.is_finite()))
        .map(|r| r.start.job.clone())
        .collect()
}

/// Jobs whose latest attempt ended other than `killed`, with their
/// suspensions, and the next attempt number of every job.
pub(super) fn done_jobs(recs: &[RunJobRecord], journal: &[JournalEntry], n: usize) -> (Vec<Done>, Vec<u32>) {
    let mut attempts = vec![0u32; n];
    let mut last: Vec<Option<&RunJobRecord>> = vec![None; n];
    for r in recs {
        let i = r.start.job_index as usize;
        if i < n {
            attempts[i] = attempts[i].max(r.start.attempt + 1);
            last[i] = Some(r);
        }
    }
    let done = last
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let r = (*r)?;
            let e = r.end.as_ref()?;
            (e.status != JobStatus::Killed).then(|| Done {
                job: i,
                start: r.start.start_s,
                finish: e.end_s,
                status: e.status,
                cpus: r.start.cpus.clone(),
                suspensions: suspensions(journal, &r.start.job, r.start.start_s, e.end_s),
            })
        })
        .collect();
    (done, attempts)
}


/// The trace of a run finished by an earlier invocation, from its stored
/// final attempts: what `run_node` returned when it ran, but for the order
/// of events at one instant.
pub(super) fn trace_of(final_jobs: &[&RunJobRecord], journal: &[JournalEntry], platform: &Platform, sim: &[SimJob]) -> Trace {
    let mut t = Trace {
        jobs: platform.trace_jobs(sim),
        events: Vec::new(),
        estimates: Vec::new(),
    };
    for r in final_jobs {
        let j = r.start.job_index as usize;
        t.events.push(Event { time: r.start.arrival_s.min(r.start.start_s), job: j, kind: EventKind::Arrive });
        t.events.push(Event { time: r.start.start_s, job: j, kind: EventKind::Start });
        if let Some(e) = &r.end {
            for (from, to) in suspensions(journal, &r.start.job, r.start.start_s, e.end_s) {
                t.events.push(Event { time: from, job: j, kind: EventKind::Suspend });
                if to < e.end_s {
                    t.events.push(Event { time: to, job: j, kind: EventKind::Resume });
                }
            }
            t.events.push(Event { time: e.end_s, job: j, kind: EventKind::Finish });
            t.jobs[j].status = Some(e.status);
        }
        t.jobs[j].cpus = r.start.cpus.clone();
    }
    // Stable: at one instant a start stays before its suspension.
    t.events.sort_by(|a, b| a.time.total_cmp(&b.time));
    t
}

/// The last attempt of each of `n` jobs (a resumed run re-runs killed
/// jobs as attempt 1, 2, ...), in job order; stored order is attempt order.
pub(crate) fn final_attempts(recs: &[RunJobRecord], n: usize) -> Vec<&RunJobRecord> {
    let mut last: Vec<Option<&RunJobRecord>> = vec![None; n];
    for r in recs {
        if let Some(slot) = last.get_mut(r.start.job_index as usize) {
            *slot = Some(r);
        }
    }
    last.into_iter().flatten().collect()
}
