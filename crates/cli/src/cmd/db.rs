//! `cosched db`: what the performance database holds, and all of it as CSV
//! or JSON for other tools.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use cosched_model::topology::format_bytes;
use cosched_report::table;
use cosched_store::{format_unix_utc, latest_version, Store, StoreError, TABLES};

use super::common::{store_input_error, DbArgs};
use crate::exit::bad_input;

#[derive(Args, Debug)]
pub struct DbCmdArgs {
    #[command(subcommand)]
    pub cmd: DbCmd,
}

#[derive(Subcommand, Debug)]
pub enum DbCmd {
    /// Path, schema version, size, rows per table and the campaigns stored.
    #[command(
        after_help = "Examples:\n  cosched db info\n  cosched db info --db ./results/cosched.db --json | jq '.tables'"
    )]
    Info(InfoArgs),
    /// Every table, or one, as CSV (header row first) or JSON (an array of
    /// objects per table), column for column as stored.
    #[command(
        after_help = "Examples:\n  cosched db export --format json > everything.json\n  cosched db export --format csv --table pair_runs --out pair_runs.csv\n  cosched db export --format csv --out ./csv      # one TABLE.csv per table\n\nTables: provenance, calibrations, campaigns, pair_runs, solo_runs, samples, profiles, probe_points."
    )]
    Export(ExportArgs),
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, value_enum)]
    pub format: Format,
    /// Export only this table; default: every table.
    #[arg(long, value_name = "TABLE")]
    pub table: Option<String>,
    /// Write to this file instead of standard output. CSV of every table
    /// needs a directory here, which gets one TABLE.csv per table.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: DbCmdArgs) -> anyhow::Result<()> {
    match a.cmd {
        DbCmd::Info(a) => info(a),
        DbCmd::Export(a) => export(a),
    }
}

fn info(a: InfoArgs) -> anyhow::Result<()> {
    let store = a.db.open_existing()?;
    let info = store.info()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("database  {}", info.path.display());
    println!("schema    version {} (this cosched writes {})", info.schema_version, latest_version());
    let wal =
        if info.wal_bytes > 0 { format!(" + {} write-ahead log", format_bytes(info.wal_bytes)) } else { String::new() };
    println!("size      {}{wal}\n", format_bytes(info.size_bytes));
    let rows: Vec<Vec<String>> = info.tables.iter().map(|t| vec![t.table.clone(), t.rows.to_string()]).collect();
    println!("{}\n", table(&["table", "rows"], &rows));
    if info.campaigns.is_empty() {
        println!("no campaigns yet");
        return Ok(());
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for c in &info.campaigns {
        // The first reading: the node as the campaign found it.
        let node = match store.conditions(c.id)?.first() {
            Some(k) => super::common::describe_conditions(k),
            None => "-".into(),
        };
        rows.push(vec![
            c.id.to_string(),
            c.kind.to_string(),
            c.workload.clone(),
            c.status.to_string(),
            c.runs.to_string(),
            format_unix_utc(c.started_unix),
            node,
        ]);
    }
    println!("{}", table(&["campaign", "kind", "workload", "status", "runs", "started (UTC)", "node at start"], &rows));
    Ok(())
}

fn export(a: ExportArgs) -> anyhow::Result<()> {
    // Arguments are checked before the database is opened, so a typo
    // never touches it.
    if let Some(t) = &a.table {
        cosched_store::check_table(t).map_err(store_input_error)?;
    }
    let csv_dir = matches!(a.format, Format::Csv) && a.table.is_none();
    if csv_dir && a.out.is_none() {
        return Err(bad_input(format!(
            "CSV holds one table: pass --table TABLE ({}), or --out DIR for one TABLE.csv per table",
            TABLES.join(", ")
        )));
    }
    let store = a.db.open_existing()?;
    let result = match (&a.out, csv_dir) {
        (Some(dir), true) => {
            std::fs::create_dir_all(dir).map_err(|e| bad_input(format!("{}: {e}", dir.display())))?;
            for t in TABLES {
                let path = dir.join(format!("{t}.csv"));
                write_file(&path, |w| store.export_csv(t, w).map(|_| ()))?;
            }
            eprintln!("wrote {} tables to {}", TABLES.len(), dir.display());
            Ok(())
        }
        (Some(path), false) => write_file(path, |w| write_export(&store, &a, w)),
        (None, _) => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            match write_export(&store, &a, &mut w).and_then(|()| w.flush().map_err(StoreError::Write)) {
                // `cosched db export ... | head` is not a failure.
                Err(StoreError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(anyhow::Error::from),
            }
        }
    };
    result
}

fn write_export(store: &Store, a: &ExportArgs, w: &mut dyn Write) -> Result<(), StoreError> {
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
