//! The Dynamic Job Scheduler Benchmark's figures (djsb, the ParaStation paper): one
//! long "simulation" session and short "analysis" sessions that arrive
//! while it runs, scored from a trace of either engine.
//!
//! Roles: the session that arrives first (the lowest index on ties) is the
//! simulation; every other one is an analysis session.
//!
//! Per session: wait (start - arrival), execution (finish - start, time
//! suspended included, as the djsb times an application from outside),
//! response (wait + execution), the time it was suspended and the time it
//! ran, and its real slowdown, execution / solo.
//!
//! The expected slowdown is the one of fair processor sharing, the
//! "theoretical assumption" of a session that shares cores: the analysis
//! threads land on cores where the simulation runs `t_s / P` threads
//! (t_s its threads, P the pool's cores), so an analysis session overlapping
//! the simulation expects `1 + t_s / P` (2 when the simulation fills the
//! pool); the simulation gives up the core-seconds the analyses use, so it
//! expects `1 + sum_i A_i k_i / (S min(P, t_s))` over the analyses that
//! arrive before it ends (A_i, k_i: an analysis' solo time and threads; S
//! the simulation's solo time). A session that overlaps nothing expects 1.
//!
//! Efficiency E = expected / real slowdown: 1 means exactly the fair share,
//! above 1 more than its share (a serialized session), below 1 less. The
//! analysis sessions' E is the ratio of sums, sum e_i A_i / sum execution_i.
//! Wait coefficient W = (static wait + C) / (mean analysis wait + C), C the
//! normalisation constant (seconds; the djsb's "magic" constant, a
//! parameter here) and the static wait that of the reference where each
//! session runs alone (0 by default). Dynamicity ratio D = E_sim * E_ana *
//! W_ana. The ParaStation paper's table (160 cores, 4 nodes, no threads): wait
//! 1.04 / 2.0 / 0.55 / 1.15, surpass 0.86 / 2.0 / 1.0 / 1.72, overbook
//! 0.87 / 1.23 / 1.0 / 1.07, sidestep 0.87 / 1.61 / 1.0 / 1.41 (E_sim, E_ana,
//! W, D).

use serde::{Deserialize, Serialize};

use crate::metrics::{JobId, JobTimes};

/// The parameters of the scoring.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DjsbParams {
    /// C of the wait coefficient, seconds.
    pub normalisation: f64,
    /// Wait of an analysis session in the static reference, seconds.
    pub static_wait: f64,
}

impl Default for DjsbParams {
    fn default() -> Self {
        DjsbParams { normalisation: 10.0, static_wait: 0.0 }
    }
}

/// What the scoring needs of a session besides its times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DjsbJob {
    /// Run time alone, seconds.
    pub solo: f64,
    /// Threads (the cores it was started for).
    pub threads: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Simulation,
    Analysis,
}

/// One session's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub job: JobId,
    pub role: Role,
    pub wait: f64,
    pub execution: f64,
    pub response: f64,
    pub suspended: f64,
    /// Execution without the time suspended.
    pub running: f64,
    pub expected_slowdown: f64,
    pub real_slowdown: f64,
    /// expected / real slowdown.
    pub efficiency: f64,
}

/// The benchmark's figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Djsb {
    pub sessions: Vec<Session>,
    pub e_simulation: f64,
    pub e_analysis: f64,
    pub w_analysis: f64,
    pub dynamicity: f64,
    pub params: DjsbParams,
}

/// Scores one run: `times[j]` from the trace (`metrics::job_times`),
/// `jobs[j]` the session's solo time and threads, `pool_cores` the cores
/// of the pool the sessions share.
pub fn djsb(times: &[JobTimes], jobs: &[DjsbJob], pool_cores: u32, p: &DjsbParams) -> Result<Djsb, String> {
    if times.len() != jobs.len() {
        return Err(format!("{} sessions timed but {} described", times.len(), jobs.len()));
    }
    if times.len() < 2 {
        return Err("the djsb needs a simulation and at least one analysis session".into());
    }
    if !(p.normalisation.is_finite() && p.normalisation > 0.0) {
        return Err(format!("normalisation constant {} is not a positive number of seconds", p.normalisation));
    }
    if !(p.static_wait.is_finite() && p.static_wait >= 0.0) {
        return Err(format!("static wait {} is not a non-negative number of seconds", p.static_wait));
    }
    if pool_cores == 0 {
        return Err("a pool of 0 cores".into());
    }
    for (j, d) in jobs.iter().enumerate() {
        if !(d.solo.is_finite() && d.solo > 0.0) || d.threads == 0 {
            return Err(format!("session {j}: solo time {} s and {} threads", d.solo, d.threads));
        }
    }
    let sim = (0..times.len()).min_by(|&a, &b| times[a].arrive.total_cmp(&times[b].arrive)).expect("two sessions");
    let (s, ts) = (jobs[sim].solo, jobs[sim].threads);
    let p_cores = pool_cores as f64;
    let overlaps = |j: usize| times[j].arrive < times[sim].finish;
    let ana: Vec<usize> = (0..times.len()).filter(|&j| j != sim).collect();
    let expected_ana = 1.0 + (ts.min(pool_cores) as f64) / p_cores;
    let lost: f64 = ana.iter().filter(|&&j| overlaps(j)).map(|&j| jobs[j].solo * jobs[j].threads as f64).sum();
    let expected_sim = 1.0 + lost / (s * ts.min(pool_cores) as f64);
    let sessions: Vec<Session> = (0..times.len())
        .map(|j| {
            let t = &times[j];
            let expected = if j == sim {
                expected_sim
            } else if overlaps(j) {
                expected_ana
            } else {
                1.0
            };
            let real = t.execution() / jobs[j].solo;
            Session {
                job: j,
                role: if j == sim { Role::Simulation } else { Role::Analysis },
                wait: t.start - t.arrive,
                execution: t.execution(),
                response: t.finish - t.arrive,
                suspended: t.suspended,
                running: t.running(),
                expected_slowdown: expected,
                real_slowdown: real,
                efficiency: expected / real,
            }
        })
        .collect();
    let e_simulation = sessions[sim].efficiency;
    let expected_work: f64 = ana.iter().map(|&j| sessions[j].expected_slowdown * jobs[j].solo).sum();
    let executed: f64 = ana.iter().map(|&j| sessions[j].execution).sum();
    let e_analysis = expected_work / executed;
    let mean_wait = ana.iter().map(|&j| sessions[j].wait).sum::<f64>() / ana.len() as f64;
    let w_analysis = (p.static_wait + p.normalisation) / (mean_wait + p.normalisation);
    Ok(Djsb { sessions, e_simulation, e_analysis, w_analysis, dynamicity: e_simulation * e_analysis * w_analysis, params: *p })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(arrive: f64, start: f64, finish: f64, suspended: f64) -> JobTimes {
        JobTimes { arrive, start, finish, suspended }
    }

    const JOBS: [DjsbJob; 2] = [DjsbJob { solo: 10.0, threads: 2 }, DjsbJob { solo: 2.0, threads: 1 }];

    #[test]
    fn surpass_by_hand() {
        // 2 cores; simulation 10 s on both; analysis 2 s on one, arriving
        // at 2: the simulation is suspended 2-4 and ends at 12.
        let d = djsb(&[t(0.0, 0.0, 12.0, 2.0), t(2.0, 2.0, 4.0, 0.0)], &JOBS, 2, &DjsbParams::default()).unwrap();
        // Expected: analysis 1 + 2/2 = 2; simulation 1 + 2*1/(10*2) = 1.1.
        assert_eq!(d.sessions[1].expected_slowdown, 2.0);
        assert!((d.sessions[0].expected_slowdown - 1.1).abs() < 1e-12);
        assert!((d.e_simulation - 1.1 / 1.2).abs() < 1e-12);
        assert_eq!((d.e_analysis, d.w_analysis), (2.0, 1.0));
        assert!((d.dynamicity - 2.2 / 1.2).abs() < 1e-12);
        assert_eq!((d.sessions[0].running, d.sessions[0].response), (10.0, 12.0));
        assert_eq!(d.sessions[0].role, Role::Simulation);
    }

    #[test]
    fn wait_by_hand_with_its_normalisation_constant() {
        // The analysis waits until the simulation ends at 10.
        let p = DjsbParams { normalisation: 8.0, static_wait: 0.0 };
        let d = djsb(&[t(0.0, 0.0, 10.0, 0.0), t(2.0, 10.0, 12.0, 0.0)], &JOBS, 2, &p).unwrap();
        assert!((d.e_simulation - 1.1).abs() < 1e-12);
        assert_eq!(d.e_analysis, 2.0);
        assert_eq!(d.w_analysis, 8.0 / 16.0);
        assert!((d.dynamicity - 1.1 * 2.0 * 0.5).abs() < 1e-12);
        assert_eq!(d.sessions[1].response, 10.0);
    }

    #[test]
    fn fair_sharing_scores_one_and_late_sessions_expect_no_slowdown() {
        // Overbooked on the shared-core model: analysis at 1/2 for 4 s,
        // the simulation at 3/4 meanwhile, ending at 11 (slowdown 1.1).
        let d = djsb(&[t(0.0, 0.0, 11.0, 0.0), t(2.0, 2.0, 6.0, 0.0)], &JOBS, 2, &DjsbParams::default()).unwrap();
        assert!((d.e_simulation - 1.0).abs() < 1e-12 && (d.e_analysis - 1.0).abs() < 1e-12, "{d:?}");
        let late = djsb(&[t(0.0, 0.0, 10.0, 0.0), t(12.0, 12.0, 14.0, 0.0)], &JOBS, 2, &DjsbParams::default()).unwrap();
        assert_eq!((late.sessions[0].expected_slowdown, late.sessions[1].expected_slowdown), (1.0, 1.0));
    }

    #[test]
    fn bad_inputs_are_named() {
        assert!(djsb(&[t(0.0, 0.0, 1.0, 0.0)], &JOBS[..1], 2, &DjsbParams::default()).unwrap_err().contains("at least one analysis"));
        let p = DjsbParams { normalisation: 0.0, static_wait: 0.0 };
        assert!(djsb(&[t(0.0, 0.0, 1.0, 0.0), t(0.0, 0.0, 1.0, 0.0)], &JOBS, 2, &p).unwrap_err().contains("normalisation constant 0"));
    }
}
