//! A pairs campaign: the interference matrix of a workload, measured.
//!
//! Every unordered pair of jobs (twins included) is co-run repeatedly with
//! [`crate::corun::measure_pair`] (solo A, solo B, A with B, the shorter
//! re-launched), one repeat at a time, until the stop rule says both
//! slowdowns are known well enough. Each repeat is handed to the caller as
//! soon as it is measured, so it can be stored before the next one starts and
//! an interrupted campaign loses at most the repeat in flight.

use cosched_model::matrix::{assign_cpus, unordered_pairs, StopRule};
use serde::{Deserialize, Serialize};

use crate::corun::{measure_pair, CorunError};
use crate::launch::Launch;

/// A job as the campaign runs it.
#[derive(Debug, Clone)]
pub struct PairJob {
    pub name: String,
    pub argv: Vec<String>,
    /// CPUs it is pinned to when shared.
    pub cores: u32,
}

/// One repeat of one co-run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    /// Indices of the two jobs, `fg <= bg`.
    pub jobs: (usize, usize),
    pub repeat: usize,
    pub solo_s: [f64; 2],
    pub corun_s: [f64; 2],
    pub relaunches: [u32; 2],
    /// "work-phase" or "process", per job.
    pub timing: [String; 2],
    pub cpus: [Vec<u32>; 2],
    /// The node was too small for both jobs' cores: they shared CPUs.
    pub shared_cpus: bool,
}

impl PairRun {
    pub fn slowdown(&self, k: usize) -> f64 {
        self.corun_s[k] / self.solo_s[k]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("{jobs}: {source}")]
    Corun { jobs: String, source: CorunError },
    #[error("storing a run: {0}")]
    Sink(String),
}

/// Progress of a campaign, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct CampaignProgress {
    pub pair: usize,
    pub pairs: usize,
    pub repeat: usize,
}

/// Runs (or continues) a campaign. `prior` holds runs already stored by an
/// earlier, interrupted invocation: cells they complete are skipped, and
/// their repeats count towards the stop rule. `sink` receives each new run
/// (and should store it); an error from it stops the campaign.
pub fn run_campaign(
    jobs: &[PairJob],
    stop: StopRule,
    node_cpus: &[u32],
    prior: &[PairRun],
    sink: &mut dyn FnMut(&PairRun) -> Result<(), String>,
    on_progress: &mut dyn FnMut(CampaignProgress, &str),
) -> Result<Vec<PairRun>, CampaignError> {
    let pairs = unordered_pairs(jobs.len());
    let mut new_runs = Vec::new();
    for (pi, &(a, b)) in pairs.iter().enumerate() {
        let mut sl: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for r in prior.iter().filter(|r| r.jobs == (a, b)) {
            sl[0].push(r.slowdown(0));
            sl[1].push(r.slowdown(1));
        }
        let (cpus, shared) = assign_cpus([jobs[a].cores, jobs[b].cores], node_cpus);
        let launches = [
            Launch::new(jobs[a].argv.clone()).pinned(cpus[0].clone()),
            Launch::new(jobs[b].argv.clone()).pinned(cpus[1].clone()),
        ];
        let label = format!("{} + {}", jobs[a].name, jobs[b].name);
        while !stop.done([&sl[0], &sl[1]]) {
            let repeat = sl[0].len();
            on_progress(CampaignProgress { pair: pi, pairs: pairs.len(), repeat }, &label);
            let m = measure_pair([&launches[0], &launches[1]], 1, &mut |_, _, _| {})
                .map_err(|source| CampaignError::Corun { jobs: label.clone(), source })?;
            let run = PairRun {
                jobs: (a, b),
                repeat,
                solo_s: [m.solo_s[0][0], m.solo_s[1][0]],
                corun_s: [m.corun_s[0][0], m.corun_s[1][0]],
                relaunches: m.relaunches,
                timing: m.timing.map(String::from),
                cpus: cpus.clone(),
                shared_cpus: shared,
            };
            sink(&run).map_err(CampaignError::Sink)?;
            sl[0].push(run.slowdown(0));
            sl[1].push(run.slowdown(1));
            new_runs.push(run);
        }
        on_progress(CampaignProgress { pair: pi + 1, pairs: pairs.len(), repeat: 0 }, &label);
    }
    Ok(new_runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, cmd: &str) -> PairJob {
        PairJob { name: name.into(), argv: vec!["sh".into(), "-c".into(), cmd.into()], cores: 1 }
    }

    #[test]
    fn every_pair_gets_exactly_the_fixed_repeats_and_is_stored_as_it_goes() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0 };
        let mut stored = Vec::new();
        let runs = run_campaign(&jobs, rule, &[0, 1], &[], &mut |r| {
            stored.push(r.clone());
            Ok(())
        }, &mut |_, _| {})
        .unwrap();
        assert_eq!(runs.len(), 3 * 2, "pairs (a,a) (a,b) (b,b), two repeats each");
        assert_eq!(stored, runs);
        assert_eq!(runs.iter().filter(|r| r.jobs == (0, 1)).count(), 2);
        assert_eq!(runs[0].cpus, [vec![0], vec![1]]);
    }

    #[test]
    fn resuming_skips_finished_cells_and_tops_up_partial_ones() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0 };
        let first = run_campaign(&jobs, rule, &[0, 1], &[], &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        // Keep all of (a,a), one repeat of (a,b), nothing of (b,b).
        let prior: Vec<PairRun> = first
            .iter()
            .filter(|r| r.jobs == (0, 0) || (r.jobs == (0, 1) && r.repeat == 0))
            .cloned()
            .collect();
        let rest = run_campaign(&jobs, rule, &[0, 1], &prior, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        let count = |p| rest.iter().filter(|r| r.jobs == p).count();
        assert_eq!((count((0, 0)), count((0, 1)), count((1, 1))), (0, 1, 2));
        assert_eq!(rest.iter().find(|r| r.jobs == (0, 1)).unwrap().repeat, 1);
    }

    #[test]
    fn a_sink_error_stops_the_campaign() {
        let jobs = [job("a", "true")];
        let rule = StopRule { min_repeats: 3, max_repeats: 3, rel_halfwidth: 0.0 };
        let e = run_campaign(&jobs, rule, &[0], &[], &mut |_| Err("disk full".into()), &mut |_, _| {})
            .unwrap_err();
        assert!(e.to_string().contains("disk full"));
    }
}
