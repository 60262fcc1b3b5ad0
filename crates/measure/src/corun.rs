//! Co-running two jobs with constant contention, and pairing solo runs with
//! co-runs so the drift of this shared node cancels out.
//!
//! Method (the SCN paper): both jobs start together; whichever finishes first is
//! re-launched until the other has finished, so each job's first run sees its
//! co-runner for its whole duration. Each repeat measures both solo times and
//! then the co-run, so a slowdown is a ratio of runs taken minutes apart at
//! most, not a ratio against a baseline from another time of day.

use std::time::Duration;

use serde::Serialize;

use crate::launch::{spawn, Exit, Launch, LaunchError, ExitReport, Running, POLL};

#[derive(Debug, thiserror::Error)]
pub enum CorunError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("`{cmd}` failed ({exit}): {stderr}")]
    Failed { cmd: String, exit: Exit, stderr: String },
}

fn check(l: &Launch, o: ExitReport) -> Result<ExitReport, CorunError> {
    if o.exit.success() {
        Ok(o)
    } else {
        Err(CorunError::Failed { cmd: l.argv.join(" "), exit: o.exit, stderr: o.stderr_tail })
    }
}

/// Runs `jobs[0]` and `jobs[1]` together, re-launching whichever finishes
/// first, and returns each job's first complete run and how many times each
/// was re-launched.
pub fn corun_pair(jobs: [&Launch; 2]) -> Result<([ExitReport; 2], [u32; 2]), CorunError> {
    let mut running: [Option<Running>; 2] = [Some(spawn(jobs[0])?), Some(spawn(jobs[1])?)];
    let mut first: [Option<ExitReport>; 2] = [None, None];
    let mut relaunches = [0u32; 2];
    while first.iter().any(Option::is_none) {
        let mut progressed = false;
        for i in 0..2 {
            let done = match running[i].as_mut() {
                Some(r) => r.try_wait()?,
                None => None,
            };
            if let Some(o) = done {
                progressed = true;
                running[i] = None;
                let o = check(jobs[i], o)?;
                if first[i].is_none() {
                    first[i] = Some(o);
                }
                // Keep the pressure on while the other job's first run is
                // still going.
                if first[1 - i].is_none() {
                    running[i] = Some(spawn(jobs[i])?);
                    relaunches[i] += 1;
                }
            }
        }
        if !progressed {
            std::thread::sleep(POLL);
        }
    }
    // Re-launched runs still going are only filler: dropping kills them.
    drop(running);
    let [a, b] = first;
    Ok(([a.expect("loop ends with both"), b.expect("loop ends with both")], relaunches))
}

/// Solo and co-run times of a pair, repeat by repeat.
#[derive(Debug, Clone, Serialize)]
pub struct PairMeasurement {
    pub solo_s: [Vec<f64>; 2],
    pub corun_s: [Vec<f64>; 2],
    pub relaunches: [u32; 2],
    /// Per job: "work-phase" when the times are the work phase a kernel
    /// reported, "process" when they are the process's wall time.
    pub timing: [&'static str; 2],
}

/// The time that counts for a slowdown: a kernel's own work-phase time when
/// it printed a report (its allocation and first touch are set-up, not the
/// fixed work, and would dilute the slowdown), else the process wall time.
pub fn job_time(o: &ExitReport) -> (f64, &'static str) {
    let report = o
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .and_then(|l| serde_json::from_str::<crate::kernel::KernelReport>(l).ok());
    match report {
        Some(r) if r.wall_s > 0.0 => (r.wall_s, "work-phase"),
        _ => (o.wall_s, "process"),
    }
}

impl PairMeasurement {
    /// Slowdown of job `i` per repeat: co-run time over the solo time of the
    /// same repeat.
    pub fn slowdowns(&self, i: usize) -> Vec<f64> {
        self.corun_s[i].iter().zip(&self.solo_s[i]).map(|(c, s)| c / s).collect()
    }
}

/// Measures a pair `repeats` times: solo A, solo B, then A with B; each job is
/// pinned as it will be when shared (the caller's `Launch::cpus`).
/// `on_step(done, total, what)` reports progress.
pub fn measure_pair(
    jobs: [&Launch; 2],
    repeats: usize,
    on_step: &mut dyn FnMut(usize, usize, &str),
) -> Result<PairMeasurement, CorunError> {
    let mut m = PairMeasurement {
        solo_s: [Vec::new(), Vec::new()],
        corun_s: [Vec::new(), Vec::new()],
        relaunches: [0, 0],
        timing: ["process", "process"],
    };
    let total = repeats * 3;
    let mut done = 0;
    for _ in 0..repeats {
        for (i, &job) in jobs.iter().enumerate() {
            let o = check(job, spawn(job)?.wait()?)?;
            let (t, how) = job_time(&o);
            m.solo_s[i].push(t);
            m.timing[i] = how;
            done += 1;
            on_step(done, total, "solo");
        }
        let ([a, b], rl) = corun_pair(jobs)?;
        m.corun_s[0].push(job_time(&a).0);
        m.corun_s[1].push(job_time(&b).0);
        m.relaunches[0] += rl[0];
        m.relaunches[1] += rl[1];
        done += 1;
        on_step(done, total, "co-run");
    }
    Ok(m)
}

/// Settling pause between measurements, so page-cache writeback or a
/// previous job's exit does not spill into the next timing.
pub const SETTLE: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(cmd: &str) -> Launch {
        Launch::new(vec!["sh".into(), "-c".into(), cmd.into()])
    }

    #[test]
    fn shorter_job_is_relaunched_until_the_longer_one_ends() {
        // `true` ends at once; it must be re-launched while the sleep runs.
        let (o, rl) = corun_pair([&sh("true"), &sh("sleep 0.3")]).unwrap();
        assert!(rl[0] >= 1, "short job was relaunched {} times", rl[0]);
        assert_eq!(rl[1], 0);
        assert!(o[1].wall_s >= 0.3);
    }

    #[test]
    fn a_failing_job_fails_the_corun_with_its_command() {
        let e = corun_pair([&sh("exit 4"), &sh("sleep 0.2")]).unwrap_err();
        assert!(e.to_string().contains("exit 4"), "{e}");
    }

    #[test]
    fn kernel_reports_give_work_phase_times_and_commands_process_times() {
        let kernel = sh(r#"echo '{"kernel":"k","work":1,"threads":1,"unit":"u","wall_s":0.25,"rate":4,"checksum":"0"}'"#);
        let (o, _) = corun_pair([&kernel, &sh("sleep 0.1")]).unwrap();
        assert_eq!(job_time(&o[0]), (0.25, "work-phase"));
        assert_eq!(job_time(&o[1]).1, "process");
    }

    #[test]
    fn measure_pair_collects_one_value_per_repeat() {
        let m = measure_pair([&sh("true"), &sh("true")], 2, &mut |_, _, _| {}).unwrap();
        assert_eq!(m.solo_s[0].len(), 2);
        assert_eq!(m.corun_s[1].len(), 2);
        assert_eq!(m.slowdowns(0).len(), 2);
    }
}
