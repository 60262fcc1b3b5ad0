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

/// Which campaigns of the knowledge base (other workloads' measurements,
/// joined by program) a fit may use.
#[derive(Args, Debug, Clone)]
pub struct KbArgs {
    /// Only knowledge-base campaigns taken on this host (as `cosched db
    /// info` and the campaigns' provenance name it).
    #[arg(long, value_name = "HOST")]
    pub kb_node: Option<String>,
    /// Only knowledge-base campaigns started at or after this UTC time:
    /// YYYY-MM-DD, YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS.
    #[arg(long, value_name = "DATE")]
    pub kb_since: Option<String>,
}

impl KbArgs {
    pub fn scope(self) -> anyhow::Result<cosched_app::KbScope> {
        cosched_app::KbScope::parse(self.kb_node, self.kb_since.as_deref())
    }
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

/// Prints a verb's result: its JSON with `--json`, else its text.
pub fn emit(r: &impl cosched_app::render::Render, json: bool) -> anyhow::Result<()> {
    if json {
        print_json(r)
    } else {
        print!("{}", r.doc().text());
        Ok(())
    }
}

/// Prints a registry (`simulate --list-policies`, `predict --list`).
pub fn print_listing(l: &cosched_app::registry::Listing, json: bool) -> anyhow::Result<()> {
    emit(l, json)
}

/// `--in-regime` and `--regime-wait`, as the measuring verbs that gate their
/// repeats on a cache regime take them (pairs, probe, characterize).
#[derive(clap::Args, Debug, Clone)]
pub struct InRegimeArgs {
    /// Count only repeats run wholly in this cache regime: shared (the two
    /// CPUs share a last-level cache) or apart; wait for it before each repeat.
    #[arg(long, value_name = "REGIME", value_parser = parse_regime)]
    pub in_regime: Option<cosched_model::regime::CacheRegime>,
    /// With --in-regime: stop (resumable) once the regime has stayed away
    /// this long, e.g. 30m or 2h.
    #[arg(long, value_name = "TIME", value_parser = parse_budget, default_value = "30m", requires = "in_regime")]
    pub regime_wait: std::time::Duration,
}

/// `shared` or `apart`, as `--regime` and `--in-regime` take them.
pub fn parse_regime(s: &str) -> Result<cosched_model::regime::CacheRegime, String> {
    match s {
        "shared" => Ok(cosched_model::regime::CacheRegime::Shared),
        "apart" => Ok(cosched_model::regime::CacheRegime::Apart),
        _ => Err(format!("`{s}`: expected shared or apart")),
    }
}

/// `900s`, `20m`, `1h` or bare seconds.
pub fn parse_budget(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 's')) => (&t[..i], 1.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * scale < 1e7 => Ok(std::time::Duration::from_secs_f64(v * scale)),
        _ => Err(format!("`{s}`: expected a positive duration such as 900s, 20m or 1h")),
    }
}
