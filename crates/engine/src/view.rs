//! The one builder of what a policy sees: every engine (the node runner's
//! `run_node`, the simulator of `cosched-sched`, the cluster simulator, the
//! Slurm engine) turns its queue, its running jobs and its pools into a
//! [`View`] here, so a job reads the same to a policy whichever engine runs
//! it.
//!
//! What differs between engines is only what they know, and that is said
//! by the arguments, not by a convention of each engine: how much of a
//! running job's work is done ([`Work`]: simulators know the work left,
//! real engines the time run, or the job's own progress where they read
//! it), and where it sits ([`Seat`]: its pool, the cores it holds, whether
//! it is suspended; the cluster simulator counts cores without naming
//! them).

use crate::platform::SimJob;
use crate::policy::{PoolInfo, QueuedJob, RunningJob, View};
use crate::slowdown::SlowdownSource;
use crate::JobId;

/// How much of a running job's work is done, as its engine knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    /// Solo-seconds of work left: a simulator advances jobs by their rates
    /// and knows exactly; a job at its end reads progress 1.
    Left(f64),
    /// Seconds it has run, suspensions excluded: a real engine knows only
    /// its clock. Progress is capped below 1, since a job that overruns its
    /// solo estimate is still running and must never look done to a policy
    /// looking ahead past the running jobs' ends.
    Ran(f64),
    /// The share of its work done, as a real engine that reads the job's
    /// progress reckons it now (its last reading, carried forward at the
    /// rate the job is expected to make beside its co-runners). Capped
    /// below 1 like [`Work::Ran`]: the job has not ended.
    Read(f64),
}

/// The most progress a job known only by its time run reads ([`Work::Ran`]).
pub const RAN_PROGRESS_CAP: f64 = 0.99;

impl Work {
    /// The fraction of a job of solo time `solo` that is done.
    #[inline]
    pub fn progress(self, solo: f64) -> f64 {
        match self {
            Work::Left(left) => (1.0 - left / solo).clamp(0.0, 1.0),
            Work::Ran(ran) => (ran / solo).clamp(0.0, RAN_PROGRESS_CAP),
            Work::Read(share) => share.clamp(0.0, RAN_PROGRESS_CAP),
        }
    }
}

/// Where a running job sits on its node, as its engine keeps it: its seat
/// (not `Held`, which read as a job held back from starting, as app's
/// `HeldBack` and Slurm's held jobs are).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seat<'a> {
    pub pool: usize,
    /// The cores it was started for.
    pub cores: u32,
    /// The pool's cores it is placed on; empty from an engine that counts
    /// cores without naming them (the job then holds `cores` of them).
    pub cpus: &'a [u32],
    pub suspended: bool,
    /// Seconds spent suspended so far.
    pub suspended_s: f64,
}

/// A waiting job of a workload (with its variants), under the id the
/// policy knows it by.
#[inline]
pub fn waiting(id: JobId, job: &SimJob) -> QueuedJob<'_> {
    QueuedJob { id, name: &job.name, pool: job.pool, cores: job.cores, solo: job.solo, program: &job.program, variants: &job.variants }
}

/// A waiting job that runs one way (no variants), for engines whose jobs
/// are not a workload's (cluster traces, a Slurm queue).
#[inline]
pub fn waiting_one_way<'a>(id: JobId, name: &'a str, pool: usize, cores: u32, solo: f64, program: &'a str) -> QueuedJob<'a> {
    QueuedJob { id, name, pool, cores, solo, program, variants: &[] }
}

/// A running (or suspended) job of solo time `solo`.
#[inline]
pub fn running<'a>(id: JobId, solo: f64, program: &'a str, seat: Seat<'a>, done: Work) -> RunningJob<'a> {
    RunningJob {
        id,
        pool: seat.pool,
        cores: seat.cores,
        cpus: seat.cpus,
        suspended: seat.suspended,
        suspended_s: seat.suspended_s,
        progress: done.progress(solo),
        solo,
        program,
    }
}

/// The view of one node at `time`: its waiting jobs in queue order (an
/// engine with a look-ahead window passes the oldest only), its running
/// jobs, its pools, and the slowdowns the policy reads.
#[inline]
pub fn view<'a>(
    time: f64,
    queue: &'a [QueuedJob<'a>],
    running: &'a [RunningJob<'a>],
    pools: &'a [PoolInfo],
    slowdown: &'a dyn SlowdownSource,
) -> View<'a> {
    View { time, queue, running, pools, slowdown }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_job_reads_its_work_done_and_a_real_one_never_reads_done() {
        assert_eq!(Work::Left(25.0).progress(100.0), 0.75);
        assert_eq!(Work::Left(0.0).progress(100.0), 1.0);
        assert_eq!(Work::Left(120.0).progress(100.0), 0.0);
        assert_eq!(Work::Ran(50.0).progress(100.0), 0.5);
        // Overrunning its estimate, a real job still has work left.
        assert_eq!(Work::Ran(150.0).progress(100.0), RAN_PROGRESS_CAP);
        assert_eq!(Work::Ran(-1.0).progress(100.0), 0.0);
        // Read progress is the engine's reckoning, never done either.
        assert_eq!(Work::Read(0.25).progress(100.0), 0.25);
        assert_eq!(Work::Read(1.2).progress(100.0), RAN_PROGRESS_CAP);
    }

    #[test]
    fn a_running_job_carries_the_seat_its_engine_keeps() {
        let cpus = [2, 3];
        let seat = Seat { pool: 1, cores: 2, cpus: &cpus, suspended: true, suspended_s: 4.0 };
        let r = running(7, 10.0, "p", seat, Work::Ran(5.0));
        assert_eq!((r.id, r.pool, r.cores, r.cpus, r.suspended, r.suspended_s, r.progress, r.solo, r.program), (7, 1, 2, &cpus[..], true, 4.0, 0.5, 10.0, "p"));
    }
}
