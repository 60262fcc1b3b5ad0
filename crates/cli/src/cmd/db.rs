//! `cosched db`: what the performance database holds, and all of it as CSV
//! or JSON for other tools.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use cosched_app::db::{export, info, Exported, ExportRequest, Format as AppFormat};
use cosched_model::topology::format_bytes;
use cosched_report::table;

use super::common::{emit, DbArgs, JsonArgs};

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
    #[command(after_help = export_help())]
    Export(ExportArgs),
    /// Merge a bundle (`db export --bundle`) into the database, creating it
    /// when missing; importing a bundle twice adds nothing.
    #[command(after_help = "Examples:\n  cosched db import data/predict12.bundle\n  \
        cosched db import other-node.bundle --db results/cosched.db --json\n\n\
        Each measurement keeps the node, kernel and commit it was made with (its\n\
        provenance) and the node's conditions (load, cache regime), so what another\n\
        node measured stays told apart from this node's. A bundle that is cut short,\n\
        altered, of a newer schema, or whose rows clash with stored ones is refused\n\
        whole (exit code 2): the database is left as it was.")]
    Import {
        /// The bundle file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[command(flatten)]
        json: JsonArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// SQLite's integrity_check of the database (read only); exit code 1 if damaged.
    #[command(after_help = "Example:\n  cosched db check --db results/cosched.db")]
    Check(InfoArgs),
    /// Copy what can be read of a damaged database into a new file.
    #[command(after_help = "Example:\n  cosched db recover --db cosched.db --out cosched-recovered.db\n\n\
        VACUUM INTO when every table reads (indexes are rebuilt), else row by row,\n\
        skipping rows that do not read. The damaged file is only read.")]
    Recover {
        /// The new database file.
        #[arg(long, value_name = "PATH")]
        out: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    pub json: JsonArgs,
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
    #[arg(long, value_enum, required_unless_present = "bundle")]
    pub format: Option<Format>,
    /// Write everything the database holds as one bundle file (gzip of a
    /// SQLite database with the store's schema) that `db import` merges
    /// into another store.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["format", "table", "out"])]
    pub bundle: Option<PathBuf>,
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
        DbCmd::Info(a) => show_info(a),
        DbCmd::Export(a) => {
            if let Some(file) = &a.bundle {
                let w = cosched_app::db::export_bundle(a.db.db.as_deref(), file, env!("COSCHED_VERSION"))?;
                let rows: u64 = w.tables.iter().map(|t| t.rows).sum();
                eprintln!("wrote {} ({}): {rows} rows of {} tables", w.path.display(), format_bytes(w.bytes), w.tables.len());
                return Ok(());
            }
            let format = match a.format {
                Some(Format::Csv) => AppFormat::Csv,
                _ => AppFormat::Json,
            };
            let req = ExportRequest { format, table: a.table, out: a.out, db: a.db.db };
            if let Exported::Directory { tables, dir } = export(&req, &mut std::io::stdout().lock())? {
                eprintln!("wrote {tables} tables to {}", dir.display());
            }
            Ok(())
        }
        DbCmd::Import { file, json, db } => {
            emit(&cosched_app::db::import_bundle(db.db.as_deref(), &file)?, json.json)
        }
        DbCmd::Check(a) => cosched_app::db::check(a.db.db.as_deref()).map(|p| println!("{}: ok (integrity_check)", p.display())),
        DbCmd::Recover { out, db } => {
            let r = cosched_app::db::recover(db.db.as_deref(), &out)?;
            let rows: Vec<Vec<String>> = r.tables.iter().map(|(t, n, l)| vec![t.clone(), n.to_string(), l.to_string()]).collect();
            println!("{}", table(&["table", "rows copied", "unreadable"], &rows));
            let how = if r.whole { "VACUUM INTO, every page read" } else { "row by row" };
            let check = if r.check.is_empty() { "sound".to_string() } else { r.check.join("; ") };
            println!("{}: {how}; the copy is {check}", out.display());
            Ok(())
        }
    }
}

fn show_info(a: InfoArgs) -> anyhow::Result<()> {
    emit(&info(a.db.db.as_deref())?, a.json.json)
}

/// The export's examples and every table, from the store's own list so the
/// help never misses one.
fn export_help() -> String {
    format!(
        "Examples:\n  cosched db export --format json > everything.json\n  \
         cosched db export --format csv --table pair_runs --out pair_runs.csv\n  \
         cosched db export --format csv --out ./csv      # one TABLE.csv per table\n  \
         cosched db export --bundle this-node.bundle      # for `cosched db import` elsewhere\n\n\
         Tables: {}.",
        cosched_app::db::TABLES.join(", ")
    )
}
