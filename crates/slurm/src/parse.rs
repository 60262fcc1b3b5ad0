//! Slurm's output, parsed: the queue (`squeue --Format` with tags, and
//! `squeue --json`), the nodes (`sinfo -N -o`), finished jobs (`sacct -P`),
//! host lists and times.
//!
//! Every field a user sets (job name, comment, output path, working
//! directory, command) is untrusted text that may hold any byte: newlines,
//! separators, `AdminComment=...`. No separator a user cannot type exists
//! (`sbatch -J "$(printf 'a\x1f\n')"` is accepted), so the queue is read
//! either with a tag after each field that no user can write
//! ([`QueueFormat`]: a nonce drawn per reading, which `serve` uses), or as
//! JSON ([`parse_queue_json`]), where each value is one escaped string at
//! its own key. The other readings ask for no user-set field at all
//! (`sinfo`: names and states an administrator sets; `sacct`: numbers,
//! states, times, node lists).
//!
//! `squeue --json` of 22.05 (openapi v0.0.38) ignores `-p` and `-t`: it
//! prints every job the controller knows, which is why `serve` reads the
//! tagged format (cmd.rs says why). Its numbers are plain; later releases
//! wrap some in `{"set", "infinite", "number"}` objects and print states as
//! arrays, which [`parse_queue_json`] also reads, so the schema's churn
//! costs a skipped job with its reason, never a misread one.

use std::fmt;

pub use crate::units::{expand_hostlist, format_time, parse_time};

/// Field separator of every format cosched asks Slurm for.
pub const SEP: char = '\x1f';

/// The `sinfo -N -o` format [`parse_nodes`] reads.
/// (name, CPUs, state, partition, RealMemory MB, GRES.)
pub const NODE_FORMAT: &str = "%N\x1f%c\x1f%T\x1f%P\x1f%m\x1f%G";
/// The `sacct -o` fields [`parse_sacct`] reads.
/// None is a field its user sets: every line is one job, whatever its name.
pub const SACCT_FIELDS: &str = "JobIDRaw,Partition,State,Start,End,NodeList,AllocCPUS,ExitCode,UID";

/// A parse error: which command's output, which line, what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} line {line}: {why}: `{text}`")]
pub struct ParseError {
    pub what: &'static str,
    pub line: usize,
    pub why: String,
    pub text: String,
}

/// A job's state as Slurm names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    /// Stopped by `scontrol suspend`: its cores are free to other jobs
    /// (cons_tres), its memory and processes stay on its nodes.
    Suspended,
    Completing,
    Completed,
    Cancelled,
    Failed,
    Timeout,
    NodeFail,
    OutOfMemory,
    /// Suspended, preempted, requeued, configuring, ...: kept by name.
    Other(String),
}

impl JobState {
    pub fn parse(s: &str) -> JobState {
        // sacct writes `CANCELLED by 0`.
        match s.split_whitespace().next().unwrap_or("") {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "SUSPENDED" => JobState::Suspended,
            "COMPLETING" => JobState::Completing,
            "COMPLETED" => JobState::Completed,
            "CANCELLED" => JobState::Cancelled,
            "FAILED" => JobState::Failed,
            "TIMEOUT" => JobState::Timeout,
            "NODE_FAIL" => JobState::NodeFail,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            other => JobState::Other(other.to_string()),
        }
    }

    /// The job holds cores on its nodes (running, or ending there).
    pub fn holds_cores(&self) -> bool {
        matches!(self, JobState::Running | JobState::Suspended | JobState::Completing | JobState::Other(_)) && !self.is_final()
    }

    /// The job will not run again.
    pub fn is_final(&self) -> bool {
        match self {
            JobState::Completed
            | JobState::Cancelled
            | JobState::Failed
            | JobState::Timeout
            | JobState::NodeFail
            | JobState::OutOfMemory => true,
            JobState::Other(s) => matches!(s.as_str(), "BOOT_FAIL" | "DEADLINE" | "PREEMPTED" | "REVOKED" | "SPECIAL_EXIT"),
            _ => false,
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Cancelled => "CANCELLED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Other(s) => s,
        };
        f.write_str(s)
    }
}

/// One job of `squeue --json`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueJob {
    pub id: u64,
    pub partition: String,
    pub state: JobState,
    /// Why a pending job waits (`JobHeldAdmin`, `Resources`, `None`, ...).
    pub reason: String,
    pub priority: u64,
    pub cpus: u32,
    /// Nodes it holds (running, completing), expanded.
    pub nodes: Vec<String>,
    /// Nodes it was told to run on (`scontrol update ReqNodeList=`), expanded.
    pub requested: Vec<String>,
    /// Unix seconds.
    pub submit: Option<i64>,
    /// Actual start of a started job (pending: Slurm's guess, ignored).
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The wait status of its batch script (`exit << 8 | signal`).
    pub exit_code: i64,
    /// Its dependency as Slurm shows it (`afterok:12(failed)`), empty if none.
    pub dependency: String,
    pub user_id: Option<u32>,
    pub name: String,
    pub command: String,
    pub comment: String,
    /// Slurm's AdminComment, which only administrators can set: [`HELD`]
    /// from the submission rule, or cosched's signed decision (`mark`).
    pub admin_comment: String,
    /// Where its output goes, as submitted (`%j` and the like unexpanded).
    pub stdout: String,
    /// Its working directory (relative output paths are relative to it).
    pub work_dir: String,
    /// What it asks of its nodes beyond CPUs, and whose it is.
    pub site: JobSite,
}

/// What a job asks of its nodes beyond CPUs (site constraints), whose it
/// is (sharing scopes), and its suspensions. Every reading of the queue
/// fills these; a reading that lacks one leaves its default (no demand).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSite {
    pub user: String,
    pub account: String,
    pub qos: String,
    /// Nodes it asks for (`-N`); 0 when the reading does not say (one).
    pub node_count: u32,
    /// `--mem`, megabytes per node.
    pub mem_per_node_mb: Option<u64>,
    /// `--mem-per-cpu`, megabytes per CPU.
    pub mem_per_cpu_mb: Option<u64>,
    /// `--exclusive` (Slurm's `shared` is `none`): it never shares a node.
    pub exclusive: bool,
    /// GRES per node (`--gres=gpu:1`): units per kind.
    pub gres: Vec<(String, u32)>,
    /// Seconds it ran before its last suspension or resumption.
    pub pre_sus_s: i64,
    /// Unix seconds of its last suspension or resumption.
    pub suspend_time: Option<i64>,
    /// Seconds it has run, suspended time not counted, as of the reading
    /// (squeue's TimeUsed; the tagged reading carries this instead of the
    /// two fields above).
    pub time_used_s: Option<i64>,
}

impl JobSite {
    /// Nodes it runs on (at least one).
    pub fn nodes(&self) -> u32 {
        self.node_count.max(1)
    }

    /// Megabytes it holds on each node when it runs `cpus_per_node` CPUs there.
    pub fn mem_mb(&self, cpus_per_node: u32) -> u64 {
        match (self.mem_per_node_mb, self.mem_per_cpu_mb) {
            (Some(m), _) => m,
            (None, Some(m)) => m.saturating_mul(u64::from(cpus_per_node)),
            (None, None) => 0,
        }
    }

    /// Seconds it has spent suspended by `now`, having started at `start`.
    pub fn suspended_s(&self, state: &JobState, start: Option<i64>, now: i64) -> f64 {
        if let (Some(start), Some(used)) = (start, self.time_used_s) {
            return ((now - start) - used).max(0) as f64;
        }
        let (Some(start), Some(at)) = (start, self.suspend_time) else { return 0.0 };
        // Run time: before the last suspend/resume, plus since then if it runs.
        let ran = self.pre_sus_s + if *state == JobState::Suspended { 0 } else { now - at };
        ((now - start) - ran).max(0) as f64
    }
}

/// GRES as Slurm prints them (`gres:gpu:1`, `gres/gpu:2`,
/// `gpu:tesla:2(S:0-1)`, comma-separated, `(null)` for none): units per kind.
pub fn parse_gres(s: &str) -> Vec<(String, u32)> {
    let mut plain = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let mut out: Vec<(String, u32)> = Vec::new();
    for item in plain.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let item = item.strip_prefix("gres:").or_else(|| item.strip_prefix("gres/")).unwrap_or(item);
        let parts: Vec<&str> = item.split(':').collect();
        let kind = parts[0].trim();
        if kind.is_empty() || kind == "N/A" {
            continue;
        }
        let count = if parts.len() > 1 { parts[parts.len() - 1].trim().parse().unwrap_or(1) } else { 1 };
        match out.iter_mut().find(|(k, _)| k == kind) {
            Some(e) => e.1 += count,
            None => out.push((kind.to_string(), count)),
        }
    }
    out
}

/// The AdminComment `job_submit.lua` gives a job it holds for cosched.
pub const HELD: &str = "cosched;held";
/// The start of every AdminComment that is cosched's.
pub const MARK: &str = "cosched;";

/// A hold mark of the submission rule (dist/job_submit.lua): `cosched;held`,
/// or `cosched;held;program=NAME` (NAME as the rule admits it: letters,
/// digits, `._-+`, at most 64); `Some(program)` if it is one.
pub fn held_mark(admin_comment: &str) -> Option<Option<&str>> {
    let rest = admin_comment.strip_prefix(HELD)?;
    if rest.is_empty() {
        return Some(None);
    }
    let name = rest.strip_prefix(";program=")?;
    let ok = !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
    ok.then_some(Some(name))
}

impl QueueJob {
    /// Held for cosched: pending at priority 0 with the submission rule's
    /// mark. A job its user holds (`scontrol hold`) has no mark and is left alone.
    pub fn held_for_cosched(&self) -> bool {
        self.state == JobState::Pending && self.priority == 0 && held_mark(&self.admin_comment).is_some()
    }

    /// The program the submission rule read from the batch script's
    /// `#COSCHED program=NAME` line, while the job is held for cosched.
    pub fn held_program(&self) -> Option<&str> {
        held_mark(&self.admin_comment).flatten()
    }

    /// Pending, not held, with a cosched mark: released by cosched (if its
    /// mark verifies, `tick`) or by someone else.
    pub fn released_marked(&self) -> bool {
        self.state == JobState::Pending && self.priority > 0 && self.admin_comment.starts_with(MARK)
    }

    /// Held, with a cosched mark other than the submission rule's: parked
    /// by cosched on a node (if its mark verifies, `tick`), or marked by
    /// someone else.
    pub fn held_marked(&self) -> bool {
        self.state == JobState::Pending && self.priority == 0 && self.admin_comment != HELD && self.admin_comment.starts_with(MARK)
    }

    /// Its dependency can never be met (`afterok:12(failed)`): releasing it
    /// would only reserve cores Slurm never uses.
    pub fn dependency_failed(&self) -> bool {
        self.dependency.contains("(failed)")
    }
}

/// A job of a reading that could not be read; the others are.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Its id, when that much was readable.
    pub job: Option<u64>,
    /// Its partition, when readable (jobs of other partitions are not reported).
    pub partition: Option<String>,
    pub why: String,
}

/// One node of `sinfo -N` in one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub cpus: u32,
    /// Extended state: `idle`, `mixed`, `allocated`, `drained`, `down*`, ...
    pub state: String,
    pub partition: String,
    /// `RealMemory`, megabytes (Slurm's default when unset: 1).
    pub memory_mb: u64,
    /// Its GRES (`gpu:2`): accelerator units per kind.
    pub gres: Vec<(String, u32)>,
}

impl NodeInfo {
    /// New jobs may start on it: up, responding, not draining or drained,
    /// not in maintenance or powered down. `planned` (22.05: idle, and
    /// backfill plans a pending job there) is usable: 500 short jobs on 8
    /// nodes met it, and a job released onto such a node starts there.
    pub fn usable(&self) -> bool {
        let base = self.state.trim_end_matches(|c: char| "*~#!%$@^-".contains(c));
        base == self.state && matches!(base, "idle" | "mixed" | "allocated" | "completing" | "planned")
    }
}

/// One finished (or running) job of `sacct -X`.
#[derive(Debug, Clone, PartialEq)]
pub struct AcctJob {
    pub id: u64,
    pub partition: String,
    pub state: JobState,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub nodes: Vec<String>,
    pub cpus: u32,
    /// `exit:signal`.
    pub exit: (i32, i32),
    pub user_id: Option<u32>,
}

fn fields<'a>(what: &'static str, n: usize, i: usize, line: &'a str) -> Result<Vec<&'a str>, ParseError> {
    // No field of these readings is text a user sets.
    let f: Vec<&str> = line.split(SEP).collect();
    if f.len() != n {
        return Err(ParseError { what, line: i + 1, why: format!("{} fields, expected {n}", f.len()), text: line.into() });
    }
    Ok(f)
}

fn num<T: std::str::FromStr>(what: &'static str, i: usize, line: &str, field: &str, v: &str) -> Result<T, ParseError> {
    v.trim().parse().map_err(|_| ParseError { what, line: i + 1, why: format!("{field} `{v}` is not a number"), text: line.into() })
}

/// A JSON number, plain (v0.0.38) or `{"set": true, "number": N}` (later
/// schemas); `None` when unset or infinite.
fn json_int(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_u64().map(|u| u.min(i64::MAX as u64) as i64)),
        serde_json::Value::Object(o) => {
            if o.get("set").and_then(|s| s.as_bool()) == Some(false) || o.get("infinite").and_then(|s| s.as_bool()) == Some(true) {
                return None;
            }
            o.get("number").and_then(json_int)
        }
        _ => None,
    }
}

/// One job object of `squeue --json`, each key read once at its own place.
fn queue_job(v: &serde_json::Value) -> Result<QueueJob, String> {
    let o = v.as_object().ok_or("not a JSON object")?;
    let int = |k: &str| o.get(k).and_then(json_int).ok_or_else(|| format!("`{k}` is missing or not a number"));
    let text = |k: &str| -> Result<String, String> {
        match o.get(k) {
            None | Some(serde_json::Value::Null) => Ok(String::new()),
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("`{k}` is not a string")),
        }
    };
    let time = |k: &str| o.get(k).and_then(json_int).filter(|t| *t > 0);
    let id = u64::try_from(int("job_id")?).map_err(|_| "`job_id` is negative".to_string())?;
    let state = match o.get("job_state") {
        Some(serde_json::Value::String(s)) => s.clone(),
        // Later schemas: a list of flags, the base state first.
        Some(serde_json::Value::Array(a)) => a.first().and_then(|s| s.as_str()).unwrap_or_default().to_string(),
        _ => return Err("`job_state` is missing".into()),
    };
    let hosts = |k: &str| -> Result<Vec<String>, String> { expand_hostlist(&text(k)?).map_err(|e| format!("`{k}`: {e}")) };
    Ok(QueueJob {
        id,
        partition: text("partition")?,
        state: JobState::parse(&state),
        reason: text("state_reason")?,
        priority: u64::try_from(int("priority")?).unwrap_or(0),
        cpus: u32::try_from(int("cpus")?).map_err(|_| "`cpus` is out of range".to_string())?,
        nodes: hosts("nodes")?,
        requested: hosts("required_nodes")?,
        submit: time("submit_time"),
        start: time("start_time"),
        end: time("end_time"),
        exit_code: o.get("exit_code").and_then(json_int).unwrap_or(0),
        dependency: text("dependency")?,
        user_id: o.get("user_id").and_then(json_int).and_then(|u| u32::try_from(u).ok()),
        name: text("name")?,
        command: text("command")?,
        comment: text("comment")?,
        admin_comment: text("admin_comment")?,
        stdout: text("standard_output")?,
        work_dir: text("current_working_directory")?,
        site: JobSite {
            user: text("user_name")?,
            account: text("account")?,
            qos: text("qos")?,
            // A pending job's `node_count` is Slurm's estimate (2 for `-N1
            // -n3` on nodes of two CPUs); `max_nodes`, when set, bounds it.
            node_count: {
                let n = o.get("node_count").and_then(json_int).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
                match o.get("max_nodes").and_then(json_int).and_then(|m| u32::try_from(m).ok()) {
                    Some(m) if m > 0 => n.min(m),
                    _ => n,
                }
            },
            mem_per_node_mb: o.get("memory_per_node").and_then(json_int).and_then(|m| u64::try_from(m).ok()).filter(|&m| m > 0),
            mem_per_cpu_mb: o.get("memory_per_cpu").and_then(json_int).and_then(|m| u64::try_from(m).ok()).filter(|&m| m > 0),
            exclusive: matches!(o.get("shared").and_then(|s| s.as_str()), Some("none" | "exclusive")),
            gres: parse_gres(&text("tres_per_node")?),
            pre_sus_s: o.get("pre_sus_time").and_then(json_int).unwrap_or(0),
            suspend_time: time("suspend_time"),
            time_used_s: None,
        },
    })
}

/// Parses `squeue --json`: every job it can read, and every job it cannot
/// with the reason. Only output that is not a JSON document with a `jobs`
/// list (or that carries Slurm's `errors`) fails as a whole.
pub fn parse_queue_json(out: &str) -> Result<(Vec<QueueJob>, Vec<Skipped>), ParseError> {
    const W: &str = "squeue --json";
    let short = |s: &str| s.chars().take(200).collect::<String>();
    let doc: serde_json::Value =
        serde_json::from_str(out).map_err(|e| ParseError { what: W, line: e.line(), why: format!("not JSON: {e}"), text: short(out) })?;
    if let Some(errors) = doc.get("errors").and_then(|e| e.as_array()).filter(|e| !e.is_empty()) {
        return Err(ParseError { what: W, line: 1, why: "Slurm reported errors".into(), text: short(&serde_json::to_string(errors).unwrap_or_default()) });
    }
    let list = doc.get("jobs").and_then(|j| j.as_array()).ok_or_else(|| ParseError { what: W, line: 1, why: "no `jobs` list".into(), text: short(out) })?;
    let (mut jobs, mut skipped) = (Vec::new(), Vec::new());
    for v in list {
        match queue_job(v) {
            Ok(j) => jobs.push(j),
            Err(why) => skipped.push(Skipped {
                job: v.get("job_id").and_then(json_int).and_then(|i| u64::try_from(i).ok()),
                partition: v.get("partition").and_then(|p| p.as_str()).map(str::to_string),
                why,
            }),
        }
    }
    Ok((jobs, skipped))
}

/// The fields of the queue reading ([`QueueFormat`]), in order: those of
/// [`QueueJob`], Slurm's own first, the ones users set last.
pub const QUEUE_FIELDS: [&str; 30] = [
    "JobID", "Partition", "State", "Reason", "PriorityLong", "NumCPUs", "NodeList", "ReqNodes", "SubmitTime", "StartTime",
    "EndTime", "exit_code", "Dependency", "UserId", "Name", "Comment", "admin_comment", "STDOUT", "WorkDir", "Command",
    // What site constraints read (`JobSite`). squeue's MinMemory drops
    // whether it is per node or per CPU, but is 0 when the job asked for
    // none; `tres-alloc` (a pending job's request, a running job's
    // allocation) then holds the job's whole memory.
    "UserName", "Account", "QOS", "NumNodes", "MaxNodes", "tres-alloc", "OverSubscribe", "tres-per-node", "TimeUsed", "MinMemory",
];

/// The queue as `squeue -p PARTITION --Format` prints it, each field
/// followed by a tag no user can write: `#NONCE_K#`, with a NONCE drawn
/// for each reading and passed in squeue's environment (`SQUEUE_FORMAT2`),
/// which no other user can read. Whatever bytes a user puts in a field
/// (newlines, separators, `AdminComment=...`, a tag of an earlier reading),
/// the field ends where its tag is, so no text moves a field, a job or a
/// line. Every field is printed whole (width 0: no truncation, no padding).
///
/// Why not `squeue --json`, which escapes each value on its own: in 22.05
/// it ignores `-p` and prints every job of every partition, 3 kB each, so
/// a queue of 2,000 jobs is 6 MB to format and parse each round; this
/// prints only the partition's jobs, 90 bytes each (docs/slurm.md).
#[derive(Debug, Clone)]
pub struct QueueFormat {
    nonce: String,
}

impl QueueFormat {
    /// A reading tagged with `nonce` (letters and digits, unguessable).
    pub fn new(nonce: &str) -> QueueFormat {
        QueueFormat { nonce: nonce.to_string() }
    }

    /// The tag that ends field `k` of each record.
    pub fn tag(&self, k: usize) -> String {
        format!("#{}_{k}#", self.nonce)
    }

    /// The value of `SQUEUE_FORMAT2` (`squeue --Format`).
    pub fn format(&self) -> String {
        QUEUE_FIELDS.iter().enumerate().map(|(k, f)| format!("{f}:0{}", self.tag(k))).collect::<Vec<_>>().join(",")
    }

    /// Every job of the output it can read, and every job it cannot with
    /// why. Output not made of whole tagged records fails as a whole.
    pub fn parse(&self, out: &str) -> Result<(Vec<QueueJob>, Vec<Skipped>), ParseError> {
        const W: &str = "squeue --Format";
        let tags: Vec<String> = (0..QUEUE_FIELDS.len()).map(|k| self.tag(k)).collect();
        let (mut jobs, mut skipped) = (Vec::new(), Vec::new());
        let mut rest = out;
        let mut record = 0;
        while !rest.trim().is_empty() {
            record += 1;
            let mut values = Vec::with_capacity(tags.len());
            for (k, tag) in tags.iter().enumerate() {
                let Some(at) = rest.find(tag.as_str()) else {
                    let why = format!("record {record} ends before its field {} ({})", k + 1, QUEUE_FIELDS[k]);
                    return Err(ParseError { what: W, line: record, why, text: rest.chars().take(200).collect() });
                };
                values.push(&rest[..at]);
                rest = &rest[at + tag.len()..];
            }
            rest = match rest.strip_prefix('\n') {
                Some(r) => r,
                None if rest.is_empty() => rest,
                None => {
                    let why = format!("text after record {record}");
                    return Err(ParseError { what: W, line: record, why, text: rest.chars().take(200).collect() });
                }
            };
            match tagged_job(&values) {
                Ok(j) => jobs.push(j),
                Err(why) => skipped.push(Skipped {
                    job: values[0].trim().parse().ok(),
                    partition: Some(values[1].to_string()).filter(|p| !p.is_empty()),
                    why,
                }),
            }
        }
        Ok((jobs, skipped))
    }
}

/// One record of [`QueueFormat`], its fields in [`QUEUE_FIELDS`]' order.
fn tagged_job(v: &[&str]) -> Result<QueueJob, String> {
    // squeue prints `(null)` for an unset text.
    let text = |k: usize| if v[k] == "(null)" { String::new() } else { v[k].to_string() };
    let num = |k: usize| -> Result<u64, String> {
        v[k].trim().parse().map_err(|_| format!("`{}` is not a number: `{}`", QUEUE_FIELDS[k], v[k].chars().take(40).collect::<String>()))
    };
    let hosts = |k: usize| expand_hostlist(&text(k)).map_err(|e| format!("`{}`: {e}", QUEUE_FIELDS[k]));
    Ok(QueueJob {
        id: num(0)?,
        partition: text(1),
        state: JobState::parse(v[2]),
        reason: text(3),
        priority: num(4)?,
        cpus: u32::try_from(num(5)?).map_err(|_| "`NumCPUs` is out of range".to_string())?,
        nodes: hosts(6)?,
        requested: hosts(7)?,
        submit: parse_time(v[8]),
        start: parse_time(v[9]),
        end: parse_time(v[10]),
        exit_code: v[11].trim().parse().unwrap_or(0),
        dependency: text(12),
        user_id: v[13].trim().parse().ok(),
        name: text(14),
        comment: text(15),
        admin_comment: text(16),
        stdout: text(17),
        work_dir: text(18),
        command: text(19),
        site: {
            let count = |k: usize| v[k].trim().parse::<u32>().ok();
            let node_count = match (count(23).unwrap_or(0), count(24)) {
                // A pending job's NumNodes is Slurm's estimate; MaxNodes bounds it.
                (n, Some(m)) if m > 0 => n.min(m),
                (n, _) => n,
            };
            let tres = tres_map(&text(25));
            let nodes = tres.get("node").copied().map_or(node_count.max(1) as u64, |n| n.max(1));
            JobSite {
                user: text(20),
                account: text(21),
                qos: text(22),
                node_count,
                // No memory asked for: no demand (Slurm's default, 1 MB of a
                // node declaring none, is not the job's).
                mem_per_node_mb: tres.get("mem").map(|m| m.div_ceil(nodes)).filter(|&m| m > 0 && !matches!(v[29].trim(), "0" | "" | "N/A")),
                mem_per_cpu_mb: None,
                exclusive: v[26].trim() == "NO",
                gres: parse_gres(&text(27)),
                pre_sus_s: 0,
                suspend_time: None,
                time_used_s: parse_duration(v[28]),
            }
        },
    })
}

/// `cpu=2,mem=1000M,node=1,billing=2,gres/gpu=1` as numbers per key, memory
/// in megabytes (Slurm's suffixes K, M, G, T; none is megabytes).
fn tres_map(s: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for item in s.split(',') {
        let Some((k, v)) = item.split_once('=') else { continue };
        let v = v.trim();
        let (num, unit) = v.find(|c: char| !c.is_ascii_digit() && c != '.').map_or((v, ""), |i| v.split_at(i));
        let Ok(n) = num.parse::<f64>() else { continue };
        let mb = match unit {
            "K" => n / 1024.0,
            "" | "M" => n,
            "G" => n * 1024.0,
            "T" => n * 1024.0 * 1024.0,
            _ => continue,
        };
        out.insert(k.trim().to_string(), if k.trim() == "mem" { mb.ceil() as u64 } else { n as u64 });
    }
    out
}

/// squeue's durations: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`; `INVALID` or
/// anything else: `None`.
fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<i64>().ok()?, r),
        None => (0, s),
    };
    let parts: Vec<i64> = rest.split(':').map(|p| p.parse::<i64>().ok()).collect::<Option<_>>()?;
    let secs = match parts[..] {
        [m, s] => m * 60 + s,
        [h, m, s] => h * 3600 + m * 60 + s,
        _ => return None,
    };
    Some(days * 86_400 + secs)
}

/// Parses `sinfo -h -N -o NODE_FORMAT` output.
pub fn parse_nodes(out: &str) -> Result<Vec<NodeInfo>, ParseError> {
    const W: &str = "sinfo";
    let mut nodes = Vec::new();
    for (i, line) in out.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        // Four fields from a reading without memory and GRES.
        let f = if line.split(SEP).count() == 4 { fields(W, 4, i, line)? } else { fields(W, 6, i, line)? };
        nodes.push(NodeInfo {
            name: f[0].to_string(),
            cpus: num(W, i, line, "CPUs", f[1])?,
            state: f[2].to_string(),
            partition: f[3].trim_end_matches('*').to_string(),
            memory_mb: match f.get(4) { Some(m) => num(W, i, line, "RealMemory", m)?, None => 0 },
            gres: f.get(5).map(|g| parse_gres(g)).unwrap_or_default(),
        });
    }
    Ok(nodes)
}

/// Parses `sacct -X -n -P --delimiter=SEP -o SACCT_FIELDS` output.
pub fn parse_sacct(out: &str) -> Result<Vec<AcctJob>, ParseError> {
    const W: &str = "sacct";
    let mut jobs = Vec::new();
    for (i, line) in out.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(W, 9, i, line)?;
        let (code, sig) = f[7].split_once(':').unwrap_or((f[7], "0"));
        jobs.push(AcctJob {
            id: num(W, i, line, "job id", f[0])?,
            partition: f[1].to_string(),
            state: JobState::parse(f[2]),
            start: parse_time(f[3]),
            end: parse_time(f[4]),
            nodes: expand_hostlist(f[5]).map_err(|why| ParseError { what: W, line: i + 1, why, text: line.into() })?,
            cpus: num(W, i, line, "AllocCPUS", f[6])?,
            exit: (num(W, i, line, "exit code", code)?, num(W, i, line, "exit signal", sig)?),
            user_id: f[8].trim().parse().ok(),
        });
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &[&str]) -> String {
        fields.join(&SEP.to_string())
    }

    fn queue(jobs: &[serde_json::Value]) -> String {
        serde_json::json!({ "meta": {}, "errors": [], "jobs": jobs }).to_string()
    }

    fn held_json(id: u64) -> serde_json::Value {
        serde_json::json!({
            "job_id": id, "partition": "cosched", "job_state": "PENDING", "state_reason": "JobHeldUser",
            "priority": 0, "cpus": 1, "nodes": "", "required_nodes": "n[1-2]", "submit_time": 1_795_487_400u64,
            "start_time": 0, "end_time": 0, "name": "triad", "command": "/tmp/job.sh", "comment": "cosched:triad|with a bar",
            "admin_comment": HELD, "standard_output": "/tmp/o-%j.out", "current_working_directory": "/tmp", "user_id": 1000,
            "dependency": "", "exit_code": 0,
        })
    }

    #[test]
    fn a_queue_job_reads_into_a_job_with_expanded_nodes_and_unix_times() {
        let (jobs, skipped) = parse_queue_json(&queue(&[held_json(42)])).unwrap();
        assert!(skipped.is_empty());
        let j = &jobs[0];
        assert_eq!((j.id, j.state.clone(), j.priority, j.cpus, j.user_id), (42, JobState::Pending, 0, 1, Some(1000)));
        assert!(j.nodes.is_empty());
        assert_eq!(j.requested, ["n1", "n2"]);
        assert_eq!(j.submit, Some(1_795_487_400));
        assert_eq!((j.start, j.end), (None, None));
        assert_eq!(j.comment, "cosched:triad|with a bar");
        assert!(j.held_for_cosched());
    }

    #[test]
    fn site_fields_read_from_json_as_slurm_22_05_prints_them() {
        // As printed for `sbatch --exclusive --mem=300 -N2 --gres=gpu:1`, suspended.
        let mut v = held_json(9);
        v["job_state"] = "SUSPENDED".into();
        v["start_time"] = 1000.into();
        v["shared"] = "none".into();
        v["memory_per_node"] = 300.into();
        v["memory_per_cpu"] = serde_json::Value::Null;
        v["node_count"] = 2.into();
        v["max_nodes"] = 2.into();
        v["tres_per_node"] = "gres:gpu:1".into();
        v["user_name"] = "alice".into();
        v["account"] = "physics".into();
        v["qos"] = "normal".into();
        v["pre_sus_time"] = 30.into();
        v["suspend_time"] = 1030.into();
        let (jobs, _) = parse_queue_json(&queue(&[v, held_json(10)])).unwrap();
        let s = &jobs[0].site;
        assert_eq!((s.user.as_str(), s.account.as_str(), s.qos.as_str()), ("alice", "physics", "normal"));
        assert_eq!((s.nodes(), s.mem_mb(1), s.exclusive), (2, 300, true));
        assert_eq!(s.gres, [("gpu".to_string(), 1)]);
        assert_eq!(jobs[0].state, JobState::Suspended);
        assert!(jobs[0].state.holds_cores());
        // Ran 30 s, suspended at 1030: by 1050 it has been suspended 20 s.
        assert_eq!(s.suspended_s(&jobs[0].state, jobs[0].start, 1050), 20.0);
        // Started at 990, ran 30 s, resumed at 1030: suspended 10 s.
        assert_eq!(s.suspended_s(&JobState::Running, Some(990), 1040), 10.0);
        // `-N1 -n3` on nodes of two CPUs: Slurm estimates two nodes, allows one.
        let mut one = held_json(11);
        one["node_count"] = 2.into();
        one["max_nodes"] = 1.into();
        assert_eq!(parse_queue_json(&queue(&[one])).unwrap().0[0].site.nodes(), 1);
        let plain = &jobs[1].site;
        assert_eq!((plain.nodes(), plain.mem_mb(4), plain.exclusive, plain.gres.len()), (1, 0, false, 0));
        let per_cpu = JobSite { mem_per_cpu_mb: Some(100), ..JobSite::default() };
        assert_eq!(per_cpu.mem_mb(3), 300);
    }

    #[test]
    fn gres_lists_read_as_units_per_kind() {
        assert_eq!(parse_gres("gres:gpu:1"), [("gpu".to_string(), 1)]);
        assert_eq!(parse_gres("gpu:tesla:2(S:0,1),gres/gpu:1,mps:100"), [("gpu".to_string(), 3), ("mps".to_string(), 100)]);
        assert!(parse_gres("(null)").is_empty() && parse_gres("").is_empty());
        let nodes = parse_nodes("c1\x1f4\x1fidle\x1fcosched\x1f1000\x1fgpu:2\nc2\x1f4\x1fidle\x1fcosched\n").unwrap();
        assert_eq!((nodes[0].memory_mb, nodes[0].gres.clone()), (1000, vec![("gpu".to_string(), 2)]));
        assert_eq!((nodes[1].memory_mb, nodes[1].gres.len()), (0, 0));
    }

    #[test]
    fn a_forged_admin_comment_in_a_users_fields_stays_in_those_fields() {
        // Issue 36: `scontrol show job -o` let a later word override
        // AdminComment; here each key is read once from its own place.
        let mut v = held_json(7);
        v["comment"] = "x AdminComment=cosched;policy=x;node=c9 Priority=1".into();
        v["standard_output"] = "/tmp/AdminComment=cosched;policy=x;node=c9\n".into();
        v["name"] = "a\n8\u{1f}cosched\u{1f}RUNNING".into();
        let (jobs, _) = parse_queue_json(&queue(&[v])).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].admin_comment, HELD);
        assert_eq!(jobs[0].priority, 0);
    }

    #[test]
    fn later_schemas_numbers_and_state_lists_read_and_a_bad_job_is_skipped_alone() {
        let mut v = held_json(3);
        v["priority"] = serde_json::json!({ "set": true, "infinite": false, "number": 5 });
        v["job_state"] = serde_json::json!(["PENDING", "REQUEUED"]);
        v["start_time"] = serde_json::json!({ "set": false, "infinite": false, "number": 0 });
        let mut bad = held_json(4);
        bad["cpus"] = "two".into();
        let mut no_id = held_json(5);
        no_id.as_object_mut().unwrap().remove("job_id");
        let (jobs, skipped) = parse_queue_json(&queue(&[v, bad, no_id, held_json(6)])).unwrap();
        assert_eq!(jobs.iter().map(|j| (j.id, j.priority)).collect::<Vec<_>>(), [(3, 5), (6, 0)]);
        assert_eq!(jobs[0].start, None);
        assert_eq!(skipped.len(), 2);
        assert_eq!((skipped[0].job, skipped[0].why.as_str()), (Some(4), "`cpus` is missing or not a number"));
        assert_eq!((skipped[1].job, skipped[1].why.as_str()), (None, "`job_id` is missing or not a number"));
    }

    #[test]
    fn a_hold_mark_may_name_the_program_from_the_batch_script() {
        assert_eq!(held_mark("cosched;held"), Some(None));
        assert_eq!(held_mark("cosched;held;program=stream-1.2"), Some(Some("stream-1.2")));
        for bad in ["cosched;held;program=", "cosched;held;program=a b", "cosched;heldx", "cosched;held;policy=x", "x"] {
            assert_eq!(held_mark(bad), None, "{bad}");
        }
        let mut j = parse_queue_json(&queue(&[held_json(1)])).unwrap().0.remove(0);
        j.admin_comment = "cosched;held;program=triad".into();
        assert!(j.held_for_cosched());
        assert_eq!(j.held_program(), Some("triad"));
    }

    fn tagged(f: &QueueFormat, records: &[[&str; 30]]) -> String {
        let mut out = String::new();
        for r in records {
            for (k, v) in r.iter().enumerate() {
                out.push_str(v);
                out.push_str(&f.tag(k));
            }
            out.push('\n');
        }
        out
    }

    const REC: [&str; 30] = [
        "42", "cosched", "PENDING", "JobHeldUser", "0", "2", "", "c[1-2]", "2026-11-27T15:43:00", "N/A", "N/A", "768", "(null)",
        "1000", "triad", "cosched:triad", "cosched;held", "/tmp/o-%j.out", "/tmp", "/tmp/job.sh", "alice", "(null)", "normal",
        "2", "2", "cpu=2,mem=2G,node=2,billing=2", "OK", "gres:gpu:1", "1-00:00:05", "1G",
    ];

    #[test]
    fn a_tagged_record_carries_the_site_demands_memory_per_node_from_the_whole_request() {
        let f = QueueFormat::new("n");
        let mut excl = REC;
        excl[0] = "7";
        excl[23] = "1";
        excl[25] = "cpu=4,mem=400M,node=1,billing=4";
        excl[26] = "NO";
        excl[27] = "N/A";
        excl[28] = "INVALID";
        excl[29] = "100M";
        let mut none = REC;
        none[0] = "8";
        none[25] = "cpu=1,mem=1M,node=1,billing=1";
        none[29] = "0";
        let (jobs, _) = f.parse(&tagged(&f, &[REC, excl, none])).unwrap();
        assert_eq!(jobs[2].site.mem_per_node_mb, None, "no memory asked for: no demand");
        let s = &jobs[0].site;
        assert_eq!((s.user.as_str(), s.account.as_str(), s.qos.as_str(), s.node_count), ("alice", "", "normal", 2));
        assert_eq!((s.mem_per_node_mb, s.exclusive, s.gres.clone(), s.time_used_s), (Some(1024), false, vec![("gpu".to_string(), 1)], Some(86_405)));
        let s = &jobs[1].site;
        assert_eq!((s.node_count, s.mem_per_node_mb, s.exclusive, s.gres.len(), s.time_used_s), (1, Some(400), true, 0, None));
        // Suspended time: the wall since the start less the time used.
        let mut used = JobSite { time_used_s: Some(30), ..JobSite::default() };
        assert_eq!(used.suspended_s(&JobState::Running, Some(1000), 1100), 70.0);
        used.time_used_s = None;
        assert_eq!(used.suspended_s(&JobState::Running, Some(1000), 1100), 0.0);
    }

    #[test]
    fn a_tagged_record_reads_every_field_and_a_bad_number_skips_that_job_alone() {
        let f = QueueFormat::new("n0nce");
        assert!(f.format().starts_with("JobID:0#n0nce_0#,Partition:0#n0nce_1#,"), "{}", f.format());
        let mut bad = REC;
        bad[0] = "43";
        bad[5] = "two";
        let (jobs, skipped) = f.parse(&tagged(&f, &[REC, bad])).unwrap();
        let j = &jobs[0];
        assert_eq!((j.id, j.priority, j.cpus, j.exit_code, j.user_id), (42, 0, 2, 768, Some(1000)));
        assert_eq!(j.requested, ["c1", "c2"]);
        assert_eq!((j.submit, j.start), (parse_time("2026-11-27T15:43:00"), None));
        assert_eq!((j.dependency.as_str(), j.comment.as_str(), j.admin_comment.as_str()), ("", "cosched:triad", HELD));
        assert!(j.held_for_cosched());
        assert_eq!((skipped[0].job, skipped[0].why.as_str()), (Some(43), "`NumCPUs` is not a number: `two`"));
    }

    #[test]
    fn a_users_text_holding_newlines_and_old_tags_stays_in_its_field() {
        let old = QueueFormat::new("old");
        let f = QueueFormat::new("new");
        let forged = format!("x\n99{}cosched{}RUNNING\n", old.tag(0), old.tag(1));
        let mut r = REC;
        r[14] = &forged;
        r[15] = "AdminComment=cosched;policy=x;node=c9 Priority=1\n";
        let (jobs, skipped) = f.parse(&tagged(&f, &[r, REC])).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].name.as_str(), jobs[0].admin_comment.as_str(), jobs[0].priority), (forged.as_str(), HELD, 0));
    }

    #[test]
    fn output_cut_inside_a_record_fails_as_a_whole() {
        let f = QueueFormat::new("n");
        let out = tagged(&f, &[REC]);
        let e = f.parse(&out[..out.len() / 2]).unwrap_err();
        assert!(e.to_string().starts_with("squeue --Format line 1: record 1 ends before its field"), "{e}");
        assert!(f.parse("squeue: error: x\n").is_err());
        assert_eq!(f.parse("\n").unwrap().0.len(), 0);
    }

    #[test]
    fn output_that_is_not_a_queue_fails_as_a_whole_naming_the_command() {
        let e = parse_queue_json("squeue: error: x").unwrap_err();
        assert!(e.to_string().starts_with("squeue --json line 1: not JSON"), "{e}");
        let e = parse_queue_json(r#"{"errors": [{"error": "boom"}], "jobs": []}"#).unwrap_err();
        assert!(e.why.contains("Slurm reported errors") && e.text.contains("boom"), "{e}");
    }

    #[test]
    fn a_short_line_names_the_command_the_line_and_the_count() {
        let e = parse_sacct("1\x1fcosched\x1fRUNNING\n").unwrap_err();
        assert_eq!(e.to_string(), "sacct line 1: 3 fields, expected 9: `1\x1fcosched\x1fRUNNING`");
        let bad = line(&["x", "p", "RUNNING", "N/A", "N/A", "", "1", "0:0", "0"]);
        assert!(parse_sacct(&bad).unwrap_err().why.contains("job id `x` is not a number"));
    }

    #[test]
    fn nodes_are_usable_only_when_up_and_not_draining() {
        let out = "a\x1f2\x1fidle\x1fcosched*\nb\x1f2\x1fdrained\x1fcosched\nc\x1f2\x1fmixed\x1fcosched\nd\x1f2\x1fidle*\x1fcosched\ne\x1f4\x1fdraining\x1fcosched\nf\x1f2\x1fdown\x1fcosched\ng\x1f2\x1fplanned\x1fcosched\n";
        let nodes = parse_nodes(out).unwrap();
        assert_eq!(nodes[0].partition, "cosched");
        let usable: Vec<&str> = nodes.iter().filter(|n| n.usable()).map(|n| n.name.as_str()).collect();
        assert_eq!(usable, ["a", "c", "g"]);
    }

    #[test]
    fn an_sacct_line_reads_state_exit_code_and_times() {
        let out = line(&[
            "9", "cosched", "CANCELLED by 0", "2026-11-24T02:30:00", "2026-11-24T02:30:05", "n1", "1", "0:15", "1000",
        ]);
        let j = &parse_sacct(&out).unwrap()[0];
        assert_eq!(j.state, JobState::Cancelled);
        assert_eq!(j.exit, (0, 15));
        assert_eq!(j.end.unwrap() - j.start.unwrap(), 5);
        assert_eq!(j.nodes, ["n1"]);
        assert_eq!(j.user_id, Some(1000));
    }

    #[test]
    fn final_states_do_not_hold_cores() {
        for s in ["COMPLETED", "CANCELLED by 12", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"] {
            let st = JobState::parse(s);
            assert!(st.is_final() && !st.holds_cores(), "{s}");
        }
        assert!(JobState::Running.holds_cores() && JobState::Completing.holds_cores());
        assert!(!JobState::Pending.holds_cores());
    }
}
