//! The node runner's decision loop: the simulator's protocol with a policy,
//! carried out by an [`Executor`] that owns the clock and the processes.
//!
//! This module reads no clock and starts no process: the executor (real
//! processes in `cosched_measure::node`, or virtual time in tests) says what
//! time it is, starts what the policy decided, and reports which jobs ended
//! when. The loop is the simulator's: arrivals, then decision rounds until
//! the policy returns none, then wait for the next end or arrival. Its output
//! is the same event trace, scored by `model::metrics`.

use std::fmt;

use crate::policy::{Decision, Policy, QueuedJob, RunningJob, View};
use crate::sim::{Platform, SimJob};
use crate::source::SlowdownSource;
use crate::{Event, EventKind, JobId};

/// Why an executor stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecError {
    /// SIGINT or SIGTERM: every job was killed.
    Interrupted(i32),
    /// Something the executor could not carry on from (not a job failing:
    /// a failed job is an ended job).
    Fatal(String),
}

/// What a job's start looked like to the policy's slowdown source.
#[derive(Debug, Clone, PartialEq)]
pub struct StartPlan {
    pub job: JobId,
    pub pool: usize,
    /// Jobs running beside it at its start.
    pub beside: Vec<JobId>,
    /// The source's slowdown of the job beside them, before it started.
    pub predicted: f64,
}

/// Carries out decisions on a node.
pub trait Executor {
    /// Seconds on the run's clock.
    fn now(&mut self) -> f64;
    /// Starts a job; returns its start time. A job that cannot be started
    /// (its program is missing) is reported ended by the next `wait`.
    fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError>;
    /// Blocks until at least one running job ends or the clock reaches
    /// `until`; returns the jobs that ended, each with its end time.
    fn wait(&mut self, until: Option<f64>) -> Result<Vec<(JobId, f64)>, ExecError>;
}

/// A job already finished in an earlier, killed attempt of the same run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Done {
    pub job: JobId,
    pub start: f64,
    pub finish: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    Input(String),
    Decision { time: f64, decision: Decision, why: String },
    Stalled { time: f64, waiting: Vec<JobId> },
    Exec(ExecError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Input(m) => write!(f, "invalid run input: {m}"),
            RunError::Decision { time, decision, why } => {
                write!(f, "at t={time:.3}: policy decision {decision:?} refused: {why}")
            }
            RunError::Stalled { time, waiting } => {
                write!(f, "at t={time:.3}: nothing runs or arrives but jobs {waiting:?} wait; the policy stalled")
            }
            RunError::Exec(ExecError::Interrupted(s)) => write!(f, "interrupted by signal {s}"),
            RunError::Exec(ExecError::Fatal(m)) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<ExecError> for RunError {
    fn from(e: ExecError) -> RunError {
        RunError::Exec(e)
    }
}

struct Active {
    id: JobId,
    start: f64,
}

/// Runs `jobs` under `policy` through `exec`. `jobs[i].solo` is the solo
/// time estimate that progress (elapsed / solo, below 1 while running) is
/// reckoned from. Jobs in `done` are not run again; their events open the
/// trace. A job's `Arrive` is at its arrival time even when the loop only
/// notices it later (a resumed run continues the clock of the killed one).
pub fn run_node(
    platform: &Platform,
    jobs: &[SimJob],
    source: &dyn SlowdownSource,
    policy: &mut dyn Policy,
    exec: &mut dyn Executor,
    done: &[Done],
) -> Result<Vec<Event>, RunError> {
    check(platform, jobs)?;
    let mut trace = Vec::with_capacity(jobs.len() * 3);
    let is_done = |id: JobId| done.iter().any(|d| d.job == id);
    for d in done {
        if d.job >= jobs.len() {
            return Err(RunError::Input(format!("finished job {} is not in the workload", d.job)));
        }
        trace.push(Event { time: jobs[d.job].arrival.min(d.start), job: d.job, kind: EventKind::Arrive });
        trace.push(Event { time: d.start, job: d.job, kind: EventKind::Start });
        trace.push(Event { time: d.finish, job: d.job, kind: EventKind::Finish });
    }
    let mut arrivals: Vec<JobId> = (0..jobs.len()).filter(|&i| !is_done(i)).collect();
    arrivals.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    let mut next_arrival = 0;
    let mut queue: Vec<JobId> = Vec::new();
    let mut running: Vec<Active> = Vec::new();

    loop {
        let now = exec.now();
        while next_arrival < arrivals.len() && jobs[arrivals[next_arrival]].arrival <= now {
            let id = arrivals[next_arrival];
            trace.push(Event { time: jobs[id].arrival, job: id, kind: EventKind::Arrive });
            queue.push(id);
            next_arrival += 1;
        }
        loop {
            let now = exec.now();
            let q: Vec<QueuedJob> = queue
                .iter()
                .map(|&id| {
                    let j = &jobs[id];
                    QueuedJob { id, name: &j.name, pool: j.pool, cores: j.cores, solo: j.solo, program: &j.program }
                })
                .collect();
            let r: Vec<RunningJob> = running
                .iter()
                .map(|a| {
                    let j = &jobs[a.id];
                    // A running job is never done in the policy's eyes, even
                    // when it overruns its estimate.
                    let progress = ((now - a.start) / j.solo).clamp(0.0, 0.99);
                    RunningJob { id: a.id, pool: j.pool, cores: j.cores, progress, program: &j.program }
                })
                .collect();
            let view = View { time: now, queue: &q, running: &r, pools: &platform.pools, slowdown: source };
            let decisions = policy.decide(&view);
            if decisions.is_empty() {
                break;
            }
            for d in decisions {
                let Decision::Start { job, pool } = d;
                let refuse = |why: String| Err(RunError::Decision { time: now, decision: d, why });
                let Some(pos) = queue.iter().position(|&q| q == job) else {
                    return refuse(format!("job {job} is not waiting"));
                };
                let j = &jobs[job];
                if pool != j.pool {
                    return refuse(format!("job {job} belongs to pool {}, not {pool}", j.pool));
                }
                let used: u32 = running.iter().filter(|a| jobs[a.id].pool == pool).map(|a| jobs[a.id].cores).sum();
                if used + j.cores > platform.pools[pool].cores {
                    return refuse(format!(
                        "job {job} needs {} cores; pool {pool} has {} free",
                        j.cores,
                        platform.pools[pool].cores - used
                    ));
                }
                let beside: Vec<JobId> = running.iter().map(|a| a.id).collect();
                let predicted = source.slowdown(job, &beside);
                queue.remove(pos);
                let start = exec.start(&StartPlan { job, pool, beside, predicted })?;
                running.push(Active { id: job, start });
                trace.push(Event { time: start, job, kind: EventKind::Start });
            }
        }

        if running.is_empty() {
            if next_arrival >= arrivals.len() {
                if queue.is_empty() {
                    return Ok(trace);
                }
                return Err(RunError::Stalled { time: exec.now(), waiting: queue });
            }
        }
        let until = arrivals.get(next_arrival).map(|&a| jobs[a].arrival);
        for (id, t) in exec.wait(until)? {
            if let Some(k) = running.iter().position(|a| a.id == id) {
                running.remove(k);
                trace.push(Event { time: t, job: id, kind: EventKind::Finish });
            }
        }
    }
}

fn check(platform: &Platform, jobs: &[SimJob]) -> Result<(), RunError> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(pool) = platform.pools.get(j.pool) else {
            return Err(RunError::Input(format!("job {i} `{}` targets pool {} of {}", j.name, j.pool, platform.pools.len())));
        };
        if j.cores == 0 || j.cores > pool.cores {
            return Err(RunError::Input(format!(
                "job {i} `{}` needs {} cores; pool `{}` has {}",
                j.name, j.cores, pool.name, pool.cores
            )));
        }
        if !(j.arrival.is_finite() && j.arrival >= 0.0 && j.solo.is_finite() && j.solo > 0.0) {
            return Err(RunError::Input(format!("job {i} `{}`: arrival or solo estimate is not a proper number", j.name)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PoolInfo;
    use crate::registry::{policy_by_name, Params};
    use crate::sim::simulate;
    use crate::source::PairTable;
    use cosched_model::workload::PoolKind;
    use proptest::prelude::*;

    /// Virtual time with the simulator's progress-rate model, stepped from
    /// the outside: a second, independent executor of the same decisions.
    struct Virtual<'a> {
        jobs: &'a [SimJob],
        truth: &'a dyn SlowdownSource,
        now: f64,
        /// (job, solo-seconds left)
        running: Vec<(JobId, f64)>,
        starts: Vec<StartPlan>,
    }

    impl Executor for Virtual<'_> {
        fn now(&mut self) -> f64 {
            self.now
        }
        fn start(&mut self, plan: &StartPlan) -> Result<f64, ExecError> {
            self.running.push((plan.job, self.jobs[plan.job].solo));
            self.starts.push(plan.clone());
            Ok(self.now)
        }
        fn wait(&mut self, until: Option<f64>) -> Result<Vec<(JobId, f64)>, ExecError> {
            let ids: Vec<JobId> = self.running.iter().map(|r| r.0).collect();
            let rates: Vec<f64> = ids
                .iter()
                .map(|&id| {
                    let beside: Vec<JobId> = ids.iter().copied().filter(|&b| b != id).collect();
                    1.0 / self.truth.slowdown(id, &beside)
                })
                .collect();
            let dt_end = self.running.iter().zip(&rates).map(|(r, rate)| r.1 / rate).fold(f64::INFINITY, f64::min);
            let dt = until.map_or(dt_end, |u| dt_end.min(u - self.now));
            self.now += dt;
            let mut ended = Vec::new();
            for ((id, left), rate) in self.running.iter_mut().zip(&rates) {
                *left -= dt * rate;
                if *left <= self.jobs[*id].solo * 1e-9 {
                    ended.push((*id, self.now));
                }
            }
            self.running.retain(|r| !ended.iter().any(|e| e.0 == r.0));
            Ok(ended)
        }
    }

    fn platform(cores: u32) -> Platform {
        Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }] }
    }

    fn job(name: &str, arrival: f64, solo: f64, cores: u32) -> SimJob {
        SimJob { name: name.into(), arrival, solo, pool: 0, cores, program: name.into() }
    }

    #[test]
    fn two_jobs_by_hand_with_the_prediction_made_before_each_start() {
        let jobs = [job("a", 0.0, 10.0, 1), job("b", 2.0, 10.0, 1)];
        let truth = PairTable::new(vec![vec![1.0, 1.5], vec![2.0, 1.0]]).unwrap();
        let mut policy = policy_by_name("noplan", &Params::new()).unwrap();
        let mut ex = Virtual { jobs: &jobs, truth: &truth, now: 0.0, running: vec![], starts: vec![] };
        let trace = run_node(&platform(2), &jobs, &truth, policy.as_mut(), &mut ex, &[]).unwrap();
        // a alone 0-2 (2 s of work), then both: a at 1/1.5, b at 1/2.
        // a's 8 s left take 12 s: ends at 14; b did 6 of 10, then 4 alone: 18.
        let m = cosched_model::metrics::compute(&trace, &[10.0, 10.0]).unwrap();
        assert!((m.makespan - 18.0).abs() < 1e-9, "{trace:?}");
        assert_eq!(ex.starts[0], StartPlan { job: 0, pool: 0, beside: vec![], predicted: 1.0 });
        assert_eq!(ex.starts[1], StartPlan { job: 1, pool: 0, beside: vec![0], predicted: 2.0 });
    }

    #[test]
    fn finished_jobs_of_a_killed_attempt_are_not_run_again() {
        let jobs = [job("a", 0.0, 4.0, 2), job("b", 0.0, 3.0, 2)];
        let truth = PairTable::new(vec![vec![1.0; 2]; 2]).unwrap();
        let mut policy = policy_by_name("exclusive", &Params::new()).unwrap();
        let mut ex = Virtual { jobs: &jobs, truth: &truth, now: 5.0, running: vec![], starts: vec![] };
        let done = [Done { job: 0, start: 0.0, finish: 4.0 }];
        let trace = run_node(&platform(2), &jobs, &truth, policy.as_mut(), &mut ex, &done).unwrap();
        assert_eq!(ex.starts.len(), 1);
        assert_eq!(ex.starts[0].job, 1);
        let t = cosched_model::metrics::job_times(&trace, 2).unwrap();
        assert_eq!((t[0].start, t[0].finish, t[1].start, t[1].finish), (0.0, 4.0, 5.0, 8.0));
    }

    #[test]
    fn a_policy_that_never_starts_anything_is_reported_stalled() {
        struct Never;
        impl Policy for Never {
            fn decide(&mut self, _: &View) -> Vec<Decision> {
                Vec::new()
            }
        }
        let jobs = [job("a", 0.0, 1.0, 1)];
        let truth = PairTable::new(vec![vec![1.0]]).unwrap();
        let mut ex = Virtual { jobs: &jobs, truth: &truth, now: 0.0, running: vec![], starts: vec![] };
        let e = run_node(&platform(1), &jobs, &truth, &mut Never, &mut ex, &[]).unwrap_err();
        assert_eq!(e, RunError::Stalled { time: 0.0, waiting: vec![0] });
    }

    proptest! {
        /// Driven in virtual time, the runner's loop makes exactly the
        /// simulator's schedule: one protocol, two engines.
        #[test]
        fn in_virtual_time_the_runner_matches_the_simulator(
            spec in prop::collection::vec((0u8..4, 1u8..20, 1u32..3), 1..7),
            cells in prop::collection::vec(1.0f64..3.0, 49),
            policy in prop::sample::select(vec!["exclusive", "noplan", "no-twins", "conflict-aware"]),
        ) {
            let jobs: Vec<SimJob> = spec.iter().enumerate()
                .map(|(i, &(a, s, c))| SimJob { name: format!("j{i}"), arrival: a as f64, solo: s as f64, pool: 0, cores: c, program: format!("p{}", i % 3) })
                .collect();
            let n = jobs.len();
            let m: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { cells[i * 7 + j] }).collect()).collect();
            let truth = PairTable::new(m).unwrap();
            let mut params = Params::new();
            if policy == "conflict-aware" {
                params.insert("threshold".into(), "100".into());
            }
            let sim = simulate(&platform(2), &jobs, &truth, policy_by_name(policy, &params).unwrap().as_mut()).unwrap();
            let mut ex = Virtual { jobs: &jobs, truth: &truth, now: 0.0, running: vec![], starts: vec![] };
            let real = run_node(&platform(2), &jobs, &truth, policy_by_name(policy, &params).unwrap().as_mut(), &mut ex, &[]).unwrap();
            let a = cosched_model::metrics::job_times(&sim, n).unwrap();
            let b = cosched_model::metrics::job_times(&real, n).unwrap();
            for (x, y) in a.iter().zip(&b) {
                prop_assert!((x.start - y.start).abs() < 1e-6 && (x.finish - y.finish).abs() < 1e-6, "{a:?} vs {b:?}");
            }
        }
    }
}
