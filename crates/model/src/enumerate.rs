//! Exhaustive co-schedule landscape: every way to place two instances of each
//! of `n` programs on `n` dual-core nodes.
//!
//! A placement is a multiset of `n` unordered node pairs over the multiset
//! `{0,0,1,1,...,n-1,n-1}`; nodes, the cores within a node and the two
//! instances of a program are all interchangeable. Read as a graph (programs
//! are vertices, nodes are edges), a placement is a labelled 2-regular
//! multigraph in which a loop is a *twin* node. That view gives the counts
//! (OEIS A002135 with twins, A002137 without) and lets the Terrible Twins
//! experiment (de Blanche & Lundqvist) be replayed on any slowdown matrix.

use thiserror::Error;

/// One node: the programs on its two cores, `a <= b`; `a == b` is a twin.
pub type Pair = (usize, usize);

/// Largest `n` the brute-force enumerator accepts: it walks all
/// `(2n-1)!!` matchings of labelled jobs, 135 135 at `n = 7`.
pub const BRUTE_FORCE_MAX_N: usize = 7;

/// Largest `n` for [`optimal_placement`]: its table has `2^(2n)` entries, and
/// `n = 11` already costs about 36 MB.
pub const OPTIMAL_MAX_N: usize = 11;

#[derive(Debug, Error, PartialEq)]
pub enum EnumerateError {
    #[error("slowdown matrix is empty: at least one program is needed")]
    Empty,
    #[error("slowdown matrix row {row} has {len} entries, expected {n}")]
    NotSquare { row: usize, len: usize, n: usize },
    #[error("slowdown matrix entry [{row}][{col}] is not finite")]
    NotFinite { row: usize, col: usize },
    #[error("{n} programs is too many for this computation (at most {max})")]
    TooLarge { n: usize, max: usize },
    #[error("histogram needs at least one bin")]
    NoBins,
}

/// Number of distinct placements of 2 instances of each of `n` programs on
/// `n` dual-core nodes; `None` on `u128` overflow (from `n = 35` on).
pub fn count_placements(n: usize) -> Option<u128> {
    count_2_regular(n, true)
}

/// Number of those placements in which no node holds both instances of a
/// program.
pub fn count_twin_free(n: usize) -> Option<u128> {
    count_2_regular(n, false)
}

// Split off the connected component holding the lowest program: it has `k`
// programs chosen in C(n-1, k-1) ways and is a loop (k = 1, a twin), a double
// edge (k = 2: both instances of two programs share two nodes) or a cycle
// counted up to rotation and reflection, (k-1)!/2 ways for k >= 3.
fn count_2_regular(n: usize, twins: bool) -> Option<u128> {
    let mut a: Vec<u128> = vec![1];
    let mut binom: Vec<u128> = vec![1]; // row m-1 of Pascal's triangle
    for m in 1..=n {
        if m > 1 {
            let mut next = vec![1u128; m];
            for k in 1..m - 1 {
                next[k] = binom[k - 1].checked_add(binom[k])?;
            }
            binom = next;
        }
        let mut total: u128 = 0;
        let mut half_fact: u128 = 1; // (k-1)!/2 once k >= 3
        for k in 1..=m {
            let shapes = match k {
                1 => u128::from(twins),
                2 => 1,
                3 => 1,
                _ => {
                    half_fact = half_fact.checked_mul((k - 1) as u128)?;
                    half_fact
                }
            };
            let term = binom[k - 1].checked_mul(shapes)?.checked_mul(a[m - k])?;
            total = total.checked_add(term)?;
        }
        a.push(total);
    }
    Some(a[n])
}

/// Every placement for small `n`, found the slow way: all perfect matchings
/// of the `2n` labelled jobs, each canonicalised (pairs sorted) and
/// deduplicated. It shares no logic with [`for_each_placement`], which is why
/// the tests trust it as a reference. Sorted, each placement sorted.
pub fn brute_force_placements(n: usize) -> Result<Vec<Vec<Pair>>, EnumerateError> {
    if n > BRUTE_FORCE_MAX_N {
        return Err(EnumerateError::TooLarge { n, max: BRUTE_FORCE_MAX_N });
    }
    fn rec(
        free: &mut Vec<usize>,
        current: &mut Vec<Pair>,
        out: &mut std::collections::BTreeSet<Vec<Pair>>,
    ) {
        if free.is_empty() {
            let mut placement = current.clone();
            placement.sort_unstable();
            out.insert(placement);
            return;
        }
        let first = free.remove(0);
        for idx in 0..free.len() {
            let other = free.remove(idx);
            let (a, b) = (first / 2, other / 2);
            current.push((a.min(b), a.max(b)));
            rec(free, current, out);
            current.pop();
            free.insert(idx, other);
        }
        free.insert(0, first);
    }
    let mut free: Vec<usize> = (0..2 * n).collect();
    let mut out = std::collections::BTreeSet::new();
    rec(&mut free, &mut Vec::new(), &mut out);
    Ok(out.into_iter().collect())
}

/// Calls `visit` once per distinct placement of 2 instances of each of `n`
/// programs, with pairs in lexicographic order (the same canonical form as
/// [`brute_force_placements`]); with `twin_free_only`, only placements
/// without a twin node. Placements come in lexicographic order.
pub fn for_each_placement<F: FnMut(&[Pair])>(n: usize, twin_free_only: bool, mut visit: F) {
    let mut remaining = vec![2u8; n];
    let mut stack = Vec::with_capacity(n);
    place(0, &mut remaining, &mut stack, twin_free_only, &mut visit);
}

// The lowest program with instances left decides all of its remaining nodes
// at once, partners in nondecreasing order, so each multiset of pairs is
// reached by exactly one path and no deduplication is needed.
fn place<F: FnMut(&[Pair])>(
    from: usize,
    remaining: &mut [u8],
    stack: &mut Vec<Pair>,
    twin_free_only: bool,
    visit: &mut F,
) {
    let n = remaining.len();
    let Some(p) = (from..n).find(|&i| remaining[i] > 0) else {
        visit(stack);
        return;
    };
    if remaining[p] == 2 {
        remaining[p] = 0;
        if !twin_free_only {
            stack.push((p, p));
            place(p + 1, remaining, stack, twin_free_only, visit);
            stack.pop();
        }
        for q1 in p + 1..n {
            if remaining[q1] == 0 {
                continue;
            }
            remaining[q1] -= 1;
            stack.push((p, q1));
            for q2 in q1..n {
                if remaining[q2] == 0 {
                    continue;
                }
                remaining[q2] -= 1;
                stack.push((p, q2));
                place(p + 1, remaining, stack, twin_free_only, visit);
                stack.pop();
                remaining[q2] += 1;
            }
            stack.pop();
            remaining[q1] += 1;
        }
        remaining[p] = 2;
    } else {
        remaining[p] = 0;
        for q in p + 1..n {
            if remaining[q] == 0 {
                continue;
            }
            remaining[q] -= 1;
            stack.push((p, q));
            place(p + 1, remaining, stack, twin_free_only, visit);
            stack.pop();
            remaining[q] += 1;
        }
        remaining[p] = 1;
    }
}

/// Whether any node of the placement holds both instances of one program.
pub fn has_twin(placement: &[Pair]) -> bool {
    placement.iter().any(|&(a, b)| a == b)
}

/// Slowdown of every job under `placement`: the sum over jobs, the mean over
/// the `2 * placement.len()` jobs, and the worst job. `s[i][j]` is the
/// slowdown of program `i` running beside program `j`. The matrix is assumed
/// already checked (see [`validate_matrix`]); indices out of range panic.
pub fn placement_slowdown(s: &[Vec<f64>], placement: &[Pair]) -> PlacementSlowdown {
    let mut total = 0.0;
    let mut worst = f64::NEG_INFINITY;
    for &(a, b) in placement {
        let (x, y) = (s[a][b], s[b][a]);
        total += x + y;
        worst = worst.max(x).max(y);
    }
    let jobs = 2 * placement.len();
    PlacementSlowdown { total, average: total / jobs as f64, worst }
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PlacementSlowdown {
    pub total: f64,
    pub average: f64,
    pub worst: f64,
}

/// Checks that `s` is a non-empty square matrix of finite numbers and returns
/// its size.
pub fn validate_matrix(s: &[Vec<f64>]) -> Result<usize, EnumerateError> {
    let n = s.len();
    if n == 0 {
        return Err(EnumerateError::Empty);
    }
    for (row, r) in s.iter().enumerate() {
        if r.len() != n {
            return Err(EnumerateError::NotSquare { row, len: r.len(), n });
        }
        if let Some(col) = r.iter().position(|v| !v.is_finite()) {
            return Err(EnumerateError::NotFinite { row, col });
        }
    }
    Ok(n)
}

/// Equal-width bins over `[lo, hi]`; the last bin is closed so `hi` counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Histogram {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
}

impl Histogram {
    fn new(lo: f64, hi: f64, bins: usize) -> Histogram {
        Histogram { lo, hi, counts: vec![0; bins] }
    }

    pub fn bin_width(&self) -> f64 {
        (self.hi - self.lo) / self.counts.len() as f64
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    fn add(&mut self, x: f64) {
        let bins = self.counts.len();
        let span = self.hi - self.lo;
        // A constant matrix gives a zero span; everything is then one value.
        let i = if span > 0.0 { ((x - self.lo) / span * bins as f64) as usize } else { 0 };
        self.counts[i.min(bins - 1)] += 1;
    }
}

/// Min, mean, max and histogram of one quantity over a population.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distribution {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub histogram: Histogram,
}

/// Average-job and worst-job slowdown over a set of placements.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Population {
    pub count: u64,
    pub average: Distribution,
    pub worst: Distribution,
}

/// The Terrible Twins comparison: all placements against twin-free ones.
/// `twin_free` is `None` only for a single program, which has no twin-free
/// placement.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Landscape {
    pub all: Population,
    pub twin_free: Option<Population>,
    /// The paper's Table 2 columns beyond those two: placements holding at
    /// least one twin ("all twins"), and those holding a twin of the low,
    /// mid or high group (a placement may be in several groups).
    pub twin_groups: Vec<TwinGroup>,
}

/// One of Table 2's twin groups: which programs' twins it holds and the
/// placements holding at least one of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TwinGroup {
    pub name: &'static str,
    /// Programs (0-based) whose twin pair is in the group.
    pub programs: Vec<usize>,
    pub population: Option<Population>,
}

/// The paper splits the twin pairs into low, mid and high "according to
/// their placement in Figure 3", its twins ranked by slowdown. Here: the
/// programs ranked by their twin pair's slowdown (`s[i][i]`, both
/// instances alike), then cut into thirds, the middle third taking the
/// remainder (10 programs: 3, 4, 3), ties kept in program order.
pub fn twin_groups(s: &[Vec<f64>]) -> [(&'static str, Vec<usize>); 3] {
    let n = s.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| s[a][a].total_cmp(&s[b][b]).then(a.cmp(&b)));
    let third = n / 3;
    let sorted = |v: &[usize]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    [
        ("low twins", sorted(&order[..third])),
        ("mid twins", sorted(&order[third..n - third])),
        ("high twins", sorted(&order[n - third..])),
    ]
}

struct Accumulator {
    count: u64,
    sum: [f64; 2],
    min: [f64; 2],
    max: [f64; 2],
    hist: [Histogram; 2],
}

impl Accumulator {
    fn new(lo: f64, hi: f64, bins: usize) -> Accumulator {
        Accumulator {
            count: 0,
            sum: [0.0; 2],
            min: [f64::INFINITY; 2],
            max: [f64::NEG_INFINITY; 2],
            hist: [Histogram::new(lo, hi, bins), Histogram::new(lo, hi, bins)],
        }
    }

    fn add(&mut self, values: [f64; 2]) {
        self.count += 1;
        for (k, &v) in values.iter().enumerate() {
            self.sum[k] += v;
            self.min[k] = self.min[k].min(v);
            self.max[k] = self.max[k].max(v);
            self.hist[k].add(v);
        }
    }

    fn finish(self) -> Option<Population> {
        if self.count == 0 {
            return None;
        }
        let [h0, h1] = self.hist;
        let dist = |k: usize, histogram: Histogram| Distribution {
            min: self.min[k],
            mean: self.sum[k] / self.count as f64,
            max: self.max[k],
            histogram,
        };
        Some(Population { count: self.count, average: dist(0, h0), worst: dist(1, h1) })
    }
}

/// Enumerates every placement of the programs of `s` (two instances each, as
/// many dual-core nodes as programs) and summarises average-job and
/// worst-job slowdown, for all placements and for twin-free ones. Histograms
/// span the smallest to the largest matrix entry, which bounds both
/// quantities, so `all` and `twin_free` share bin edges and can be overlaid.
/// Cost grows like the placement count: 1 436 714 at 10 programs.
pub fn landscape(s: &[Vec<f64>], bins: usize) -> Result<Landscape, EnumerateError> {
    let n = validate_matrix(s)?;
    if bins == 0 {
        return Err(EnumerateError::NoBins);
    }
    let lo = s.iter().flatten().copied().fold(f64::INFINITY, f64::min);
    let hi = s.iter().flatten().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut all = Accumulator::new(lo, hi, bins);
    let mut free = Accumulator::new(lo, hi, bins);
    let groups = twin_groups(s);
    // The group of each program's twin: 0 low, 1 mid, 2 high.
    let mut group_of = vec![0usize; n];
    for (g, (_, programs)) in groups.iter().enumerate() {
        for &p in programs {
            group_of[p] = g;
        }
    }
    let mut twins = Accumulator::new(lo, hi, bins);
    let mut by_group = [Accumulator::new(lo, hi, bins), Accumulator::new(lo, hi, bins), Accumulator::new(lo, hi, bins)];
    for_each_placement(n, false, |placement| {
        let sd = placement_slowdown(s, placement);
        let values = [sd.average, sd.worst];
        all.add(values);
        let mut held = [false; 3];
        for &(a, b) in placement {
            if a == b {
                held[group_of[a]] = true;
            }
        }
        if held == [false; 3] {
            free.add(values);
        } else {
            twins.add(values);
            for (g, acc) in by_group.iter_mut().enumerate() {
                if held[g] {
                    acc.add(values);
                }
            }
        }
    });
    let mut twin_groups = vec![TwinGroup { name: "all twins", programs: (0..n).collect(), population: twins.finish() }];
    for ((name, programs), acc) in groups.into_iter().zip(by_group) {
        twin_groups.push(TwinGroup { name, programs, population: acc.finish() });
    }
    Ok(Landscape {
        all: all.finish().expect("at least one program always has a placement"),
        twin_free: free.finish(),
        twin_groups,
    })
}

/// A placement of least total slowdown, with its slowdowns.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Optimum {
    pub placement: Vec<Pair>,
    pub slowdown: PlacementSlowdown,
}

/// The placement minimising total (equivalently average) slowdown, found
/// exactly as a minimum-weight perfect matching of the `2n` jobs by dynamic
/// programming over subsets, independently of the enumerator. With
/// `allow_twins == false` twin nodes are forbidden; `Ok(None)` then means no
/// twin-free placement exists (a single program).
pub fn optimal_placement(
    s: &[Vec<f64>],
    allow_twins: bool,
) -> Result<Option<Optimum>, EnumerateError> {
    let n = validate_matrix(s)?;
    if n > OPTIMAL_MAX_N {
        return Err(EnumerateError::TooLarge { n, max: OPTIMAL_MAX_N });
    }
    let jobs = 2 * n;
    let full: usize = (1 << jobs) - 1;
    let cost = |i: usize, j: usize| -> f64 {
        let (a, b) = (i / 2, j / 2);
        if a == b && !allow_twins {
            f64::INFINITY
        } else {
            s[a][b] + s[b][a]
        }
    };
    // rest[mask]: least cost of pairing the jobs not in `mask`. Pairing the
    // lowest free job first keeps each matching on a single path, so
    // the table costs 2^(2n) * 2n steps rather than all matchings.
    let mut rest = vec![f64::INFINITY; full + 1];
    rest[full] = 0.0;
    let best_step = |rest: &[f64], mask: usize| -> (f64, usize, usize) {
        let i = (!mask).trailing_zeros() as usize;
        let mut best = (f64::INFINITY, i, i);
        for j in i + 1..jobs {
            if mask & (1 << j) == 0 {
                let c = cost(i, j) + rest[mask | (1 << i) | (1 << j)];
                if c < best.0 {
                    best = (c, i, j);
                }
            }
        }
        best
    };
    for mask in (0..full).rev() {
        // Masks with an odd number of jobs placed cannot be reached from 0.
        if mask.count_ones() % 2 == 1 {
            continue;
        }
        rest[mask] = best_step(&rest, mask).0;
    }
    if !rest[0].is_finite() {
        return Ok(None);
    }
    let mut placement = Vec::with_capacity(n);
    let mut mask = 0usize;
    while mask != full {
        let (_, i, j) = best_step(&rest, mask);
        let (a, b) = (i / 2, j / 2);
        placement.push((a.min(b), a.max(b)));
        mask |= (1 << i) | (1 << j);
    }
    placement.sort_unstable();
    let slowdown = placement_slowdown(s, &placement);
    Ok(Some(Optimum { placement, slowdown }))
}
