//! `cosched probe` and `cosched classify`: every repeat is stored, the
//! curves are written, a class comes back with its reason, Ctrl-C leaves no
//! process behind, and bad input is refused before anything is written.

mod common;
use common::{stray_processes, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cosched_store::{CampaignKind, CampaignStatus, Store};

fn cosched() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A tiny core-bound kernel job (a few milliseconds) and one never probed.
fn workload(dir: &Path) -> PathBuf {
    let path = dir.join("w.toml");
    std::fs::write(
        &path,
        "[[jobs]]\nname = \"tiny\"\nkernel = \"compute\"\nwork = 100\n\n\
         [[jobs]]\nname = \"other\"\nkernel = \"compute\"\nwork = 50\n",
    )
    .unwrap();
    path
}

fn probe(wl: &Path, db: &Path, extra: &[&str]) -> Output {
    cosched()
        .arg("probe")
        .arg("--workload")
        .arg(wl)
        .args(["--job", "tiny", "--intensities", "1.0", "--repeats", "1", "--stressor-seconds", "0.2"])
        .args(extra)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

#[test]
fn probe_stores_each_repeat_writes_the_curves_and_classify_names_a_class() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    let db = dir.path().join("p.db");
    let plots = dir.path().join("plots");
    let out = probe(&wl, &db, &["--sizes-kib", "64,65536", "--svg-dir", plots.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("64 KiB") && stdout.contains("64 MiB"), "{stdout}");

    {
        let store = Store::open_existing(&db).unwrap();
        let c = store.campaigns().unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].kind, c[0].status), (CampaignKind::Probe, CampaignStatus::Done));
        let points = store.probe_points(c[0].id).unwrap();
        assert_eq!(points.len(), 2, "two levels x one repeat");
        let mut sizes: Vec<u64> = points.iter().map(|p| p.working_set_kib).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![64, 65536]);
        assert!(points.iter().all(|p| p.job == "tiny" && p.stressor == "distgen" && p.intensity == 1.0));
        let cals = store.calibrations().unwrap();
        assert_eq!(cals.keys().filter(|k| k.starts_with("distgen/")).count(), 2, "one stressor calibration per level");
    }
    let svg = std::fs::read_to_string(plots.join("probe-w-tiny.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("sensitivity"));
    assert_eq!(svg.matches(r#"class="whisker""#).count(), 4, "two points in each of two panels");

    // A solo profile of the job puts its host load U beside the class.
    let prof = cosched()
        .arg("profile")
        .arg("--workload")
        .arg(&wl)
        .args(["--job", "tiny", "--repeats", "1", "--interval", "50ms", "--syscalls", "proc", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(prof.status.success(), "{}", text(&prof.stderr));

    // The LLC is given so the two sizes fall on both sides of it on any machine.
    let out = cosched()
        .args(["classify", "--json", "--llc-kib", "1024", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let tiny = &rows[0];
    assert_eq!(tiny["job"], "tiny");
    assert_eq!(tiny["status"], "classified");
    assert_eq!(tiny["levels"], 2);
    assert!(["N", "C", "S"].contains(&tiny["class"].as_str().unwrap()), "{tiny}");
    assert!(!tiny["reason"].as_str().unwrap().is_empty());
    assert!(tiny["host_load"].as_f64().is_some(), "profiled, so U is shown: {tiny}");
    let other = &rows[1];
    assert_eq!(other["status"], "not probed");
    let reason = other["reason"].as_str().unwrap();
    assert!(reason.contains("cosched probe --workload") && reason.contains("--job other"), "{reason}");

    let table = cosched().args(["classify", "--llc-kib", "1024", "--db"]).arg(&db).output().unwrap();
    assert!(table.status.success(), "{}", text(&table.stderr));
    let t = text(&table.stdout);
    assert!(t.contains("| tiny") && t.contains("slows the stressor"), "{t}");

    // A later probe at a calibrated level reuses the stored calibration.
    let again = probe(&wl, &db, &["--sizes-kib", "64", "--svg-dir", plots.to_str().unwrap()]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(!text(&again.stderr).contains("calibrating the distgen"), "{}", text(&again.stderr));
}

/// A probe with no stressor size beyond the LLC cannot tell the classes
/// apart, and classify says so rather than guessing.
#[test]
fn a_probe_on_one_side_of_the_llc_is_unclassifiable_not_misclassified() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    let db = dir.path().join("p.db");
    let out = probe(&wl, &db, &["--sizes-kib", "64", "--svg-dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = cosched().args(["classify", "--json", "--llc-kib", "1024", "--db"]).arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "unclassifiable");
    assert!(rows[0]["class"].is_null());
    assert!(rows[0]["reason"].as_str().unwrap().contains("beyond the LLC"));
}

#[test]
fn a_bad_workload_is_exit_2_and_creates_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = \"ten\"\n").unwrap();
    let db = dir.path().join("p.db");
    let out = cosched().arg("probe").arg("--workload").arg(&wl).arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("bad.toml:4:"), "{}", text(&out.stderr));
    assert!(!db.exists());
}

#[test]
fn bad_levels_and_unknown_jobs_are_exit_2_and_create_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    let db = dir.path().join("p.db");
    for (args, says) in [
        (vec!["--sizes-kib", "64,lots"], "`lots`"),
        (vec!["--sizes-kib", "0"], "--sizes-kib"),
        (vec!["--sizes-kib", ""], "empty list"),
        (vec!["--intensities", "1.5"], "--intensities"),
        (vec!["--repeats", "0"], "--repeats"),
        (vec!["--job", "nope"], "its jobs are: tiny, other"),
    ] {
        let out = cosched().arg("probe").arg("--workload").arg(&wl).args(&args).arg("--db").arg(&db).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!db.exists(), "{args:?} created the database");
    }
}

#[test]
fn classify_without_a_database_is_exit_2_and_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let out = cosched().arg("classify").arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!db.exists());
}

fn stored_points(db: &Path) -> usize {
    let Ok(store) = Store::open_existing(db) else { return 0 };
    let Ok(cs) = store.campaigns() else { return 0 };
    cs.iter().map(|c| store.probe_points(c.id).map(|p| p.len()).unwrap_or(0)).sum()
}

#[test]
fn ctrl_c_marks_the_campaign_interrupted_exits_130_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-probe-test-{}", std::process::id());
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, format!("[[jobs]]\nname = \"slow\"\ncommand = \"sh -c 'sleep 0.4; : {marker}'\"\n")).unwrap();
    let db = dir.path().join("p.db");
    // Sizes no other test uses, so the stressor's command line identifies it.
    let sizes = ["71", "73", "79"];
    let child = cosched()
        .arg("probe")
        .arg("--workload")
        .arg(&wl)
        .args(["--sizes-kib", &sizes.join(","), "--intensities", "1.0", "--repeats", "1", "--stressor-seconds", "0.2"])
        .arg("--svg-dir")
        .arg(dir.path())
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("storing a probe point", || stored_points(&db) > 0);
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted") && stderr.contains("--job slow"), "{stderr}");

    let stressor_markers: Vec<String> = sizes.iter().map(|s| format!("--sizes-kib {s} ")).collect();
    let mut markers: Vec<&str> = stressor_markers.iter().map(String::as_str).collect();
    markers.push(&marker);
    assert_eq!(stray_processes(&markers), Vec::<String>::new(), "stray job or stressor processes");

    let store = Store::open_existing(&db).unwrap();
    let c = store.campaigns().unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, CampaignStatus::Interrupted);
    let n = store.probe_points(c[0].id).unwrap().len();
    assert!((1..sizes.len()).contains(&n), "interrupted mid-campaign, yet {n} points stored");
}

#[test]
fn probe_and_classify_help_show_examples() {
    for verb in ["probe", "classify"] {
        let out = cosched().args([verb, "--help"]).output().unwrap();
        let help = text(&out.stdout);
        assert!(out.status.success(), "{verb} --help failed");
        assert!(help.contains("Examples:") && help.contains(&format!("cosched {verb} ")), "{verb}:\n{help}");
    }
}
