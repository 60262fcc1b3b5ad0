//! `cosched db`: what the performance database holds, and all of it as CSV
//! or JSON for other tools.

use std::io::Write;
use std::path::{Path, PathBuf};

use cosched_store::{latest_version, Store, StoreError};
/// Every table of the database, in the order `db info` lists and `db export` writes them.
pub use cosched_store::TABLES;

use crate::common::{db_path, open_existing_store, store_input_error, Conditions};
use crate::error::bad_input;

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

#[derive(Debug)]
pub struct DbInfo {
    pub path: PathBuf,
    pub schema_version: u32,
    /// The schema version this build writes.
    pub latest_version: u32,
    pub size_bytes: u64,
    pub wal_bytes: u64,
    /// Rows per table, in schema order.
    pub tables: Vec<(String, u64)>,
    pub campaigns: Vec<CampaignRow>,
    /// All of it as the store describes itself.
    pub json: serde_json::Value,
}

pub fn info(db: Option<&Path>) -> anyhow::Result<DbInfo> {
    let store = open_existing_store(&db_path(db))?;
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
    let mut json = serde_json::to_value(&info)?;
    json["figures_campaigns"] = serde_json::json!(figures);
    Ok(DbInfo {
        path: info.path.clone(),
        schema_version: info.schema_version,
        latest_version: latest_version(),
        size_bytes: info.size_bytes,
        wal_bytes: info.wal_bytes,
        tables: info.tables.iter().map(|t| (t.table.clone(), t.rows as u64)).collect(),
        campaigns,
        json,
    })
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
    let store = open_existing_store(&db_path(a.db.as_deref()))?;
    match (&a.out, csv_dir) {
        (Some(dir), true) => {
            std::fs::create_dir_all(dir).map_err(|e| bad_input(format!("{}: {e}", dir.display())))?;
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

/// Writes through a temporary file beside `path` and renames it into place,
/// so a failed export never leaves half a file under the wanted name.
fn write_file(path: &Path, f: impl FnOnce(&mut dyn Write) -> Result<(), StoreError>) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let shown = path.display();
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| bad_input(format!("{shown}: {e}")))?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        f(&mut w)?;
        w.flush().map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    }
    tmp.persist(path).map_err(|e| bad_input(format!("{shown}: {}", e.error)))?;
    Ok(())
}
