//! `cosched profile --miss-curve` with valgrind's cachegrind: a STREAM triad
//! over 3 MiB of arrays, ten passes, misses every line of a 512 KiB last
//! level on every pass but only on the first pass once the last level holds
//! the arrays (8 MiB), and the curve is stored in the job's profile.

mod common;
use std::process::Command;

use cosched_testkit::{skip, Lacks};

#[test]
fn a_triad_over_3_mib_misses_a_512k_last_level_on_every_pass_and_an_8m_one_only_on_the_first() {
    if Command::new("valgrind").arg("--version").output().map_or(true, |o| !o.status.success()) {
        skip(Lacks::Installed, "valgrind not found (Debian: valgrind; ./install.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"triad\"\nkernel = \"stream\"\nparams = { array_mib = 1 }\nwork = 10\n").unwrap();
    let db = dir.path().join("c.db");
    let kernel = std::path::Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["profile", "--repeats", "1", "--syscalls", "proc", "--interval", "100ms", "--miss-curve", "512K,8M", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .env("COSCHED_RUN_LOCK", common::private_lock())
        .env("COSCHED_KERNEL", kernel)
        .env_remove("COSCHED_DATA_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // --json prints the profile records as stored.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let curve: Vec<cosched_model::profile::MissPoint> = serde_json::from_value(v[0]["summary"]["miss_curve"].clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
    assert_eq!(curve.iter().map(|m| m.ll_kib).collect::<Vec<_>>(), [512, 8192], "{curve:?}");
    assert!(curve.iter().all(|m| m.refs > 0 && m.misses <= m.refs), "{curve:?}");
    // Nothing stays cached at 512 KiB: every pass misses each line of the
    // three arrays. At 8 MiB only the first touch does, one pass in eleven
    // (the set-up's and the first pass's), so the ratio falls well below a
    // third whatever the compiler made of the loop (vector loads change
    // the references per line, not the passes).
    let (small, large) = (curve[0].ratio, curve[1].ratio);
    assert!(small > 0.0, "512 KiB: {curve:?}");
    assert!(large < small / 3.0, "8 MiB: {large} against {small} at 512 KiB");
}


/// A SIGTERM sent to cosched alone (not to its process group, as a
/// terminal's Ctrl-C is) while cachegrind simulates a job ends the
/// profile at once: cosched exits as interrupted (143) and leaves no
/// valgrind running.
#[test]
fn a_sigterm_during_a_simulation_ends_the_profile_and_its_valgrind() {
    if Command::new("valgrind").arg("--version").output().map_or(true, |o| !o.status.success()) {
        skip(Lacks::Installed, "valgrind not found (Debian: valgrind; ./install.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    // About 0.2 s alone, a minute or more under cachegrind; its odd work
    // amount names its valgrind among other tests' processes.
    std::fs::write(&wl, "[[jobs]]\nname = \"long-triad\"\nkernel = \"stream\"\nparams = { array_mib = 16 }\nwork = 43\n").unwrap();
    let kernel = std::path::Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["profile", "--repeats", "1", "--syscalls", "proc", "--miss-curve", "512K", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .env("COSCHED_RUN_LOCK", common::private_lock())
        .env("COSCHED_KERNEL", kernel)
        .env_remove("COSCHED_DATA_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until valgrind runs.
    let began = std::time::Instant::now();
    let valgrind = || {
        let out = Command::new("pgrep").args(["-f", "valgrind.*cosched-kernel stream --work 43 "]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect::<Vec<_>>()
    };
    while valgrind().is_empty() {
        assert!(began.elapsed() < std::time::Duration::from_secs(60), "valgrind never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(stopped.elapsed() < std::time::Duration::from_secs(10), "profile still running 10 s after SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(143), "{status}");
    assert!(valgrind().is_empty(), "valgrind left running: {:?}", valgrind());
}
