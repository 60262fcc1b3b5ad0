//! The binary stays a thin layer: argument parsing, one call into
//! `cosched-app` per verb, printing. Measurement, the store and the engines
//! are reached through the application only.

use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 3] = ["cosched-measure", "cosched-store", "cosched-sched"];
/// The budget grows with the verbs (each gets its clap struct, help and
/// printing) but not with the work: shared code plus this much per verb.
const SHARED_LINES: usize = 400;
const LINES_PER_VERB: usize = 130;
/// No one verb's module may grow into an application of its own.
const MAX_FILE_LINES: usize = 300;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `[dependencies]` table of a manifest (not dev- or build-dependencies:
/// the integration tests may seed a database directly).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut inside = false;
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("");
            deps.push(name.trim_matches('"').to_string());
        }
    }
    deps
}

#[test]
fn the_binary_does_not_depend_on_measure_store_or_sched() {
    let manifest = std::fs::read_to_string(crate_dir().join("Cargo.toml")).unwrap();
    let deps = dependencies(&manifest);
    assert!(deps.iter().any(|d| d == "cosched-app"), "the manifest's dependencies were not read: {deps:?}");
    for name in FORBIDDEN {
        assert!(!deps.iter().any(|d| d == name), "crates/cli/Cargo.toml depends on {name}; go through cosched-app");
    }
}

#[test]
fn no_source_of_the_binary_names_measure_store_or_sched() {
    let mut files = Vec::new();
    sources(&crate_dir().join("src"), &mut files);
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in FORBIDDEN {
            let path = name.replace('-', "_");
            assert!(!text.contains(&path), "{} mentions {path}; go through cosched-app", file.display());
        }
    }
}

#[test]
fn the_binary_stays_under_its_line_budget() {
    let mut files = Vec::new();
    sources(&crate_dir().join("src"), &mut files);
    let verbs = files
        .iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("cmd")))
        .filter(|f| !f.ends_with("mod.rs") && !f.ends_with("common.rs"))
        .count();
    let budget = SHARED_LINES + LINES_PER_VERB * verbs;
    let mut lines = 0;
    for f in &files {
        let n = std::fs::read_to_string(f).unwrap().lines().count();
        assert!(n <= MAX_FILE_LINES, "{} has {n} lines; a verb's work belongs in cosched-app (at most {MAX_FILE_LINES} here)", f.display());
        lines += n;
    }
    assert!(lines < budget, "crates/cli/src has {lines} lines for {verbs} verbs; work belongs in cosched-app, the budget is {budget}");
}

#[test]
fn the_dependency_reader_sees_only_the_dependencies_table() {
    let manifest = "[package]\nname = \"x\"\n\n[dependencies]\ncosched-app.workspace = true\nserde = { version = \"1\" }\n\n\
                    [dev-dependencies]\ncosched-store.workspace = true\n";
    assert_eq!(dependencies(manifest), ["cosched-app", "serde"]);
}
