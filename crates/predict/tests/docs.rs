//! docs/predictors.md carries the registry's table; it must not drift from it.

use cosched_model::params::check_generated;

#[test]
fn predictors_doc_table_matches_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/predictors.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if let Err(e) = check_generated(&doc, &cosched_predict::predictors::markdown_table()) {
        panic!("{path}: {e}");
    }
}
