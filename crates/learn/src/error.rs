//! The one error kind of the learning loop that callers must tell apart:
//! the user's input is wrong (exit code 2), not the work.

use std::fmt;

/// Marks an error as the user's input being wrong (exit code 2) rather than
/// the work failing (exit code 1). The app's `exit_code` looks for it.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Builds an exit-code-2 error.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}
