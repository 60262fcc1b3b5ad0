//! Flags several verbs take, each defined once and flattened into them.

use std::path::PathBuf;

use clap::Args;

/// Where measurements are kept.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// The performance database (SQLite); default: cosched.db in
    /// $COSCHED_DATA_DIR or ~/.local/share/cosched.
    #[arg(long, env = "COSCHED_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// Output for programs.
#[derive(Args, Debug, Clone, Copy)]
pub struct JsonArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// The workload a verb works on.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Workload file (TOML; `cosched check FILE` validates it).
    #[arg(long, value_name = "FILE")]
    pub workload: PathBuf,
}

/// The predictor slowdowns come from (`--model` is its old name).
#[derive(Args, Debug, Clone)]
pub struct PredictorArgs {
    /// The predictor: NAME or NAME:key=value,... (see `cosched predict --list`).
    #[arg(long, alias = "model", value_name = "M")]
    pub predictor: Option<String>,
}

/// The command line of this invocation, for provenance.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// The context of a call into the application from this terminal.
pub fn ctx() -> cosched_app::Ctx<'static> {
    cosched_app::Ctx::new(&crate::progress::Terminal, command_line())
}

/// Prints a value as indented JSON.
pub fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Prints a registry (`simulate --list-policies`, `predict --list`).
pub fn print_listing(l: &cosched_app::registry::Listing, json: bool) -> anyhow::Result<()> {
    if json {
        print_json(&l.json)
    } else {
        print!("{}", l.text);
        Ok(())
    }
}
