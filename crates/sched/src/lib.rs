//! Scheduling policies and the engines that carry out their decisions.
//!
//! A policy sees an engine-agnostic [`View`] and returns [`Decision`]s; it
//! never reads a clock or spawns a process, so the simulator here and the
//! node runner execute the very same policy objects. The policy trait, the
//! executor trait, the runner's loop and the validation of decisions live
//! in `cosched-engine` and are re-exported here under their old paths.

pub mod montecarlo;
pub mod oracle;
pub mod policies;
pub mod policy;
pub mod predicted;
pub mod registry;
pub mod runner;
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
pub use policy::{Cores, Decision, JobOutcome, Policy, PoolInfo, QueuedJob, RunningJob, Variant, View};
pub use registry::{policy_by_name, policy_from_spec, policy_names, Params};
pub use runner::{run_node, run_node_placed, Done, ExecError, Executor, EndedJob, RunError, StartPlan};
pub use sim::{simulate, simulate_placed, simulate_predicted, simulate_with, Platform, SimError, SimJob, SimOptions, Trace, VirtualNode};
pub use cosched_engine::Placement;
pub use cosched_engine::online;
pub use tables::{PairTable, ProgramTable, SlowdownSource};
pub use spec::Spec;
