//! Issue 36's process cap with real processes: a job that forks past its
//! `pids` is held at the cap by its cgroup, reported failed, and leaves
//! nothing behind; the run and the next job go on; a job without `pids`
//! gets the documented default.

mod common;
use common::stray_processes;
use std::path::Path;
use std::process::Command;

/// The pids controller cosched would use, if this node gives one to root.
fn pids_controller() -> Result<(), String> {
    // /proc/self belongs to the effective user.
    if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) != 0 {
        return Err("not root: no cgroups".into());
    }
    let v1 = Path::new("/sys/fs/cgroup/pids").is_dir();
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"));
    if v1 || v2 {
        Ok(())
    } else {
        Err("no pids controller (cgroup v1 pids or v2 with pids)".into())
    }
}

/// A line of shell printing the `pids.max` of the cgroup it runs in (v1's
/// pids hierarchy, else v2's unified one).
const PRINT_CAP: &str = "l=$(grep -m1 -E \":pids:|^0::\" /proc/self/cgroup); p=${l##*:}; if [ -e /sys/fs/cgroup/pids$p/pids.max ]; then cat /sys/fs/cgroup/pids$p/pids.max; else cat /sys/fs/cgroup$p/pids.max; fi";

#[test]
fn a_fork_bomb_stops_at_its_pids_cap_is_reported_failed_and_the_run_goes_on() {
    if let Err(why) = pids_controller() {
        // CI runs as root; a missing pids controller is the machine's.
        let lacks = if why.starts_with("not root") { cosched_testkit::Lacks::Installed } else { cosched_testkit::Lacks::Machine };
        cosched_testkit::skip(lacks, &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // In every sleeper's command line: `sleep` reads it as seconds.
    let marker = format!("7777.{}", std::process::id());
    // 500 sleepers asked for, 32 processes allowed: the shell's fork fails
    // at the cap (dash and bash both end with an error then).
    let bomb = format!("{PRINT_CAP}; i=0; while [ $i -lt 500 ]; do sleep {marker} & i=$((i+1)); done; wait");
    let q = "'".repeat(3);
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        format!(
            "[[pools]]\nname = \"host\"\ncores = 1\n\
             [[jobs]]\nname = \"bomb\"\ncommand = [\"sh\", \"-c\", {q}{bomb}{q}]\npids = 32\ntimeout = 60.0\n\
             [[jobs]]\nname = \"next\"\ncommand = [\"sh\", \"-c\", {q}{PRINT_CAP}{q}]\nafter = [\"bomb\"]\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "exclusive", "--solo", "stored", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit code 1: a job did not end ok, and the run names it.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("job `bomb` in run 1 (exclusive repeat 1): failed (exit code 2)"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["runs"][0]["jobs"].as_array().unwrap();
    let status = |name: &str| jobs.iter().find(|j| j["job"] == name).unwrap_or_else(|| panic!("no job {name}: {v}"))["end"]["status"].clone();
    assert!(status("bomb").as_str().unwrap_or_default().starts_with("failed"), "{}", status("bomb"));
    assert_eq!(status("next"), "ok");
    assert!(stray_processes(&[&marker]).is_empty(), "the bomb's sleepers outlived it");
    // Each job's output names the cap of its own cgroup.
    let log = |name: &str| {
        let found = walk(dir.path()).into_iter().find(|p| p.file_name().is_some_and(|f| f == format!("{name}.log").as_str()));
        std::fs::read_to_string(found.unwrap_or_else(|| panic!("no {name}.log under {}", dir.path().display()))).unwrap()
    };
    assert_eq!(log("bomb").lines().next(), Some("32"), "{}", log("bomb"));
    assert_eq!(log("next").trim(), "4096", "the default cap");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
