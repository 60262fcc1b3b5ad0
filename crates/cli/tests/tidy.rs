//! The binary stays a thin layer: argument parsing, one call into
//! `cosched-app` per verb, printing. Measurement, the store and the engines
//! are reached through the application only.

use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 3] = ["cosched-measure", "cosched-store", "cosched-sched"];
/// The budget grows with the verbs (each gets its clap struct, help and
/// printing) but not with the work: shared code plus this much per verb.
/// Shared code includes rendering the argument definitions as man pages,
/// completions and fitted examples, which needs clap's tree and so can
/// live nowhere else.
const SHARED_LINES: usize = 500;
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
        // Unit tests at the foot of a file are not work done in the binary.
        let n = std::fs::read_to_string(f).unwrap().lines().take_while(|l| l.trim() != "#[cfg(test)]").count();
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

// ARCHITECTURE.md's rules for the whole workspace, checked: which crate may
// depend on which, no I/O in the pure crates, a module doc on every source
// file, every crate in the document. Change a rule here and in
// ARCHITECTURE.md in the same commit.

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
    ("learn", &["model", "engine", "measure", "store", "predict", "sched"]),
    ("app", &["model", "engine", "measure", "store", "predict", "sched", "report", "cluster", "lua", "slurm", "learn"]),
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
    // The binary's package is `cosched`; every other is cosched-DIR.
    dependencies(manifest).iter().filter_map(|d| d.strip_prefix("cosched-").map(str::to_string)).collect()
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

/// The most lines any source file holds, tests included (issue 43): past
/// it a file holds more than one thing; split it by what it is for.
const MAX_SOURCE_FILE_LINES: usize = 1000;

#[test]
fn no_source_file_is_over_a_thousand_lines() {
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            assert!(n <= MAX_SOURCE_FILE_LINES, "{} has {n} lines (at most {MAX_SOURCE_FILE_LINES}): split it by what each part is for", f.display());
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
    // The numbers of the source documents meant something only to the team
    // that numbered them; docs/papers.md gives the names users read.
    let pattern: Vec<String> = (0..5).map(|n| format!("seed 00{n}")).collect();
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap().to_lowercase();
            for p in &pattern {
                assert!(!text.contains(p.as_str()), "{} says `{p}`: name the paper (docs/papers.md)", f.display());
            }
        }
    }
}

/// What the learning loop must not do (ARCHITECTURE.md, `crates/learn`):
/// run or time anything, print, or write the store it reads.
const NOT_IN_LEARN: &[&str] = &[
    "std::process",
    "Launch",
    "Instant::now",
    "println!",
    "eprintln!",
    ".add_",
    ".put_",
    ".begin_",
    ".finish_campaign",
    "open_store",
];

#[test]
fn the_learning_loop_reads_the_store_and_neither_measures_prints_nor_writes() {
    let mut files = Vec::new();
    sources(&workspace().join("crates/learn/src"), &mut files);
    assert!(!files.is_empty(), "no sources found for learn");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in without_tests(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for pattern in NOT_IN_LEARN {
                assert!(!code.contains(pattern), "{}:{}: `{pattern}` in the learning loop: {line}", f.display(), n + 1);
            }
        }
    }
}

// Issue 43, item 5: verbs return typed results that `cosched_app::render`
// turns into text, `--json` or HTML, not rows formatted in advance or JSON
// built by hand.

fn counts_in(dir: &str, count: impl Fn(&str) -> usize) -> Vec<(String, usize)> {
    let mut files = Vec::new();
    sources(&workspace().join(dir), &mut files);
    assert!(!files.is_empty(), "no sources in {dir}");
    files.sort();
    files
        .iter()
        .map(|f| (f.display().to_string(), count(without_tests(&std::fs::read_to_string(f).unwrap()))))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn pub_string_tables(text: &str) -> usize {
    text.lines().filter(|l| l.trim_start().starts_with("pub ") && l.contains("Vec<Vec<String>>")).count()
}

fn json_macros(text: &str) -> usize {
    text.matches("json!(").count()
}

/// Lines of crates/app/src (tests left out) that are `pub` and carry
/// `Vec<Vec<String>>` (results holding pre-formatted table rows), and
/// `json!(` in crates/app/src and crates/cli/src (JSON built by hand
/// instead of serialized from a result type): there are none.
#[test]
fn results_hold_no_preformatted_tables_and_no_hand_built_json() {
    let tables = counts_in("crates/app/src", pub_string_tables);
    assert!(tables.is_empty(), "public Vec<Vec<String>> in crates/app/src: return a typed result and render it in its `Render` impl; {tables:?}");
    let mut json = counts_in("crates/app/src", json_macros);
    json.extend(counts_in("crates/cli/src", json_macros));
    assert!(json.is_empty(), "json! in crates/app/src or crates/cli/src: derive Serialize on the result instead; {json:?}");
}

/// Items at the top level of `text` after its first `#[cfg(test)]` that are
/// not test code themselves: the counters above stop at that line, so code
/// below a test module would go unseen.
fn code_below_tests(text: &str) -> Vec<String> {
    let Some(start) = text.find("#[cfg(test)]") else { return Vec::new() };
    let mut prev = "";
    let mut found = Vec::new();
    for line in text[start..].lines() {
        if line.starts_with(|c: char| c.is_ascii_alphabetic()) && prev != "#[cfg(test)]" {
            found.push(line.to_string());
        }
        if !line.trim().is_empty() {
            prev = line.trim();
        }
    }
    found
}

#[test]
fn unit_tests_sit_at_the_foot_of_app_and_cli_sources() {
    for dir in ["crates/app/src", "crates/cli/src"] {
        let mut files = Vec::new();
        sources(&workspace().join(dir), &mut files);
        for f in files {
            let below = code_below_tests(&std::fs::read_to_string(&f).unwrap());
            assert!(below.is_empty(), "{}: code below the unit tests (move the tests to the foot): {below:?}", f.display());
        }
    }
}

#[test]
fn the_result_counters_see_what_they_count() {
    assert_eq!(code_below_tests("pub fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n\n#[cfg(test)]\npub(crate) mod more {}\n"), Vec::<String>::new());
    assert_eq!(code_below_tests("#[cfg(test)]\nmod tests {\n}\n\npub struct Late;\n"), vec!["pub struct Late;"]);
    assert_eq!(pub_string_tables("pub rows: Vec<Vec<String>>,\n    pub(super) x: Vec<Vec<String>>,\nlet r: Vec<Vec<String>> = v;\npub fn rows() -> Vec<Vec<String>> {"), 2);
    assert_eq!(json_macros("serde_json::json!({\"a\": json!(1)})"), 2);
}

// Issue 43, item 7: no old-path shims. A module that only re-exports
// another crate's items under an old name, or a re-export of another
// crate's whole module, gives one thing two names; callers name the real
// path. The roots of sched and app keep one documented facade each.

/// The re-exports of other workspace crates' items that sched's and app's
/// lib.rs keep on purpose, as their module docs say why.
const FACADES: &[(&str, &str)] = &[
    ("sched", "pub use cosched_model::metrics::{Event, EventKind, JobId};"),
    ("sched", "pub use cosched_model::run::JobStatus;"),
    ("sched", "pub use cosched_engine::policy::{Cores, Decision, JobOutcome, Policy, PoolInfo, QueuedJob, RunningJob, Variant, View};"),
    ("app", "pub use cosched_learn::knowledge::KbScope;"),
];

/// The statements of `text` (comments and attributes left out, tests
/// left out), each on one line with its whitespace collapsed.
fn statements(text: &str) -> Vec<String> {
    let code: String = without_tests(text)
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.trim_start().starts_with("#["))
        .collect::<Vec<_>>()
        .join(" ");
    code.split(';').map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|s| !s.is_empty()).collect()
}

/// The `pub use` statements of `text` that name another workspace crate
/// than `own` (a crate name such as `cosched_sched`).
fn foreign_re_exports(text: &str, own: &str) -> Vec<String> {
    statements(text)
        .into_iter()
        .filter(|s| s.starts_with("pub use cosched_") && !s.starts_with(&format!("pub use {own}::")))
        .collect()
}

/// Whether a file holds nothing but re-exports of other crates.
fn only_re_exports(text: &str, own: &str) -> bool {
    let all = statements(text);
    !all.is_empty() && foreign_re_exports(text, own).len() == all.len()
}

/// The paths a `pub use` statement names, braces expanded one level
/// (`pub use a::{b, c as d}` names `a::b` and `a::c`).
fn re_exported_paths(statement: &str) -> Vec<String> {
    let body = statement.trim_start_matches("pub use ").trim();
    let Some(open) = body.find('{') else {
        return vec![body.split(" as ").next().unwrap_or(body).trim().to_string()];
    };
    let prefix = &body[..open];
    body[open + 1..]
        .trim_end_matches('}')
        .split(',')
        .map(|item| item.split(" as ").next().unwrap_or("").trim())
        .filter(|item| !item.is_empty() && *item != "self")
        .map(|item| format!("{prefix}{item}"))
        .collect()
}

/// Whether `path` (`cosched_learn::knowledge`) is a module of a workspace
/// crate: a file or directory of that name under its src.
fn is_module(path: &str) -> bool {
    let mut parts = path.split("::");
    let Some(dir) = parts.next().and_then(|c| c.strip_prefix("cosched_")) else { return false };
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return true;
    }
    let base = workspace().join("crates").join(dir).join("src").join(rest.join("/"));
    base.with_extension("rs").is_file() || base.join("mod.rs").is_file()
}

fn crate_name(dir: &str) -> String {
    if dir == "cli" { "cosched".into() } else { format!("cosched_{dir}") }
}

#[test]
fn no_module_exists_only_to_re_export_another_crate() {
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                !only_re_exports(&text, &crate_name(&dir)),
                "{} only re-exports another crate's items under an old path: remove it and name the real path",
                f.display()
            );
        }
    }
}

#[test]
fn no_crate_re_exports_another_crates_module() {
    for dir in crate_dirs() {
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(&dir).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for s in foreign_re_exports(&text, &crate_name(&dir)) {
                let modules: Vec<String> = re_exported_paths(&s).into_iter().filter(|p| is_module(p)).collect();
                assert!(modules.is_empty(), "{}: `{s}` re-exports the module(s) {modules:?} of another crate: callers name the real path", f.display());
            }
        }
    }
}

#[test]
fn sched_and_app_roots_re_export_only_their_documented_facade() {
    for dir in ["sched", "app"] {
        let text = std::fs::read_to_string(workspace().join("crates").join(dir).join("src/lib.rs")).unwrap();
        for s in foreign_re_exports(&text, &crate_name(dir)) {
            assert!(
                FACADES.iter().any(|(d, f)| *d == dir && f.trim_end_matches(';') == s),
                "crates/{dir}/src/lib.rs: `{s}` is not in its documented facade: name the real path instead \
                 (or, if every caller needs it here, document it in the lib.rs doc and in tidy.rs's FACADES)"
            );
        }
    }
    for (dir, f) in FACADES {
        let text = std::fs::read_to_string(workspace().join("crates").join(dir).join("src/lib.rs")).unwrap();
        assert!(text.contains(f), "tidy.rs's FACADES lists `{f}`, which crates/{dir}/src/lib.rs no longer has: drop it here");
    }
}

#[test]
fn the_shim_checks_see_the_shims_issue_43_removed() {
    // sched's old policy.rs, app's old root re-export, and a module with code of its own.
    let old_policy = "//! The policy trait lives in `cosched_engine::policy`.\n\n\
                      pub use cosched_engine::policy::{Cores, Decision,\n    View};\n";
    assert!(only_re_exports(old_policy, "cosched_sched"));
    assert!(!only_re_exports("//! x\npub use cosched_engine::View;\npub fn f() {}\n", "cosched_sched"));
    assert!(!only_re_exports("//! x\npub use crate::a::B;\n", "cosched_sched"));
    let old_app = "pub use cosched_learn::{knowledge, source, training};\npub use common::Ctx;\n";
    let found = foreign_re_exports(old_app, "cosched_app");
    assert_eq!(found, ["pub use cosched_learn::{knowledge, source, training}"]);
    assert_eq!(re_exported_paths(&found[0]), ["cosched_learn::knowledge", "cosched_learn::source", "cosched_learn::training"]);
    assert!(is_module("cosched_learn::knowledge") && is_module("cosched_engine::online"));
    assert!(!is_module("cosched_learn::knowledge::KbScope"));
    assert_eq!(re_exported_paths("pub use cosched_engine::run::{run_node as go, Done}"), ["cosched_engine::run::run_node", "cosched_engine::run::Done"]);
}

/// The test code of a source file: all of a file under `tests/`, else from
/// its first `#[cfg(test)]` on.
fn test_code<'a>(path: &Path, text: &'a str) -> &'a str {
    if path.components().any(|c| c.as_os_str() == "tests") {
        return text;
    }
    text.find("#[cfg(test)]").map_or("", |i| &text[i..])
}

/// A skip printed by hand (`eprintln!` or `println!`): `./test.sh` would
/// not count it.
fn bare_skips(text: &str) -> usize {
    text.matches("println!(\"skipped").count()
}

/// Issue 43, item 8: a test that cannot run here says so through
/// `cosched_testkit::skip`, which `./test.sh` counts and names (and CI fails
/// on when `.ci/run` installs what it lacked); a bare print would pass
/// green and uncounted.
#[test]
fn every_skipping_test_goes_through_the_testkit() {
    for dir in crate_dirs().into_iter().filter(|d| d != "testkit") {
        let mut files = Vec::new();
        for sub in ["src", "tests"] {
            let path = workspace().join("crates").join(&dir).join(sub);
            if path.is_dir() {
                sources(&path, &mut files);
            }
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let n = bare_skips(test_code(&f, &text));
            assert_eq!(n, 0, "{}: {n} skip(s) printed by hand: call cosched_testkit::skip(Lacks::.., why) and return", f.display());
        }
    }
}

#[test]
fn the_skip_counter_sees_test_code_only() {
    let src = "fn f() { eprintln!(\"skipped: x\"); }\n#[cfg(test)]\nmod tests {\n    fn t() { eprintln!(\"skipped: y\"); return; }\n}\n";
    assert_eq!(bare_skips(test_code(Path::new("crates/a/src/x.rs"), src)), 1);
    assert_eq!(bare_skips(test_code(Path::new("crates/a/tests/x.rs"), src)), 2);
    assert_eq!(bare_skips(test_code(Path::new("crates/a/src/x.rs"), "fn f() { eprintln!(\"skipped: x\"); }\n")), 0);
}

/// The top-level modules of app that `text` (one source file, tests and
/// comments left out) names as `crate::MODULE` or in `crate::{..}`.
fn crate_modules_named(text: &str) -> Vec<String> {
    let code: String = without_tests(text).lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(|p| ident(p.trim())).filter(|m| !m.is_empty()));
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found.sort();
    found.dedup();
    found
}

/// A circle of modules in `graph` (module -> modules it names), if any.
fn a_circle(graph: &std::collections::BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn walk(m: &str, g: &std::collections::BTreeMap<String, Vec<String>>, path: &mut Vec<String>, done: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            return Some(path[i..].to_vec());
        }
        if done.iter().any(|d| d == m) {
            return None;
        }
        path.push(m.to_string());
        for n in g.get(m).into_iter().flatten() {
            if let Some(c) = walk(n, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(m.to_string());
        None
    }
    let mut done = Vec::new();
    graph.keys().find_map(|m| walk(m, graph, &mut Vec::new(), &mut done))
}

/// Issue 43, item 1: app's modules import one another one way (verbs call
/// shared services, never the other way round), so each can be read, and
/// moved into a library crate, without the others.
#[test]
fn app_modules_import_one_another_without_a_circle() {
    let src = workspace().join("crates/app/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        let named = crate_modules_named(&std::fs::read_to_string(f).unwrap());
        let edges = graph.entry(top.clone()).or_default();
        edges.extend(named.into_iter().filter(|m| *m != top));
    }
    let modules: Vec<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|m| modules.contains(m));
        edges.sort();
        edges.dedup();
    }
    assert!(graph.len() > 10, "app's modules were not read: {graph:?}");
    assert_eq!(a_circle(&graph), None, "an import circle in crates/app/src: move what both need into one module (or into a library crate)");
}

#[test]
fn the_circle_finder_sees_circles_and_only_those() {
    assert_eq!(crate_modules_named("use crate::run::x;\nuse crate::{common::Ctx, error};\n// crate::gone\n#[cfg(test)]\nuse crate::late;"), ["common", "error", "run"]);
    let g = |edges: &[(&str, &[&str])]| -> std::collections::BTreeMap<String, Vec<String>> {
        edges.iter().map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect())).collect()
    };
    assert_eq!(a_circle(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &[])])), None);
    assert_eq!(a_circle(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])])), Some(vec!["a".into(), "b".into(), "c".into()]));
    assert_eq!(a_circle(&g(&[("run", &["steady"]), ("steady", &["run"])])), Some(vec!["run".into(), "steady".into()]));
}

// Issue 43, item 8: each crate's "Must not" in ARCHITECTURE.md, checked in
// its sources (unit tests left out) where source can show it. The rest are
// above (dependencies, pure crates, the learning loop, the binary) or are
// behaviour the crates' own tests pin down.

/// Per crate: the files the rule covers (empty: all), what must not
/// appear in their code, and the "Must not" it stands for.
const MUST_NOT: &[(&str, &[&str], &[&str], &str)] = &[
    ("sched", &[], &["Instant::now", "SystemTime::now", "std::process", "Command::new", "thread::sleep", "cosched_store"], "read a clock, spawn a process or touch the store"),
    ("cluster", &[], &["Instant::now", "SystemTime::now", "std::process", "Command::new", "cosched_store", "cosched_sched"], "depend on `cosched-sched` (policies arrive as `&mut dyn Policy`), read a clock, touch the store"),
    (
        "lua",
        // What runs inside `decide`; live.rs (reloads, the governor) and
        // io.rs (what `grant=io` gives a script) run outside it.
        &["policy.rs", "raw.rs", "answer.rs", "callback_state.rs", "spares.rs"],
        &["Instant::now", "SystemTime", "std::fs", "File::open", "read_to_string", "env::var", "std::process"],
        "read a clock or a file inside `decide`",
    ),
    ("store", &[], &["std::process", "Command::new", "cosched_measure", "cosched_predict"], "measure or compute predictions"),
    ("report", &[], &["std::process", "Command::new", "Instant::now", "cosched_predict", "cosched_sched"], "measure, predict or decide"),
    ("measure", &[], &["rand::", "dyn Policy", "impl Policy"], "decide anything (no policy logic), or draw random numbers"),
    ("app", &[], &["clap::", "std::env::args", "io::stdout"], "parse a command line or print to stdout"),
];

/// Crates whose manifest must not name these external crates.
const MUST_NOT_DEPEND: &[(&str, &[&str])] = &[("engine", &["rand", "rand_chacha", "rayon"]), ("measure", &["rand", "rand_chacha"])];

/// `println!` or `print!` (stdout), not `eprintln!` / `eprint!`.
fn prints_to_stdout(code: &str) -> bool {
    ["println!", "print!"].iter().any(|m| {
        code.match_indices(m).any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    })
}

#[test]
fn every_crate_keeps_its_must_not_in_its_sources() {
    let doc = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    for (krate, only, patterns, rule) in MUST_NOT {
        assert!(doc.contains(&format!("Must not: {}", rule.split(',').next().unwrap())), "ARCHITECTURE.md's `crates/{krate}` says no `Must not: {rule}`: keep the two alike");
        let mut files = Vec::new();
        sources(&workspace().join("crates").join(krate).join("src"), &mut files);
        files.retain(|f| only.is_empty() || only.iter().any(|o| f.file_name().is_some_and(|n| n == *o)));
        assert!(!files.is_empty() && (only.is_empty() || files.len() == only.len()), "crates/{krate}: the files of the rule were not all found: {only:?}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in without_tests(&text).lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for p in *patterns {
                    assert!(!code.contains(p), "{}:{}: `{p}`: crates/{krate} must not {rule}: {line}", f.display(), n + 1);
                }
                assert!(*krate != "app" || !prints_to_stdout(code), "{}:{}: crates/app must not print to stdout (return the result; the binary prints it): {line}", f.display(), n + 1);
            }
        }
    }
    for (krate, names) in MUST_NOT_DEPEND {
        let manifest = std::fs::read_to_string(workspace().join("crates").join(krate).join("Cargo.toml")).unwrap();
        for d in dependencies(&manifest) {
            assert!(!names.contains(&d.as_str()), "crates/{krate} depends on {d}, which ARCHITECTURE.md forbids it");
        }
    }
}

#[test]
fn the_stdout_finder_tells_print_from_eprint() {
    assert!(prints_to_stdout("    println!(\"x\");"));
    assert!(prints_to_stdout("print!(\"x\")"));
    assert!(!prints_to_stdout("    eprintln!(\"x\"); eprint!(\"y\")"));
    assert!(!prints_to_stdout("let s = format!(\"print\");"));
}

/// Issue 43, item 3: a function that needs many values takes them as one
/// (as `run`'s `Execution` does), not as a list clippy has to be told to
/// allow.
#[test]
fn no_function_is_allowed_too_many_arguments() {
    // Spelled in two halves so this file does not find itself.
    let allowance = ["clippy::too_many", "_arguments"].concat();
    for dir in crate_dirs() {
        let mut files = Vec::new();
        for sub in ["src", "tests", "examples", "benches"] {
            let path = workspace().join("crates").join(&dir).join(sub);
            if path.is_dir() {
                sources(&path, &mut files);
            }
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(!text.contains(&allowance), "{}: `{allowance}`: pass the values as one struct instead", f.display());
        }
    }
}
