//! Which cores of its pool each job holds, the one choice of cores for a
//! start ([`Cores`]), and the shared-core rate model.
//!
//! Cores are indices `0..pool cores` of a pool; an engine maps them to what
//! it runs on (the node runner to the pool's CPUs). The simulator, the
//! virtual node and the node runner all place through [`CoreMap::choose`],
//! so a decision lands on the same cores in every engine. On a node with a
//! topology, `crate::placement` places starts by a registered strategy
//! first and falls back to `choose` for given cores, pools off the topology
//! and overbooking; the decisions and the validation stay as they are.

use crate::policy::Cores;

/// Per pool, how many running (not suspended) jobs hold each core.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoreMap {
    holders: Vec<Vec<u32>>,
}

/// Why a choice of cores is impossible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceError {
    /// Fewer usable cores than the job needs.
    NoRoom { needs: u32, free: u32 },
    NoSuchCore { core: u32, cores: u32 },
    Duplicate { core: u32 },
    Empty,
    /// A named core is held and the decision does not overbook.
    Busy { core: u32 },
}

impl CoreMap {
    /// A map of pools with these core counts, every core free.
    pub fn new(pool_cores: impl IntoIterator<Item = u32>) -> CoreMap {
        CoreMap { holders: pool_cores.into_iter().map(|n| vec![0; n as usize]).collect() }
    }

    /// How many running jobs hold each core of `pool`.
    pub fn holders(&self, pool: usize) -> &[u32] {
        &self.holders[pool]
    }

    /// Cores of `pool` no running job holds.
    pub fn free(&self, pool: usize) -> u32 {
        self.holders[pool].iter().filter(|&&h| h == 0).count() as u32
    }

    /// Whether every core of every pool is held.
    pub fn full(&self) -> bool {
        self.holders.iter().all(|p| p.iter().all(|&h| h > 0))
    }

    pub fn hold(&mut self, pool: usize, cpus: &[u32]) {
        for &c in cpus {
            self.holders[pool][c as usize] += 1;
        }
    }

    pub fn release(&mut self, pool: usize, cpus: &[u32]) {
        for &c in cpus {
            let h = &mut self.holders[pool][c as usize];
            *h = h.saturating_sub(1);
        }
    }

    /// The cores `how` names for a job of `n` cores in `pool`, ascending.
    /// Without `overbook` every chosen core must be free; with it, free
    /// cores come first, then the least-held busy ones (lowest index on
    /// ties): the OS time-shares what is held twice.
    ///
    /// - [`Cores::Compact`]: the lowest-numbered cores.
    /// - [`Cores::Spread`]: cores evenly spaced over the free ones (the
    ///   middle of each of `n` equal stretches), so a job narrower than the
    ///   pool is spread over it.
    /// - [`Cores::Given`]: exactly those, any number from 1 to the pool's
    ///   cores (a job on fewer cores than its threads shares them itself).
    pub fn choose(&self, pool: usize, n: u32, how: &Cores, overbook: bool) -> Result<Vec<u32>, ChoiceError> {
        let h = &self.holders[pool];
        let cores = h.len() as u32;
        if let (Cores::Compact, false) = (how, overbook) {
            // The simulator's every start: one pass, one allocation.
            let mut out = Vec::with_capacity(n as usize);
            out.extend((0..cores).filter(|&c| h[c as usize] == 0).take(n as usize));
            if (out.len() as u32) < n {
                return Err(ChoiceError::NoRoom { needs: n, free: self.free(pool) });
            }
            return Ok(out);
        }
        let free: Vec<u32> = (0..cores).filter(|&c| h[c as usize] == 0).collect();
        let busy = || {
            let mut b: Vec<u32> = (0..cores).filter(|&c| h[c as usize] > 0).collect();
            b.sort_by_key(|&c| (h[c as usize], c));
            b
        };
        let mut out = match how {
            Cores::Given(v) => {
                if v.is_empty() {
                    return Err(ChoiceError::Empty);
                }
                let mut seen = vec![false; cores as usize];
                for &c in v {
                    if c >= cores {
                        return Err(ChoiceError::NoSuchCore { core: c, cores });
                    }
                    if seen[c as usize] {
                        return Err(ChoiceError::Duplicate { core: c });
                    }
                    seen[c as usize] = true;
                    if !overbook && h[c as usize] > 0 {
                        return Err(ChoiceError::Busy { core: c });
                    }
                }
                v.clone()
            }
            Cores::Compact | Cores::Spread => {
                let nfree = free.len() as u32;
                if nfree >= n {
                    match how {
                        Cores::Spread => {
                            (0..n as usize).map(|i| free[((2 * i + 1) * free.len()) / (2 * n as usize)]).collect()
                        }
                        _ => free[..n as usize].to_vec(),
                    }
                } else if overbook && n <= cores {
                    let mut v = free;
                    v.extend(busy().into_iter().take((n - nfree) as usize));
                    v
                } else {
                    return Err(ChoiceError::NoRoom { needs: n, free: nfree });
                }
            }
        };
        out.sort_unstable();
        Ok(out)
    }
}

/// One running job as the rate model sees it.
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    pub pool: usize,
    /// Cores it holds; empty when the engine does not place (it then has
    /// cores of its own).
    pub cpus: &'a [u32],
    /// Its width: the threads it runs, one per core it was started for.
    pub threads: u32,
}

/// The share of processor time each running job gets, in (0, 1]: the
/// shared-core model of overbooking.
///
/// A job spreads its threads evenly over its cores, so core c carries
/// `load_c = sum over its holders of threads / cores held`. A thread on a
/// core with load above 1 gets `1 / load_c` of it (the OS time-shares the
/// core fairly); a job's share is the mean over its cores, so a job that
/// alone holds one core for two threads gets 1/2, and a 2-thread job on
/// cores {0, 1} beside a 1-thread job on core 0 gets (1/2 + 1) / 2 = 3/4
/// (work-conserving: its threads on the unshared core are not held back
/// by the one on the shared core). A job without cores, or only on cores
/// of load <= 1, gets 1. Engines multiply the share by 1 / slowdown beside
/// its co-runners (memory contention), so without overbooking the model is
/// the plain slowdown model.
pub fn shares(placed: &[Placed]) -> Vec<f64> {
    let overbooked = placed.iter().any(|p| !p.cpus.is_empty() && p.threads as usize > p.cpus.len());
    let pools = placed.iter().map(|p| p.pool + 1).max().unwrap_or(0);
    let mut load: Vec<Vec<f64>> = vec![Vec::new(); pools];
    for p in placed {
        if let Some(&top) = p.cpus.iter().max() {
            let l = &mut load[p.pool];
            if l.len() <= top as usize {
                l.resize(top as usize + 1, 0.0);
            }
        }
    }
    let mut shared = overbooked;
    for p in placed {
        for &c in p.cpus {
            let l = &mut load[p.pool][c as usize];
            if *l > 0.0 {
                shared = true;
            }
            *l += p.threads as f64 / p.cpus.len() as f64;
        }
    }
    placed
        .iter()
        .map(|p| {
            if !shared || p.cpus.is_empty() {
                return 1.0;
            }
            let sum: f64 = p.cpus.iter().map(|&c| (1.0 / load[p.pool][c as usize]).min(1.0)).sum();
            sum / p.cpus.len() as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_takes_the_lowest_free_cores_and_spread_the_middle_of_equal_stretches() {
        let mut m = CoreMap::new([8]);
        m.hold(0, &[0, 3]);
        assert_eq!(m.free(0), 6);
        assert_eq!(m.choose(0, 2, &Cores::Compact, false), Ok(vec![1, 2]));
        // Free: 1 2 4 5 6 7; two stretches of three, middles 2 and 6.
        assert_eq!(m.choose(0, 2, &Cores::Spread, false), Ok(vec![2, 6]));
        assert_eq!(m.choose(0, 6, &Cores::Spread, false), Ok(vec![1, 2, 4, 5, 6, 7]));
        assert_eq!(m.choose(0, 7, &Cores::Compact, false), Err(ChoiceError::NoRoom { needs: 7, free: 6 }));
    }

    #[test]
    fn overbooking_takes_free_cores_first_then_the_least_held() {
        let mut m = CoreMap::new([3]);
        m.hold(0, &[0, 1]);
        m.hold(0, &[0]);
        assert_eq!(m.choose(0, 2, &Cores::Compact, true), Ok(vec![1, 2]));
        assert_eq!(m.choose(0, 3, &Cores::Spread, true), Ok(vec![0, 1, 2]));
        assert_eq!(m.choose(0, 4, &Cores::Compact, true), Err(ChoiceError::NoRoom { needs: 4, free: 1 }));
    }

    #[test]
    fn given_cores_must_exist_be_distinct_and_free_unless_overbooking() {
        let mut m = CoreMap::new([2]);
        m.hold(0, &[1]);
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![0]), false), Ok(vec![0]));
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![1]), false), Err(ChoiceError::Busy { core: 1 }));
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![1, 0]), true), Ok(vec![0, 1]));
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![2]), true), Err(ChoiceError::NoSuchCore { core: 2, cores: 2 }));
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![0, 0]), true), Err(ChoiceError::Duplicate { core: 0 }));
        assert_eq!(m.choose(0, 1, &Cores::Given(vec![]), true), Err(ChoiceError::Empty));
        m.release(0, &[1]);
        assert!(!m.full() && m.free(0) == 2);
    }

    #[test]
    fn shares_by_hand() {
        let p = |cpus: &'static [u32], threads| Placed { pool: 0, cpus, threads };
        // Alone or side by side on own cores: full speed.
        assert_eq!(shares(&[p(&[0, 1], 2)]), vec![1.0]);
        assert_eq!(shares(&[p(&[0], 1), p(&[1], 1)]), vec![1.0, 1.0]);
        // Overbook: 2 threads on {0,1}, 1 thread on {0}: core 0 load 2.
        assert_eq!(shares(&[p(&[0, 1], 2), p(&[0], 1)]), vec![0.75, 0.5]);
        // Sidestep: the 2-thread job squeezed onto core 1.
        assert_eq!(shares(&[p(&[1], 2), p(&[0], 1)]), vec![0.5, 1.0]);
        // Unpinned overbooking: everyone on both cores, 3 threads on 2 cores.
        let s = shares(&[p(&[0, 1], 2), p(&[0, 1], 1)]);
        assert!((s[0] - 2.0 / 3.0).abs() < 1e-12 && (s[1] - 2.0 / 3.0).abs() < 1e-12, "{s:?}");
        // A job the engine did not place keeps its own cores.
        assert_eq!(shares(&[p(&[], 4), p(&[0], 1)]), vec![1.0, 1.0]);
    }
}
