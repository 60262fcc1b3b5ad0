//! Issue 17's live-swap bar with real processes: a `cosched run` under a
//! Lua policy swaps from `noplan.lua` to `conflict-aware.lua` on SIGHUP,
//! refuses a broken script on the next SIGHUP (the old one keeps deciding),
//! completes every job, and has the swap points in its journal and report.
//!
//! Each job waits for a file the test creates, so every signal lands while
//! a known job runs: no timing is assumed.

mod common;
use common::wait_until;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cosched_store::Store;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Four jobs on one core; job X ends once the file `go-X` exists.
fn workload(dir: &Path) -> PathBuf {
    let path = dir.join("w.toml");
    let mut text = String::from("[[pools]]\nname = \"host\"\ncores = 1\n");
    for j in ["a", "b", "c", "d"] {
        let go = dir.join(format!("go-{j}"));
        text.push_str(&format!(
            "[[jobs]]\nname = \"{j}\"\ncommand = \"sh -c 'while [ ! -e {} ]; do sleep 0.01; done'\"\n",
            go.display()
        ));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn journal(db: &Path) -> Vec<(String, String)> {
    let Ok(s) = Store::open_existing(db) else { return vec![] };
    let Ok(runs) = s.runs() else { return vec![] };
    runs.iter()
        .flat_map(|r| s.run_journal(r.id).unwrap_or_default())
        .map(|e| (e.event, e.job.unwrap_or_default()))
        .collect()
}

fn started(db: &Path, job: &str) -> bool {
    journal(db).iter().any(|(e, j)| e == "start" && j == job)
}

#[test]
fn sighup_swaps_a_good_script_refuses_a_broken_one_and_every_job_completes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wl = workload(d);
    let (db, lock, report) = (d.join("c.db"), d.join("lock"), d.join("report"));
    let strategy = d.join("strategy.lua");
    std::fs::copy(root().join("examples/lua/noplan.lua"), &strategy).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .arg("run")
        .arg("--workload")
        .arg(&wl)
        .arg("--policy")
        .arg(format!("lua:path={}", strategy.display()))
        .args(["--solo", "stored", "--json", "--db"])
        .arg(&db)
        .arg("--lock")
        .arg(&lock)
        .arg("--report")
        .arg(&report)
        .env("COSCHED_DATA_DIR", d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let hup = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGHUP).unwrap();
    let go = |j: &str| std::fs::write(d.join(format!("go-{j}")), "").unwrap();

    wait_until("job a starting", || started(&db, "a"));
    std::fs::copy(root().join("examples/lua/conflict-aware.lua"), &strategy).unwrap();
    hup();
    go("a");
    wait_until("job b starting", || started(&db, "b"));
    std::fs::write(&strategy, "-- broken\nfunction decide(view)\n  return {{start = 'a job'}}\nend\n").unwrap();
    hup();
    go("b");
    wait_until("job c starting", || started(&db, "c"));
    go("c");
    go("d");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    let events: Vec<String> = journal(&db).into_iter().map(|(e, j)| if j.is_empty() { e } else { format!("{e} {j}") }).collect();
    assert_eq!(
        events,
        [
            "begin", "start a", "end a", "policy-swap", "start b", "end b", "policy-swap-refused", "start c", "end c", "start d",
            "end d", "done"
        ]
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    let ended_ok = run["jobs"].as_array().unwrap().iter().filter(|j| j["end"]["status"] == "ok").count();
    assert_eq!(ended_ok, 4, "{run}");
    let notes = run["policy_events"].as_array().unwrap();
    assert_eq!(notes.len(), 2);
    assert!(notes[0]["detail"].as_str().unwrap().contains("strategy.lua swapped in"), "{}", notes[0]);
    let refused = notes[1]["detail"].as_str().unwrap();
    assert!(refused.starts_with(&format!("{}:2: decide: decision 1: `start` is a string", strategy.display())), "{refused}");
    assert!(refused.ends_with("the running script keeps deciding"), "{refused}");
    assert!(stderr.contains("policy-swap-refused"), "the swap points are shown as they happen: {stderr}");
    let csv = std::fs::read_to_string(report.join(format!("policy-run{}.csv", run["run"]["id"]))).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(std::fs::read_to_string(report.join("index.html")).unwrap().contains("policy-swap-refused"));
}

#[test]
fn a_script_that_does_not_load_is_bad_input_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lua");
    std::fs::write(&bad, "function decide(view)\n  return {\nend\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["simulate", "--scenario"])
        .arg(root().join("examples/scenarios/seed000.toml"))
        .args(["--orders", "1", "--policy"])
        .arg(format!("lua:path={}", bad.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{}:3:", bad.display())), "{stderr}");
}

#[test]
fn the_governor_verb_sets_and_shows_the_level_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("governor");
    let governor = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cosched")).arg("governor").args(args).env("COSCHED_GOVERNOR", &file).output().unwrap()
    };
    let out = governor(&[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("governor: high ({})\n", file.display()), "never set: high");
    assert_eq!(governor(&["low"]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "low\n");
    let v: serde_json::Value = serde_json::from_slice(&governor(&["--json"]).stdout).unwrap();
    assert_eq!(v["level"], "low");
    let out = governor(&["medium"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values: high, low"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "low\n", "a bad level changes nothing");
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn a_swap_to_a_fifo_or_dev_zero_is_refused_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wl = workload(d);
    let (db, lock) = (d.join("c.db"), d.join("lock"));
    let strategy = d.join("strategy.lua");
    std::fs::copy(root().join("examples/lua/noplan.lua"), &strategy).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .arg("run")
        .arg("--workload")
        .arg(&wl)
        .arg("--policy")
        .arg(format!("lua:path={}", strategy.display()))
        .args(["--solo", "stored", "--json", "--db"])
        .arg(&db)
        .arg("--lock")
        .arg(&lock)
        .env("COSCHED_DATA_DIR", d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let hup = || nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGHUP).unwrap();
    let go = |j: &str| std::fs::write(d.join(format!("go-{j}")), "").unwrap();

    wait_until("job a starting", || started(&db, "a"));
    std::fs::remove_file(&strategy).unwrap();
    mkfifo(&strategy);
    hup();
    go("a");
    // A reader blocked on the FIFO never started b.
    wait_until("job b starting", || started(&db, "b"));
    std::fs::remove_file(&strategy).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &strategy).unwrap();
    hup();
    go("b");
    wait_until("job c starting", || started(&db, "c"));
    go("c");
    go("d");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    let ended_ok = run["jobs"].as_array().unwrap().iter().filter(|j| j["end"]["status"] == "ok").count();
    assert_eq!(ended_ok, 4, "{run}");
    let notes: Vec<&str> = run["policy_events"].as_array().unwrap().iter().map(|n| n["detail"].as_str().unwrap()).collect();
    let shown = strategy.display();
    assert_eq!(
        notes,
        [
            format!("Lua script {shown} is a FIFO; expected a regular file; the running script keeps deciding"),
            format!("Lua script {shown} is a device; expected a regular file; the running script keeps deciding"),
        ]
    );

    // Named as the script from the start: refused before anything runs.
    let fifo = d.join("fifo.lua");
    mkfifo(&fifo);
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["simulate", "--scenario"])
        .arg(root().join("examples/scenarios/seed000.toml"))
        .args(["--orders", "1", "--policy"])
        .arg(format!("lua:path={}", fifo.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("Lua script {} is a FIFO; expected a regular file", fifo.display())), "{stderr}");
}
