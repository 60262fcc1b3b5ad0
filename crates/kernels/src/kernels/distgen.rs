//! `distgen`: a DistGen-style stressor (the DistGen paper) exposing chosen stack
//! reuse distances.
//!
//! Each thread owns a buffer the size of the largest distance and reads the
//! first 8 bytes of each 64-byte block in order (streaming, so prefetchers
//! help as in the paper's runs). A smaller distance is produced by sweeping
//! only a prefix of the buffer holding that many blocks. One round sweeps each
//! distance in the order given, the smaller ones as many times as needed for
//! the accesses to be shared as `ratio` says (equal shares by default):
//! sweeps_d is proportional to share_d / blocks_d, at least 1.
//!
//! One unit is 1e6 block accesses, split across the threads; each thread's
//! accesses follow the round from its start and stop exactly at its count.
//!
//! `mode` picks the order of the accesses within a sweep, as DistGen's own
//! modes: `stream` reads the blocks in address order (prefetchers help),
//! `random` in a fixed pseudo-random order of the same blocks (every block
//! once per sweep, so the reuse distance is unchanged, but no stride for a
//! prefetcher to follow), `chase` follows a linked list through the blocks
//! in that order (each load's address comes from the previous load, so the
//! accesses are latency-bound, one outstanding miss at a time). A chase keeps
//! the list of distance k in word k of each block, so it takes at most 8
//! distances.
//!
//! `intensity` below 1 inserts pauses (sleeps) between chunks of accesses so
//! the accesses take about that share of the thread's time. The number of
//! accesses stays fixed: a lower intensity makes the run longer, it does not
//! drop work.

use std::time::{Duration, Instant};

use crate::util::{combine, mix, run_parallel, share, splitmix64, KernelRun, Params, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "accesses";

const ACCESSES_PER_UNIT: u64 = 1_000_000;
const BLOCK_BYTES: u64 = 64;
const WORDS_PER_BLOCK: usize = 8;
/// Accesses between two looks at the clock when pausing (1 MiB of blocks).
const CHUNK: u64 = 16_384;
/// Pauses shorter than this are deferred: a sleep costs about this much in
/// timer slack and wake-up latency anyway.
const MIN_PAUSE: Duration = Duration::from_micros(200);

/// The order of the accesses within one sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Stream,
    Random,
    Chase,
}

impl Mode {
    fn parse(p: &Params) -> Result<Mode, KernelError> {
        Ok(match p.text("mode") {
            "" | "stream" => Mode::Stream,
            "random" => Mode::Random,
            "chase" => Mode::Chase,
            other => return Err(p.bad("mode", &format!("`{other}` is not one of stream, random, chase"))),
        })
    }
}

/// One distance of the round: the prefix length and how often it is swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leg {
    blocks: u64,
    sweeps: u64,
}

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<KernelRun, KernelError> {
    let sizes = parse_list(p.text("sizes_kib"))
        .and_then(|v| {
            v.iter()
                .map(|s| s.parse::<u64>().ok().filter(|k| (1..=(1 << 30)).contains(k)))
                .collect::<Option<Vec<u64>>>()
        })
        .ok_or_else(|| {
            p.bad("sizes_kib", "expected comma-separated sizes in KiB between 1 and 2^30, e.g. 256,16384")
        })?;
    let ratio_text = p.text("ratio");
    let ratio: Vec<f64> = if ratio_text.trim().is_empty() {
        vec![1.0; sizes.len()]
    } else {
        parse_list(ratio_text)
            .and_then(|v| {
                v.iter()
                    .map(|s| s.parse::<f64>().ok().filter(|r| r.is_finite() && *r > 0.0))
                    .collect::<Option<Vec<f64>>>()
            })
            .ok_or_else(|| p.bad("ratio", "expected comma-separated positive numbers, e.g. 1,3"))?
    };
    if ratio.len() != sizes.len() {
        return Err(p.bad(
            "ratio",
            &format!("gives {} shares for {} distances in --sizes-kib", ratio.len(), sizes.len()),
        ));
    }
    let intensity = p.float("intensity")?;
    if !(intensity > 0.0 && intensity <= 1.0) {
        return Err(p.bad("intensity", &format!("expected a number in (0, 1], got {intensity}")));
    }
    let mode = Mode::parse(p)?;
    if mode == Mode::Chase && sizes.len() > WORDS_PER_BLOCK {
        return Err(p.bad(
            "sizes_kib",
            &format!("mode chase keeps one list per distance in a block's {WORDS_PER_BLOCK} words: at most {WORDS_PER_BLOCK} distances, got {}", sizes.len()),
        ));
    }
    let round = plan(&sizes, &ratio);
    let max_blocks = round.iter().map(|l| l.blocks).max().unwrap_or(1);
    let words = usize::try_from(max_blocks)
        .ok()
        .and_then(|b| b.checked_mul(WORDS_PER_BLOCK))
        .ok_or_else(|| p.bad("sizes_kib", "largest distance too large for this machine"))?;

    let started = Instant::now();
    let (sums, timing) = run_parallel(
        threads,
        started,
        |_| Ok(Memory::new(words, &round, mode)),
        |i, mem| {
            let accesses = share(work, threads, i) * ACCESSES_PER_UNIT;
            let mut cursor = Cursor::default();
            let sum = if intensity >= 1.0 {
                cursor.advance(mem, &round, accesses)
            } else {
                paced(&mut cursor, mem, &round, accesses, intensity)
            };
            mix(mix(CHECKSUM_SEED, accesses), sum)
        },
    )?;
    let accesses = ACCESSES_PER_UNIT * work;
    let out = KernelRun::new(timing, accesses, OPS_UNIT, combine(sums))
        .bandwidth(accesses * BLOCK_BYTES)
        .resolved("sizes_kib", join(&sizes))
        .resolved("ratio", join(&ratio))
        .resolved("mode", format!("{mode:?}").to_lowercase());
    Ok(out)
}

fn parse_list(s: &str) -> Option<Vec<&str>> {
    let v: Vec<&str> = s.split(',').map(str::trim).collect();
    (!v.is_empty() && v.iter().all(|x| !x.is_empty())).then_some(v)
}

fn join<T: ToString>(v: &[T]) -> String {
    v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// The round: sweeps per distance proportional to share / blocks, scaled so
/// the distance needing the fewest gets one.
fn plan(sizes_kib: &[u64], ratio: &[f64]) -> Vec<Leg> {
    let total: f64 = ratio.iter().sum();
    let blocks: Vec<u64> = sizes_kib.iter().map(|k| k * 1024 / BLOCK_BYTES).collect();
    let per_block: Vec<f64> = ratio.iter().zip(&blocks).map(|(r, b)| r / total / *b as f64).collect();
    let least = per_block.iter().cloned().fold(f64::INFINITY, f64::min);
    blocks
        .iter()
        .zip(&per_block)
        .map(|(&blocks, w)| Leg { blocks, sweeps: ((w / least).round() as u64).max(1) })
        .collect()
}

/// A thread's buffer and, for the random and chase modes, the order of
/// each leg's blocks.
struct Memory {
    buf: Vec<u64>,
    mode: Mode,
    /// Random mode: leg k's blocks in their pseudo-random order.
    orders: Vec<Vec<u32>>,
}

impl Memory {
    /// Allocates and first-touches the buffer on the calling thread. Stream
    /// and random read word 0 of each block (a fixed pseudo-random value);
    /// a chase reads word k, the index of leg k's next block.
    fn new(words: usize, round: &[Leg], mode: Mode) -> Memory {
        let mut buf = vec![0u64; words];
        // Writing one word per block touches every page on this thread.
        for (b, block) in buf.chunks_exact_mut(WORDS_PER_BLOCK).enumerate() {
            block[0] = splitmix64(b as u64);
        }
        let mut orders = Vec::new();
        if mode != Mode::Stream {
            for (k, leg) in round.iter().enumerate() {
                let order = shuffled(leg.blocks, k as u64);
                if mode == Mode::Chase {
                    for (i, &b) in order.iter().enumerate() {
                        let next = order[(i + 1) % order.len()];
                        buf[b as usize * WORDS_PER_BLOCK + k] = u64::from(next);
                    }
                } else {
                    orders.push(order);
                }
            }
        }
        Memory { buf, mode, orders }
    }
}

/// The blocks `0..n` in a pseudo-random order fixed by `seed` (Fisher-Yates
/// driven by splitmix64), so every run and every thread sees the same one.
/// Distances are bounded at 2^30 KiB, 2^34 blocks; a u32 index covers the
/// 256 GiB any one thread could allocate here.
fn shuffled(n: u64, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n.min(u64::from(u32::MAX)) as u32).collect();
    let mut state = splitmix64(seed ^ 0xD157_6E4E);
    for i in (1..v.len()).rev() {
        state = splitmix64(state);
        v.swap(i, (state % (i as u64 + 1)) as usize);
    }
    v
}

/// Where a thread is in the round.
#[derive(Debug, Default)]
struct Cursor {
    leg: usize,
    sweep: u64,
    block: u64,
    /// Chase: the block each leg's list is at (its next access).
    at: Vec<u64>,
}

impl Cursor {
    /// Does exactly `n` accesses from the current position; returns the sum
    /// of the words read.
    fn advance(&mut self, mem: &Memory, round: &[Leg], mut n: u64) -> u64 {
        let mut sum = 0u64;
        if self.at.len() != round.len() {
            self.at = vec![0; round.len()];
        }
        while n > 0 {
            let leg = round[self.leg];
            let take = n.min(leg.blocks - self.block);
            let part = match mem.mode {
                Mode::Stream => {
                    let from = self.block as usize * WORDS_PER_BLOCK;
                    let to = from + take as usize * WORDS_PER_BLOCK;
                    read_blocks(&mem.buf[from..to])
                }
                Mode::Random => {
                    let order = &mem.orders[self.leg][self.block as usize..(self.block + take) as usize];
                    read_in_order(&mem.buf, order)
                }
                Mode::Chase => {
                    let (sum, at) = chase(&mem.buf, self.leg, self.at[self.leg], take);
                    self.at[self.leg] = at;
                    sum
                }
            };
            sum = sum.wrapping_add(part);
            self.block += take;
            n -= take;
            if self.block == leg.blocks {
                self.block = 0;
                self.sweep += 1;
                if self.sweep == leg.sweeps {
                    self.sweep = 0;
                    self.leg = (self.leg + 1) % round.len();
                }
            }
        }
        sum
    }
}

/// Sums the first word of every 64-byte block.
#[inline(never)]
fn read_blocks(words: &[u64]) -> u64 {
    words.iter().step_by(WORDS_PER_BLOCK).fold(0u64, |s, w| s.wrapping_add(*w))
}

/// Sums word 0 of the blocks named by `order`, in that order.
#[inline(never)]
fn read_in_order(buf: &[u64], order: &[u32]) -> u64 {
    order.iter().fold(0u64, |s, &b| s.wrapping_add(buf[b as usize * WORDS_PER_BLOCK]))
}

/// Follows leg `k`'s list `n` steps from block `at`: each load's value is
/// the next block. Returns the sum of the indices read and where it ends.
#[inline(never)]
fn chase(buf: &[u64], k: usize, mut at: u64, n: u64) -> (u64, u64) {
    let mut sum = 0u64;
    for _ in 0..n {
        at = buf[at as usize * WORDS_PER_BLOCK + k];
        sum = sum.wrapping_add(at);
    }
    (sum, at)
}

/// Accesses in chunks, sleeping after them so that accessing takes about
/// `intensity` of the time. Pause debt is carried over, so short chunks and
/// oversleeping even out over the run.
fn paced(cursor: &mut Cursor, mem: &Memory, round: &[Leg], accesses: u64, intensity: f64) -> u64 {
    let pause_per_busy = (1.0 - intensity) / intensity;
    let (mut busy, mut paused) = (Duration::ZERO, Duration::ZERO);
    let mut sum = 0u64;
    let mut left = accesses;
    while left > 0 {
        let n = left.min(CHUNK);
        let t = Instant::now();
        sum = sum.wrapping_add(cursor.advance(mem, round, n));
        busy += t.elapsed();
        left -= n;
        let owed = busy.mul_f64(pause_per_busy).saturating_sub(paused);
        if owed >= MIN_PAUSE || (left == 0 && !owed.is_zero()) {
            let t = Instant::now();
            std::thread::sleep(owed);
            paused += t.elapsed();
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_ratio_gives_equal_accesses_per_distance() {
        let round = plan(&[256, 16384], &[1.0, 1.0]);
        assert_eq!(round, vec![Leg { blocks: 4096, sweeps: 64 }, Leg { blocks: 262144, sweeps: 1 }]);
        assert_eq!(round[0].blocks * round[0].sweeps, round[1].blocks * round[1].sweeps);
    }

    #[test]
    fn ratio_scales_the_sweeps() {
        let round = plan(&[1024, 1024], &[1.0, 3.0]);
        assert_eq!(round[0].sweeps * 3, round[1].sweeps);
    }

    #[test]
    fn cursor_does_exactly_the_asked_accesses_across_legs() {
        let round = plan(&[1, 2], &[1.0, 1.0]); // 16 blocks x 2, 32 blocks x 1
        let buf: Vec<u64> = (0..32 * WORDS_PER_BLOCK as u64).map(|w| if w % 8 == 0 { 1 } else { 1000 }).collect();
        let mem = Memory { buf, mode: Mode::Stream, orders: Vec::new() };
        let mut c = Cursor::default();
        // Each access reads a 1, so the sum counts the accesses.
        assert_eq!(c.advance(&mem, &round, 70), 70);
        assert_eq!((c.leg, c.sweep, c.block), (0, 0, 6)); // 64 = one full round, then 6
    }

    #[test]
    fn a_shuffle_is_a_fixed_permutation_and_not_address_order() {
        let v = shuffled(1000, 3);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<u32>>());
        assert_ne!(v, sorted);
        assert_eq!(v, shuffled(1000, 3));
        assert_ne!(v, shuffled(1000, 4));
    }

    /// A sweep of every mode touches each block of the leg's prefix exactly
    /// once: the chase's list is one cycle through them, the random order a
    /// permutation.
    #[test]
    fn every_mode_sweeps_each_block_of_a_distance_once() {
        let round = plan(&[1, 2], &[1.0, 1.0]); // 16 blocks x 2 sweeps, 32 blocks x 1
        let words = 32 * WORDS_PER_BLOCK;
        let chase_mem = Memory::new(words, &round, Mode::Chase);
        for (k, leg) in round.iter().enumerate().take(2) {
            let blocks = leg.blocks;
            let mut seen = std::collections::BTreeSet::new();
            let mut at = 0u64;
            for _ in 0..blocks {
                at = chase_mem.buf[at as usize * WORDS_PER_BLOCK + k];
                assert!(at < blocks, "leg {k}'s list stays in its prefix");
                seen.insert(at);
            }
            assert_eq!(seen.len() as u64, blocks, "leg {k}'s list is one cycle");
        }
        // Random and stream read the same words over a whole round, in
        // another order, so their sums agree.
        let stream = Memory::new(words, &round, Mode::Stream);
        let random = Memory::new(words, &round, Mode::Random);
        let n = 64; // one round
        assert_eq!(Cursor::default().advance(&stream, &round, n), Cursor::default().advance(&random, &round, n));
        // The chase reads each index of a prefix once per sweep.
        let want: u64 = 2 * (0..16).sum::<u64>() + (0..32).sum::<u64>();
        assert_eq!(Cursor::default().advance(&chase_mem, &round, n), want);
    }
}
