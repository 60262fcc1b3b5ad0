//! A set of node numbers as a bitmap with a summary of its non-empty
//! words: insert and remove in O(1), the lowest members at or above a
//! number in O(1 + N / 4096) at worst. The engine's idle nodes: a wide job
//! adds or takes thousands at each start and end, which a BTreeSet paid a
//! tree walk and often an allocation for, one node at a time.

pub(crate) struct NodeSet {
    words: Vec<u64>,
    /// Bit w: `words[w] != 0`.
    summary: Vec<u64>,
    len: usize,
}

impl NodeSet {
    /// Every node of `0..n`.
    pub(crate) fn full(n: usize) -> NodeSet {
        let mut words = vec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            *words.last_mut().expect("n > 0 when n % 64 != 0") = (1u64 << (n % 64)) - 1;
        }
        let mut summary = vec![0u64; words.len().div_ceil(64)];
        for (w, &x) in words.iter().enumerate() {
            if x != 0 {
                summary[w / 64] |= 1 << (w % 64);
            }
        }
        NodeSet { words, summary, len: n }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn insert(&mut self, n: usize) {
        let (w, bit) = (n / 64, 1u64 << (n % 64));
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.summary[w / 64] |= 1 << (w % 64);
            self.len += 1;
        }
    }

    pub(crate) fn remove(&mut self, n: usize) {
        let (w, bit) = (n / 64, 1u64 << (n % 64));
        if self.words[w] & bit != 0 {
            self.words[w] &= !bit;
            if self.words[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
            self.len -= 1;
        }
    }

    /// The lowest member at or above `from`.
    fn next(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let here = self.words.get(w)? & (u64::MAX << (from % 64));
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        let mut w = w + 1;
        while let Some(&s) = self.summary.get(w / 64) {
            let s = s & (u64::MAX << (w % 64));
            if s != 0 {
                let word = (w / 64) * 64 + s.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
            w = (w / 64 + 1) * 64;
        }
        None
    }

    /// Members at or above `from`, in increasing order.
    pub(crate) fn from(&self, from: usize) -> impl Iterator<Item = usize> + '_ {
        let mut at = from;
        std::iter::from_fn(move || {
            let n = self.next(at)?;
            at = n + 1;
            Some(n)
        })
    }

    /// Members below `bound`, in increasing order.
    pub(crate) fn below(&self, bound: usize) -> impl Iterator<Item = usize> + '_ {
        self.from(0).take_while(move |&n| n < bound)
    }
}

#[cfg(test)]
mod tests {
    use super::NodeSet;
    use std::collections::BTreeSet;

    /// Against a BTreeSet through a seeded walk of inserts and removes,
    /// across word and summary boundaries.
    #[test]
    fn a_node_set_keeps_what_a_btreeset_keeps() {
        for n in [1, 63, 64, 65, 4095, 4096, 4097, 10_000] {
            let mut set = NodeSet::full(n);
            let mut want: BTreeSet<usize> = (0..n).collect();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ n as u64;
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = (x % n as u64) as usize;
                if step % 3 == 0 {
                    set.insert(k);
                    want.insert(k);
                } else {
                    set.remove(k);
                    want.remove(&k);
                }
                assert_eq!(set.len(), want.len());
                if step % 97 == 0 {
                    assert_eq!(set.from(k).take(50).collect::<Vec<_>>(), want.range(k..).copied().take(50).collect::<Vec<_>>());
                    assert_eq!(set.below(k).collect::<Vec<_>>(), want.range(..k).copied().collect::<Vec<_>>());
                }
            }
            assert_eq!(set.from(0).collect::<Vec<_>>(), want.iter().copied().collect::<Vec<_>>());
        }
    }
}
