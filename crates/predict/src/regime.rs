//! Training data conditioned on the cache regime.
//!
//! On a shared VM whether the two vCPUs share a last-level cache changes
//! over hours, and a pair's slowdown changes with it (cache beside cache:
//! 1.93 sharing, 1.01 apart). Every pair repeat records the regime it ran
//! in (`CacheRegime` of its cache-line round trip, shared below
//! `model::compare::SHARED_CACHE_MAX_NS`), so a prediction for one regime
//! can be fitted on that regime's repeats: each ordered pair contributes
//! its repeats in the regime when it has any, else all its repeats (the
//! fallback is counted, and callers say so). Repeats whose regime is not
//! known (read before it was recorded, or changing during the repeat)
//! only ever enter through the fallback or `any`.

use std::collections::BTreeMap;

use cosched_model::compare::CacheRegime;
use serde::{Deserialize, Serialize};

use crate::PairSamples;

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
}

/// One measured slowdown of `victim` beside `aggressor`, with the regime
/// its repeat ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledSample {
    pub victim: String,
    pub aggressor: String,
    pub slowdown: f64,
    pub regime: Option<CacheRegime>,
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

/// The pair samples a fit for `choice` uses, in ordered-pair order, and
/// what was kept.
pub fn select(samples: &[LabelledSample], choice: RegimeChoice) -> (Vec<PairSamples>, RegimeUse) {
    let mut by: BTreeMap<(&str, &str), Vec<&LabelledSample>> = BTreeMap::new();
    for s in samples {
        by.entry((s.victim.as_str(), s.aggressor.as_str())).or_default().push(s);
    }
    let mut used = RegimeUse { regime: choice, in_regime: 0, fell_back: 0, samples_used: 0, samples_left_out: 0 };
    let mut out = Vec::with_capacity(by.len());
    for ((victim, aggressor), all) in by {
        let kept: Vec<f64> = match choice {
            RegimeChoice::Any => all.iter().map(|s| s.slowdown).collect(),
            RegimeChoice::Only(g) => all.iter().filter(|s| s.regime == Some(g)).map(|s| s.slowdown).collect(),
        };
        let slowdowns = if kept.is_empty() {
            used.fell_back += 1;
            all.iter().map(|s| s.slowdown).collect()
        } else {
            used.in_regime += 1;
            used.samples_left_out += all.len() - kept.len();
            kept
        };
        used.samples_used += slowdowns.len();
        out.push(PairSamples { victim: victim.to_string(), aggressor: aggressor.to_string(), slowdowns });
    }
    (out, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CacheRegime::{Apart, Shared};

    fn s(v: &str, a: &str, slowdown: f64, regime: Option<CacheRegime>) -> LabelledSample {
        LabelledSample { victim: v.into(), aggressor: a.into(), slowdown, regime }
    }

    fn samples() -> Vec<LabelledSample> {
        vec![
            // cache beside cache: 1.9 sharing, 1.0 apart (this VM's figures).
            s("cache", "cache", 1.9, Some(Shared)),
            s("cache", "cache", 1.0, Some(Apart)),
            s("cache", "cache", 1.95, Some(Shared)),
            // Measured apart only.
            s("cache", "compute", 1.02, Some(Apart)),
            // Unknown regime (an old row) and one that changed mid-repeat.
            s("compute", "cache", 1.1, None),
        ]
    }

    #[test]
    fn a_regime_uses_its_own_repeats_and_falls_back_pair_by_pair() {
        let (pairs, used) = select(&samples(), RegimeChoice::Only(Shared));
        let got: Vec<(&str, &str, Vec<f64>)> =
            pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str(), p.slowdowns.clone())).collect();
        assert_eq!(
            got,
            vec![("cache", "cache", vec![1.9, 1.95]), ("cache", "compute", vec![1.02]), ("compute", "cache", vec![1.1])]
        );
        assert_eq!((used.in_regime, used.fell_back, used.samples_used, used.samples_left_out), (1, 2, 4, 1));
        assert!(used.describe().contains("2 on all their repeats (none in it; fallback)"), "{}", used.describe());
        let (apart, used) = select(&samples(), RegimeChoice::Only(Apart));
        assert_eq!(apart[0].slowdowns, vec![1.0]);
        assert_eq!((used.in_regime, used.fell_back), (2, 1));
    }

    #[test]
    fn any_keeps_every_repeat() {
        let (pairs, used) = select(&samples(), RegimeChoice::Any);
        assert_eq!(pairs[0].slowdowns, vec![1.9, 1.0, 1.95]);
        assert_eq!((used.in_regime, used.fell_back, used.samples_used, used.samples_left_out), (3, 0, 5, 0));
    }

    #[test]
    fn regimes_parse_by_name() {
        assert_eq!(RegimeChoice::parse("shared"), Ok(RegimeChoice::Only(Shared)));
        assert_eq!(RegimeChoice::parse("apart").map(RegimeChoice::name), Ok("apart"));
        assert_eq!(RegimeChoice::parse("any"), Ok(RegimeChoice::Any));
        assert!(RegimeChoice::parse("both").unwrap_err().contains("shared, apart or any"));
    }
}
