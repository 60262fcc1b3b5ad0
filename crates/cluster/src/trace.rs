//! The cluster simulator's schedule as the one trace of every engine
//! (`model::trace`), which its jobs.csv and SWF writers ([`crate::output`])
//! and its figures ([`crate::metrics`]) read, so a cluster schedule is read
//! by the code that reads a node's runs. Each job: the log's job number as
//! its name, its program, the node runs it held (`nodes`, for a job over
//! several), its cores on a shared node (`cpus`), its run time alone as its
//! solo time, status ok; its events: arrive at submission, start, finish.

use cosched_model::metrics::{job_times, Event, EventKind, JobTimes, MetricsError};
use cosched_model::run::JobStatus;
use cosched_model::trace::{Trace, TraceJob};

use crate::engine::Schedule;
use crate::workload::ClusterJob;

impl Schedule {
    /// The schedule of `jobs` as a trace, programs named by `programs`;
    /// events in time order (a job's own in arrive, start, finish order).
    pub fn trace(&self, jobs: &[ClusterJob], programs: &[String]) -> Trace {
        let mut events = Vec::with_capacity(jobs.len() * 3);
        let traced = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let a = &self.alloc[i];
                let runs = a.nodes.runs();
                for (time, kind) in [(j.submit, EventKind::Arrive), (self.start[i], EventKind::Start), (self.finish[i], EventKind::Finish)] {
                    events.push(Event { time, job: i, kind });
                }
                TraceJob {
                    job: i,
                    name: j.record.job.to_string(),
                    program: programs[j.program].clone(),
                    pool: String::new(),
                    node: runs.first().map_or(0, |r| r.0 as usize),
                    nodes: if a.nodes.len() > 1 { runs.to_vec() } else { Vec::new() },
                    cpus: a.cores.clone(),
                    solo: Some(j.run),
                    status: Some(JobStatus::Ok),
                    variant: None,
                }
            })
            .collect();
        // A stable sort: equal times keep the order pushed.
        events.sort_by(|a, b| a.time.total_cmp(&b.time));
        Trace { jobs: traced, events, estimates: Vec::new() }
    }
}

/// Each of the trace's `n` jobs' arrive, start and finish: the model's one
/// reading of a trace's events, checked (every job started and finished once, in order).
pub fn times(t: &Trace, n: usize) -> Result<Vec<JobTimes>, MetricsError> {
    job_times(&t.events, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Alloc, Nodes};
    use crate::swf::parse;
    use crate::workload::{jobs, Keep, Mapping};

    #[test]
    fn a_schedule_traces_every_job_with_its_node_runs_cores_and_times_and_scores_as_the_model_does() {
        let s = parse("5 0 -1 10 1 -1 -1 1 20 -1 1 3 1 2 -1 -1 -1 -1\n6 2 -1 8 24 -1 -1 24 -1 -1 1 3 1 2 -1 -1 -1 -1\n", "t").unwrap();
        // Job 6 spans three nodes of 8 cores, taken as 4, 5 and 0.
        let (j, _) = jobs(&s, "t", Keep::default(), 32, Mapping::Random, 1, 0).unwrap();
        let sched = Schedule {
            start: vec![1.0, 3.0],
            finish: vec![13.0, 11.0],
            alloc: vec![Alloc { nodes: Nodes::one(2), cores: vec![1] }, Alloc { nodes: [4u32, 5, 0].into_iter().collect(), cores: vec![] }],
            shared: vec![true, false],
        };
        let t = sched.trace(&j, &["triad".to_string()]);
        assert_eq!((t.jobs[0].name.as_str(), t.jobs[0].program.as_str(), t.jobs[0].node), ("5", "triad", 2));
        assert_eq!((t.jobs[0].nodes.clone(), t.jobs[0].cpus.clone(), t.jobs[0].solo), (vec![], vec![1], Some(10.0)));
        assert_eq!((t.jobs[1].node, t.jobs[1].nodes.clone(), t.jobs[1].cpus.clone()), (4, vec![(4, 6), (0, 1)], vec![]));
        let kinds: Vec<(f64, usize)> = t.events.iter().map(|e| (e.time, e.job)).collect();
        assert_eq!(kinds, [(0.0, 0), (1.0, 0), (2.0, 1), (3.0, 1), (11.0, 1), (13.0, 0)], "time order");
        let tm = times(&t, 2).unwrap();
        assert_eq!((tm[1].arrive, tm[1].start, tm[1].finish), (2.0, 3.0, 11.0));
        let m = t.metrics().unwrap();
        assert_eq!(m.makespan, 13.0);
        assert_eq!(Trace::from_csv(&t.to_csv()).unwrap(), t, "the one CSV codec carries the node runs");
    }
}
