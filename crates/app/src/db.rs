//! `cosched db`: what the performance database holds, and all of it as CSV
//! or JSON for other tools.

use std::io::Write;
use std::path::{Path, PathBuf};

use cosched_store::{latest_version, Store, StoreError};
use serde::Serialize;
/// Every table of the database, in the order `db info` lists and `db export` writes them.
pub use cosched_store::TABLES;

use crate::common::{db_path, open_read_only_store, store_input_error, Conditions};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use cosched_model::topology::format_bytes;

/// One campaign as `db info` lists it.
#[derive(Debug)]
pub struct CampaignRow {
    pub id: i64,
    pub kind: String,
    pub workload: String,
    pub status: String,
    pub runs: u64,
    pub started_unix: u64,
    /// The node as the campaign found it (its first reading).
    pub node: Option<Conditions>,
    /// The workload's figures of this kind come from this campaign
    /// (`Store::figures_campaign`): what predict, simulate and run read.
    pub figures: bool,
}

/// `cosched db info`; `--json` is the store's own description with the
/// figures campaigns and the integrity check added.
#[derive(Debug, Serialize)]
pub struct DbInfo {
    /// Path, schema version, sizes, rows per table, every campaign.
    #[serde(flatten)]
    pub stored: cosched_store::DbInfo,
    /// The campaigns a workload's figures of their kind come from.
    pub figures_campaigns: Vec<i64>,
    /// SQLite's integrity_check: `["ok"]` when the file is sound, else each problem.
    pub integrity: Vec<String>,
    /// The schema version this build writes.
    #[serde(skip)]
    pub latest_version: u32,
    /// The campaigns as the table lists them.
    #[serde(skip)]
    pub campaigns: Vec<CampaignRow>,
    /// Each problem the integrity check found, none when the file is sound.
    #[serde(skip)]
    pub problems: Vec<String>,
}

pub fn info(db: Option<&Path>) -> anyhow::Result<DbInfo> {
    let store = open_read_only_store(&db_path(db))?;
    let info = store.info()?;
    let mut campaigns = Vec::new();
    let mut figures = Vec::new();
    for c in &info.campaigns {
        let is_figures = store.figures_campaign(c.kind, &c.workload)?.is_some_and(|f| f.id == c.id);
        if is_figures {
            figures.push(c.id.0);
        }
        campaigns.push(CampaignRow {
            id: c.id.0,
            kind: c.kind.to_string(),
            workload: c.workload.clone(),
            status: c.status.to_string(),
            runs: c.runs,
            started_unix: c.started_unix,
            node: store.conditions(c.id)?.first().map(Conditions::from),
            figures: is_figures,
        });
    }
    let problems = store.integrity_check()?;
    Ok(DbInfo {
        integrity: if problems.is_empty() { vec!["ok".to_string()] } else { problems.clone() },
        stored: info,
        figures_campaigns: figures,
        latest_version: latest_version(),
        campaigns,
        problems,
    })
}

impl Render for DbInfo {
    fn doc(&self) -> Doc {
        let i = &self.stored;
        let mut d = Doc::new();
        d.line(format!("database  {}", i.path.display()));
        d.line(format!("schema    version {} (this cosched writes {})", i.schema_version, self.latest_version));
        let wal = if i.wal_bytes > 0 { format!(" + {} write-ahead log", format_bytes(i.wal_bytes)) } else { String::new() };
        d.line(format!("size      {}{wal}", format_bytes(i.size_bytes)));
        let sound = if self.problems.is_empty() { "ok".to_string() } else { format!("DAMAGED: {}", self.problems.join("; ")) };
        d.line(format!("integrity {sound}\n"));
        d.table(&["table", "rows"], i.tables.iter().map(|t| vec![t.table.clone(), t.rows.to_string()]).collect());
        d.line("");
        if self.campaigns.is_empty() {
            d.line("no campaigns yet");
            return d;
        }
        let rows = self
            .campaigns
            .iter()
            .map(|c| {
                vec![
                    c.id.to_string(),
                    c.kind.clone(),
                    c.workload.clone(),
                    c.status.clone(),
                    c.runs.to_string(),
                    format_utc(c.started_unix),
                    c.node.as_ref().map_or("-".into(), |k| k.describe()),
                    if c.figures { "yes".into() } else { String::new() },
                ]
            })
            .collect();
        d.table(&["campaign", "kind", "workload", "status", "runs", "started (UTC)", "node at start", "figures"], rows);
        d.line(
            "figures: the campaign a workload's figures of its kind come from (predict, evaluate-predictors, simulate, run):\n\
             among those holding runs, the newest done one, else the newest one.",
        );
        d
    }
}

/// `cosched db check`: SQLite's integrity_check of the database, which may
/// be damaged (it is opened read-only and only read). An error naming the
/// problems (exit code 1) when it is not sound.
pub fn check(db: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = db_path(db);
    let problems = cosched_store::check_file(&path).map_err(store_input_error)?;
    if problems.is_empty() {
        return Ok(path);
    }
    Err(anyhow::anyhow!(
        "{}: damaged, {} problem(s):\n  {}\nCopy what reads with: cosched db recover --db {} --out NEW.db",
        path.display(),
        problems.len(),
        problems.join("\n  "),
        path.display()
    ))
}

/// `cosched db recover`: a copy of what can be read of the database into
/// the new file `out`; the damaged file is only read.
pub fn recover(db: Option<&Path>, out: &Path) -> anyhow::Result<cosched_store::Recovered> {
    let path = db_path(db);
    if !path.exists() {
        return Err(bad_input(format!("{}: no database here", path.display())));
    }
    // The copy is a new database the user named: refused where they could
    // not create it (see `user_may_write_db`).
    crate::common::user_may_write_db(out, true)?;
    cosched_store::recover(&path, out).map_err(store_input_error)
}

/// `2024-05-01 12:00:00`, as the store writes times.
pub fn format_utc(unix: u64) -> String {
    cosched_store::format_unix_utc(unix)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
}

#[derive(Debug, Clone)]
pub struct ExportRequest {
    pub format: Format,
    /// One table; default: every table.
    pub table: Option<String>,
    /// A file (a directory for CSV of every table); default: `to`.
    pub out: Option<PathBuf>,
    pub db: Option<PathBuf>,
}

/// What an export wrote.
#[derive(Debug)]
pub enum Exported {
    /// One TABLE.csv per table into this directory.
    Directory { tables: usize, dir: PathBuf },
    /// A file, or the writer given.
    One,
}

/// Exports into `out` (a file or directory), else into `to`. A write to
/// `to` that fails because its reader went away (`| head`) is not a failure.
pub fn export(a: &ExportRequest, to: &mut dyn Write) -> anyhow::Result<Exported> {
    // Arguments are checked before the database is opened, so a typo
    // never touches it.
    if let Some(t) = &a.table {
        cosched_store::check_table(t).map_err(store_input_error)?;
    }
    let csv_dir = a.format == Format::Csv && a.table.is_none();
    if csv_dir && a.out.is_none() {
        return Err(bad_input(format!(
            "CSV holds one table: pass --table TABLE ({}), or --out DIR for one TABLE.csv per table",
            TABLES.join(", ")
        )));
    }
    let store = open_read_only_store(&db_path(a.db.as_deref()))?;
    match (&a.out, csv_dir) {
        (Some(dir), true) => {
            crate::common::create_dir(dir).map_err(|e| bad_input(e.to_string()))?;
            for t in TABLES {
                let path = dir.join(format!("{t}.csv"));
                write_file(&path, |w| store.export_csv(t, w).map(|_| ()))?;
            }
            Ok(Exported::Directory { tables: TABLES.len(), dir: dir.clone() })
        }
        (Some(path), false) => write_file(path, |w| write_export(&store, a, w)).map(|()| Exported::One),
        (None, _) => {
            let mut w = std::io::BufWriter::new(to);
            match write_export(&store, a, &mut w).and_then(|()| w.flush().map_err(StoreError::Write)) {
                Err(StoreError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exported::One),
                other => other.map(|()| Exported::One).map_err(anyhow::Error::from),
            }
        }
    }
}

fn write_export(store: &Store, a: &ExportRequest, w: &mut dyn Write) -> Result<(), StoreError> {
    match (a.format, &a.table) {
        (Format::Csv, Some(t)) => store.export_csv(t, w).map(|_| ()),
        (Format::Json, Some(t)) => store.export_json(t, w).map(|_| ()),
        (Format::Json, None) => store.export_json_all(w),
        (Format::Csv, None) => unreachable!("CSV of every table goes to a directory"),
    }
}

/// Writes into an unnamed temporary file first and copies it to `path`
/// only once the export succeeded, so a failed export never touches the
/// wanted name; `path` itself is opened by the one rule for files written
/// on a user's behalf (`cosched_measure::files`: as the sudo user,
/// truncated in place, never through a link).
fn write_file(path: &Path, f: impl FnOnce(&mut dyn Write) -> Result<(), StoreError>) -> anyhow::Result<()> {
    use std::io::{Seek, SeekFrom};
    let shown = path.display();
    let mut tmp = tempfile::tempfile().map_err(|e| anyhow::anyhow!("a temporary file for {shown}: {e}"))?;
    {
        let mut w = std::io::BufWriter::new(&mut tmp);
        f(&mut w)?;
        w.flush().map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    }
    tmp.seek(SeekFrom::Start(0)).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    let mut out = cosched_measure::files::create_file(path, cosched_measure::node::invoking_user()).map_err(|e| bad_input(e.to_string()))?;
    std::io::copy(&mut tmp, &mut out).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    Ok(())
}

/// The most `db import` reads of a bundle file (compressed).
pub const MAX_BUNDLE_BYTES: u64 = 1 << 30;

/// What `db export --bundle` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct BundleWritten {
    pub path: PathBuf,
    pub bytes: u64,
    /// Rows per table, as `db info` counts them.
    pub tables: Vec<cosched_store::TableCount>,
}

/// Writes the whole store as one bundle file (`cosched_store` says what
/// it holds), by the rule for files written on a user's behalf.
pub fn export_bundle(db: Option<&Path>, out: &Path, cosched_version: &str) -> anyhow::Result<BundleWritten> {
    let store = open_read_only_store(&db_path(db))?;
    let node = cosched_measure::provenance::here("", "", None).hostname;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let bytes = store.export_bundle(cosched_version, &node, now)?;
    cosched_measure::files::write_file(out, &bytes, cosched_measure::node::invoking_user()).map_err(|e| anyhow::anyhow!("writing {e}"))?;
    Ok(BundleWritten { path: out.to_path_buf(), bytes: bytes.len() as u64, tables: store.table_counts()? })
}

/// What `db import` did.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub path: PathBuf,
    pub db: PathBuf,
    pub info: cosched_store::BundleInfo,
    pub tables: Vec<cosched_store::Merged>,
}

impl Imported {
    /// Where the bundle came from, in one line.
    pub fn header(&self) -> String {
        let i = &self.info;
        let at = format_utc(i.exported_unix.max(0) as u64);
        format!("{}: exported by cosched {} on {} at {at} (schema {})", self.path.display(), i.cosched_version, i.hostname, i.schema_version)
    }

    /// Rows added to the store.
    pub fn added(&self) -> u64 {
        self.tables.iter().map(|t| t.added).sum()
    }
}

impl Render for Imported {
    fn doc(&self) -> Doc {
        let row = |t: &cosched_store::Merged| vec![t.table.clone(), t.rows.to_string(), t.added.to_string(), (t.rows - t.added).to_string()];
        let mut d = Doc::new();
        d.line(self.header());
        d.table(&["table", "rows", "added", "already there"], self.tables.iter().filter(|t| t.rows > 0).map(row).collect());
        d.line(format!("{} rows added to {}", self.added(), self.db.display()));
        d
    }
}

/// Merges a bundle into the store (created when missing): every row or,
/// when the bundle is refused, none (exit code 2, the reason named).
pub fn import_bundle(db: Option<&Path>, file: &Path) -> anyhow::Result<Imported> {
    let shown = file.display().to_string();
    let user = cosched_measure::node::invoking_user();
    let bytes = cosched_measure::files::as_user(user, || {
        use std::io::Read;
        let f = std::fs::File::open(file)?;
        if !f.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let mut buf = Vec::new();
        f.take(MAX_BUNDLE_BYTES + 1).read_to_end(&mut buf)?;
        Ok(buf)
    })
    .map_err(|e| bad_input(format!("{shown}: {e}")))?;
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(bad_input(format!("{shown}: larger than {} MiB, the most cosched reads of a bundle", MAX_BUNDLE_BYTES >> 20)));
    }
    let refused = |e: StoreError| match e {
        StoreError::Invalid { .. } => bad_input(e.to_string()),
        other => other.into(),
    };
    // Checked whole before the store is opened, so a bad bundle creates
    // no database.
    let bundle = cosched_store::Bundle::read(file, &bytes).map_err(refused)?;
    let path = db_path(db);
    let mut store = crate::common::open_store(&path)?;
    let tables = store.import_bundle(&bundle).map_err(refused)?;
    Ok(Imported { path: file.to_path_buf(), db: path, info: bundle.info.clone(), tables })
}
