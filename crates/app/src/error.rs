//! Exit codes: 0 ok, 1 failure of the work, 2 bad usage or input, 128 +
//! signal after SIGINT / SIGTERM.

use std::fmt;

// The learning loop reports bad input too; one type, so `exit_code` finds
// it whichever crate made it.
pub use cosched_learn::error::{bad_input, BadInput};

/// The run was stopped by SIGINT or SIGTERM after cleaning up: exit code
/// 128 + signal (130 for Ctrl-C, 143 for SIGTERM), as a shell would report.
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by signal {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// What a verb stopped by a signal has to say (what is stored, how to go
/// on): the caller shows it on a line of its own before the interrupt.
#[derive(Debug)]
pub struct Notice(pub String);

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The error of a verb stopped by signal `sig`, with what it left behind.
pub fn stopped(sig: i32, notice: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Interrupted(sig)).context(Notice(notice.into()))
}

/// Exit code for an error returned by a verb.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if let Some(Interrupted(sig)) = err.chain().find_map(|e| e.downcast_ref::<Interrupted>()) {
        return 128 + sig;
    }
    if err.chain().any(|e| e.downcast_ref::<BadInput>().is_some()) {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_2_interrupts_are_128_plus_signal_and_the_rest_1() {
        assert_eq!(exit_code(&bad_input("no such file")), 2);
        assert_eq!(exit_code(&bad_input("x").context("while loading")), 2);
        assert_eq!(exit_code(&anyhow::Error::new(Interrupted(2))), 130);
        assert_eq!(exit_code(&anyhow::Error::new(Interrupted(15))), 143);
        assert_eq!(exit_code(&anyhow::anyhow!("the job failed")), 1);
        let e = stopped(2, "campaign 3 is stored");
        assert_eq!(exit_code(&e), 130);
        assert_eq!(e.downcast_ref::<Notice>().map(|n| n.0.as_str()), Some("campaign 3 is stored"));
    }
}
