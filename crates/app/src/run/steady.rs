//! Does a job alone measure 1.00? The per-regime check of a series: each
//! job's run times against the median of its solo passes, counting only
//! runs and passes that stayed in one cache regime from start to end.
//!
//! Why a check of its own: our VM's two vCPUs move between sharing a last-
//! level cache and not within seconds (2026-11-24: shared, apart, shared,
//! apart over four consecutive 14 s runs), and a job that talks between
//! the vCPUs takes 1.47 s in one regime and 1.76 s in the other. A run
//! whose regime changed part-way has no true solo reference, and a
//! reference taken in one pass drifts 5-10 % from the next; so the check
//! pools the passes of a regime (their median; those on the run's CPUs
//! when there are any, as file I/O took 1.90 s alone on CPU 0 and 1.75 s
//! on CPU 1) and leaves out every run and pass whose readings before and
//! after disagree.

use std::collections::BTreeMap;

use cosched_model::regime::CacheRegime;
use cosched_model::stats::{median, Summary};
use cosched_store::{ExecRunId, RunRecord, Store};

/// One run or solo pass of a series, as the check needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTimes {
    pub policy: String,
    pub pass: bool,
    /// The regime every reading of the run agrees on; `None` when the
    /// readings disagree or fewer than two were taken.
    pub regime: Option<CacheRegime>,
    /// Per workload job: its time (work phase, else the process's wall
    /// time) and CPUs, when it ended ok and was never suspended.
    pub times: Vec<Option<(f64, Vec<u32>)>>,
}

/// One job under one policy in one regime.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RegimeCheck {
    pub job: String,
    pub policy: String,
    pub regime: &'static str,
    /// Steady solo passes of the job in this regime, and their median
    /// (each run divides by the median of those on its CPUs, if any).
    pub passes: usize,
    pub solo_s: f64,
    /// Run time / reference, over the policy's runs in this regime.
    pub slowdown: Summary,
}

/// The regime of a run read before it started and after it ended: the
/// same regime in every reading, else none.
pub fn steady_regime(readings: &[f64]) -> Option<CacheRegime> {
    if readings.len() < 2 {
        return None;
    }
    let first = CacheRegime::of_round_trip(readings[0]);
    readings.iter().all(|&ns| CacheRegime::of_round_trip(ns) == first).then_some(first)
}

/// Every (policy, regime, job) with at least one steady pass and one steady
/// run, in the order policies, regimes (shared first) and jobs appear.
pub fn per_regime(runs: &[RunTimes], names: &[String]) -> Vec<RegimeCheck> {
    let mut out = Vec::new();
    let mut policies: Vec<&str> = Vec::new();
    for r in runs.iter().filter(|r| !r.pass) {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    for policy in policies {
        for regime in [CacheRegime::Shared, CacheRegime::Apart] {
            for (j, name) in names.iter().enumerate() {
                let of = |pass: bool| -> Vec<&(f64, Vec<u32>)> {
                    runs.iter()
                        .filter(|r| r.pass == pass && r.regime == Some(regime) && (pass || r.policy == policy))
                        .filter_map(|r| r.times.get(j).and_then(Option::as_ref))
                        .collect()
                };
                let (solo, ran) = (of(true), of(false));
                if solo.is_empty() || ran.is_empty() {
                    continue;
                }
                let all: Vec<f64> = solo.iter().map(|x| x.0).collect();
                let ratios: Vec<f64> = ran
                    .iter()
                    .map(|(t, cpus)| {
                        let on: Vec<f64> = solo.iter().filter(|x| &x.1 == cpus).map(|x| x.0).collect();
                        t / median(if on.is_empty() { &all } else { &on })
                    })
                    .collect();
                if let Some(s) = Summary::of(&ratios) {
                    out.push(RegimeCheck {
                        job: name.clone(),
                        policy: policy.to_string(),
                        regime: regime.name(),
                        passes: solo.len(),
                        solo_s: median(&all),
                        slowdown: s,
                    });
                }
            }
        }
    }
    out
}

/// Reads the check's input from the store: each run's readings and its
/// jobs' final attempts.
/// A pass runs one job of each program (`run::solo::twin_of`): its time stands
/// for every twin of that job.
pub fn load(store: &Store, runs: &[RunRecord], twin_of: &[usize], pass_label: &str) -> anyhow::Result<Vec<RunTimes>> {
    let n = twin_of.len();
    let mut out = Vec::new();
    for r in runs {
        let readings: Vec<f64> = store.run_conditions(r.id)?.iter().filter_map(|c| c.c2c.as_ref().map(|x| x.1)).collect();
        let pass = r.policy == pass_label;
        let mut t = times(store, r.id, n)?;
        if pass {
            t = share_with_twins(t, twin_of);
        }
        out.push(RunTimes { policy: r.policy.clone(), pass, regime: steady_regime(&readings), times: t });
    }
    Ok(out)
}

/// Each job without a time takes its twin's (a pass measured one of them).
fn share_with_twins(t: Vec<JobTime>, twin_of: &[usize]) -> Vec<JobTime> {
    (0..t.len())
        .map(|j| t[j].clone().or_else(|| (0..t.len()).find(|&k| twin_of.get(k) == twin_of.get(j) && t[k].is_some()).and_then(|k| t[k].clone())))
        .collect()
}

/// A job's run time and CPUs, if its final attempt ended ok.
type JobTime = Option<(f64, Vec<u32>)>;

fn times(store: &Store, run: ExecRunId, n: usize) -> anyhow::Result<Vec<JobTime>> {
    let suspended: BTreeMap<String, ()> = store
        .run_journal(run)?
        .into_iter()
        .filter(|e| e.event == "suspend")
        .filter_map(|e| e.job.map(|j| (j, ())))
        .collect();
    let mut t = vec![None; n];
    for j in super::journal::final_attempts(&store.run_jobs(run)?, n) {
        let Some(e) = j.end.as_ref().filter(|e| e.status.is_ok()) else { continue };
        if suspended.contains_key(&j.start.job) {
            continue;
        }
        let time = e.work_s.unwrap_or(e.end_s - j.start.start_s);
        if let Some(slot) = t.get_mut(j.start.job_index as usize).filter(|_| time.is_finite() && time > 0.0) {
            *slot = Some((time, j.start.cpus.clone()));
        }
    }
    Ok(t)
}

/// Table rows: job, policy, regime, passes, reference, slowdown.
pub(crate) fn rows(checks: &[RegimeCheck]) -> Vec<Vec<String>> {
    checks
        .iter()
        .map(|c| {
            vec![
                c.job.clone(),
                c.policy.clone(),
                c.regime.to_string(),
                c.passes.to_string(),
                format!("{:.3}", c.solo_s),
                cosched_report::fmt_spread(&c.slowdown, 3),
            ]
        })
        .collect()
}

pub const HEAD: [&str; 6] = ["job", "policy", "regime", "solo passes", "reference s", "slowdown median (min-max, n)"];

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs on CPU 0 unless a time is negative: then on CPU 1 (its size).
    fn run(policy: &str, pass: bool, regime: Option<CacheRegime>, times: &[Option<f64>]) -> RunTimes {
        let at = |t: f64| if t < 0.0 { (-t, vec![1]) } else { (t, vec![0]) };
        RunTimes { policy: policy.into(), pass, regime, times: times.iter().map(|t| t.map(at)).collect() }
    }

    #[test]
    fn a_run_is_steady_only_when_every_reading_names_one_regime() {
        assert_eq!(steady_regime(&[44.0, 60.0]), Some(CacheRegime::Shared));
        assert_eq!(steady_regime(&[365.0, 380.0, 390.0]), Some(CacheRegime::Apart));
        assert_eq!(steady_regime(&[365.0, 43.8]), None, "switched during the run");
        assert_eq!(steady_regime(&[44.0]), None, "one reading cannot tell");
        assert_eq!(steady_regime(&[]), None);
    }

    #[test]
    fn each_regime_divides_by_the_median_of_its_own_steady_passes() {
        use CacheRegime::{Apart, Shared};
        let names = vec!["comm".to_string(), "io".to_string()];
        let runs = vec![
            run("solo-pass", true, Some(Shared), &[Some(1.0), Some(2.0)]),
            run("solo-pass", true, Some(Apart), &[Some(1.7), Some(2.1)]),
            run("solo-pass", true, Some(Apart), &[Some(1.8), None]),
            run("solo-pass", true, Some(Apart), &[Some(1.9), Some(2.0)]),
            // Switched part-way: in no regime's figures.
            run("solo-pass", true, None, &[Some(9.0), Some(9.0)]),
            run("exclusive", false, None, &[Some(9.0), Some(9.0)]),
            run("exclusive", false, Some(Apart), &[Some(1.8), Some(2.05)]),
            run("exclusive", false, Some(Apart), &[Some(2.7), Some(2.05)]),
            run("exclusive", false, Some(Shared), &[Some(1.1), None]),
        ];
        let c = per_regime(&runs, &names);
        let got: Vec<(&str, &str, usize, f64, f64, usize)> =
            c.iter().map(|c| (c.job.as_str(), c.regime, c.passes, c.solo_s, c.slowdown.median, c.slowdown.n)).collect();
        // Shared: comm 1.1 / 1.0 from one pass and one run; io never ended
        // in a shared run. Apart: comm's reference is the median of 1.7,
        // 1.8, 1.9; io's of 2.1 and 2.0.
        let expect = [
            ("comm", "shared cache", 1, 1.0, 1.1, 1),
            ("comm", "caches apart", 3, 1.8, (1.0 + 1.5) / 2.0, 2),
            ("io", "caches apart", 2, 2.05, 1.0, 2),
        ];
        assert_eq!(got.len(), expect.len(), "{got:?}");
        for (g, e) in got.iter().zip(expect) {
            assert_eq!((g.0, g.1, g.2, g.5), (e.0, e.1, e.2, e.5));
            assert!((g.3 - e.3).abs() < 1e-12 && (g.4 - e.4).abs() < 1e-12, "{g:?} vs {e:?}");
        }
    }

    #[test]
    fn a_run_divides_by_the_passes_on_its_own_cpus_when_there_are_any() {
        use CacheRegime::Apart;
        let names = vec!["io".to_string()];
        let runs = vec![
            run("solo-pass", true, Some(Apart), &[Some(2.0)]),
            run("solo-pass", true, Some(Apart), &[Some(-1.8)]),
            run("solo-pass", true, Some(Apart), &[Some(2.2)]),
            run("exclusive", false, Some(Apart), &[Some(2.1)]),
            run("exclusive", false, Some(Apart), &[Some(-1.8)]),
        ];
        let c = per_regime(&runs, &names);
        assert_eq!(c.len(), 1);
        // CPU 0: 2.1 / median(2.0, 2.2); CPU 1: 1.8 / 1.8.
        assert!((c[0].slowdown.min - 1.0).abs() < 1e-12 && (c[0].slowdown.max - 1.0).abs() < 1e-12, "{:?}", c[0]);
        assert_eq!(c[0].passes, 3);
        assert!((c[0].solo_s - 2.0).abs() < 1e-12);
    }
}
