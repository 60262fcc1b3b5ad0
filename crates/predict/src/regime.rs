//! Training data conditioned on the cache regime.
//!
//! On a shared VM whether the two vCPUs share a last-level cache changes
//! over hours, and a pair's slowdown changes with it (cache beside cache:
//! 1.93 sharing, 1.01 apart). Every pair repeat records the regime it ran
//! in (`CacheRegime` of its cache-line round trip, shared below
//! `model::regime::SHARED_CACHE_MAX_NS`), so a prediction for one regime
//! can be fitted on that regime's repeats: each ordered pair contributes
//! its repeats in the regime when it has any, else all its repeats (the
//! fallback is counted, and callers say so). Repeats whose regime is not
//! known (read before it was recorded, or changing during the repeat)
//! only ever enter through the fallback or `any`. This module names the
//! choice and what it kept; the rule that applies it to stored repeats is
//! the learning loop's (`cosched_learn::selection`).

use cosched_model::regime::CacheRegime;
use serde::{Deserialize, Serialize};

/// Which repeats a fit uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegimeChoice {
    /// Every repeat, whatever its regime.
    Any,
    /// The repeats of this regime, pair by pair where a pair has them.
    Only(CacheRegime),
}

impl RegimeChoice {
    /// `shared`, `apart` or `any`, as `--regime` takes them.
    pub fn parse(s: &str) -> Result<RegimeChoice, String> {
        match s {
            "shared" => Ok(RegimeChoice::Only(CacheRegime::Shared)),
            "apart" => Ok(RegimeChoice::Only(CacheRegime::Apart)),
            "any" => Ok(RegimeChoice::Any),
            _ => Err(format!("unknown regime `{s}`; expected shared, apart or any")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RegimeChoice::Any => "any",
            RegimeChoice::Only(CacheRegime::Shared) => "shared",
            RegimeChoice::Only(CacheRegime::Apart) => "apart",
        }
    }

    /// The one regime asked for, or None for every repeat.
    pub fn only(self) -> Option<CacheRegime> {
        match self {
            RegimeChoice::Any => None,
            RegimeChoice::Only(g) => Some(g),
        }
    }
}

/// What a regime selection kept: how many ordered pairs were fitted on
/// their repeats of the regime, how many fell back to all their repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegimeUse {
    pub regime: RegimeChoice,
    /// Ordered pairs whose samples are their repeats in the regime (all
    /// pairs under `any`).
    pub in_regime: usize,
    /// Ordered pairs without a repeat in the regime: all their repeats used.
    pub fell_back: usize,
    /// Samples used and samples left out (another regime, or unknown).
    pub samples_used: usize,
    pub samples_left_out: usize,
}

impl RegimeUse {
    /// `regime shared: 12 ordered pair(s) on their repeats in it, 3 on all
    /// their repeats (none in it), 9 sample(s) of other or unknown regimes
    /// left out`.
    pub fn describe(&self) -> String {
        match self.regime {
            RegimeChoice::Any => format!("regime any: every repeat ({} sample(s))", self.samples_used),
            RegimeChoice::Only(g) => {
                let mut s = format!(
                    "regime {} ({}): {} ordered pair(s) on their repeats in it",
                    self.regime.name(),
                    g.name(),
                    self.in_regime
                );
                if self.fell_back > 0 {
                    s.push_str(&format!(", {} on all their repeats (none in it; fallback)", self.fell_back));
                }
                s.push_str(&format!(", {} sample(s) of other or unknown regimes left out", self.samples_left_out));
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CacheRegime::Shared;

    #[test]
    fn regimes_parse_by_name() {
        assert_eq!(RegimeChoice::parse("shared"), Ok(RegimeChoice::Only(Shared)));
        assert_eq!(RegimeChoice::parse("apart").map(RegimeChoice::name), Ok("apart"));
        assert_eq!(RegimeChoice::parse("any"), Ok(RegimeChoice::Any));
        assert!(RegimeChoice::parse("both").unwrap_err().contains("shared, apart or any"));
    }
}
