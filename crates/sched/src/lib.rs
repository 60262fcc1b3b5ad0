//! Scheduling policies and the engines that carry out their decisions.
//!
//! A policy sees an engine-agnostic [`View`] and returns [`Decision`]s; it
//! never reads a clock or spawns a process, so the simulator here and the
//! node runner execute the very same policy objects. The policy trait, the
//! executor trait, the runner's loop and the validation of decisions live
//! in `cosched-engine`, and callers name them there.
//!
//! One facade, on purpose: the root re-exports the vocabulary a policy is
//! written in (the [`Policy`] trait, the [`View`] it reads, the
//! [`Decision`]s it returns, and the job ids and events they name), so a
//! policy author and a caller choosing a policy by name need this one
//! crate. Nothing else of another crate is re-exported here
//! (`crates/cli/tests/tidy.rs` holds it to this list).

pub mod montecarlo;
pub mod oracle;
pub mod policies;
pub mod predicted;
pub mod registry;
#[cfg(test)]
mod runner;
pub mod scenario;
pub mod sim;
pub mod tables;
pub mod spec;
pub mod synthetic;

pub use cosched_model::metrics::{Event, EventKind, JobId};

/// The shortest wait between two decisions a policy may ask for, seconds:
/// the floor of `timeshare`'s quantum (a shorter one is refused) and of a
/// Lua script's `wake_at` (a closer one is moved out to it). Without it a
/// wake-up of 1e-12 s runs for ever: time advances by less than the
/// rounding of a double, or the node runner decides in a loop. A
/// millisecond is below any freeze and thaw of a process (which take
/// milliseconds themselves), so no real quantum is refused.
pub const MIN_WAIT_S: f64 = 1e-3;
pub use cosched_model::run::JobStatus;
pub use cosched_engine::policy::{Cores, Decision, JobOutcome, Policy, PoolInfo, QueuedJob, RunningJob, Variant, View};
pub use registry::{policy_by_name, policy_from_spec, Params};
pub use sim::{simulate, simulate_placed, simulate_predicted, simulate_with, Platform, SimError, SimJob, SimOptions, Trace, VirtualNode};
pub use tables::{PairTable, ProgramTable, SlowdownSource};
pub use spec::Spec;
