//! A set of node numbers held as its maximal runs of consecutive numbers,
//! ordered: adding or taking out a run costs O(log R) for R runs in the
//! set, whatever its length, and the lowest k members at or above a number
//! come as the runs that hold them. The engine's idle nodes: a wide job
//! adds or takes thousands of consecutive nodes at each start and end,
//! which a set of single nodes paid for one node at a time.

use std::collections::BTreeMap;

pub(crate) struct NodeSet {
    /// First member of each maximal run -> one past its last.
    runs: BTreeMap<usize, usize>,
    len: usize,
}

/// Appends the run `[a, b)` to `out`, merged with the last run if they touch.
pub(crate) fn push_run(out: &mut Vec<(usize, usize)>, a: usize, b: usize) {
    match out.last_mut() {
        Some(last) if last.1 == a => last.1 = b,
        _ => out.push((a, b)),
    }
}

impl NodeSet {
    /// Every node of `0..n`.
    pub(crate) fn full(n: usize) -> NodeSet {
        let mut runs = BTreeMap::new();
        if n > 0 {
            runs.insert(0, n);
        }
        NodeSet { runs, len: n }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `[a, b)`, none of which is in the set.
    pub(crate) fn insert(&mut self, a: usize, b: usize) {
        debug_assert!(a < b);
        let mut first = a;
        if let Some((&s, &e)) = self.runs.range(..a).next_back() {
            debug_assert!(e <= a, "[{a}, {b}) overlaps [{s}, {e})");
            if e == a {
                first = s;
            }
        }
        let end = match self.runs.remove(&b) {
            Some(e) => e,
            None => b,
        };
        debug_assert!(self.runs.range(a..b).next().is_none(), "[{a}, {b}) is partly in the set");
        self.runs.insert(first, end);
        self.len += b - a;
    }

    /// Takes out `[a, b)`, all of which is in the set.
    pub(crate) fn remove(&mut self, a: usize, b: usize) {
        debug_assert!(a < b);
        let (&s, &e) = self.runs.range(..=a).next_back().expect("a run taken out is in the set");
        debug_assert!(b <= e, "[{a}, {b}) is not inside [{s}, {e})");
        if s < a {
            self.runs.insert(s, a);
        } else {
            self.runs.remove(&s);
        }
        if b < e {
            self.runs.insert(b, e);
        }
        self.len -= b - a;
    }

    /// The runs of members at or above `from`, the first cut at `from`, ascending.
    pub(crate) fn runs_from(&self, from: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let cut = self.runs.range(..from).next_back().filter(|&(_, &e)| e > from).map(|(_, &e)| (from, e));
        cut.into_iter().chain(self.runs.range(from..).map(|(&s, &e)| (s, e)))
    }

    /// One past the `k`-th lowest member (0 for `k` = 0); the set holds at least `k`.
    pub(crate) fn bound_of_lowest(&self, k: usize) -> usize {
        let mut left = k;
        for (a, b) in self.runs_from(0) {
            if left == 0 {
                break;
            }
            if b - a >= left {
                return a + left;
            }
            left -= b - a;
        }
        debug_assert_eq!(left, 0, "the set holds fewer than {k}");
        0
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
