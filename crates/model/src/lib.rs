//! Pure data and math of cosched.
//!
//! Everything else in the workspace depends on this crate, so it stays free of
//! I/O: it parses text it is handed (workload TOML, hwloc XML, sysfs snapshots)
//! but never opens a file, spawns a process or reads a clock.

pub mod kernel;
pub mod params;
pub mod placement;
pub mod levels;
pub mod matrix;
pub mod djsb;
pub mod metrics;
pub mod run;
pub mod trace;
pub mod batsim;
pub mod probe;
pub mod stats;
pub mod topology;
pub mod workload;
pub mod calibration;
pub mod compare;
pub mod regime;
pub mod profile;
pub mod provenance;
pub mod enumerate;
pub mod examples;
pub mod text;
