//! Validation and resolution of a workload's TOML tree.
//!
//! The walk goes in passes (shapes and types, names, per-job meaning,
//! dependencies) so that one mistake is reported once, where it is, instead
//! of cascading into errors about everything that depends on it.

mod check;
mod jobs;
mod keys;
mod pools;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use super::tree::{self, Entry, Item, Lines, TreeError, Value};
use super::limits::{MAX_CPUS, MAX_ENV, MAX_JOBS, MAX_MEMORY_MIB, MAX_NAME_CHARS, MAX_PIDS, MAX_PRIORITY, MAX_SECONDS, MAX_TEXT_BYTES, MAX_VARIANTS};
use super::{variant_name, Amount, Diagnostic, Diagnostics, Job, NodeLimits, Pool, PoolKind, Program, ProgressSource, Variant, Workload, OUTPUT_PLACEHOLDERS};
use crate::kernel::{self, KernelSpec, ParamKind, KERNELS};

use keys::{list, suggest};

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
    "progress",
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
    let mut cx = Checker {
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

/// Checks a workload file: collects its diagnostics and turns byte offsets
/// into line and column.
struct Checker<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines<'a>,
    diags: Vec<Diagnostic>,
}


/// A value located in its file: where its key and the value itself are.
#[derive(Debug, Clone)]
struct Located<T> {
    v: T,
    key: Range<usize>,
    val: Range<usize>,
}

struct RawPool {
    span: Range<usize>,
    keys: HashMap<&'static str, Range<usize>>,
    name: Option<Located<String>>,
    accelerator: bool,
    cores: Option<Located<u32>>,
    host_load: Option<Located<f64>>,
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
    name: Option<Located<String>>,
    kernel: Option<Located<&'static KernelSpec>>,
    params: Vec<RawParam>,
    work: Option<Located<u64>>,
    seconds: Option<Located<f64>>,
    command: Option<Located<Vec<String>>>,
    threads: Option<Located<u32>>,
    cores: Option<Located<u32>>,
    pool: Option<Located<String>>,
    arrival: Option<Located<f64>>,
    count: Option<Located<u32>>,
    after: Vec<Located<String>>,
    timeout: Option<Located<f64>>,
    memory_mib: Option<Located<u64>>,
    pids: Option<Located<u64>>,
    priority: Option<Located<u32>>,
    env: Vec<(String, String)>,
    workdir: Option<String>,
    stdout: Option<String>,
    stderr: Option<String>,
    progress: Option<ProgressSource>,
    /// `[[jobs.variants]]` tables, checked once the job is.
    variant_tables: Vec<(Range<usize>, Vec<Entry>)>,
    speed: Option<Located<f64>>,
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
    cx: &'c mut Checker<'a>,
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
    cx: &Checker,
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
                progress: j.progress.clone(),
                variants: c.variants.clone(),
            });
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::check::canonical;
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

    #[test]
    fn a_progress_key_is_a_regex_or_a_file_and_a_bad_one_names_file_line_and_key() {
        let job = |p: &str| format!("[[jobs]]\nname = \"s\"\ncommand = \"sh -c true\"\nprogress = {p}\n");
        let parse = |p: &str| super::super::parse_workload(&job(p), "w.toml", Some(2));
        let w = parse(r"'step (\d+) of (?P<total>\d+)'").unwrap();
        assert_eq!(w.jobs[0].progress, Some(ProgressSource::Output { regex: r"step (\d+) of (?P<total>\d+)".into(), total: None }));
        let w = parse(r"{ regex = 'it=(\d+)', total = 500 }").unwrap();
        assert_eq!(w.jobs[0].progress, Some(ProgressSource::Output { regex: r"it=(\d+)".into(), total: Some(500.0) }));
        let w = parse(r#"{ file = "p.txt" }"#).unwrap();
        assert_eq!(w.jobs[0].progress, Some(ProgressSource::File { path: "p.txt".into(), total: None }));
        let w = parse(r#"{ counters = "instructions", total = 4e9 }"#).unwrap();
        assert_eq!(w.jobs[0].progress, Some(ProgressSource::Counters { total: Some(4e9) }));
        for (bad, says) in [
            (r"'step (\d+'", "is not a regular expression"),
            (r"'step \d+'", "has no capture group"),
            (r"'(?P<total>\d+) (\d+)'", "first capture group is `total`"),
            (r"{ regex = 'a(\d)', file = 'x' }", "more than one of"),
            ("{ total = 3 }", "none or more than one of"),
            (r#"{ counters = "cycles" }"#, "unknown counter `cycles`"),
            (r"{ regex = 'a(\d)', every = 1 }", "`every`"),
            ("{ file = 'p', total = 0 }", "positive"),
            ("3", "regular expression"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("w.toml:4:") && e.contains(says), "{bad}: {e}");
        }
    }
}
