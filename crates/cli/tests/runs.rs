//! `cosched runs`: the database option may come before or after `show`, and
//! list filters given to `show` are refused with exit code 2.

mod common;
use std::path::Path;
use std::process::{Command, Output};

fn cosched(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(args)
        .env("COSCHED_RUN_LOCK", common::private_lock())
        .env("COSCHED_DATA_DIR", data)
        .env_remove("COSCHED_DB")
        .output()
        .expect("cosched runs")
}

#[test]
fn db_before_or_after_show_names_the_same_run_and_filters_on_show_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.05'\"\n").unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let r = cosched(&["run", "--workload", wl.to_str().unwrap(), "--policy", "exclusive", "--db", db], dir.path());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));

    let before = cosched(&["runs", "--db", db, "show", "1", "--json"], dir.path());
    let after = cosched(&["runs", "show", "1", "--db", db, "--json"], dir.path());
    assert!(before.status.success(), "{}", String::from_utf8_lossy(&before.stderr));
    assert_eq!(before.stdout, after.stdout);
    let v: serde_json::Value = serde_json::from_slice(&before.stdout).unwrap();
    assert_eq!(v["run"]["id"], 1);

    let filtered = cosched(&["runs", "--workload", "w", "show", "1", "--db", db], dir.path());
    assert_eq!(filtered.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&filtered.stderr).contains("runs show ID"));
}

#[test]
fn a_run_left_running_by_a_dead_runner_is_marked_interrupted_when_a_run_next_takes_the_node() {
    // As an `evaluate` SIGKILLed mid-order leaves its run: `running`, on
    // this host, with no runner alive (the node lock is free).
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let (orphan, elsewhere) = {
        let mut s = cosched_store::Store::open(&db).unwrap();
        let here = cosched_model::provenance::Provenance { hostname: host, ..common::prov() };
        let there = cosched_model::provenance::Provenance { hostname: format!("{}-not-this-node", here.hostname), ..common::prov() };
        (s.begin_run("s", "w", "noplan", 0, "{}", &here).unwrap(), s.begin_run("s2", "w", "noplan", 0, "{}", &there).unwrap())
    };
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = \"true\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "exclusive", "--solo", "stored", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .env("COSCHED_RUN_LOCK", common::private_lock())
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("run {orphan}: its runner died; marked interrupted")), "{err}");
    let s = cosched_store::Store::open_existing(&db).unwrap();
    assert_eq!(s.run(orphan).unwrap().unwrap().status, cosched_store::RunStatus::Interrupted);
    assert_eq!(s.run_journal(orphan).unwrap().last().unwrap().detail, cosched_store::ORPHAN_NOTE);
    assert_eq!(s.run(elsewhere).unwrap().unwrap().status, cosched_store::RunStatus::Running, "another node's run is its own");
}

/// A database that holds no runs yet lists none and exits 0, as sacct does,
/// in text and in JSON.
#[test]
fn runs_on_a_database_without_runs_exits_0_with_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.db");
    drop(cosched_store::Store::open(&db).unwrap());
    let db = db.to_str().unwrap();
    let out = cosched(&["runs", "--db", db], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no runs in the database yet (`cosched run --workload FILE` makes one)\n");
    let out = cosched(&["runs", "--db", db, "--json"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[]\n");
}

/// `runs` and `runs show` number repeats from 1 and write CPU lists as
/// `cosched run` does (`0-1`); JSON keeps the stored 0-based repeat.
#[test]
fn runs_show_numbers_repeats_from_one_and_writes_cpu_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    {
        let mut s = cosched_store::Store::open(&db).unwrap();
        let run = s.begin_run("s", "w", "noplan", 0, "{}", &common::prov()).unwrap();
        let start = cosched_store::RunJobStart {
            job: "a".into(),
            job_index: 0,
            attempt: 0,
            arrival_s: 0.0,
            start_s: 0.5,
            cpus: vec![0, 1],
            mems: vec![],
            pgid: 1,
            beside: vec![],
            predicted: 1.0,
            solo_s: Some(2.0),
        };
        s.run_job_started(run, &start).unwrap();
        let end = cosched_store::RunJobEnd { end_s: 2.5, status: cosched_model::run::JobStatus::Ok, work_s: None, slowdown: Some(1.0) };
        s.run_job_ended(run, 0, 0, &end).unwrap();
        s.finish_run(run, cosched_store::RunStatus::Done, 2.5, "").unwrap();
    }
    let db = db.to_str().unwrap();
    let out = cosched(&["runs", "--db", db], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    // The first row below the header's rule, its wrapped continuation
    // lines (an empty first cell) joined cell by cell.
    let mut lines = list.lines().skip_while(|l| !l.starts_with("|--")).skip(1);
    let mut cells: Vec<String> = lines.next().unwrap_or_default().split('|').map(|c| c.trim().to_string()).collect();
    for more in lines.take_while(|l| l.split('|').nth(1).is_some_and(|c| c.trim().is_empty())) {
        for (cell, part) in cells.iter_mut().zip(more.split('|').map(str::trim)) {
            if !part.is_empty() {
                cell.push(' ');
                cell.push_str(part);
            }
        }
    }
    assert_eq!(cells[1..11], ["1", "1970-01-01 00:00:01", "w", "noplan", "1", "done", "1 (all ok)", "2.50", "2.50", "1.000"], "{list}");
    let out = cosched(&["runs", "show", "1", "--db", db], dir.path());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let job = text.lines().find(|l| l.starts_with("| a ")).unwrap_or_default().to_string();
    let cells: Vec<&str> = job.split('|').map(str::trim).collect();
    assert_eq!(cells[1..11], ["a", "0-1", "0.00", "0.50", "2.50", "ok", "1", "1.000", "1.000", "-"], "{text}");
    let out = cosched(&["runs", "show", "1", "--db", db, "--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["run"]["repeat"].as_u64(), v["jobs"][0]["cpus"].clone()), (Some(0), serde_json::json!([0, 1])));
}
