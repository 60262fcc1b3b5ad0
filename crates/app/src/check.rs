//! `cosched check`: validate workload and scenario files, telling them apart
//! by their tables (`[[jobs]]` or `[[programs]]`).

use std::path::{Path, PathBuf};

use cosched_model::workload::{parse_workload_on, Workload};
use cosched_sched::scenario::Scenario;

/// Files to validate, against a node of `node_cores` cores (default: this
/// one); scenarios that read measurements read them from `db`.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub files: Vec<PathBuf>,
    pub node_cores: Option<u32>,
    pub db: Option<PathBuf>,
}

/// What a valid file turned out to be.
#[derive(Debug)]
pub enum Checked {
    Workload(Workload),
    /// A simulation scenario (`cosched simulate --scenario`).
    Scenario(Scenario),
    /// A well-formed scenario that reads measurements from a database
    /// which does not exist (yet): not invalid, but not usable here.
    NeedsData { why: String },
}

/// Which parser a file is for: a scenario has `[[programs]]` (or a
/// `[slowdown]` table) at its top level and no `[[jobs]]`; everything else
/// is read as a workload, whose diagnostics then say what is missing.
fn is_scenario(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(t) => !t.contains_key("jobs") && (t.contains_key("programs") || t.contains_key("slowdown")),
        Err(_) => false,
    }
}

/// One file's verdict.
#[derive(Debug)]
pub struct FileCheck {
    /// The path as given.
    pub shown: String,
    /// The resolved file, or every diagnostic as FILE:LINE:COL lines.
    pub result: Result<Checked, String>,
}

/// Every file's verdict, in the order given.
#[derive(Debug)]
pub struct CheckReport {
    pub files: Vec<FileCheck>,
}

impl CheckReport {
    pub fn invalid(&self) -> usize {
        self.files.iter().filter(|f| f.result.is_err()).count()
    }
}

/// Reads and validates each file; a bad file does not stop the others.
pub fn check(req: &CheckRequest) -> CheckReport {
    // Another machine's core count says nothing of its memory.
    let limits = match req.node_cores {
        Some(n) => cosched_model::workload::NodeLimits { cores: Some(n), memory_mib: None },
        None => crate::common::node_limits(Some(crate::common::node_cpu_count())),
    };
    let files = req
        .files
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            // Read once, bounded by the larger (scenario) limit; a workload
            // is held to its own.
            let result = match cosched_sched::scenario::read_bounded(path, cosched_sched::scenario::limits::MAX_INPUT_BYTES) {
                Ok(text) if is_scenario(&text) => match crate::simulate::load_scenario(Path::new(path), req.db.as_deref()) {
                    Ok(s) => Ok(Checked::Scenario(s)),
                    // Without its database, the file is judged on what it
                    // says alone: well formed up to the data it reads.
                    Err(e) if !crate::common::db_path(req.db.as_deref()).exists() => match Scenario::load_with(path, None) {
                        Ok(s) => Ok(Checked::Scenario(s)),
                        Err(alone) if alone.to_string().contains(cosched_sched::scenario::NEEDS_STORE) => Ok(Checked::NeedsData { why: e }),
                        Err(alone) => Err(alone.to_string()),
                    },
                    Err(e) => Err(e),
                },
                Ok(text) if text.len() as u64 > cosched_model::workload::limits::MAX_INPUT_BYTES => Err(format!(
                    "{shown}: larger than {} MiB, the most cosched reads of a workload file",
                    cosched_model::workload::limits::MAX_INPUT_BYTES >> 20
                )),
                Ok(text) => parse_workload_on(&text, &shown, &limits)
                    .map_err(|d| d.to_string())
                    .and_then(|w| crate::common::check_commands(&w, &shown).map(|()| w))
                    .map(Checked::Workload),
                Err(e) => Err(format!("{shown}: {e}; expected a readable workload or scenario file (TOML)")),
            };
            FileCheck { shown, result }
        })
        .collect();
    CheckReport { files }
}
