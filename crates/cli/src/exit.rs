//! Exit codes: 0 ok, 1 failure of the work, 2 bad usage or input; the
//! application crate owns the error markers.

pub use cosched_app::error::{bad_input, Interrupted};

/// Exit code for an error returned by a verb.
pub fn code_of(err: &anyhow::Error) -> i32 {
    cosched_app::exit_code(err)
}
