//! The figures schedulers are judged by, from a schedule's trace (each
//! job's [`JobTimes`], the model's one reading of a trace's events:
//! [`crate::trace::times`]) and which jobs shared a node (the engine's
//! [`Schedule::shared`](crate::engine::Schedule::shared)):
//!
//! - **wait** = start - submit; **response** = finish - submit;
//! - **bounded slowdown** (Feitelson, tau = 10 s) = max(1, response /
//!   max(run, tau)), where `run` is the job's run time *alone* (the trace's):
//!   under exclusive nodes that is the usual definition, and with sharing
//!   the time interference adds counts as waiting does;
//! - **co-location slowdown** = (finish - start) / run: 1 for a job that ran
//!   alone, above 1 for one slowed by its co-runners;
//! - **utilization** = work done / capacity over the span: the sum of
//!   `procs x run` (solo work, so slowed jobs do not inflate it) over
//!   `nodes x cores x (last finish - first submit)`;
//! - **makespan** = last finish - first submit.

use cosched_model::metrics::JobTimes;
use cosched_model::stats::quantile_sorted;
use serde::Serialize;

use crate::workload::ClusterJob;

/// Feitelson's threshold for short jobs in bounded slowdown, seconds.
pub const TAU: f64 = 10.0;

/// A distribution's summary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Dist {
    pub mean: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Dist {
    /// `None` for an empty sample.
    pub fn of(values: &[f64]) -> Option<Dist> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Dist {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            median: quantile_sorted(&v, 0.5),
            p90: quantile_sorted(&v, 0.9),
            p99: quantile_sorted(&v, 0.99),
            max: v[v.len() - 1],
        })
    }
}

/// Every job's figures, by job index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerJob {
    pub wait: Vec<f64>,
    pub response: Vec<f64>,
    pub bsld: Vec<f64>,
    pub slowdown: Vec<f64>,
}

/// The figures of one schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    pub jobs: usize,
    pub wait: Dist,
    pub response: Dist,
    pub bsld: Dist,
    /// Co-location slowdown over all jobs.
    pub slowdown: Dist,
    /// Co-location slowdown over the jobs that shared a node (`None`: none did).
    pub shared_slowdown: Option<Dist>,
    pub shared_jobs: usize,
    pub utilization: f64,
    pub makespan: f64,
}

/// Each job's figures from its times `tm` (by job index).
pub fn per_job(jobs: &[ClusterJob], tm: &[JobTimes]) -> PerJob {
    let mut p = PerJob { wait: Vec::with_capacity(jobs.len()), response: Vec::new(), bsld: Vec::new(), slowdown: Vec::new() };
    for (j, t) in jobs.iter().zip(tm) {
        let response = t.finish - j.submit;
        p.wait.push(t.start - j.submit);
        p.response.push(response);
        p.bsld.push((response / j.run.max(TAU)).max(1.0));
        p.slowdown.push((t.finish - t.start) / j.run);
    }
    p
}

/// The figures of jobs with times `tm`, `shared` saying which shared a
/// node, on `nodes` nodes of `cores` cores; `None` when there are no jobs.
pub fn figures(jobs: &[ClusterJob], tm: &[JobTimes], shared: &[bool], nodes: usize, cores: u32) -> Option<Figures> {
    let p = per_job(jobs, tm);
    let first = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    let last = tm.iter().map(|t| t.finish).fold(f64::NEG_INFINITY, f64::max);
    let makespan = last - first;
    let work: f64 = jobs.iter().map(|j| j.procs as f64 * j.run).sum();
    let shared: Vec<f64> = p.slowdown.iter().zip(shared).filter(|(_, &sh)| sh).map(|(&v, _)| v).collect();
    Some(Figures {
        jobs: jobs.len(),
        wait: Dist::of(&p.wait)?,
        response: Dist::of(&p.response)?,
        bsld: Dist::of(&p.bsld)?,
        slowdown: Dist::of(&p.slowdown)?,
        shared_slowdown: Dist::of(&shared),
        shared_jobs: shared.len(),
        utilization: if makespan > 0.0 { work / (nodes as f64 * cores as f64 * makespan) } else { 0.0 },
        makespan,
    })
}

/// An empirical CDF thinned to at most `points` steps: (value, fraction of
/// jobs at or below it), enough to draw without a point per job.
pub fn cdf(values: &[f64], points: usize) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 || points == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(points).max(1);
    let mut out: Vec<(f64, f64)> = (0..n).step_by(step).map(|i| (v[i], (i + 1) as f64 / n as f64)).collect();
    if out.last().is_some_and(|&(x, f)| x != v[n - 1] || f != 1.0) {
        out.push((v[n - 1], 1.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Alloc, Nodes, Schedule};
    use crate::trace::times;
    use crate::swf::parse;
    use crate::workload::{jobs, Keep, Mapping};

    #[test]
    fn hand_computed_figures_of_two_jobs() {
        // Job A: submit 0, run 5 on 2 procs; job B: submit 10, run 100 on 1 proc.
        let s = parse("1 0 -1 5 2 -1 -1 -1 -1 -1 1 1 1 1 -1 -1 -1 -1\n2 10 -1 100 1 -1 -1 -1 -1 -1 1 1 1 1 -1 -1 -1 -1\n", "t").unwrap();
        let (j, _) = jobs(&s, "t", Keep::default(), 2, Mapping::Random, 1, 0).unwrap();
        let sched = Schedule {
            start: vec![0.0, 20.0],
            finish: vec![5.0, 170.0],
            alloc: vec![Alloc { nodes: Nodes::one(0), cores: vec![] }; 2],
            shared: vec![false, true],
        };
        let tm = times(&sched.trace(&j, &["p".to_string()]), 2).unwrap();
        let p = per_job(&j, &tm);
        assert_eq!(p.wait, vec![0.0, 10.0]);
        assert_eq!(p.response, vec![5.0, 160.0]);
        // A: 5 / max(5, 10) < 1 -> 1; B: 160 / 100.
        assert_eq!(p.bsld, vec![1.0, 1.6]);
        assert_eq!(p.slowdown, vec![1.0, 1.5]);
        let f = figures(&j, &tm, &sched.shared, 1, 2).unwrap();
        assert_eq!(f.makespan, 170.0);
        assert!((f.utilization - (2.0 * 5.0 + 100.0) / (2.0 * 170.0)).abs() < 1e-12);
        assert_eq!((f.shared_jobs, f.shared_slowdown.unwrap().max), (1, 1.5));
        assert_eq!(f.wait.mean, 5.0);
    }

    #[test]
    fn a_cdf_ends_at_the_largest_value_and_one() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let c = cdf(&v, 10);
        assert_eq!(c.first(), Some(&(1.0, 0.001)));
        assert_eq!(c.last(), Some(&(1000.0, 1.0)));
        assert!(c.len() <= 11);
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(cdf(&[], 10), vec![]);
    }
}
