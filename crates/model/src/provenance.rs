//! Provenance of a measurement: machine, software, command and time.
//!
//! Stored beside every figure so a number can be traced back and regenerated.
//! The data lives here (pure); `cosched_measure::provenance::here` fills it in.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel_version: String,
    pub cosched_version: String,
    pub git_commit: String,
    /// Seconds since the Unix epoch when the measurement started.
    pub started_unix: u64,
    /// The exact command line that produced the figure.
    pub command: String,
    /// Seed of the experiment, when it draws random numbers.
    pub seed: Option<u64>,
}
