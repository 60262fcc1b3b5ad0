//! `cosched check`: validate workload files.

use std::path::PathBuf;

use cosched_model::workload::{parse_workload, Workload};

/// Files to validate, against a node of `node_cores` cores (default: this one).
#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub files: Vec<PathBuf>,
    pub node_cores: Option<u32>,
}

/// One file's verdict.
#[derive(Debug)]
pub struct FileCheck {
    /// The path as given.
    pub shown: String,
    /// The resolved workload, or every diagnostic as FILE:LINE:COL lines.
    pub result: Result<Workload, String>,
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
                Ok(text) => parse_workload(&text, &shown, node_cores).map_err(|d| d.to_string()),
                Err(e) => Err(format!("{shown}: cannot read the file: {e}; expected a readable workload file (TOML)")),
            };
            FileCheck { shown, result }
        })
        .collect();
    CheckReport { files }
}
