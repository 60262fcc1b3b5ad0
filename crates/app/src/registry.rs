//! The registries of policies and predictors as the `--list` flags show
//! them: one row per entry, one line per parameter with its kind, range,
//! default and help, or the same as JSON.

use cosched_model::params::{list_text, Declared};
use serde_json::{json, Value};

/// A registry ready to print.
pub struct Listing {
    /// One line per entry and per parameter.
    pub text: String,
    /// `[{name, description, params: [{name, kind, default, help}]}]`.
    pub json: Value,
}

fn listing<E: Declared>(entries: &[E]) -> Listing {
    let json = entries
        .iter()
        .map(|e| {
            let params: Vec<Value> = e
                .params()
                .iter()
                .map(|p| json!({"name": p.name, "kind": p.kind.describe(), "default": p.default_text(), "help": p.help}))
                .collect();
            json!({"name": e.name(), "description": e.summary(), "params": params})
        })
        .collect();
    Listing { text: list_text(entries), json: Value::Array(json) }
}

/// Every registered policy (`cosched simulate --list-policies`), then
/// `lua`, the policy of a script (docs/lua.md).
pub fn policies() -> Listing {
    let mut all = listing(cosched_sched::registry::POLICIES);
    let lua = listing(&[cosched_lua::spec::Entry]);
    all.text.push_str(&lua.text);
    if let (serde_json::Value::Array(a), serde_json::Value::Array(b)) = (&mut all.json, lua.json) {
        a.extend(b);
    }
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
    let of = |l: Listing| -> Vec<String> {
        l.json.as_array().into_iter().flatten().filter_map(|e| e["name"].as_str().map(str::to_string)).collect()
    };
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

