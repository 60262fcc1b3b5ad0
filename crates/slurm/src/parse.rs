//! Slurm's text output, parsed: the queue (`squeue -o`), the nodes (`sinfo
//! -N -o`), finished jobs (`sacct -P`), host lists and times.
//!
//! Text, not `--json`: Debian 12's Slurm 22.05 prints JSON only through
//! its `data_parser` plugins, whose schema (v0.0.38) changed in every
//! release since, while the format letters read here have been stable for
//! a decade. Every command is asked for exactly the fields parsed, joined
//! by [`SEP`] (the ASCII unit separator: no job name or comment a shell
//! user types holds one), with the free-text fields last.

use std::fmt;

/// Field separator of every format cosched asks Slurm for.
pub const SEP: char = '\x1f';

/// The `squeue -o` format [`parse_queue`] reads.
pub const QUEUE_FORMAT: &str = "%A\x1f%P\x1f%T\x1f%r\x1f%Q\x1f%C\x1f%N\x1f%n\x1f%V\x1f%S\x1f%e\x1f%j\x1f%o\x1f%k";
/// The `sinfo -N -o` format [`parse_nodes`] reads.
pub const NODE_FORMAT: &str = "%N\x1f%c\x1f%T\x1f%P";
/// The `sacct -o` fields [`parse_sacct`] reads.
pub const SACCT_FIELDS: &str = "JobIDRaw,Partition,State,Start,End,NodeList,AllocCPUS,ExitCode,JobName,Comment";

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
        matches!(self, JobState::Running | JobState::Completing | JobState::Other(_)) && !self.is_final()
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

/// One job of `squeue`.
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
    pub name: String,
    pub command: String,
    pub comment: String,
    /// Slurm's AdminComment (from `scontrol show job`, which squeue does
    /// not print): [`HELD`] from the submission rule, or cosched's decision.
    pub admin_comment: String,
    /// Where its output goes (`scontrol show job`'s StdOut), empty if unknown.
    pub stdout: String,
}

/// The AdminComment `job_submit.lua` gives a job it holds for cosched.
pub const HELD: &str = "cosched;held";
/// The start of the AdminComment of a job cosched released.
pub const RELEASED: &str = "cosched;policy=";

impl QueueJob {
    /// Held for cosched: pending at priority 0 with the submission rule's
    /// mark. A job its user holds (`scontrol hold`) has no mark and is left alone.
    pub fn held_for_cosched(&self) -> bool {
        self.state == JobState::Pending && self.priority == 0 && self.admin_comment == HELD
    }

    /// Released by cosched and not started yet.
    pub fn released_pending(&self) -> bool {
        self.state == JobState::Pending && self.priority > 0 && self.admin_comment.starts_with(RELEASED)
    }

    /// Marked for cosched, but its hold was lifted by someone else (its
    /// user's `scontrol release`): cosched holds it again.
    pub fn escaped(&self) -> bool {
        self.state == JobState::Pending && self.priority > 0 && self.admin_comment == HELD
    }
}

/// One node of `sinfo -N` in one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub cpus: u32,
    /// Extended state: `idle`, `mixed`, `allocated`, `drained`, `down*`, ...
    pub state: String,
    pub partition: String,
}

impl NodeInfo {
    /// New jobs may start on it: up, responding, not draining or drained,
    /// not in maintenance or powered down.
    pub fn usable(&self) -> bool {
        let base = self.state.trim_end_matches(|c: char| "*~#!%$@^-".contains(c));
        base == self.state && matches!(base, "idle" | "mixed" | "allocated" | "completing")
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
    pub name: String,
    pub comment: String,
}

fn fields<'a>(what: &'static str, n: usize, i: usize, line: &'a str) -> Result<Vec<&'a str>, ParseError> {
    // The last field is free text and may hold anything but a newline.
    let f: Vec<&str> = line.splitn(n, SEP).collect();
    if f.len() != n {
        return Err(ParseError { what, line: i + 1, why: format!("{} fields, expected {n}", f.len()), text: line.into() });
    }
    Ok(f)
}

fn num<T: std::str::FromStr>(what: &'static str, i: usize, line: &str, field: &str, v: &str) -> Result<T, ParseError> {
    v.trim().parse().map_err(|_| ParseError { what, line: i + 1, why: format!("{field} `{v}` is not a number"), text: line.into() })
}

/// Parses `squeue -h -o QUEUE_FORMAT` output (times printed with `TZ=UTC`).
pub fn parse_queue(out: &str) -> Result<Vec<QueueJob>, ParseError> {
    const W: &str = "squeue";
    let mut jobs = Vec::new();
    for (i, line) in out.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(W, 14, i, line)?;
        let hosts = |v: &str| expand_hostlist(v).map_err(|why| ParseError { what: W, line: i + 1, why, text: line.into() });
        jobs.push(QueueJob {
            id: num(W, i, line, "job id", f[0])?,
            partition: f[1].to_string(),
            state: JobState::parse(f[2]),
            reason: f[3].to_string(),
            priority: num(W, i, line, "priority", f[4])?,
            cpus: num(W, i, line, "CPUs", f[5])?,
            nodes: hosts(f[6])?,
            requested: hosts(f[7])?,
            submit: parse_time(f[8]),
            start: parse_time(f[9]),
            end: parse_time(f[10]),
            name: f[11].to_string(),
            command: f[12].to_string(),
            comment: f[13].to_string(),
            admin_comment: String::new(),
            stdout: String::new(),
        });
    }
    Ok(jobs)
}

/// Parses `sinfo -h -N -o NODE_FORMAT` output.
pub fn parse_nodes(out: &str) -> Result<Vec<NodeInfo>, ParseError> {
    const W: &str = "sinfo";
    let mut nodes = Vec::new();
    for (i, line) in out.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(W, 4, i, line)?;
        nodes.push(NodeInfo {
            name: f[0].to_string(),
            cpus: num(W, i, line, "CPUs", f[1])?,
            state: f[2].to_string(),
            partition: f[3].trim_end_matches('*').to_string(),
        });
    }
    Ok(nodes)
}

/// Parses `sacct -X -n -P --delimiter=SEP -o SACCT_FIELDS` output.
pub fn parse_sacct(out: &str) -> Result<Vec<AcctJob>, ParseError> {
    const W: &str = "sacct";
    let mut jobs = Vec::new();
    for (i, line) in out.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f = fields(W, 10, i, line)?;
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
            name: f[8].to_string(),
            comment: f[9].to_string(),
        });
    }
    Ok(jobs)
}

/// Unix seconds of a Slurm time `YYYY-MM-DDTHH:MM:SS` printed in UTC;
/// `None` for `N/A`, `Unknown`, `None` or anything else.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let t: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 || !(1..=12).contains(&d[1]) || !(1..=31).contains(&d[2]) {
        return None;
    }
    Some(days_from_civil(d[0], d[1], d[2]) * 86_400 + t[0] * 3600 + t[1] * 60 + t[2])
}

/// `YYYY-MM-DDTHH:MM:SS` in UTC of Unix seconds, as Slurm's commands take times.
pub fn format_time(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// `scontrol show job -o` output as key=value pairs; a word without `=`
/// belongs to the value before it (values may hold spaces).
pub fn parse_show(out: &str) -> std::collections::BTreeMap<String, String> {
    let mut map = std::collections::BTreeMap::new();
    let mut last: Option<String> = None;
    for word in out.split_whitespace() {
        match word.split_once('=') {
            Some((k, v)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == ':' || c == '/') => {
                map.insert(k.to_string(), v.to_string());
                last = Some(k.to_string());
            }
            _ => {
                if let Some(v) = last.as_ref().and_then(|k| map.get_mut(k)) {
                    v.push(' ');
                    v.push_str(word);
                }
            }
        }
    }
    map
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm), so no time zone database is needed.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Expands a Slurm host list (`n[1-3,7],login`, `c[01-02]`) into names;
/// empty, `(null)`, `None assigned` and `N/A` are no hosts.
pub fn expand_hostlist(s: &str) -> Result<Vec<String>, String> {
    let s = s.trim();
    if s.is_empty() || s == "(null)" || s == "N/A" || s.starts_with("None") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in s.chars().chain(std::iter::once(',')) {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            expand_one(&item, &mut out)?;
            item.clear();
        } else {
            item.push(c);
        }
        if depth < 0 {
            return Err(format!("host list `{s}`: `]` without `[`"));
        }
    }
    if depth != 0 {
        return Err(format!("host list `{s}`: unclosed `[`"));
    }
    Ok(out)
}

fn expand_one(item: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = item.find('[') else {
        if !item.is_empty() {
            out.push(item.to_string());
        }
        return Ok(());
    };
    let close = item.find(']').ok_or_else(|| format!("host `{item}`: unclosed `[`"))?;
    let (prefix, ranges, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    for r in ranges.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let bad = || format!("host `{item}`: `{r}` is not a number or a range");
        let (lo, hi): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if hi < lo {
            return Err(bad());
        }
        for n in lo..=hi {
            // Zero-padded ranges (`c[01-10]`) keep their width.
            out.push(format!("{prefix}{n:0width$}{suffix}", width = a.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &[&str]) -> String {
        fields.join(&SEP.to_string())
    }

    #[test]
    fn a_queue_line_reads_into_a_job_with_expanded_nodes_and_utc_times() {
        let out = line(&[
            "42", "cosched", "PENDING", "JobHeldAdmin", "0", "1", "", "n[1-2]", "2026-11-24T02:30:00", "N/A", "Unknown",
            "triad", "/tmp/job.sh", "cosched:triad|with a bar",
        ]) + "\n";
        let jobs = parse_queue(&out).unwrap();
        assert_eq!(jobs.len(), 1);
        let j = &jobs[0];
        assert_eq!((j.id, j.state.clone(), j.priority, j.cpus), (42, JobState::Pending, 0, 1));
        assert!(j.nodes.is_empty());
        assert_eq!(j.requested, ["n1", "n2"]);
        assert_eq!(j.submit, Some(1_795_487_400));
        assert_eq!((j.start, j.end), (None, None));
        assert_eq!(j.comment, "cosched:triad|with a bar");
    }

    #[test]
    fn only_the_submission_rule_s_mark_makes_a_held_job_cosched_s() {
        let out = line(&["7", "cosched", "PENDING", "JobHeldUser", "0", "1", "", "", "N/A", "N/A", "N/A", "x", "x", ""]);
        let mut j = parse_queue(&out).unwrap().remove(0);
        assert!(!j.held_for_cosched(), "a job its user holds");
        j.admin_comment = HELD.into();
        assert!(j.held_for_cosched() && !j.escaped());
        j.priority = 1000;
        assert!(j.escaped() && !j.released_pending());
        j.admin_comment = format!("{RELEASED}noplan;node=n1;beside=-;predicted=1.000");
        assert!(j.released_pending());
    }

    #[test]
    fn a_short_line_names_the_command_the_line_and_the_count() {
        let e = parse_queue("1\x1fcosched\x1fRUNNING\n").unwrap_err();
        assert_eq!(e.to_string(), "squeue line 1: 3 fields, expected 14: `1\x1fcosched\x1fRUNNING`");
        let bad = line(&["x", "p", "RUNNING", "None", "1", "1", "", "", "N/A", "N/A", "N/A", "a", "b", "c"]);
        assert!(parse_queue(&bad).unwrap_err().why.contains("job id `x` is not a number"));
    }

    #[test]
    fn nodes_are_usable_only_when_up_and_not_draining() {
        let out = "a\x1f2\x1fidle\x1fcosched*\nb\x1f2\x1fdrained\x1fcosched\nc\x1f2\x1fmixed\x1fcosched\nd\x1f2\x1fidle*\x1fcosched\ne\x1f4\x1fdraining\x1fcosched\nf\x1f2\x1fdown\x1fcosched\n";
        let nodes = parse_nodes(out).unwrap();
        assert_eq!(nodes[0].partition, "cosched");
        let usable: Vec<&str> = nodes.iter().filter(|n| n.usable()).map(|n| n.name.as_str()).collect();
        assert_eq!(usable, ["a", "c"]);
    }

    #[test]
    fn an_sacct_line_reads_state_exit_code_and_times() {
        let out = line(&[
            "9", "cosched", "CANCELLED by 0", "2026-11-24T02:30:00", "2026-11-24T02:30:05", "n1", "1", "0:15", "stream", "",
        ]);
        let j = &parse_sacct(&out).unwrap()[0];
        assert_eq!(j.state, JobState::Cancelled);
        assert_eq!(j.exit, (0, 15));
        assert_eq!(j.end.unwrap() - j.start.unwrap(), 5);
        assert_eq!(j.nodes, ["n1"]);
    }

    #[test]
    fn host_lists_expand_ranges_lists_and_padding() {
        assert_eq!(expand_hostlist("n[1-3,7],login").unwrap(), ["n1", "n2", "n3", "n7", "login"]);
        assert_eq!(expand_hostlist("c[08-10]").unwrap(), ["c08", "c09", "c10"]);
        assert_eq!(expand_hostlist("(null)").unwrap(), Vec::<String>::new());
        assert!(expand_hostlist("n[1-").is_err());
        assert!(expand_hostlist("n[3-1]").is_err());
    }

    #[test]
    fn times_are_unix_seconds_and_placeholders_are_none() {
        assert_eq!(parse_time("1970-01-01T00:00:00"), Some(0));
        assert_eq!(parse_time("2000-03-01T00:00:01"), Some(951_868_801));
        for s in ["N/A", "Unknown", "None", "2026-13-01T00:00:00", ""] {
            assert_eq!(parse_time(s), None, "{s}");
        }
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

    #[test]
    fn show_job_reads_keys_and_values_with_spaces() {
        let m = parse_show("JobId=12 JobName=a b Comment=cosched:triad StdOut=/tmp/x.out\n");
        assert_eq!(m["JobName"], "a b");
        assert_eq!(m["Comment"], "cosched:triad");
        assert_eq!(m["StdOut"], "/tmp/x.out");
    }

    proptest::proptest! {
        #[test]
        fn a_formatted_time_parses_back(t in 0i64..4_000_000_000) {
            proptest::prop_assert_eq!(parse_time(&format_time(t)), Some(t));
        }

        #[test]
        fn a_written_range_expands_to_every_number_in_it(lo in 0u64..500, len in 0u64..20) {
            let hi = lo + len;
            let hosts = expand_hostlist(&format!("n[{lo}-{hi}]")).unwrap();
            proptest::prop_assert_eq!(hosts.len() as u64, len + 1);
            proptest::prop_assert_eq!(&hosts[0], &format!("n{lo}"));
        }

        #[test]
        fn times_of_consecutive_days_are_a_day_apart(y in 1971i64..2100, m in 1i64..13, d in 1i64..28) {
            let a = parse_time(&format!("{y:04}-{m:02}-{d:02}T00:00:00")).unwrap();
            let b = parse_time(&format!("{y:04}-{m:02}-{:02}T00:00:00", d + 1)).unwrap();
            proptest::prop_assert_eq!(b - a, 86_400);
        }
    }
}
