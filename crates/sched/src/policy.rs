//! The registry of policies by name; the policy trait and what a policy
//! sees live in `cosched_engine::policy` and are re-exported here.

pub use cosched_engine::policy::{Decision, JobOutcome, Params, Policy, PoolInfo, QueuedJob, RunningJob, View};

use crate::policies::{AutoThreshold, BestMatch, ConflictAware, Exclusive, NoPlan, NoTwins};

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
