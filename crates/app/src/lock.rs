//! The node lock: one verb at a time runs measured work on this node.
//!
//! Measurements and real runs share the node's cores, caches and memory
//! bandwidth, so a calibration taken beside a running workload measures the
//! workload (one did so with a 77 % spread). Every verb that runs measured
//! work (calibrate, profile, pairs, probe, run, evaluate, demo, bench, node
//! --latency) takes one lock, `cosched_measure::node::RunLock` at its
//! node-wide path; a second one is refused with the holder's pid and
//! command. The process keeps it until it exits, and a verb that calls
//! another (demo runs `run`) takes it once.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use cosched_measure::node::RunLock;

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
        Ok(l) => Ok(Some(NodeLock { _lock: l })),
        Err(e) => {
            HELD.store(false, Ordering::SeqCst);
            Err(anyhow::Error::msg(e))
        }
    }
}
