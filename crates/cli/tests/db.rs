//! `cosched db` and `--db` run as a binary: info and export show what the
//! library stored, and bad input never creates or changes a database.

mod common;
use std::path::Path;
use std::process::{Command, Output};

use cosched_model::provenance::Provenance;
use cosched_store::{CampaignKind, PairRunRecord, Store, TABLES};

fn cosched(args: &[&str], db_env: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosched"));
    cmd.args(args).env_remove("COSCHED_DB").env_remove("COSCHED_DATA_DIR");
    // Measuring verbs take the node lock: a private one, tests run in parallel.
    cmd.env("COSCHED_RUN_LOCK", common::private_lock());
    if let Some(p) = db_env {
        cmd.env("COSCHED_DB", p);
    }
    cmd.output().expect("cosched runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn prov() -> Provenance {
    Provenance {
        hostname: "node-7".into(),
        cpu_model: "cpu".into(),
        cores: 2,
        kernel_version: "6.1".into(),
        cosched_version: "0.1.0".into(),
        git_commit: "abc".into(),
        started_unix: 1_700_000_000,
        command: "cosched pairs --workload w.toml".into(),
        seed: Some(7),
    }
}

fn run(repeat: u32) -> PairRunRecord {
    PairRunRecord {
        fg_job: "stream".into(),
        bg_job: "compute".into(),
        repeat,
        fg_cpus: vec![0],
        bg_cpus: vec![1],
        shared_cpus: false,
        fg_solo_s: 0.8,
        fg_corun_s: 1.0 + f64::from(repeat) / 10.0,
        bg_solo_s: 0.5,
        bg_corun_s: 0.55,
        fg_relaunches: 0,
        bg_relaunches: 2,
        fg_timing: "work-phase".into(),
        bg_timing: "work-phase".into(),
        regime: Default::default(),
        level: None,
    }
}

/// A database with one pairs campaign of three runs.
fn filled(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("cosched.db");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"repeats":3}"#, &prov()).unwrap();
    for r in 0..3 {
        s.add_pair_run(id, &run(r)).unwrap();
    }
    path
}

#[test]
fn db_help_has_examples() {
    for verb in [vec!["db"], vec!["db", "info"], vec!["db", "export"]] {
        let mut args = verb.clone();
        args.push("--help");
        let out = cosched(&args, None);
        let help = text(&out.stdout);
        assert!(out.status.success(), "{verb:?} --help failed");
        assert!(help.contains("Example") && help.contains("cosched db "), "{verb:?}:\n{help}");
    }
    assert!(text(&cosched(&["--help"], None).stdout).contains("db"), "--help does not list db");
}

#[test]
fn info_shows_path_version_counts_and_campaigns() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let out = cosched(&["db", "info", "--json", "--db", db.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["path"], db.to_str().unwrap());
    assert_eq!(info["schema_version"], cosched_store::latest_version());
    let rows = |t: &str| info["tables"].as_array().unwrap().iter().find(|r| r["table"] == t).unwrap()["rows"].clone();
    assert_eq!((rows("pair_runs"), rows("campaigns"), rows("samples")), (3.into(), 1.into(), 0.into()));
    assert_eq!(info["campaigns"][0]["kind"], "pairs");
    assert_eq!(info["campaigns"][0]["runs"], 3);

    let out = cosched(&["db", "info"], Some(&db));
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let version = format!("version {}", cosched_store::latest_version());
    for want in ["cosched.db", version.as_str(), "pair_runs", "mixed.toml", "running", "2023-11-14 22:13:20"] {
        assert!(table.contains(want), "COSCHED_DB is honoured and info shows {want}:\n{table}");
    }
}

/// The files in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn read_only_verbs_leave_an_empty_file_empty_and_create_no_journal_beside_it() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("empty.db");
    std::fs::write(&db, b"").unwrap();
    for args in [vec!["db", "info"], vec!["db", "check"], vec!["db", "export", "--format", "json"], vec!["runs"]] {
        let mut args = args.clone();
        args.extend(["--db", db.to_str().unwrap()]);
        let out = cosched(&args, None);
        if args[0] == "runs" {
            // No database yet is no runs yet, as sacct lists no jobs.
            assert!(out.status.success() && text(&out.stdout).contains("no runs"), "{args:?}: {}", text(&out.stderr));
        } else {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
            assert!(text(&out.stderr).contains("no database here"), "{args:?}: {}", text(&out.stderr));
        }
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "{args:?} wrote into the empty file");
    }
    assert_eq!(names_in(d.path()), ["empty.db"], "no -journal, -wal or -shm left");
}

#[test]
fn read_only_verbs_on_a_sound_database_leave_no_wal_or_shm_files() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let before = names_in(d.path());
    for args in [vec!["db", "info"], vec!["db", "check"], vec!["db", "export", "--format", "json"], vec!["runs"]] {
        let mut args = args.clone();
        args.extend(["--db", db.to_str().unwrap()]);
        let out = cosched(&args, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    }
    assert_eq!(names_in(d.path()), before);
}

#[test]
fn a_device_as_the_database_is_refused_with_exit_2() {
    let out = cosched(&["db", "info", "--db", "/dev/null"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not a regular file"), "{}", text(&out.stderr));
}

#[test]
fn db_check_refuses_a_database_of_a_future_schema_as_the_other_verbs_do() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.pragma_update(None, "user_version", 9999).unwrap();
    }
    for args in [vec!["db", "check"], vec!["db", "info"]] {
        let mut args = args.clone();
        args.extend(["--db", db.to_str().unwrap()]);
        let out = cosched(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("schema version 9999 is newer"), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn info_and_export_of_a_missing_database_exit_2_and_create_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("none/cosched.db");
    for args in [vec!["db", "info"], vec!["db", "export", "--format", "json"]] {
        let mut args = args.clone();
        args.extend(["--db", db.to_str().unwrap()]);
        let out = cosched(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("none/cosched.db"), "{}", text(&out.stderr));
    }
    assert!(!d.path().join("none").exists());
}

#[test]
fn json_export_round_trips_the_stored_runs() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let out = cosched(&["db", "export", "--format", "json", "--table", "pair_runs"], Some(&db));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 3);
    for (r, row) in rows.iter().enumerate() {
        let want = run(r as u32);
        assert_eq!(row["repeat_index"], r);
        assert_eq!(row["fg_corun_s"].as_f64().unwrap(), want.fg_corun_s);
        assert_eq!(row["fg_slowdown"].as_f64().unwrap(), want.fg_slowdown());
        assert_eq!(row["bg_relaunches"], 2);
        assert_eq!(row["fg_job"], "stream");
    }

    let out = cosched(&["db", "export", "--format", "json"], Some(&db));
    let all: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all.len(), TABLES.len());
    assert_eq!(all["provenance"][0]["seed"], "7");
    assert_eq!(all["campaigns"][0]["params_json"], r#"{"repeats":3}"#);
}

#[test]
fn csv_export_writes_a_header_and_every_row_to_a_file_or_a_directory() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let file = d.path().join("runs.csv");
    let out = cosched(
        &["db", "export", "--format", "csv", "--table", "pair_runs", "--out", file.to_str().unwrap()],
        Some(&db),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 3);
    assert!(lines[0].starts_with("id,campaign_id,provenance_id,fg_job,bg_job,repeat_index"), "{}", lines[0]);
    // Columns in the order the schema added them: the derived slowdowns
    // (version 3), then each repeat's cache regime and level (version 10).
    assert!(lines[0].ends_with(",fg_slowdown,bg_slowdown,c2c_cpus,c2c_before_ns,c2c_after_ns,sharing_level"), "{}", lines[0]);

    let dir = d.path().join("csv");
    let out = cosched(&["db", "export", "--format", "csv", "--out", dir.to_str().unwrap()], Some(&db));
    assert!(out.status.success(), "{}", text(&out.stderr));
    for t in TABLES {
        let body = std::fs::read_to_string(dir.join(format!("{t}.csv"))).unwrap();
        assert!(body.lines().count() >= 1, "{t}.csv has no header");
    }
    assert_eq!(std::fs::read_to_string(dir.join("pair_runs.csv")).unwrap(), csv);
}

#[test]
fn an_unknown_table_or_csv_of_everything_to_stdout_is_bad_usage_and_touches_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let before = std::fs::read(&db).unwrap();
    let out = cosched(&["db", "export", "--format", "csv", "--table", "pairs"], Some(&db));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("no table `pairs`") && err.contains("pair_runs, solo_runs, samples"), "{err}");
    let out = cosched(&["db", "export", "--format", "csv"], Some(&db));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--out DIR"), "{}", text(&out.stderr));
    assert_eq!(cosched(&["db", "export", "--format", "xml"], Some(&db)).status.code(), Some(2));
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_before_measuring_and_left_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    let not_db = d.path().join("calibration.json");
    std::fs::write(&not_db, "{\"compute/t1\": {}}").unwrap();
    for args in [vec!["calibrate", "--kernel", "compute"], vec!["db", "info"]] {
        let out = cosched(&args, Some(&not_db));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("calibration.json") && err.contains("untouched"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&not_db).unwrap(), "{\"compute/t1\": {}}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "no WAL or journal beside it");
}

#[test]
fn calibrate_stores_into_the_database_that_db_info_then_shows() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("sub/cal.db");
    let out = cosched(
        &[
            "calibrate",
            "--kernel",
            "idle",
            "--repeats",
            "1",
            "--run-seconds",
            "0.01",
            "--json",
            "--db",
            db.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = Store::open_existing(&db).unwrap();
    let cals = s.calibrations().unwrap();
    assert_eq!(cals.keys().collect::<Vec<_>>(), ["idle/t1"]);
    assert!(cals["idle/t1"].provenance.command.contains("cosched-kernel"), "{:?}", cals["idle/t1"].provenance);
}

#[test]
fn info_marks_the_campaign_each_workloads_figures_come_from() {
    let d = tempfile::tempdir().unwrap();
    let db = filled(d.path());
    let mut s = Store::open(&db).unwrap();
    s.finish_campaign(cosched_store::CampaignId(1), cosched_store::CampaignStatus::Done).unwrap();
    let newer = s.begin_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"repeats":5}"#, &prov()).unwrap();
    s.add_pair_run(newer, &run(0)).unwrap();
    s.finish_campaign(newer, cosched_store::CampaignStatus::Interrupted).unwrap();
    drop(s);
    let out = cosched(&["db", "info", "--json", "--db", db.to_str().unwrap()], None);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["figures_campaigns"], serde_json::json!([1]), "the done campaign, not the newer interrupted one");
    let out = cosched(&["db", "info", "--db", db.to_str().unwrap()], None);
    let table = text(&out.stdout);
    let row = |id: &str| table.lines().find(|l| l.trim_start_matches(['|', ' ']).starts_with(id)).unwrap_or("").to_string();
    assert!(row("1 ").trim_end_matches(['|', ' ']).ends_with("yes"), "{table}");
    assert!(!row("2 ").contains("yes"), "{table}");
    assert!(table.contains("the newest done one, else the newest one"), "{table}");
}

#[test]
fn db_export_help_lists_every_table_of_the_store() {
    let out = cosched(&["db", "export", "--help"], None);
    assert!(out.status.success());
    let help = text(&out.stdout);
    let missing: Vec<&&str> = TABLES.iter().filter(|t| !help.contains(**t)).collect();
    assert!(missing.is_empty(), "db export --help misses tables {missing:?}:\n{help}");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = cosched(&["--version"], None);
    let v = text(&out.stdout);
    assert!(v.contains("(commit ") || v.contains("not built from a git checkout"), "{v}");
}

#[test]
fn check_tells_a_scenario_from_a_workload_and_validates_both() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("examples/scenarios/memory-half.toml");
    let workload = root.join("examples/memory-half.toml");
    let out = cosched(&["check", scenario.to_str().unwrap(), workload.to_str().unwrap()], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ok, scenario: 8 jobs of 2 programs"), "{stdout}");
    assert!(stdout.contains("ok, 8 jobs"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[pools]]\nname = \"host\"\nkind = \"cpu\"\ncores = 0\n\n[[programs]]\nname = \"a\"\npool = \"host\"\nsolo = 1.0\ncount = 1\n").unwrap();
    let out = cosched(&["check", bad.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("pools[0].cores"), "{}", text(&out.stderr));
}

/// Row counts per table, as `db info --json` reports them.
fn counts(db: &Path) -> serde_json::Value {
    let out = cosched(&["db", "info", "--json", "--db", db.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["tables"].clone()
}

/// Knowledge that travels: a bundle of one store imported into a new one
/// holds every row; a second import adds none; a bundle cut short is
/// refused with exit 2 and the store it was imported into is unchanged.
#[test]
fn a_bundle_exported_then_imported_into_a_new_store_round_trips_and_a_cut_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let from = filled(dir.path());
    let bundle = dir.path().join("node.bundle");
    let b = bundle.to_str().unwrap();
    let out = cosched(&["db", "export", "--bundle", b, "--db", from.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let to = dir.path().join("new").join("cosched.db");
    let t = to.to_str().unwrap();
    let out = cosched(&["db", "import", b, "--db", t, "--json"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["info"]["hostname"].as_str().map(|h| !h.is_empty()), Some(true), "{r}");
    assert_eq!(counts(&from), counts(&to));
    let out = cosched(&["db", "import", b, "--db", t], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("0 rows added"), "{}", text(&out.stdout));
    assert_eq!(counts(&from), counts(&to));

    let bytes = std::fs::read(&bundle).unwrap();
    let cut = dir.path().join("cut.bundle");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    let before = std::fs::read(&to).unwrap();
    let out = cosched(&["db", "import", cut.to_str().unwrap(), "--db", t], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cut.bundle"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&to).unwrap(), before, "a refused bundle changes nothing");
}

/// The project's own measurements (data/): every shipped bundle imports
/// into an empty store with this binary's schema, holds the campaigns
/// data/README.md lists, and a second import adds nothing.
#[test]
fn every_shipped_dataset_imports_into_an_empty_store_with_the_campaigns_its_readme_lists() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let readme = std::fs::read_to_string(data.join("README.md")).unwrap();
    let mut bundles: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bundle"))
        .collect();
    bundles.sort();
    assert!(!bundles.is_empty(), "data/ ships at least one bundle");
    for b in &bundles {
        let name = b.file_name().unwrap().to_str().unwrap();
        assert!(readme.contains(&format!("`{name}`")), "data/README.md describes {name}");
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cosched.db");
        let d = db.to_str().unwrap();
        let out = cosched(&["db", "import", b.to_str().unwrap(), "--db", d], None);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let out = cosched(&["db", "info", "--json", "--db", d], None);
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for c in info["campaigns"].as_array().unwrap() {
            let w = c["workload"].as_str().unwrap();
            assert!(readme.contains(&format!("{name}` | `{w}`")) || readme.contains(&format!("| `{w}` |")), "data/README.md lists {w} of {name}");
        }
        let again = cosched(&["db", "import", b.to_str().unwrap(), "--db", d], None);
        assert!(text(&again.stdout).contains("0 rows added"), "{name}: {}", text(&again.stdout));
    }
}

/// Evidence anyone can regenerate (issue 39): `evaluate --resume` on a store
/// that imported data/io-half.bundle reads the shipped series of the
/// misprediction evaluation back, runs nothing, and gives the figures
/// docs/policies.md states for it.
#[test]
fn evaluate_resume_reads_the_shipped_evaluation_back_with_the_figures_the_docs_state() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cosched.db");
    let d = db.to_str().unwrap();
    let out = cosched(&["db", "import", root.join("data/io-half.bundle").to_str().unwrap(), "--db", d], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = |db: &Path| Store::open_existing(db).unwrap().runs().unwrap().len();
    let before = runs(&db);
    let wl = root.join("examples/io-half-long.toml");
    let out = cosched(
        &[
            "evaluate", "--workload", wl.to_str().unwrap(), "--predictor", "blind", "--baseline", "best-match",
            "--policy", "react:inner=best-match,threshold=1.3,action=suspend,resume=own", "--metric", "worst-slowdown",
            "--min-orders", "6", "--max-orders", "8", "--seed", "7", "--oracle-replays", "0", "--resume", "--db", d,
            "--report", dir.path().join("report").to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(runs(&db), before, "every order was read back, none run");
    let (got, docs) = (text(&out.stdout), std::fs::read_to_string(root.join("docs/policies.md")).unwrap());
    assert!(got.contains("Real runs over all 6 orders"), "{got}");
    // Issue 40: every table within 100 columns, react's label broken after
    // its punctuation, never inside `threshold=1.3`.
    assert!(got.lines().filter(|l| l.starts_with('|')).all(|l| l.chars().count() <= 100), "{got}");
    assert_eq!(got.matches("threshold=1.").count(), got.matches("threshold=1.3").count(), "{got}");
    // The page plots each counted order's paired difference, one box plot per figure.
    let page = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    for f in ["makespan", "mean-turnaround", "worst-slowdown"] {
        assert!(page.contains(&format!("{f}, order by order over all 6 orders")), "no {f} plot:\n{page}");
    }
    assert!(page.matches("<svg").count() >= 3, "{page}");
    // best-match's and react's worst slowdown, mean turnaround and
    // makespan, and the paired differences: as evaluate prints them, and as
    // the docs' table has them (seconds marked there).
    for (figure, in_docs) in [
        ("1.78 [1.74, 1.84]", "1.78 [1.74, 1.84]"),
        ("13.25 [12.68, 13.84]", "13.25 s [12.68, 13.84]"),
        ("22.10 [21.57, 22.87]", "22.10 s [21.57, 22.87]"),
        ("1.30 [1.23, 1.40]", "1.30 [1.23, 1.40]"),
        ("12.66 [11.78, 13.24]", "12.66 s [11.78, 13.24]"),
        ("20.86 [20.19, 22.21]", "20.86 s [20.19, 22.21]"),
        ("-24.9 % [-34.3, -18.6]", "-24.9 % [-34.3, -18.6]"),
        ("-6.6 % [-7.4, +4.3]", "-6.6 % [-7.4, +4.3]"),
        ("-4.8 % [-13.9, +1.0]", "-4.8 % [-13.9, +1.0]"),
    ] {
        assert!(got.contains(figure), "evaluate gives {figure}:\n{got}");
        assert!(docs.contains(in_docs), "docs/policies.md states {in_docs}");
    }
}

/// The memory-half series shipped in data/memory-half.bundle reads back
/// with `evaluate --resume` (no job run) to the figures README and
/// data/README.md state for it.
#[test]
fn the_shipped_memory_half_series_reads_back_to_the_figures_readme_states() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cosched.db");
    let d = db.to_str().unwrap();
    let out = cosched(&["db", "import", root.join("data/memory-half.bundle").to_str().unwrap(), "--db", d], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = |db: &Path| Store::open_existing(db).unwrap().runs().unwrap().len();
    let before = runs(&db);
    let wl = root.join("examples/memory-half.toml");
    let out = cosched(
        &[
            "evaluate", "--workload", wl.to_str().unwrap(), "--policy", "best-match", "--baseline", "noplan",
            "--metric", "worst-slowdown", "--min-orders", "14", "--max-orders", "14", "--seed", "7",
            "--oracle-replays", "0", "--resume", "--db", d,
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(runs(&db), before, "every order was read back, none run");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stderr.contains("worst-slowdown median -11.4 % [-23.2, -0.8] over 14 orders"), "{stderr}");
    assert!(stdout.contains("1.25 [1.10, 1.35]") && stdout.contains("1.06 [1.03, 1.11]"), "{stdout}");
    for doc in ["README.md", "data/README.md"] {
        let t = std::fs::read_to_string(root.join(doc)).unwrap();
        assert!(t.contains("-11.4 % [-23.2, -0.8]") && t.contains("1.06 against 1.25"), "{doc} states the series' figures");
    }
}
