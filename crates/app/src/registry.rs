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
    policies_in(cosched_sched::registry::POLICIES)
}

/// [`policies`] of a given table: every output reads its names from the
/// table, so a policy added to it is listed, documented and completed
/// without another edit (the test below adds one).
pub fn policies_in(table: &[cosched_sched::registry::PolicyEntry]) -> Listing {
    let mut all = listing(table);
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
    predictors_in(cosched_predict::predictors::PREDICTORS)
}

/// [`predictors`] of a given table.
pub fn predictors_in(table: &[cosched_predict::predictors::PredictorEntry]) -> Listing {
    listing(table)
}

/// The names a flag takes, by its clap argument id, for shell completion:
/// flags whose values are names from a registry (or a fixed set clap
/// cannot see because the value is parsed by hand), by argument id.
pub fn names_for(id: &str) -> Option<Vec<String>> {
    names_in(id, &policies(), &predictors())
}

/// [`names_for`] with the policies and predictors of given listings.
pub fn names_in(id: &str, policies: &Listing, predictors: &Listing) -> Option<Vec<String>> {
    let of = |l: &Listing| -> Vec<String> { l.entries.iter().map(|e| e.name.clone()).collect() };
    Some(match id {
        "policy" | "policies" | "baseline" | "trace_policy" => of(policies),
        "predictor" | "predictors" => of(predictors),
        "kernel" | "kernels" => cosched_model::kernel::KERNELS.iter().map(|k| k.name.to_string()).collect(),
        "in_regime" | "regime" => vec!["shared".into(), "apart".into()],
        "metric" => crate::evaluate::Figure::ALL.iter().map(|f| f.name().to_string()).collect(),
        "solo" => vec!["interleaved".into(), "stored".into()],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    //! Issue 43's bar: adding a policy or a predictor is one new type and
    //! one registry entry. Each is added here, from outside its crate, to a
    //! copy of its registry; `--list-policies` / `predict --list` (text and
    //! JSON), the docs table and shell completion all show it with no
    //! other edit, and the registry builds it by name.
    use super::*;
    use cosched_model::params::{markdown_table, Kind, Param, ParamSet, Range};
    use cosched_predict::predictors::PredictorEntry;
    use cosched_predict::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
    use cosched_sched::registry::PolicyEntry;
    use cosched_sched::{Decision, Policy, View};

    /// Starts the first waiting job on the first pool with room: a policy
    /// no registry knows.
    struct FirstFit;

    impl Policy for FirstFit {
        fn decide(&mut self, v: &View) -> Vec<Decision> {
            v.queue.first().map(|q| vec![Decision::Start { job: q.id, pool: q.pool }]).unwrap_or_default()
        }
    }

    const FIRST_FIT: PolicyEntry = PolicyEntry {
        name: "first-fit-test",
        summary: "starts the first waiting job where it fits (added by a test)",
        params: &[Param::new("slack", Kind::Float(Range::NON_NEGATIVE), "0", "unused (a parameter to list)")],
        make: |_: &ParamSet| Ok(Box::new(FirstFit)),
    };

    /// Predicts the same slowdown for every pair: a predictor no registry knows.
    struct Flat;

    impl Predictor for Flat {
        fn name(&self) -> &'static str {
            "flat-test"
        }
        fn fit(&mut self, _: &TrainingSet) -> Result<(), PredictError> {
            Ok(())
        }
        fn predict_pair(&self, _: &Characterization, _: &Characterization) -> Prediction {
            Prediction::exact(1.25)
        }
    }

    const FLAT: PredictorEntry = PredictorEntry {
        name: "flat-test",
        summary: "the same slowdown for every pair (added by a test)",
        params: &[],
        make: |_: &ParamSet| Ok(Box::new(Flat)),
    };

    #[test]
    fn a_policy_added_to_the_registry_is_listed_documented_and_completed() {
        let table: Vec<PolicyEntry> = cosched_sched::registry::POLICIES.iter().copied().chain([FIRST_FIT]).collect();
        let listing = policies_in(&table);
        assert!(listing.text.contains("first-fit-test") && listing.text.contains("slack"), "{}", listing.text);
        let json = serde_json::to_value(&listing).unwrap();
        assert!(json.as_array().unwrap().iter().any(|e| e["name"] == "first-fit-test"), "{json}");
        // The lua entry stays last, after the table's.
        assert_eq!(listing.entries.last().unwrap().name, cosched_lua::NAME);
        assert!(markdown_table(&table, "policy").contains("| `first-fit-test` | starts the first waiting job"));
        for id in ["policy", "baseline", "trace_policy"] {
            assert!(names_in(id, &listing, &predictors()).unwrap().contains(&"first-fit-test".to_string()), "{id}");
        }
        let entry = table.iter().find(|e| e.name == "first-fit-test").unwrap();
        assert!((entry.make)(&ParamSet::from_map(entry.params, &Default::default()).unwrap()).is_ok());
        // The binary's own registry does not have it.
        assert!(!policies().entries.iter().any(|e| e.name == "first-fit-test"));
    }

    #[test]
    fn a_predictor_added_to_the_registry_is_listed_documented_and_completed() {
        let table: Vec<PredictorEntry> = cosched_predict::predictors::PREDICTORS.iter().copied().chain([FLAT]).collect();
        let listing = predictors_in(&table);
        assert!(listing.text.contains("flat-test"), "{}", listing.text);
        assert!(markdown_table(&table, "predictor").contains("| `flat-test` | the same slowdown for every pair"));
        for id in ["predictor", "predictors"] {
            assert!(names_in(id, &policies(), &listing).unwrap().contains(&"flat-test".to_string()), "{id}");
        }
        let entry = table.iter().find(|e| e.name == "flat-test").unwrap();
        let built = (entry.make)(&ParamSet::from_map(entry.params, &Default::default()).unwrap()).unwrap();
        assert_eq!(built.name(), "flat-test");
    }
}
