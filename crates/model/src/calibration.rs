//! Calibrated kernel rates: how many units of work per second a kernel does
//! alone on this node, so a job can ask for `seconds = 2` instead of a count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::provenance::Provenance;
use crate::stats::Summary;

/// The measured rate of one kernel configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// See [`calibration_key`].
    pub key: String,
    pub kernel: String,
    pub params: BTreeMap<String, String>,
    pub threads: u32,
    pub unit: String,
    /// Work of each timed run.
    pub work_per_run: u64,
    /// Units of work per second, over the repeats.
    pub rate: Summary,
    /// The kernel's own figure of merit (e.g. bandwidth_mb_s), when it has one.
    pub figure: Option<(String, Summary)>,
    pub provenance: Provenance,
}

impl Calibration {
    /// Work that takes about `seconds` alone at the median rate (at least 1 unit).
    pub fn work_for_seconds(&self, seconds: f64) -> u64 {
        ((seconds * self.rate.median).round() as u64).max(1)
    }
}

/// Identity of a kernel configuration: kernel, threads and every resolved
/// parameter, so that two jobs that differ in a parameter never share a rate.
pub fn calibration_key(kernel: &str, threads: u32, params: &BTreeMap<String, String>) -> String {
    let mut key = format!("{kernel}/t{threads}");
    for (k, v) in params {
        key.push_str(&format!("/{k}={v}"));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_includes_threads_and_sorted_params() {
        let mut p = BTreeMap::new();
        p.insert("b".to_string(), "2".to_string());
        p.insert("a".to_string(), "1".to_string());
        assert_eq!(calibration_key("stream", 2, &p), "stream/t2/a=1/b=2");
    }
}

/// Calibration key of a kernel job, `None` for a command job.
pub fn job_key(job: &crate::workload::Job) -> Option<String> {
    match &job.program {
        crate::workload::Program::Kernel { name, params } => Some(calibration_key(name, job.threads, params)),
        crate::workload::Program::Command { .. } => None,
    }
}

/// The work a job does: its `work`, or its `seconds` at the calibrated rate.
/// `Ok(None)` for a command, whose work is its own.
pub fn resolve_work(
    job: &crate::workload::Job,
    cals: &BTreeMap<String, Calibration>,
) -> Result<Option<u64>, String> {
    use crate::workload::Amount;
    match job.amount {
        Amount::Work(w) => Ok(Some(w)),
        Amount::Intrinsic => Ok(None),
        Amount::Seconds(s) => {
            let key = job_key(job).expect("only kernel jobs have seconds");
            match cals.get(&key) {
                Some(c) => Ok(Some(c.work_for_seconds(s))),
                None => Err(format!(
                    "job `{}` asks for {s} s but `{key}` is not calibrated on this node; run `cosched calibrate --workload FILE`",
                    job.name
                )),
            }
        }
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use crate::stats::Summary;
    use crate::workload::parse_workload;

    fn cal_for(key: &str, rate: f64) -> Calibration {
        Calibration {
            key: key.into(),
            kernel: "compute".into(),
            params: BTreeMap::new(),
            threads: 1,
            unit: "u".into(),
            work_per_run: 1,
            rate: Summary::of(&[rate]).unwrap(),
            figure: None,
            provenance: Provenance {
                hostname: String::new(),
                cpu_model: String::new(),
                cores: 1,
                kernel_version: String::new(),
                cosched_version: String::new(),
                git_commit: String::new(),
                started_unix: 0,
                command: String::new(),
                seed: None,
            },
        }
    }

    #[test]
    fn seconds_become_work_at_the_calibrated_rate_and_missing_calibration_is_named() {
        let w = parse_workload(
            "[[jobs]]\nname='a'\nkernel='compute'\nseconds=2.0\n[[jobs]]\nname='b'\nkernel='compute'\nwork=7\n[[jobs]]\nname='c'\ncommand='true'\n",
            "w.toml",
            Some(2),
        )
        .unwrap();
        let key = job_key(&w.jobs[0]).unwrap();
        assert_eq!(key, "compute/t1");
        let mut cals = BTreeMap::new();
        assert!(resolve_work(&w.jobs[0], &cals).unwrap_err().contains("compute/t1"));
        cals.insert(key.clone(), cal_for(&key, 1500.0));
        assert_eq!(resolve_work(&w.jobs[0], &cals), Ok(Some(3000)));
        assert_eq!(resolve_work(&w.jobs[1], &cals), Ok(Some(7)));
        assert_eq!(resolve_work(&w.jobs[2], &cals), Ok(None));
    }
}
