//! Fills in the provenance of a measurement taken on this machine now.

pub use cosched_model::provenance::{HugePages, Provenance};

/// Provenance of a measurement starting now on this machine.
pub fn here(command: &str, git_commit: &str, seed: Option<u64>) -> Provenance {
    let uname = nix::sys::utsname::uname().ok();
    let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uname.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
    };
    Provenance {
        hostname: field(|u| u.nodename()),
        cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
        cores: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
        kernel_version: field(|u| u.release()),
        cosched_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: git_commit.to_string(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        command: command.to_string(),
        seed,
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The load average over 1, 5 and 15 minutes (/proc/loadavg): how busy the
/// node was when a measurement started.
pub fn load_average() -> std::io::Result<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg")?)
        .ok_or_else(|| std::io::Error::other("/proc/loadavg does not start with three numbers"))
}

/// The kernel's transparent huge page policy, or `None` where the kernel
/// has no THP (or hides its settings).
pub fn huge_pages() -> Option<HugePages> {
    let dir = std::path::Path::new("/sys/kernel/mm/transparent_hugepage");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    HugePages::from_sysfs(&read("enabled")?, &read("defrag")?)
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0));
    Some([it.next()??, it.next()??, it.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_load_averages_are_read_and_anything_else_is_refused() {
        assert_eq!(parse_loadavg("1.36 1.53 1.54 2/215 16472\n"), Some([1.36, 1.53, 1.54]));
        assert_eq!(parse_loadavg("1.0 x 2.0"), None);
        assert_eq!(parse_loadavg("1.0 2.0"), None);
        assert!(load_average().is_ok(), "this is Linux");
    }
}
