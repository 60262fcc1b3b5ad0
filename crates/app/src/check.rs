//! `cosched check`: validate workload and scenario files, telling them apart
//! by their tables (`[[jobs]]` or `[[programs]]`).

use std::path::{Path, PathBuf};

use cosched_model::workload::{parse_workload, Workload};
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
    let node_cores = req.node_cores.or_else(|| Some(crate::common::node_cpu_count()));
    let files = req
        .files
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            let result = match std::fs::read_to_string(path) {
                Ok(text) if is_scenario(&text) => {
                    crate::simulate::load_scenario(Path::new(path), req.db.as_deref()).map(Checked::Scenario)
                }
                Ok(text) => parse_workload(&text, &shown, node_cores).map(Checked::Workload).map_err(|d| d.to_string()),
                Err(e) => Err(format!("{shown}: cannot read the file: {e}; expected a readable workload or scenario file (TOML)")),
            };
            FileCheck { shown, result }
        })
        .collect();
    CheckReport { files }
}
