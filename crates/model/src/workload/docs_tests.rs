//! docs/workload.md is the user's reference for workload files: every
//! example it shows must parse, and every key the parser accepts must have
//! a row in its tables, so the page cannot drift from the code.

use super::parse::{JOB_KEYS, POOL_KEYS, TOP_KEYS, VARIANT_KEYS};

const PAGE: &str = include_str!("../../../../docs/workload.md");

/// The bodies of the page's ```toml blocks, with the line each starts on.
fn toml_blocks(page: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in page.lines().enumerate() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some((i + 2, String::new())),
            (Some(_), "```") => out.push(current.take().unwrap()),
            (Some((_, body)), l) => {
                body.push_str(l);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

#[test]
fn every_example_in_the_workload_reference_parses() {
    let blocks = toml_blocks(PAGE);
    assert!(blocks.len() >= 3, "expected the page's examples, found {}", blocks.len());
    for (line, body) in blocks {
        if let Err(d) = super::parse_workload(&body, "docs/workload.md", Some(2)) {
            panic!("docs/workload.md: the example at line {line} does not parse:\n{d}");
        }
    }
}

#[test]
fn every_key_the_parser_accepts_has_a_row_in_the_workload_reference() {
    let missing: Vec<&str> = TOP_KEYS
        .iter()
        .chain(POOL_KEYS)
        .chain(JOB_KEYS)
        .chain(VARIANT_KEYS)
        .filter(|k| !PAGE.contains(&format!("| `{k}` |")) && !PAGE.contains(&format!("| `{k}`, ")) && !PAGE.contains(&format!(", `{k}` |")) && !PAGE.contains(&format!(", `{k}`, ")))
        .copied()
        .collect();
    assert!(missing.is_empty(), "docs/workload.md has no table row for: {missing:?}");
}
