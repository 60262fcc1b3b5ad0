//! How good predictions are: the figures of the SCN paper (share within 5 %
//! and 30 % of the measured slowdown) and the SX-Aurora paper (correlation), the mean
//! absolute error, and how well severe conflicts are caught.

use serde::{Deserialize, Serialize};

/// A slowdown above this is a severe conflict unless the caller says otherwise.
pub const DEFAULT_SEVERE: f64 = 1.3;

/// The precision a swept severe cut must keep ([`recall_at_precision`]):
/// flagging every third pair wrongly still spares a scheduler most of the
/// co-runs that hurt (issue 21's bar, recall at precision >= 0.7).
pub const DEFAULT_AT_PRECISION: f64 = 0.7;

/// The best recall of severe conflicts that any cut on the predicted
/// slowdown reaches while its precision stays at or above `min_precision`.
/// It reads how well the predictions *rank* severe pairs above the rest,
/// whatever their scale; the cut it needs says how far that scale is off
/// (a predictor that shrinks towards 1 needs a cut below the level).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecallAt {
    pub min_precision: f64,
    /// 0 when no cut keeps the precision.
    pub recall: f64,
    /// The precision at `cut`; `None` when no cut keeps `min_precision`.
    pub precision: Option<f64>,
    /// Pairs predicted at or above this are flagged; `None` as above.
    pub cut: Option<f64>,
}

/// Accuracy of predictions against measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub n: usize,
    /// Share of predictions with |p - m| / m <= 0.05.
    pub within_5: f64,
    /// Share with |p - m| / m <= 0.30.
    pub within_30: f64,
    /// Mean |p - m|, in slowdown units.
    pub mae: f64,
    /// `None` when either side is constant (no correlation is defined).
    pub pearson: Option<f64>,
    /// The lowest Pearson with any one pair left out: how much a single
    /// pair decides the correlation (see [`pearson_less_one`]).
    #[serde(default)]
    pub pearson_less_one: Option<f64>,
    pub spearman: Option<f64>,
    /// Severe level used for precision and recall.
    pub level: f64,
    /// Predicted severe (p > level) that were severe (m > level); `None`
    /// when nothing was predicted severe.
    pub precision: Option<f64>,
    /// Severe ones that were predicted severe; `None` when none was severe.
    pub recall: Option<f64>,
    /// Measured severe conflicts (the recall's denominator).
    pub severe: usize,
    /// Recall at precision >= [`DEFAULT_AT_PRECISION`] with the cut swept
    /// over the predictions; `None` when none was severe.
    #[serde(default)]
    pub recall_at: Option<RecallAt>,
}

/// Relative error |p - m| / m.
pub fn relative_error(predicted: f64, measured: f64) -> f64 {
    (predicted - measured).abs() / measured
}

/// Share of (predicted, measured) pairs within `tol` relative error; 0 for none.
pub fn within(pairs: &[(f64, f64)], tol: f64) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    // A hair of slack so that a prediction exactly at the bound counts as
    // within it whatever the rounding of the division.
    pairs.iter().filter(|(p, m)| relative_error(*p, *m) <= tol + 1e-12).count() as f64 / pairs.len() as f64
}

pub fn mae(pairs: &[(f64, f64)]) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    pairs.iter().map(|(p, m)| (p - m).abs()).sum::<f64>() / pairs.len() as f64
}

pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx).powi(2);
        syy += (b - my).powi(2);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// The lowest Pearson correlation of `x` and `y` with any one pair left
/// out, `None` where the full one is undefined. A set of near-equal
/// slowdowns around one large one correlates on that one pair alone;
/// this says so (leaving it out, the rest may correlate at 0.1). A
/// pair whose removal leaves one side constant decided the correlation
/// alone and counts as 0.
pub fn pearson_less_one(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(x, y)?;
    let n = x.len();
    if n < 4 {
        return None;
    }
    let mut lowest = f64::INFINITY;
    let (mut xs, mut ys) = (Vec::with_capacity(n - 1), Vec::with_capacity(n - 1));
    for i in 0..n {
        xs.clear();
        ys.clear();
        xs.extend(x.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, v)| *v));
        ys.extend(y.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, v)| *v));
        lowest = lowest.min(pearson(&xs, &ys).unwrap_or(0.0));
    }
    Some(lowest)
}

/// Ranks from 1, ties sharing their average rank.
pub fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Pearson correlation of the ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&ranks(x), &ranks(y))
}

/// Precision and recall of "slowdown above `level`".
pub fn severe(pairs: &[(f64, f64)], level: f64) -> (Option<f64>, Option<f64>, usize) {
    let (precision, recall) = flagged(pairs, level, |p| p > level);
    (precision, recall, pairs.iter().filter(|(_, m)| *m > level).count())
}

/// Precision and recall of flagging the pairs whose prediction `flag`s
/// as severe (measured above `level`).
fn flagged(pairs: &[(f64, f64)], level: f64, flag: impl Fn(f64) -> bool) -> (Option<f64>, Option<f64>) {
    let tp = pairs.iter().filter(|(p, m)| flag(*p) && *m > level).count();
    let flagged = pairs.iter().filter(|(p, _)| flag(*p)).count();
    let actual = pairs.iter().filter(|(_, m)| *m > level).count();
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    (ratio(tp, flagged), ratio(tp, actual))
}

/// [`RecallAt`] of (predicted, measured) slowdowns: every distinct predicted
/// value is tried as the cut (flag `predicted >= cut`); the highest recall
/// whose precision is at least `min_precision` wins, ties going to the
/// higher precision. `None` when no pair was measured above `level`.
pub fn recall_at_precision(pairs: &[(f64, f64)], level: f64, min_precision: f64) -> Option<RecallAt> {
    let severe = pairs.iter().filter(|(_, m)| *m > level).count();
    if severe == 0 {
        return None;
    }
    let mut sorted: Vec<(f64, f64)> = pairs.iter().copied().filter(|(p, _)| p.is_finite()).collect();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut best = RecallAt { min_precision, recall: 0.0, precision: None, cut: None };
    let (mut tp, mut flagged) = (0usize, 0usize);
    let mut i = 0;
    while i < sorted.len() {
        // Pairs predicted alike are flagged together.
        let cut = sorted[i].0;
        while i < sorted.len() && sorted[i].0 == cut {
            flagged += 1;
            tp += usize::from(sorted[i].1 > level);
            i += 1;
        }
        let precision = tp as f64 / flagged as f64;
        let recall = tp as f64 / severe as f64;
        let better = recall > best.recall || (recall == best.recall && recall > 0.0 && Some(precision) > best.precision);
        if precision >= min_precision && better {
            best = RecallAt { min_precision, recall, precision: Some(precision), cut: Some(cut) };
        }
    }
    Some(best)
}

/// Precision and recall of flagging `predicted >= cut` as severe.
pub fn severe_at_cut(pairs: &[(f64, f64)], level: f64, cut: f64) -> (Option<f64>, Option<f64>) {
    flagged(pairs, level, |p| p >= cut)
}

impl Accuracy {
    /// Scores (predicted, measured) slowdowns.
    pub fn of(pairs: &[(f64, f64)], level: f64) -> Accuracy {
        let p: Vec<f64> = pairs.iter().map(|x| x.0).collect();
        let m: Vec<f64> = pairs.iter().map(|x| x.1).collect();
        let (precision, recall, severe) = severe(pairs, level);
        Accuracy {
            n: pairs.len(),
            within_5: within(pairs, 0.05),
            within_30: within(pairs, 0.30),
            mae: mae(pairs),
            pearson: pearson(&p, &m),
            pearson_less_one: pearson_less_one(&p, &m),
            spearman: spearman(&p, &m),
            level,
            precision,
            recall,
            severe,
            recall_at: recall_at_precision(pairs, level, DEFAULT_AT_PRECISION),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed_case() {
        // Relative errors: 0, 0.04, 0.25, 0.5.
        let pairs = [(1.0, 1.0), (1.04, 1.0), (2.5, 2.0), (1.0, 2.0)];
        let a = Accuracy::of(&pairs, 1.3);
        assert_eq!(a.n, 4);
        assert_eq!(a.within_5, 0.5);
        assert_eq!(a.within_30, 0.75);
        assert!((a.mae - (0.0 + 0.04 + 0.5 + 1.0) / 4.0).abs() < 1e-12);
        // Severe measured: the two at 2.0; predicted severe: 2.5 only.
        assert_eq!((a.precision, a.recall, a.severe), (Some(1.0), Some(0.5), 2));
        // p = [1, 1.04, 2.5, 1], m = [1, 1, 2, 2]: means 1.385, 1.5;
        // sxy = 0.73, sxx = 1.6587, syy = 1.
        let r = a.pearson.unwrap();
        assert!((r - 0.73 / 1.6587f64.sqrt()).abs() < 1e-12, "{r}");
        // Ranks p: [1.5, 3, 4, 1.5], m: [1.5, 1.5, 3.5, 3.5].
        let rho = a.spearman.unwrap();
        let expected = pearson(&[1.5, 3.0, 4.0, 1.5], &[1.5, 1.5, 3.5, 3.5]).unwrap();
        assert!((rho - expected).abs() < 1e-12);
        assert!((expected - 1.0 / (4.5f64.sqrt() * 2.0)).abs() < 1e-12, "{expected}");
    }

    #[test]
    fn one_pair_that_alone_makes_the_correlation_is_found() {
        // Four near-equal pairs and one large one: r = 0.99 or so, and 0
        // without the large one (the predictions are then constant).
        let p = [1.0, 1.0, 1.0, 1.0, 2.0];
        let m = [1.0, 1.02, 0.98, 1.01, 1.9];
        assert!(pearson(&p, &m).unwrap() > 0.99);
        assert_eq!(pearson_less_one(&p, &m), Some(0.0));
        // A straight line stays one whichever pair goes.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((pearson_less_one(&x, &x).unwrap() - 1.0).abs() < 1e-12);
        // Hand-computed: without (3, 1) the rest is a line (r = 1); without
        // (1, 1): (2,2), (3,1), (4,4), r = 0.6547; without (2, 2): (1,1),
        // (3,1), (4,4), r = 0.7559; without (4, 4): (1,1), (2,2), (3,1),
        // r = 0 (sxy = 0), the lowest.
        let (a, b) = ([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 1.0, 4.0]);
        assert!(pearson_less_one(&a, &b).unwrap().abs() < 1e-12);
        assert_eq!(pearson_less_one(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), None, "three pairs leave two: no figure");
    }

    #[test]
    fn undefined_figures_are_none_not_zero() {
        let a = Accuracy::of(&[(1.0, 1.1), (1.0, 1.2)], 1.3);
        assert_eq!((a.pearson, a.precision, a.recall, a.severe), (None, None, None, 0));
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn recall_at_precision_sweeps_the_cut_down_the_ranking() {
        // Predicted (p) and measured (m), level 1.3; ranked by p:
        // 1.5 S, 1.25 S, 1.2 -, 1.15 S, 1.1 -, 1.0 S.
        let pairs = [(1.5, 1.6), (1.25, 1.4), (1.2, 1.1), (1.15, 1.35), (1.1, 1.0), (1.0, 1.5)];
        // Cuts: 1.5 -> 1/1, R .25; 1.25 -> 2/2, R .5; 1.2 -> 2/3; 1.15 ->
        // 3/4, R .75; 1.1 -> 3/5; 1.0 -> 4/6, R 1 at P .667.
        let r = recall_at_precision(&pairs, 1.3, 0.7).unwrap();
        assert_eq!((r.recall, r.precision, r.cut), (0.75, Some(0.75), Some(1.15)));
        let r = recall_at_precision(&pairs, 1.3, 0.6).unwrap();
        assert_eq!((r.recall, r.cut), (1.0, Some(1.0)));
        let r = recall_at_precision(&pairs, 1.3, 0.99).unwrap();
        assert_eq!((r.recall, r.precision, r.cut), (0.5, Some(1.0), Some(1.25)));
        // At the level itself only 1.5 is flagged: the fixed cut misses
        // what the ranking holds.
        assert_eq!(severe(&pairs, 1.3), (Some(1.0), Some(0.25), 4));
        assert_eq!(severe_at_cut(&pairs, 1.3, 1.15), (Some(0.75), Some(0.75)));
    }

    #[test]
    fn a_cut_never_splits_pairs_predicted_alike_and_may_find_nothing() {
        // Two pairs predicted 1.2, one severe: flagging one means both.
        let pairs = [(1.2, 1.5), (1.2, 1.0), (1.0, 1.0)];
        let r = recall_at_precision(&pairs, 1.3, 0.7).unwrap();
        assert_eq!((r.recall, r.precision, r.cut), (0.0, None, None));
        assert_eq!(recall_at_precision(&pairs, 1.3, 0.5).unwrap().cut, Some(1.2));
        assert_eq!(recall_at_precision(&[(2.0, 1.0)], 1.3, 0.7), None, "nothing severe: no figure");
    }

    proptest! {
        #[test]
        fn recall_at_precision_holds_its_precision_and_never_reads_below_the_fixed_cut(
            v in prop::collection::vec((0.8..2.0f64, 0.8..2.0f64), 1..40)
        ) {
            if let Some(r) = recall_at_precision(&v, 1.3, 0.7) {
                if let Some(cut) = r.cut {
                    let (p, rec) = severe_at_cut(&v, 1.3, cut);
                    prop_assert_eq!(p, r.precision);
                    prop_assert!(p.unwrap() >= 0.7);
                    prop_assert_eq!(rec, Some(r.recall));
                }
                // The fixed cut at the level is one of the sweep's cuts
                // (or flags nothing): whenever it keeps the precision, the
                // sweep does at least as well.
                if let (Some(p), Some(rec), _) = severe(&v, 1.3) {
                    if p >= 0.7 { prop_assert!(r.recall >= rec); }
                }
            }
        }

        #[test]
        fn perfect_predictions_score_perfectly(m in prop::collection::vec(0.5..3.0f64, 2..30)) {
            let pairs: Vec<(f64, f64)> = m.iter().map(|&v| (v, v)).collect();
            let a = Accuracy::of(&pairs, 1.3);
            prop_assert_eq!(a.within_5, 1.0);
            prop_assert_eq!(a.mae, 0.0);
            prop_assert!(a.recall.is_none_or(|r| r == 1.0) && a.precision.is_none_or(|p| p == 1.0));
            if let Some(r) = a.spearman { prop_assert!((r - 1.0).abs() < 1e-9); }
            if let Some(r) = a.recall_at { prop_assert_eq!((r.recall, r.precision), (1.0, Some(1.0))); }
        }

        #[test]
        fn leaving_one_out_never_reads_above_the_best_subset(
            v in prop::collection::vec((0.5..3.0f64, 0.5..3.0f64), 4..25)
        ) {
            let (p, m): (Vec<f64>, Vec<f64>) = v.into_iter().unzip();
            if let (Some(full), Some(low)) = (pearson(&p, &m), pearson_less_one(&p, &m)) {
                prop_assert!((-1.0 - 1e-9..=1.0 + 1e-9).contains(&low));
                // Some subset reads exactly `low` (or is undefined: 0).
                let hit = (0..p.len()).any(|i| {
                    let keep = |w: &[f64]| w.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| *x).collect::<Vec<f64>>();
                    (pearson(&keep(&p), &keep(&m)).unwrap_or(0.0) - low).abs() < 1e-12
                });
                prop_assert!(hit, "full {} low {}", full, low);
            }
        }
    }
}
