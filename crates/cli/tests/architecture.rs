//! ARCHITECTURE.md's rules for the whole workspace, checked: which crate
//! may depend on which, no I/O in the pure crates, a module doc on every
//! source file, every crate in the document. Change a rule here and in
//! ARCHITECTURE.md in the same commit.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each crate directory and the workspace crates its `[dependencies]` may
/// name: "Dependencies point one way" in ARCHITECTURE.md.
const ALLOWED: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("kernels", &["model"]),
    ("engine", &["model"]),
    ("predict", &["model"]),
    ("store", &["model"]),
    ("report", &["model"]),
    ("measure", &["model", "engine"]),
    ("cluster", &["model", "engine"]),
    ("slurm", &["model", "engine"]),
    ("sched", &["model", "engine", "predict"]),
    ("lua", &["model", "engine", "sched"]),
    ("app", &["model", "engine", "measure", "store", "predict", "sched", "report", "cluster", "lua", "slurm"]),
    ("cli", &["model", "report", "app"]),
    ("testkit", &[]),
];

/// Crates that must not touch the machine: they parse what they are handed.
const PURE: &[&str] = &["model", "engine", "predict"];
/// What touching the machine looks like in source.
const IO: &[&str] = &[
    "std::fs",
    "std::process",
    "std::net",
    "env::var",
    "Instant::now",
    "SystemTime::now",
    "OpenOptions",
    "File::open",
    "File::create",
    "thread::sleep",
];

fn crate_dirs() -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    dirs
}

/// The workspace crates (as directory names) named in a manifest's
/// `[dependencies]` table.
fn internal_dependencies(manifest: &str) -> Vec<String> {
    let mut inside = false;
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("").trim_matches('"');
            if let Some(dir) = name.strip_prefix("cosched-") {
                // The binary's package is `cosched`; every other is cosched-DIR.
                deps.push(dir.to_string());
            }
        }
    }
    deps
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

/// A source file without its unit tests (everything from the first
/// `#[cfg(test)]` on: tests may write temporary files).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

#[test]
fn every_crate_depends_only_on_the_crates_architecture_md_allows() {
    let dirs = crate_dirs();
    for dir in &dirs {
        let Some((_, allowed)) = ALLOWED.iter().find(|(d, _)| d == dir) else {
            panic!("crates/{dir} is not in this test's ALLOWED table: add it here and to ARCHITECTURE.md");
        };
        let manifest = std::fs::read_to_string(workspace().join("crates").join(dir).join("Cargo.toml")).unwrap();
        for dep in internal_dependencies(&manifest) {
            assert!(
                allowed.contains(&dep.as_str()),
                "crates/{dir} depends on cosched-{dep}, which ARCHITECTURE.md does not allow (allowed: {allowed:?})"
            );
        }
    }
}

#[test]
fn the_dependency_reader_sees_internal_crates_only_in_the_dependencies_table() {
    let manifest = "[package]\nname = \"cosched-x\"\n[dependencies]\ncosched-model.workspace = true\nserde = \"1\"\n\
                    cosched-engine = { path = \"x\" }\n[dev-dependencies]\ncosched-store.workspace = true\n";
    assert_eq!(internal_dependencies(manifest), ["model", "engine"]);
}

#[test]
fn the_testkit_is_never_a_normal_dependency() {
    for dir in crate_dirs() {
        let manifest = std::fs::read_to_string(workspace().join("crates").join(&dir).join("Cargo.toml")).unwrap();
        assert!(!internal_dependencies(&manifest).iter().any(|d| d == "testkit"), "crates/{dir} depends on cosched-testkit outside [dev-dependencies]");
    }
}

#[test]
fn the_pure_crates_do_no_io_outside_their_tests() {
    for krate in PURE {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(krate).join("src"), &mut files);
        assert!(!files.is_empty(), "no sources found for {krate}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in without_tests(&text).lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for pattern in IO {
                    assert!(!code.contains(pattern), "{}:{}: `{pattern}` in a crate that must do no I/O: {line}", f.display(), n + 1);
                }
            }
        }
    }
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(text.trim_start().starts_with("//!"), "{} has no module doc (`//!` first): say what it is for", f.display());
        }
    }
}

#[test]
fn architecture_md_describes_every_crate() {
    let doc = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    for dir in crate_dirs() {
        assert!(doc.contains(&format!("### `crates/{dir}`")), "ARCHITECTURE.md has no section `crates/{dir}`");
    }
}

#[test]
fn sources_name_papers_not_seed_numbers() {
    // "seed 003(b)" meant something only to the team that numbered the
    // source documents; docs/papers.md gives the names users read.
    let pattern = ["seed 000", "seed 001", "seed 002", "seed 003", "seed 004"];
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap().to_lowercase();
            for p in pattern {
                assert!(!text.contains(p), "{} says `{p}`: name the paper (docs/papers.md)", f.display());
            }
        }
    }
}
