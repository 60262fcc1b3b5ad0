//! `cache`: repeated read-modify-write sweeps over a working set that fits in
//! the last-level cache (class C).
//!
//! `ws_kib = 0` means half the LLC of this node (1 MiB when sysfs does not
//! say), the resolved size is reported in the parameters. With threads, the
//! working set is split into contiguous slices, one per thread (first touched
//! by it), so the total footprint stays `ws_kib` whatever the thread count;
//! one unit is one sweep over the whole working set. Each element is read and
//! written once per sweep: 16 bytes counted per 8-byte element.

use std::time::Instant;

use crate::util::{chunk, combine, mix, run_parallel, KernelRun, Params, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "bytes";

const BYTES_PER_ELEMENT: u64 = 16;
/// LLC size assumed when sysfs does not tell, giving a 1 MiB working set.
const FALLBACK_LLC: u64 = 2 << 20;

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let mut ws_kib = p.uint("ws_kib")?;
    if ws_kib == 0 {
        ws_kib = (crate::sys::llc_bytes().unwrap_or(FALLBACK_LLC) / 2 / 1024).max(1);
    }
    let elements = ws_kib
        .checked_mul(1024 / 8)
        .and_then(|e| usize::try_from(e).ok())
        .ok_or_else(|| p.bad("ws_kib", "too large for this machine's address space"))?;
    let started = Instant::now();
    let (sums, timing) = run_parallel(
        threads,
        started,
        |i| {
            let range = chunk(elements, threads, i);
            Ok(range.map(|g| g as u64).collect::<Vec<u64>>())
        },
        |_, ws| {
            let mut sum = 0u64;
            for _ in 0..work {
                sum = sum.wrapping_add(sweep(ws));
                std::hint::black_box(&mut *ws);
            }
            mix(mix(CHECKSUM_SEED, sum), ws.first().copied().unwrap_or(0))
        },
    )?;
    let bytes = BYTES_PER_ELEMENT * elements as u64 * work;
    Ok(KernelRun::new(timing, bytes, OPS_UNIT, combine(sums))
        .bandwidth(bytes)
        .resolved("ws_kib", ws_kib.to_string()))
}

/// Reads every element into a sum and writes it back incremented; both the
/// reduction and the update vectorise.
#[inline(never)]
fn sweep(ws: &mut [u64]) -> u64 {
    let mut sum = 0u64;
    for x in ws.iter_mut() {
        sum = sum.wrapping_add(*x);
        *x = x.wrapping_add(1);
    }
    sum
}
