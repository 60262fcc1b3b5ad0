//! The boundary between policies and the engines that carry out their
//! decisions.
//!
//! A policy sees an engine-agnostic [`View`] and returns [`Decision`]s; an
//! engine (the simulator in `cosched-sched`, the node runner's [`run_node`]
//! over an [`Executor`] of real processes in `cosched-measure`, or of virtual
//! time) builds the view with [`view`], validates the decisions with
//! [`validate::check_decision`] (or, holding only a view, [`validate::check_view`])
//! and applies them.
//! This crate depends on the model only, so an executor can implement
//! [`Executor`] without pulling in the policies, the predictors or the
//! simulator.

pub mod constraints;
pub mod cores;
pub mod online;
pub mod placement;
pub mod platform;
pub mod policy;
pub mod run;
pub mod slowdown;
pub mod validate;
pub mod view;

pub use cosched_model::metrics::{Event, EventKind, JobId};
pub use cosched_model::run::JobStatus;
pub use placement::Placement;
pub use platform::{Platform, SimJob};
pub use policy::{Cores, Decision, JobOutcome, Params, Policy, PoolInfo, QueuedJob, RunningJob, Variant, View};
pub use run::{run_node, run_node_placed, Done, ExecError, Executor, EndedJob, RunError, StartPlan};
pub use slowdown::SlowdownSource;
pub use validate::Refusal;
