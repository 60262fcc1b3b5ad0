//! Scores of a schedule, computed from its event trace.
//!
//! The simulator and the node runner both emit the same trace
//! ([`crate::trace::Trace`]), and both are scored here, so a simulated figure and a measured one mean the same thing.

use serde::{Deserialize, Serialize};

/// A job's index in the workload it belongs to.
pub type JobId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Arrive,
    Start,
    Finish,
    /// The job stopped where it was (it holds no core, makes no progress).
    Suspend,
    /// A suspended job went on.
    Resume,
    /// The job was re-pinned to other cores.
    Move,
}

/// One line of a trace. `time` is in seconds from the trace's origin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub time: f64,
    pub job: JobId,
    pub kind: EventKind,
}

/// Scores of one schedule. Times are in seconds; slowdowns are ratios.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub jobs: usize,
    /// Last finish minus first arrival.
    pub makespan: f64,
    /// Turnaround: finish minus arrival.
    pub avg_turnaround: f64,
    pub worst_turnaround: f64,
    /// Slowdown: (finish - start - suspended) / solo time, so neither
    /// waiting nor being suspended counts.
    pub avg_slowdown: f64,
    pub worst_slowdown: f64,
    /// Waiting: start minus arrival.
    pub avg_wait: f64,
    pub worst_wait: f64,
    /// Seconds jobs spent suspended, summed over jobs.
    #[serde(default)]
    pub suspended: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricsError {
    #[error("the trace has no jobs")]
    Empty,
    #[error("job {0} is outside the {1} jobs given solo times")]
    UnknownJob(JobId, usize),
    #[error("job {0} has {1:?} twice")]
    Duplicate(JobId, EventKind),
    #[error("job {0} has no {1:?} event")]
    Missing(JobId, EventKind),
    #[error("job {0}: events out of order (arrive <= start <= finish does not hold)")]
    OutOfOrder(JobId),
    #[error("job {0}: {1:?} at {2} while it is not {3}")]
    BadSuspension(JobId, EventKind, f64, &'static str),
    #[error("job {0}: solo time {1} is not a positive finite number")]
    BadSolo(JobId, f64),
    #[error("job {0}: time {1} is not finite")]
    BadTime(JobId, f64),
}

/// Per-job times taken from a trace. A job without an `Arrive` event is taken
/// to arrive when it starts, since a real run may only log starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JobTimes {
    pub arrive: f64,
    pub start: f64,
    pub finish: f64,
    /// Seconds it spent suspended between start and finish.
    #[serde(default)]
    pub suspended: f64,
}

impl JobTimes {
    /// Wall time from start to finish, suspensions included.
    pub fn execution(&self) -> f64 {
        self.finish - self.start
    }

    /// Time it ran: start to finish, suspensions left out.
    pub fn running(&self) -> f64 {
        self.finish - self.start - self.suspended
    }
}

/// Checks that every job `0..jobs` started and finished exactly once, in
/// order, and that suspensions alternate with resumptions between its
/// start and finish (a job may finish suspended: killed while it was);
/// sums each job's time suspended. Moves are not checked beyond their job.
pub fn job_times(trace: &[Event], jobs: usize) -> Result<Vec<JobTimes>, MetricsError> {
    let mut seen: Vec<[Option<f64>; 3]> = vec![[None; 3]; jobs];
    // Suspensions and resumptions by job, in trace order.
    let mut pauses: Vec<Vec<(f64, EventKind)>> = vec![Vec::new(); jobs];
    for e in trace {
        if e.job >= jobs {
            return Err(MetricsError::UnknownJob(e.job, jobs));
        }
        if !e.time.is_finite() {
            return Err(MetricsError::BadTime(e.job, e.time));
        }
        let k = match e.kind {
            EventKind::Arrive => 0,
            EventKind::Start => 1,
            EventKind::Finish => 2,
            EventKind::Suspend | EventKind::Resume => {
                pauses[e.job].push((e.time, e.kind));
                continue;
            }
            EventKind::Move => continue,
        };
        let slot = &mut seen[e.job][k];
        if slot.is_some() {
            return Err(MetricsError::Duplicate(e.job, e.kind));
        }
        *slot = Some(e.time);
    }
    seen.iter()
        .zip(&pauses)
        .enumerate()
        .map(|(j, ([a, s, f], pauses))| {
            let start = s.ok_or(MetricsError::Missing(j, EventKind::Start))?;
            let finish = f.ok_or(MetricsError::Missing(j, EventKind::Finish))?;
            let arrive = a.unwrap_or(start);
            if !(arrive <= start && start <= finish) {
                return Err(MetricsError::OutOfOrder(j));
            }
            let mut suspended = 0.0;
            let mut since: Option<f64> = None;
            for &(t, kind) in pauses {
                if t < start || t > finish {
                    return Err(MetricsError::OutOfOrder(j));
                }
                match (kind, since) {
                    (EventKind::Suspend, None) => since = Some(t),
                    (EventKind::Resume, Some(from)) => {
                        suspended += t - from;
                        since = None;
                    }
                    (EventKind::Suspend, Some(_)) => return Err(MetricsError::BadSuspension(j, kind, t, "running")),
                    _ => return Err(MetricsError::BadSuspension(j, kind, t, "suspended")),
                }
            }
            if let Some(from) = since {
                suspended += finish - from;
            }
            Ok(JobTimes {
                arrive,
                start,
                finish,
                suspended,
            })
        })
        .collect()
}

/// Scores a trace of jobs `0..solo.len()`, `solo[j]` being job j's solo time.
pub fn compute(trace: &[Event], solo: &[f64]) -> Result<Metrics, MetricsError> {
    if solo.is_empty() {
        return Err(MetricsError::Empty);
    }
    if let Some((j, &s)) = solo
        .iter()
        .enumerate()
        .find(|(_, s)| !(s.is_finite() && **s > 0.0))
    {
        return Err(MetricsError::BadSolo(j, s));
    }
    let times = job_times(trace, solo.len())?;
    let n = times.len() as f64;
    let origin = times.iter().map(|t| t.arrive).fold(f64::INFINITY, f64::min);
    let end = times
        .iter()
        .map(|t| t.finish)
        .fold(f64::NEG_INFINITY, f64::max);
    let tat: Vec<f64> = times.iter().map(|t| t.finish - t.arrive).collect();
    let sd: Vec<f64> = times
        .iter()
        .zip(solo)
        .map(|(t, s)| t.running() / s)
        .collect();
    let wait: Vec<f64> = times.iter().map(|t| t.start - t.arrive).collect();
    let avg = |v: &[f64]| v.iter().sum::<f64>() / n;
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(Metrics {
        jobs: solo.len(),
        makespan: end - origin,
        avg_turnaround: avg(&tat),
        worst_turnaround: max(&tat),
        avg_slowdown: avg(&sd),
        worst_slowdown: max(&sd),
        avg_wait: avg(&wait),
        worst_wait: max(&wait),
        suspended: times.iter().map(|t| t.suspended).sum(),
    })
}

/// Share of the node's core-seconds occupied by jobs over the makespan:
/// `cores[j]` is what job j holds, `capacity` the node's cores. Occupied, not
/// busy: a slowed-down job holds its cores longer, which is what a scheduler
/// pays for.
pub fn utilization(trace: &[Event], cores: &[u32], capacity: u32) -> Result<f64, MetricsError> {
    if cores.is_empty() {
        return Err(MetricsError::Empty);
    }
    let times = job_times(trace, cores.len())?;
    let origin = times.iter().map(|t| t.arrive).fold(f64::INFINITY, f64::min);
    let end = times
        .iter()
        .map(|t| t.finish)
        .fold(f64::NEG_INFINITY, f64::max);
    let held: f64 = times
        .iter()
        .zip(cores)
        .map(|(t, &c)| (t.finish - t.start) * c as f64)
        .sum();
    let span = (end - origin) * capacity as f64;
    Ok(if span > 0.0 { held / span } else { 0.0 })
}

/// The SX-Aurora paper's "increase rate": (value - baseline) / baseline, e.g. 0.25 for a
/// makespan 25 % longer than sequential execution, -0.285 for 28.5 % shorter.
pub fn increase_rate(value: f64, baseline: f64) -> f64 {
    (value - baseline) / baseline
}

/// The nOS-V paper's performance score of each strategy on one combination of
/// jobs: `min over strategies s of makespan_s / makespan_x`, so the best
/// strategy scores 1 and one twice as slow 0.5. `makespans[x]` is strategy
/// x's makespan on that combination; scores come back in the same order.
/// Unlike a speedup over one baseline, scores average meaningfully over
/// combinations (the nOS-V paper takes the median over them).
pub fn performance_scores(makespans: &[f64]) -> Vec<f64> {
    let best = makespans.iter().copied().fold(f64::INFINITY, f64::min);
    makespans.iter().map(|&m| best / m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: f64, job: JobId, kind: EventKind) -> Event {
        Event { time, job, kind }
    }

    #[test]
    fn two_jobs_by_hand() {
        use EventKind::*;
        let trace = [
            ev(0.0, 0, Arrive),
            ev(0.0, 1, Arrive),
            ev(0.0, 0, Start),
            ev(0.0, 1, Start),
            ev(120.0, 1, Finish),
            ev(140.0, 0, Finish),
        ];
        let m = compute(&trace, &[100.0, 100.0]).unwrap();
        assert_eq!(m.makespan, 140.0);
        assert_eq!(m.avg_turnaround, 130.0);
        assert_eq!(m.worst_turnaround, 140.0);
        assert!((m.avg_slowdown - 1.3).abs() < 1e-12);
        assert_eq!(m.worst_slowdown, 1.4);
        assert_eq!(m.avg_wait, 0.0);
        assert_eq!(utilization(&trace, &[1, 1], 2).unwrap(), 260.0 / 280.0);
        assert!((increase_rate(140.0, 200.0) + 0.3).abs() < 1e-12);
    }

    #[test]
    fn waiting_counts_in_turnaround_not_slowdown() {
        use EventKind::*;
        let trace = [
            ev(0.0, 0, Start),
            ev(10.0, 0, Finish),
            ev(0.0, 1, Arrive),
            ev(10.0, 1, Start),
            ev(20.0, 1, Finish),
        ];
        let m = compute(&trace, &[10.0, 10.0]).unwrap();
        assert_eq!(m.worst_turnaround, 20.0);
        assert_eq!(m.worst_slowdown, 1.0);
        assert_eq!(m.worst_wait, 10.0);
        assert_eq!(m.makespan, 20.0);
    }

    #[test]
    fn broken_traces_are_refused() {
        use EventKind::*;
        assert_eq!(
            compute(&[ev(0.0, 0, Start)], &[1.0]),
            Err(MetricsError::Missing(0, Finish))
        );
        assert_eq!(
            compute(&[ev(0.0, 0, Start), ev(0.0, 0, Start)], &[1.0]),
            Err(MetricsError::Duplicate(0, Start))
        );
        assert_eq!(
            compute(&[ev(5.0, 0, Start), ev(1.0, 0, Finish)], &[1.0]),
            Err(MetricsError::OutOfOrder(0))
        );
        assert_eq!(
            compute(&[ev(0.0, 3, Start)], &[1.0]),
            Err(MetricsError::UnknownJob(3, 1))
        );
        assert_eq!(compute(&[], &[]), Err(MetricsError::Empty));
    }

    #[test]
    fn suspended_time_leaves_the_slowdown_and_stays_in_the_turnaround() {
        use EventKind::*;
        // Job 0 runs 0-2, suspended 2-5, runs 5-7 (4 s of 4 s solo work);
        // job 1 ends suspended (killed while it was): 1 s of its 3 s.
        let trace = [
            ev(0.0, 0, Arrive),
            ev(0.0, 0, Start),
            ev(2.0, 0, Suspend),
            ev(2.0, 0, Move),
            ev(5.0, 0, Resume),
            ev(7.0, 0, Finish),
            ev(0.0, 1, Arrive),
            ev(0.0, 1, Start),
            ev(1.0, 1, Suspend),
            ev(3.0, 1, Finish),
        ];
        let t = job_times(&trace, 2).unwrap();
        assert_eq!((t[0].suspended, t[0].execution(), t[0].running()), (3.0, 7.0, 4.0));
        assert_eq!(t[1].suspended, 2.0);
        let m = compute(&trace, &[4.0, 1.0]).unwrap();
        assert_eq!(m.worst_turnaround, 7.0);
        assert_eq!((m.avg_slowdown, m.worst_slowdown, m.suspended), (1.0, 1.0, 5.0));
    }

    #[test]
    fn a_resume_of_a_running_job_or_a_second_suspend_is_refused() {
        use EventKind::*;
        let bad = [ev(0.0, 0, Start), ev(1.0, 0, Resume), ev(2.0, 0, Finish)];
        assert_eq!(job_times(&bad, 1), Err(MetricsError::BadSuspension(0, Resume, 1.0, "suspended")));
        let bad = [ev(0.0, 0, Start), ev(1.0, 0, Suspend), ev(1.5, 0, Suspend), ev(2.0, 0, Finish)];
        assert_eq!(job_times(&bad, 1), Err(MetricsError::BadSuspension(0, Suspend, 1.5, "running")));
        let bad = [ev(1.0, 0, Start), ev(0.5, 0, Suspend), ev(2.0, 0, Finish)];
        assert_eq!(job_times(&bad, 1), Err(MetricsError::OutOfOrder(0)));
    }

    #[test]
    fn performance_score_is_best_makespan_over_own() {
        let s = performance_scores(&[200.0, 100.0, 400.0]);
        assert_eq!(s, vec![0.5, 1.0, 0.25]);
    }

    #[test]
    fn trace_csv_round_trips_and_scores_the_same() {
        use crate::trace::{Trace, TraceJob};
        use EventKind::*;
        let job = |i| TraceJob { name: format!("j,\"{i}\""), program: "p".into(), pool: "cpu".into(), node: i, ..TraceJob::bare(i) };
        let events = vec![ev(0.0, 0, Arrive), ev(0.0, 0, Start), ev(0.0, 1, Arrive), ev(0.5, 1, Start), ev(12.25, 0, Finish), ev(20.0, 1, Finish)];
        let text = Trace { jobs: vec![job(0), job(1)], events: events.clone(), estimates: Vec::new() }.to_csv();
        assert!(text.starts_with("time,job,name,program,kind,node,pool,cpus,solo,status,status_value\n0,0,\"j,\"\"0\"\"\",p,arrive,0,cpu,,,,\n"), "{text}");
        let parse = |t: &str| Trace::from_csv(t).map(|t| t.events);
        assert_eq!(parse(&text).unwrap(), events);
        assert_eq!(compute(&events, &[10.0, 10.0]).unwrap().makespan, 20.0);
        assert!(parse("time,job\n").unwrap_err().contains("no `kind` column"));
        assert!(parse("time,job,kind\n1,2,begin\n").unwrap_err().starts_with("line 2: kind `begin`"));
    }
}
