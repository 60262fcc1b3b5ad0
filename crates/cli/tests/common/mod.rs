//! Helpers shared by the CLI's integration tests.

/// Processes (pid: command line) whose command line contains one of the
/// markers: jobs a test started that outlived the runner. Cargo's own
/// processes, whose command lines may repeat the marker, are left out.
pub fn stray_processes(markers: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if markers.iter().any(|m| cmd.contains(m)) && !cmd.contains("cargo") {
                out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// Polls `ready` every 20 ms until it holds; fails the test naming `what`
/// after a minute (a bound on a hang, not a timing expectation).
pub fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ready() {
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "{what} never happened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
