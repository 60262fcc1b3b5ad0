//! `compute`: chains of fused multiply-adds on values held in registers.
//!
//! 32 independent accumulators give enough independent chains to cover the
//! FMA latency on current cores (4-cycle latency x 2 pipes x 4 lanes), so the
//! kernel is bound by the floating-point units and touches no memory: class N.
//! Each step is `x = x * A + B` with a fixed point at 1, so the values stay
//! normal numbers for any amount of work.

use std::time::Instant;

use crate::util::{combine, per_second, run_parallel, share, KernelRun};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "flops";

const ACCUMULATORS: usize = 32;
const FMAS_PER_UNIT: u64 = 1_000_000;
const STEPS_PER_UNIT: u64 = FMAS_PER_UNIT / ACCUMULATORS as u64;
const _: () = assert!(STEPS_PER_UNIT * ACCUMULATORS as u64 == FMAS_PER_UNIT);

const A: f64 = 0.999_999_9;
const B: f64 = 1.0e-7;

pub(crate) fn run(work: u64, threads: u32) -> Result<KernelRun, KernelError> {
    let started = Instant::now();
    crate::progress::expect(work);
    let (sums, timing) = run_parallel(
        threads,
        started,
        |_| Ok(()),
        |i, _| {
            let mut acc = [0.0f64; ACCUMULATORS];
            for (j, x) in acc.iter_mut().enumerate() {
                *x = 1.0 + j as f64 * 1.0e-3;
            }
            // Unit by unit, so a watcher sees the work go by; the same
            // steps in the same order, so the same checksum.
            for _ in 0..share(work, threads, i) {
                fma_steps(&mut acc, STEPS_PER_UNIT);
                crate::progress::add(1);
            }
            combine(acc.iter().map(|x| x.to_bits()))
        },
    )?;
    let flops = 2 * FMAS_PER_UNIT * work;
    let gflops = per_second(flops as f64, timing.wall_s) / 1e9;
    Ok(KernelRun::new(timing, flops, OPS_UNIT, combine(sums)).figure("gflop_s", gflops))
}

/// Runs `steps` FMA steps on every accumulator, with hardware FMA when the
/// CPU has it. `mul_add` is correctly rounded either way, so the results (and
/// the checksum) do not depend on which path ran.
fn fma_steps(acc: &mut [f64; ACCUMULATORS], steps: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports the features `fma_steps_fma` is compiled
            // for; that is the only requirement of a #[target_feature] function.
            unsafe { fma_steps_fma(acc, steps) };
            return;
        }
    }
    fma_steps_generic(acc, steps);
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_steps_fma(acc: &mut [f64; ACCUMULATORS], steps: u64) {
    fma_steps_generic(acc, steps);
}

#[inline(always)]
fn fma_steps_generic(acc: &mut [f64; ACCUMULATORS], steps: u64) {
    // A local copy lets the accumulators live in registers for the whole loop.
    let mut a = *acc;
    for _ in 0..steps {
        for x in a.iter_mut() {
            *x = x.mul_add(A, B);
        }
    }
    *acc = a;
}
