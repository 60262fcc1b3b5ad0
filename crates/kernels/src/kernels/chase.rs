//! `chase`: a random pointer chase, one dependent load at a time.
//!
//! The ring has one node per 64-byte line of a `ws_mib` buffer; the order of
//! the nodes is a random cyclic permutation (Sattolo's algorithm, fixed seed),
//! so every load misses in cache and TLB alike once the ring exceeds them,
//! and the chase visits every line before it repeats. With threads, they
//! share the read-only ring and start at evenly spaced nodes; one unit is
//! 1e6 dependent loads, split across the threads.

use std::time::Instant;

use crate::util::{combine, mix, per_second, run_parallel, share, KernelRun, Params, Rng, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "loads";

const LOADS_PER_UNIT: u64 = 1_000_000;
/// u64 words per 64-byte line; a node is the first word of its line.
const WORDS_PER_LINE: usize = 8;
const SEED: u64 = 0x00C4_A5E0_5EED;

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let mib = p.uint_min("ws_mib", 1)?;
    let lines = mib
        .checked_mul((1 << 20) / 64)
        .filter(|l| *l <= u64::from(u32::MAX))
        .ok_or_else(|| p.bad("ws_mib", "expected at most 262143 (MiB)"))? as usize;
    let started = Instant::now();
    let ring = build_ring(lines, SEED);
    let (ends, timing) = run_parallel(
        threads,
        started,
        |_| Ok(()),
        |i, _| {
            let start = (lines as u64 * u64::from(i) / u64::from(threads)) as usize * WORDS_PER_LINE;
            let loads = share(work, threads, i) * LOADS_PER_UNIT;
            mix(mix(CHECKSUM_SEED, loads), chase(&ring, start, loads) as u64)
        },
    )?;
    let loads = LOADS_PER_UNIT * work;
    // Threads chase concurrently; the busiest one did ceil(work / threads) units.
    let per_thread = share(work, threads, 0) * LOADS_PER_UNIT;
    let latency_ns = per_second(timing.wall_s * 1e9, per_thread as f64);
    Ok(KernelRun::new(timing, loads, OPS_UNIT, combine(ends)).figure("latency_ns", latency_ns))
}

/// Word index of the first node reached after `loads` steps from `start`.
#[inline(never)]
fn chase(ring: &[u64], start: usize, loads: u64) -> usize {
    let mut at = start;
    for _ in 0..loads {
        at = ring[at] as usize;
    }
    at
}

/// The ring: word `8 i` holds the word index of the node after line `i`.
fn build_ring(lines: usize, seed: u64) -> Vec<u64> {
    let next = sattolo(lines, seed);
    let mut ring = vec![0u64; lines * WORDS_PER_LINE];
    for (line, n) in next.iter().enumerate() {
        ring[line * WORDS_PER_LINE] = u64::from(*n) * WORDS_PER_LINE as u64;
    }
    ring
}

/// A uniformly random permutation of `0..n` made of one single cycle
/// (Sattolo): `next[i]` is the successor of `i`. u32 entries keep the shuffle
/// array small enough to stay in cache while it is built.
fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = Rng::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        next.swap(i, j);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_makes_one_cycle_through_every_node() {
        for n in [1usize, 2, 3, 10, 1000] {
            let next = sattolo(n, 42);
            let mut seen = vec![false; n];
            let mut at = 0usize;
            for _ in 0..n {
                assert!(!seen[at], "n = {n}: node {at} visited twice");
                seen[at] = true;
                at = next[at] as usize;
            }
            assert_eq!(at, 0, "n = {n}: the walk must close after n steps");
        }
    }

    #[test]
    fn ring_nodes_point_at_line_starts() {
        let ring = build_ring(64, 7);
        for line in 0..64 {
            assert_eq!(ring[line * WORDS_PER_LINE] % WORDS_PER_LINE as u64, 0);
        }
        assert_eq!(chase(&ring, 0, 64), 0);
    }
}
