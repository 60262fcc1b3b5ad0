//! Options and helpers shared by several verbs.

use std::path::PathBuf;

use clap::Args;

/// Where measurements are kept.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// Data directory holding the performance database.
    #[arg(long, env = "COSCHED_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

impl DataArgs {
    pub fn dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(cosched_store::default_data_dir)
    }
}

/// The git commit this binary was built from, for provenance.
pub const GIT_COMMIT: &str = env!("COSCHED_GIT_COMMIT");

/// Parses a CPU list such as `0`, `0,1` or `0-3`, checking each CPU exists.
pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let cpus = cosched_model::topology::parse_cpulist(s).map_err(|e| e.to_string())?;
    let n = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
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
pub fn load_workload(path: &std::path::Path) -> anyhow::Result<cosched_model::workload::Workload> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::exit::bad_input(format!("{shown}: cannot read the workload file: {e}")))?;
    let cores = std::thread::available_parallelism().ok().and_then(|n| u32::try_from(n.get()).ok());
    cosched_model::workload::parse_workload(&text, &shown, cores)
        .map_err(|d| crate::exit::bad_input(d.to_string()))
}
