//! Cluster-scale simulation of real traces.
//!
//! [`swf`] reads the Parallel Workloads Archive's Standard Workload Format
//! (plain or gzip); [`workload`] turns records into jobs and gives each a
//! measured program by a seeded mapping; [`engine`] runs them on N nodes of
//! C cores under FCFS or EASY backfilling, exclusive or with node sharing
//! decided by a registered policy (`cosched_engine::Policy`, asked node by
//! node); [`trace`] turns the schedule into the one trace of every engine
//! (`model::trace`, a job's node runs in its `nodes`), which [`metrics`]
//! scores (wait, response, bounded slowdown, utilization, makespan,
//! co-location slowdown) and [`output`] writes as Batsim's `jobs.csv` and
//! SWF.
//!
//! Must not: depend on `cosched-sched` (policies come in as trait objects),
//! read a clock, or touch the store.

mod busy;
pub mod engine;
pub mod metrics;
mod nodeset;
pub mod output;
mod queue;
pub mod swf;
pub mod synthetic;
pub mod trace;
pub mod workload;

pub use engine::{simulate, Alloc, ClusterError, Config, Nodes, Schedule, Scheduler};
pub use workload::{ClusterJob, Keep, Mapping};
