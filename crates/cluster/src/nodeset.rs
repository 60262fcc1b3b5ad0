//! A set of node numbers as a bitmap with a count per block of 4,096
//! nodes: adding or taking out a run costs a word per 64 of its nodes, and
//! the lowest k members at or above a number come as the runs that hold
//! them, found by skipping empty blocks and words. The engine's idle nodes:
//! a wide job adds or takes thousands of nodes at each start and end, and
//! where small jobs left the idle nodes in short runs it takes hundreds of
//! runs; an ordered map of runs paid a tree update per run, a set of single
//! nodes one per node.

/// Nodes a summary block covers (64 words of 64): a pass skips a block
/// with no member, and finds the k-th member by the blocks' counts.
const BLOCK: usize = 64 * 64;

pub(crate) struct NodeSet {
    /// Bit `n % 64` of word `n / 64`: node `n` is a member.
    words: Vec<u64>,
    /// Members in each block of [`BLOCK`] nodes.
    blocks: Vec<u32>,
    len: usize,
}

/// Appends the run `[a, b)` to `out`, merged with the last run if they touch.
pub(crate) fn push_run(out: &mut Vec<(usize, usize)>, a: usize, b: usize) {
    match out.last_mut() {
        Some(last) if last.1 == a => last.1 = b,
        _ => out.push((a, b)),
    }
}

/// The bits `lo..hi` of a word (`hi` <= 64).
fn mask(lo: usize, hi: usize) -> u64 {
    let upper = if hi == 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & !((1u64 << lo) - 1)
}

impl NodeSet {
    /// Every node of `0..n`.
    pub(crate) fn full(n: usize) -> NodeSet {
        let mut set = NodeSet { words: vec![0; n.div_ceil(64)], blocks: vec![0; n.div_ceil(BLOCK)], len: 0 };
        if n > 0 {
            set.insert(0, n);
        }
        set
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Sets (`on`) or clears the bits of `[a, b)`, all of which are the other way.
    fn flip(&mut self, a: usize, b: usize, on: bool) {
        debug_assert!(a < b && b <= self.words.len() * 64);
        let mut n = a;
        while n < b {
            let w = n / 64;
            let hi = (b - w * 64).min(64);
            let m = mask(n % 64, hi);
            let bits = m.count_ones();
            if on {
                debug_assert_eq!(self.words[w] & m, 0, "[{a}, {b}) is partly in the set");
                self.words[w] |= m;
                self.blocks[n / BLOCK] += bits;
            } else {
                debug_assert_eq!(self.words[w] & m, m, "[{a}, {b}) is not all in the set");
                self.words[w] &= !m;
                self.blocks[n / BLOCK] -= bits;
            }
            n = w * 64 + hi;
        }
    }

    /// Adds `[a, b)`, none of which is in the set.
    pub(crate) fn insert(&mut self, a: usize, b: usize) {
        self.flip(a, b, true);
        self.len += b - a;
    }

    /// Takes out `[a, b)`, all of which is in the set.
    pub(crate) fn remove(&mut self, a: usize, b: usize) {
        self.flip(a, b, false);
        self.len -= b - a;
    }

    /// The first member at or above `from`.
    fn next_member(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        if w >= self.words.len() {
            return None;
        }
        let mut x = self.words[w] & !((1u64 << (from % 64)) - 1);
        loop {
            if x != 0 {
                return Some(w * 64 + x.trailing_zeros() as usize);
            }
            w += 1;
            // Whole empty blocks at once.
            while w < self.words.len() && w.is_multiple_of(64) && self.blocks[w / 64] == 0 {
                w += 64;
            }
            if w >= self.words.len() {
                return None;
            }
            x = self.words[w];
        }
    }

    /// One past the last member of the run holding member `n`.
    fn run_end(&self, n: usize) -> usize {
        let mut w = n / 64;
        // Ones from bit n % 64 up, then whole words of ones.
        let x = !(self.words[w] >> (n % 64));
        if x != 0 {
            let end = n + x.trailing_zeros() as usize;
            if end < (w + 1) * 64 {
                return end;
            }
        }
        w += 1;
        while w < self.words.len() && self.words[w] == u64::MAX {
            w += 1;
        }
        if w == self.words.len() {
            return w * 64;
        }
        w * 64 + (!self.words[w]).trailing_zeros() as usize
    }

    /// The runs of members at or above `from`, the first cut at `from`, ascending.
    pub(crate) fn runs_from(&self, from: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut at = from;
        std::iter::from_fn(move || {
            let a = self.next_member(at)?;
            let b = self.run_end(a);
            at = b;
            Some((a, b))
        })
    }

    /// One past the `k`-th lowest member (0 for `k` = 0); the set holds at least `k`.
    pub(crate) fn bound_of_lowest(&self, k: usize) -> usize {
        if k == 0 {
            return 0;
        }
        debug_assert!(k <= self.len, "the set holds fewer than {k}");
        let mut left = k;
        let mut block = 0;
        while (self.blocks[block] as usize) < left {
            left -= self.blocks[block] as usize;
            block += 1;
        }
        let mut w = block * 64;
        while (self.words[w].count_ones() as usize) < left {
            left -= self.words[w].count_ones() as usize;
            w += 1;
        }
        // The left-th member of word w.
        let mut x = self.words[w];
        for _ in 1..left {
            x &= x - 1;
        }
        w * 64 + x.trailing_zeros() as usize + 1
    }

    /// The lowest `k` members in `[from, bound)` (fewer if there are not so
    /// many), appended to `out` as runs; returns how many.
    pub(crate) fn take(&self, from: usize, bound: usize, k: usize, out: &mut Vec<(usize, usize)>) -> usize {
        let mut got = 0;
        for (a, b) in self.runs_from(from) {
            if got == k || a >= bound {
                break;
            }
            let b = b.min(bound).min(a + (k - got));
            push_run(out, a, b);
            got += b - a;
        }
        got
    }
}

/// The nodes a job held, as runs of consecutive numbers `[first, end)`,
/// ascending: a job over thousands of nodes costs a few runs of memory.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Nodes(Vec<(u32, u32)>);

impl Nodes {
    /// One node.
    pub fn one(n: u32) -> Nodes {
        Nodes(vec![(n, n + 1)])
    }

    /// The runs `[first, end)`, ascending.
    pub fn runs(&self) -> &[(u32, u32)] {
        &self.0
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.0.iter().map(|&(a, b)| (b - a) as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every node, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().flat_map(|&(a, b)| a..b)
    }

    pub(crate) fn from_runs(runs: &[(usize, usize)]) -> Nodes {
        Nodes(runs.iter().map(|&(a, b)| (a as u32, b as u32)).collect())
    }
}

/// Nodes in the order given; consecutive numbers join one run.
impl FromIterator<u32> for Nodes {
    fn from_iter<I: IntoIterator<Item = u32>>(nodes: I) -> Nodes {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for n in nodes {
            match runs.last_mut() {
                Some(last) if last.1 == n => last.1 = n + 1,
                _ => runs.push((n, n + 1)),
            }
        }
        Nodes(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::NodeSet;
    use std::collections::BTreeSet;

    fn members(set: &NodeSet) -> Vec<usize> {
        set.runs_from(0).flat_map(|(a, b)| a..b).collect()
    }

    /// Against a BTreeSet through a seeded walk of runs added and taken out:
    /// the members, the runs kept maximal, and `take` below a bound.
    #[test]
    fn a_node_set_keeps_what_a_btreeset_keeps() {
        for n in [1, 2, 63, 64, 65, 1000, 10_000] {
            let mut set = NodeSet::full(n);
            let mut want: BTreeSet<usize> = (0..n).collect();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ n as u64;
            for step in 0..5_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = (x % n as u64) as usize;
                let len = 1 + ((x >> 32) % 40) as usize;
                // The longest run from `a` that is wholly in (remove) or wholly out of (insert) the set.
                let inside = want.contains(&a);
                let b = (a..(a + len).min(n)).take_while(|m| want.contains(m) == inside).last().unwrap() + 1;
                if inside {
                    set.remove(a, b);
                    (a..b).for_each(|m| {
                        want.remove(&m);
                    });
                } else {
                    set.insert(a, b);
                    want.extend(a..b);
                }
                assert_eq!(set.len(), want.len());
                if step % 97 == 0 {
                    assert_eq!(members(&set), want.iter().copied().collect::<Vec<_>>());
                    let runs: Vec<(usize, usize)> = set.runs_from(0).collect();
                    assert!(runs.windows(2).all(|w| w[0].1 < w[1].0), "runs are maximal and ascending: {runs:?}");
                    let (from, bound, k) = (a / 2, a + len, len * 3);
                    let mut out = Vec::new();
                    let got = set.take(from, bound, k, &mut out);
                    let expect: Vec<usize> = want.range(from..bound.max(from)).copied().take(k).collect();
                    assert_eq!(got, expect.len());
                    assert_eq!(out.iter().flat_map(|&(a, b)| a..b).collect::<Vec<_>>(), expect);
                    let k = len.min(want.len());
                    assert_eq!(set.bound_of_lowest(k), want.iter().nth(k.wrapping_sub(1)).map_or(0, |&m| m + 1));
                }
            }
        }
    }
}
