//! Busy nodes ordered by their expected free time, an entry per job on
//! whole nodes (however many runs of nodes it holds) or per partly used
//! node, with a count of the nodes up to a moving mark. A wide job's start
//! and end cost one tree update, not one per run of its nodes. EASY's reservation asks, at every pass
//! with a blocked head, when the `m`-th busy node is expected free (its
//! shadow) and how many busy nodes are free by then. Walking the runs from
//! the first cost every run before the shadow, at every pass; from the mark
//! left by the previous question it costs only the runs between the two
//! answers, which are few while the head and the running jobs stay.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Finite times, totally ordered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OrdF64(pub f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// An entry's key: its free time, then its first node, highest first (so
/// the reservation's walk down from the shadow meets the lowest first).
pub(crate) type Key = (OrdF64, Reverse<usize>);

/// The key after every run free at `t`.
pub(crate) fn after_all_at(t: f64) -> Key {
    (OrdF64(t), Reverse(0))
}

/// What an entry holds: how many nodes, and whose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Entry {
    pub nodes: usize,
    /// The job on whole nodes, or [`NODE`]: the one node of the key, partly used.
    pub job: usize,
}

/// [`Entry::job`] of a partly used node.
pub(crate) const NODE: usize = usize::MAX;

pub(crate) struct Busy {
    runs: BTreeMap<Key, Entry>,
    /// Nodes in runs keyed at or below `mark` (which need not be a run's key).
    mark: Key,
    below: usize,
}

impl Busy {
    pub(crate) fn new() -> Busy {
        Busy { runs: BTreeMap::new(), mark: (OrdF64(f64::NEG_INFINITY), Reverse(usize::MAX)), below: 0 }
    }

    pub(crate) fn entries(&self) -> &BTreeMap<Key, Entry> {
        &self.runs
    }

    /// `e.nodes` nodes, the lowest `first`, are busy until `t`.
    pub(crate) fn insert(&mut self, t: f64, first: usize, e: Entry) {
        let key = (OrdF64(t), Reverse(first));
        let old = self.runs.insert(key, e);
        debug_assert!(old.is_none(), "an entry at {first} listed twice");
        if key <= self.mark {
            self.below += e.nodes;
        }
    }

    /// The entry keyed `(t, first)` is no longer busy.
    pub(crate) fn remove(&mut self, t: f64, first: usize) {
        let key = (OrdF64(t), Reverse(first));
        let e = self.runs.remove(&key).expect("an entry taken out is listed");
        if key <= self.mark {
            self.below -= e.nodes;
        }
    }

    /// The key of the entry holding the `m`-th busy node in key order (`m` >= 1), if so many are busy.
    pub(crate) fn nth(&mut self, m: usize) -> Option<Key> {
        debug_assert!(m >= 1);
        if self.below >= m {
            // Back down while the runs under the mark still hold m without the top one.
            let mut below = self.below;
            for (&key, e) in self.runs.range(..=self.mark).rev() {
                let len = e.nodes;
                if below - len < m {
                    self.mark = key;
                    self.below = below;
                    return Some(key);
                }
                below -= len;
            }
            unreachable!("{} nodes counted below the mark, fewer listed", self.below);
        }
        let mut below = self.below;
        for (&key, e) in self.runs.range((Bound::Excluded(self.mark), Bound::Unbounded)) {
            below += e.nodes;
            if below >= m {
                self.mark = key;
                self.below = below;
                return Some(key);
            }
        }
        None
    }

    /// Busy nodes in entries keyed at or below `key`.
    pub(crate) fn count_to(&mut self, key: Key) -> usize {
        if key >= self.mark {
            self.below += self.runs.range((Bound::Excluded(self.mark), Bound::Included(key))).map(|(_, e)| e.nodes).sum::<usize>();
        } else {
            self.below -= self.runs.range((Bound::Excluded(key), Bound::Included(self.mark))).map(|(_, e)| e.nodes).sum::<usize>();
        }
        self.mark = key;
        self.below
    }
}

#[cfg(test)]
mod tests {
    use super::{after_all_at, Busy, Entry, OrdF64};
    use proptest::prelude::*;
    use std::cmp::Reverse;

    proptest! {
        /// The mark's answers equal a walk from the first run, on random
        /// runs added and taken out between the questions.
        #[test]
        fn the_marked_count_answers_what_a_walk_from_the_start_answers(
            ops in proptest::collection::vec((0u8..4, 0usize..40, 1usize..5, 0u8..12, 1usize..30), 1..200),
        ) {
            let mut b = Busy::new();
            // Nodes 0..200 in blocks of 5, each block a possible run.
            let mut listed: Vec<Option<(f64, usize, usize)>> = vec![None; 40];
            for (op, block, len, t, m) in ops {
                let t = t as f64;
                match (op, listed[block]) {
                    (0 | 1, None) => {
                        b.insert(t, block * 5, Entry { nodes: len, job: block });
                        listed[block] = Some((t, block * 5, block * 5 + len));
                    }
                    (0, Some((t0, a, _))) => {
                        b.remove(t0, a);
                        listed[block] = None;
                    }
                    (2, _) => {
                        let mut below = 0;
                        let mut expect = None;
                        for (&key, e) in b.entries() {
                            below += e.nodes;
                            if below >= m {
                                expect = Some(key);
                                break;
                            }
                        }
                        prop_assert_eq!(b.nth(m), expect);
                    }
                    _ => {
                        let key = after_all_at(t);
                        let expect: usize = b.entries().range(..=key).map(|(_, e)| e.nodes).sum();
                        prop_assert_eq!(b.count_to(key), expect);
                        let key = (OrdF64(t), Reverse(m));
                        let expect: usize = b.entries().range(..=key).map(|(_, e)| e.nodes).sum();
                        prop_assert_eq!(b.count_to(key), expect);
                    }
                }
            }
        }
    }
}
