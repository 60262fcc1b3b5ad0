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
