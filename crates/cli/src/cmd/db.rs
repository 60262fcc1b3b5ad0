//! `cosched db`: what the performance database holds, and all of it as CSV
//! or JSON for other tools.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use cosched_app::db::{export, format_utc, info, Exported, ExportRequest, Format as AppFormat};
use cosched_model::topology::format_bytes;
use cosched_report::table;

use super::common::{print_json, DbArgs, JsonArgs};

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
        DbCmd::Info(a) => show_info(a),
        DbCmd::Export(a) => {
            let format = match a.format {
                Format::Csv => AppFormat::Csv,
                Format::Json => AppFormat::Json,
            };
            let req = ExportRequest { format, table: a.table, out: a.out, db: a.db.db };
            if let Exported::Directory { tables, dir } = export(&req, &mut std::io::stdout().lock())? {
                eprintln!("wrote {tables} tables to {}", dir.display());
            }
            Ok(())
        }
    }
}

fn show_info(a: InfoArgs) -> anyhow::Result<()> {
    let info = info(a.db.db.as_deref())?;
    if a.json.json {
        return print_json(&info.json);
    }
    println!("database  {}", info.path.display());
    println!("schema    version {} (this cosched writes {})", info.schema_version, info.latest_version);
    let wal = if info.wal_bytes > 0 { format!(" + {} write-ahead log", format_bytes(info.wal_bytes)) } else { String::new() };
    println!("size      {}{wal}\n", format_bytes(info.size_bytes));
    let rows: Vec<Vec<String>> = info.tables.iter().map(|(t, n)| vec![t.clone(), n.to_string()]).collect();
    println!("{}\n", table(&["table", "rows"], &rows));
    if info.campaigns.is_empty() {
        println!("no campaigns yet");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = info
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
    println!(
        "{}",
        table(&["campaign", "kind", "workload", "status", "runs", "started (UTC)", "node at start", "figures"], &rows)
    );
    println!(
        "figures: the campaign a workload's figures of its kind come from (predict, evaluate-predictors, simulate, run):\n\
         among those holding runs, the newest done one, else the newest one."
    );
    Ok(())
}

/// The export's examples and every table, from the store's own list so the
/// help never misses one.
fn export_help() -> String {
    format!(
        "Examples:\n  cosched db export --format json > everything.json\n  \
         cosched db export --format csv --table pair_runs --out pair_runs.csv\n  \
         cosched db export --format csv --out ./csv      # one TABLE.csv per table\n\n\
         Tables: {}.",
        cosched_app::db::TABLES.join(", ")
    )
}
