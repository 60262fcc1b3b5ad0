//! The one validation of what engines are given and what policies decide,
//! so the simulator and the node runner accept and refuse the same things.

use std::fmt;

use crate::platform::{Platform, SimJob};
use crate::policy::Decision;
use crate::JobId;

/// Why an engine refuses a policy's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The job is not in the queue: not arrived, already started, or unknown.
    NotWaiting { job: JobId },
    /// The decision names another pool than the job's.
    WrongPool { job: JobId, pool: usize, belongs: usize },
    /// The pool has fewer free cores than the job needs.
    NoRoom { job: JobId, pool: usize, needs: u32, free: u32 },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::NotWaiting { job } => write!(f, "job {job} is not waiting"),
            Refusal::WrongPool { job, pool, belongs } => write!(f, "job {job} belongs to pool {belongs}, not {pool}"),
            Refusal::NoRoom { job, pool, needs, free } => {
                write!(f, "job {job} needs {needs} cores; pool {pool} has {free} free")
            }
        }
    }
}

/// Checks a start decision against the node it applies to: `waiting` says
/// whether a job is in the queue, `used[p]` is the cores running jobs of
/// the node hold in pool p. It allocates nothing, since the simulator calls
/// it for every start of 100,000-job workloads.
#[inline]
pub fn check_start(
    decision: Decision,
    jobs: &[SimJob],
    waiting: impl FnOnce(JobId) -> bool,
    used: &[u32],
    platform: &Platform,
) -> Result<(), Refusal> {
    let Decision::Start { job, pool } = decision;
    if job >= jobs.len() || !waiting(job) {
        return Err(Refusal::NotWaiting { job });
    }
    let j = &jobs[job];
    if pool != j.pool {
        return Err(Refusal::WrongPool { job, pool, belongs: j.pool });
    }
    let capacity = platform.pools[pool].cores;
    let free = capacity.saturating_sub(used[pool]);
    if j.cores > free {
        return Err(Refusal::NoRoom { job, pool, needs: j.cores, free });
    }
    Ok(())
}

/// Checks that every job targets a pool of the platform that can hold it
/// and has proper times; the message names the job.
pub fn check_jobs(platform: &Platform, jobs: &[SimJob]) -> Result<(), String> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(pool) = platform.pools.get(j.pool) else {
            return Err(format!("job {i} `{}` targets pool {} of {}", j.name, j.pool, platform.pools.len()));
        };
        if j.cores == 0 || j.cores > pool.cores {
            return Err(format!("job {i} `{}` needs {} cores; pool `{}` has {}", j.name, j.cores, pool.name, pool.cores));
        }
        if !(j.arrival.is_finite() && j.arrival >= 0.0) {
            return Err(format!("job {i} `{}`: arrival {} is not a non-negative number", j.name, j.arrival));
        }
        if !(j.solo.is_finite() && j.solo > 0.0) {
            return Err(format!("job {i} `{}`: solo time {} is not a positive number", j.name, j.solo));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PoolInfo;
    use cosched_model::workload::PoolKind;

    fn platform() -> Platform {
        Platform {
            pools: vec![
                PoolInfo { name: "host".into(), cores: 4, kind: PoolKind::Cpu },
                PoolInfo { name: "ve".into(), cores: 1, kind: PoolKind::Cpu },
            ],
        }
    }

    fn jobs() -> Vec<SimJob> {
        let job = |name: &str, pool, cores| SimJob { name: name.into(), arrival: 0.0, solo: 1.0, pool, cores, program: name.into() };
        vec![job("a", 0, 2), job("b", 1, 1)]
    }

    fn start(job: JobId, pool: usize) -> Decision {
        Decision::Start { job, pool }
    }

    #[test]
    fn a_waiting_job_on_its_pool_with_room_starts() {
        assert_eq!(check_start(start(0, 0), &jobs(), |_| true, &[2, 0], &platform()), Ok(()));
        assert_eq!(check_start(start(1, 1), &jobs(), |_| true, &[4, 0], &platform()), Ok(()));
    }

    #[test]
    fn a_job_not_in_the_queue_or_unknown_is_not_waiting() {
        let r = check_start(start(0, 0), &jobs(), |j| j != 0, &[0, 0], &platform());
        assert_eq!(r, Err(Refusal::NotWaiting { job: 0 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0 is not waiting");
        assert_eq!(check_start(start(7, 0), &jobs(), |_| true, &[0, 0], &platform()), Err(Refusal::NotWaiting { job: 7 }));
    }

    #[test]
    fn a_job_started_on_another_pool_is_refused() {
        let r = check_start(start(1, 0), &jobs(), |_| true, &[0, 0], &platform());
        assert_eq!(r, Err(Refusal::WrongPool { job: 1, pool: 0, belongs: 1 }));
        assert_eq!(r.unwrap_err().to_string(), "job 1 belongs to pool 1, not 0");
    }

    #[test]
    fn a_job_needing_more_than_the_free_cores_is_refused() {
        let r = check_start(start(0, 0), &jobs(), |_| true, &[3, 0], &platform());
        assert_eq!(r, Err(Refusal::NoRoom { job: 0, pool: 0, needs: 2, free: 1 }));
        assert_eq!(r.unwrap_err().to_string(), "job 0 needs 2 cores; pool 0 has 1 free");
        // An overfull pool (a shared accelerator pool) has no room, not negative room.
        assert_eq!(check_start(start(1, 1), &jobs(), |_| true, &[0, 2], &platform()), Err(Refusal::NoRoom { job: 1, pool: 1, needs: 1, free: 0 }));
    }

    #[test]
    fn jobs_that_no_pool_can_hold_or_with_improper_times_are_named() {
        let mut j = jobs();
        assert_eq!(check_jobs(&platform(), &j), Ok(()));
        j[1].cores = 2;
        assert_eq!(check_jobs(&platform(), &j).unwrap_err(), "job 1 `b` needs 2 cores; pool `ve` has 1");
        j[1].cores = 1;
        j[0].pool = 5;
        assert_eq!(check_jobs(&platform(), &j).unwrap_err(), "job 0 `a` targets pool 5 of 2");
        j[0].pool = 0;
        j[0].solo = f64::NAN;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("solo time NaN is not a positive number"));
        j[0].solo = 1.0;
        j[0].arrival = -1.0;
        assert!(check_jobs(&platform(), &j).unwrap_err().contains("arrival -1 is not a non-negative number"));
    }
}
