//! The few fitting procedures the predictors need, written out: isotonic
//! regression (pool adjacent violators), ridge regression by its normal
//! equations, and an error band from in-sample residuals.
//!
//! Why not a crate: the problems are tiny (a few hundred pairs, a few dozen
//! features), and the candidates (linfa-linear, smartcore) bring ndarray
//! and dozens of crates that take minutes to build on this 2-core node; a
//! Cholesky solve of a 40 x 40 system is a page of code that tests pin down.

use cosched_model::stats::quantile_sorted;
use serde::{Deserialize, Serialize};

/// A monotone non-decreasing step fit of `y` against `x`, read by linear
/// interpolation between the centres of its blocks and held flat beyond
/// the first and last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isotonic {
    /// (x, fitted y) at each block's mean x, x increasing.
    knots: Vec<(f64, f64)>,
}

impl Isotonic {
    /// Least-squares non-decreasing fit (pool adjacent violators). `None`
    /// without points.
    pub fn fit(points: &[(f64, f64)]) -> Option<Isotonic> {
        if points.is_empty() {
            return None;
        }
        let mut p: Vec<(f64, f64)> = points.to_vec();
        p.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        // Blocks: (sum x, sum y, count). Equal x always pool: a function
        // has one value per x.
        let mut blocks: Vec<(f64, f64, f64)> = Vec::new();
        let mut last_x = f64::NAN;
        for (x, y) in p {
            if x == last_x {
                let b = blocks.last_mut().expect("a block exists for the previous x");
                *b = (b.0 + x, b.1 + y, b.2 + 1.0);
            } else {
                blocks.push((x, y, 1.0));
            }
            last_x = x;
            while blocks.len() >= 2 {
                let n = blocks.len();
                let (a, b) = (blocks[n - 2], blocks[n - 1]);
                if a.1 / a.2 <= b.1 / b.2 {
                    break;
                }
                blocks.truncate(n - 2);
                blocks.push((a.0 + b.0, a.1 + b.1, a.2 + b.2));
            }
        }
        Some(Isotonic { knots: blocks.iter().map(|b| (b.0 / b.2, b.1 / b.2)).collect() })
    }

    pub fn at(&self, x: f64) -> f64 {
        let k = &self.knots;
        if x <= k[0].0 {
            return k[0].1;
        }
        if x >= k[k.len() - 1].0 {
            return k[k.len() - 1].1;
        }
        let i = k.partition_point(|(kx, _)| *kx <= x);
        let ((x0, y0), (x1, y1)) = (k[i - 1], k[i]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }

    pub fn knots(&self) -> &[(f64, f64)] {
        &self.knots
    }
}

/// A linear model `y = intercept + sum(coef_i * x_i)`, fitted by ridge
/// regression on standardized features (the intercept is not penalized).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    pub intercept: f64,
    pub coef: Vec<f64>,
}

impl Linear {
    /// Fits rows `xs` (each of the same length) to `ys` with penalty
    /// `lambda` (0 = ordinary least squares, where the system is
    /// non-singular). Constant features get coefficient 0. `None` without
    /// rows or when the system is singular.
    pub fn ridge(xs: &[Vec<f64>], ys: &[f64], lambda: f64) -> Option<Linear> {
        let n = xs.len();
        if n == 0 || ys.len() != n {
            return None;
        }
        let p = xs[0].len();
        let nf = n as f64;
        let mean: Vec<f64> = (0..p).map(|j| xs.iter().map(|r| r[j]).sum::<f64>() / nf).collect();
        let sd: Vec<f64> = (0..p)
            .map(|j| (xs.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / nf).sqrt())
            .collect();
        let live: Vec<usize> = (0..p).filter(|&j| sd[j] > 1e-12 * (1.0 + mean[j].abs())).collect();
        let ym = ys.iter().sum::<f64>() / nf;
        let z = |r: &Vec<f64>, j: usize| (r[j] - mean[j]) / sd[j];
        let m = live.len();
        let mut a = vec![vec![0.0; m]; m];
        let mut b = vec![0.0; m];
        for (r, y) in xs.iter().zip(ys) {
            for (ai, &i) in live.iter().enumerate() {
                let zi = z(r, i);
                b[ai] += zi * (y - ym);
                for (aj, &j) in live.iter().enumerate().skip(ai) {
                    a[ai][aj] += zi * z(r, j);
                }
            }
        }
        for i in 0..m {
            let (above, row) = a.split_at_mut(i);
            for (j, r) in above.iter().enumerate() {
                row[0][j] = r[i];
            }
            row[0][i] += lambda * nf;
        }
        let w = solve_spd(a, b)?;
        let mut coef = vec![0.0; p];
        let mut intercept = ym;
        for (ai, &j) in live.iter().enumerate() {
            coef[j] = w[ai] / sd[j];
            intercept -= coef[j] * mean[j];
        }
        Some(Linear { intercept, coef })
    }

    pub fn at(&self, x: &[f64]) -> f64 {
        self.intercept + self.coef.iter().zip(x).map(|(c, v)| c * v).sum::<f64>()
    }
}

/// Each column's (min, max) over the rows `xs`.
pub(crate) fn column_ranges(xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
    let p = xs.first().map_or(0, Vec::len);
    (0..p).map(|j| xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r[j]), hi.max(r[j])))).collect()
}

/// `x` with each column held within its range: a linear model read beyond
/// every training row extrapolates without bound.
pub(crate) fn clamp_to(mut x: Vec<f64>, ranges: &[(f64, f64)]) -> Vec<f64> {
    for (v, &(lo, hi)) in x.iter_mut().zip(ranges) {
        *v = v.clamp(lo, hi);
    }
    x
}

/// Solves `a w = b` for a symmetric positive (semi)definite `a` by Cholesky;
/// `None` when `a` is singular.
// Index loops read as the textbook's Cholesky steps, row against row.
#[allow(clippy::needless_range_loop)]
fn solve_spd(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    let scale = (0..n).map(|i| a[i][i].abs()).fold(0.0, f64::max).max(1.0);
    for j in 0..n {
        let mut d = a[j][j];
        for k in 0..j {
            d -= a[j][k] * a[j][k];
        }
        if d <= 1e-12 * scale {
            return None;
        }
        let d = d.sqrt();
        a[j][j] = d;
        for i in j + 1..n {
            let mut s = a[i][j];
            for k in 0..j {
                s -= a[i][k] * a[j][k];
            }
            a[i][j] = s / d;
        }
    }
    for i in 0..n {
        for k in 0..i {
            b[i] -= a[i][k] * b[k];
        }
        b[i] /= a[i][i];
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            b[i] -= a[k][i] * b[k];
        }
        b[i] /= a[i][i];
    }
    Some(b)
}

/// Multiplicative error band: the 10th and 90th percentiles of
/// ln(measured / predicted) over the pairs a predictor was fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub lo: f64,
    pub hi: f64,
}

impl Default for Band {
    fn default() -> Self {
        Band { lo: 0.0, hi: 0.0 }
    }
}

impl Band {
    /// From (measured, predicted) pairs; an empty band without any.
    pub fn of(pairs: &[(f64, f64)]) -> Band {
        let mut r: Vec<f64> =
            pairs.iter().filter(|(m, p)| *m > 0.0 && *p > 0.0).map(|(m, p)| (m / p).ln()).collect();
        if r.is_empty() {
            return Band::default();
        }
        r.sort_by(f64::total_cmp);
        Band { lo: quantile_sorted(&r, 0.1).min(0.0), hi: quantile_sorted(&r, 0.9).max(0.0) }
    }

    pub fn around(&self, s: f64) -> crate::Prediction {
        crate::Prediction { slowdown: s, lo: s * self.lo.exp(), hi: s * self.hi.exp() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn isotonic_pools_a_violation_and_interpolates_between_blocks() {
        // 3 then 1 violate: pooled to 2 at x = 1.5.
        let f = Isotonic::fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 1.0), (3.0, 4.0)]).unwrap();
        assert_eq!(f.knots(), &[(0.0, 1.0), (1.5, 2.0), (3.0, 4.0)]);
        assert_eq!(f.at(-5.0), 1.0);
        assert_eq!(f.at(0.75), 1.5);
        assert_eq!(f.at(2.25), 3.0);
        assert_eq!(f.at(10.0), 4.0);
    }

    #[test]
    fn least_squares_recovers_an_exact_plane() {
        let xs: Vec<Vec<f64>> = (0..20).map(|i| vec![i as f64, ((i * 7) % 5) as f64, 3.0]).collect();
        let ys: Vec<f64> = xs.iter().map(|r| 0.5 + 2.0 * r[0] - 1.5 * r[1]).collect();
        let m = Linear::ridge(&xs, &ys, 0.0).unwrap();
        assert!((m.intercept - 0.5).abs() < 1e-9, "{m:?}");
        assert!((m.coef[0] - 2.0).abs() < 1e-9 && (m.coef[1] + 1.5).abs() < 1e-9, "{m:?}");
        assert_eq!(m.coef[2], 0.0, "a constant feature carries nothing");
    }

    #[test]
    fn the_band_spans_the_10th_to_90th_percentile_of_log_errors() {
        let e = std::f64::consts::E;
        let pairs: Vec<(f64, f64)> = (0..11).map(|i| ((i as f64 - 5.0) / 5.0, 1.0)).map(|(l, p)| (e.powf(l), p)).collect();
        let b = Band::of(&pairs);
        assert!((b.lo + 0.8).abs() < 1e-12 && (b.hi - 0.8).abs() < 1e-12, "{b:?}");
        let p = b.around(2.0);
        assert!((p.lo - 2.0 * (-0.8f64).exp()).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn isotonic_fit_is_monotone_everywhere(points in prop::collection::vec((0.0..10.0f64, 0.0..5.0f64), 1..40)) {
            let f = Isotonic::fit(&points).unwrap();
            for w in f.knots().windows(2) {
                prop_assert!(w[0].1 <= w[1].1 + 1e-12);
                prop_assert!(w[0].0 < w[1].0);
            }
            let lo = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let hi = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            let mut prev = f64::NEG_INFINITY;
            for i in 0..=120 {
                let y = f.at(i as f64 / 10.0 - 1.0);
                prop_assert!(y >= prev - 1e-12);
                prop_assert!(y >= lo - 1e-12 && y <= hi + 1e-12);
                prev = y;
            }
        }
    }
}
