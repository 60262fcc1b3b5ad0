//! Running real processes on this node.
//!
//! This crate is where cosched touches the machine: it spawns jobs in their own
//! process groups, pins them, times them, and reads the topology. It knows
//! nothing about policies or predictions; it measures and reports.

pub mod bench;
pub mod c2c;
pub mod cachegrind;
pub mod calibrate;
pub mod identity;
pub mod cgroup;
pub mod corun;
pub mod files;
pub mod freeze;
pub mod kernel;
pub mod launch;
pub mod node;
pub mod observe;
pub mod pairs;
pub mod perf;
pub mod place;
pub mod probe;
pub mod runlock;
pub mod profile;
pub mod provenance;
pub mod sampler;
pub mod topology;
