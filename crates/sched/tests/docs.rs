//! docs/policies.md carries the registry's table; it must not drift from it.

use cosched_model::params::check_generated;

#[test]
fn policies_doc_table_matches_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policies.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if let Err(e) = check_generated(&doc, &cosched_sched::registry::markdown_table()) {
        panic!("{path}: {e}");
    }
}

#[test]
fn policies_doc_has_a_section_per_policy() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policies.md")).unwrap();
    for name in cosched_sched::registry::POLICIES.iter().map(|e| e.name) {
        assert!(doc.contains(&format!("\n## `{name}`\n")), "docs/policies.md has no section `{name}`");
    }
}
