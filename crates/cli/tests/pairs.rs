//! `cosched pairs`: a campaign is stored run by run, survives Ctrl-C without
//! leaving processes behind, and `--resume` finishes it without redoing work.

mod common;
use common::{stray_processes, wait_until};
use std::path::Path;
use std::process::{Command, Stdio};

use cosched_store::{CampaignStatus, Store};

fn cosched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
}

/// Two short command jobs whose command lines carry a marker, so the test
/// can find any of their processes that outlive the runner.
fn workload(dir: &Path, marker: &str) -> std::path::PathBuf {
    let path = dir.join("w.toml");
    std::fs::write(
        &path,
        format!(
            "[[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.3; : {marker}'\"\n\
             [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.2; : {marker}'\"\n"
        ),
    )
    .unwrap();
    path
}

fn pair_runs(db: &Path) -> usize {
    let Ok(store) = Store::open_existing(db) else { return 0 };
    let Ok(cs) = store.campaigns() else { return 0 };
    cs.iter().map(|c| store.pair_runs(c.id).map(|r| r.len()).unwrap_or(0)).sum()
}

#[test]
fn sigint_leaves_no_process_and_resume_completes_the_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-pairs-test-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let db = dir.path().join("c.db");
    let args = ["--repeats", "2", "--min-repeats", "2", "--svg"];
    let svg = dir.path().join("m.svg");

    let pairs = || {
        let mut c = cosched();
        c.arg("pairs").arg("--workload").arg(&wl).args(args).arg(&svg).arg("--db").arg(&db);
        c
    };
    let child = pairs()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first repeat is stored, i.e. mid-campaign.
    wait_until("storing a run", || pair_runs(&db) > 0);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert_eq!(stray_processes(&[&marker]), Vec::<String>::new(), "stray job processes");

    let stored_before = pair_runs(&db);
    assert!(stored_before < 6, "the campaign finished before the interrupt: {stored_before}");
    {
        let store = Store::open_existing(&db).unwrap();
        let c = store.campaigns().unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, CampaignStatus::Interrupted);
    }

    let out = pairs().arg("--resume").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open_existing(&db).unwrap();
    let c = store.campaigns().unwrap();
    assert_eq!(c.len(), 1, "resume continued the same campaign");
    assert_eq!(c[0].status, CampaignStatus::Done);
    // (a,a), (a,b), (b,b) with exactly two repeats each, none measured twice.
    let runs = store.pair_runs(c[0].id).unwrap();
    assert_eq!(runs.len(), 6);
    // The node's conditions, once at the start and once at the resume.
    let conds = store.conditions(c[0].id).unwrap();
    assert_eq!(conds.len(), 2, "{conds:?}");
    assert!(conds.iter().all(|k| k.load.iter().all(|l| *l >= 0.0)));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("n=4"), "each ordered cell of (a,b) has 2 repeats, diagonal cells 4:\n{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn a_bad_workload_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = \"ten\"\n").unwrap();
    let db = dir.path().join("c.db");
    let out = cosched().arg("pairs").arg("--workload").arg(&wl).arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml:4:"));
    assert!(!db.exists());
}

#[test]
fn the_heatmap_goes_beside_the_database_not_into_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let marker = format!("cosched-pairs-svg-test-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let db = dir.path().join("data").join("c.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let out = cosched()
        .current_dir(cwd.path())
        .args(["pairs", "--repeats", "1", "--min-repeats", "1", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = dir.path().join("data/figures/pairs-w.svg");
    assert!(svg.is_file(), "expected {}", svg.display());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&svg.display().to_string()), "the path is printed");
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing written into the current directory");
}
