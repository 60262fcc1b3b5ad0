//! The performance database of cosched: one SQLite file that keeps every
//! calibration and every run measured on a node, each with its provenance.
//!
//! The store never measures and never predicts: it keeps what `measure`
//! produced and gives it back, typed, to whoever predicts, decides or
//! reports. Open it with [`Store::open`] (the CLI's `--db PATH`,
//! `$COSCHED_DB`, default [`default_db_path`]).
//!
//! # Tables
//!
//! | table | one row per | keyed by |
//! |---|---|---|
//! | `provenance` | distinct machine + software + command + seed + start time | `id`; rows are shared when identical |
//! | `calibrations` | calibration of one kernel configuration; history kept | `key` (latest `id` wins) |
//! | `campaigns` | `profile`, `pairs` or `probe` campaign over a workload | `kind`, `workload`, `params_json` |
//! | `pair_runs` | repeat of one co-run (foreground, background), with its cache regime and sharing level | `campaign_id`, `fg_job`, `bg_job`, `repeat_index` |
//! | `solo_runs` | solo run of a profile campaign | `campaign_id`, `job`, `repeat_index` |
//! | `samples` | sample of a solo run's process tree | `run_id`, `seq` |
//! | `profiles` | profile summary of a job in a campaign (a `JobProfile` as JSON, decoded on read) | `campaign_id`, `job` |
//! | `probe_points` | repeat of a job beside a stressor of one size and intensity, with its cache regime | `campaign_id`, `job`, `stressor`, size, intensity, `repeat_index` |
//! | `runs` | real run of a workload under a policy (`cosched run`) | `series`, `policy`, `repeat_index` |
//! | `run_jobs` | attempt of a job in a run: start, cores, memory nodes, prediction, end, status, slowdown | `run_id`, `job_index`, `attempt` |
//! | `run_journal` | state transition of a run, written as it happened | `run_id`, `id` |
//! | `predictor_evaluations` | predictor's accuracy on a workload's measured pairs, with every prediction (JSON) | `workload`, `id` |
//!
//! Every measurement row (calibrations, pair runs, solo runs, probe points)
//! references a `provenance` row; runs take their campaign's. Runs store
//! the paired solo and co-run times; slowdowns are derived columns
//! (`fg_slowdown`, `bg_slowdown`, `job_slowdown`, `stressor_slowdown`), so
//! there is one source of truth. The view `latest_calibrations` holds the
//! calibration in force for every key. The schema is versioned
//! (`PRAGMA user_version`) and upgraded on open by the steps of
//! [`MIGRATIONS`]; a file newer than this build is refused and not touched.
//!
//! Campaign parameters are typed per kind ([`CampaignParams`]) and stored
//! as canonical JSON text, the text earlier versions wrote, so `--resume`
//! finds their campaigns. Which campaign a workload's figures come from is
//! one query, [`Store::figures_campaign`]; its rule is documented there.
//!
//! # Use
//!
//! A campaign that can be resumed: look for an unfinished one with the same
//! parameters, skip what it already holds, store each run as soon as it is
//! measured, and say how it ended.
//!
//! ```
//! use cosched_model::matrix::StopRule;
//! use cosched_store::{CampaignParams, CampaignStatus, PairRunRecord, PairsJob, PairsParams, Store};
//! # fn provenance() -> cosched_model::provenance::Provenance {
//! #     cosched_model::provenance::Provenance { hostname: "h".into(), cpu_model: "c".into(), cores: 2,
//! #         kernel_version: "k".into(), cosched_version: "v".into(), git_commit: "g".into(),
//! #         started_unix: 0, command: "cosched pairs --workload w.toml".into(), seed: None }
//! # }
//! # fn measure(repeat: u32) -> PairRunRecord {
//! #     PairRunRecord { fg_job: "a".into(), bg_job: "b".into(), repeat, fg_cpus: vec![0], bg_cpus: vec![1],
//! #         shared_cpus: false, fg_solo_s: 1.0, fg_corun_s: 1.5, bg_solo_s: 1.0, bg_corun_s: 1.1,
//! #         fg_relaunches: 0, bg_relaunches: 1, fg_timing: "work-phase".into(), bg_timing: "work-phase".into(),
//! #         regime: Default::default(), level: None }
//! # }
//! let mut store = Store::open_in_memory()?; // Store::open(path) for a file
//! let job = |name: &str| PairsJob { name: name.into(), argv: vec!["true".into()], cores: 1, identity: None };
//! let params = CampaignParams::Pairs(PairsParams {
//!     jobs: vec![job("a"), job("b")],
//!     stop: StopRule { min_repeats: 3, max_repeats: 3, rel_halfwidth: 0.05, settle: None },
//!     in_regime: None,
//! });
//! let campaign = match store.find_campaign_typed("w.toml", &params)? {
//!     Some((id, CampaignStatus::Running | CampaignStatus::Interrupted)) => {
//!         store.reopen_campaign(id)?;
//!         id
//!     }
//!     _ => store.begin_campaign_typed("w.toml", &params, &provenance())?,
//! };
//! let done = store.pair_runs(campaign)?.len() as u32;
//! for repeat in done..3 {
//!     store.add_pair_run(campaign, &measure(repeat))?;
//! }
//! store.finish_campaign(campaign, CampaignStatus::Done)?;
//! assert_eq!(store.pair_runs(campaign)?[2].fg_slowdown(), 1.5);
//! # Ok::<(), cosched_store::StoreError>(())
//! ```
//!
//! # Interrupt safety
//!
//! Every write is one `BEGIN IMMEDIATE` transaction: a pair run, a solo run
//! with all its samples, a batch of calibrations. The file is in WAL mode
//! with `synchronous = FULL`, so a commit that returned is on disk, and a
//! process killed at any instant (SIGINT, SIGKILL, the node rebooting)
//! leaves the database as of its last commit: never a run without its
//! samples, never half a migration. A campaign killed mid-way keeps its
//! finished runs and its `running` status; `find_campaign` finds it, and the
//! caller resumes by `reopen_campaign` and skipping the runs already stored.
//!
//! # Bad input
//!
//! A record with a non-finite or non-positive time, an empty name, or a
//! campaign that is not running is refused before anything is written. A
//! file that is not SQLite, or whose schema is newer than this build knows,
//! is reported with its path and left byte for byte as it was.

mod campaign_params;
mod bundle;
mod conditions;
mod export;
mod prediction;
mod records;
mod runs;
mod schema;

/// The provenance of rows written by unit tests: fixed, so rows compare exactly.
#[cfg(test)]
pub(crate) fn test_provenance(command: &str, started_unix: u64) -> Provenance {
    Provenance {
        hostname: "h".into(),
        cpu_model: "c".into(),
        cores: 2,
        kernel_version: "k".into(),
        cosched_version: "v".into(),
        git_commit: "g".into(),
        started_unix,
        command: command.into(),
        seed: None,
    }
}

/// A stored job profile of one run of `solo_s` seconds at host load `u`.
#[cfg(test)]
pub(crate) fn test_profile(solo_s: f64, u: f64) -> cosched_model::profile::JobProfile {
    use cosched_model::profile::{JobProfile, ProfileSummary, SyscallSource};
    let s = ProfileSummary {
        wall_s: solo_s,
        host_load_mean: u,
        host_load_peak: u,
        cores_used: 2.0 * u,
        syscall_rate: None,
        syscall_count: None,
        syscall_source: SyscallSource::ProcSyscrSyscw,
        vol_ctx_rate: 0.0,
        invol_ctx_rate: 0.0,
        read_bps: 0.0,
        write_bps: 0.0,
        max_rss_kib: 1,
        fault_rate: 0.0,
        counters: BTreeMap::new(),
        stall: None,
        collateral: None,
    };
    JobProfile::from_runs(&[(solo_s, s)], "process", None, Vec::new()).expect("one finite run")
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cosched_model::calibration::Calibration;
use cosched_model::placement::SharingLevel;
use cosched_model::provenance::Provenance;
use cosched_model::stats::Summary;
use cosched_model::topology::{format_cpulist, parse_cpulist};
use rusqlite::types::Type;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior};

pub use campaign_params::{
    CampaignParams, PairsJob, PairsParams, ProbeLevelParams, ProbeParams, ProfileJob, ProfileParams,
};
pub use bundle::{Bundle, BundleInfo, Merged, FORMAT as BUNDLE_FORMAT};
pub use conditions::NodeConditions;
pub use export::{check_table, format_unix_utc, parse_utc, DbInfo, TableCount, TABLES};
pub use prediction::{EvaluationRecord, Measurements, RunPairSample, RUN_PAIR_SLACK_S};
pub use records::{
    CampaignId, CampaignKind, CampaignRecord, CampaignStatus, ExecRunId, JournalEntry, OnlineSample, PairRunRecord, ProbePointRecord,
    LevelCell, ProfileRecord, RepeatRegime, RunId, RunJobEnd, RunJobRecord, RunJobStart, RunRecord, RunStatus, SampleRecord,
    SoloRunRecord,
};
pub use schema::{latest_version, Migration, MIGRATIONS};

pub use runs::ORPHAN_NOTE;

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "cosched.db";

/// How long a write waits for another process's write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: no database here; measure something first (e.g. `cosched calibrate`)", path.display())]
    Missing { path: PathBuf },
    #[error("{}: cannot open the database: {source}", path.display())]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("{}: not a cosched database ({why}); it was left untouched: pass --db with another path, or move the file away", path.display())]
    NotADatabase { path: PathBuf, why: String },
    #[error("{}: schema version {found} is newer than this cosched knows ({known}); it was left untouched: use a newer cosched", path.display())]
    TooNew { path: PathBuf, found: u32, known: u32 },
    #[error("{}: {what}: {source}", path.display())]
    Sql { path: PathBuf, what: String, source: rusqlite::Error },
    #[error("{what}: {why}; nothing was stored")]
    Invalid { what: String, why: String },
    #[error("no run {0} in the database")]
    NoSuchRun(ExecRunId),
    #[error("no campaign {0} in the database")]
    NoSuchCampaign(CampaignId),
    #[error("campaign {id} is a {kind} campaign; it cannot hold {what}")]
    WrongKind { id: CampaignId, kind: CampaignKind, what: &'static str },
    #[error("campaign {id} is {status}, not running; reopen it to add runs")]
    NotRunning { id: CampaignId, status: CampaignStatus },
    #[error("the stored profile of `{job}` in campaign {campaign} is not a job profile this cosched reads ({why}); profile it again")]
    BadProfile { campaign: CampaignId, job: String, why: String },
    #[error("the stored parameters of campaign {id} do not read as its kind's ({why})")]
    BadParams { id: CampaignId, why: String },
    #[error("no table `{0}`; the tables are: {}", TABLES.join(", "))]
    NoSuchTable(String),
    #[error("writing the export: {0}")]
    Write(std::io::Error),
    #[error("{}: another process holds the database (a write of another cosched, or an open transaction); `{verb}` waited {} s while {what}: wait for it to finish, or pass another --db", path.display(), BUSY_TIMEOUT.as_secs())]
    Busy { path: PathBuf, what: String, verb: String },
    #[error("{}: the disk holding the database is full ({what}); nothing was stored: free some space and run it again", path.display())]
    Full { path: PathBuf, what: String, source: rusqlite::Error },
    #[error("{}: the database is damaged ({why}); it was left untouched: `cosched db check --db {}` lists the damage, `cosched db recover --db {} --out NEW.db` copies what can be read", path.display(), path.display(), path.display())]
    Damaged { path: PathBuf, why: String },
}

impl StoreError {
    /// Whether waiting may cure it: another process holding the database,
    /// or a full disk someone may clear.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Busy { .. } | StoreError::Full { .. })
    }
}

/// How long a write of work already done waits out a busy database or a
/// full disk, and how often it tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patience {
    pub total: Duration,
    pub pause: Duration,
}

impl Patience {
    /// For a finished job of a run: a job may have taken hours, and a
    /// failed write would make `--resume` run it again, so it waits ten
    /// minutes (beyond each try's own 10 s busy wait) before giving up.
    pub const FINISHED_WORK: Patience = Patience { total: Duration::from_secs(600), pause: Duration::from_secs(2) };
}

/// Runs `write` until it succeeds, fails for a reason waiting cannot cure,
/// or `patience` runs out; each wait is told to `note` (first, then about
/// every 30 s) with what is waited for, so a stalled run says why.
pub fn patiently<T>(what: &str, patience: Patience, mut write: impl FnMut() -> Result<T>, note: &mut dyn FnMut(&str)) -> Result<T> {
    let start = std::time::Instant::now();
    let mut tries = 0u32;
    let every = (30 / patience.pause.as_secs().max(1)).max(1) as u32;
    loop {
        match write() {
            Err(e) if e.is_transient() && start.elapsed() + patience.pause < patience.total => {
                if tries.is_multiple_of(every) {
                    note(&format!(
                        "{e}\ncosched: waiting to record {what}: trying again every {} s, for up to {} s in all",
                        patience.pause.as_secs_f64(),
                        patience.total.as_secs()
                    ));
                }
                tries += 1;
                std::thread::sleep(patience.pause);
            }
            r => return r,
        }
    }
}

/// An SQL error with what it means for the user: another process holding
/// the database, a full disk, else the error itself.
fn sql_error(path: &Path, what: &str, source: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match source.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            let args: Vec<String> = std::env::args().skip(1).take(2).collect();
            let verb = if args.is_empty() { "cosched".to_string() } else { format!("cosched {}", args.join(" ")) };
            StoreError::Busy { path, what: what.to_string(), verb }
        }
        Some(ErrorCode::DiskFull) => StoreError::Full { path, what: what.to_string(), source },
        // A full disk under WAL often surfaces as an I/O error.
        Some(ErrorCode::SystemIoFailure) if disk_full(&path) => StoreError::Full { path, what: what.to_string(), source },
        _ => StoreError::Sql { path, what: what.to_string(), source },
    }
}

/// The damage `quick_check` finds; a page so broken that the check itself
/// stops is damage too.
fn quick_check(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    match check_pages(conn, "quick_check") {
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) => Ok(vec![e.to_string()]),
        other => other,
    }
}

/// The problems `PRAGMA quick_check` or `integrity_check` reports (none
/// when it says `ok`).
fn check_pages(conn: &Connection, pragma: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}(100)"))?;
    let rows: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(if rows.len() == 1 && rows[0] == "ok" { Vec::new() } else { rows })
}

fn summary_of(damage: &[String]) -> String {
    let mut s: Vec<String> = damage.iter().take(3).cloned().collect();
    if damage.len() > 3 {
        s.push(format!("... {} problems in all", damage.len()));
    }
    s.join("; ")
}

/// SQLite's `integrity_check` of the file at `path`, opened read-only even
/// when damaged: each problem, none when it is sound. A file of a schema
/// newer than this cosched knows is refused as every other verb refuses it:
/// its checks would be of tables this cosched cannot read.
pub fn check_file(path: &Path) -> Result<Vec<String>> {
    let conn = open_reading(path)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|source| StoreError::Open { path: path.into(), source })?;
    if let Ok(found) = schema::version_of(&conn) {
        if found > latest_version() {
            return Err(StoreError::TooNew { path: path.into(), found, known: latest_version() });
        }
    }
    match check_pages(&conn, "integrity_check") {
        Err(e) if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)) => Ok(vec![e.to_string()]),
        other => other.map_err(|e| sql_error(path, "checking the database's integrity", e)),
    }
}

/// Opens the file at `path` for reading only, creating and changing
/// nothing: a missing or empty file is [`StoreError::Missing`] (SQLite
/// would take an empty file for a new database), anything but a regular
/// file (a device, a FIFO, a directory) is not a database. A database with
/// no write-ahead log beside it is opened `immutable`: a read-only
/// connection to a WAL database would otherwise leave `-wal` and `-shm`
/// files behind. With a log there, a writer has the file open, and it is
/// read as a reader among writers (through the log's existing files).
fn open_reading(path: &Path) -> Result<Connection> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::Missing { path: path.into() }),
        Err(e) => return Err(StoreError::Io { path: path.into(), source: e }),
        Ok(m) if m.is_dir() => return Err(StoreError::NotADatabase { path: path.into(), why: "it is a directory".into() }),
        Ok(m) if !m.is_file() => {
            return Err(StoreError::NotADatabase { path: path.into(), why: "not a regular file (a device, a FIFO or a socket)".into() })
        }
        Ok(m) if m.len() == 0 => return Err(StoreError::Missing { path: path.into() }),
        Ok(_) => {}
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = !Path::new(&wal).exists();
    let uri = format!("file:{}?mode=ro{}", uri_path(path), if immutable { "&immutable=1" } else { "" });
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(uri, flags).map_err(|source| StoreError::Open { path: path.into(), source })
}

/// `path` as the path of a `file:` URI: every byte but unreserved ones and
/// `/` percent-encoded, so `?`, `#` and `%` in a name stay part of it.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What [`recover`] copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// `VACUUM INTO` read every page; else rows were copied one by one.
    pub whole: bool,
    /// Per table: rows copied and rows that could not be read.
    pub tables: Vec<(String, u64, u64)>,
    /// `integrity_check` of the copy: empty when sound.
    pub check: Vec<String>,
}

/// Copies what can be read of the database at `src` into a new file `out`,
/// leaving `src` as it is: `VACUUM INTO` (which rebuilds every index from
/// its table) when every table page reads, else a fresh database of the
/// current schema filled row by row, skipping rows that do not read.
pub fn recover(src: &Path, out: &Path) -> Result<Recovered> {
    // An empty file holds nothing to lose (under sudo, app creates the
    // copy as the invoking user first so that root writes only where they
    // could); VACUUM INTO fills an empty file too.
    if std::fs::metadata(out).is_ok_and(|m| m.len() > 0) {
        return Err(StoreError::Invalid { what: format!("recovering into {}", out.display()), why: "the file exists; name a new one".into() });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(src, flags).map_err(|source| StoreError::Open { path: src.into(), source })?;
    let vacuum = conn.execute("VACUUM INTO ?1", [out.to_string_lossy()]);
    let whole = vacuum.is_ok();
    if !whole {
        let _ = std::fs::remove_file(out);
        drop(Store::open(out)?);
    }
    let dst = Connection::open(out).map_err(|source| StoreError::Open { path: out.into(), source })?;
    let err = |what: &str| {
        let what = what.to_string();
        move |source| sql_error(out, &what, source)
    };
    let mut tables = Vec::new();
    if whole {
        for t in TABLES {
            let n: u64 = dst.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap_or(0);
            tables.push((t.to_string(), n, 0));
        }
    } else {
        dst.execute_batch("PRAGMA foreign_keys = OFF").map_err(err("preparing the copy"))?;
        dst.execute("ATTACH DATABASE ?1 AS src", [src.to_string_lossy()]).map_err(err("reading the damaged file"))?;
        for t in TABLES {
            // The largest rowid, when the table's last page reads; else ids
            // are probed upwards until a long run of them holds nothing
            // (rowids here are dense: every table is append-only).
            let max: Option<i64> = dst.query_row(&format!("SELECT max(rowid) FROM src.{t}"), [], |r| r.get::<_, Option<i64>>(0)).unwrap_or(None);
            let (mut copied, mut lost) = (0u64, 0u64);
            let sql = format!("INSERT OR IGNORE INTO main.{t} SELECT * FROM src.{t} WHERE rowid = ?1");
            let (mut id, mut misses) = (1i64, 0u32);
            while max.map_or(misses < 10_000, |m| id <= m) {
                match dst.execute(&sql, [id]) {
                    Ok(0) => misses += 1,
                    Ok(n) => {
                        copied += n as u64;
                        misses = 0;
                    }
                    Err(_) => {
                        lost += 1;
                        misses += 1;
                    }
                }
                id += 1;
            }
            tables.push((t.to_string(), copied, lost));
        }
        dst.execute_batch("DETACH DATABASE src").map_err(err("finishing the copy"))?;
    }
    let check = check_pages(&dst, "integrity_check").map_err(err("checking the copy"))?;
    Ok(Recovered { whole, tables, check })
}

/// Whether the file system holding `path` has no block left for us.
fn disk_full(path: &Path) -> bool {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    nix::sys::statvfs::statvfs(dir).is_ok_and(|v| v.blocks_available() == 0)
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The data directory: `$COSCHED_DATA_DIR`, else the user's data directory
/// (`~/.local/share/cosched`), else `./.cosched`.
pub fn default_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("COSCHED_DATA_DIR") {
        return PathBuf::from(d);
    }
    dirs::data_dir().map(|d| d.join("cosched")).unwrap_or_else(|| PathBuf::from(".cosched"))
}

/// `cosched.db` in [`default_data_dir`].
pub fn default_db_path() -> PathBuf {
    default_data_dir().join(DB_FILE)
}

/// An open performance database. Reads take `&self`; writes take `&mut self`
/// and are each one transaction.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

impl Store {
    /// Opens the database at `path`, creating the file (and its directory)
    /// when missing, and brings its schema to the latest version.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_with(path, true)
    }

    /// Like [`Store::open`], but a missing file is an error: for readers
    /// such as `cosched db`, which must not leave an empty database behind.
    pub fn open_existing(path: &Path) -> Result<Store> {
        Store::open_with(path, false)
    }

    /// Opens an existing, up-to-date database for reading only (`db info`,
    /// `db export`, `runs`, `simulate`): nothing it does can write or create
    /// a file (see [`open_reading`]: a missing, empty or non-regular file is
    /// refused untouched), and it never waits for a writer's lock. A
    /// cosched database at an older schema version is opened as
    /// [`Store::open_existing`] does, to be upgraded.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let conn = open_reading(path)?;
        let path_buf = path.to_path_buf();
        let open = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::NotADatabase { path: path_buf.clone(), why: source.to_string() }
            }
            _ => sql_error(&path_buf, "opening the database to read", source),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        let found = schema::version_of(&conn).map_err(open)?;
        if found == 0 {
            // Not one table of ours: a stranger's SQLite file, or one left
            // by a writer killed before its first step; never made ours here.
            return Err(StoreError::NotADatabase { path: path.into(), why: "no cosched schema in it".into() });
        }
        if found < latest_version() {
            drop(conn);
            return Store::open_existing(path);
        }
        if found > latest_version() {
            return Err(StoreError::TooNew { path: path.into(), found, known: latest_version() });
        }
        let damage = quick_check(&conn).map_err(open)?;
        if !damage.is_empty() {
            return Err(StoreError::Damaged { path: path.into(), why: summary_of(&damage) });
        }
        Ok(Store { conn, path: path.to_path_buf() })
    }

    /// SQLite's full `integrity_check` (every page, every index entry):
    /// each problem it reports, none when the database is sound.
    pub fn integrity_check(&self) -> Result<Vec<String>> {
        check_pages(&self.conn, "integrity_check").map_err(self.sql("checking the database's integrity"))
    }

    /// A database in memory, gone when dropped; for tests of code that stores.
    pub fn open_in_memory() -> Result<Store> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Open { path: path.clone(), source })?;
        Store::prepare(conn, path)
    }

    fn open_with(path: &Path, create: bool) -> Result<Store> {
        let io = |source| StoreError::Io { path: path.to_path_buf(), source };
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(StoreError::NotADatabase { path: path.into(), why: "it is a directory".into() })
            }
            // SQLite would find out too, but only after it has tried to
            // recover or convert the file; reading the header first keeps
            // a stranger's file untouched.
            Ok(m) if m.len() > 0 => {
                let mut head = [0u8; 16];
                let n = std::io::Read::read(&mut std::fs::File::open(path).map_err(io)?, &mut head).map_err(io)?;
                if n < head.len() || &head != SQLITE_MAGIC {
                    return Err(StoreError::NotADatabase { path: path.into(), why: "no SQLite header".into() });
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Err(StoreError::Missing { path: path.into() });
                }
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
            }
            Err(e) => return Err(io(e)),
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|source| StoreError::Open { path: path.into(), source })?;
        Store::prepare(conn, path.to_path_buf())
    }

    fn prepare(mut conn: Connection, path: PathBuf) -> Result<Store> {
        let open = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::NotADatabase { path: path.clone(), why: source.to_string() }
            }
            Some(ErrorCode::DiskFull) => StoreError::Full { path: path.clone(), what: "opening the database".into(), source },
            Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen) if disk_full(&path) => {
                StoreError::Full { path: path.clone(), what: "opening the database".into(), source }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => sql_error(&path, "opening the database", source),
            _ => StoreError::Open { path: path.clone(), source },
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        // The version is read before anything that writes (journal mode,
        // migrations), so a newer file is refused unchanged.
        let found = schema::version_of(&conn).map_err(open)?;
        if found > latest_version() {
            return Err(StoreError::TooNew { path, found, known: latest_version() });
        }
        // Damage (a torn or overwritten page) is refused before anything
        // writes, so a broken file is never made worse.
        let damage = quick_check(&conn).map_err(open)?;
        if !damage.is_empty() {
            return Err(StoreError::Damaged { path, why: summary_of(&damage) });
        }
        conn.pragma_update(None, "foreign_keys", true).map_err(open)?;
        // Readers (`cosched db export`) never block a campaign's writes, and
        // a commit is one append to the log.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(open)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(open)?;
        // Only a file behind needs the write lock of a migration: a reader
        // of an up-to-date file never waits for a writer here.
        if found < latest_version() {
            schema::migrate(&mut conn, MIGRATIONS).map_err(|source| {
                sql_error(&path, &format!("upgrading the schema from version {found} to {}", latest_version()), source)
            })?;
        }
        Ok(Store { conn, path })
    }

    /// How long each write waits for another process's lock before it is
    /// [`StoreError::Busy`] (10 s unless changed; tests shorten it).
    pub fn set_busy_timeout(&mut self, wait: Duration) -> Result<()> {
        self.conn.busy_timeout(wait).map_err(self.sql("setting the busy timeout"))
    }

    /// The file this store reads and writes (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database (always [`latest_version`]
    /// once opened).
    pub fn schema_version(&self) -> Result<u32> {
        schema::version_of(&self.conn).map_err(self.sql("reading the schema version"))
    }

    fn sql(&self, what: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        let what = what.to_string();
        move |source| sql_error(&self.path, &what, source)
    }

    /// Runs `f` in one write transaction: all of it is stored, or none.
    fn write<T>(&mut self, what: &str, f: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
        let path = self.path.clone();
        let err = |source| sql_error(&path, what, source);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
        let out = f(&tx)?;
        tx.commit().map_err(err)?;
        Ok(out)
    }

    // ---- calibrations -------------------------------------------------

    /// Stores calibrations, all or none. Earlier calibrations of the same
    /// key are kept as history; [`Store::calibrations`] returns the latest.
    pub fn put_calibrations(&mut self, cals: &[Calibration]) -> Result<()> {
        for c in cals {
            check_calibration(c)?;
        }
        self.write("storing calibrations", |tx| {
            let err = |source| sql_err(tx, "storing calibrations", source);
            for c in cals {
                let prov = provenance_id(tx, &c.provenance).map_err(err)?;
                let (figure_name, figure_json) = match &c.figure {
                    Some((name, s)) => {
                        (Some(name.as_str()), Some(serde_json::to_string(s).expect("a summary serializes")))
                    }
                    None => (None, None),
                };
                tx.execute(
                    "INSERT INTO calibrations (key, kernel, params_json, threads, unit, work_per_run,
                        rate_n, rate_median, rate_min, rate_max, rate_ci_lo, rate_ci_hi,
                        figure_name, figure_json, provenance_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    params![
                        c.key,
                        c.kernel,
                        serde_json::to_string(&c.params).expect("a string map serializes"),
                        c.threads,
                        c.unit,
                        c.work_per_run,
                        c.rate.n as i64,
                        c.rate.median,
                        c.rate.min,
                        c.rate.max,
                        c.rate.ci_lo,
                        c.rate.ci_hi,
                        figure_name,
                        figure_json,
                        prov,
                    ],
                )
                .map_err(err)?;
            }
            Ok(())
        })
    }

    /// The latest calibration of every key.
    pub fn calibrations(&self) -> Result<BTreeMap<String, Calibration>> {
        let sql = format!(
            "SELECT {CAL_COLS}, {PROV_COLS} FROM calibrations c JOIN provenance p ON p.id = c.provenance_id
             WHERE c.id IN (SELECT max(id) FROM calibrations GROUP BY key) ORDER BY c.key"
        );
        let rows = self.query(&sql, [], "reading calibrations", calibration_from_row)?;
        Ok(rows.into_iter().map(|c| (c.key.clone(), c)).collect())
    }

    /// The latest calibration of `key`, if any.
    pub fn calibration(&self, key: &str) -> Result<Option<Calibration>> {
        Ok(self.calibration_history(key)?.pop())
    }

    /// Every calibration of `key`, oldest first.
    pub fn calibration_history(&self, key: &str) -> Result<Vec<Calibration>> {
        let sql = format!(
            "SELECT {CAL_COLS}, {PROV_COLS} FROM calibrations c JOIN provenance p ON p.id = c.provenance_id
             WHERE c.key = ?1 ORDER BY c.id"
        );
        self.query(&sql, [key], "reading calibrations", calibration_from_row)
    }

    fn query<T, P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
        what: &str,
        f: impl FnMut(&Row) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let err = self.sql(what);
        let mut stmt = self.conn.prepare_cached(sql).map_err(&err)?;
        let rows = stmt.query_map(params, f).map_err(&err)?;
        rows.collect::<rusqlite::Result<Vec<T>>>().map_err(&err)
    }

    // ---- campaigns ----------------------------------------------------

    /// Starts a campaign and returns its id. `params_json` is the campaign's
    /// parameters as a JSON document; it is stored with object keys sorted,
    /// so [`Store::find_campaign`] matches it whatever order the caller
    /// serialized it in. The verbs use [`Store::begin_campaign_typed`]; this
    /// text form is for parameters no [`CampaignParams`] describes, such as
    /// a test's.
    pub fn begin_campaign(
        &mut self,
        kind: CampaignKind,
        workload: &str,
        params_json: &str,
        provenance: &Provenance,
    ) -> Result<CampaignId> {
        nonempty("campaign", "workload", workload)?;
        let params = canonical_params(params_json)?;
        self.write("starting a campaign", |tx| {
            let prov = provenance_id(tx, provenance).map_err(|source| sql_err(tx, "starting a campaign", source))?;
            tx.execute(
                "INSERT INTO campaigns (kind, workload, params_json, status, provenance_id, started_unix)
                 VALUES (?1, ?2, ?3, 'running', ?4, ?5)",
                params![kind.as_str(), workload, params, prov, provenance.started_unix],
            )
            .map_err(|source| sql_err(tx, "starting a campaign", source))?;
            Ok(CampaignId(tx.last_insert_rowid()))
        })
    }

    /// Starts a campaign of the kind of `params`; what the verbs call, so
    /// their parameters are stored as [`Store::find_campaign_typed`] and
    /// [`CampaignRecord::parameters`] read them.
    pub fn begin_campaign_typed(
        &mut self,
        workload: &str,
        params: &CampaignParams,
        provenance: &Provenance,
    ) -> Result<CampaignId> {
        self.begin_campaign(params.kind(), workload, &params.to_json(), provenance)
    }

    /// [`Store::find_campaign`] with typed parameters: finds campaigns
    /// stored by earlier versions too, whose text is the same.
    pub fn find_campaign_typed(
        &self,
        workload: &str,
        params: &CampaignParams,
    ) -> Result<Option<(CampaignId, CampaignStatus)>> {
        let exact = self.find_campaign(params.kind(), workload, &params.to_json())?;
        let Some(want) = params.by_program() else { return Ok(exact) };
        // The same programs launched from another path (cosched's kernel
        // binary installed elsewhere, a command found through another PATH
        // entry) are the same campaign: their identities, which name the
        // kernel and its parameters or the executable's content, agree.
        let rows = self.query(
            "SELECT id, status, params_json FROM campaigns WHERE kind = ?1 AND workload = ?2 ORDER BY id DESC",
            params![params.kind().as_str(), workload],
            "finding a campaign",
            |r| Ok((CampaignId(r.get(0)?), parse_text::<CampaignStatus>(r, 1)?, r.get::<_, String>(2)?)),
        )?;
        for (id, status, text) in rows {
            if exact.is_some_and(|(e, _)| e.0 >= id.0) {
                break; // the newest match is the exact one
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            let Ok(stored) = CampaignParams::from_value(id, params.kind(), &v) else { continue };
            if stored.by_program().as_ref() == Some(&want) {
                return Ok(Some((id, status)));
            }
        }
        Ok(exact)
    }

    /// Marks a campaign `done` or `interrupted`, with the time it ended.
    pub fn finish_campaign(&mut self, id: CampaignId, status: CampaignStatus) -> Result<()> {
        if status == CampaignStatus::Running {
            return Err(StoreError::Invalid {
                what: format!("finishing campaign {id}"),
                why: "a finished campaign is done or interrupted; reopen_campaign makes it running".into(),
            });
        }
        self.set_status(id, status, Some(now_unix()))
    }

    /// Makes an interrupted (or killed, hence still `running`) campaign
    /// running again so runs can be added; returns the status it had.
    pub fn reopen_campaign(&mut self, id: CampaignId) -> Result<CampaignStatus> {
        let before = self.campaign(id)?.ok_or(StoreError::NoSuchCampaign(id))?.status;
        self.set_status(id, CampaignStatus::Running, None)?;
        Ok(before)
    }

    fn set_status(&mut self, id: CampaignId, status: CampaignStatus, finished: Option<u64>) -> Result<()> {
        let n = self.write("updating a campaign", |tx| {
            tx.execute(
                "UPDATE campaigns SET status = ?2, finished_unix = ?3 WHERE id = ?1",
                params![id.0, status.as_str(), finished],
            )
            .map_err(|source| sql_err(tx, "updating a campaign", source))
        })?;
        if n == 0 {
            return Err(StoreError::NoSuchCampaign(id));
        }
        Ok(())
    }

    /// The latest campaign of this kind over this workload with these
    /// parameters (compared as JSON values), whatever its status: what
    /// `--resume` continues.
    pub fn find_campaign(
        &self,
        kind: CampaignKind,
        workload: &str,
        params_json: &str,
    ) -> Result<Option<(CampaignId, CampaignStatus)>> {
        let params = canonical_params(params_json)?;
        let err = self.sql("finding a campaign");
        self.conn
            .query_row(
                "SELECT id, status FROM campaigns WHERE kind = ?1 AND workload = ?2 AND params_json = ?3
                 ORDER BY id DESC LIMIT 1",
                params![kind.as_str(), workload, params],
                |r| Ok((CampaignId(r.get(0)?), parse_text::<CampaignStatus>(r, 1)?)),
            )
            .optional()
            .map_err(err)
    }

    /// One campaign with its run count and provenance.
    pub fn campaign(&self, id: CampaignId) -> Result<Option<CampaignRecord>> {
        let sql = format!("{CAMPAIGN_SELECT} WHERE c.id = ?1");
        Ok(self.query(&sql, [id.0], "reading a campaign", campaign_from_row)?.pop())
    }

    /// Every campaign, oldest first.
    pub fn campaigns(&self) -> Result<Vec<CampaignRecord>> {
        let sql = format!("{CAMPAIGN_SELECT} ORDER BY c.id");
        self.query(&sql, [], "reading campaigns", campaign_from_row)
    }

    /// Checks that runs of `what` may be added to campaign `id` now, and
    /// returns the campaign's provenance row, which its runs share.
    fn open_campaign(tx: &Transaction, id: CampaignId, kind: CampaignKind, what: &'static str) -> Result<i64> {
        let row = tx
            .query_row("SELECT kind, status, provenance_id FROM campaigns WHERE id = ?1", [id.0], |r| {
                Ok((parse_text::<CampaignKind>(r, 0)?, parse_text::<CampaignStatus>(r, 1)?, r.get::<_, i64>(2)?))
            })
            .optional()
            .map_err(|source| sql_err(tx, "reading a campaign", source))?;
        let (k, status, prov) = row.ok_or(StoreError::NoSuchCampaign(id))?;
        if k != kind {
            return Err(StoreError::WrongKind { id, kind: k, what });
        }
        if status != CampaignStatus::Running {
            return Err(StoreError::NotRunning { id, status });
        }
        Ok(prov)
    }

    // ---- pair runs ----------------------------------------------------

    /// Stores one repeat of a co-run in a `pairs` campaign.
    pub fn add_pair_run(&mut self, campaign: CampaignId, run: &PairRunRecord) -> Result<()> {
        let what = || format!("pair run {} + {} repeat {}", run.fg_job, run.bg_job, run.repeat);
        nonempty(&what(), "fg_job", &run.fg_job)?;
        nonempty(&what(), "bg_job", &run.bg_job)?;
        for (name, v) in [
            ("fg_solo_s", run.fg_solo_s),
            ("fg_corun_s", run.fg_corun_s),
            ("bg_solo_s", run.bg_solo_s),
            ("bg_corun_s", run.bg_corun_s),
        ] {
            positive(&what(), name, v)?;
        }
        check_regime(&what(), &run.regime)?;
        self.write("storing a pair run", |tx| {
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Pairs, "pair runs")?;
            tx.execute(
                "INSERT INTO pair_runs (campaign_id, provenance_id, fg_job, bg_job, repeat_index, fg_cpus, bg_cpus,
                    shared_cpus, fg_solo_s, fg_corun_s, bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches,
                    fg_timing, bg_timing, c2c_cpus, c2c_before_ns, c2c_after_ns, sharing_level)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                params![
                    campaign.0,
                    prov,
                    run.fg_job,
                    run.bg_job,
                    run.repeat,
                    format_cpulist(&run.fg_cpus),
                    format_cpulist(&run.bg_cpus),
                    run.shared_cpus,
                    run.fg_solo_s,
                    run.fg_corun_s,
                    run.bg_solo_s,
                    run.bg_corun_s,
                    run.fg_relaunches,
                    run.bg_relaunches,
                    run.fg_timing,
                    run.bg_timing,
                    regime_cpus(&run.regime),
                    run.regime.before_ns,
                    run.regime.after_ns,
                    run.level.map(SharingLevel::name),
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing {}", what()), source))?;
            Ok(())
        })
    }

    /// The pair runs of a campaign, in the order they were stored.
    pub fn pair_runs(&self, campaign: CampaignId) -> Result<Vec<PairRunRecord>> {
        self.query(
            "SELECT fg_job, bg_job, repeat_index, fg_cpus, bg_cpus, shared_cpus, fg_solo_s, fg_corun_s,
                    bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches, fg_timing, bg_timing,
                    c2c_cpus, c2c_before_ns, c2c_after_ns, sharing_level
             FROM pair_runs WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading pair runs",
            |r| {
                Ok(PairRunRecord {
                    fg_job: r.get(0)?,
                    bg_job: r.get(1)?,
                    repeat: r.get(2)?,
                    fg_cpus: cpus(r, 3)?,
                    bg_cpus: cpus(r, 4)?,
                    shared_cpus: r.get(5)?,
                    fg_solo_s: r.get(6)?,
                    fg_corun_s: r.get(7)?,
                    bg_solo_s: r.get(8)?,
                    bg_corun_s: r.get(9)?,
                    fg_relaunches: r.get(10)?,
                    bg_relaunches: r.get(11)?,
                    fg_timing: r.get(12)?,
                    bg_timing: r.get(13)?,
                    regime: regime_from_row(r, 14)?,
                    level: level_from_row(r, 17)?,
                })
            },
        )
    }

    /// Per ordered pair (victim beside aggressor) and sharing level, the
    /// median slowdown of `campaign`'s repeats, sorted by victim, aggressor
    /// and level (unlevelled last): each repeat counts once for each of its
    /// two jobs.
    pub fn pair_level_medians(&self, campaign: CampaignId) -> Result<Vec<LevelCell>> {
        let mut by: BTreeMap<(String, String, (bool, Option<SharingLevel>)), Vec<f64>> = BTreeMap::new();
        for r in self.pair_runs(campaign)? {
            // Levels sort closest first; repeats without one after them.
            let level = (r.level.is_none(), r.level);
            by.entry((r.fg_job.clone(), r.bg_job.clone(), level)).or_default().push(r.fg_slowdown());
            by.entry((r.bg_job.clone(), r.fg_job.clone(), level)).or_default().push(r.bg_slowdown());
        }
        Ok(by
            .into_iter()
            .map(|((victim, aggressor, (_, level)), v)| LevelCell {
                victim,
                aggressor,
                level,
                n: v.len(),
                median: cosched_model::stats::median(&v),
            })
            .collect())
    }

    // ---- solo runs, samples, profiles ---------------------------------

    /// Stores one solo run of a `profile` campaign with all its samples
    /// (numbered in the order given), in one transaction.
    pub fn add_solo_run(
        &mut self,
        campaign: CampaignId,
        run: &SoloRunRecord,
        samples: &[SampleRecord],
    ) -> Result<RunId> {
        let what = || format!("solo run of {} repeat {}", run.job, run.repeat);
        nonempty(&what(), "job", &run.job)?;
        nonempty(&what(), "program", &run.program)?;
        positive(&what(), "interval_s", run.interval_s)?;
        positive(&what(), "wall_s", run.wall_s)?;
        positive(&what(), "time_s", run.time_s)?;
        if let Some((name, v)) = run.counters.iter().find(|(_, v)| !v.is_finite()) {
            return Err(StoreError::Invalid { what: what(), why: format!("counter {name} = {v} is not finite") });
        }
        if run.exit_code.is_some() == run.exit_signal.is_some() {
            return Err(StoreError::Invalid {
                what: what(),
                why: "exactly one of exit_code and exit_signal must be set".into(),
            });
        }
        for (i, s) in samples.iter().enumerate() {
            let what = || format!("{} sample {i}", what());
            for (name, v) in
                [("t_s", s.t_s), ("host_load", s.host_load), ("cpu_user_s", s.cpu_user_s), ("cpu_sys_s", s.cpu_sys_s)]
            {
                non_negative(&what(), name, v)?;
            }
        }
        self.write("storing a solo run", |tx| {
            let err = |source| sql_err(tx, &format!("storing {}", what()), source);
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Profile, "solo runs")?;
            tx.execute(
                "INSERT INTO solo_runs (campaign_id, provenance_id, job, program, cpus, repeat_index, interval_s,
                    wall_s, time_s, timing, exit_code, exit_signal, syscall_source, syscall_total, counters_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    campaign.0,
                    prov,
                    run.job,
                    run.program,
                    format_cpulist(&run.cpus),
                    run.repeat,
                    run.interval_s,
                    run.wall_s,
                    run.time_s,
                    run.timing,
                    run.exit_code,
                    run.exit_signal,
                    run.syscall_source,
                    run.syscall_total,
                    serde_json::to_string(&run.counters).expect("a number map serializes"),
                ],
            )
            .map_err(err)?;
            let id = tx.last_insert_rowid();
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO samples (run_id, seq, t_s, host_load, cpu_user_s, cpu_sys_s, vol_ctx, invol_ctx,
                        syscalls, read_bytes, write_bytes, disk_read_bytes, disk_write_bytes, syscr, syscw, rss_kib,
                        minflt, majflt, nprocs)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                )
                .map_err(err)?;
            for (seq, s) in samples.iter().enumerate() {
                stmt.execute(params![
                    id,
                    seq as i64,
                    s.t_s,
                    s.host_load,
                    s.cpu_user_s,
                    s.cpu_sys_s,
                    s.vol_ctx,
                    s.invol_ctx,
                    s.syscalls,
                    s.read_bytes,
                    s.write_bytes,
                    s.disk_read_bytes,
                    s.disk_write_bytes,
                    s.syscr,
                    s.syscw,
                    s.rss_kib,
                    s.minflt,
                    s.majflt,
                    s.nprocs,
                ])
                .map_err(err)?;
            }
            Ok(RunId(id))
        })
    }

    /// The solo runs of a campaign, in the order they were stored.
    pub fn solo_runs(&self, campaign: CampaignId) -> Result<Vec<(RunId, SoloRunRecord)>> {
        self.query(
            "SELECT id, job, program, cpus, repeat_index, interval_s, wall_s, time_s, timing,
                    exit_code, exit_signal, syscall_source, syscall_total, counters_json
             FROM solo_runs WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading solo runs",
            |r| {
                Ok((
                    RunId(r.get(0)?),
                    SoloRunRecord {
                        job: r.get(1)?,
                        program: r.get(2)?,
                        cpus: cpus(r, 3)?,
                        repeat: r.get(4)?,
                        interval_s: r.get(5)?,
                        wall_s: r.get(6)?,
                        time_s: r.get(7)?,
                        timing: r.get(8)?,
                        exit_code: r.get(9)?,
                        exit_signal: r.get(10)?,
                        syscall_source: r.get(11)?,
                        syscall_total: r.get(12)?,
                        counters: json_col(r, 13)?,
                    },
                ))
            },
        )
    }

    /// The samples of one solo run, in order.
    pub fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>> {
        self.query(
            "SELECT t_s, host_load, cpu_user_s, cpu_sys_s, vol_ctx, invol_ctx, syscalls, read_bytes, write_bytes,
                    disk_read_bytes, disk_write_bytes, syscr, syscw, rss_kib, minflt, majflt, nprocs
             FROM samples WHERE run_id = ?1 ORDER BY seq",
            [run.0],
            "reading samples",
            |r| {
                Ok(SampleRecord {
                    t_s: r.get(0)?,
                    host_load: r.get(1)?,
                    cpu_user_s: r.get(2)?,
                    cpu_sys_s: r.get(3)?,
                    vol_ctx: r.get(4)?,
                    invol_ctx: r.get(5)?,
                    syscalls: r.get(6)?,
                    read_bytes: r.get(7)?,
                    write_bytes: r.get(8)?,
                    disk_read_bytes: r.get(9)?,
                    disk_write_bytes: r.get(10)?,
                    syscr: r.get(11)?,
                    syscw: r.get(12)?,
                    rss_kib: r.get(13)?,
                    minflt: r.get(14)?,
                    majflt: r.get(15)?,
                    nprocs: r.get(16)?,
                })
            },
        )
    }

    /// Stores a job's profile summary in a `profile` campaign, replacing the
    /// one stored before for the same job (a summary grows with repeats).
    pub fn put_profile(&mut self, campaign: CampaignId, profile: &ProfileRecord) -> Result<()> {
        let what = format!("profile of {}", profile.job);
        nonempty(&what, "job", &profile.job)?;
        nonempty(&what, "program", &profile.program)?;
        self.write("storing a profile", |tx| {
            Store::open_campaign(tx, campaign, CampaignKind::Profile, "profiles")?;
            tx.execute(
                "INSERT INTO profiles (campaign_id, job, program, summary_json) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (campaign_id, job) DO UPDATE SET program = excluded.program, summary_json = excluded.summary_json",
                params![
                    campaign.0,
                    profile.job,
                    profile.program,
                    serde_json::to_string(&profile.summary).expect("a profile serializes")
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing the {what}"), source))?;
            Ok(())
        })
    }

    /// The profile summaries of a campaign, by job name. A summary that
    /// does not read as a `JobProfile` is an error naming its campaign and
    /// job.
    pub fn profiles(&self, campaign: CampaignId) -> Result<Vec<ProfileRecord>> {
        let rows = self.query(
            "SELECT job, program, summary_json FROM profiles WHERE campaign_id = ?1 ORDER BY job",
            [campaign.0],
            "reading profiles",
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)),
        )?;
        rows.into_iter().map(|(job, program, text)| decode_profile(campaign, job, program, &text)).collect()
    }

    /// The latest profile of a program (its program key) from a campaign
    /// that finished (`done`), so a partial profile of an interrupted
    /// campaign is never taken for a whole one.
    pub fn latest_job_profile(&self, program: &str) -> Result<Option<(CampaignId, ProfileRecord)>> {
        match self.latest_profile_row(program)? {
            Some((campaign, job, program, text)) => {
                Ok(Some((campaign, decode_profile(campaign, job, program, &text)?)))
            }
            None => Ok(None),
        }
    }


    fn latest_profile_row(&self, program: &str) -> Result<Option<(CampaignId, String, String, String)>> {
        let rows = self.query(
            "SELECT pr.job, pr.program, pr.summary_json, pr.campaign_id FROM profiles pr
             JOIN campaigns c ON c.id = pr.campaign_id
             WHERE pr.program = ?1 AND c.status = ?2 ORDER BY pr.campaign_id DESC, pr.id DESC LIMIT 1",
            params![program, CampaignStatus::Done.as_str()],
            "reading profiles",
            |r| Ok((CampaignId(r.get(3)?), r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)),
        )?;
        Ok(rows.into_iter().next())
    }

    // ---- probe points -------------------------------------------------

    /// Stores one point of a `probe` campaign.
    pub fn add_probe_point(&mut self, campaign: CampaignId, point: &ProbePointRecord) -> Result<()> {
        let what = || {
            format!(
                "probe point of {} with {} at {} KiB, intensity {}, repeat {}",
                point.job, point.stressor, point.working_set_kib, point.intensity, point.repeat
            )
        };
        nonempty(&what(), "job", &point.job)?;
        nonempty(&what(), "stressor", &point.stressor)?;
        non_negative(&what(), "intensity", point.intensity)?;
        for (name, v) in [
            ("job_solo_s", point.job_solo_s),
            ("job_corun_s", point.job_corun_s),
            ("stressor_solo_s", point.stressor_solo_s),
            ("stressor_corun_s", point.stressor_corun_s),
        ] {
            positive(&what(), name, v)?;
        }
        check_regime(&what(), &point.regime)?;
        self.write("storing a probe point", |tx| {
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Probe, "probe points")?;
            tx.execute(
                "INSERT INTO probe_points (campaign_id, provenance_id, job, stressor, working_set_kib, intensity,
                    repeat_index, job_solo_s, job_corun_s, stressor_solo_s, stressor_corun_s,
                    c2c_cpus, c2c_before_ns, c2c_after_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    campaign.0,
                    prov,
                    point.job,
                    point.stressor,
                    point.working_set_kib,
                    point.intensity,
                    point.repeat,
                    point.job_solo_s,
                    point.job_corun_s,
                    point.stressor_solo_s,
                    point.stressor_corun_s,
                    regime_cpus(&point.regime),
                    point.regime.before_ns,
                    point.regime.after_ns,
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing the {}", what()), source))?;
            Ok(())
        })
    }

    /// The probe points of a campaign, in the order they were stored.
    pub fn probe_points(&self, campaign: CampaignId) -> Result<Vec<ProbePointRecord>> {
        self.query(
            "SELECT job, stressor, working_set_kib, intensity, repeat_index, job_solo_s, job_corun_s,
                    stressor_solo_s, stressor_corun_s, c2c_cpus, c2c_before_ns, c2c_after_ns
             FROM probe_points WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading probe points",
            |r| {
                Ok(ProbePointRecord {
                    job: r.get(0)?,
                    stressor: r.get(1)?,
                    working_set_kib: r.get(2)?,
                    intensity: r.get(3)?,
                    repeat: r.get(4)?,
                    job_solo_s: r.get(5)?,
                    job_corun_s: r.get(6)?,
                    stressor_solo_s: r.get(7)?,
                    stressor_corun_s: r.get(8)?,
                    regime: regime_from_row(r, 9)?,
                })
            },
        )
    }
}

fn sql_err(tx: &Transaction, what: &str, source: rusqlite::Error) -> StoreError {
    let path = tx.path().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(":memory:"));
    sql_error(&path, what, source)
}

fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

// ---- validation -------------------------------------------------------

fn nonempty(what: &str, field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() {
        return Err(StoreError::Invalid { what: what.into(), why: format!("{field} is empty") });
    }
    Ok(())
}

/// Times and slowdowns are divided by: zero, negative or NaN would poison
/// every median computed from them later.
fn positive(what: &str, field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        return Err(StoreError::Invalid { what: what.into(), why: format!("{field} = {v} is not a positive number") });
    }
    Ok(())
}

fn non_negative(what: &str, field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(StoreError::Invalid {
            what: what.into(),
            why: format!("{field} = {v} is not a finite number >= 0"),
        });
    }
    Ok(())
}

fn check_calibration(c: &Calibration) -> Result<()> {
    let what = format!("calibration `{}`", c.key);
    nonempty(&what, "key", &c.key)?;
    nonempty(&what, "kernel", &c.kernel)?;
    let s = &c.rate;
    for (name, v) in [
        ("rate.median", s.median),
        ("rate.min", s.min),
        ("rate.max", s.max),
        ("rate.ci_lo", s.ci_lo),
        ("rate.ci_hi", s.ci_hi),
    ] {
        positive(&what, name, v)?;
    }
    if let Some((name, f)) = &c.figure {
        for v in [f.median, f.min, f.max, f.ci_lo, f.ci_hi] {
            if !v.is_finite() {
                return Err(StoreError::Invalid { what, why: format!("figure {name} has a non-finite value {v}") });
            }
        }
    }
    Ok(())
}

/// Parses campaign parameters and re-serializes them with object keys
/// sorted, so equal parameters are equal text in the database.
fn canonical_params(params_json: &str) -> Result<String> {
    fn sorted(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let sorted_entries: BTreeMap<String, serde_json::Value> =
                    m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
                serde_json::Value::Object(sorted_entries.into_iter().collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let v: serde_json::Value = serde_json::from_str(params_json)
        .map_err(|e| StoreError::Invalid { what: "campaign parameters".into(), why: format!("not JSON: {e}") })?;
    Ok(sorted(v).to_string())
}

// ---- rows -------------------------------------------------------------

/// The provenance row equal to `p`, inserted if there is none.
fn provenance_id(tx: &Transaction, p: &Provenance) -> rusqlite::Result<i64> {
    let seed = p.seed.map(|s| s.to_string());
    let found = tx
        .prepare_cached(
            "SELECT id FROM provenance WHERE hostname = ?1 AND cpu_model = ?2 AND cores = ?3 AND kernel_version = ?4
             AND cosched_version = ?5 AND git_commit = ?6 AND command = ?7 AND seed IS ?8 AND started_unix = ?9
             LIMIT 1",
        )?
        .query_row(
            params![
                p.hostname,
                p.cpu_model,
                p.cores,
                p.kernel_version,
                p.cosched_version,
                p.git_commit,
                p.command,
                seed,
                p.started_unix
            ],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO provenance (hostname, cpu_model, cores, kernel_version, cosched_version, git_commit, command,
            seed, started_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            p.hostname,
            p.cpu_model,
            p.cores,
            p.kernel_version,
            p.cosched_version,
            p.git_commit,
            p.command,
            seed,
            p.started_unix
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Provenance columns, always selected last, after a table's own columns.
const PROV_COLS: &str =
    "p.hostname, p.cpu_model, p.cores, p.kernel_version, p.cosched_version, p.git_commit, p.command, p.seed, p.started_unix";

fn provenance_from_row(r: &Row, at: usize) -> rusqlite::Result<Provenance> {
    let seed: Option<String> = r.get(at + 7)?;
    let seed = match seed {
        None => None,
        Some(s) => Some(
            s.parse::<u64>().map_err(|e| rusqlite::Error::FromSqlConversionFailure(at + 7, Type::Text, Box::new(e)))?,
        ),
    };
    Ok(Provenance {
        hostname: r.get(at)?,
        cpu_model: r.get(at + 1)?,
        cores: r.get(at + 2)?,
        kernel_version: r.get(at + 3)?,
        cosched_version: r.get(at + 4)?,
        git_commit: r.get(at + 5)?,
        command: r.get(at + 6)?,
        seed,
        started_unix: r.get(at + 8)?,
    })
}

const CAL_COLS: &str = "c.key, c.kernel, c.params_json, c.threads, c.unit, c.work_per_run, c.rate_n, c.rate_median,
    c.rate_min, c.rate_max, c.rate_ci_lo, c.rate_ci_hi, c.figure_name, c.figure_json";

fn calibration_from_row(r: &Row) -> rusqlite::Result<Calibration> {
    let figure_name: Option<String> = r.get(12)?;
    let figure = match figure_name {
        Some(name) => Some((name, json_col::<Summary>(r, 13)?)),
        None => None,
    };
    Ok(Calibration {
        key: r.get(0)?,
        kernel: r.get(1)?,
        params: json_col(r, 2)?,
        threads: r.get(3)?,
        unit: r.get(4)?,
        work_per_run: r.get(5)?,
        rate: Summary {
            n: r.get::<_, i64>(6)? as usize,
            median: r.get(7)?,
            min: r.get(8)?,
            max: r.get(9)?,
            ci_lo: r.get(10)?,
            ci_hi: r.get(11)?,
        },
        figure,
        provenance: provenance_from_row(r, 14)?,
    })
}

const CAMPAIGN_SELECT: &str = "SELECT c.id, c.kind, c.workload, c.params_json, c.status, c.started_unix, c.finished_unix,
    (SELECT count(*) FROM pair_runs WHERE campaign_id = c.id)
      + (SELECT count(*) FROM solo_runs WHERE campaign_id = c.id)
      + (SELECT count(*) FROM probe_points WHERE campaign_id = c.id),
    p.hostname, p.cpu_model, p.cores, p.kernel_version, p.cosched_version, p.git_commit, p.command, p.seed, p.started_unix
    FROM campaigns c JOIN provenance p ON p.id = c.provenance_id";

fn campaign_from_row(r: &Row) -> rusqlite::Result<CampaignRecord> {
    Ok(CampaignRecord {
        id: CampaignId(r.get(0)?),
        kind: parse_text(r, 1)?,
        workload: r.get(2)?,
        params: json_col(r, 3)?,
        status: parse_text(r, 4)?,
        started_unix: r.get(5)?,
        finished_unix: r.get(6)?,
        runs: r.get(7)?,
        provenance: provenance_from_row(r, 8)?,
    })
}

/// Profiles are decoded here, once, so every reader gets a `JobProfile`
/// or an error that says which stored profile to measure again.
fn decode_profile(campaign: CampaignId, job: String, program: String, text: &str) -> Result<ProfileRecord> {
    match serde_json::from_str(text) {
        Ok(summary) => Ok(ProfileRecord { job, program, summary }),
        Err(e) => Err(StoreError::BadProfile { campaign, job, why: e.to_string() }),
    }
}

fn json_col<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

fn parse_text<T: std::str::FromStr<Err = String>>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    text.parse::<T>().map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, e.into()))
}

/// A repeat's readings: both CPUs or none, each round trip positive.
fn check_regime(what: &str, g: &RepeatRegime) -> Result<()> {
    let read = g.before_ns.is_some() || g.after_ns.is_some();
    if read && g.cpus.len() != 2 {
        return Err(StoreError::Invalid {
            what: what.into(),
            why: format!("a cache-line round trip is read between two CPUs, not {:?}", g.cpus),
        });
    }
    for (field, v) in [("c2c_before_ns", g.before_ns), ("c2c_after_ns", g.after_ns)] {
        if let Some(v) = v {
            positive(what, field, v)?;
        }
    }
    Ok(())
}

fn regime_cpus(g: &RepeatRegime) -> Option<String> {
    (!g.cpus.is_empty()).then(|| format_cpulist(&g.cpus))
}

/// Columns `c2c_cpus`, `c2c_before_ns`, `c2c_after_ns` from `at`.
fn regime_from_row(r: &Row, at: usize) -> rusqlite::Result<RepeatRegime> {
    let text: Option<String> = r.get(at)?;
    let cpus = match text {
        Some(t) => parse_cpulist(&t).map_err(|e| rusqlite::Error::FromSqlConversionFailure(at, Type::Text, Box::new(e)))?,
        None => Vec::new(),
    };
    Ok(RepeatRegime { cpus, before_ns: r.get(at + 1)?, after_ns: r.get(at + 2)? })
}

fn level_from_row(r: &Row, at: usize) -> rusqlite::Result<Option<SharingLevel>> {
    let text: Option<String> = r.get(at)?;
    text.map(|t| {
        SharingLevel::ALL.into_iter().find(|l| l.name() == t).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(at, Type::Text, format!("unknown sharing level `{t}`").into())
        })
    })
    .transpose()
}

fn cpus(r: &Row, i: usize) -> rusqlite::Result<Vec<u32>> {
    let text: String = r.get(i)?;
    parse_cpulist(&text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_enforces_foreign_keys_and_waits_for_a_busy_writer() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("x.db")).unwrap();
        let fk: bool = s.conn.pragma_query_value(None, "foreign_keys", |r| r.get(0)).unwrap();
        let busy_ms: u64 = s.conn.pragma_query_value(None, "busy_timeout", |r| r.get(0)).unwrap();
        let sync: u32 = s.conn.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap();
        assert!(fk);
        assert_eq!(busy_ms, BUSY_TIMEOUT.as_millis() as u64);
        assert_eq!(sync, 2, "FULL");
        let orphan = s.conn.execute(
            "INSERT INTO pair_runs (campaign_id, provenance_id, fg_job, bg_job, repeat_index, fg_cpus, bg_cpus,
                shared_cpus, fg_solo_s, fg_corun_s, bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches, fg_timing, bg_timing)
             VALUES (42, 42, 'a', 'b', 0, '0', '1', 0, 1, 1, 1, 1, 0, 0, 'process', 'process')",
            [],
        );
        assert!(orphan.is_err(), "a run of no campaign was accepted");
    }

    #[test]
    fn a_stored_profile_that_is_no_job_profile_is_an_error_naming_its_campaign_and_job() {
        let mut s = Store::open_in_memory().unwrap();
        let c = s.begin_campaign(CampaignKind::Profile, "w", "{}", &test_provenance("cosched profile", 1)).unwrap();
        let good = ProfileRecord { job: "a".into(), program: "A".into(), summary: test_profile(1.0, 0.5) };
        s.put_profile(c, &good).unwrap();
        assert_eq!(s.profiles(c).unwrap(), vec![good]);
        s.conn
            .execute(
                "INSERT INTO profiles (campaign_id, job, program, summary_json) VALUES (?1, 'old', 'B', '{\"u\": 1}')",
                [c.0],
            )
            .unwrap();
        s.finish_campaign(c, CampaignStatus::Done).unwrap();
        let e = s.profiles(c).unwrap_err();
        assert!(matches!(&e, StoreError::BadProfile { campaign, job, .. } if *campaign == c && job == "old"), "{e}");
        assert!(e.to_string().contains(&format!("`old` in campaign {c}")), "{e}");
        assert!(s.latest_job_profile("B").unwrap_err().to_string().contains("`old`"));
        assert_eq!(s.latest_job_profile("A").unwrap().map(|(id, p)| (id, p.job)), Some((c, "a".to_string())));
    }
}
