//! Where a job runs on a node: which CPUs, and the memory nodes that follow
//! them. Strategies are registered by name ([`STRATEGIES`]); every engine
//! places through [`place`], so what `pairs` measures and what `run` and the
//! simulator do agree.
//!
//! The strategies (the VM NUMA talk's pinning, range pinning and NUMA-first; the
//! nOS-V paper's strict affinity; the Terrible Twins paper's pairs on cores that share a cache):
//!
//! - `compact`: the free PUs in topology order (socket, NUMA node, cache,
//!   core, hardware thread), so a job's threads share as much as they can.
//! - `scatter`: one PU per physical core while it can, round-robin over the
//!   NUMA nodes and, within each, over the last-level-cache domains, so a
//!   job gets as much cache and bandwidth as the node has.
//! - `range`: one contiguous range of free PUs inside one NUMA node (the
//!   first that fits), else `compact` inside the NUMA node with the most
//!   free PUs, else `compact`.
//! - `numa-first`: fill one NUMA node before the next: the busiest node
//!   that still fits the whole job, its free PUs in topology order.
//! - `interference-aware`: the last-level-cache domain (then NUMA node)
//!   whose running jobs the new one would hurt and be hurt by least, by the
//!   pair slowdowns the caller supplies weighted by what the CPUs share
//!   ([`SharingLevel::weight`]), or priced per level by the caller; within
//!   it, PUs of cores no running job uses first; with one domain and no
//!   SMT, it is `compact`.
//!
//! This module is pure: it reads a [`Node`] it is given.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::topology::Node;

/// What two CPUs share, closest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharingLevel {
    /// Hardware threads of one core: every cache and the core itself.
    SmtSibling,
    /// One last-level cache (an L3 domain, a CCX).
    SameLlc,
    /// One NUMA node's memory controllers, different caches.
    SameNuma,
    /// One socket, different NUMA nodes.
    SameSocket,
    OtherSocket,
}

impl SharingLevel {
    pub const ALL: [SharingLevel; 5] =
        [SharingLevel::SmtSibling, SharingLevel::SameLlc, SharingLevel::SameNuma, SharingLevel::SameSocket, SharingLevel::OtherSocket];

    pub fn name(self) -> &'static str {
        match self {
            SharingLevel::SmtSibling => "smt-sibling",
            SharingLevel::SameLlc => "same-llc",
            SharingLevel::SameNuma => "same-numa",
            SharingLevel::SameSocket => "same-socket",
            SharingLevel::OtherSocket => "other-socket",
        }
    }

    /// How much of a pair's measured interference reaches jobs this far
    /// apart, when only the closest level was measured: all of it through
    /// a shared core or cache, half through shared memory controllers,
    /// little across NUMA nodes and sockets. A documented default for the
    /// illustrative matrices of machines we do not have; measured levels
    /// (`cosched pairs` at each level) replace it.
    pub fn weight(self) -> f64 {
        match self {
            SharingLevel::SmtSibling | SharingLevel::SameLlc => 1.0,
            SharingLevel::SameNuma => 0.5,
            SharingLevel::SameSocket => 0.15,
            SharingLevel::OtherSocket => 0.05,
        }
    }
}

/// What CPUs `a` and `b` share on `node`.
pub fn sharing_level(node: &Node, a: u32, b: u32) -> SharingLevel {
    if node.siblings(a).is_some_and(|s| s.contains(&b)) {
        return SharingLevel::SmtSibling;
    }
    if llc_of(node, a).is_some() && llc_of(node, a) == llc_of(node, b) {
        return SharingLevel::SameLlc;
    }
    let (na, nb) = (node.numa_of(a), node.numa_of(b));
    if na.is_some() && na == nb {
        return SharingLevel::SameNuma;
    }
    let socket = |p: u32| node.core_of(p).map(|c| c.socket);
    if socket(a).is_some() && socket(a) == socket(b) {
        SharingLevel::SameSocket
    } else {
        SharingLevel::OtherSocket
    }
}

/// One last-level-cache domain: what `interference-aware` places into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Domain {
    pub socket: u32,
    pub numa: Option<u32>,
    /// PUs sharing the domain's last-level cache, sorted.
    pub cpus: Vec<u32>,
}

/// The node's last-level-cache domains in topology order (one domain of
/// every PU when the topology names no cache).
pub fn domains(node: &Node) -> Vec<Domain> {
    let mut by: std::collections::BTreeMap<(u32, u32, usize), Vec<u32>> = Default::default();
    for core in &node.cores {
        for &pu in &core.pus {
            by.entry((core.socket, core.numa.unwrap_or(0), llc_of(node, pu).unwrap_or(0))).or_default().push(pu);
        }
    }
    by.into_iter()
        .map(|((socket, _, _), mut cpus)| {
            cpus.sort_unstable();
            Domain { socket, numa: cpus.first().and_then(|&p| node.numa_of(p)), cpus }
        })
        .collect()
}

/// The sharing levels some pair of this node's CPUs has, closest first:
/// the levels `cosched pairs` can measure a pair at here.
pub fn levels_offered(node: &Node) -> Vec<SharingLevel> {
    let pus = node.pus();
    let mut found: BTreeSet<SharingLevel> = BTreeSet::new();
    // The first PU against every other reaches each level this node has
    // (topologies are symmetric); a quadratic scan is not needed.
    for (i, &a) in pus.iter().enumerate() {
        for &b in &pus[i + 1..] {
            found.insert(sharing_level(node, a, b));
        }
        if i >= 1 {
            break;
        }
    }
    found.into_iter().collect()
}

/// Index of the last-level cache instance holding `pu`.
fn llc_of(node: &Node, pu: u32) -> Option<usize> {
    let level = node.llc()?.level;
    node.caches.iter().position(|c| c.level == level && c.kind != crate::topology::CacheKind::Instruction && c.cpus.contains(&pu))
}

/// A registered placement strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    Compact,
    Scatter,
    Range,
    NumaFirst,
    InterferenceAware,
}

pub struct StrategyEntry {
    pub name: &'static str,
    pub strategy: Strategy,
    pub summary: &'static str,
}

/// Every strategy by name, as `--placement` takes them.
pub const STRATEGIES: &[StrategyEntry] = &[
    StrategyEntry { name: "compact", strategy: Strategy::Compact, summary: "free PUs in topology order: a job's threads share cores and caches" },
    StrategyEntry { name: "scatter", strategy: Strategy::Scatter, summary: "one PU per core, round-robin over NUMA nodes and cache domains" },
    StrategyEntry { name: "range", strategy: Strategy::Range, summary: "one contiguous range of PUs inside one NUMA node (the VM NUMA talk's range pinning)" },
    StrategyEntry { name: "numa-first", strategy: Strategy::NumaFirst, summary: "fill one NUMA node before the next (the VM NUMA talk's NUMA-first)" },
    StrategyEntry {
        name: "interference-aware",
        strategy: Strategy::InterferenceAware,
        summary: "the cache / NUMA domain where the job hurts and is hurt least, by predicted pair slowdowns",
    },
];

pub fn strategy_by_name(name: &str) -> Result<Strategy, String> {
    STRATEGIES.iter().find(|e| e.name == name).map(|e| e.strategy).ok_or_else(|| {
        format!("unknown placement `{name}`; expected one of: {}", STRATEGIES.iter().map(|e| e.name).collect::<Vec<_>>().join(", "))
    })
}

/// A job running on the node, as placement sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Occupant {
    pub cpus: Vec<u32>,
    /// Predicted slowdowns of the pair: the new job's beside this one and
    /// this one's beside the new job (1.0 = no harm).
    pub slowdown_new: f64,
    pub slowdown_old: f64,
}

/// The CPUs and memory nodes a job gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    pub cpus: Vec<u32>,
    /// NUMA nodes of those CPUs: where its memory is bound.
    pub mems: Vec<u32>,
}

/// Places a job needing `cores` PUs among `allowed` (its pool), avoiding
/// every PU an occupant holds; `None` when too few are free.
pub fn place(node: &Node, strategy: Strategy, allowed: &[u32], cores: u32, running: &[Occupant]) -> Option<Placed> {
    let layout = Layout::new(node);
    let busy: Vec<u32> = running.iter().flat_map(|o| o.cpus.iter().copied()).collect();
    layout.place(strategy, allowed, cores, &busy, &|cpus: &[u32]| layout.weighted_cost(cpus, running))
}

/// Where each PU sits, read once from a [`Node`], so an engine that places
/// thousands of jobs (the simulator's Monte-Carlo orders) does not walk the
/// topology's lists at every start. [`place`] builds one per call.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Indexed by PU number; `None` for numbers the node does not have.
    at: Vec<Option<Pu>>,
    /// PUs by socket, NUMA node, LLC domain, core, then hardware thread.
    order: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pu {
    socket: u32,
    /// NUMA node of the PU itself (`Node::numa_of`), and of its core's
    /// first PU (`Core::numa`), which orders the topology.
    numa: Option<u32>,
    core_numa: Option<u32>,
    llc: Option<usize>,
    core: u32,
    /// Position among its core's hardware threads.
    thread: usize,
}

impl Layout {
    pub fn new(node: &Node) -> Layout {
        let top = node.cores.iter().flat_map(|c| c.pus.iter().copied()).max().map_or(0, |m| m as usize + 1);
        let mut at: Vec<Option<Pu>> = vec![None; top];
        let level = node.llc().map(|c| c.level);
        for core in &node.cores {
            for (t, &pu) in core.pus.iter().enumerate() {
                let llc = level.and_then(|level| {
                    node.caches.iter().position(|c| c.level == level && c.kind != crate::topology::CacheKind::Instruction && c.cpus.contains(&pu))
                });
                at[pu as usize] =
                    Some(Pu { socket: core.socket, numa: node.numa_of(pu), core_numa: core.numa, llc, core: core.index, thread: t });
            }
        }
        let mut keyed: Vec<(u32, u32, usize, u32, usize, u32)> = at
            .iter()
            .enumerate()
            .filter_map(|(p, x)| x.map(|x| (x.socket, x.core_numa.unwrap_or(0), x.llc.unwrap_or(0), x.core, x.thread, p as u32)))
            .collect();
        keyed.sort_unstable();
        Layout { at, order: keyed.into_iter().map(|k| k.5).collect() }
    }

    fn pu(&self, p: u32) -> Option<&Pu> {
        self.at.get(p as usize).and_then(Option::as_ref)
    }

    /// Whether `p` is a PU of the node.
    pub fn has(&self, p: u32) -> bool {
        self.pu(p).is_some()
    }

    /// What CPUs `a` and `b` share: [`sharing_level`] without walking the node.
    pub fn level(&self, a: u32, b: u32) -> SharingLevel {
        let (Some(x), Some(y)) = (self.pu(a), self.pu(b)) else {
            return SharingLevel::OtherSocket;
        };
        if x.core == y.core {
            SharingLevel::SmtSibling
        } else if x.llc.is_some() && x.llc == y.llc {
            SharingLevel::SameLlc
        } else if x.numa.is_some() && x.numa == y.numa {
            SharingLevel::SameNuma
        } else if x.socket == y.socket {
            SharingLevel::SameSocket
        } else {
            SharingLevel::OtherSocket
        }
    }

    /// The closest level between any CPU of `a` and any CPU of `b`: what
    /// two jobs on those CPUs share at most.
    pub fn closest(&self, a: &[u32], b: &[u32]) -> SharingLevel {
        let mut best = SharingLevel::OtherSocket;
        for &x in a {
            for &y in b {
                best = best.min(self.level(x, y));
                if best == SharingLevel::SmtSibling {
                    return best;
                }
            }
        }
        best
    }

    /// NUMA nodes of `cpus`, ascending.
    pub fn mems(&self, cpus: &[u32]) -> Vec<u32> {
        let m: BTreeSet<u32> = cpus.iter().filter_map(|&p| self.pu(p).and_then(|x| x.numa)).collect();
        m.into_iter().collect()
    }

    /// [`place`]'s default cost of a candidate for `interference-aware`:
    /// each occupant's pair slowdowns above 1, weighted by the closest level
    /// the candidate shares with it ([`SharingLevel::weight`]).
    pub fn weighted_cost(&self, cpus: &[u32], running: &[Occupant]) -> f64 {
        running
            .iter()
            .map(|o| {
                let level = self.closest(cpus, &o.cpus);
                ((o.slowdown_new - 1.0).max(0.0) + (o.slowdown_old - 1.0).max(0.0)) * level.weight()
            })
            .sum()
    }

    /// Places a job of `cores` PUs among `allowed`, avoiding `busy`;
    /// `interference-aware` takes the candidate of least `cost` (the first
    /// on ties), which the caller computes from its own predictions (an
    /// engine with per-level predictions prices each level directly).
    /// `None` when too few PUs are free.
    pub fn place(&self, strategy: Strategy, allowed: &[u32], cores: u32, busy: &[u32], cost: &dyn Fn(&[u32]) -> f64) -> Option<Placed> {
        // A mark per PU number: an engine places thousands of jobs, and a
        // `contains` per PU would make each start quadratic in the node.
        let mut ok = vec![false; self.at.len()];
        for &p in allowed {
            if let Some(x) = ok.get_mut(p as usize) {
                *x = true;
            }
        }
        for &p in busy {
            if let Some(x) = ok.get_mut(p as usize) {
                *x = false;
            }
        }
        let free: Vec<u32> = self.order.iter().copied().filter(|&p| ok[p as usize]).collect();
        let n = cores as usize;
        if n == 0 || free.len() < n {
            return None;
        }
        let mut cpus = match strategy {
            Strategy::Compact => free[..n].to_vec(),
            Strategy::Scatter => self.scatter(&free, n),
            Strategy::Range => self.range(&free, n),
            Strategy::NumaFirst => self.numa_first(&free, busy, n),
            Strategy::InterferenceAware => self.interference_aware(&free, busy, n, cost),
        };
        cpus.sort_unstable();
        let mems = self.mems(&cpus);
        Some(Placed { cpus, mems })
    }

    fn numa_key(&self, p: u32) -> u32 {
        self.pu(p).and_then(|x| x.numa).unwrap_or(0)
    }

    fn llc_key(&self, p: u32) -> usize {
        self.pu(p).and_then(|x| x.llc).unwrap_or(0)
    }

    /// Round-robin over NUMA nodes, within each over LLC domains, first
    /// thread of each core first; second threads only once every core has one.
    fn scatter(&self, free: &[u32], n: usize) -> Vec<u32> {
        let thread = |p: u32| self.pu(p).map_or(0, |x| x.thread);
        let mut out = Vec::new();
        let max_thread = free.iter().map(|&p| thread(p)).max().unwrap_or(0);
        for t in 0..=max_thread {
            // Domains: (numa, llc) -> PUs of thread t, in order.
            let mut domains: std::collections::BTreeMap<(u32, usize), Vec<u32>> = Default::default();
            for &p in free.iter().filter(|&&p| thread(p) == t) {
                domains.entry((self.numa_key(p), self.llc_key(p))).or_default().push(p);
            }
            // Interleave NUMA nodes first, then their LLC domains.
            let mut by_numa: std::collections::BTreeMap<u32, Vec<Vec<u32>>> = Default::default();
            for ((numa, _), pus) in domains {
                by_numa.entry(numa).or_default().push(pus);
            }
            let mut queues: Vec<std::collections::VecDeque<u32>> = by_numa
                .into_values()
                .map(|llcs| {
                    // Within a NUMA node, alternate its LLC domains.
                    let mut q = std::collections::VecDeque::new();
                    let longest = llcs.iter().map(Vec::len).max().unwrap_or(0);
                    for i in 0..longest {
                        for l in &llcs {
                            if let Some(&p) = l.get(i) {
                                q.push_back(p);
                            }
                        }
                    }
                    q
                })
                .collect();
            while out.len() < n && queues.iter().any(|q| !q.is_empty()) {
                for q in queues.iter_mut() {
                    if out.len() < n {
                        if let Some(p) = q.pop_front() {
                            out.push(p);
                        }
                    }
                }
            }
            if out.len() == n {
                break;
            }
        }
        out
    }

    /// The free PUs of each NUMA node, in topology order.
    fn per_numa(&self, free: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let mut m: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for &p in free {
            m.entry(self.numa_key(p)).or_default().push(p);
        }
        m.into_iter().collect()
    }

    fn range(&self, free: &[u32], n: usize) -> Vec<u32> {
        for (_, pus) in self.per_numa(free) {
            let mut sorted = pus.clone();
            sorted.sort_unstable();
            for w in sorted.windows(n) {
                if w[n - 1] - w[0] == (n - 1) as u32 {
                    return w.to_vec();
                }
            }
        }
        match self.per_numa(free).into_iter().filter(|(_, p)| p.len() >= n).max_by_key(|(_, p)| p.len()) {
            Some((_, pus)) => pus[..n].to_vec(),
            None => free[..n].to_vec(),
        }
    }

    fn numa_first(&self, free: &[u32], busy: &[u32], n: usize) -> Vec<u32> {
        let busy: BTreeSet<u32> = busy.iter().copied().collect();
        let used = |numa: u32| busy.iter().filter(|&&p| self.numa_key(p) == numa).count();
        let fits: Vec<(u32, Vec<u32>)> = self.per_numa(free).into_iter().filter(|(_, p)| p.len() >= n).collect();
        // The busiest node that fits; ties to the lowest index.
        match fits.iter().max_by(|a, b| used(a.0).cmp(&used(b.0)).then(b.0.cmp(&a.0))) {
            Some((_, pus)) => pus[..n].to_vec(),
            None => free[..n].to_vec(),
        }
    }

    fn interference_aware(&self, free: &[u32], busy: &[u32], n: usize, cost: &dyn Fn(&[u32]) -> f64) -> Vec<u32> {
        // Candidate domains: each LLC domain, then each NUMA node, then the
        // whole node, each taking its free PUs in topology order, those of
        // cores no running job uses first: an SMT sibling of a running job
        // shares everything with it, so it is taken only when the domain
        // has no idle core left.
        let busy_cores: BTreeSet<u32> = busy.iter().filter_map(|&p| self.pu(p).map(|x| x.core)).collect();
        let idle_first = |mut c: Vec<u32>| {
            c.sort_by_key(|&p| self.pu(p).is_some_and(|x| busy_cores.contains(&x.core)));
            c
        };
        let mut candidates: Vec<Vec<u32>> = Vec::new();
        let mut llcs: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
        for &p in free {
            llcs.entry(self.llc_key(p)).or_default().push(p);
        }
        candidates.extend(llcs.into_values());
        candidates.extend(self.per_numa(free).into_iter().map(|(_, p)| p));
        candidates.push(free.to_vec());
        candidates
            .into_iter()
            .filter(|c| c.len() >= n)
            .map(|c| {
                let c = idle_first(c)[..n].to_vec();
                (cost(&c), c)
            })
            .enumerate()
            .min_by(|(i, a), (j, b)| a.0.total_cmp(&b.0).then(i.cmp(j)))
            .map(|(_, (_, c))| c)
            .unwrap_or_else(|| free[..n].to_vec())
    }
}

/// Strategies list like policies and predictors (`cosched simulate
/// --list-placements`); they take no parameters.
impl crate::params::Declared for StrategyEntry {
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn params(&self) -> &'static [crate::params::Param] {
        &[]
    }
}
