//! The policy trait and what a policy sees live in `cosched_engine::policy`
//! and are re-exported here under their old paths; the registry of policies
//! by name is in `registry.rs`.

pub use cosched_engine::policy::{Cores, Decision, JobOutcome, Policy, PoolInfo, QueuedJob, RunningJob, Variant, View};
