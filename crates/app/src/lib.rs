//! The application of cosched: what each verb does, below the command line.
//!
//! Every verb's work is a function taking a typed request and returning a
//! typed result; long work reports progress through the [`Progress`] trait
//! the caller implements (a terminal bar, log lines, nothing). The `cosched`
//! binary parses arguments into requests, makes one call here, and prints
//! the result; nothing in this crate parses a command line or prints a
//! table to stdout. Files a verb produces (SVGs, HTML reports, CSV and JSON
//! beside them) are written here: they are work, not printing.
//!
//! Work several verbs share lives in one module each and is called from
//! there: [`calibrate`] (what a workload's `seconds` need), [`common`]
//! (the store's path, files, the node's pools). What the store teaches
//! the predictors is `cosched-learn`'s (its knowledge base, training sets
//! and the figures of real runs), and the verbs name it there. The one
//! item of it re-exported here is [`KbScope`], which requests carry and
//! the binary (which depends on no library crate but this one, the model
//! and the report) builds from its flags.
//!
//! Errors are `anyhow::Error`s; [`error::BadInput`] marks the user's input
//! being wrong (exit code 2) and [`error::Interrupted`] a run stopped by a
//! signal after cleaning up (exit code 128 + signal), with an
//! [`error::Notice`] of what it left behind; [`error::exit_code`] maps any
//! error to the exit code.

pub mod bench;
pub mod calibrate;
pub mod characterize;
pub mod check;
pub mod classify;
pub mod cluster;
pub mod common;
pub mod db;
pub mod demo;
pub mod djsb;
pub mod enumerate;
pub mod error;
pub mod held;
pub mod lock;
pub mod evaluate;
pub mod evaluate_predictors;
pub mod node;
pub mod pairs;
pub mod policy;
pub mod predict;
pub mod probe;
pub mod profile;
pub mod progress;
pub mod regime;
pub mod registry;
pub mod render;
pub mod runs;
pub mod run;
pub mod shipped;
pub mod simulate;
pub mod slurm;
pub mod study;
mod variants;

pub use cosched_learn::knowledge::KbScope;
pub use common::{Ctx, GIT_COMMIT};
pub use error::{bad_input, exit_code, BadInput, Interrupted, Notice};
pub use progress::{Plain, Progress, Silent, Task};
