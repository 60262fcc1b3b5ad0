//! Workload files: which pools a node has and which jobs run on them.
//!
//! A workload is a TOML file. This module parses the text it is handed (the
//! caller reads the file) into a resolved [`Workload`], or into
//! [`Diagnostics`] that say for each problem `FILE:LINE:COL: what is wrong;
//! what is expected`, pointing at the offending key or value.
//!
//! # Schema
//!
//! ```toml
//! name = "mixed"          # optional; defaults to the file stem of `file`
//! description = "..."     # optional
//!
//! [[pools]]               # optional, see "Pools" below
//! name = "vh"             # unique; letters, digits, `_`, `-`
//! kind = "cpu"            # "cpu" (default) | "accelerator"
//! cores = 2               # cpu: cores of the node it owns (default: the rest of the node)
//!                         # accelerator: devices / job slots (default 1)
//! host_load = 0.3         # accelerator only: share of one host core (0..=1) each running
//!                         # job of this pool puts on the host pool; default 0.1
//!
//! [[jobs]]
//! name = "tri"                  # required, unique; letters, digits, `_`, `-`
//! kernel = "stream"             # a kernel of the catalogue (`cosched-kernel --list`) ...
//! params = { array_mib = 64 }   # ... and its parameters: TOML integers, floats or
//!                               # strings, checked against the parameter's kind
//! work = 20                     # fixed work in kernel units (integer >= 1), OR
//! seconds = 2.0                 # target solo seconds (> 0); the work comes from calibration
//! # command = "stress-ng --cpu 1 --cpu-ops 20000"
//! #                             # instead of kernel: any external command, a string split
//! #                             # shell-style or an array of strings; its work is fixed by
//! #                             # the command itself, so no params / work / seconds
//! threads = 1                   # default 1; above 1 only for threaded kernels
//! cores = 1                     # cores (accelerator: slots) it gets when shared;
//!                               # default: its threads; threads <= cores <= the pool's cores
//! pool = "vh"                   # default: the host pool (the first cpu pool)
//! arrival = 0.0                 # seconds after the workload starts (>= 0), default 0
//! count = 1                     # >= 1; count = N > 1 expands to jobs tri.1 .. tri.N
//! after = ["prep"]              # start only after these jobs finished (names as written,
//!                               # a counted job stands for all its copies); no cycles
//! timeout = 60.0                # optional, seconds (> 0)
//! memory_mib = 512              # optional memory limit (cgroup), MiB (>= 1, at most the node's memory)
//! pids = 256                    # processes and threads at once (cgroup pids.max), 2..=4194304;
//!                               # default limits::DEFAULT_PIDS, or twice the job's threads if more
//! priority = 1                  # 1..=1000, default 1: under `timeshare` a turn of p quanta
//! env = { OMP_SCHEDULE = "static" }  # optional: extra environment variables (strings)
//! workdir = "run/"              # optional: the job's working directory
//! progress = "step (\\d+) of (?P<total>\\d+)"  # optional: how its progress is read while
//! #                             # it runs: a regex over its output lines (first group: the
//! #                             # work done, group `total`: the whole), or a table
//! #                             # { regex = "...", total = N } / { file = "PATH", total = N }
//! output = "out/{job}-{run}-{repeat}.log"  # optional: where stdout and stderr go, or
//! # output = { stdout = "out/{job}.out", stderr = "out/{job}.err" }
//! #                             # placeholders {job}, {run} (run id), {repeat} (1-based)
//!
//! [[jobs.variants]]             # optional: other ways to run the job, in preference
//! name = "acc"                  # order after the job's own (see "Variants" below)
//! pool = "acc"                  # default: the job's pool
//! kernel = "offload"            # kernel/params/work/seconds or command: default the job's
//! cores = 1                     # default: its threads
//! speed = 2.5                   # solo speed relative to the job's own way (> 0)
//! ```
//!
//! ## Limits
//!
//! Every number is bounded by what a node and the engines can do, and a
//! message names the bound ([`limits`]): at most [`limits::MAX_JOBS`] jobs
//! after `count`, names of at most [`limits::MAX_NAME_CHARS`] characters
//! (a job's name names its cgroup and its log file), times (`seconds`,
//! `arrival`, `timeout`) of at most [`limits::MAX_SECONDS`], threads and
//! cores at most [`limits::MAX_CPUS`], and memory (`memory_mib` and kernel
//! sizes such as `array_mib`) at most the node's memory when the caller
//! knows it ([`NodeLimits`]), else [`limits::MAX_MEMORY_MIB`]. Callers that
//! read files read at most [`limits::MAX_INPUT_BYTES`].
//!
//! A file needs at least one job. Unknown keys are errors everywhere, so a
//! typo never silently falls back to a default.
//!
//! ## Pools
//!
//! Without `[[pools]]` the node is one cpu pool named `host` with all its
//! cores. The *host pool* is the first cpu pool: jobs go there unless they
//! name a `pool`, and accelerator jobs put their host load there. A file that
//! declares only accelerator pools gets the implicit `host` pool in front of
//! them, since this node has no real accelerator and its jobs run on the host.
//!
//! The cpu pools split the node: their `cores` add up to at most the node's
//! cores (when the caller knows them), and one cpu pool may leave `cores` out
//! to take the rest. When the node's cores are unknown, such a pool's
//! [`Pool::cores`] is `None` and core counts are not bounded by it.
//!
//! ## Cores and threads
//!
//! A job runs `threads` threads (for the `phased` kernel: as many as its
//! widest phase) and is given `cores` cores when it shares the node. `cores`
//! may exceed `threads` (e.g. `pingpong`'s two processes) but not fall below
//! it: each thread of a pinned job needs a core of its own, and a job that
//! oversubscribes its cores is a decision for a policy, not a workload.
//!
//! ## Variants
//!
//! A job may list other ways to run it (the VarySched paper's kernel collections: a
//! kernel per resource, ranked), each a `[[jobs.variants]]` table with the
//! keys [`VARIANT_KEYS`](parse::VARIANT_KEYS). The job's own keys are its
//! first, preferred way; the variants follow in preference order. A variant
//! without `kernel` or `command` runs the job's program (its `params`,
//! `work` or `seconds`, `threads` unless it says otherwise); one with them
//! runs its own. Its solo time is the job's over `speed` (a variant sized
//! by the job's `seconds` is sized to that), else its own `seconds`, else
//! the job's. Names default to `POOL/CORES` and are unique
//! within a job. Engines start the variant a policy names, or the first
//! that fits.
//!
//! ## Twins
//!
//! Jobs running the same program (same kernel, resolved parameters, amount
//! and threads, or the same command line) are *twins* (the Terrible Twins paper); copies
//! made by `count` are twins of each other. See [`Workload::twins`].

mod parse;
mod tree;
#[cfg(test)]
mod docs_tests;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::kernel::{self, KernelSpec};

/// Parses a workload file's text.
///
/// `file` names the file in diagnostics and gives the default workload name
/// (its stem). `node_cores` is the machine's core count if the caller knows
/// it: it sizes the default `host` pool and bounds the cpu pools.
///
/// Every semantic problem is reported, in reading order; a TOML syntax error
/// stops at the first.
pub fn parse_workload(
    text: &str,
    file: &str,
    node_cores: Option<u32>,
) -> Result<Workload, Diagnostics> {
    parse::parse(text, file, &NodeLimits { cores: node_cores, memory_mib: None })
}

/// What the node a workload is checked against can hold; `None` = unknown
/// (then only the fixed [`limits`] apply).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeLimits {
    pub cores: Option<u32>,
    /// The node's memory, MiB.
    pub memory_mib: Option<u64>,
}

/// As [`parse_workload`], bounding core counts and memory by `node`.
pub fn parse_workload_on(text: &str, file: &str, node: &NodeLimits) -> Result<Workload, Diagnostics> {
    parse::parse(text, file, node)
}

/// Bounds every workload keeps whatever the node, so that no number can
/// overflow an engine, hang a parser or run for ever.
pub mod limits {
    /// The most a caller reads of a workload file: 4 MiB.
    pub const MAX_INPUT_BYTES: u64 = 4 << 20;
    /// Jobs after `count` expansion: the simulator's scale, and about 40 MB
    /// of resolved jobs.
    pub const MAX_JOBS: u64 = 100_000;
    /// Characters of a job or pool name: names become cgroup directories
    /// and file names (255 bytes at most), with `.N` added by `count`.
    pub const MAX_NAME_CHARS: usize = 64;
    /// `seconds`, `arrival` and `timeout`: 30 days.
    pub const MAX_SECONDS: f64 = 30.0 * 86_400.0;
    /// Threads, cores and a pool's cores.
    pub const MAX_CPUS: u32 = 4096;
    /// Memory when the node's is not known: 1 PiB in MiB (so bytes never
    /// overflow 64 bits).
    pub const MAX_MEMORY_MIB: u64 = 1 << 30;
    /// Variants of one job (`[[jobs.variants]]`), its own way not counted.
    pub const MAX_VARIANTS: usize = 16;
    /// Entries of `env`, and bytes of one value or path.
    pub const MAX_ENV: usize = 256;
    pub const MAX_TEXT_BYTES: usize = 4096;
    /// A job's `priority`: turns of up to 1000 quanta.
    pub const MAX_PRIORITY: u32 = 1000;
    /// A job's `pids` when the file gives none: processes and threads it
    /// may have at once. A fork bomb stops there instead of taking the
    /// node's pids (Linux's default `pid_max` is 32768, so several jobs at
    /// the cap still leave room for the node's daemons and cosched), and
    /// real jobs stay far below it (64 MPI ranks of 8 threads are 512).
    pub const DEFAULT_PIDS: u64 = 4096;
    /// `pids` at most: Linux's `PID_MAX_LIMIT` on 64-bit machines.
    pub const MAX_PIDS: u64 = 4 << 20;
}

fn one() -> u32 {
    1
}

fn is_one(p: &u32) -> bool {
    *p == 1
}

/// A resolved workload: defaults filled in, `count` expanded, references checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    pub description: Option<String>,
    /// The host pool (first cpu pool) comes first.
    pub pools: Vec<Pool>,
    /// In file order; a job with `count = N` contributes N consecutive jobs.
    pub jobs: Vec<Job>,
}

/// A set of cores of one processor type on the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    #[serde(flatten)]
    pub kind: PoolKind,
    /// cpu pool: cores it owns, `None` if it takes the rest of a node whose
    /// core count was not given. Accelerator pool: devices / job slots.
    pub cores: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PoolKind {
    Cpu,
    /// Jobs of this pool run elsewhere but each puts `host_load` of one core
    /// on the host pool (the SX-Aurora paper: VE system calls serviced by the VH).
    Accelerator {
        host_load: f64,
    },
}

/// One job of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Unique; `base.i` for copies made by `count`.
    pub name: String,
    /// The name as written in the file.
    pub base_name: String,
    pub program: Program,
    pub amount: Amount,
    pub threads: u32,
    pub cores: u32,
    pub pool: String,
    /// Seconds after the workload starts.
    pub arrival: f64,
    /// Expanded names of the jobs that must finish before this one starts.
    pub after: Vec<String>,
    pub timeout: Option<f64>,
    pub memory_mib: Option<u64>,
    /// Processes and threads at once (`pids`), as written; `None`: the
    /// default ([`Job::pids_max`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    /// Weight of the job's turns under time-sharing (the nOS-V paper's
    /// per-application priority), 1..=[`limits::MAX_PRIORITY`]; default 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub priority: u32,
    /// 1-based line of the job's declaration, for messages about it later.
    pub line: u32,
    /// Extra environment variables, as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory, as written (relative to where cosched runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Where stdout goes, with placeholders `{job}`, `{run}`, `{repeat}`;
    /// `None`: the run's log directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Where stderr goes (same placeholders); `None`: with stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// Other ways to run it, in preference order after its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// How its progress is read while it runs (`progress`); `None`: its
    /// kernel's counter, else its CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<ProgressSource>,
}

/// Where a job's progress is read while it runs: its `progress` key, for
/// the online slowdown estimate of a command (issue 38).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressSource {
    /// A regular expression over the job's output lines: its first capture
    /// group is the work done, its group named `total` (else `total`) the
    /// whole work.
    Output { regex: String, total: Option<f64> },
    /// A file the program rewrites with `DONE` or `DONE TOTAL`; a relative
    /// path is in the job's working directory.
    File { path: String, total: Option<f64> },
    /// Instructions retired by the job's processes (hardware counters,
    /// where this machine counts them), `total` the instructions of its
    /// whole run alone.
    Counters { total: Option<f64> },
}

/// Bytes the compiled program of a `progress` regex may take: a pattern is
/// read every sampling interval over up to 64 KiB of output.
const PROGRESS_REGEX_SIZE: usize = 1 << 20;

/// `pattern` compiled as a `progress` regex: it must compile and have a
/// first capture group that is not `total` (the work done).
pub fn progress_regex(pattern: &str) -> Result<regex_lite::Regex, String> {
    let re = regex_lite::RegexBuilder::new(pattern)
        .size_limit(PROGRESS_REGEX_SIZE)
        .build()
        .map_err(|e| format!("`{pattern}` is not a regular expression: {}", e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")))?;
    if re.captures_len() < 2 {
        return Err(format!("`{pattern}` has no capture group; its first one is the work done, e.g. `step (\\d+)`"));
    }
    if re.capture_names().nth(1).flatten() == Some("total") {
        return Err(format!("`{pattern}`: the first capture group is `total`; the first one is the work done"));
    }
    Ok(re)
}

/// Another way to run a job: its program, amount, threads, cores and pool,
/// as a job has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Unique among the job's ways (its own is [`Job::own_variant_name`]).
    pub name: String,
    pub program: Program,
    pub amount: Amount,
    pub threads: u32,
    pub cores: u32,
    pub pool: String,
    /// Solo speed relative to the job's own way, when the file says it.
    pub speed: Option<f64>,
    /// 1-based line of its `[[jobs.variants]]` table.
    pub line: u32,
}

impl Variant {
    /// Its solo time estimate from the job's: the job's over `speed`, else
    /// its own `seconds`, else the job's.
    pub fn solo(&self, job_solo: f64) -> f64 {
        match (self.speed, self.amount) {
            (Some(s), _) => job_solo / s,
            (None, Amount::Seconds(s)) => s,
            _ => job_solo,
        }
    }

    /// As [`Job::kernel_argv`], for this variant.
    pub fn kernel_argv(&self, work: u64) -> Vec<String> {
        let Program::Kernel { name, params } = &self.program else {
            return Vec::new();
        };
        kernel::kernel_args(name, work, self.threads, params)
    }
}

/// A variant's default name: `POOL/CORES`.
pub fn variant_name(pool: &str, cores: u32) -> String {
    format!("{pool}/{cores}")
}

/// Placeholders an `output` path may hold.
pub const OUTPUT_PLACEHOLDERS: [&str; 3] = ["{job}", "{run}", "{repeat}"];

/// An `output` path with its placeholders filled in: the job's name, the
/// run's id and the 1-based repeat.
pub fn output_path(template: &str, job: &str, run: i64, repeat: u32) -> String {
    template.replace("{job}", job).replace("{run}", &run.to_string()).replace("{repeat}", &repeat.to_string())
}

/// What a job runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Program {
    /// A kernel of `cosched-kernel`; `params` holds every parameter of the
    /// kernel in command-line form, defaults included.
    Kernel {
        name: String,
        params: BTreeMap<String, String>,
    },
    /// An external command, already split into arguments.
    Command { argv: Vec<String> },
}

/// How much work a job does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Fixed units of kernel work.
    Work(u64),
    /// About this many seconds alone on the node; the work comes from calibration.
    Seconds(f64),
    /// The command's own fixed work.
    Intrinsic,
}

impl Workload {
    pub fn job(&self, name: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.name == name)
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name == name)
    }

    /// The pool that carries host load: the first cpu pool.
    pub fn host_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.kind == PoolKind::Cpu)
    }

    /// Groups of job indices (each of two or more) that run the same
    /// program, ordered by their first job.
    pub fn twins(&self) -> Vec<Vec<usize>> {
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, job) in self.jobs.iter().enumerate() {
            let key = job.program_key();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => g.push(i),
                None => groups.push((key, vec![i])),
            }
        }
        groups
            .into_iter()
            .map(|(_, g)| g)
            .filter(|g| g.len() >= 2)
            .collect()
    }
}

impl Job {
    /// The name of the job's own way among its variants: `POOL/CORES`.
    pub fn own_variant_name(&self) -> String {
        variant_name(&self.pool, self.cores)
    }

    /// The job as it runs as its variant `k` (an index into `variants`):
    /// that variant's program, amount, threads, cores and pool, under the
    /// job's name and limits, so whatever runs a job runs a variant alike.
    pub fn as_variant(&self, k: usize) -> Option<Job> {
        let v = self.variants.get(k)?;
        Some(Job {
            program: v.program.clone(),
            amount: v.amount,
            threads: v.threads,
            cores: v.cores,
            pool: v.pool.clone(),
            line: v.line,
            variants: Vec::new(),
            ..self.clone()
        })
    }

    /// The cap on its processes and threads: `pids` as written, else
    /// [`limits::DEFAULT_PIDS`] or twice its widest way's threads, whichever
    /// is more (a job as wide as the node never trips the default).
    pub fn pids_max(&self) -> u64 {
        let widest = self.variants.iter().map(|v| v.threads).chain([self.threads]).max().unwrap_or(1);
        self.pids.unwrap_or_else(|| limits::DEFAULT_PIDS.max(2 * u64::from(widest)))
    }

    /// The identity of the program this job runs: equal keys mean twins.
    ///
    /// Kernel jobs: kernel, resolved parameters, amount and threads. Command
    /// jobs: the command line. Pool, cores, arrival and limits are where and
    /// when a program runs, not what it is, so they are left out.
    pub fn program_key(&self) -> String {
        match &self.program {
            Program::Kernel { name, params } => {
                let mut key = format!("kernel {name}");
                for (k, v) in params {
                    key.push_str(&format!(" {k}={v:?}"));
                }
                match self.amount {
                    Amount::Work(w) => key.push_str(&format!(" work={w}")),
                    Amount::Seconds(s) => key.push_str(&format!(" seconds={s:?}")),
                    Amount::Intrinsic => {}
                }
                key.push_str(&format!(" threads={}", self.threads));
                key
            }
            Program::Command { argv } => format!("command {}", shell_words::join(argv)),
        }
    }

    /// The kernel this job runs, if it runs one of the catalogue.
    pub fn kernel(&self) -> Option<&'static KernelSpec> {
        match &self.program {
            Program::Kernel { name, .. } => kernel::kernel(name),
            Program::Command { .. } => None,
        }
    }

    /// Arguments for the `cosched-kernel` binary doing `work` units:
    /// `[NAME, --work, N, --threads, T, --param-flag, value, ...]`.
    ///
    /// Every resolved parameter is passed explicitly, so a run does not
    /// depend on the binary's defaults; parameters whose value is empty
    /// (meaning "let the kernel choose", e.g. `fileio`'s `dir`) are left out
    /// because an empty flag value would not mean the same. A command job
    /// has no kernel arguments and gets an empty vector: its argv is in
    /// [`Program::Command`].
    pub fn kernel_argv(&self, work: u64) -> Vec<String> {
        let Program::Kernel { name, params } = &self.program else {
            return Vec::new();
        };
        kernel::kernel_args(name, work, self.threads, params)
    }
}

/// One problem in a workload file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    /// 1-based line of the offending key or value.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
    /// What is wrong.
    pub message: String,
    /// What would be right, starting with "expected".
    pub expected: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}; {}",
            self.file, self.line, self.col, self.message, self.expected
        )
    }
}

/// All problems found in one workload file, in reading order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
