//! The waiting jobs indexed for EASY's backfill pass. Behind a blocked head
//! EASY tries up to `depth` (100) waiting jobs at every event, and nearly
//! all of them fail for a reason known without trying: wider than the idle
//! nodes, or running past the reservation's shadow and wider than the idle
//! nodes outside it. A tree over job numbers (the queue's order) keeps, for
//! every range, how many jobs wait there, their least width and their least
//! requested time, so a pass finds the end of its window by count and then
//! only the jobs that might start, each in O(log n), in the queue's order.
//! What it skips are jobs whose try would have changed nothing, so the
//! schedule is the one a try of every job gives.

/// Jobs the pass must try whatever the idle nodes: those that may start
/// beside running jobs under a policy that shares nodes.
pub(crate) const ALWAYS: u32 = 0;

pub(crate) struct Queue {
    /// Leaves: one per job, from `size`; a node covers its two children.
    size: usize,
    count: Vec<u32>,
    /// Least width below a node (`u32::MAX`: none waits there).
    width: Vec<u32>,
    /// Least requested time below a node (infinite: none waits there).
    wall: Vec<f64>,
}

/// What a job must fit now to be worth a try: `width <= idle`, and either
/// `now + walltime <= shadow` or `width <= open`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Room {
    pub idle: usize,
    pub open: usize,
    pub now: f64,
    pub shadow: f64,
}

impl Room {
    /// Whether a job of this width and requested time (or a range whose
    /// least ones these are: `now + wall` only grows with `wall`) might start.
    fn admits(&self, width: u32, wall: f64) -> bool {
        let w = width as usize;
        w <= self.idle && (self.now + wall <= self.shadow || w <= self.open)
    }
}

impl Queue {
    /// An empty queue for jobs `0..n`.
    pub(crate) fn new(n: usize) -> Queue {
        let size = n.max(1).next_power_of_two();
        Queue { size, count: vec![0; 2 * size], width: vec![u32::MAX; 2 * size], wall: vec![f64::INFINITY; 2 * size] }
    }

    /// Job `j` waits, `width` nodes wide ([`ALWAYS`]: tried whatever the room) for `wall` seconds.
    pub(crate) fn insert(&mut self, j: usize, width: u32, wall: f64) {
        let i = self.size + j;
        debug_assert_eq!(self.count[i], 0, "job {j} already waits");
        self.count[i] = 1;
        self.width[i] = width;
        self.wall[i] = wall;
        self.pull(i);
    }

    /// Job `j` no longer waits.
    pub(crate) fn remove(&mut self, j: usize) {
        let i = self.size + j;
        debug_assert_eq!(self.count[i], 1, "job {j} does not wait");
        self.count[i] = 0;
        self.width[i] = u32::MAX;
        self.wall[i] = f64::INFINITY;
        self.pull(i);
    }

    fn pull(&mut self, mut i: usize) {
        while i > 1 {
            i /= 2;
            let (l, r) = (2 * i, 2 * i + 1);
            self.count[i] = self.count[l] + self.count[r];
            self.width[i] = self.width[l].min(self.width[r]);
            self.wall[i] = self.wall[l].min(self.wall[r]);
        }
    }

    /// The `d`-th waiting job after `j` (`d` >= 1), else the last waiting one.
    pub(crate) fn nth_after(&self, j: usize, d: usize) -> Option<usize> {
        // Jobs waiting at or before j, then the (rank + d)-th from the start.
        let mut rank = 0usize;
        let mut i = self.size + j;
        rank += self.count[i] as usize;
        while i > 1 {
            if i % 2 == 1 {
                rank += self.count[i - 1] as usize;
            }
            i /= 2;
        }
        let total = self.count[1] as usize;
        let want = (rank + d).min(total);
        if want == 0 || want <= rank {
            return None;
        }
        let (mut i, mut left) = (1usize, want);
        while i < self.size {
            let l = self.count[2 * i] as usize;
            if left <= l {
                i *= 2;
            } else {
                left -= l;
                i = 2 * i + 1;
            }
        }
        Some(i - self.size)
    }

    /// The first waiting job in `from..=to` that `room` admits.
    pub(crate) fn first_fit(&self, from: usize, to: usize, room: &Room) -> Option<usize> {
        if from > to {
            return None;
        }
        self.search(1, 0, self.size - 1, from, to, room)
    }

    fn search(&self, i: usize, lo: usize, hi: usize, from: usize, to: usize, room: &Room) -> Option<usize> {
        if hi < from || lo > to || self.count[i] == 0 || !room.admits(self.width[i], self.wall[i]) {
            return None;
        }
        if lo == hi {
            return Some(lo);
        }
        let mid = lo + (hi - lo) / 2;
        self.search(2 * i, lo, mid, from, to, room).or_else(|| self.search(2 * i + 1, mid + 1, hi, from, to, room))
    }
}

#[cfg(test)]
mod tests {
    use super::{Queue, Room};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The index's answers equal a scan of the waiting jobs in order, on
        /// random queues after random inserts and removals: the window's end
        /// by count, and the first job in a range that the room admits.
        #[test]
        fn the_index_answers_what_a_scan_of_the_queue_answers(
            n in 1usize..200,
            ops in proptest::collection::vec((0usize..200, 0u32..12, 1u32..50, any::<bool>()), 0..300),
            queries in proptest::collection::vec((0usize..200, 0usize..200, 1usize..20, 0usize..12, 0usize..12, 0u32..60), 1..40),
        ) {
            let mut q = Queue::new(n);
            let mut want: BTreeMap<usize, (u32, f64)> = BTreeMap::new();
            for (j, width, wall, add) in ops {
                let j = j % n;
                match (add, want.contains_key(&j)) {
                    (true, false) => {
                        q.insert(j, width, wall as f64);
                        want.insert(j, (width, wall as f64));
                    }
                    (false, true) => {
                        q.remove(j);
                        want.remove(&j);
                    }
                    _ => {}
                }
            }
            for (a, b, d, idle, open, window) in queries {
                let (a, b) = (a % n, b % n);
                let room = Room { idle, open: open.min(idle), now: 5.0, shadow: 5.0 + window as f64 };
                let scan = want.range(a..=b.max(a)).find(|(_, &(w, wall))| room.admits(w, wall)).map(|(&j, _)| j);
                prop_assert_eq!(q.first_fit(a, b, &room), if a <= b { scan } else { None });
                let after: Vec<usize> = want.range(a + 1..).map(|(&j, _)| j).collect();
                let nth = if after.is_empty() { None } else { Some(after[(d - 1).min(after.len() - 1)]) };
                prop_assert_eq!(q.nth_after(a, d), nth);
            }
        }
    }
}
