//! Test support: a skip that is counted.
//!
//! A test that cannot run on this machine (no Slurm, not root, one CPU)
//! returns early and so passes; a green run then says nothing about whether
//! it ran. [`skip`] prints the reason as before and, when `./test.sh` set
//! `COSCHED_SKIP_LOG`, appends one line naming the test and what it lacked,
//! so `./test.sh` ends with a count of skipped tests, and CI fails when a
//! test that needs only what `.ci/run` installs was skipped.

use std::fs::OpenOptions;
use std::io::Write;

/// What a skipped test lacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lacks {
    /// Something `.ci/run` provides: a Debian package it installs (Slurm,
    /// hwloc, chromium), root, or a build step it runs. CI fails when such
    /// a test skips.
    Installed,
    /// Something of the machine no script can give: a second CPU, a cgroup
    /// controller, a perf tracepoint, an optional application set.
    Machine,
}

impl Lacks {
    fn word(self) -> &'static str {
        match self {
            Lacks::Installed => "installed",
            Lacks::Machine => "machine",
        }
    }
}

/// Records that the calling test is skipped because of `why`; the caller
/// returns right after. Prints `skipped: WHY` to stderr either way.
pub fn skip(lacks: Lacks, why: &str) {
    eprintln!("skipped: {why}");
    let Some(log) = std::env::var_os("COSCHED_SKIP_LOG") else { return };
    let line = format!("{}\t{}\t{}\n", lacks.word(), test_name(), why.replace(['\n', '\t'], " "));
    // One write of a short line to a file opened for appending lands whole
    // even when test binaries run at once.
    if let Ok(mut f) = OpenOptions::new().append(true).create(true).open(&log) {
        let _ = f.write_all(line.as_bytes());
    }
}

/// `BINARY::TEST`: the test binary's name without cargo's hash, and the
/// name libtest gives the thread running the test.
fn test_name() -> String {
    let binary = std::env::args()
        .next()
        .and_then(|a| std::path::Path::new(&a).file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let binary = binary.rsplit_once('-').map_or(binary.as_str(), |(name, _hash)| name).to_string();
    let test = std::thread::current().name().unwrap_or("?").to_string();
    format!("{binary}::{test}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_appended_to_the_log_with_its_kind_and_test_name() {
        let dir = std::env::temp_dir().join(format!("cosched-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips");
        // The only test of this crate: no other thread reads the
        // environment meanwhile.
        std::env::set_var("COSCHED_SKIP_LOG", &log);
        skip(Lacks::Installed, "no slurmctld\n(apt)");
        skip(Lacks::Machine, "one CPU");
        std::env::remove_var("COSCHED_SKIP_LOG");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("installed\tcosched_testkit::tests::a_skip_is_appended"), "{}", lines[0]);
        assert!(lines[0].ends_with("\tno slurmctld (apt)"), "{}", lines[0]);
        assert!(lines[1].starts_with("machine\t") && lines[1].ends_with("\tone CPU"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
