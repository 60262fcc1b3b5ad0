//! Solo references: what a job's measured slowdown divides by. A solo
//! pass before each repeat runs one job of each program alone (twins, jobs
//! of one program key, share its run), timed as the runs time it; a run's
//! job divides by the median of the passes that match it best.

use std::collections::BTreeMap;

use cosched_model::regime::CacheRegime;
use cosched_store::{RunJobRecord, RunRecord};

use super::journal::final_attempts;
use super::SoloMode;

/// The label of a solo pass in the store and the outputs.
pub const SOLO_PASS: &str = "solo-pass";

/// One job's solo time from a solo pass of this series.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SoloRef {
    /// Zero-based repeat of the pass.
    pub repeat: u32,
    pub run: i64,
    pub cpus: Vec<u32>,
    /// Seconds: the kernel's work phase, else the process's wall time.
    pub time: f64,
    /// `work-phase` or `process`.
    pub timing: &'static str,
    /// When the job started, Unix seconds.
    pub at_unix: f64,
    /// The cache regime read before the pass, when it was read.
    pub regime: Option<CacheRegime>,
}

/// What a job of a run divides by.
#[derive(Debug, Clone)]
pub struct SoloChoice {
    /// Median of the chosen passes' times, seconds.
    pub time: f64,
    pub timing: &'static str,
    /// Passes behind the median.
    pub n: usize,
    pub newest: SoloRef,
    /// Which passes: `its CPUs, same regime`, ...
    pub which: &'static str,
}

/// For each job of the workload, the first job of its program (its twins
/// share one solo run per pass): a pass of N jobs of P programs costs P
/// solo runs, not N. The pass's representative is the first of the twins
/// in that pass's order, so over the repeats it is measured on each core.
pub fn twin_of(w: &cosched_model::workload::Workload) -> Vec<usize> {
    let keys: Vec<String> = w.jobs.iter().map(|j| j.program_key()).collect();
    (0..keys.len()).map(|j| keys.iter().position(|k| *k == keys[j]).unwrap_or(j)).collect()
}

/// The jobs a solo pass runs: of each program, the first in `order`.
pub(super) fn pass_jobs(order: &[usize], twin_of: &[usize]) -> Vec<usize> {
    let mut seen = std::collections::BTreeSet::new();
    order.iter().copied().filter(|&j| seen.insert(twin_of.get(j).copied().unwrap_or(j))).collect()
}

/// The solo references of a series, by program (the first job of each
/// program's twins, `twin_of`).
#[derive(Debug, Clone, Default)]
pub struct SoloRefs {
    by_job: BTreeMap<usize, Vec<SoloRef>>,
    /// Each job's program slot; empty: every job its own.
    twin_of: Vec<usize>,
}

impl SoloRefs {
    /// References where twins share one solo run (`twin_of`).
    pub(super) fn for_twins(twin_of: Vec<usize>) -> SoloRefs {
        SoloRefs { by_job: BTreeMap::new(), twin_of }
    }

    fn slot(&self, job: usize) -> usize {
        self.twin_of.get(job).copied().unwrap_or(job)
    }

    /// Adds the ok jobs of a finished solo pass.
    pub(super) fn add_pass(&mut self, run: &RunRecord, jobs: &[RunJobRecord], n: usize, regime: Option<CacheRegime>) {
        for j in final_attempts(jobs, n) {
            let Some(e) = j.end.as_ref().filter(|e| e.status.is_ok()) else { continue };
            let (time, timing) = match e.work_s {
                Some(w) => (w, "work-phase"),
                None => (e.end_s - j.start.start_s, "process"),
            };
            if !(time.is_finite() && time > 0.0) {
                continue;
            }
            let slot = self.slot(j.start.job_index as usize);
            self.by_job.entry(slot).or_default().push(SoloRef {
                repeat: run.repeat,
                run: run.id.0,
                cpus: j.start.cpus.clone(),
                time,
                timing,
                at_unix: run.started_unix as f64 + j.start.start_s,
                regime,
            });
        }
    }

    /// The solo reference of `job` for a run on `cpus` in `regime`: the
    /// median of its passes so far on exactly those CPUs in that regime,
    /// else in that regime, else on those CPUs, else of all its passes.
    /// The regime comes first: a job that talks between two vCPUs
    /// (pingpong) took 1.06 s alone when they shared a cache and 1.75 s when
    /// they did not. The CPUs next: file I/O took 1.90 s alone on CPU 0 and
    /// 1.75 s on CPU 1 of our VM. A median, not the newest pass: one
    /// pass of a job drifts by 5-10 % from the next, more than the node
    /// drifts over a series.
    /// The times of every pass that ran `job` ok, oldest first.
    pub(super) fn times(&self, job: usize) -> Vec<f64> {
        self.by_job.get(&self.slot(job)).map(|v| v.iter().map(|r| r.time).collect()).unwrap_or_default()
    }

    pub fn lookup(&self, job: usize, cpus: &[u32], regime: Option<CacheRegime>) -> Option<SoloChoice> {
        let refs = self.by_job.get(&self.slot(job))?;
        let same_regime = |r: &SoloRef| regime.is_some() && r.regime == regime;
        type Tier<'t> = (&'static str, &'t dyn Fn(&SoloRef) -> bool);
        let tiers: [Tier; 4] = [
            ("its CPUs, same regime", &|r| same_regime(r) && r.cpus == cpus),
            ("other CPUs, same regime", &|r| same_regime(r)),
            ("its CPUs, other regime", &|r| r.cpus == cpus),
            ("any pass", &|_| true),
        ];
        tiers.iter().find_map(|(which, keep)| {
            let set: Vec<&SoloRef> = refs.iter().filter(|r| keep(r)).collect();
            let newest = *set.last()?;
            let times: Vec<f64> = set.iter().map(|r| r.time).collect();
            Some(SoloChoice { time: cosched_model::stats::median(&times), timing: newest.timing, n: set.len(), newest: newest.clone(), which })
        })
    }
}

/// A job's time in the timing of its reference.
pub(super) fn timed(timing: &str, work_s: Option<f64>, wall: f64) -> f64 {
    if timing == "work-phase" {
        work_s.unwrap_or(wall)
    } else {
        wall
    }
}

/// Everything about the series' solo references that its outputs show.
pub(super) struct SoloInfo {
    pub(super) mode: SoloMode,
    pub(super) refs: SoloRefs,
    pub(super) ref_notes: BTreeMap<(i64, usize), String>,
    pub(super) pass_round_trip: BTreeMap<u32, f64>,
    pub(super) run_round_trip: BTreeMap<(String, u32), f64>,
    /// Stored mode: where each job's stored solo time came from.
    pub(super) stored_from: Vec<String>,
}

impl SoloInfo {
    /// Which reference a stored job attempt was divided by, and its age and
    /// cache regime: `pass 2, cpu 1, 14 s before (shared cache)`.
    pub(super) fn describe(&self, j: &RunJobRecord, run: &RunRecord) -> String {
        let job = j.start.job_index as usize;
        match self.mode {
            SoloMode::Stored => self.stored_from.get(job).cloned().unwrap_or_else(|| "-".into()),
            SoloMode::Interleaved if run.policy == SOLO_PASS => "(this pass)".into(),
            SoloMode::Interleaved => self
                .ref_notes
                .get(&(run.id.0, job))
                .cloned()
                .unwrap_or_else(|| if j.start.solo_s.is_some() { "a pass (run by an earlier invocation)".into() } else { "-".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(repeat: u32, cpus: &[u32], time: f64) -> SoloRef {
        SoloRef { repeat, run: repeat as i64, cpus: cpus.to_vec(), time, timing: "process", at_unix: repeat as f64, regime: None }
    }

    #[test]
    fn a_job_divides_by_the_median_of_its_passes_on_its_cpus_else_of_all() {
        let mut refs = SoloRefs::default();
        refs.by_job.insert(0, vec![r(0, &[0], 1.0), r(1, &[1], 1.1), r(2, &[0], 1.2), r(3, &[0], 1.5)]);
        let c = refs.lookup(0, &[0], None).unwrap();
        assert_eq!((c.time, c.n, c.newest.repeat, c.which), (1.2, 3, 3, "its CPUs, other regime"));
        assert_eq!(refs.lookup(0, &[1], None).unwrap().time, 1.1);
        // Never measured on CPUs 0-1: all four passes.
        let c = refs.lookup(0, &[0, 1], None).unwrap();
        assert_eq!((c.time, c.n, c.which), ((1.1 + 1.2) / 2.0, 4, "any pass"));
        assert!(refs.lookup(1, &[0], None).is_none());
    }

    #[test]
    fn a_pass_in_the_runs_cache_regime_comes_before_newer_ones_in_another() {
        use CacheRegime::{Apart, Shared};
        let with = |mut x: SoloRef, g| {
            x.regime = Some(g);
            x
        };
        let mut refs = SoloRefs::default();
        refs.by_job.insert(
            0,
            vec![with(r(0, &[0, 1], 1.0), Shared), with(r(1, &[0, 1], 1.3), Apart), with(r(2, &[0], 0.5), Shared), with(r(3, &[0, 1], 1.4), Apart)],
        );
        assert_eq!(refs.lookup(0, &[0, 1], Some(Shared)).unwrap().time, 1.0);
        assert_eq!(refs.lookup(0, &[0, 1], Some(Apart)).unwrap().time, (1.3 + 1.4) / 2.0);
        // No pass on CPU 1 in the shared regime: the shared ones.
        let c = refs.lookup(0, &[1], Some(Shared)).unwrap();
        assert_eq!((c.time, c.which), (0.75, "other CPUs, same regime"));
        // Regime unknown: CPUs first.
        assert_eq!(refs.lookup(0, &[0, 1], None).unwrap().time, 1.3);
    }

    #[test]
    fn twins_share_one_solo_run_per_pass_taken_from_the_first_of_them_in_the_order() {
        // Jobs 0, 2, 3 one program, 1 another: a pass in the order 3 1 0 2
        // runs 3 and 1.
        let twin_of = vec![0, 1, 0, 0];
        assert_eq!(pass_jobs(&[3, 1, 0, 2], &twin_of), vec![3, 1]);
        assert_eq!(pass_jobs(&[0, 1, 2, 3], &twin_of), vec![0, 1]);
        let mut refs = SoloRefs::for_twins(twin_of);
        refs.by_job.insert(0, vec![r(0, &[0], 1.0), r(1, &[1], 1.2)]);
        for twin in [0, 2, 3] {
            assert_eq!(refs.lookup(twin, &[1], None).unwrap().time, 1.2);
            assert_eq!(refs.times(twin), vec![1.0, 1.2]);
        }
        assert!(refs.lookup(1, &[0], None).is_none());
    }

    #[test]
    fn kernels_are_timed_by_their_work_phase_and_commands_by_the_wall() {
        assert_eq!(timed("work-phase", Some(1.5), 2.0), 1.5);
        assert_eq!(timed("work-phase", None, 2.0), 2.0);
        assert_eq!(timed("process", Some(1.5), 2.0), 2.0);
        assert_eq!("stored".parse::<SoloMode>(), Ok(SoloMode::Stored));
        assert!("sometimes".parse::<SoloMode>().unwrap_err().contains("interleaved or stored"));
    }
}
