//! The policy trait, what a policy sees, and the registry of policies by name.

use std::collections::BTreeMap;

use cosched_model::workload::PoolKind;

use crate::policies::{AutoThreshold, BestMatch, ConflictAware, Exclusive, NoPlan, NoTwins};
use crate::source::SlowdownSource;
use crate::JobId;

/// A pool of the node as policies see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    pub name: String,
    pub cores: u32,
    pub kind: PoolKind,
}

/// A job waiting in the queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueuedJob<'a> {
    pub id: JobId,
    pub name: &'a str,
    /// Index into [`View::pools`].
    pub pool: usize,
    pub cores: u32,
    /// Solo time estimate, seconds.
    pub solo: f64,
    /// Equal keys mean instances of one program (twins).
    pub program: &'a str,
}

/// A job running on the node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningJob<'a> {
    pub id: JobId,
    pub pool: usize,
    pub cores: u32,
    /// Fraction of its work done, in [0, 1].
    pub progress: f64,
    pub program: &'a str,
}

/// Everything a policy may know when it decides.
pub struct View<'a> {
    /// Virtual or wall seconds since the engine began; engines supply it so
    /// policies never read a clock.
    pub time: f64,
    /// Waiting jobs in queue order (arrival, then workload order); an engine
    /// with a look-ahead window shows only the oldest of them.
    pub queue: &'a [QueuedJob<'a>],
    /// Jobs running on the node being decided for (engines over several
    /// nodes ask node by node; the queue is shared).
    pub running: &'a [RunningJob<'a>],
    pub pools: &'a [PoolInfo],
    pub slowdown: &'a dyn SlowdownSource,
}

impl View<'_> {
    /// Cores of `pool` not held by running jobs.
    pub fn free_cores(&self, pool: usize) -> u32 {
        let used: u32 = self
            .running
            .iter()
            .filter(|r| r.pool == pool)
            .map(|r| r.cores)
            .sum();
        self.pools[pool].cores.saturating_sub(used)
    }
}

/// What a policy asks the engine to do now. Returning no decision means wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start a queued job on its pool; the engine picks the cores.
    Start { job: JobId, pool: usize },
}

/// What an engine observed of a job that finished: times on the engine's
/// clock (virtual or wall seconds since it began).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobOutcome<'a> {
    pub job: JobId,
    pub program: &'a str,
    pub arrival: f64,
    pub start: f64,
    pub finish: f64,
    /// The job's solo time estimate, seconds.
    pub solo: f64,
    /// Observed run time over solo time: (finish - start) / solo.
    pub slowdown: f64,
}

pub trait Policy {
    /// Decisions for this instant. Engines call again after applying them,
    /// until a call returns none, so a policy may decide one start at a time.
    fn decide(&mut self, view: &View) -> Vec<Decision>;

    /// Called by the engine when a job finishes, before it asks for the next
    /// decisions, so a policy can learn from what happened. Most policies
    /// decide from the view alone and ignore it.
    fn observe(&mut self, _outcome: &JobOutcome) {}
}

/// Policy parameters as given by name on a command line or in a scenario.
pub type Params = BTreeMap<String, String>;

const POLICIES: &[(&str, &str)] = &[
    ("exclusive", "one job at a time on the node: the sequential baseline"),
    ("noplan", "an idle pool starts the next job of its queue at once (unconditional co-execution)"),
    (
        "conflict-aware",
        "seed 000: an idle pool starts the first queued job whose score with every running job is within threshold=T (inf = noplan)",
    ),
    ("no-twins", "seed 003(d): never co-run two instances of one program"),
    (
        "best-match",
        "an idle pool starts the waiting job with the least predicted extra slowdown (its own and its co-runners'); the oldest job is forced after being passed over aging=N times (default 4; 0 = noplan)",
    ),
    (
        "auto-threshold",
        "conflict-aware whose threshold tunes itself from finished jobs: up to one step past a score co-run within bound=B (slowdown, default 1.5), down below the lowest score that broke it; start=T (default 100), step=S (default 10), explore=on|off (try the least unknown score when a pool would idle)",
    ),
];

/// Names and one-line descriptions of every registered policy.
pub fn policy_names() -> Vec<(&'static str, &'static str)> {
    POLICIES.to_vec()
}

/// Builds a policy by name; unknown names and parameters are errors, so a
/// typo never silently runs a default.
pub fn policy_by_name(name: &str, params: &Params) -> Result<Box<dyn Policy>, String> {
    let allowed: &[&str] = match name {
        "conflict-aware" => &["threshold"],
        "best-match" => &["aging"],
        "auto-threshold" => &["bound", "start", "step", "explore"],
        "exclusive" | "noplan" | "no-twins" => &[],
        _ => {
            let known: Vec<&str> = POLICIES.iter().map(|p| p.0).collect();
            return Err(format!(
                "unknown policy `{name}`; expected one of {}",
                known.join(", ")
            ));
        }
    };
    if let Some(k) = params.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(if allowed.is_empty() {
            format!("policy `{name}` takes no parameters, got `{k}`")
        } else {
            format!(
                "policy `{name}` has no parameter `{k}`; expected {}",
                allowed.join(", ")
            )
        });
    }
    Ok(match name {
        "exclusive" => Box::new(Exclusive),
        "noplan" => Box::new(NoPlan),
        "no-twins" => Box::new(NoTwins),
        "best-match" => {
            let aging = match params.get("aging") {
                Some(v) => v
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| format!("aging `{v}` is not a whole number of decisions"))?,
                None => 4,
            };
            Box::new(BestMatch::new(aging))
        }
        "auto-threshold" => {
            let num = |k: &str, default: f64| -> Result<f64, String> {
                match params.get(k) {
                    Some(v) => parse_threshold(v).map_err(|_| format!("{k} `{v}` is not a number")),
                    None => Ok(default),
                }
            };
            let explore = match params.get("explore").map(|v| v.trim()) {
                None | Some("on") | Some("true") | Some("yes") => true,
                Some("off") | Some("false") | Some("no") => false,
                Some(v) => return Err(format!("explore `{v}`: expected on or off")),
            };
            Box::new(AutoThreshold::new(num("bound", 1.5)?, num("start", 100.0)?, num("step", 10.0)?)?.exploring(explore))
        }
        _ => {
            let t = match params.get("threshold") {
                Some(v) => parse_threshold(v)?,
                None => {
                    return Err(
                        "policy `conflict-aware` needs threshold=T (a number or inf)".into(),
                    )
                }
            };
            Box::new(ConflictAware::new(t)?)
        }
    })
}

/// Accepts `100`, `100%` and `inf`: the threshold is in score units, which are
/// percent for C_all, so the sign is tolerated but not required.
fn parse_threshold(v: &str) -> Result<f64, String> {
    let s = v.trim();
    let s = s.strip_suffix('%').unwrap_or(s).trim();
    if s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("infinity") {
        return Ok(f64::INFINITY);
    }
    s.parse::<f64>()
        .map_err(|_| format!("threshold `{v}` is not a number or inf"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_builds_every_listed_policy() {
        for (name, _) in policy_names() {
            let mut p = Params::new();
            if name == "conflict-aware" {
                p.insert("threshold".into(), "100%".into());
            }
            assert!(policy_by_name(name, &p).is_ok(), "{name}");
        }
    }

    #[test]
    fn registry_refuses_mistakes() {
        let mut p = Params::new();
        assert!(policy_by_name("fifo", &p)
            .err()
            .unwrap()
            .contains("unknown policy"));
        assert!(policy_by_name("conflict-aware", &p)
            .err()
            .unwrap()
            .contains("needs threshold"));
        p.insert("threshold".into(), "lots".into());
        assert!(policy_by_name("conflict-aware", &p)
            .err()
            .unwrap()
            .contains("not a number"));
        assert!(policy_by_name("noplan", &p)
            .err()
            .unwrap()
            .contains("no parameters"));
        assert_eq!(parse_threshold("inf"), Ok(f64::INFINITY));
        assert_eq!(parse_threshold(" 150 % "), Ok(150.0));
    }
}
