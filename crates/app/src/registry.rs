//! The registries of policies and predictors as the `--list` flags show
//! them: one row per entry, one line per parameter with its kind, range,
//! default and help, or the same as JSON.

use cosched_model::params::{list_text, Declared};
use serde::Serialize;

use crate::render::{Doc, Render};

/// A registry ready to print: `--json` is the entries, the text one line
/// per entry and per parameter.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Listing {
    pub entries: Vec<Entry>,
    #[serde(skip)]
    pub text: String,
}

/// One registered entry (fields in name order, as `--json` always listed them).
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub description: String,
    pub name: String,
    pub params: Vec<ParamEntry>,
}

/// One parameter of an entry.
#[derive(Debug, Clone, Serialize)]
pub struct ParamEntry {
    pub default: String,
    pub help: String,
    pub kind: String,
    pub name: String,
}

impl Render for Listing {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        // `list_text` ends its last line itself.
        d.line(self.text.strip_suffix('\n').unwrap_or(&self.text));
        d
    }
}

fn listing<E: Declared>(declared: &[E]) -> Listing {
    let entries = declared
        .iter()
        .map(|e| Entry {
            description: e.summary().to_string(),
            name: e.name().to_string(),
            params: e
                .params()
                .iter()
                .map(|p| ParamEntry {
                    default: p.default_text(),
                    help: p.help.to_string(),
                    kind: p.kind.describe(),
                    name: p.name.to_string(),
                })
                .collect(),
        })
        .collect();
    Listing { text: list_text(declared), entries }
}

/// Every registered policy (`cosched simulate --list-policies`), then
/// `lua`, the policy of a script (docs/lua.md).
pub fn policies() -> Listing {
    let mut all = listing(cosched_sched::registry::POLICIES);
    let lua = listing(&[cosched_lua::spec::Entry]);
    all.text.push_str(&lua.text);
    all.entries.extend(lua.entries);
    all
}

/// Every placement strategy (`cosched simulate --list-placements`).
pub fn placements() -> Listing {
    listing(cosched_model::placement::STRATEGIES)
}

/// Every registered predictor (`cosched predict --list`).
pub fn predictors() -> Listing {
    listing(cosched_predict::predictors::PREDICTORS)
}

/// The names a flag takes, by its clap argument id, for shell completion:
/// flags whose values are names from a registry (or a fixed set clap
/// cannot see because the value is parsed by hand), by argument id.
pub fn names_for(id: &str) -> Option<Vec<String>> {
    let of = |l: Listing| -> Vec<String> { l.entries.into_iter().map(|e| e.name).collect() };
    Some(match id {
        "policy" | "policies" | "baseline" | "trace_policy" => of(policies()),
        "predictor" | "predictors" => of(predictors()),
        "kernel" | "kernels" => cosched_model::kernel::KERNELS.iter().map(|k| k.name.to_string()).collect(),
        "in_regime" | "regime" => vec!["shared".into(), "apart".into()],
        "metric" => crate::evaluate::Figure::ALL.iter().map(|f| f.name().to_string()).collect(),
        "solo" => vec!["interleaved".into(), "stored".into()],
        _ => return None,
    })
}

