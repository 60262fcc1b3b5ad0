//! Simulation scenarios: a node's pools, the programs that make up the job
//! list, and where their slowdowns come from, read from TOML.
//!
//! ```toml
//! nodes = 1               # optional: identical nodes, each with these pools
//!
//! [[pools]]
//! name = "vh"
//! cores = 1
//! kind = "cpu"            # or "accelerator"
//!
//! [[programs]]
//! name = "bfs"
//! pool = "vh"
//! solo = 100.0            # seconds alone
//! count = 5               # jobs of this program in the list
//! host_load = 0.4         # optional: the SX-Aurora paper's U, a fraction of the host
//!
//! [slowdown]
//! matrix = [[1.0, 1.3], [1.2, 1.0]]   # optional, over programs in order
//! ```
//!
//! A program may come in variants (the VarySched paper's kernel collections), other
//! ways to run its jobs in preference order after its own; a variant's
//! jobs are slowed as the program's:
//!
//! ```toml
//! [[programs.variants]]
//! name = "all"            # optional; default POOL/CORES
//! pool = "vh"
//! cores = 4               # default 1
//! solo = 50.0             # seconds alone this way (or `speed`, over the program's)
//! ```
//!
//! With a matrix, row i is the slowdown of program i beside program j. Without
//! one, every program must have a host load and [`host_overload_slowdown`] is
//! the truth. With host loads on every program the conflict-aware score is
//! the SX-Aurora paper's C_all; otherwise it is the matrix's worse slowdown of the pair.
//!
//! Measured slowdowns instead of a written matrix (one of the three):
//!
//! ```toml
//! [slowdown]
//! store = "characterize"    # the latest pairs campaign of this workload in the store
//! # file = "pairs.json"     # or a matrix written by `cosched pairs --json`
//! statistic = "median"      # or "mean" (store only) of each cell's repeats
//! profiles = "characterize" # optional: host loads from this workload's profiles
//!
//! [[programs]]
//! name = "vh-stream"
//! measured = "stream"       # its job in the measured matrix (default: its name)
//! ```
//!
//! This crate never opens the store: the caller hands a [`Measurements`]
//! that fetches cells and loads, and the scenario maps them onto programs.
//!
//! A node with a topology (docs/placement.md): starts are placed on it by a
//! registered strategy, and a pair's slowdown may depend on what its two
//! jobs share (`model::levels`: a level without a matrix uses the next
//! closer one, then `matrix`):
//!
//! ```toml
//! [topology]
//! file = "node.hwloc2.xml"   # hwloc XML (`lstopo --of xml`), relative to this file
//! placement = "compact"      # optional: the default strategy (`--placement` overrides)
//!
//! [[pools]]
//! name = "host"
//! cores = 16
//! kind = "cpu"
//! cpus = "0-7,64-71"         # optional: the PUs of its cores (core i is the
//!                            # i-th lowest); default: the next free PUs by number
//!
//! [slowdown]
//! matrix = [[1.9]]           # no level named: what every level falls back to
//! [slowdown.levels]
//! same-llc = [[1.6]]         # smt-sibling, same-llc, same-numa, same-socket, other-socket
//! same-numa = [[1.2]]
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosched_engine::placement::Placement;
use cosched_model::placement::Strategy;
use cosched_model::workload::PoolKind;
use serde::Deserialize;

use cosched_model::workload::limits::MAX_VARIANTS;

/// How a scenario read without a store says it needs one: the file is
/// well formed, the data it reads is elsewhere (`cosched check`).
pub const NEEDS_STORE: &str = "which needs the store";

use cosched_engine::policy::{PoolInfo, Variant};
use crate::sim::{Platform, SimJob};
use crate::tables::{PairTable, ProgramTable};

mod measured;
mod topology;

pub use measured::{MatrixSource, MeasuredMatrix, Measurements, Statistic};
pub use topology::ScenarioTopology;
use measured::map_measured;
use topology::topology;

/// Bounds of a scenario, so that every figure the simulator computes stays
/// finite and a file cannot make it run out of memory or time; messages
/// name the bound.
pub mod limits {
    /// The most read of a scenario file: 16 MiB (a 1000 x 1000 matrix).
    pub const MAX_INPUT_BYTES: u64 = 16 << 20;
    pub const MAX_NODES: usize = 100_000;
    pub const MAX_POOL_CORES: u32 = 4096;
    pub const MAX_PROGRAMS: usize = 1000;
    /// Jobs in the list, all programs' counts together.
    pub const MAX_JOBS: usize = 1_000_000;
    /// A program's solo time: about 3 years.
    pub const MAX_SOLO_S: f64 = 1e8;
    /// A slowdown in a matrix.
    pub const MAX_SLOWDOWN: f64 = 1000.0;
}

/// Reads at most `max` bytes of `path` as UTF-8: a device such as
/// /dev/zero or a huge file is refused after `max` bytes, not read for ever.
pub fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf).map_err(|e| format!("cannot read the file: {e}"))?;
    if buf.len() as u64 > max {
        return Err(format!("larger than {} MiB, the most cosched reads of such a file", max >> 20));
    }
    String::from_utf8(buf).map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

/// A scenario that failed to load, with the file it came from so that a
/// message printed alone still says where to look.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    /// `LINE:COL` when the TOML itself is malformed or mistyped.
    pub at: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A program of the scenario: `count` identical jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub name: String,
    /// Index into the platform's pools.
    pub pool: usize,
    pub solo: f64,
    pub count: usize,
    pub cores: u32,
    pub host_load: Option<f64>,
    /// Its job in a measured matrix.
    pub measured: String,
    /// Every way its jobs may run, its own first; empty without variants.
    pub variants: Vec<Variant>,
}


/// A validated scenario. Its job list is every program's `count` instances in
/// program order; Monte-Carlo orders are permutations of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// One node's pools.
    pub platform: Platform,
    /// Identical nodes (`nodes = N` at the top of the file; default 1).
    pub nodes: usize,
    pub programs: Vec<Program>,
    /// `slowdown[i][j]` over programs: program i beside program j.
    pub slowdown: Vec<Vec<f64>>,
    /// Whether `slowdown` was given or derived by [`host_overload_slowdown`].
    pub measured_matrix: bool,
    /// Where the slowdowns came from, in words.
    pub origin: String,
    /// Program index of each job of [`Scenario::jobs`].
    pub job_program: Vec<usize>,
    /// The node's topology (`[topology]`), when the file gives one.
    pub topology: Option<ScenarioTopology>,
    /// What the policies are shown instead of the truth (`simulate
    /// --told`); `None`: they see `slowdown` itself.
    pub told: Option<Told>,
}

/// Slowdowns shown to the policies that differ from the ones that drive
/// progress, so a misprediction and the reaction to it can be replayed
/// (issue 38). A run with them reads its jobs' progress in virtual time,
/// so policies also see online estimates (`montecarlo::SAMPLE_EVERY_S`).
#[derive(Debug, Clone, PartialEq)]
pub enum Told {
    /// Every pair 1: a predictor that calls every pair harmless (`blind`).
    Blind,
    /// Over the scenario's programs: `slowdown[i][j]` program i beside
    /// program j, with host loads when every program has one.
    Matrix { slowdown: Vec<Vec<f64>>, host_loads: Option<Vec<f64>>, origin: String },
}


/// Slowdown of a program with host load `u_a` beside one with `u_b` when no
/// matrix is given. The SX-Aurora paper's premise is that conflicts come from the host
/// being overloaded, C_all = U_a + U_b > 1; this charges both jobs the
/// overload fraction and nothing below it: `1 + max(0, U_a + U_b - 1)`. It is
/// a deliberately plain stand-in for a measured matrix, monotone in each load
/// and symmetric, so threshold sweeps behave sensibly on it.
pub fn host_overload_slowdown(u_a: f64, u_b: f64) -> f64 {
    1.0 + (u_a + u_b - 1.0).max(0.0)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    nodes: Option<usize>,
    topology: Option<RawTopology>,
    #[serde(default)]
    pools: Vec<RawPool>,
    #[serde(default)]
    programs: Vec<RawProgram>,
    slowdown: Option<RawSlowdown>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    name: String,
    cores: u32,
    kind: RawKind,
    cpus: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    file: String,
    placement: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum RawKind {
    Cpu,
    Accelerator,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProgram {
    name: String,
    pool: String,
    solo: f64,
    count: usize,
    #[serde(default = "one")]
    cores: u32,
    host_load: Option<f64>,
    measured: Option<String>,
    #[serde(default)]
    variants: Vec<RawVariant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Option<String>,
    pool: String,
    #[serde(default = "one")]
    cores: u32,
    solo: Option<f64>,
    speed: Option<f64>,
}

fn one() -> u32 {
    1
}

/// A program's ways: its own first, then its `[[programs.variants]]`;
/// empty without any. Errors name the variant (`k`) and the field.
fn variants_of(p: &RawProgram, pool: usize, pools: &[PoolInfo]) -> Result<Vec<Variant>, (usize, &'static str, String)> {
    if p.variants.is_empty() {
        return Ok(Vec::new());
    }
    if p.variants.len() > MAX_VARIANTS {
        return Err((MAX_VARIANTS, "name", format!("{} variants; expected at most {MAX_VARIANTS} per program", p.variants.len())));
    }
    let name = |pool: usize, cores: u32| format!("{}/{cores}", pools[pool].name);
    let mut out = vec![Variant { name: name(pool, p.cores), pool, cores: p.cores, solo: p.solo }];
    for (k, v) in p.variants.iter().enumerate() {
        let Some(vp) = pools.iter().position(|q| q.name == v.pool) else {
            let known: Vec<&str> = pools.iter().map(|q| q.name.as_str()).collect();
            return Err((k, "pool", format!("unknown pool `{}`; expected one of {}", v.pool, known.join(", "))));
        };
        if v.cores == 0 || v.cores > pools[vp].cores {
            return Err((k, "cores", format!("{} cores do not fit pool `{}` of {}", v.cores, v.pool, pools[vp].cores)));
        }
        let solo = match (v.solo, v.speed) {
            (Some(s), None) => s,
            (None, Some(x)) if x.is_finite() && x > 0.0 => p.solo / x,
            (None, Some(x)) => return Err((k, "speed", format!("{x} is not a positive number"))),
            (None, None) => p.solo,
            (Some(_), Some(_)) => return Err((k, "speed", "give `solo` or `speed`, not both".into())),
        };
        if !(solo.is_finite() && solo > 0.0 && solo <= limits::MAX_SOLO_S) {
            return Err((k, "solo", format!("{solo} is not a positive number of seconds up to {:e}", limits::MAX_SOLO_S)));
        }
        let vname = v.name.clone().unwrap_or_else(|| name(vp, v.cores));
        if out.iter().any(|o| o.name == vname) {
            return Err((k, "name", format!("`{vname}` names two ways of program `{}`; expected unique names (default POOL/CORES)", p.name)));
        }
        out.push(Variant { name: vname, pool: vp, cores: v.cores, solo });
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlowdown {
    matrix: Option<Vec<Vec<f64>>>,
    store: Option<String>,
    file: Option<String>,
    statistic: Option<RawStatistic>,
    profiles: Option<String>,
    levels: Option<BTreeMap<String, Vec<Vec<f64>>>>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum RawStatistic {
    Median,
    Mean,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, None)
    }

    /// As [`Scenario::load`], fetching measured slowdowns through `m`; a
    /// `file` source is resolved against the scenario's directory.
    pub fn load_with(path: &Path, m: Option<&dyn Measurements>) -> Result<Scenario, ScenarioError> {
        let text = read_bounded(path, limits::MAX_INPUT_BYTES).map_err(|message| ScenarioError {
            file: path.display().to_string(),
            at: None,
            message,
        })?;
        Scenario::parse_with(&text, &path.display().to_string(), path.parent(), m)
    }

    /// Parses scenario TOML; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(text, file, None, None)
    }

    /// Parses scenario TOML whose slowdowns may be measured: `m` fetches
    /// them, `dir` is where a relative `file` lives.
    pub fn parse_with(text: &str, file: &str, dir: Option<&Path>, m: Option<&dyn Measurements>) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            file: file.to_string(),
            at: None,
            message,
        };
        let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioError {
            file: file.to_string(),
            at: e.span().map(|s| line_col(text, s.start)),
            // Some TOML errors carry no message of their own.
            message: match e.message().trim() {
                "" => "malformed TOML; expected a scenario of [[pools]], [[programs]] and [slowdown]".to_string(),
                m => m.to_string(),
            },
        })?;
        if raw.pools.is_empty() {
            return Err(err("no [[pools]]: a scenario needs at least one".into()));
        }
        if raw.nodes == Some(0) {
            return Err(err("nodes: a scenario needs at least one node".into()));
        }
        if raw.nodes.is_some_and(|n| n > limits::MAX_NODES) {
            return Err(err(format!("nodes: {} nodes; expected at most {}", raw.nodes.unwrap_or(0), limits::MAX_NODES)));
        }
        if raw.programs.len() > limits::MAX_PROGRAMS {
            return Err(err(format!("programs: {} programs; expected at most {}", raw.programs.len(), limits::MAX_PROGRAMS)));
        }
        if raw.programs.is_empty() {
            return Err(err("no [[programs]]: a scenario needs at least one".into()));
        }
        let mut pools: Vec<PoolInfo> = Vec::new();
        for (i, p) in raw.pools.iter().enumerate() {
            if pools.iter().any(|q| q.name == p.name) {
                return Err(err(format!("pools[{i}].name: `{}` is defined twice", p.name)));
            }
            if p.cores == 0 {
                return Err(err(format!("pools[{i}].cores: pool `{}` has 0 cores", p.name)));
            }
            if p.cores > limits::MAX_POOL_CORES {
                return Err(err(format!("pools[{i}].cores: {} cores; expected at most {}", p.cores, limits::MAX_POOL_CORES)));
            }
            pools.push(PoolInfo {
                name: p.name.clone(),
                cores: p.cores,
                // Host loads are per program here and live in the slowdown
                // source; the pool only says it is an accelerator.
                kind: match p.kind {
                    RawKind::Cpu => PoolKind::Cpu,
                    RawKind::Accelerator => PoolKind::Accelerator { host_load: 0.0 },
                },
            });
        }
        let mut programs: Vec<Program> = Vec::new();
        let mut jobs_total = 0usize;
        for (i, p) in raw.programs.iter().enumerate() {
            let at = |field: &str, m: String| err(format!("programs[{i}].{field}: {m}"));
            if programs.iter().any(|q| q.name == p.name) {
                return Err(at("name", format!("`{}` is defined twice", p.name)));
            }
            let Some(pool) = pools.iter().position(|q| q.name == p.pool) else {
                let known: Vec<&str> = pools.iter().map(|q| q.name.as_str()).collect();
                return Err(at(
                    "pool",
                    format!("unknown pool `{}`; expected one of {}", p.pool, known.join(", ")),
                ));
            };
            if !(p.solo.is_finite() && p.solo > 0.0) {
                return Err(at("solo", format!("{} is not a positive number of seconds", p.solo)));
            }
            if p.solo > limits::MAX_SOLO_S {
                return Err(at("solo", format!("{:e} s; expected at most {:e} s (about 3 years)", p.solo, limits::MAX_SOLO_S)));
            }
            if p.count == 0 {
                return Err(at("count", "must be at least 1".into()));
            }
            jobs_total = jobs_total.saturating_add(p.count);
            if jobs_total > limits::MAX_JOBS {
                return Err(at("count", format!("takes the job list to {jobs_total} jobs; expected at most {} in all", limits::MAX_JOBS)));
            }
            if p.cores == 0 || p.cores > pools[pool].cores {
                return Err(at(
                    "cores",
                    format!("{} cores do not fit pool `{}` of {}", p.cores, p.pool, pools[pool].cores),
                ));
            }
            if let Some(u) = p.host_load {
                if !(u.is_finite() && (0.0..=1.0).contains(&u)) {
                    return Err(at("host_load", format!("{u} is not a fraction in [0, 1]")));
                }
            }
            let variants = variants_of(p, pool, &pools).map_err(|(k, field, m)| at(&format!("variants[{k}].{field}"), m))?;
            programs.push(Program {
                name: p.name.clone(),
                pool,
                solo: p.solo,
                count: p.count,
                cores: p.cores,
                host_load: p.host_load,
                measured: p.measured.clone().unwrap_or_else(|| p.name.clone()),
                variants,
            });
        }
        let raw_slowdown = raw.slowdown.unwrap_or(RawSlowdown { matrix: None, store: None, file: None, statistic: None, profiles: None, levels: None });
        let source = match (&raw_slowdown.matrix, &raw_slowdown.store, &raw_slowdown.file) {
            (_, None, None) => None,
            (None, Some(w), None) => Some(MatrixSource::Store { workload: w.clone() }),
            (None, None, Some(f)) => Some(MatrixSource::File {
                path: dir.map_or_else(|| PathBuf::from(f), |d| d.join(f)),
            }),
            _ => return Err(err("slowdown: give one of matrix, store and file".into())),
        };
        if source.is_none() && raw_slowdown.statistic.is_some() {
            return Err(err("slowdown.statistic: only for measured cells (store or file)".into()));
        }
        let need = |what: &str| {
            m.ok_or_else(|| err(format!("slowdown.{what}: this scenario reads measurements, {NEEDS_STORE} (cosched simulate --db)")))
        };
        if let Some(workload) = &raw_slowdown.profiles {
            let m = need("profiles")?;
            let names: Vec<String> = programs.iter().map(|p| p.measured.clone()).collect();
            let loads = m.host_loads(workload, &names).map_err(|e| err(format!("slowdown.profiles: {e}")))?;
            for (i, (p, u)) in programs.iter_mut().zip(loads).enumerate() {
                match (p.host_load, u) {
                    (Some(_), _) => {}
                    (None, Some(u)) if u.is_finite() && u >= 0.0 => p.host_load = Some(u.min(1.0)),
                    (None, _) => {
                        return Err(err(format!(
                            "programs[{i}]: no profile of `{}` in workload `{workload}`, and no host_load given",
                            p.measured
                        )))
                    }
                }
            }
        }
        let with_load = programs.iter().filter(|p| p.host_load.is_some()).count();
        if with_load != 0 && with_load != programs.len() {
            let missing = programs.iter().position(|p| p.host_load.is_none()).unwrap();
            return Err(err(format!(
                "programs[{missing}].host_load: missing for `{}`; give a host load to every program or to none, since the score C_all needs both of a pair",
                programs[missing].name
            )));
        }
        let n = programs.len();
        let (slowdown, measured_matrix, origin) = match (raw_slowdown.matrix, source) {
            (None, Some(src)) => {
                let statistic = match raw_slowdown.statistic {
                    Some(RawStatistic::Mean) => Statistic::Mean,
                    _ => Statistic::Median,
                };
                let what = if matches!(src, MatrixSource::Store { .. }) { "store" } else { "file" };
                let mm = need(what)?.matrix(&src, statistic).map_err(|e| err(format!("slowdown.{what}: {e}")))?;
                let (cells, origin) = map_measured(&programs, &pools, &mm).map_err(&err)?;
                (cells, true, origin)
            }
            (Some(m), _) => {
                if m.len() != n {
                    return Err(err(format!(
                        "slowdown.matrix: {} rows for {n} programs",
                        m.len()
                    )));
                }
                for (i, row) in m.iter().enumerate() {
                    if row.len() != n {
                        return Err(err(format!(
                            "slowdown.matrix[{i}]: {} cells for {n} programs",
                            row.len()
                        )));
                    }
                    if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0)) {
                        return Err(err(format!(
                            "slowdown.matrix[{i}][{j}]: {v} is not a positive slowdown"
                        )));
                    }
                    if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| **v > limits::MAX_SLOWDOWN) {
                        return Err(err(format!(
                            "slowdown.matrix[{i}][{j}]: {v:e}; expected a slowdown of at most {}",
                            limits::MAX_SLOWDOWN
                        )));
                    }
                }
                (m, true, "the scenario's matrix".to_string())
            }
            (None, None) => {
                if with_load != n {
                    return Err(err(
                        "slowdown.matrix: missing, and without it every program needs a host_load to derive slowdowns from".into(),
                    ));
                }
                let u: Vec<f64> = programs.iter().map(|p| p.host_load.unwrap()).collect();
                let m = u
                    .iter()
                    .map(|&a| u.iter().map(|&b| host_overload_slowdown(a, b)).collect())
                    .collect();
                (m, false, "derived from host loads (no matrix)".to_string())
            }
        };
        let job_program = programs
            .iter()
            .enumerate()
            .flat_map(|(i, p)| (0..p.count).map(move |_| i))
            .collect();
        let topology = match raw.topology {
            Some(t) => Some(topology(&t, &raw.pools, dir, &slowdown, raw_slowdown.levels).map_err(&err)?),
            None => {
                if let Some(i) = raw.pools.iter().position(|p| p.cpus.is_some()) {
                    return Err(err(format!("pools[{i}].cpus: CPUs of a pool need a [topology] to be on")));
                }
                if raw_slowdown.levels.is_some() {
                    return Err(err("slowdown.levels: levels need a [topology] to place jobs on".into()));
                }
                None
            }
        };
        Ok(Scenario {
            platform: Platform { pools },
            nodes: raw.nodes.unwrap_or(1),
            programs,
            slowdown,
            measured_matrix,
            origin,
            job_program,
            topology,
            told: None,
        })
    }

    /// Jobs in the scenario's own order, all arriving at 0.
    pub fn jobs(&self) -> Vec<SimJob> {
        self.jobs_in(&(0..self.job_program.len()).collect::<Vec<_>>())
    }

    /// Jobs in `order` (indices into [`Scenario::job_program`]), all arriving
    /// at 0, so that the order is the queue order (the SX-Aurora paper's random orders).
    pub fn jobs_in(&self, order: &[usize]) -> Vec<SimJob> {
        order
            .iter()
            .map(|&k| {
                let p = &self.programs[self.job_program[k]];
                SimJob {
                    name: format!("{}#{k}", p.name),
                    arrival: 0.0,
                    solo: p.solo,
                    pool: p.pool,
                    cores: p.cores,
                    program: p.name.clone(),
                    variants: p.variants.clone(),
                }
            })
            .collect()
    }

    /// The job-level slowdown table for the jobs of `jobs_in(order)`.
    pub fn table_in(&self, order: &[usize]) -> PairTable {
        let prog: Vec<usize> = order.iter().map(|&k| self.job_program[k]).collect();
        let m = prog
            .iter()
            .map(|&a| prog.iter().map(|&b| self.slowdown[a][b]).collect())
            .collect();
        let t = PairTable::new(m).expect("cells were validated at parse time");
        if self.programs.iter().all(|p| p.host_load.is_some()) {
            let u = prog.iter().map(|&a| self.programs[a].host_load.unwrap()).collect();
            t.with_host_loads(u).expect("loads were validated at parse time")
        } else {
            t
        }
    }
}

impl Scenario {
    /// The slowdowns of `jobs_in(order)` by program, as [`Scenario::table_in`]
    /// gives them by job, without a jobs-square table.
    pub fn source_in(&self, order: &[usize]) -> ProgramTable {
        let prog = order.iter().map(|&k| self.job_program[k]).collect();
        let loads = self.programs.iter().map(|p| p.host_load).collect::<Option<Vec<f64>>>();
        let t = ProgramTable::new(prog, self.slowdown.clone(), loads).expect("cells and loads were validated at parse time");
        match &self.topology {
            Some(topo) => t.with_levels(topo.levels.clone()).expect("levels were validated at parse time"),
            None => t,
        }
    }

    /// What `other` (another scenario over the same programs, matched by
    /// name) says of this one's programs, to be shown to the policies.
    pub fn told_from(&self, other: &Scenario) -> Result<Told, String> {
        let index: Vec<usize> = self
            .programs
            .iter()
            .map(|p| {
                other.programs.iter().position(|q| q.name == p.name).ok_or_else(|| {
                    let known: Vec<&str> = other.programs.iter().map(|q| q.name.as_str()).collect();
                    format!("no program `{}`; expected every program of the scenario among {}", p.name, known.join(", "))
                })
            })
            .collect::<Result<_, _>>()?;
        let slowdown = index.iter().map(|&a| index.iter().map(|&b| other.slowdown[a][b]).collect()).collect();
        let host_loads = index.iter().map(|&a| other.programs[a].host_load).collect::<Option<Vec<f64>>>();
        Ok(Told::Matrix { slowdown, host_loads, origin: other.origin.clone() })
    }

    /// The scenario's own slowdowns with their excess scaled by `k`: each
    /// cell `s` told as `1 + k (s - 1)`, so `k = 0` is blind, `k = 1` the
    /// truth, `k = 0.5` half the harm and `k = 2` twice it (a misprediction
    /// of a chosen size, issue 38). No host loads are told: a policy's
    /// conflict score then comes from the told cells, as the size says.
    pub fn told_scaled(&self, k: f64) -> Result<Told, String> {
        if !(k.is_finite() && k >= 0.0) {
            return Err(format!("scale {k}: expected a number >= 0"));
        }
        let slowdown: Vec<Vec<f64>> = self.slowdown.iter().map(|row| row.iter().map(|&s| 1.0 + k * (s - 1.0)).collect()).collect();
        for (i, row) in slowdown.iter().enumerate() {
            if let Some(j) = row.iter().position(|&t| t <= 0.0) {
                let (a, b) = (&self.programs[i].name, &self.programs[j].name);
                return Err(format!("scale {k}: `{a}` beside `{b}` ({}) would be told {:.3}, not a slowdown; use a smaller scale", self.slowdown[i][j], row[j]));
            }
        }
        Ok(Told::Matrix { slowdown, host_loads: None, origin: format!("the scenario's slowdowns with their excess scaled by {k} (1 + {k} x (s - 1))") })
    }

    /// The same scenario with the policies shown `told`.
    pub fn with_told(mut self, told: Told) -> Scenario {
        self.told = Some(told);
        self
    }

    /// What the policies are shown of `jobs_in(order)` when it is not the
    /// truth; `None` without [`Scenario::told`].
    pub fn told_in(&self, order: &[usize]) -> Option<ProgramTable> {
        let prog: Vec<usize> = order.iter().map(|&k| self.job_program[k]).collect();
        let n = self.programs.len();
        let t = match self.told.as_ref()? {
            Told::Blind => ProgramTable::new(prog, vec![vec![1.0; n]; n], None),
            Told::Matrix { slowdown, host_loads, .. } => ProgramTable::new(prog, slowdown.clone(), host_loads.clone()),
        };
        Some(t.expect("told cells come from a validated scenario"))
    }

    /// Where starts are placed: the topology with its strategy, if any.
    pub fn placement(&self) -> Option<&Placement> {
        self.topology.as_ref().map(|t| t.placement.as_ref())
    }

    /// The same scenario placing starts by `strategy`; an error for a
    /// scenario without a topology.
    pub fn with_placement(&self, strategy: Strategy) -> Result<Scenario, String> {
        let mut s = self.clone();
        let Some(t) = s.topology.as_mut() else {
            return Err("the scenario has no [topology] to place jobs on; --placement needs one (docs/placement.md)".into());
        };
        t.placement = Arc::new(t.placement.with_strategy(strategy));
        Ok(s)
    }

    /// Whether slowdowns depend on placement: a topology and levels.
    pub fn by_level(&self) -> bool {
        self.topology.as_ref().is_some_and(|t| t.levels.by_level())
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
[[pools]]
name = "vh"
cores = 1
kind = "cpu"
[[pools]]
name = "ve"
cores = 1
kind = "accelerator"
[[programs]]
name = "a"
pool = "vh"
solo = 100.0
count = 2
host_load = 0.9
[[programs]]
name = "b"
pool = "ve"
solo = 50.0
count = 1
host_load = 0.3
"#;

    fn fails(text: &str) -> String {
        Scenario::parse(text, "s.toml").unwrap_err().to_string()
    }

    #[test]
    fn host_loads_alone_derive_the_matrix() {
        let s = Scenario::parse(OK, "s.toml").unwrap();
        assert_eq!(s.job_program, vec![0, 0, 1]);
        assert!(!s.measured_matrix);
        assert!((s.slowdown[0][0] - 1.8).abs() < 1e-12);
        assert!((s.slowdown[0][1] - 1.2).abs() < 1e-12);
        assert_eq!(s.slowdown[1][1], 1.0);
        assert_eq!(s.jobs_in(&[2, 0, 1])[0].program, "b");
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let e = fails(&OK.replace("pool = \"ve\"", "pool = \"gpu\""));
        assert!(e.starts_with("s.toml: programs[1].pool: unknown pool `gpu`"), "{e}");
        let e = fails(&OK.replace("solo = 50.0", "solo = -1.0"));
        assert!(e.contains("programs[1].solo"), "{e}");
        let e = fails(&OK.replace("host_load = 0.3", ""));
        assert!(e.contains("programs[1].host_load: missing for `b`"), "{e}");
        let e = fails(&OK.replace("host_load = 0.3", "host_load = 1.5"));
        assert!(e.contains("programs[1].host_load"), "{e}");
        let e = fails(&OK.replace("count = 1", "count = 0"));
        assert!(e.contains("programs[1].count"), "{e}");
        let e = fails(&format!("{OK}[slowdown]\nmatrix = [[1.0, 1.0]]\n"));
        assert!(e.contains("slowdown.matrix: 1 rows for 2 programs"), "{e}");
        let e = fails(&format!("{OK}[slowdown]\nmatrix = [[1.0, 1.0], [1.0, 0.0]]\n"));
        assert!(e.contains("slowdown.matrix[1][1]"), "{e}");
        let no_loads = OK.replace("host_load = 0.9", "").replace("host_load = 0.3", "");
        assert!(fails(&no_loads).contains("slowdown.matrix: missing"));
        assert!(fails("").contains("no [[pools]]"));
    }

    #[test]
    fn toml_mistakes_carry_line_and_column() {
        let e = fails(&OK.replace("kind = \"accelerator\"", "kind = \"gpu\""));
        assert!(e.starts_with("s.toml:9:8: "), "{e}");
        let e = fails(&OK.replace("count = 2", "count = 2\ncolour = 1"));
        assert!(e.starts_with("s.toml:15:1: ") && e.contains("colour"), "{e}");
    }

    #[test]
    fn a_matrix_keeps_its_cells_and_loads_give_c_all() {
        use crate::tables::SlowdownSource;
        let s = Scenario::parse(&format!("{OK}[slowdown]\nmatrix = [[1.1, 1.4], [1.2, 1.0]]\n"), "s.toml").unwrap();
        assert!(s.measured_matrix);
        let t = s.table_in(&[2, 0, 1]);
        assert_eq!(t.slowdown(0, &[1]), 1.2);
        assert_eq!(t.slowdown(1, &[2]), 1.1);
        assert!((t.score(0, 1) - 120.0).abs() < 1e-9);
    }

    /// Measurements held in memory, as a store would return them.
    struct InMemory {
        runs: Vec<(usize, usize, f64)>,
        loads: Vec<(&'static str, f64)>,
    }

    impl Measurements for InMemory {
        fn matrix(&self, source: &MatrixSource, statistic: Statistic) -> Result<MeasuredMatrix, String> {
            match source {
                MatrixSource::Store { workload } if workload == "w" => Ok(MeasuredMatrix::from_samples(
                    vec!["x".into(), "y".into(), "z".into()],
                    self.runs.clone(),
                    statistic,
                    "pairs campaign 1 of `w`".into(),
                )),
                other => Err(format!("nothing for {other:?}")),
            }
        }
        fn host_loads(&self, _: &str, jobs: &[String]) -> Result<Vec<Option<f64>>, String> {
            Ok(jobs.iter().map(|j| self.loads.iter().find(|l| l.0 == j).map(|l| l.1)).collect())
        }
    }

    const MEASURED: &str = r#"
[[pools]]
name = "vh"
cores = 1
kind = "cpu"
[[pools]]
name = "ve"
cores = 1
kind = "accelerator"
[[programs]]
name = "a"
pool = "vh"
solo = 100.0
count = 2
measured = "y"
[[programs]]
name = "b"
pool = "ve"
solo = 50.0
count = 1
measured = "x"
[slowdown]
store = "w"
statistic = "mean"
"#;

    #[test]
    fn measured_cells_map_onto_programs() {
        let held = InMemory { runs: vec![(1, 0, 1.2), (1, 0, 1.7), (1, 0, 1.3), (0, 1, 1.1)], loads: vec![("y", 0.7), ("x", 0.2)] };
        let s = Scenario::parse_with(MEASURED, "s.toml", None, Some(&held)).unwrap();
        assert!(s.measured_matrix);
        assert!((s.slowdown[0][1] - 1.4).abs() < 1e-12, "mean of y beside x");
        assert_eq!(s.slowdown[1][0], 1.1);
        // Same-pool pairs of one-core pools never co-run: unmeasured is fine.
        assert_eq!(s.slowdown[0][0], 1.0);
        assert_eq!(s.origin, "pairs campaign 1 of `w`");
        let median = Scenario::parse_with(&MEASURED.replace("\"mean\"", "\"median\""), "s.toml", None, Some(&held)).unwrap();
        assert_eq!(median.slowdown[0][1], 1.3);
        // Host loads from profiles make the score C_all.
        let s = Scenario::parse_with(&format!("{MEASURED}profiles = \"w\"\n"), "s.toml", None, Some(&held)).unwrap();
        assert_eq!(s.programs[0].host_load, Some(0.7));
        use crate::tables::SlowdownSource;
        assert!((s.table_in(&[0, 2]).score(0, 1) - 90.0).abs() < 1e-9);
    }

    #[test]
    fn measured_mistakes_are_named() {
        let held = InMemory { runs: vec![(1, 0, 1.2)], loads: vec![] };
        let e = Scenario::parse_with(MEASURED, "s.toml", None, Some(&held)).unwrap_err().to_string();
        assert!(e.contains("has no cell (x beside y), which programs `b` and `a` need"), "{e}");
        let e = Scenario::parse_with(&MEASURED.replace("measured = \"x\"", "measured = \"q\""), "s.toml", None, Some(&held)).unwrap_err().to_string();
        assert!(e.contains("programs[1].measured: `q` is not a job of pairs campaign 1 of `w`; it has x, y, z"), "{e}");
        let e = Scenario::parse(MEASURED, "s.toml").unwrap_err().to_string();
        assert!(e.contains("slowdown.store: this scenario reads measurements"), "{e}");
        let e = Scenario::parse_with(&MEASURED.replace("store = \"w\"", "store = \"v\""), "s.toml", None, Some(&held)).unwrap_err().to_string();
        assert!(e.starts_with("s.toml: slowdown.store: nothing for"), "{e}");
        let e = Scenario::parse_with(&format!("{MEASURED}file = \"m.json\"\n"), "s.toml", None, Some(&held)).unwrap_err().to_string();
        assert!(e.contains("give one of matrix, store and file"), "{e}");
        let e = Scenario::parse_with(&format!("{MEASURED}profiles = \"w\"\n"), "s.toml", None, Some(&held)).unwrap_err().to_string();
        assert!(e.contains("no profile of `y`"), "{e}");
    }

    const ONE: &str = "[[pools]]\nname = \"p\"\ncores = 1\nkind = \"cpu\"\n";

    #[test]
    fn numbers_beyond_what_the_simulator_can_score_are_refused_naming_the_bound() {
        let prog = |solo: &str, count: &str| format!("{ONE}[[programs]]\nname = \"a\"\npool = \"p\"\nsolo = {solo}\ncount = {count}\nhost_load = 0.5\n");
        let e = fails(&prog("1e308", "1"));
        assert!(e.contains("programs[0].solo: 1e308 s; expected at most 1e8 s"), "{e}");
        let e = fails(&prog("1.0", "100000000"));
        assert!(e.contains("programs[0].count: takes the job list to 100000000 jobs; expected at most 1000000"), "{e}");
        let e = fails(&format!("nodes = 100000000\n{}", prog("1.0", "1")));
        assert!(e.contains("nodes: 100000000 nodes; expected at most 100000"), "{e}");
        let e = fails("[[pools]]\nname = \"p\"\ncores = 100000\nkind = \"cpu\"\n[[programs]]\nname = \"a\"\npool = \"p\"\nsolo = 1.0\ncount = 1\nhost_load = 0.5\n");
        assert!(e.contains("pools[0].cores: 100000 cores; expected at most 4096"), "{e}");
        let e = fails(&format!("{ONE}[[programs]]\nname = \"a\"\npool = \"p\"\nsolo = 1.0\ncount = 1\n[slowdown]\nmatrix = [[1e300]]\n"));
        assert!(e.contains("slowdown.matrix[0][0]: 1e300; expected a slowdown of at most 1000"), "{e}");
        assert!(Scenario::parse(&prog("1e8", "1000000"), "s.toml").is_ok());
    }

    #[test]
    fn a_device_or_oversized_file_is_refused_after_the_bound_not_read_for_ever() {
        let e = Scenario::load(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: larger than 16 MiB"), "{e}");
        let p = std::env::temp_dir().join(format!("cosched-scenario-bin-{}.toml", std::process::id()));
        std::fs::write(&p, [0xffu8, 0xfe, 0x00]).unwrap();
        let e = Scenario::load(&p).unwrap_err().to_string();
        let _ = std::fs::remove_file(&p);
        assert!(e.contains("not UTF-8 text (byte 0)"), "{e}");
    }
}
