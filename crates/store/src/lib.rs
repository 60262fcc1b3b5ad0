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
//! samples, never half a migration. A runner journaling its jobs may ask
//! for [`Durability::Process`] while they run: each commit is still whole
//! and survives the process being killed, only a crash of the node may
//! lose the last ones (which then only start jobs again). A campaign killed mid-way keeps its
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
mod calibrations;
mod campaigns;
mod integrity;
mod measured;
mod rows;

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

pub use runs::{JobEvent, ORPHAN_NOTE};
pub use integrity::{check_file, recover, Recovered};
use integrity::*;
use rows::*;

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

/// What a returned commit survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The process and the node: each commit syncs the log to disk
    /// (`synchronous = FULL`), the default of every open.
    Full,
    /// The process (SIGKILL included), not the node: a commit is written
    /// to the log but not synced (`synchronous = NORMAL` in WAL mode), so
    /// a crash of the node may lose the last commits, never the file's
    /// consistency. For a run's journal while its jobs run: a job is
    /// journaled before the runner goes on, a sync to disk per start and
    /// end was most of a short job's cost on a busy node (issue 42), and a
    /// node that crashes kills the run's jobs with it, so the commits it
    /// may lose only make `--resume` start jobs again. The run's end is
    /// committed at `Full` again, syncing everything before it.
    Process,
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether opening `path` sets the database up (switches it to WAL, creates
/// or upgrades its schema): a missing or short file, one not in WAL mode
/// (header bytes 18-19 are 2 in WAL mode), or one whose `user_version`
/// (bytes 60-63, big-endian) is behind this build's schema.
fn needs_setup(path: &Path) -> bool {
    let mut head = [0u8; 100];
    let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    if read.is_err() {
        return true;
    }
    let version = u32::from_be_bytes([head[60], head[61], head[62], head[63]]);
    head[18] != 2 || head[19] != 2 || version < latest_version()
}

/// Openers that set a database up take turns: an exclusive `flock` on its
/// directory while one of them does. Two processes opening one new file at
/// once (`slurm serve` and a `slurm status` polled beside it) otherwise race
/// in SQLite's rollback-journal mode, where two readers that both want to
/// write deadlock and one is refused as busy at once, without waiting. The
/// directory, not the file: closing any descriptor of the database file
/// would drop this process's own SQLite locks on it (POSIX lock semantics).
/// `None` (open as before) when the directory cannot be opened or another
/// opener keeps it past the store's busy timeout; dropped after set-up.
fn setup_lock(path: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut file = std::fs::File::open(dir).ok()?;
    let began = std::time::Instant::now();
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(held) => return Some(held),
            Err((back, _)) if began.elapsed() < BUSY_TIMEOUT => {
                file = back;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
}

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
        let _setup = needs_setup(path).then(|| setup_lock(path)).flatten();
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

    /// How each later commit waits for the disk ([`Durability`]). A
    /// change back to [`Durability::Full`] takes effect with the next
    /// commit, which syncs the log and with it every commit before it.
    pub fn set_durability(&mut self, d: Durability) -> Result<()> {
        let level = match d {
            Durability::Full => "FULL",
            Durability::Process => "NORMAL",
        };
        self.conn.pragma_update(None, "synchronous", level).map_err(self.sql("setting how commits wait for the disk"))
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
