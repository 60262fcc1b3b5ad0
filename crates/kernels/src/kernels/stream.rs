//! `stream`: the STREAM triad `a[i] = b[i] + s * c[i]`.
//!
//! Three arrays of `array_mib` MiB each. With threads, every thread owns a
//! contiguous slice of each array, allocated and first touched by itself (as
//! STREAM's OpenMP initialisation does, so pages land on the thread's NUMA
//! node), and the threads meet at a barrier after every pass. Bytes are
//! counted as STREAM does: 24 per element per pass (two loads, one store;
//! write-allocate traffic is not counted).

use std::sync::Barrier;
use std::time::Instant;

use crate::util::{chunk, combine, mix, run_parallel, KernelRun, Params, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "bytes";

const SCALAR: f64 = 3.0;
const BYTES_PER_ELEMENT: u64 = 24;
/// Elements between two checksum samples (one per 4 KiB page of `a`).
const SAMPLE_STRIDE: usize = 512;

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let mib = p.uint_min("array_mib", 1)?;
    let elements = mib
        .checked_mul(1 << 20)
        .map(|b| b / 8)
        .filter(|e| usize::try_from(*e).is_ok())
        .ok_or_else(|| p.bad("array_mib", "too large for this machine's address space"))?
        as usize;
    let started = Instant::now();
    let pass_line = Barrier::new(threads as usize);
    crate::progress::expect(work.saturating_mul(elements as u64));
    let (sums, timing) = run_parallel(
        threads,
        started,
        |i| Ok(prepare(chunk(elements, threads, i))),
        |_, (a, b, c)| {
            for _ in 0..work {
                triad(a, b, c, SCALAR);
                std::hint::black_box(&mut *a);
                crate::progress::add(a.len() as u64);
                if threads > 1 {
                    pass_line.wait();
                }
            }
            a.iter()
                .step_by(SAMPLE_STRIDE)
                // Every pass writes the same values, so the pass count goes in too.
                .fold(mix(mix(CHECKSUM_SEED, a.len() as u64), work), |h, x| mix(h, x.to_bits()))
        },
    )?;
    let bytes = BYTES_PER_ELEMENT * elements as u64 * work;
    Ok(KernelRun::new(timing, bytes, OPS_UNIT, combine(sums)).bandwidth(bytes))
}

/// One thread's slices of the three arrays, first touched here, on the
/// thread that will use them, then one untimed triad pass: the first pass
/// over fresh memory runs slower (TLB and page-table walks, the core's
/// clock still rising, `a` not yet in the state every pass leaves it in).
/// The pass writes the values every timed pass writes, so the checksum
/// and the operation count are those of the timed work alone. (A short
/// run's rate at 0.83 of a long one's, issue 42, was mostly the arrays'
/// freeing, timed until `run_parallel` moved it after the timed phase.)
fn prepare(range: std::ops::Range<usize>) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let b: Vec<f64> = range.clone().map(|g| (g % 1000) as f64 * 0.5).collect();
    let c: Vec<f64> = range.clone().map(|g| (g % 37) as f64).collect();
    // Not zeros: a zeroed vec! comes from untouched calloc pages, and
    // the first touch must happen here, on this thread.
    let mut a = vec![1.0f64; range.len()];
    triad(&mut a, &b, &c, SCALAR);
    std::hint::black_box(&mut a);
    (a, b, c)
}

/// The triad over zipped slices: no index, no bounds check, and `a` cannot
/// alias `b` or `c`, so LLVM vectorises it without runtime checks.
#[inline(never)]
pub(crate) fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = y + s * z;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warm_up_pass_runs_in_set_up_so_the_arrays_hold_a_passs_result_before_timing() {
        let (a, b, c) = prepare(1000..1600);
        assert_eq!((a.len(), b.len(), c.len()), (600, 600, 600));
        for i in 0..600 {
            let g = 1000 + i;
            assert_eq!(b[i], (g % 1000) as f64 * 0.5);
            assert_eq!(c[i], (g % 37) as f64);
            assert_eq!(a[i], b[i] + SCALAR * c[i], "element {i}: no triad pass before the timed phase");
        }
    }

    #[test]
    fn the_timed_phase_counts_only_its_own_passes_and_the_checksum_is_a_full_runs() {
        let spec = cosched_model::kernel::kernel("stream").unwrap();
        let map = std::collections::BTreeMap::from([("array_mib".to_string(), "1".to_string())]);
        let p = Params::new(spec, &map);
        let one = run(1, 1, &p).unwrap();
        let three = run(3, 1, &p).unwrap();
        assert_eq!(one.ops, BYTES_PER_ELEMENT * (1 << 17));
        assert_eq!(three.ops, 3 * one.ops);
        assert_ne!(one.checksum, three.checksum, "the pass count is part of the checksum");
    }
}
