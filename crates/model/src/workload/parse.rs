//! Validation and resolution of a workload's TOML tree.
//!
//! The walk goes in passes (shapes and types, names, per-job meaning,
//! dependencies) so that one mistake is reported once, where it is, instead
//! of cascading into errors about everything that depends on it.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use super::tree::{self, Entry, Item, Lines, TreeError, Value};
use super::limits::{MAX_CPUS, MAX_ENV, MAX_JOBS, MAX_MEMORY_MIB, MAX_NAME_CHARS, MAX_PIDS, MAX_PRIORITY, MAX_SECONDS, MAX_TEXT_BYTES, MAX_VARIANTS};
use super::{variant_name, Amount, Diagnostic, Diagnostics, Job, NodeLimits, Pool, PoolKind, Program, Variant, Workload, OUTPUT_PLACEHOLDERS};
use crate::kernel::{self, KernelSpec, ParamKind, KERNELS};

pub(super) const TOP_KEYS: &[&str] = &["name", "description", "pools", "jobs"];
pub(super) const POOL_KEYS: &[&str] = &["name", "kind", "cores", "host_load"];
pub(super) const JOB_KEYS: &[&str] = &[
    "name",
    "kernel",
    "params",
    "work",
    "seconds",
    "command",
    "threads",
    "cores",
    "pool",
    "arrival",
    "count",
    "after",
    "timeout",
    "memory_mib",
    "pids",
    "priority",
    "env",
    "workdir",
    "output",
    "variants",
];
/// Keys of a `[[jobs.variants]]` table: what a way to run a job may change.
pub(super) const VARIANT_KEYS: &[&str] =
    &["name", "kernel", "params", "work", "seconds", "command", "threads", "cores", "pool", "speed"];
/// Fastest and slowest a variant may be relative to its job's own way.
const MAX_SPEED: f64 = 1e6;

/// Name of the pool a file without cpu pools gets.
const HOST_POOL: &str = "host";
/// Host load of an accelerator job when its pool does not say: enough to
/// matter when many such jobs share a host, small enough not to dominate.
const DEFAULT_HOST_LOAD: f64 = 0.1;
/// Longest list of names quoted in one message.
const MAX_LISTED: usize = 12;

pub(super) fn parse(
    text: &str,
    file: &str,
    node: &NodeLimits,
) -> Result<Workload, Diagnostics> {
    let node_cores = node.cores;
    let mut cx = Cx {
        file,
        text,
        lines: Lines::new(text),
        diags: Vec::new(),
    };
    let root = match tree::parse(text) {
        Ok(root) => root,
        Err(TreeError::Syntax { span, message }) => {
            let at = span.map_or(0, |s| s.start);
            cx.error(
                at,
                format!("TOML syntax error: {}", one_line(&message)),
                "expected valid TOML (https://toml.io)",
            );
            return Err(cx.finish());
        }
        Err(TreeError::Datetime { span }) => {
            let at = span.map_or(0, |s| s.start);
            cx.error(
                at,
                "a date or time is not meaningful in a workload file",
                "expected a number, string, array or table",
            );
            return Err(cx.finish());
        }
    };
    let workload = Parser {
        cx: &mut cx,
        node_cores,
        memory_mib: node.memory_mib,
    }
    .workload(&root);
    match workload {
        Some(w) if cx.diags.is_empty() => Ok(w),
        _ => Err(cx.finish()),
    }
}

fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Collects diagnostics and turns byte offsets into line and column.
struct Cx<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines<'a>,
    diags: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn error(&mut self, at: usize, message: impl Into<String>, expected: impl Into<String>) {
        let (line, col) = self.lines.position(at);
        self.diags.push(Diagnostic {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
            expected: expected.into(),
        });
    }

    fn line(&self, at: usize) -> u32 {
        self.lines.position(at).0
    }

    /// The value as written, for messages.
    fn src(&self, span: &Range<usize>) -> &str {
        self.text.get(span.clone()).unwrap_or("").trim()
    }

    fn finish(&mut self) -> Diagnostics {
        let mut d = std::mem::take(&mut self.diags);
        d.sort_by_key(|d| (d.line, d.col));
        Diagnostics(d)
    }

    fn unknown_key(&mut self, e: &Entry, place: &str, allowed: &[&str]) {
        let hint = suggest(&e.key, allowed.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        self.error(
            e.key_span.start,
            format!("unknown key `{}` {place}{hint}", e.key),
            format!("expected one of: {}", allowed.join(", ")),
        );
    }

    fn wrong_type(&mut self, e: &Entry, expected: &str) {
        self.error(
            e.item.span.start,
            format!(
                "wrong type for `{}`: found {}",
                e.key,
                e.item.value.describe()
            ),
            format!("expected {expected}"),
        );
    }

    fn out_of_range(&mut self, e: &Entry, expected: &str) {
        let msg = format!("`{} = {}` is out of range", e.key, self.src(&e.item.span));
        self.error(e.item.span.start, msg, format!("expected {expected}"));
    }

    fn string(&mut self, e: &Entry, expected: &str) -> Option<At<String>> {
        match &e.item.value {
            Value::String(s) => Some(At::new(s.clone(), e)),
            _ => {
                self.wrong_type(e, expected);
                None
            }
        }
    }

    fn name(&mut self, e: &Entry, what: &str) -> Option<At<String>> {
        let expected = format!("a {what} name of letters, digits, `_` and `-`");
        let s = self.string(e, &expected)?;
        let chars = s.v.chars().count();
        if chars > MAX_NAME_CHARS {
            self.error(
                s.val.start,
                format!("the {what} name is {chars} characters long"),
                format!("expected at most {MAX_NAME_CHARS} characters (a name becomes a cgroup directory and a file name)"),
            );
            None
        } else if valid_name(&s.v) {
            Some(s)
        } else {
            let why = if s.v.contains('.') {
                " (`.` is reserved for copies made by `count`)"
            } else {
                ""
            };
            self.error(
                s.val.start,
                format!("invalid {what} name {:?}{why}", s.v),
                format!("expected {expected}"),
            );
            None
        }
    }

    /// An integer in `min..=max`; `expected` describes it for messages.
    fn integer(&mut self, e: &Entry, min: i64, max: i64, expected: &str) -> Option<At<i64>> {
        match e.item.value {
            Value::Integer(v) if (min..=max).contains(&v) => Some(At::new(v, e)),
            Value::Integer(_) => {
                self.out_of_range(e, expected);
                None
            }
            _ => {
                self.wrong_type(e, expected);
                None
            }
        }
    }

    fn count_like(&mut self, e: &Entry, expected: &str) -> Option<At<u32>> {
        self.integer(e, 1, u32::MAX as i64, expected)
            .map(|a| a.map(|v| v as u32))
    }

    /// Threads, cores or slots: 1 ..= [`MAX_CPUS`].
    fn cpus(&mut self, e: &Entry, what: &str) -> Option<At<u32>> {
        self.integer(e, 1, i64::from(MAX_CPUS), &format!("an integer from 1 to {MAX_CPUS} ({what})"))
            .map(|a| a.map(|v| v as u32))
    }

    /// Seconds, bounded by [`MAX_SECONDS`] (30 days).
    fn seconds(&mut self, e: &Entry, zero_ok: bool, what: &str) -> Option<At<f64>> {
        let lo = if zero_ok { ">= 0" } else { "> 0" };
        self.number(
            e,
            |v| (if zero_ok { v >= 0.0 } else { v > 0.0 }) && v <= MAX_SECONDS,
            &format!("{what}, {lo} and at most {MAX_SECONDS} (30 days)"),
        )
    }

    /// A string of at most [`MAX_TEXT_BYTES`] bytes without NUL.
    fn text(&mut self, e: &Entry, expected: &str) -> Option<At<String>> {
        let s = self.string(e, expected)?;
        if s.v.len() > MAX_TEXT_BYTES || s.v.contains('\0') || s.v.is_empty() {
            self.error(
                s.val.start,
                format!("`{}` is empty, holds a NUL byte or is longer than {MAX_TEXT_BYTES} bytes", e.key),
                format!("expected {expected}"),
            );
            return None;
        }
        Some(s)
    }

    /// A finite number (integer or float) accepted by `ok`.
    fn number(&mut self, e: &Entry, ok: impl Fn(f64) -> bool, expected: &str) -> Option<At<f64>> {
        let v = match e.item.value {
            Value::Integer(v) => v as f64,
            Value::Float(v) => v,
            _ => {
                self.wrong_type(e, expected);
                return None;
            }
        };
        if v.is_finite() && ok(v) {
            Some(At::new(v, e))
        } else {
            self.out_of_range(e, expected);
            None
        }
    }

    /// The tables of an array of tables (`[[jobs]]`).
    fn tables<'t>(&mut self, e: &'t Entry) -> Vec<(&'t Range<usize>, &'t [Entry])> {
        let expected = format!("an array of tables: one [[{}]] section each", e.key);
        match &e.item.value {
            Value::Array(items) => items
                .iter()
                .filter_map(|item| match &item.value {
                    Value::Table(entries) => Some((&item.span, entries.as_slice())),
                    other => {
                        let msg = format!("an entry of `{}` is {}", e.key, other.describe());
                        self.error(item.span.start, msg, format!("expected {expected}"));
                        None
                    }
                })
                .collect(),
            Value::Table(_) => {
                let msg = format!("`{}` is a single table", e.key);
                self.error(
                    e.key_span.start,
                    msg,
                    format!("expected {expected}: write [[{}]], not [{}]", e.key, e.key),
                );
                Vec::new()
            }
            _ => {
                self.wrong_type(e, &expected);
                Vec::new()
            }
        }
    }
}

/// A value with where its key and the value itself are.
#[derive(Debug, Clone)]
struct At<T> {
    v: T,
    key: Range<usize>,
    val: Range<usize>,
}

impl<T> At<T> {
    fn new(v: T, e: &Entry) -> Self {
        At {
            v,
            key: e.key_span.clone(),
            val: e.item.span.clone(),
        }
    }
    fn map<U>(self, f: impl FnOnce(T) -> U) -> At<U> {
        At {
            v: f(self.v),
            key: self.key,
            val: self.val,
        }
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn list(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_string()).collect();
    if names.len() > MAX_LISTED {
        format!(
            "{}, ... ({} in all)",
            names[..MAX_LISTED].join(", "),
            names.len()
        )
    } else {
        names.join(", ")
    }
}

/// The closest candidate to a misspelt word, if one is close enough to be
/// what was meant.
fn suggest<'c>(word: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: like Levenshtein, but a swap of two
/// neighbouring letters (`nmae`) counts as one typo, not two.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

struct RawPool {
    span: Range<usize>,
    keys: HashMap<&'static str, Range<usize>>,
    name: Option<At<String>>,
    accelerator: bool,
    cores: Option<At<u32>>,
    host_load: Option<At<f64>>,
}

#[derive(Clone)]
struct RawParam {
    key: String,
    key_span: Range<usize>,
    /// The value in command-line form; `None` if it has no such form.
    text: Option<String>,
    val: Range<usize>,
    found: String,
}

#[derive(Clone)]
struct RawJob {
    span: Range<usize>,
    /// How messages name it, when not `job NAME` (a variant).
    label: Option<String>,
    /// Position among the [[jobs]] tables, for jobs without a valid name.
    index: usize,
    keys: HashMap<&'static str, Range<usize>>,
    name: Option<At<String>>,
    kernel: Option<At<&'static KernelSpec>>,
    params: Vec<RawParam>,
    work: Option<At<u64>>,
    seconds: Option<At<f64>>,
    command: Option<At<Vec<String>>>,
    threads: Option<At<u32>>,
    cores: Option<At<u32>>,
    pool: Option<At<String>>,
    arrival: Option<At<f64>>,
    count: Option<At<u32>>,
    after: Vec<At<String>>,
    timeout: Option<At<f64>>,
    memory_mib: Option<At<u64>>,
    pids: Option<At<u64>>,
    priority: Option<At<u32>>,
    env: Vec<(String, String)>,
    workdir: Option<String>,
    stdout: Option<String>,
    stderr: Option<String>,
    /// `[[jobs.variants]]` tables, checked once the job is.
    variant_tables: Vec<(Range<usize>, Vec<Entry>)>,
    speed: Option<At<f64>>,
}

impl RawJob {
    fn label(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        match &self.name {
            Some(n) => format!("job `{}`", n.v),
            None => format!("job #{}", self.index + 1),
        }
    }
}

/// A job after its own checks, before dependencies and expansion.
struct Checked {
    program: Program,
    amount: Amount,
    threads: u32,
    cores: u32,
    pool: String,
    variants: Vec<Variant>,
}

struct Parser<'c, 'a> {
    cx: &'c mut Cx<'a>,
    node_cores: Option<u32>,
    /// The node's memory, MiB, when known.
    memory_mib: Option<u64>,
}

impl Parser<'_, '_> {
    fn workload(&mut self, root: &Item) -> Option<Workload> {
        let Value::Table(entries) = &root.value else {
            self.cx.error(
                0,
                "the document is not a table",
                "expected a TOML document of keys and tables",
            );
            return None;
        };
        let mut name = None;
        let mut description = None;
        let mut pools_entry = None;
        let mut jobs_entry = None;
        for e in entries {
            match e.key.as_str() {
                "name" => {
                    name = self
                        .cx
                        .string(e, "a string naming the workload")
                        .and_then(|s| {
                            if s.v.trim().is_empty() {
                                self.cx.error(
                                s.val.start,
                                "the workload name is empty",
                                "expected a non-empty string, or no `name` to use the file name",
                            );
                                None
                            } else {
                                Some(s.v)
                            }
                        })
                }
                "description" => description = self.cx.string(e, "a string").map(|s| s.v),
                "pools" => pools_entry = Some(e),
                "jobs" => jobs_entry = Some(e),
                _ => self.cx.unknown_key(e, "at the top level", TOP_KEYS),
            }
        }

        let raw_pools: Vec<RawPool> = match pools_entry {
            Some(e) => self
                .cx
                .tables(e)
                .into_iter()
                .map(|(span, t)| self.raw_pool(span, t))
                .collect(),
            None => Vec::new(),
        };
        let pools = self.resolve_pools(raw_pools);

        let raw_jobs: Vec<RawJob> = match jobs_entry {
            Some(e) => {
                let tables = self.cx.tables(e);
                if tables.is_empty() && matches!(&e.item.value, Value::Array(a) if a.is_empty()) {
                    self.cx.error(
                        e.key_span.start,
                        "the workload has no jobs",
                        "expected at least one [[jobs]] table with a `kernel` or a `command`",
                    );
                }
                tables
                    .into_iter()
                    .enumerate()
                    .map(|(i, (span, t))| self.raw_job(i, span, t, JOB_KEYS, None))
                    .collect()
            }
            None => {
                self.cx.error(
                    0,
                    "the workload has no jobs",
                    "expected at least one [[jobs]] table with a `kernel` or a `command`",
                );
                Vec::new()
            }
        };

        let jobs = self.resolve_jobs(&raw_jobs, &pools);
        Some(Workload {
            name: name.unwrap_or_else(|| default_name(self.cx.file)),
            description,
            pools,
            jobs,
        })
    }

    fn raw_pool(&mut self, span: &Range<usize>, entries: &[Entry]) -> RawPool {
        let mut p = RawPool {
            span: span.clone(),
            keys: HashMap::new(),
            name: None,
            accelerator: false,
            cores: None,
            host_load: None,
        };
        for e in entries {
            let Some(&key) = POOL_KEYS.iter().find(|k| **k == e.key) else {
                let place = match entries.iter().find(|e| e.key == "name") {
                    Some(Entry {
                        item:
                            Item {
                                value: Value::String(n),
                                ..
                            },
                        ..
                    }) => format!("in pool `{n}`"),
                    _ => "in a pool".to_string(),
                };
                self.cx.unknown_key(e, &place, POOL_KEYS);
                continue;
            };
            p.keys.insert(key, e.key_span.clone());
            match key {
                "name" => p.name = self.cx.name(e, "pool"),
                "kind" => {
                    if let Some(k) = self.cx.string(e, "\"cpu\" or \"accelerator\"") {
                        match k.v.as_str() {
                            "cpu" => p.accelerator = false,
                            "accelerator" => p.accelerator = true,
                            other => {
                                let hint = suggest(other, ["cpu", "accelerator"].into_iter())
                                    .map(|s| format!(" (did you mean `{s}`?)"))
                                    .unwrap_or_default();
                                self.cx.error(
                                    k.val.start,
                                    format!("unknown pool kind `{other}`{hint}"),
                                    "expected \"cpu\" or \"accelerator\"",
                                );
                            }
                        }
                    }
                }
                "cores" => {
                    p.cores = self.cx.cpus(e, "cpu: cores; accelerator: devices or job slots")
                }
                "host_load" => {
                    p.host_load = self.cx.number(
                        e,
                        |v| (0.0..=1.0).contains(&v),
                        "a share of one host core between 0 and 1",
                    )
                }
                _ => unreachable!("every key of POOL_KEYS is handled"),
            }
        }
        p
    }

    fn resolve_pools(&mut self, raws: Vec<RawPool>) -> Vec<Pool> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut kept: Vec<RawPool> = Vec::new();
        let has_cpu = raws.iter().any(|p| !p.accelerator);
        for p in raws {
            if let (false, Some(k)) = (p.accelerator, p.keys.get("host_load")) {
                let name = p
                    .name
                    .as_ref()
                    .map_or("this pool".to_string(), |n| format!("pool `{}`", n.v));
                self.cx.error(
                    k.start,
                    format!(
                        "`host_load` applies only to accelerator pools, and {name} is a cpu pool"
                    ),
                    "expected `kind = \"accelerator\"` or no `host_load`",
                );
            }
            let Some(name) = &p.name else {
                if !p.keys.contains_key("name") {
                    self.cx.error(
                        p.span.start,
                        "a pool has no `name`",
                        "expected `name = \"...\"` in every [[pools]] table",
                    );
                }
                continue;
            };
            if let Some(first) = seen.get(&name.v) {
                let msg = format!(
                    "duplicate pool name `{}`; the first is declared at line {first}",
                    name.v
                );
                self.cx
                    .error(name.val.start, msg, "expected unique pool names");
                continue;
            }
            if !has_cpu && name.v == HOST_POOL {
                self.cx.error(name.val.start, format!("accelerator pool `{HOST_POOL}` clashes with the implicit cpu pool `{HOST_POOL}` added when no cpu pool is declared"), "expected another name, or a cpu pool declared explicitly");
                continue;
            }
            seen.insert(name.v.clone(), self.cx.line(p.span.start) as usize);
            kept.push(p);
        }

        let mut pools = Vec::new();
        if !has_cpu {
            pools.push(Pool {
                name: HOST_POOL.into(),
                kind: PoolKind::Cpu,
                cores: self.node_cores,
            });
        }

        // The cpu pools split the node; at most one takes what the others leave.
        let mut declared: u64 = 0;
        let mut shares: Vec<String> = Vec::new();
        let mut overflow_reported = false;
        let mut rest_pool: Option<&RawPool> = None;
        for p in kept.iter().filter(|p| !p.accelerator) {
            let name = &p.name.as_ref().expect("kept pools are named").v;
            match &p.cores {
                Some(c) => {
                    declared += u64::from(c.v);
                    shares.push(format!("{name}: {}", c.v));
                    if let Some(n) = self.node_cores {
                        if declared > u64::from(n) && !overflow_reported {
                            overflow_reported = true;
                            let msg = format!(
                                "the cpu pools take {declared} cores ({}) but the node has {n}",
                                shares.join(", ")
                            );
                            self.cx.error(
                                c.val.start,
                                msg,
                                format!("expected the cpu pools' `cores` to add up to at most {n}"),
                            );
                        }
                    }
                }
                None if p.keys.contains_key("cores") => {}
                None => {
                    if let Some(first) = rest_pool {
                        let first_name = &first.name.as_ref().expect("kept pools are named").v;
                        let msg = format!("cpu pools `{first_name}` (line {}) and `{name}` both leave out `cores`, so both would take the rest of the node", self.cx.line(first.span.start));
                        self.cx.error(
                            p.name.as_ref().map_or(p.span.start, |n| n.val.start),
                            msg,
                            "expected `cores = N` on every cpu pool but one",
                        );
                    } else {
                        rest_pool = Some(p);
                    }
                }
            }
        }
        let rest = match (self.node_cores, rest_pool) {
            (Some(n), Some(p)) if declared >= u64::from(n) && !overflow_reported => {
                let name = p.name.as_ref().expect("kept pools are named");
                let msg = format!("cpu pool `{}` takes the rest of the node, but the other cpu pools take all {n} of its cores", name.v);
                self.cx.error(
                    name.val.start,
                    msg,
                    "expected fewer cores on the other cpu pools, or `cores = N` here",
                );
                None
            }
            (Some(n), Some(_)) => u32::try_from(u64::from(n).saturating_sub(declared)).ok(),
            _ => None,
        };

        for p in &kept {
            let name = p.name.as_ref().expect("kept pools are named").v.clone();
            let (kind, cores) = if p.accelerator {
                let host_load = p.host_load.as_ref().map_or(DEFAULT_HOST_LOAD, |h| h.v);
                (
                    PoolKind::Accelerator { host_load },
                    Some(p.cores.as_ref().map_or(1, |c| c.v)),
                )
            } else {
                let takes_rest = rest_pool.is_some_and(|r| std::ptr::eq(r, p));
                let cores = match &p.cores {
                    Some(c) => Some(c.v),
                    None if takes_rest => rest,
                    None => None,
                };
                (PoolKind::Cpu, cores)
            };
            pools.push(Pool { name, kind, cores });
        }
        // The host pool leads so that "the first cpu pool" is also "the first pool".
        if let Some(i) = pools.iter().position(|p| p.kind == PoolKind::Cpu) {
            let host = pools.remove(i);
            pools.insert(0, host);
        }
        pools
    }

    /// A `[[jobs]]` table, or with `VARIANT_KEYS` and a label a variant's.
    fn raw_job(
        &mut self,
        index: usize,
        span: &Range<usize>,
        entries: &[Entry],
        allowed: &'static [&'static str],
        label: Option<String>,
    ) -> RawJob {
        let mut j = RawJob {
            span: span.clone(),
            label: label.clone(),
            index,
            keys: HashMap::new(),
            name: None,
            kernel: None,
            params: Vec::new(),
            work: None,
            seconds: None,
            command: None,
            threads: None,
            cores: None,
            pool: None,
            arrival: None,
            count: None,
            after: Vec::new(),
            timeout: None,
            memory_mib: None,
            pids: None,
            priority: None,
            env: Vec::new(),
            workdir: None,
            stdout: None,
            stderr: None,
            variant_tables: Vec::new(),
            speed: None,
        };
        let place = match entries.iter().find(|e| e.key == "name") {
            _ if label.is_some() => format!("in {}", label.as_deref().unwrap_or_default()),
            Some(Entry {
                item:
                    Item {
                        value: Value::String(n),
                        ..
                    },
                ..
            }) => format!("in job `{n}`"),
            _ => format!("in job #{}", index + 1),
        };
        for e in entries {
            let Some(&key) = allowed.iter().find(|k| **k == e.key) else {
                self.cx.unknown_key(e, &place, allowed);
                continue;
            };
            j.keys.insert(key, e.key_span.clone());
            match key {
                "name" => j.name = self.cx.name(e, "job"),
                "kernel" => {
                    if let Some(k) = self.cx.string(
                        e,
                        &format!("a kernel name, one of: {}", kernel::kernel_names()),
                    ) {
                        match kernel::kernel(&k.v) {
                            Some(spec) => j.kernel = Some(k.map(|_| spec)),
                            None => {
                                let hint = suggest(&k.v, KERNELS.iter().map(|k| k.name))
                                    .map(|s| format!(" (did you mean `{s}`?)"))
                                    .unwrap_or_default();
                                self.cx.error(
                                    k.val.start,
                                    format!("unknown kernel `{}`{hint}", k.v),
                                    format!("expected one of: {}", kernel::kernel_names()),
                                );
                            }
                        }
                    }
                }
                "params" => match &e.item.value {
                    Value::Table(ps) => {
                        j.params = ps
                            .iter()
                            .map(|p| RawParam {
                                key: p.key.clone(),
                                key_span: p.key_span.clone(),
                                text: match &p.item.value {
                                    Value::String(s) => Some(s.clone()),
                                    Value::Integer(i) => Some(i.to_string()),
                                    // Debug keeps the `.0`, so a float is never taken for an integer.
                                    Value::Float(f) => Some(format!("{f:?}")),
                                    _ => None,
                                },
                                val: p.item.span.clone(),
                                found: p.item.value.describe(),
                            })
                            .collect()
                    }
                    _ => self.cx.wrong_type(
                        e,
                        "a table of kernel parameters, e.g. params = { array_mib = 64 }",
                    ),
                },
                "work" => {
                    j.work = self
                        .cx
                        .integer(e, 1, i64::MAX, "an integer >= 1 (units of kernel work)")
                        .map(|a| a.map(|v| v as u64))
                }
                "seconds" => j.seconds = self.cx.seconds(e, false, "a number of seconds"),
                "command" => j.command = self.command(e),
                "threads" => j.threads = self.cx.cpus(e, "threads"),
                "cores" => j.cores = self.cx.cpus(e, "cores"),
                "pool" => j.pool = self.cx.string(e, "a pool name"),
                "arrival" => {
                    j.arrival = self.cx.seconds(e, true, "seconds after the workload starts")
                }
                "count" => {
                    j.count = self
                        .cx
                        .count_like(e, "an integer >= 1 (how many copies of the job)")
                }
                "after" => j.after = self.after(e),
                "timeout" => j.timeout = self.cx.seconds(e, false, "a number of seconds"),
                "memory_mib" => {
                    let (max, what) = self.memory_bound();
                    j.memory_mib = self
                        .cx
                        .integer(e, 1, max as i64, &format!("an integer from 1 to {max} MiB ({what})"))
                        .map(|a| a.map(|v| v as u64))
                }
                "pids" => {
                    j.pids = self
                        .cx
                        .integer(e, 2, MAX_PIDS as i64, &format!("an integer from 2 to {MAX_PIDS} (processes and threads the job may have at once)"))
                        .map(|a| a.map(|v| v as u64))
                }
                "priority" => {
                    j.priority = self
                        .cx
                        .integer(e, 1, MAX_PRIORITY as i64, &format!("an integer from 1 to {MAX_PRIORITY} (a timeshare turn of p quanta)"))
                        .map(|a| a.map(|v| v as u32))
                }
                "env" => j.env = self.env(e),
                "workdir" => {
                    j.workdir = self.cx.text(e, "a directory path, e.g. workdir = \"run/\"").map(|s| s.v)
                }
                "output" => {
                    if let Some((out, err)) = self.output(e) {
                        j.stdout = Some(out);
                        j.stderr = err;
                    }
                }
                "variants" => {
                    let tables = self.cx.tables(e);
                    if tables.len() > MAX_VARIANTS {
                        self.cx.error(
                            e.key_span.start,
                            format!("{} variants", tables.len()),
                            format!("expected at most {MAX_VARIANTS} [[jobs.variants]] per job"),
                        );
                    } else {
                        j.variant_tables = tables.into_iter().map(|(s, t)| (s.clone(), t.to_vec())).collect();
                    }
                }
                "speed" => {
                    j.speed = self.cx.number(
                        e,
                        |v| v > 0.0 && v <= MAX_SPEED && v >= 1.0 / MAX_SPEED,
                        &format!("a number > 0 (the variant's solo speed over the job's own), from {} to {MAX_SPEED}", 1.0 / MAX_SPEED),
                    )
                }
                _ => unreachable!("every allowed key is handled"),
            }
        }
        j
    }

    /// The most memory a job may ask for, MiB, and what sets it.
    fn memory_bound(&self) -> (u64, String) {
        match self.memory_mib {
            Some(m) => (m.min(MAX_MEMORY_MIB), format!("the node's memory, {m} MiB")),
            None => (MAX_MEMORY_MIB, "1 PiB, the most cosched handles".to_string()),
        }
    }

    fn env(&mut self, e: &Entry) -> Vec<(String, String)> {
        let expected = "a table of variables, e.g. env = { OMP_SCHEDULE = \"static\" }";
        let Value::Table(vars) = &e.item.value else {
            self.cx.wrong_type(e, expected);
            return Vec::new();
        };
        if vars.len() > MAX_ENV {
            self.cx.error(e.item.span.start, format!("`env` sets {} variables", vars.len()), format!("expected at most {MAX_ENV}"));
            return Vec::new();
        }
        let mut out = Vec::new();
        for v in vars {
            let name_ok = !v.key.is_empty()
                && !v.key.starts_with(|c: char| c.is_ascii_digit())
                && v.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !name_ok {
                self.cx.error(
                    v.key_span.start,
                    format!("`{}` is not an environment variable name", v.key),
                    "expected letters, digits and `_`, not starting with a digit",
                );
                continue;
            }
            if v.key.starts_with("COSCHED_") {
                self.cx.error(
                    v.key_span.start,
                    format!("`{}` is set by cosched for every job", v.key),
                    "expected a name that does not start with COSCHED_",
                );
                continue;
            }
            let value = match &v.item.value {
                Value::String(s) => s.clone(),
                Value::Integer(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => {
                    let msg = format!("`env.{}` is {}", v.key, other.describe());
                    self.cx.error(v.item.span.start, msg, "expected a string or a number");
                    continue;
                }
            };
            if value.len() > MAX_TEXT_BYTES || value.contains('\0') {
                let msg = format!("`env.{}` is longer than {MAX_TEXT_BYTES} bytes or holds a NUL byte", v.key);
                self.cx.error(v.item.span.start, msg, "expected a shorter value");
                continue;
            }
            out.push((v.key.clone(), value));
        }
        out
    }

    /// `output = "PATH"` (stdout and stderr together) or
    /// `output = { stdout = "PATH", stderr = "PATH" }`.
    fn output(&mut self, e: &Entry) -> Option<(String, Option<String>)> {
        let expected = "a path, or a table { stdout = \"PATH\", stderr = \"PATH\" }; placeholders {job}, {run}, {repeat}";
        let check = |cx: &mut Cx, s: &str, at: usize| -> bool {
            let mut rest = s;
            while let Some(i) = rest.find('{') {
                let tail = &rest[i..];
                match OUTPUT_PLACEHOLDERS.iter().find(|p| tail.starts_with(**p)) {
                    Some(p) => rest = &tail[p.len()..],
                    None => {
                        let shown: String = tail.chars().take(12).collect();
                        cx.error(at, format!("unknown placeholder at `{shown}` in `output`"), format!("expected {}", OUTPUT_PLACEHOLDERS.join(", ")));
                        return false;
                    }
                }
            }
            true
        };
        match &e.item.value {
            Value::String(_) => {
                let s = self.cx.text(e, expected)?;
                check(self.cx, &s.v, s.val.start).then_some((s.v, None))
            }
            Value::Table(streams) => {
                let (mut out, mut err) = (None, None);
                for t in streams {
                    let slot = match t.key.as_str() {
                        "stdout" => &mut out,
                        "stderr" => &mut err,
                        _ => {
                            self.cx.unknown_key(t, "in `output`", &["stdout", "stderr"]);
                            continue;
                        }
                    };
                    if let Some(s) = self.cx.text(t, expected) {
                        if check(self.cx, &s.v, s.val.start) {
                            *slot = Some(s.v);
                        }
                    }
                }
                match out {
                    Some(o) => Some((o, err)),
                    None => {
                        self.cx.error(e.item.span.start, "`output` names no `stdout`", format!("expected {expected}"));
                        None
                    }
                }
            }
            _ => {
                self.cx.wrong_type(e, expected);
                None
            }
        }
    }

    fn command(&mut self, e: &Entry) -> Option<At<Vec<String>>> {
        let expected = "a command line string, or an array of strings, e.g. \"stress-ng --cpu 1 --cpu-ops 2000\"";
        let argv = match &e.item.value {
            Value::String(s) => match shell_words::split(s) {
                Ok(argv) => argv,
                Err(err) => {
                    self.cx.error(
                        e.item.span.start,
                        format!("cannot split `command` into arguments: {err}"),
                        "expected balanced quotes, or an array of strings",
                    );
                    return None;
                }
            },
            Value::Array(items) => {
                let mut argv = Vec::new();
                for item in items {
                    match &item.value {
                        Value::String(s) => argv.push(s.clone()),
                        other => {
                            self.cx.error(
                                item.span.start,
                                format!("an argument of `command` is {}", other.describe()),
                                "expected every argument to be a string",
                            );
                            return None;
                        }
                    }
                }
                argv
            }
            _ => {
                self.cx.wrong_type(e, expected);
                return None;
            }
        };
        if argv.first().filter(|p| !p.is_empty()).is_none() {
            self.cx.error(
                e.item.span.start,
                "`command` names no program",
                format!("expected {expected}"),
            );
            return None;
        }
        Some(At::new(argv, e))
    }

    fn after(&mut self, e: &Entry) -> Vec<At<String>> {
        let expected = "an array of job names, e.g. after = [\"prep\"]";
        let Value::Array(items) = &e.item.value else {
            self.cx.wrong_type(e, expected);
            return Vec::new();
        };
        let mut out: Vec<At<String>> = Vec::new();
        for item in items {
            match &item.value {
                Value::String(s) => {
                    if !out.iter().any(|a| a.v == *s) {
                        out.push(At {
                            v: s.clone(),
                            key: e.key_span.clone(),
                            val: item.span.clone(),
                        });
                    }
                }
                other => {
                    self.cx.error(
                        item.span.start,
                        format!("an entry of `after` is {}", other.describe()),
                        format!("expected {expected}"),
                    );
                }
            }
        }
        out
    }

    fn resolve_jobs(&mut self, raws: &[RawJob], pools: &[Pool]) -> Vec<Job> {
        // Names first: later checks refer to jobs by name.
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (i, j) in raws.iter().enumerate() {
            match &j.name {
                Some(n) => {
                    if let Some(&first) = by_name.get(&n.v) {
                        let msg = format!(
                            "duplicate job name `{}`; the first is declared at line {}",
                            n.v,
                            self.cx.line(raws[first].span.start)
                        );
                        self.cx.error(n.val.start, msg, "expected unique job names");
                    } else {
                        by_name.insert(n.v.clone(), i);
                    }
                }
                None if !j.keys.contains_key("name") => {
                    self.cx.error(
                        j.span.start,
                        format!("job #{} has no `name`", i + 1),
                        "expected `name = \"...\"` in every [[jobs]] table",
                    );
                }
                None => {}
            }
        }

        let mut checked: Vec<Option<Checked>> = raws.iter().map(|j| self.check_job(j, pools)).collect();
        for (j, c) in raws.iter().zip(checked.iter_mut()) {
            // A job that is wrong already said so; its variants would
            // repeat what they take from it.
            if let Some(c) = c {
                let vs = self.variants(j, c, pools);
                c.variants = vs;
            }
        }

        let known: Vec<&str> = raws
            .iter()
            .enumerate()
            .filter_map(|(i, j)| {
                j.name
                    .as_ref()
                    .filter(|n| by_name.get(&n.v) == Some(&i))
                    .map(|n| n.v.as_str())
            })
            .collect();
        for j in raws {
            for a in &j.after {
                if !by_name.contains_key(&a.v) {
                    let hint = suggest(&a.v, known.iter().copied())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    let msg = format!("{} waits for unknown job `{}`{hint}", j.label(), a.v);
                    self.cx.error(
                        a.val.start,
                        msg,
                        format!("expected names of jobs in this file: {}", list(&known)),
                    );
                }
            }
        }
        self.check_cycles(raws, &by_name);

        // Bounded before expansion: `count = 100000000` would otherwise
        // build every copy before anything is said.
        let mut total: u64 = 0;
        for j in raws {
            total += u64::from(j.count.as_ref().map_or(1, |c| c.v));
            if total > MAX_JOBS {
                let at = j.count.as_ref().map_or(j.span.start, |c| c.val.start);
                self.cx.error(
                    at,
                    format!("{} takes the workload to {total} jobs or more", j.label()),
                    format!("expected at most {MAX_JOBS} jobs in all, copies made by `count` included"),
                );
                break;
            }
        }

        if !self.cx.diags.is_empty() {
            return Vec::new();
        }
        expand(raws, checked, &by_name, self.cx)
    }

    fn check_job(&mut self, j: &RawJob, pools: &[Pool]) -> Option<Checked> {
        let label = j.label();
        let kernel_key = j.keys.get("kernel");
        let command_key = j.keys.get("command");

        // The program may be wrong while pool and cores are still worth checking.
        let program = match (kernel_key, command_key) {
            (Some(k), Some(c)) => {
                let later = if k.start > c.start { k } else { c };
                self.cx.error(later.start, format!("{label} has both `kernel` and `command`"), "expected exactly one of them: a kernel of the catalogue or an external command");
                None
            }
            (None, None) => {
                self.cx.error(
                    j.span.start,
                    format!("{label} has neither `kernel` nor `command`"),
                    format!(
                        "expected `kernel = \"NAME\"` (one of: {}) or `command = \"...\"`",
                        kernel::kernel_names()
                    ),
                );
                None
            }
            (Some(_), None) => j
                .kernel
                .as_ref()
                .and_then(|spec| self.kernel_program(j, spec.v)),
            (None, Some(_)) => {
                for key in ["params", "work", "seconds"] {
                    if let Some(at) = j.keys.get(key) {
                        self.cx.error(at.start, format!("`{key}` applies only to kernel jobs, and {label} runs a command"), format!("expected no `{key}`: a command's work is fixed by the command itself"));
                    }
                }
                let threads = j.threads.as_ref().map_or(1, |t| t.v);
                j.command.as_ref().map(|c| {
                    (
                        Program::Command { argv: c.v.clone() },
                        Amount::Intrinsic,
                        threads,
                    )
                })
            }
        };
        let threads = j.threads.as_ref().map_or(1, |t| t.v);
        let width = program.as_ref().map_or(threads, |p| p.2);

        let pool = match &j.pool {
            Some(p) => {
                match pools.iter().find(|q| q.name == p.v) {
                    Some(q) => q,
                    None => {
                        let hint = suggest(&p.v, pools.iter().map(|q| q.name.as_str()))
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default();
                        let names = list(pools.iter().map(|q| q.name.as_str()));
                        self.cx.error(p.val.start, format!("unknown pool `{}`{hint}", p.v), format!("expected one of the pools: {names} (declare others under [[pools]])"));
                        return None;
                    }
                }
            }
            None => pools.iter().find(|q| q.kind == PoolKind::Cpu)?,
        };

        let cores = match &j.cores {
            Some(c) if c.v < width => {
                let what = if width == threads {
                    format!("{width} threads")
                } else {
                    format!("{width} threads in its widest phase")
                };
                let got = if c.v == 1 {
                    "1 core".to_string()
                } else {
                    format!("{} cores", c.v)
                };
                self.cx.error(c.val.start, format!("{label} gets {got} but runs {what}"), format!("expected cores >= {width}: each thread of a pinned job needs a core of its own"));
                return None;
            }
            Some(c) => c.v,
            None => width,
        };
        if let Some(pc) = pool.cores {
            if cores > pc {
                let at = j
                    .cores
                    .as_ref()
                    .map(|c| c.val.start)
                    .or_else(|| j.threads.as_ref().map(|t| t.val.start))
                    .or_else(|| {
                        j.params
                            .iter()
                            .find(|p| p.key == "phases")
                            .map(|p| p.val.start)
                    })
                    .unwrap_or(j.span.start);
                let unit = if matches!(pool.kind, PoolKind::Accelerator { .. }) {
                    "slots"
                } else {
                    "cores"
                };
                self.cx.error(
                    at,
                    format!(
                        "{label} needs {cores} {unit} but pool `{}` has {pc}",
                        pool.name
                    ),
                    format!("expected at most {pc}: fewer threads or cores, or a bigger pool"),
                );
                return None;
            }
        }
        if let Some(p) = &j.pids {
            if p.v <= u64::from(width) {
                self.cx.error(
                    p.val.start,
                    format!("{label} may have {} processes and threads at once but runs {width} threads", p.v),
                    format!("expected pids >= {}: each thread counts, and the process itself", width + 1),
                );
                return None;
            }
        }
        let (program, amount, _) = program?;
        Some(Checked {
            program,
            amount,
            threads,
            cores,
            pool: pool.name.clone(),
            variants: Vec::new(),
        })
    }

    /// The job's `[[jobs.variants]]`, each checked as a job is, with what
    /// it does not say taken from the job.
    fn variants(&mut self, j: &RawJob, own: &Checked, pools: &[Pool]) -> Vec<Variant> {
        let mut out: Vec<Variant> = Vec::new();
        let mut names: Vec<(String, Option<usize>)> = vec![(variant_name(&own.pool, own.cores), None)];
        for (k, (span, entries)) in j.variant_tables.iter().enumerate() {
            let label = format!("variant {} of {}", k + 2, j.label());
            let mut v = self.raw_job(j.index, span, entries, VARIANT_KEYS, Some(label.clone()));
            let own_program = v.keys.contains_key("kernel") || v.keys.contains_key("command");
            if !own_program {
                // The job's program: its kernel or command, and what sizes it,
                // unless the variant changes that.
                v.kernel = j.kernel.clone();
                v.command = j.command.clone();
                for key in ["kernel", "command"] {
                    if let Some(s) = j.keys.get(key) {
                        v.keys.insert(key, s.clone());
                    }
                }
                if !v.keys.contains_key("params") {
                    v.params = j.params.clone();
                }
                if !v.keys.contains_key("work") && !v.keys.contains_key("seconds") {
                    v.work = j.work.clone();
                    v.seconds = j.seconds.clone();
                    for key in ["work", "seconds"] {
                        if let Some(s) = j.keys.get(key) {
                            v.keys.insert(key, s.clone());
                        }
                    }
                }
                if !v.keys.contains_key("threads") {
                    v.threads = j.threads.clone();
                }
            }
            if !v.keys.contains_key("pool") {
                v.pool = j.pool.clone();
            }
            if let (Some(sp), Some(se)) = (&v.speed, entries.iter().find(|e| e.key == "seconds")) {
                let at = sp.key.start.max(se.key_span.start);
                self.cx.error(at, format!("{label} says both `speed` and `seconds`"), "expected one of them: `speed` relative to the job's own way, or `seconds` alone on the node");
                continue;
            }
            let Some(c) = self.check_job(&v, pools) else { continue };
            let name = match &v.name {
                Some(n) => n.v.clone(),
                None if v.keys.contains_key("name") => continue,
                None => variant_name(&c.pool, c.cores),
            };
            if let Some((_, first)) = names.iter().find(|(n, _)| *n == name) {
                let at = v.name.as_ref().map_or(span.start, |n| n.val.start);
                let first = match first {
                    Some(i) => format!("variant {}", i + 2),
                    None => "the job's own way".to_string(),
                };
                self.cx.error(at, format!("{label} is named `{name}`, as is {first}"), "expected unique names among a job's ways (`name = \"...\"`; the default is POOL/CORES)");
                continue;
            }
            names.push((name.clone(), Some(k)));
            // Sized by the job's `seconds` and faster by `speed`: it runs
            // that much shorter, so its solo time is what `speed` says.
            let amount = match (c.amount, &v.speed, own_program || entries.iter().any(|e| e.key == "seconds")) {
                (Amount::Seconds(s), Some(x), false) => Amount::Seconds(s / x.v),
                (a, ..) => a,
            };
            out.push(Variant {
                name,
                program: c.program,
                amount,
                threads: c.threads,
                cores: c.cores,
                pool: c.pool,
                speed: v.speed.as_ref().map(|s| s.v),
                line: self.cx.line(span.start),
            });
        }
        out
    }

    /// Program, amount and width (threads at the widest) of a kernel job.
    fn kernel_program(
        &mut self,
        j: &RawJob,
        spec: &'static KernelSpec,
    ) -> Option<(Program, Amount, u32)> {
        let label = j.label();
        let mut ok = true;
        let mut given = BTreeMap::new();
        for p in &j.params {
            let Some(ps) = spec.param(&p.key) else {
                let expected = if spec.params.is_empty() {
                    format!("expected no `params`: kernel `{}` takes none", spec.name)
                } else {
                    format!("expected one of its parameters: {}", spec.param_names())
                };
                let hint = suggest(&p.key, spec.params.iter().map(|q| q.name))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                self.cx.error(
                    p.key_span.start,
                    format!("kernel `{}` has no parameter `{}`{hint}", spec.name, p.key),
                    expected,
                );
                ok = false;
                continue;
            };
            let expected = format!("expected {} ({})", ps.kind.expected(), ps.help);
            let Some(text) = &p.text else {
                self.cx.error(
                    p.val.start,
                    format!(
                        "wrong type for parameter `{}` of kernel `{}`: found {}",
                        p.key, spec.name, p.found
                    ),
                    expected,
                );
                ok = false;
                continue;
            };
            if let Err(e) = ps.kind.check(text) {
                self.cx.error(
                    p.val.start,
                    format!(
                        "bad value for parameter `{}` of kernel `{}`: {e}",
                        p.key, spec.name
                    ),
                    expected,
                );
                ok = false;
                continue;
            }
            if spec.name == "phased" && ps.name == "phases" {
                if let Err(e) = kernel::parse_phases(text) {
                    self.cx.error(
                        p.val.start,
                        format!("bad value for parameter `phases` of kernel `phased`: {e}"),
                        expected,
                    );
                    ok = false;
                    continue;
                }
            }
            if let Some(bytes) = param_bytes(spec.name, ps.name, text) {
                let (max_mib, what) = self.memory_bound();
                if bytes > u128::from(max_mib) << 20 {
                    self.cx.error(
                        p.val.start,
                        format!("parameter `{}` of kernel `{}` asks for {} MiB of memory", p.key, spec.name, bytes >> 20),
                        format!("expected at most {max_mib} MiB ({what})"),
                    );
                    ok = false;
                    continue;
                }
            }
            given.insert(p.key.clone(), text.clone());
        }

        let threads = j.threads.as_ref().map_or(1, |t| t.v);
        if threads > 1 && !spec.threaded {
            let at = j.threads.as_ref().expect("threads > 1 was given").val.start;
            let threaded: Vec<&str> = KERNELS
                .iter()
                .filter(|k| k.threaded)
                .map(|k| k.name)
                .collect();
            self.cx.error(
                at,
                format!(
                    "kernel `{}` is single-threaded, so {label} cannot run {threads} threads",
                    spec.name
                ),
                format!(
                    "expected threads = 1; threaded kernels: {}",
                    threaded.join(", ")
                ),
            );
            ok = false;
        }

        let amount = match (
            &j.work,
            &j.seconds,
            j.keys.get("work"),
            j.keys.get("seconds"),
        ) {
            (_, _, Some(w), Some(s)) => {
                let later = if w.start > s.start { w } else { s };
                self.cx.error(later.start, format!("{label} has both `work` and `seconds`"), "expected one of them: `work` for fixed units, `seconds` for a solo duration from calibration");
                None
            }
            (None, None, None, None) => {
                let at = j.kernel.as_ref().map_or(j.span.start, |k| k.key.start);
                self.cx.error(
                    at,
                    format!("kernel {label} says neither `work` nor `seconds`"),
                    format!(
                        "expected `work = N` (units of {}) or `seconds = S`",
                        spec.unit
                    ),
                );
                None
            }
            (Some(w), _, _, _) => Some(Amount::Work(w.v)),
            (_, Some(s), _, _) => Some(Amount::Seconds(s.v)),
            // The key is there but its value was rejected (already reported).
            _ => None,
        };
        if !ok {
            return None;
        }
        let amount = amount?;

        let resolved = match spec.resolve_params(&given) {
            Ok(r) => r,
            Err(e) => {
                self.cx.error(
                    j.keys.get("params").map_or(j.span.start, |k| k.start),
                    e,
                    "expected parameters the kernel accepts",
                );
                return None;
            }
        };
        let params: BTreeMap<String, String> = resolved
            .into_iter()
            .map(|(k, v)| {
                let kind = spec.param(&k).map(|p| p.kind);
                (k, canonical(kind, v))
            })
            .collect();
        let mut width = threads;
        if spec.name == "phased" {
            if let Some(phases) = params
                .get("phases")
                .and_then(|p| kernel::parse_phases(p).ok())
            {
                width = width.max(phases.iter().map(|p| p.threads).max().unwrap_or(1));
            }
        }
        if width > MAX_CPUS {
            let at = j.keys.get("params").map_or(j.span.start, |k| k.start);
            self.cx.error(at, format!("{label} runs {width} threads in its widest phase"), format!("expected at most {MAX_CPUS}"));
            return None;
        }
        Some((
            Program::Kernel {
                name: spec.name.to_string(),
                params,
            },
            amount,
            width,
        ))
    }

    fn check_cycles(&mut self, raws: &[RawJob], by_name: &HashMap<String, usize>) {
        // Edges only between jobs that resolved to a unique name; the rest
        // are already reported.
        let edges: Vec<Vec<usize>> = raws
            .iter()
            .enumerate()
            .map(|(i, j)| {
                if j.name.as_ref().and_then(|n| by_name.get(&n.v)) != Some(&i) {
                    return Vec::new();
                }
                j.after
                    .iter()
                    .filter_map(|a| by_name.get(&a.v).copied())
                    .collect()
            })
            .collect();

        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnPath,
            Done,
        }
        let mut mark = vec![Mark::New; raws.len()];
        let mut cycles: Vec<Vec<usize>> = Vec::new();
        for start in 0..raws.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: dependency chains in generated
            // workloads can be far deeper than the stack allows recursion.
            let mut path: Vec<(usize, usize)> = vec![(start, 0)];
            mark[start] = Mark::OnPath;
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                if *next < edges[node].len() {
                    let to = edges[node][*next];
                    *next += 1;
                    match mark[to] {
                        Mark::New => {
                            mark[to] = Mark::OnPath;
                            path.push((to, 0));
                        }
                        Mark::OnPath => {
                            let from = path
                                .iter()
                                .position(|(n, _)| *n == to)
                                .expect("on the path");
                            let mut cycle: Vec<usize> =
                                path[from..].iter().map(|(n, _)| *n).collect();
                            // Start at the job declared first, so one cycle reads the same however it was found.
                            let first = cycle
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, n)| **n)
                                .map(|(i, _)| i)
                                .unwrap_or(0);
                            cycle.rotate_left(first);
                            if !cycles.contains(&cycle) {
                                cycles.push(cycle);
                            }
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    path.pop();
                }
            }
        }

        for cycle in cycles {
            let name = |i: usize| {
                raws[i]
                    .name
                    .as_ref()
                    .map_or("?", |n| n.v.as_str())
                    .to_string()
            };
            let mut names: Vec<String> = cycle.iter().map(|&i| name(i)).collect();
            names.push(name(cycle[0]));
            if names.len() > MAX_LISTED {
                let hidden = names.len() - 10;
                names.splice(5..names.len() - 5, [format!("... ({hidden} more)")]);
            }
            let head = &raws[cycle[0]];
            let next = name(*cycle.get(1).unwrap_or(&cycle[0]));
            let at = head
                .after
                .iter()
                .find(|a| a.v == next)
                .map_or(head.span.start, |a| a.val.start);
            self.cx.error(at, format!("dependency cycle: {} (each job waits for the next)", names.join(" -> ")), "expected `after` lists that never lead back to the same job; remove one of these dependencies");
        }
    }
}

/// Memory a kernel parameter makes the job allocate, bytes, when it sizes
/// memory: `*_mib` and `*_kib` sizes, and dgemm's three n x n matrices.
fn param_bytes(kernel: &str, param: &str, value: &str) -> Option<u128> {
    let v: u128 = value.trim().parse::<u64>().ok()?.into();
    if param.ends_with("_mib") {
        Some(v << 20)
    } else if param.ends_with("_kib") {
        Some(v << 10)
    } else if kernel == "dgemm" && param == "n" {
        Some(3 * 8 * v * v)
    } else {
        None
    }
}

/// One spelling per value, so equal parameters make equal program keys
/// (`intensity = 1` and the default `"1.0"` are the same program).
fn canonical(kind: Option<ParamKind>, v: String) -> String {
    match kind {
        Some(ParamKind::Uint) => v.parse::<u64>().map(|n| n.to_string()).unwrap_or(v),
        Some(ParamKind::Float) => v.parse::<f64>().map(|f| format!("{f:?}")).unwrap_or(v),
        _ => v,
    }
}

fn default_name(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty() && *s != "-")
        .unwrap_or("workload")
        .to_string()
}

/// Turns checked jobs into the final list, one job per copy.
fn expand(
    raws: &[RawJob],
    checked: Vec<Option<Checked>>,
    by_name: &HashMap<String, usize>,
    cx: &Cx,
) -> Vec<Job> {
    let copies = |i: usize| -> Vec<String> {
        let j = &raws[i];
        let base = &j.name.as_ref().expect("valid workloads name every job").v;
        match j.count.as_ref().map_or(1, |c| c.v) {
            1 => vec![base.clone()],
            n => (1..=n).map(|k| format!("{base}.{k}")).collect(),
        }
    };
    let mut jobs = Vec::new();
    for (i, (j, c)) in raws.iter().zip(checked).enumerate() {
        let c = c.expect("valid workloads check every job");
        let after: Vec<String> = j.after.iter().flat_map(|a| copies(by_name[&a.v])).collect();
        for name in copies(i) {
            jobs.push(Job {
                name,
                base_name: j.name.as_ref().expect("named").v.clone(),
                program: c.program.clone(),
                amount: c.amount,
                threads: c.threads,
                cores: c.cores,
                pool: c.pool.clone(),
                arrival: j.arrival.as_ref().map_or(0.0, |a| a.v),
                after: after.clone(),
                timeout: j.timeout.as_ref().map(|t| t.v),
                memory_mib: j.memory_mib.as_ref().map(|m| m.v),
                pids: j.pids.as_ref().map(|p| p.v),
                priority: j.priority.as_ref().map_or(1, |p| p.v),
                line: cx.line(j.span.start),
                env: j.env.iter().cloned().collect(),
                workdir: j.workdir.clone(),
                stdout: j.stdout.clone(),
                stderr: j.stderr.clone(),
                variants: c.variants.clone(),
            });
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_not_unrelated_words() {
        assert_eq!(suggest("threds", JOB_KEYS.iter().copied()), Some("threads"));
        assert_eq!(
            suggest("strem", KERNELS.iter().map(|k| k.name)),
            Some("stream")
        );
        assert_eq!(suggest("nmae", JOB_KEYS.iter().copied()), Some("name"));
        assert_eq!(suggest("banana", JOB_KEYS.iter().copied()), None);
    }

    #[test]
    fn canonical_spelling_merges_equal_numbers() {
        assert_eq!(canonical(Some(ParamKind::Float), "1".into()), "1.0");
        assert_eq!(canonical(Some(ParamKind::Float), "1.0".into()), "1.0");
        assert_eq!(canonical(Some(ParamKind::Uint), "064".into()), "64");
        assert_eq!(canonical(Some(ParamKind::Text), "064".into()), "064");
    }

    #[test]
    fn default_name_is_the_file_stem() {
        assert_eq!(default_name("examples/mixed.toml"), "mixed");
        assert_eq!(default_name(""), "workload");
        assert_eq!(default_name("-"), "workload");
    }
}
