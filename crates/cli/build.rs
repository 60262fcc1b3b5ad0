//! Puts the commit into `cosched --version` (`0.1.0 (commit 1a2b3c4d5e6f)`),
//! so a report or a bug names exactly the code that produced it. Outside a
//! git checkout (a source tarball) it says so instead of guessing.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let v = match commit {
        Some(c) if dirty => format!("{version} (commit {c}, with uncommitted changes)"),
        Some(c) => format!("{version} (commit {c})"),
        None => format!("{version} (not built from a git checkout)"),
    };
    println!("cargo:rustc-env=COSCHED_VERSION={v}");
    // Rebuild when HEAD moves (a commit or checkout appends to its reflog).
    for p in ["HEAD", "logs/HEAD", "index"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
