//! The Slurm engine: cosched deciding for a real Slurm cluster.
//!
//! Users keep submitting with `sbatch`; jobs of the cosched partition are
//! held at submission by a `job_submit.lua` rule. Each round, cosched reads
//! the cluster with Slurm's own commands ([`cmd`], parsed by [`parse`]),
//! asks the same [`Policy`](cosched_engine::Policy) every engine drives,
//! node by node over one shared queue ([`tick`]), and carries out each start
//! by releasing the held job onto the chosen node (`scontrol update
//! ReqNodeList= AdminComment=`, then one `scontrol release` of the round's
//! starts); Slurm allocates its cores
//! (select/cons_tres) and binds it to them. Slurm stays the source of
//! truth: a round is computed from one reading of the cluster alone.
//! Rounds run every poll interval and, with an epilog that runs `cosched
//! slurm hook` ([`hook`]), as soon as a job ends.
//!
//! This crate knows the engine boundary and the model, not the policies'
//! registry, the predictors or the store: the application joins them.

pub mod act;
pub mod cmd;
pub mod hook;
pub mod mark;
pub mod output;
pub mod parse;
pub mod tick;
pub mod units;

pub use cmd::{Slurm, SlurmError};
pub use hook::{Heard, Wake};
pub use mark::{Decision, Key, Signed, Step};
pub use parse::{AcctJob, JobSite, JobState, NodeInfo, QueueJob, Skipped};
pub use tick::{refused_policy, Action, Checks, Identity, NodePolicies, Placed, Room, Round, RoundJob, RoundNode, Scope, Shared};
