//! What a real run says of its jobs: how each one ended.
//!
//! One type for the executor that observes the end, the engine that traces
//! it, and the store that keeps it (as its name and value, in two columns).

use serde::{Deserialize, Serialize};

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "value")]
pub enum JobStatus {
    Ok,
    /// Exited with this non-zero code.
    Failed(i32),
    /// Killed by this signal, not by cosched.
    Signal(i32),
    /// Ran past its `timeout` and was killed.
    Timeout,
    /// Killed by the kernel for exceeding its memory limit.
    Oom,
    /// Killed by cosched because the run was interrupted.
    Killed,
    /// Its program could not be started.
    SpawnFailed,
}

impl JobStatus {
    /// Every status name, in the order of the variants.
    pub const NAMES: [&'static str; 7] = ["ok", "failed", "signal", "timeout", "oom", "killed", "spawn-failed"];

    pub fn name(&self) -> &'static str {
        match self {
            JobStatus::Ok => "ok",
            JobStatus::Failed(_) => "failed",
            JobStatus::Signal(_) => "signal",
            JobStatus::Timeout => "timeout",
            JobStatus::Oom => "oom",
            JobStatus::Killed => "killed",
            JobStatus::SpawnFailed => "spawn-failed",
        }
    }

    /// The exit code or signal number, where there is one.
    pub fn value(&self) -> Option<i32> {
        match self {
            JobStatus::Failed(c) | JobStatus::Signal(c) => Some(*c),
            _ => None,
        }
    }

    /// The status from its stored name and value; `None` for an unknown
    /// name, a `failed` or `signal` without its number, or a number on a
    /// status that has none.
    pub fn from_parts(name: &str, value: Option<i32>) -> Option<JobStatus> {
        let s = match name {
            "ok" => JobStatus::Ok,
            "failed" => JobStatus::Failed(value?),
            "signal" => JobStatus::Signal(value?),
            "timeout" => JobStatus::Timeout,
            "oom" => JobStatus::Oom,
            "killed" => JobStatus::Killed,
            "spawn-failed" => JobStatus::SpawnFailed,
            _ => return None,
        };
        (s.value().is_some() || value.is_none()).then_some(s)
    }

    /// As [`from_parts`](JobStatus::from_parts), saying what was wrong.
    pub fn parse_parts(name: &str, value: Option<i32>) -> Result<JobStatus, String> {
        if !JobStatus::NAMES.contains(&name) {
            return Err(format!("unknown job status `{name}`; expected one of {}", JobStatus::NAMES.join(", ")));
        }
        JobStatus::from_parts(name, value).ok_or_else(|| match value {
            None => format!("status `{name}` needs its code"),
            Some(v) => format!("status `{name}` takes no code, got {v}"),
        })
    }

    pub fn is_ok(&self) -> bool {
        *self == JobStatus::Ok
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobStatus::Failed(c) => write!(f, "failed (exit code {c})"),
            JobStatus::Signal(s) => write!(f, "signal {s}"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [JobStatus; 7] = [
        JobStatus::Ok,
        JobStatus::Failed(3),
        JobStatus::Signal(9),
        JobStatus::Timeout,
        JobStatus::Oom,
        JobStatus::Killed,
        JobStatus::SpawnFailed,
    ];

    #[test]
    fn statuses_round_trip_through_their_stored_parts() {
        for s in ALL {
            assert_eq!(JobStatus::from_parts(s.name(), s.value()), Some(s));
        }
        assert_eq!(JobStatus::from_parts("failed", None), None);
    }

    #[test]
    fn stored_parts_that_do_not_make_a_status_say_why() {
        assert!(JobStatus::parse_parts("done", None).unwrap_err().contains("unknown job status `done`"));
        assert!(JobStatus::parse_parts("signal", None).unwrap_err().contains("needs its code"));
        assert!(JobStatus::parse_parts("ok", Some(1)).unwrap_err().contains("takes no code, got 1"));
        assert_eq!(ALL.map(|s| s.name()), JobStatus::NAMES);
    }

    #[test]
    fn json_keeps_the_name_and_the_number_apart() {
        assert_eq!(serde_json::to_string(&JobStatus::Failed(2)).unwrap(), r#"{"status":"failed","value":2}"#);
        assert_eq!(serde_json::from_str::<JobStatus>(r#"{"status":"spawn_failed"}"#).unwrap(), JobStatus::SpawnFailed);
    }
}
