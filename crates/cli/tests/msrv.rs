//! The declared minimum Rust version is a promise to users building from
//! source: it must be what the locked dependencies need (no lower, or the
//! build fails for them; no higher, or we turn away toolchains that work),
//! every member crate must inherit it, and the install instructions must
//! say it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn version(s: &str) -> Vec<u32> {
    s.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

fn declared() -> String {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("rust-version"))
        .expect("the workspace declares rust-version");
    line.split('"').nth(1).unwrap().to_string()
}

#[test]
fn every_member_crate_inherits_the_workspace_rust_version() {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            if !text.contains("rust-version.workspace = true") {
                missing.push(manifest.display().to_string());
            }
        }
    }
    assert!(missing.is_empty(), "add `rust-version.workspace = true` to: {missing:?}");
}

#[test]
fn install_instructions_name_the_declared_rust_version() {
    let want = format!("Rust >= {}", declared());
    for f in ["README.md", "install.sh"] {
        let text = std::fs::read_to_string(root().join(f)).unwrap();
        assert!(text.contains(&want), "{f} should say `{want}`");
    }
}

/// Reads each locked package's own `rust-version` from cargo's unpacked
/// registry sources (present after any build of the workspace).
#[test]
fn declared_rust_version_is_what_the_lockfile_needs() {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let Ok(registries) = std::fs::read_dir(cargo_home.join("registry/src")) else {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, &format!("no unpacked registry sources under {}", cargo_home.display()));
        return;
    };
    let registries: Vec<PathBuf> = registries.map(|e| e.unwrap().path()).collect();
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let mut need: (Vec<u32>, String) = (vec![0], String::new());
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            let dir = format!("{n}-{}", v.trim_matches('"'));
            let Some(text) =
                registries.iter().find_map(|r| std::fs::read_to_string(r.join(&dir).join("Cargo.toml")).ok())
            else {
                continue; // a workspace member, or a package of another target never unpacked
            };
            let rv = text
                .lines()
                .take_while(|l| !l.starts_with("[dependencies") && !l.starts_with("[lib"))
                .find(|l| l.trim_start().starts_with("rust-version"))
                .and_then(|l| l.split('"').nth(1));
            if let Some(rv) = rv {
                if version(rv) > need.0 {
                    need = (version(rv), format!("{dir} needs {rv}"));
                }
            }
        }
    }
    let declared = declared();
    let mut have = version(&declared);
    have.resize(need.0.len().max(have.len()), 0);
    let mut needed = need.0.clone();
    needed.resize(have.len(), 0);
    assert_eq!(have, needed, "Cargo.toml declares rust-version {declared}, but the lockfile's highest is: {}", need.1);
}
