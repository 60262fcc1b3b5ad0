//! Helpers shared by the CLI's integration tests.

// Each test binary compiles this module on its own and uses only some of it.
#![allow(dead_code)]

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

/// [`wait_until`] for a condition a running child brings about: fails at
/// once, with the child's exit status, if it ends before `ready` holds
/// (its stderr, when piped, is then in the test's own failure output).
pub fn wait_while_alive(child: &mut std::process::Child, what: &str, ready: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("{what} never happened: the child exited with {status}: {err}");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "{what} never happened (child still running after 60 s)");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A fixed provenance for rows a test writes straight into a store.
pub fn prov() -> cosched_model::provenance::Provenance {
    cosched_model::provenance::Provenance {
        hostname: "test".into(),
        cpu_model: "cpu".into(),
        cores: 2,
        kernel_version: "k".into(),
        cosched_version: "v".into(),
        git_commit: "g".into(),
        started_unix: 1,
        command: "synthetic".into(),
        seed: None,
    }
}

/// A job profile (as `ProfileRecord::summary` holds it) of one run of
/// `solo_s` seconds at host load `u`, 10 system calls per second.
pub fn job_profile(solo_s: f64, u: f64) -> cosched_model::profile::JobProfile {
    use cosched_model::profile::{JobProfile, ProfileSummary, SyscallSource};
    let s = ProfileSummary {
        wall_s: solo_s,
        host_load_mean: u,
        host_load_peak: u,
        cores_used: 2.0 * u,
        syscall_rate: Some(10.0),
        syscall_count: Some((10.0 * solo_s).round() as u64),
        syscall_source: SyscallSource::ProcSyscrSyscw,
        vol_ctx_rate: 1.0,
        invol_ctx_rate: 1.0,
        read_bps: 0.0,
        write_bps: 0.0,
        max_rss_kib: 1000,
        fault_rate: 0.0,
        counters: std::collections::BTreeMap::new(),
        stall: None,
        collateral: None,
    };
    JobProfile::from_runs(&[(solo_s, s)], "process", None, Vec::new()).unwrap()
}

/// A lock file of its own for one `cosched` command of a test. Verbs that
/// measure take the node lock; tests run in parallel (and beside other
/// checkouts' tests), so each command gets a private one through
/// `$COSCHED_RUN_LOCK`, which exists for tests only.
pub fn private_lock() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::env::temp_dir().join(format!("cosched-test-{}-{n}.lock", std::process::id()))
}

/// The state letter of a process in /proc/PID/stat ('T' when stopped).
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}
