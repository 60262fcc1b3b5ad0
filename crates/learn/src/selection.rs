//! Which repeats a fit counts: those of a cache regime, pair by pair
//! ([`select`]), and over many campaigns each pair's newest
//! ([`select_newest`]).
//!
//! On a shared VM whether the two vCPUs share a last-level cache changes
//! over hours, and a pair's slowdown changes with it (cache beside cache:
//! 1.93 sharing, 1.01 apart). Every pair repeat records the regime it ran
//! in, so a prediction for one regime can be fitted on that regime's
//! repeats: each ordered pair contributes its repeats in the regime when
//! it has any, else all its repeats (the fallback is counted, and callers
//! say so). Repeats whose regime is not known (read before it was
//! recorded, or changing during the repeat) only ever enter through the
//! fallback or `any`.

use std::collections::BTreeMap;

use cosched_model::regime::CacheRegime;
use cosched_predict::regime::{RegimeChoice, RegimeUse};
use cosched_predict::PairSamples;
use serde::{Deserialize, Serialize};

/// One measured slowdown of `victim` beside `aggressor`, with the regime
/// its repeat ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledSample {
    pub victim: String,
    pub aggressor: String,
    pub slowdown: f64,
    pub regime: Option<CacheRegime>,
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

/// A [`LabelledSample`] with where it was measured: a source (a
/// workload, or a workload's real runs) and a campaign of it (ids grow
/// with time).
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedSample {
    pub source: String,
    pub campaign: i64,
    pub sample: LabelledSample,
}

/// What [`select_newest`] kept, beside [`RegimeUse`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewestUse {
    /// Samples older campaigns of a source had of a pair a newer one
    /// measured again (left out whatever their regime).
    pub superseded: usize,
    /// Samples used, by (source, campaign).
    pub used_by: BTreeMap<(String, i64), usize>,
}

/// [`select`] over many campaigns of many sources. Within one source, a
/// pair counts only from the newest campaign that measured it: measuring a
/// pair again replaces it (the program, the binary or the node may have
/// changed since), and a campaign of a few pairs updates those alone.
/// Under a regime, the newest campaign with a repeat of the pair in it
/// wins, with its repeats in it; a pair with no such repeat in any source
/// falls back to each source's newest campaign, all its repeats, as
/// [`select`] does. Sources add up: a pair measured under two workload
/// files has the samples of both.
pub fn select_newest(samples: &[SourcedSample], choice: RegimeChoice) -> (Vec<PairSamples>, RegimeUse, NewestUse) {
    let mut by: BTreeMap<(&str, &str), Vec<&SourcedSample>> = BTreeMap::new();
    for s in samples {
        by.entry((s.sample.victim.as_str(), s.sample.aggressor.as_str())).or_default().push(s);
    }
    let mut used = RegimeUse { regime: choice, in_regime: 0, fell_back: 0, samples_used: 0, samples_left_out: 0 };
    let mut newest = NewestUse::default();
    let mut out = Vec::with_capacity(by.len());
    for ((victim, aggressor), all) in by {
        let in_regime = |s: &SourcedSample| match choice {
            RegimeChoice::Any => true,
            RegimeChoice::Only(g) => s.sample.regime == Some(g),
        };
        let any_in = all.iter().any(|s| in_regime(s));
        // Per source: the campaign the pair is taken from, and whether
        // only its repeats in the regime count.
        let mut chosen: BTreeMap<&str, i64> = BTreeMap::new();
        for s in &all {
            if !any_in || in_regime(s) {
                let c = chosen.entry(s.source.as_str()).or_insert(s.campaign);
                *c = (*c).max(s.campaign);
            }
        }
        let mut slowdowns = Vec::new();
        for s in &all {
            match chosen.get(s.source.as_str()) {
                Some(&c) if s.campaign == c && (!any_in || in_regime(s)) => {
                    slowdowns.push(s.sample.slowdown);
                    *newest.used_by.entry((s.source.clone(), s.campaign)).or_default() += 1;
                }
                Some(&c) if s.campaign < c => newest.superseded += 1,
                // Another regime in the chosen campaign or a newer one, or
                // a source with no repeat in the regime beside one with.
                _ => used.samples_left_out += 1,
            }
        }
        match (choice, any_in) {
            (RegimeChoice::Only(_), false) => used.fell_back += 1,
            _ => used.in_regime += 1,
        }
        used.samples_used += slowdowns.len();
        out.push(PairSamples { victim: victim.to_string(), aggressor: aggressor.to_string(), slowdowns });
    }
    (out, used, newest)
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

    fn at(source: &str, campaign: i64, sample: LabelledSample) -> SourcedSample {
        SourcedSample { source: source.into(), campaign, sample }
    }

    #[test]
    fn a_pair_measured_again_counts_only_from_its_newest_campaign_per_source() {
        let samples = vec![
            at("w", 3, s("a", "b", 1.5, Some(Apart))),
            at("w", 3, s("a", "b", 1.6, Some(Apart))),
            // Campaign 7 measured a-b again: 3's samples are superseded.
            at("w", 7, s("a", "b", 1.1, Some(Apart))),
            // b-a only in campaign 3: still used.
            at("w", 3, s("b", "a", 1.2, Some(Apart))),
            // Another workload's campaign 5 of a-b adds up with w's newest.
            at("v", 5, s("a", "b", 1.3, None)),
        ];
        let (pairs, used, newest) = select_newest(&samples, RegimeChoice::Any);
        let got: Vec<(&str, &str, Vec<f64>)> =
            pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str(), p.slowdowns.clone())).collect();
        assert_eq!(got, vec![("a", "b", vec![1.1, 1.3]), ("b", "a", vec![1.2])]);
        assert_eq!((used.in_regime, used.fell_back, used.samples_used, used.samples_left_out), (2, 0, 3, 0));
        assert_eq!(newest.superseded, 2);
        let by: Vec<((String, i64), usize)> = newest.used_by.into_iter().collect();
        assert_eq!(by, vec![(("v".into(), 5), 1), (("w".into(), 3), 1), (("w".into(), 7), 1)]);
    }

    #[test]
    fn under_a_regime_the_newest_campaign_with_a_repeat_in_it_wins() {
        let samples = vec![
            // Shared repeats in campaign 2, an apart campaign 4 after it.
            at("w", 2, s("x", "x", 1.9, Some(Shared))),
            at("w", 2, s("x", "x", 1.0, Some(Apart))),
            at("w", 4, s("x", "x", 1.02, Some(Apart))),
            // Only apart anywhere: falls back to the newest campaign.
            at("w", 2, s("x", "y", 1.4, Some(Apart))),
            at("w", 4, s("x", "y", 1.05, Some(Apart))),
            // In the regime in source w only: source v's sample is left out.
            at("w", 4, s("y", "x", 1.7, Some(Shared))),
            at("v", 9, s("y", "x", 1.1, Some(Apart))),
        ];
        let (pairs, used, newest) = select_newest(&samples, RegimeChoice::Only(Shared));
        let got: Vec<(&str, &str, Vec<f64>)> =
            pairs.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str(), p.slowdowns.clone())).collect();
        assert_eq!(got, vec![("x", "x", vec![1.9]), ("x", "y", vec![1.05]), ("y", "x", vec![1.7])]);
        assert_eq!((used.in_regime, used.fell_back, used.samples_used), (2, 1, 3));
        // x-x: campaign 2's apart repeat and campaign 4's; y-x: v's.
        assert_eq!(used.samples_left_out, 3);
        // x-y: campaign 2, older than the newest.
        assert_eq!(newest.superseded, 1);
        // Apart: each pair from its newest campaign with an apart repeat.
        let (pairs, _, _) = select_newest(&samples, RegimeChoice::Only(Apart));
        let got: Vec<Vec<f64>> = pairs.iter().map(|p| p.slowdowns.clone()).collect();
        assert_eq!(got, vec![vec![1.02], vec![1.05], vec![1.1]]);
    }

    #[test]
    fn any_keeps_every_repeat() {
        let (pairs, used) = select(&samples(), RegimeChoice::Any);
        assert_eq!(pairs[0].slowdowns, vec![1.9, 1.0, 1.95]);
        assert_eq!((used.in_regime, used.fell_back, used.samples_used, used.samples_left_out), (3, 0, 5, 0));
    }
}
