//! Every table the binary prints fits 100 columns (issue 40): the verbs
//! whose output is cheap to produce here, on the shipped scenarios, with
//! each line of a table (a line starting with `|`) measured in characters.
//! The fitting itself (wrap between words, else row by row) is
//! `cosched_report::fit`'s, tested there; this holds every verb to it.

use std::process::Command;

mod common;

const MAX: usize = 100;

fn cosched(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().unwrap();
    assert!(out.status.success(), "cosched {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Lines of tables in `text` wider than [`MAX`] characters.
fn too_wide(text: &str) -> Vec<(usize, String)> {
    text.lines().filter(|l| l.starts_with('|')).map(|l| (l.chars().count(), l.to_string())).filter(|(n, _)| *n > MAX).collect()
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_width_check_counts_characters_of_table_lines_only() {
    let wide = format!("| {} |", "é".repeat(96));
    assert_eq!(wide.chars().count(), 100);
    assert!(wide.len() > 100, "more bytes than characters");
    assert!(too_wide(&wide).is_empty());
    assert_eq!(too_wide(&format!("| {} |", "x".repeat(97))).len(), 1);
    assert!(too_wide(&"x".repeat(300)).is_empty(), "prose is not a table");
}

#[test]
fn simulate_tables_fit_a_hundred_columns_on_every_shipped_scenario() {
    let dir = std::fs::read_dir(repo("examples/scenarios")).unwrap();
    let mut seen = 0;
    for entry in dir {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
            .args(["simulate", "--orders", "5", "--scenario"])
            .arg(&path)
            .output()
            .unwrap();
        if !out.status.success() {
            // A scenario that needs a database (seed000-measured) prints no table here.
            continue;
        }
        seen += 1;
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().any(|l| l.starts_with('|')), "{}: no table\n{text}", path.display());
        assert!(too_wide(&text).is_empty(), "{}: {:?}", path.display(), too_wide(&text));
        // Issue 40: a source path once reached this output (the oracle's).
        assert!(!text.contains("/src/") && !text.contains(".rs)"), "{}: a source path in the output\n{text}", path.display());
    }
    assert!(seen >= 5, "only {seen} scenarios simulated");
}

#[test]
fn enumerate_node_and_db_tables_fit_a_hundred_columns() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.csv");
    std::fs::write(&m, "2.0,1.0,1.5\n1.0,2.0,1.2\n1.5,1.2,1.9\n").unwrap();
    let db = dir.path().join("s.db");
    {
        // A campaign with the node's conditions at its start: `db info`'s
        // campaign table was 160 columns wide with them.
        let mut s = cosched_store::Store::open(&db).unwrap();
        let c = s.begin_campaign(cosched_store::CampaignKind::Pairs, "a-workload-with-a-long-name.toml", "{}", &common::prov()).unwrap();
        let thp = cosched_model::provenance::HugePages { enabled: "madvise".into(), defrag: "madvise".into() };
        let node = cosched_store::NodeConditions { taken_unix: 5, load: [9.01, 8.63, 5.67], c2c: Some((vec![0, 1], 152.0)), huge_pages: Some(thp) };
        s.add_conditions(c, &node).unwrap();
    }
    let db = db.to_str().unwrap();
    for args in [
        vec!["enumerate", "--programs", "10", "--nodes", "10"],
        vec!["enumerate", "--programs", "3", "--nodes", "3", "--matrix", m.to_str().unwrap()],
        vec!["node"],
        vec!["db", "info", "--db", db],
        vec!["runs", "--db", db],
        vec!["check", &repo("examples/io-half.toml")],
    ] {
        let text = cosched(&args);
        assert!(too_wide(&text).is_empty(), "cosched {args:?}: {:?}", too_wide(&text));
    }
}
