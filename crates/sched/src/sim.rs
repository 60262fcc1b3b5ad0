//! Discrete-event simulation of one node in virtual time.
//!
//! Progress-rate model: a running job advances at 1 / slowdown(current
//! co-runners) solo-seconds per second, so its rate changes whenever a
//! co-runner starts or finishes, not only at its own start.

use std::fmt;

use crate::policy::{Decision, Policy, PoolInfo, QueuedJob, RunningJob, View};
use crate::source::SlowdownSource;
use crate::{Event, EventKind, JobId};

/// The node: its pools.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub pools: Vec<PoolInfo>,
}

/// One job of a simulated workload; its [`JobId`] is its index.
#[derive(Debug, Clone, PartialEq)]
pub struct SimJob {
    pub name: String,
    /// Seconds from the simulation's start.
    pub arrival: f64,
    /// Run time alone, seconds.
    pub solo: f64,
    /// Index into [`Platform::pools`].
    pub pool: usize,
    pub cores: u32,
    pub program: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The inputs cannot be simulated (bad pool, cores, times).
    Input(String),
    /// The policy asked for something the engine cannot do.
    Decision {
        time: f64,
        decision: Decision,
        why: String,
    },
    /// Jobs wait, nothing runs and nothing will arrive: the policy deadlocked.
    Stalled { time: f64, waiting: Vec<JobId> },
    /// The slowdown source gave a value that is not positive and finite.
    Slowdown {
        job: JobId,
        beside: Vec<JobId>,
        value: f64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Input(m) => write!(f, "invalid simulation input: {m}"),
            SimError::Decision {
                time,
                decision,
                why,
            } => {
                write!(
                    f,
                    "at t={time}: policy decision {decision:?} refused: {why}"
                )
            }
            SimError::Stalled { time, waiting } => {
                write!(f, "at t={time}: nothing runs or arrives but jobs {waiting:?} wait; the policy stalled")
            }
            SimError::Slowdown { job, beside, value } => {
                write!(f, "slowdown of job {job} beside {beside:?} is {value}, not a positive finite number")
            }
        }
    }
}

impl std::error::Error for SimError {}

struct Run {
    id: JobId,
    /// Solo-seconds of work left.
    left: f64,
}

fn check(platform: &Platform, jobs: &[SimJob]) -> Result<(), SimError> {
    let bad = |m: String| Err(SimError::Input(m));
    for (i, j) in jobs.iter().enumerate() {
        let Some(pool) = platform.pools.get(j.pool) else {
            return bad(format!(
                "job {i} `{}` targets pool {} of {}",
                j.name,
                j.pool,
                platform.pools.len()
            ));
        };
        if j.cores == 0 || j.cores > pool.cores {
            return bad(format!(
                "job {i} `{}` needs {} cores; pool `{}` has {}",
                j.name, j.cores, pool.name, pool.cores
            ));
        }
        if !(j.arrival.is_finite() && j.arrival >= 0.0) {
            return bad(format!(
                "job {i} `{}`: arrival {} is not a non-negative number",
                j.name, j.arrival
            ));
        }
        if !(j.solo.is_finite() && j.solo > 0.0) {
            return bad(format!(
                "job {i} `{}`: solo time {} is not a positive number",
                j.name, j.solo
            ));
        }
    }
    Ok(())
}

/// Runs `jobs` on `platform` under `policy`, with `truth` giving the slowdowns
/// that drive progress and that the policy sees, and returns the trace.
/// Events at one instant come finishes first, then arrivals, then starts, so a
/// pool freed at t can be refilled at t.
pub fn simulate(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    policy: &mut dyn Policy,
) -> Result<Vec<Event>, SimError> {
    simulate_predicted(platform, jobs, truth, truth, policy)
}

/// As [`simulate`], but the policy sees `predicted` while `truth` drives
/// progress, so the cost of a predictor's mistakes can be simulated.
pub fn simulate_predicted(
    platform: &Platform,
    jobs: &[SimJob],
    truth: &dyn SlowdownSource,
    predicted: &dyn SlowdownSource,
    policy: &mut dyn Policy,
) -> Result<Vec<Event>, SimError> {
    check(platform, jobs)?;
    let mut arrivals: Vec<JobId> = (0..jobs.len()).collect();
    // Stable sort: equal arrivals keep workload order, which is queue order.
    arrivals.sort_by(|&a, &b| jobs[a].arrival.total_cmp(&jobs[b].arrival));
    let mut next_arrival = 0;
    let mut queue: Vec<JobId> = Vec::new();
    let mut running: Vec<Run> = Vec::new();
    let mut trace = Vec::with_capacity(jobs.len() * 3);
    let mut now = 0.0_f64;
    let mut rates: Vec<f64> = Vec::new();

    loop {
        while next_arrival < arrivals.len() && jobs[arrivals[next_arrival]].arrival <= now {
            let id = arrivals[next_arrival];
            trace.push(Event {
                time: now,
                job: id,
                kind: EventKind::Arrive,
            });
            queue.push(id);
            next_arrival += 1;
        }

        // Each round sees the starts of the previous one; a round that starts
        // nothing ends the instant. A round starts at least one of the
        // finitely many queued jobs, so this ends.
        loop {
            let q: Vec<QueuedJob> = queue
                .iter()
                .map(|&id| {
                    let j = &jobs[id];
                    QueuedJob {
                        id,
                        name: &j.name,
                        pool: j.pool,
                        cores: j.cores,
                        solo: j.solo,
                        program: &j.program,
                    }
                })
                .collect();
            let r: Vec<RunningJob> = running
                .iter()
                .map(|run| {
                    let j = &jobs[run.id];
                    let progress = (1.0 - run.left / j.solo).clamp(0.0, 1.0);
                    RunningJob {
                        id: run.id,
                        pool: j.pool,
                        cores: j.cores,
                        progress,
                        program: &j.program,
                    }
                })
                .collect();
            let view = View {
                time: now,
                queue: &q,
                running: &r,
                pools: &platform.pools,
                slowdown: predicted,
            };
            let decisions = policy.decide(&view);
            if decisions.is_empty() {
                break;
            }
            for d in decisions {
                let Decision::Start { job, pool } = d;
                let refuse = |why: String| {
                    Err(SimError::Decision {
                        time: now,
                        decision: d,
                        why,
                    })
                };
                let Some(pos) = queue.iter().position(|&q| q == job) else {
                    return refuse(format!("job {job} is not waiting"));
                };
                let j = &jobs[job];
                if pool != j.pool {
                    return refuse(format!("job {job} belongs to pool {}, not {pool}", j.pool));
                }
                let used: u32 = running
                    .iter()
                    .filter(|r| jobs[r.id].pool == pool)
                    .map(|r| jobs[r.id].cores)
                    .sum();
                if used + j.cores > platform.pools[pool].cores {
                    return refuse(format!(
                        "job {job} needs {} cores; pool {pool} has {} free",
                        j.cores,
                        platform.pools[pool].cores - used
                    ));
                }
                queue.remove(pos);
                running.push(Run {
                    id: job,
                    left: j.solo,
                });
                trace.push(Event {
                    time: now,
                    job,
                    kind: EventKind::Start,
                });
            }
        }

        if running.is_empty() {
            if next_arrival < arrivals.len() {
                now = jobs[arrivals[next_arrival]].arrival;
                continue;
            }
            if queue.is_empty() {
                return Ok(trace);
            }
            return Err(SimError::Stalled {
                time: now,
                waiting: queue,
            });
        }

        let ids: Vec<JobId> = running.iter().map(|r| r.id).collect();
        rates.clear();
        for (i, run) in running.iter().enumerate() {
            let beside: Vec<JobId> = ids
                .iter()
                .enumerate()
                .filter(|&(k, _)| k != i)
                .map(|(_, &id)| id)
                .collect();
            let s = truth.slowdown(run.id, &beside);
            if !(s.is_finite() && s > 0.0) {
                return Err(SimError::Slowdown {
                    job: run.id,
                    beside,
                    value: s,
                });
            }
            rates.push(1.0 / s);
        }
        let (first, dt_finish) = running
            .iter()
            .zip(&rates)
            .map(|(r, rate)| r.left / rate)
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("something runs");
        let dt_arrival = arrivals
            .get(next_arrival)
            .map_or(f64::INFINITY, |&a| jobs[a].arrival - now);
        let dt = dt_finish.min(dt_arrival);
        let finishing_now = dt_finish <= dt_arrival;
        now += dt;
        for (i, (run, rate)) in running.iter_mut().zip(&rates).enumerate() {
            run.left = if finishing_now && i == first {
                0.0
            } else {
                run.left - dt * rate
            };
        }
        // Float steps leave crumbs: a job within a relative 1e-9 of done is
        // done now rather than at a spurious event a nanosecond later.
        let mut k = 0;
        while k < running.len() {
            if running[k].left <= jobs[running[k].id].solo * 1e-9 {
                trace.push(Event {
                    time: now,
                    job: running[k].id,
                    kind: EventKind::Finish,
                });
                running.remove(k);
            } else {
                k += 1;
            }
        }
    }
}
