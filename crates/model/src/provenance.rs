//! Provenance of a measurement: machine, software, command and time.
//!
//! Stored beside every figure so a number can be traced back and regenerated.
//! The data lives here (pure); `cosched_measure::provenance::here` fills it in.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel_version: String,
    pub cosched_version: String,
    pub git_commit: String,
    /// Seconds since the Unix epoch when the measurement started.
    pub started_unix: u64,
    /// The exact command line that produced the figure.
    pub command: String,
    /// Seed of the experiment, when it draws random numbers.
    pub seed: Option<u64>,
}

/// The kernel's transparent huge page policy: which allocations may get
/// 2 MiB pages (`enabled`) and how hard the kernel tries to make one
/// (`defrag`). Under `madvise`, a program that asks for huge pages (NumPy
/// does for its large arrays) gets them only when compaction finds free
/// 2 MiB blocks, so a memory-bound program's solo time can move by a
/// quarter from run to run; a knowledge base is comparable across nodes
/// only beside this policy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HugePages {
    /// `always`, `madvise` or `never`.
    pub enabled: String,
    /// `always`, `defer`, `defer+madvise`, `madvise` or `never`.
    pub defrag: String,
}

impl HugePages {
    /// Reads the policy from the text of
    /// `/sys/kernel/mm/transparent_hugepage/enabled` and `.../defrag`, where
    /// the kernel brackets the choice in force: `always [madvise] never`.
    /// `None` when either file has no bracketed choice.
    pub fn from_sysfs(enabled: &str, defrag: &str) -> Option<HugePages> {
        Some(HugePages { enabled: bracketed(enabled)?, defrag: bracketed(defrag)? })
    }

    /// `THP madvise (defrag madvise)`.
    pub fn describe(&self) -> String {
        format!("THP {} (defrag {})", self.enabled, self.defrag)
    }
}

fn bracketed(text: &str) -> Option<String> {
    let word = text.split_whitespace().find(|w| w.len() > 2 && w.starts_with('[') && w.ends_with(']'))?;
    Some(word[1..word.len() - 1].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_choice_of_each_huge_page_file_is_the_policy() {
        let h = HugePages::from_sysfs("always [madvise] never\n", "always defer defer+madvise [madvise] never\n").unwrap();
        assert_eq!(h, HugePages { enabled: "madvise".into(), defrag: "madvise".into() });
        assert_eq!(h.describe(), "THP madvise (defrag madvise)");
        let h = HugePages::from_sysfs("[always] madvise never", "always defer [defer+madvise] madvise never").unwrap();
        assert_eq!((h.enabled.as_str(), h.defrag.as_str()), ("always", "defer+madvise"));
        assert_eq!(HugePages::from_sysfs("always madvise never", "[never]"), None, "no choice in force");
        assert_eq!(HugePages::from_sysfs("[never]", ""), None);
        assert_eq!(HugePages::from_sysfs("[] never", "[never]"), None, "an empty bracket is no choice");
    }
}
