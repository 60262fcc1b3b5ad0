//! Every verb documents itself with at least one example.

use std::process::Command;

fn cosched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("run cosched")
}

#[test]
fn every_verb_help_has_an_example() {
    for verb in [
        vec!["check"],
        vec!["node"],
        vec!["calibrate"],
        vec!["demo"],
        vec!["bench"],
        vec!["bench", "kernels"],
        vec!["bench", "profile"],
        vec!["bench", "simulate"],
        vec!["pairs"],
        vec!["db"],
        vec!["enumerate"],
        vec!["simulate"],
        vec!["profile"],
        vec!["probe"],
        vec!["classify"],
        vec!["predict"],
        vec!["evaluate-predictors"],
        vec!["evaluate"],
        vec!["run"],
        vec!["bench", "predictors"],
    ] {
        let mut args = verb.clone();
        args.push("--help");
        let out = cosched(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{verb:?} --help failed");
        assert!(text.contains("Example"), "{verb:?} --help has no example:\n{text}");
        assert!(text.contains("cosched "), "{verb:?} example does not show a command");
    }
}

#[test]
fn top_level_help_lists_every_verb() {
    let text = String::from_utf8_lossy(&cosched(&["--help"]).stdout).into_owned();
    for verb in ["check", "node", "calibrate", "demo", "bench"] {
        assert!(text.contains(verb), "--help does not list {verb}");
    }
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(cosched(&["calibrate", "--kernel", "nope"]).status.code(), Some(2));
    assert_eq!(cosched(&["calibrate", "--cpus", "0-999"]).status.code(), Some(2));
    assert_eq!(cosched(&["no-such-verb"]).status.code(), Some(2));
}

#[test]
fn a_bad_workload_is_rejected_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\nkernel = \"nope\"\nwork = 1\n").unwrap();
    let data = dir.path().join("data");
    let db = data.join("cosched.db");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["calibrate", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:3:10"), "{err}");
    assert!(!db.exists(), "a bad workload created the database");
    assert!(!data.exists(), "a bad workload created the database's directory");
}

/// The verbs `cosched --help` lists.
fn verbs() -> Vec<String> {
    let text = String::from_utf8_lossy(&cosched(&["--help"]).stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Every `` `cosched VERB `` a README or docs/*.md names is a verb of the
/// binary: docs/policies.md once sent users to a `cosched compare` that
/// does not exist (issue 40).
#[test]
fn every_verb_the_docs_name_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let verbs = verbs();
    assert!(verbs.len() > 20 && verbs.contains(&"run".to_string()), "{verbs:?}");
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    files.extend(std::fs::read_dir(root.join("docs")).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "md")));
    let mut unknown = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for rest in line.split("`cosched ").skip(1) {
                let verb: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
                if verb.starts_with(|c: char| c.is_ascii_lowercase()) && !verbs.contains(&verb) {
                    unknown.push(format!("{}:{}: cosched {verb}", f.display(), i + 1));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "verbs the binary does not have:\n{}", unknown.join("\n"));
}
