//! `dgemm`: blocked double-precision C += A * B on n x n row-major matrices.
//!
//! One unit is one full multiply (2 n^3 flops). With threads, each thread owns
//! a contiguous band of C's rows (allocated and first touched by that thread)
//! and applies every multiply to it; A and B are shared and read-only, so no
//! synchronisation is needed between units. Every C element accumulates its
//! products in the same k order whatever the band split, so the result and
//! the checksum do not depend on the thread count.

use std::time::Instant;

use crate::util::{combine, per_second, run_parallel, KernelRun, Params};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "flops";

/// Rows of B (k range) in one tile: 64 rows of up to 256 doubles (128 KiB)
/// stay in L2 while every row of the band streams over them.
const KB: usize = 64;
/// Columns of one tile: a C row segment of 256 doubles (2 KiB) stays in L1.
const JB: usize = 256;

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let n64 = p.uint_min("n", 1)?;
    if n64 > 1 << 15 {
        return Err(p.bad("n", &format!("expected at most {} (three n x n matrices of doubles), got {n64}", 1 << 15)));
    }
    let n = n64 as usize;
    let started = Instant::now();
    let a: Vec<f64> = (0..n * n).map(|x| element(x / n, x % n, 7, 3)).collect();
    let b: Vec<f64> = (0..n * n).map(|x| element(x / n, x % n, 5, 11)).collect();
    let (bands, timing) = run_parallel(
        threads,
        started,
        |i| {
            let rows = crate::util::chunk(n, threads, i);
            Ok((rows.start, vec![0.0f64; rows.len() * n]))
        },
        |_, (row0, c)| {
            for _ in 0..work {
                multiply_band(&a, &b, c, *row0, n);
                std::hint::black_box(&mut *c);
            }
            std::mem::take(c)
        },
    )?;
    let checksum = combine(bands.iter().flatten().map(|x| x.to_bits()));
    let flops = 2 * n64 * n64 * n64 * work;
    let gflops = per_second(flops as f64, timing.wall_s) / 1e9;
    Ok(KernelRun::new(timing, flops, OPS_UNIT, checksum).figure("gflop_s", gflops))
}

/// Small exact values (multiples of 1/16 in [-0.5, 0.5]) so sums stay exact
/// for a long time and never overflow.
fn element(i: usize, j: usize, fi: usize, fj: usize) -> f64 {
    ((i * fi + j * fj) % 17) as f64 / 16.0 - 0.5
}

fn multiply_band(a: &[f64], b: &[f64], c: &mut [f64], row0: usize, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, the feature `multiply_band_avx2`
            // is compiled for.
            unsafe { multiply_band_avx2(a, b, c, row0, n) };
            return;
        }
    }
    multiply_band_generic(a, b, c, row0, n);
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn multiply_band_avx2(a: &[f64], b: &[f64], c: &mut [f64], row0: usize, n: usize) {
    multiply_band_generic(a, b, c, row0, n);
}

/// C[band] += A[band] * B, tiled over k and j. The k loop is unrolled by four
/// with a left-to-right sum, which adds the products in plain k order (same
/// rounding as the naive loop) while loading each C element once per four k.
#[inline(always)]
fn multiply_band_generic(a: &[f64], b: &[f64], c: &mut [f64], row0: usize, n: usize) {
    let rows = c.len() / n;
    for kk in (0..n).step_by(KB) {
        let kend = (kk + KB).min(n);
        for jj in (0..n).step_by(JB) {
            let jend = (jj + JB).min(n);
            for r in 0..rows {
                let a_row = &a[(row0 + r) * n..(row0 + r + 1) * n];
                let c_seg = &mut c[r * n + jj..r * n + jend];
                let mut k = kk;
                while k + 4 <= kend {
                    let (a0, a1, a2, a3) = (a_row[k], a_row[k + 1], a_row[k + 2], a_row[k + 3]);
                    let b0 = &b[k * n + jj..k * n + jend];
                    let b1 = &b[(k + 1) * n + jj..(k + 1) * n + jend];
                    let b2 = &b[(k + 2) * n + jj..(k + 2) * n + jend];
                    let b3 = &b[(k + 3) * n + jj..(k + 3) * n + jend];
                    for ((((cv, x0), x1), x2), x3) in c_seg.iter_mut().zip(b0).zip(b1).zip(b2).zip(b3) {
                        *cv = *cv + a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3;
                    }
                    k += 4;
                }
                while k < kend {
                    let ak = a_row[k];
                    for (cv, x) in c_seg.iter_mut().zip(&b[k * n + jj..k * n + jend]) {
                        *cv += ak * x;
                    }
                    k += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for k in 0..n {
                for j in 0..n {
                    c[i * n + j] += a[i * n + k] * b[k * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn blocked_multiply_equals_the_naive_loop_bit_for_bit() {
        for n in [1, 5, 67, 300] {
            let a: Vec<f64> = (0..n * n).map(|x| element(x / n, x % n, 7, 3)).collect();
            let b: Vec<f64> = (0..n * n).map(|x| element(x / n, x % n, 5, 11)).collect();
            let mut c = vec![0.0; n * n];
            // Two bands, as with two threads.
            let (top, bottom) = c.split_at_mut((n / 2) * n);
            multiply_band(&a, &b, top, 0, n);
            multiply_band(&a, &b, bottom, n / 2, n);
            assert_eq!(c, naive(&a, &b, n), "n = {n}");
        }
    }
}
