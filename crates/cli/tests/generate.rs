//! `cosched generate` makes what install.sh installs: a man page per verb
//! (`man cosched-run`) and a bash completion script that knows every verb.

use std::process::Command;

fn cosched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("cosched runs")
}

#[test]
fn man_pages_cover_the_binary_every_verb_and_nested_verbs() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosched(&["generate", "man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for page in ["cosched.1", "cosched-run.1", "cosched-simulate.1", "cosched-db-export.1", "cosched-bench-simulate.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page} is not a man page");
    }
    let run = std::fs::read_to_string(dir.path().join("cosched-run.1")).unwrap();
    assert!(run.contains("workload"), "cosched-run.1 documents --workload");
}

#[test]
fn bash_completion_offers_every_verb() {
    let out = cosched(&["generate", "completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for verb in ["run", "simulate", "evaluate", "pairs", "profile", "demo", "check", "db"] {
        assert!(script.contains(verb), "completion lacks `{verb}`");
    }
    assert!(script.contains("complete -F _cosched"), "registers the function for `cosched`");
}

