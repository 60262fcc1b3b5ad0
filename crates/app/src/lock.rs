//! The node lock: one verb at a time runs measured work on this node.
//!
//! Measurements and real runs share the node's cores, caches and memory
//! bandwidth, so a calibration taken beside a running workload measures the
//! workload (one did so with a 77 % spread). Every verb that runs measured
//! work (calibrate, profile, pairs, probe, run, evaluate, study, demo, bench,
//! node --latency) takes one lock, `cosched_measure::runlock::RunLock` at its
//! node-wide path; a second one is refused with the holder's pid and
//! command. The process keeps it until it exits, and a verb that calls
//! another's library half (demo runs `evaluate`'s) takes it once.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use cosched_measure::runlock::RunLock;

static HELD: AtomicBool = AtomicBool::new(false);

/// The held lock; dropping it frees the node.
#[derive(Debug)]
pub struct NodeLock {
    _lock: RunLock,
}

impl Drop for NodeLock {
    fn drop(&mut self) {
        HELD.store(false, Ordering::SeqCst);
    }
}

/// Takes the node lock for `verb`, or says which process holds it. `None`
/// when this process already holds it. `explicit` (`--lock FILE`, or
/// `$COSCHED_RUN_LOCK`) is for tests only: two processes with different
/// lock files share the node.
pub fn take(verb: &str, explicit: Option<&Path>) -> anyhow::Result<Option<NodeLock>> {
    if HELD.swap(true, Ordering::SeqCst) {
        return Ok(None);
    }
    let path = explicit.map(Path::to_path_buf).unwrap_or_else(RunLock::default_path);
    match RunLock::acquire_for(&path, verb) {
        Ok(l) => {
            if let Some(w) = busy_warning(cosched_measure::provenance::load_average().ok(), crate::common::node_cpu_count()) {
                eprintln!("{w}");
            }
            Ok(Some(NodeLock { _lock: l }))
        }
        Err(e) => {
            HELD.store(false, Ordering::SeqCst);
            Err(anyhow::Error::msg(e))
        }
    }
}

/// A warning when the node is busy as measured work starts: a load average
/// over the last minute above half its CPUs means something else runs,
/// and what cosched measures now includes it (an exclusive run timed at
/// 0.34 of its solo pass did). The lock keeps other cosched verbs away,
/// not other programs. Warned, not refused: a user may know the load.
pub fn busy_warning(load: Option<[f64; 3]>, cpus: u32) -> Option<String> {
    let [one, ..] = load?;
    (one > f64::from(cpus) / 2.0).then(|| {
        format!(
            "warning: this node is busy (load average {one:.2} over the last minute on {cpus} CPUs): what is measured now \
             includes whatever else runs; `top` shows what"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_above_half_the_cpus_is_warned_about_and_one_at_or_below_is_not() {
        assert_eq!(busy_warning(Some([1.0, 0.0, 0.0]), 2), None);
        let w = busy_warning(Some([1.01, 0.0, 0.0]), 2).unwrap();
        assert!(w.contains("load average 1.01") && w.contains("2 CPUs"), "{w}");
        assert_eq!(busy_warning(None, 2), None, "no reading, no warning");
    }
}
