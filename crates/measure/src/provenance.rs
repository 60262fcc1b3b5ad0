//! Fills in the provenance of a measurement taken on this machine now.

pub use cosched_model::provenance::Provenance;

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
