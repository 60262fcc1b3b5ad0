//! The application of cosched: what each verb does, below the command line.
//!
//! Every verb's work is a function taking a typed request and returning a
//! typed result; long work reports progress through the [`Progress`] trait
//! the caller implements (a terminal bar, log lines, nothing). The `cosched`
//! binary parses arguments into requests, makes one call here, and prints
//! the result; nothing in this crate parses a command line or prints a
//! table to stdout.
//!
//! Errors are `anyhow::Error`s; [`error::BadInput`] marks the user's input
//! being wrong (exit code 2) and [`error::Interrupted`] a run stopped by a
//! signal after cleaning up (exit code 128 + signal); [`error::exit_code`]
//! maps any error to the exit code.

pub mod common;
pub mod error;
pub mod progress;

pub use common::{Ctx, GIT_COMMIT};
pub use error::{bad_input, exit_code, BadInput, Interrupted};
pub use progress::{Plain, Progress, Silent, Task};
