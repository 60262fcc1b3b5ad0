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
//! `intensity` below 1 inserts pauses (sleeps) between chunks of accesses so
//! the accesses take about that share of the thread's time. The number of
//! accesses stays fixed: a lower intensity makes the run longer, it does not
//! drop work.

use std::time::{Duration, Instant};

use crate::util::{combine, mix, run_parallel, share, splitmix64, Outcome, Params, CHECKSUM_SEED};
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

/// One distance of the round: the prefix length and how often it is swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leg {
    blocks: u64,
    sweeps: u64,
}

pub(crate) fn run(work: u64, threads: u32, p: &Params) -> Result<Outcome, KernelError> {
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
        |_| {
            let mut buf = vec![0u64; words];
            // Writing one word per block touches every page on this thread.
            for (b, block) in buf.chunks_exact_mut(WORDS_PER_BLOCK).enumerate() {
                block[0] = splitmix64(b as u64);
            }
            Ok(buf)
        },
        |i, buf| {
            let accesses = share(work, threads, i) * ACCESSES_PER_UNIT;
            let mut cursor = Cursor::default();
            let sum = if intensity >= 1.0 {
                cursor.advance(&buf, &round, accesses)
            } else {
                paced(&mut cursor, &buf, &round, accesses, intensity)
            };
            mix(mix(CHECKSUM_SEED, accesses), sum)
        },
    )?;
    let accesses = ACCESSES_PER_UNIT * work;
    let out = Outcome::new(timing, accesses, OPS_UNIT, combine(sums))
        .bandwidth(accesses * BLOCK_BYTES)
        .resolved("sizes_kib", join(&sizes))
        .resolved("ratio", join(&ratio));
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

/// Where a thread is in the round.
#[derive(Debug, Default)]
struct Cursor {
    leg: usize,
    sweep: u64,
    block: u64,
}

impl Cursor {
    /// Does exactly `n` accesses from the current position; returns the sum
    /// of the words read.
    fn advance(&mut self, buf: &[u64], round: &[Leg], mut n: u64) -> u64 {
        let mut sum = 0u64;
        while n > 0 {
            let leg = round[self.leg];
            let take = n.min(leg.blocks - self.block);
            let from = self.block as usize * WORDS_PER_BLOCK;
            let to = from + take as usize * WORDS_PER_BLOCK;
            sum = sum.wrapping_add(read_blocks(&buf[from..to]));
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

/// Accesses in chunks, sleeping after them so that accessing takes about
/// `intensity` of the time. Pause debt is carried over, so short chunks and
/// oversleeping even out over the run.
fn paced(cursor: &mut Cursor, buf: &[u64], round: &[Leg], accesses: u64, intensity: f64) -> u64 {
    let pause_per_busy = (1.0 - intensity) / intensity;
    let (mut busy, mut paused) = (Duration::ZERO, Duration::ZERO);
    let mut sum = 0u64;
    let mut left = accesses;
    while left > 0 {
        let n = left.min(CHUNK);
        let t = Instant::now();
        sum = sum.wrapping_add(cursor.advance(buf, round, n));
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
        let mut c = Cursor::default();
        // Each access reads a 1, so the sum counts the accesses.
        assert_eq!(c.advance(&buf, &round, 70), 70);
        assert_eq!((c.leg, c.sweep, c.block), (0, 0, 6)); // 64 = one full round, then 6
    }
}
