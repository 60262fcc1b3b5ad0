//! What several verbs share: the context of a call, opening the database,
//! reading a workload, the node's conditions at a campaign's start.

use std::path::{Path, PathBuf};

use crate::error::bad_input;
use crate::progress::Progress;

/// The git commit this build was made from, for provenance and `--version`.
pub const GIT_COMMIT: &str = env!("COSCHED_GIT_COMMIT");

/// What every call into the application carries besides its request.
pub struct Ctx<'a> {
    /// Where progress goes.
    pub progress: &'a dyn Progress,
    /// The command line as the user typed it, stored in provenance.
    pub command: String,
}

impl<'a> Ctx<'a> {
    pub fn new(progress: &'a dyn Progress, command: impl Into<String>) -> Ctx<'a> {
        Ctx { progress, command: command.into() }
    }

    /// `==> msg` through the progress reporter.
    pub fn step(&self, msg: &str) {
        self.progress.step(msg);
    }
}

/// The database path: the one given, else `$COSCHED_DB` (read by the
/// caller's argument parser), else the default location.
pub fn db_path(given: Option<&Path>) -> PathBuf {
    given.map(Path::to_path_buf).unwrap_or_else(cosched_store::default_db_path)
}

/// Where figures of verbs without a report directory (`pairs`, `probe`) go
/// by default: `figures/` beside the database they describe, never the
/// current directory (which may be a source tree or not writable).
pub fn figures_dir(db: Option<&Path>) -> PathBuf {
    let db = db_path(db);
    db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join("figures")
}

/// Opens the database, creating it when missing. A file that cannot be used
/// as the database is the user's to fix: exit code 2.
pub fn open_store(path: &Path) -> anyhow::Result<cosched_store::Store> {
    user_may_write_db(path, true)?;
    cosched_store::Store::open(path).map_err(store_input_error)
}

/// Opens an existing database; a missing one is an error, not created.
pub fn open_existing_store(path: &Path) -> anyhow::Result<cosched_store::Store> {
    user_may_write_db(path, false)?;
    cosched_store::Store::open_existing(path).map_err(store_input_error)
}

/// Under sudo, a database path the user named (`--db`, `$COSCHED_DB`) is
/// one root writes through SQLite, which opens files itself: so before it
/// does, the path is opened for writing as the invoking user (and a
/// missing file created as them when `create`), and the kernel refuses
/// what that user could not do. `--db /etc/important.db` then fails as it
/// would without sudo instead of changing a root file. cosched's own
/// default database, in root's data directory, is not the user's path.
pub fn user_may_write_db(path: &Path, create: bool) -> anyhow::Result<()> {
    let Some(user) = cosched_measure::node::invoking_user() else { return Ok(()) };
    if path == cosched_store::default_db_path() {
        return Ok(());
    }
    let shown = path.display().to_string();
    cosched_measure::files::open_database_as(path, user, create).map_err(|e| {
        bad_input(format!("{shown}: {e} (under sudo the database is opened as the invoking user, uid {})", user.0))
    })
}

/// Opens an existing database for reading only: never a write, never a
/// wait for a writer's lock (`db info`, `db export`, `simulate`).
pub fn open_read_only_store(path: &Path) -> anyhow::Result<cosched_store::Store> {
    cosched_store::Store::open_read_only(path).map_err(store_input_error)
}

/// Errors opening a database mean the path or the file is wrong (exit code
/// 2); anything else is the work failing (exit code 1).
pub fn store_input_error(e: cosched_store::StoreError) -> anyhow::Error {
    use cosched_store::StoreError as E;
    match e {
        // Where to look instead depends on how the path was chosen: --db
        // was given (no hint), $COSCHED_DB, or the default.
        E::Missing { ref path } => {
            let hint = if std::env::var_os("COSCHED_DB").is_some_and(|v| Path::new(&v) == path) {
                " or set COSCHED_DB to another database"
            } else if *path == cosched_store::default_db_path() {
                " or pass --db PATH"
            } else {
                ""
            };
            bad_input(format!("{e}{hint}"))
        }
        E::NotADatabase { .. }
        | E::TooNew { .. }
        | E::Io { .. }
        | E::Open { .. }
        | E::NoSuchTable(_)
        | E::Damaged { .. } => {
            bad_input(e.to_string())
        }
        other => other.into(),
    }
}

/// CPUs of this node.
pub fn node_cpu_count() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

/// Parses a CPU list such as `0`, `0,1` or `0-3`, checking each CPU exists.
pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let cpus = cosched_model::topology::parse_cpulist(s).map_err(|e| e.to_string())?;
    let n = node_cpu_count();
    if let Some(bad) = cpus.iter().find(|&&c| c >= n) {
        return Err(format!("CPU {bad} does not exist here (this node has CPUs 0-{})", n - 1));
    }
    if cpus.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(cpus)
}

/// Reads and validates a workload file; invalid input is exit code 2 with
/// every diagnostic as FILE:LINE:COL.
pub fn load_workload(path: &Path) -> anyhow::Result<cosched_model::workload::Workload> {
    let shown = path.display().to_string();
    let text = read_workload_text(path).map_err(|e| bad_input(format!("{shown}: {e}")))?;
    workload_of_text(&text, &shown)
}

/// A workload from its text, checked as [`load_workload`] checks a file's
/// (`shown` names it in messages): for a verb that builds its workload
/// itself (`demo`, `djsb`) and hands it on parsed.
pub fn workload_of_text(text: &str, shown: &str) -> anyhow::Result<cosched_model::workload::Workload> {
    let w = cosched_model::workload::parse_workload_on(text, shown, &node_limits(Some(node_cpu_count())))
        .map_err(|d| bad_input(d.to_string()))?;
    check_commands(&w, shown).map_err(bad_input)?;
    Ok(w)
}

/// A workload file's text: at most [`cosched_model::workload::limits::MAX_INPUT_BYTES`]
/// read, UTF-8.
pub fn read_workload_text(path: &Path) -> Result<String, String> {
    cosched_sched::scenario::read_bounded(path, cosched_model::workload::limits::MAX_INPUT_BYTES)
}

/// What this node can hold (`cores` as given, memory from /proc/meminfo);
/// a workload for another machine (`cores` given, not this node's) is
/// bounded by its cores only.
pub fn node_limits(cores: Option<u32>) -> cosched_model::workload::NodeLimits {
    let memory_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| cosched_model::topology::meminfo_total(&t))
        .map(|b| b >> 20);
    cosched_model::workload::NodeLimits { cores, memory_mib }
}

/// Every command job's program exists and is executable: as a path (with a
/// `/`, relative to the job's `workdir`), else on the job's `PATH` (its
/// `env`'s, else cosched's), so a typo is exit code 2 at `check` instead of a
/// job that fails to start. A `FILE:LINE:COL` line per job.
pub fn check_commands(w: &cosched_model::workload::Workload, shown: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let mut errors: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for j in &w.jobs {
        let cosched_model::workload::Program::Command { argv } = &j.program else { continue };
        let prog = &argv[0];
        if !seen.insert((j.base_name.clone(), prog.clone())) {
            continue;
        }
        let found = if prog.contains('/') {
            let p = Path::new(prog);
            let p = match (&j.workdir, p.is_relative()) {
                (Some(d), true) => Path::new(d).join(p),
                _ => p.to_path_buf(),
            };
            runnable(&p)
        } else {
            let path = j.env.get("PATH").cloned().or_else(|| std::env::var("PATH").ok()).unwrap_or_default();
            path.split(':').filter(|d| !d.is_empty()).any(|d| runnable(&Path::new(d).join(prog)))
        };
        if !found {
            let why = if prog.contains('/') { "no executable file there" } else { "not found on PATH" };
            errors.push(format!(
                "{shown}:{}:1: job `{}` runs `{prog}`: {why}; expected an installed program (or fix the path)",
                j.line, j.base_name
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// Reads the node's conditions now (load average, and the cache-line round
/// trip between the first two CPUs) and stores them with `campaign`, saying
/// what they were. A reading that fails is reported and skipped: it
/// explains a campaign, it is not part of it.
pub fn record_conditions(
    ctx: &Ctx,
    store: &mut cosched_store::Store,
    campaign: cosched_store::CampaignId,
    announce: bool,
) -> anyhow::Result<()> {
    let load = match cosched_measure::provenance::load_average() {
        Ok(l) => l,
        Err(e) => {
            ctx.step(&format!("node conditions not recorded: {e}"));
            return Ok(());
        }
    };
    let c2c = if node_cpu_count() >= 2 {
        match measure_round_trip() {
            Ok(ns) => Some((vec![0, 1], ns)),
            Err(e) => {
                ctx.step(&format!("core-to-core latency not measured: {e}"));
                None
            }
        }
    } else {
        None
    };
    let c = reading_now(load, c2c);
    store.add_conditions(campaign, &c)?;
    if announce {
        ctx.step(&format!("node at start: {}", describe_conditions(&c)));
    }
    Ok(())
}

/// A reading of the node taken now from its load and round trip, with the
/// kernel's huge page policy: the one place campaigns and runs fill in
/// what a reading holds besides what they measured themselves.
pub(crate) fn reading_now(load: [f64; 3], c2c: Option<(Vec<u32>, f64)>) -> cosched_store::NodeConditions {
    let taken_unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    cosched_store::NodeConditions { taken_unix, load, c2c, huge_pages: cosched_measure::provenance::huge_pages() }
}

pub use cosched_learn::campaigns::{Conditions, UsedCampaign};

/// One line per campaign, except that campaigns of one kind, workload and
/// status next to each other (a probe campaign per job, say) share a line:
/// `probe campaigns 83-104 of `apps` (22, done, started 2026-11-24
/// 09:41:10 - 10:13:52 UTC; CPU 0-1 round trip at their starts 263-339 ns)`.
pub fn describe_campaigns(used: &[UsedCampaign]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < used.len() {
        let u = &used[i];
        let mut j = i + 1;
        while j < used.len() && used[j].kind == u.kind && used[j].workload == u.workload && used[j].status == u.status {
            j += 1;
        }
        let group = &used[i..j];
        if group.len() == 1 {
            out.push(u.describe());
        } else {
            let ids: Vec<i64> = group.iter().map(|g| g.id).collect();
            let first = group.iter().map(|g| g.started_unix).min().unwrap_or(0);
            let last = group.iter().map(|g| g.started_unix).max().unwrap_or(0);
            let ns: Vec<f64> = group.iter().filter_map(|g| g.node.as_ref()?.c2c.as_ref().map(|(_, ns)| *ns)).collect();
            let trip = if ns.is_empty() {
                "no CPU round trip recorded".to_string()
            } else {
                let (lo, hi) = ns.iter().fold((f64::INFINITY, 0f64), |(l, h), v| (l.min(*v), h.max(*v)));
                format!("CPU round trip at their starts {lo:.0}-{hi:.0} ns")
            };
            let started = if first == last {
                cosched_store::format_unix_utc(first)
            } else {
                format!("{} - {}", cosched_store::format_unix_utc(first), cosched_store::format_unix_utc(last))
            };
            out.push(format!(
                "{} campaigns {} of `{}` ({}, {}, started {started} UTC; {trip})",
                u.kind,
                id_ranges(&ids),
                u.workload,
                group.len(),
                u.status,
            ));
        }
        i = j;
    }
    out
}

/// `3, 5-8, 11`.
fn id_ranges(ids: &[i64]) -> String {
    cosched_model::topology::format_ranges(ids, ", ")
}

/// Parses a sampling interval: a number with `ms` or `s` (a bare number is
/// seconds), above zero.
pub fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a duration; expected e.g. 1s, 250ms, 0.5s"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs >= 1e-3) {
        return Err(format!("`{s}`: the interval must be at least 1ms"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A job, workload or predictor name as part of a file name.
pub fn file_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect()
}

/// Writes a file for people to read, naming it in the error, by the one
/// rule for files written on a user's behalf (`cosched_measure::files`):
/// opened as the user who invoked sudo, so nothing that user could not
/// write is written; an existing file truncated in place, never through a
/// link; a new one mode 0644 whatever the umask.
pub fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    cosched_measure::files::write_file(path, text.as_bytes(), cosched_measure::node::invoking_user())
        .map_err(|e| anyhow::anyhow!("writing {e}"))
}

/// Creates a directory and its parents (0755, created as the sudo user),
/// naming it in the error; an existing one must be a real directory of
/// root's, ours or the invoking user's.
pub fn create_dir(dir: &Path) -> anyhow::Result<()> {
    cosched_measure::files::create_dir(dir, cosched_measure::node::invoking_user()).map_err(|e| anyhow::anyhow!("creating {e}"))
}

/// The provenance of a measurement made by this call.
pub(crate) fn provenance(ctx: &Ctx) -> cosched_model::provenance::Provenance {
    cosched_measure::provenance::here(&ctx.command, GIT_COMMIT, None)
}

/// Sleeps `d` in short naps, so an interrupt (Ctrl-C) ends it within a
/// fifth of a second.
pub(crate) fn nap(d: std::time::Duration) {
    let until = std::time::Instant::now() + d;
    while cosched_measure::launch::interrupted().is_none() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(200)));
    }
}

/// The cache-line round trip between CPUs 0 and 1, nanoseconds: whether the
/// two share a last-level cache right now (`model::regime::CacheRegime`).
fn measure_round_trip() -> Result<f64, String> {
    // The reading every pair and probe repeat takes (a few ms: the median
    // of 7 batches of 1,000 by one thread pair), so a run's regime and a
    // campaign's are read alike. The earlier 21 x 5,000 round trips, a
    // thread pair per batch, took minutes on a node busy with builds,
    // since each bounce waits for both vCPUs to be scheduled.
    cosched_measure::c2c::regime_round_trip(0, 1).map_err(|e| e.to_string())
}

/// [`measure_round_trip`] when the node has two CPUs and the reading works.
pub fn round_trip_now() -> Option<f64> {
    (node_cpu_count() >= 2).then(measure_round_trip).and_then(Result::ok)
}

/// `load 1.36 1.53 1.54, CPU 0-1 round trip 73 ns`.
pub(crate) fn describe_conditions(c: &cosched_store::NodeConditions) -> String {
    Conditions::from(c).describe()
}

/// How `cosched run` lays the workload's pools over this node's CPUs.
pub(crate) fn node_pools(w: &cosched_model::workload::Workload) -> Result<cosched_measure::place::NodePools, String> {
    let node_cpus: Vec<u32> = (0..node_cpu_count()).collect();
    let pools: Vec<(u32, bool)> =
        w.pools.iter().map(|p| (p.cores.unwrap_or(node_cpus.len() as u32), p.kind != cosched_model::workload::PoolKind::Cpu)).collect();
    cosched_measure::place::NodePools::new(&pools, &node_cpus)
}


/// What every verb's exit code means (the man pages' EXIT STATUS, where a
/// verb says no more).
pub const EXIT_STATUS: &str = "0 ok; 1 the work failed (the output names what and why); 2 bad usage or input \
    (the file, line and field); 128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM).";

/// The environment variables cosched reads, with what each chooses (the man pages' ENVIRONMENT).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("COSCHED_DB", "The database when --db is not given."),
    ("COSCHED_DATA_DIR", "Where cosched.db lives when neither --db nor COSCHED_DB is given (default ~/.local/share/cosched)."),
    ("COSCHED_RUN_LOCK", "The node lock file of the verbs that measure (default /run/lock/cosched-node.lock)."),
    ("COSCHED_GOVERNOR", "The file holding the resource governor level that Lua policies read (cosched governor)."),
    ("COSCHED_KERNEL", "The cosched-kernel binary jobs of kind kernel run (default: beside cosched, else on the PATH)."),
    ("COSCHED_SWF_MAX_MIB", "The largest SWF trace simulate --swf reads, in MiB (default 256)."),
    ("SLURM_CONF", "The Slurm configuration the slurm verbs' commands read (Slurm's own variable)."),
    ("COSCHED_SLURM_HOOK", "The name the epilog's cosched slurm hook wakes cosched slurm serve on."),
    ("SUDO_UID, SUDO_GID", "Under sudo, files the user names are opened with the invoking user's identity."),
];

/// The files cosched uses without being told (the man pages' FILES).
pub const FILES: &[(&str, &str)] = &[
    ("~/.local/share/cosched/cosched.db", "The default performance database (SQLite), its journal beside it."),
    ("/run/lock/cosched-node.lock", "The node lock: one measuring verb at a time on a node."),
    ("slurm-mark.key", "Beside the database: the key that signs cosched slurm serve's decisions (mode 0600)."),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn intervals_parse_in_seconds_and_milliseconds() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("fast").unwrap_err().contains("250ms"));
    }

    #[test]
    fn neighbouring_campaigns_of_one_kind_share_a_line_with_their_id_ranges() {
        let c = |kind: &str, id: i64, at: u64, ns: Option<f64>| UsedCampaign {
            kind: kind.into(),
            id,
            workload: "apps".into(),
            status: "done".into(),
            started_unix: at,
            node: ns.map(|ns| Conditions { taken_unix: at, load: [0.0; 3], c2c: Some((vec![0, 1], ns)), huge_pages: None }),
        };
        let used = vec![
            c("probe", 83, 60, Some(312.0)),
            c("probe", 84, 0, Some(263.0)),
            c("probe", 86, 120, None),
            c("pairs", 108, 180, Some(306.0)),
        ];
        let lines = describe_campaigns(&used);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "probe campaigns 83-84, 86 of `apps` (3, done, started 1970-01-01 00:00:00 - 1970-01-01 00:02:00 UTC; \
             CPU round trip at their starts 263-312 ns)"
        );
        assert_eq!(lines[1], used[3].describe());
        assert_eq!(id_ranges(&[1, 2, 3, 7, 9, 10]), "1-3, 7, 9-10");
    }

    #[test]
    fn names_in_file_names_keep_only_safe_characters() {
        assert_eq!(file_safe("a/b c"), "a_b_c");
        assert_eq!(file_safe("twins:base=probe"), "twins_base_probe");
    }
}
