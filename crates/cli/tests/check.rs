//! `cosched check` as a user runs it: every kind of bad input exits 2 with
//! FILE:LINE:COL on stderr, every example passes.
//!
//! Each fixture in fixtures/bad/ starts with `# expect: LINE:COL: TEXT`, the
//! position and message its first diagnostic must have, so adding a case is
//! adding a file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(args)
        .output()
        .expect("cosched runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_bad_fixture_exits_2_at_its_expected_position() {
    let files = toml_files(&manifest_dir().join("tests/fixtures/bad"));
    assert!(files.len() >= 25, "fixtures missing: {files:?}");
    for path in files {
        let content = std::fs::read_to_string(&path).unwrap();
        let expect = content
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| {
                panic!(
                    "{} lacks a `# expect: LINE:COL: TEXT` header",
                    path.display()
                )
            });
        let (pos, message) = expect.split_once(": ").expect("LINE:COL: TEXT");
        let shown = path.display().to_string();
        // A fixed node size keeps the core-count cases independent of the machine running the tests.
        let out = cosched(&["check", "--node-cores", "2", &shown]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{shown}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        let prefix = format!("{shown}:{pos}: ");
        assert!(
            first.starts_with(&prefix),
            "{shown}: first line {first:?} should start with {prefix:?}"
        );
        assert!(
            first.contains(message),
            "{shown}: {first:?} should contain {message:?}"
        );
        assert!(
            first.contains("; expected"),
            "{shown}: {first:?} should say what is expected"
        );
        assert!(
            text(&out.stdout).is_empty(),
            "{shown}: nothing on stdout for a bad file"
        );
    }
}

#[test]
fn every_example_passes_on_this_node() {
    let files = toml_files(&manifest_dir().join("../../examples"));
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        let shown = path.display().to_string();
        let out = cosched(&["check", &shown]);
        assert_eq!(out.status.code(), Some(0), "{shown}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.starts_with(&format!("{shown}: ok, ")), "{stdout}");
    }
}

#[test]
fn summary_names_pools_and_twins() {
    let examples = manifest_dir().join("../../examples");
    let out = cosched(&[
        "check",
        "--node-cores",
        "2",
        examples.join("twins.toml").to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("6 jobs on 1 pool (host: 2 cores)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("twins: solve.1 = solve.2, check-a = check-b"),
        "{stdout}"
    );
    let out = cosched(&[
        "check",
        "--node-cores",
        "2",
        examples.join("seed000.toml").to_str().unwrap(),
    ]);
    assert!(
        text(&out.stdout).contains("ve: accelerator, 2 slots, host load 0.2"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn missing_file_exits_2_naming_the_path() {
    let out = cosched(&["check", "no/such/workload.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no/such/workload.toml: cannot read the file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn one_bad_file_among_good_ones_still_checks_all_and_exits_2() {
    let good = manifest_dir().join("../../examples/pair-stream.toml");
    let bad = manifest_dir().join("tests/fixtures/bad/cycle.toml");
    let out = cosched(&[
        "check",
        "--node-cores",
        "2",
        bad.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stdout).contains("pair-stream.toml: ok"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("1 of 2 files are invalid"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn all_errors_of_a_file_are_printed_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.toml");
    std::fs::write(
        &path,
        "[[jobs]]\nname = \"a\"\nkernel = \"nope\"\nwork = 1\n\n[[jobs]]\nname = \"b\"\nkernel = \"compute\"\nwork = 0\npool = \"gpu\"\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    let out = cosched(&["check", &shown]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let positions: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{shown}:")))
        .map(|l| l.split(": ").next().unwrap())
        .collect();
    assert_eq!(positions, ["3:10", "9:8", "10:8"], "{stderr}");
}

#[test]
fn json_prints_the_resolved_workloads() {
    let examples = manifest_dir().join("../../examples");
    let out = cosched(&[
        "check",
        "--json",
        "--node-cores",
        "2",
        examples.join("twins.toml").to_str().unwrap(),
        examples.join("seed000.toml").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["twins", "seed000"]);
    assert_eq!(v[0]["jobs"][1]["name"], "solve.1");
    assert_eq!(v[0]["jobs"][1]["after"][0], "prep");
    assert_eq!(v[1]["pools"][1]["kind"], "accelerator");
}

#[test]
fn node_cores_flag_checks_for_another_machine() {
    let mixed = manifest_dir().join("../../examples/mixed.toml");
    let out = cosched(&["check", "--node-cores", "1", mixed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("but the node has 1"),
        "{}",
        text(&out.stderr)
    );
    let out = cosched(&["check", "--node-cores", "0", mixed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "0 cores is a usage error");
}

#[test]
fn help_shows_an_example() {
    let out = cosched(&["check", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("cosched check examples/"),
        "{}",
        text(&out.stdout)
    );
}

/// The applications workload needs packages CI does not install
/// (examples/apps/install.sh); where they are, it must check clean.
#[test]
fn the_applications_workload_checks_where_its_packages_are_installed() {
    let have = |p: &str| std::path::Path::new(p).exists();
    if !(have("/usr/bin/lmp") && have("/usr/games/stockfish") && have("/usr/bin/primesieve") && have("/usr/bin/mbw")) {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, "examples/apps/install.sh has not been run on this machine");
        return;
    }
    let file = manifest_dir().join("../../examples/apps/apps.toml");
    let out = cosched(&["check", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("28 jobs"), "{}", text(&out.stdout));
}

/// A scenario that reads measurements is a valid file on a machine whose
/// database does not exist yet: `check` says it needs data and exits 0,
/// and a genuinely bad scenario beside it still fails.
#[test]
fn every_example_scenario_checks_ok_without_a_database_and_one_reading_the_store_says_it_needs_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let mut args: Vec<String> = vec!["check".into(), "--db".into(), db.display().to_string()];
    args.extend(toml_files(&manifest_dir().join("../../examples/scenarios")).iter().map(|p| p.display().to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cosched(&argv);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    let line = stdout.lines().find(|l| l.contains("seed000-measured.toml")).expect("the store-reading scenario is listed");
    assert!(line.contains("ok as a file; needs data"), "{line}");
    assert!(!db.exists(), "checking creates no database");
}

/// Empty answers are answers: `runs` on a missing database lists nothing
/// and exits 0, as sacct does; a verb that needs the database names it and
/// does not tell a user who passed --db to pass --db.
#[test]
fn runs_on_a_missing_database_lists_nothing_and_db_info_does_not_suggest_the_flag_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let db = db.to_str().unwrap();
    let out = cosched(&["runs", "--db", db]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("no runs"), "{}", text(&out.stdout));
    let out = cosched(&["db", "info", "--db", db]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(db) && err.contains("no database here") && !err.contains("pass --db"), "{err}");
    let wl = manifest_dir().join("../../examples/predict12.toml");
    let out = cosched(&["predict", "--predictor", "scn", "--workload", wl.to_str().unwrap(), "--db", db, "stream", "ng-stream"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(db) && !err.contains("pass --db"), "predict: {err}");
}
