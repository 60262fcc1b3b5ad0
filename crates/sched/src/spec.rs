//! A policy spec as every verb and engine takes it: `NAME[:key=value,...]`,
//! parsed once ([`Spec::parse`]) into the policy's name, its parameters as
//! given, and `placement=NAME`, the engine's key (where starts go on a
//! node's topology, `model::placement`) that any policy takes.
//!
//! What the parameters mean is the registry's business ([`crate::registry`])
//! or, for `lua:`, the application's (this crate knows no Lua): a spec here
//! only says what the user wrote, so resolving it never splits text again,
//! and its label ([`Spec::label`]) parses back to an equal spec.

use std::fmt;

use cosched_model::params::split_spec;
use cosched_model::placement::{strategy_by_name, Strategy, STRATEGIES};

use crate::registry::Params;

/// The spec key that chooses the engine's placement strategy.
pub const PLACEMENT_KEY: &str = "placement";

/// A parsed policy spec: what the user asked for, before any registry
/// resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The policy's registered name (or `lua`).
    pub name: String,
    /// The policy's parameters as given, text by key; `placement` is never
    /// among them.
    pub params: Params,
    /// `placement=NAME`: the strategy the engine places starts by.
    pub placement: Option<Strategy>,
}

impl Spec {
    /// A spec of `name` with `params` as given, placed as the engine's default.
    pub fn new(name: &str, params: Params) -> Spec {
        Spec { name: name.to_string(), params, placement: None }
    }

    /// Parses `NAME` or `NAME:key=value,...`. Every error names the spec
    /// and the item at fault: a missing name, an item without `=`, a key
    /// given twice, an unknown placement strategy.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let fail = |e: &dyn fmt::Display| format!("policy `{}`: {e}", text.trim());
        let (name, mut params) = split_spec(text).map_err(|e| fail(&e))?;
        if name.is_empty() {
            return Err(fail(&"no policy name before `:`; expected NAME or NAME:key=value,..."));
        }
        let placement = match params.remove(PLACEMENT_KEY) {
            Some(p) => Some(strategy_by_name(&p).map_err(|e| fail(&format!("{PLACEMENT_KEY}={p}: {e}")))?),
            None => None,
        };
        Ok(Spec { name: name.to_string(), params, placement })
    }

    /// The same spec placed by `strategy` (`None`: the engine's default).
    pub fn placed(mut self, strategy: Option<Strategy>) -> Spec {
        self.placement = strategy;
        self
    }

    /// The registered name of the spec's placement strategy.
    pub fn placement_name(&self) -> Option<&'static str> {
        self.placement.map(strategy_name)
    }

    /// `NAME` or `NAME:key=value,...` of the policy alone, keys sorted,
    /// placement left out.
    pub fn policy_label(&self) -> String {
        label_of(&self.name, &self.params, None)
    }

    /// `NAME` or `NAME:key=value,...`, keys sorted, `placement=NAME` among
    /// them when set: the form [`Spec::parse`] reads back to an equal spec.
    pub fn label(&self) -> String {
        label_of(&self.name, &self.params, self.placement_name())
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// A strategy's registered name.
pub fn strategy_name(s: Strategy) -> &'static str {
    STRATEGIES.iter().find(|e| e.strategy == s).map_or("?", |e| e.name)
}

/// `name[:key=value,...]` with `placement` among the keys in sorted order,
/// as a parameter map sorts them (the labels stored runs carry).
/// A parameter at its [`cosched_model::params::Param::legacy`] value is
/// left out, so a label stored before the parameter existed still matches.
pub fn label_of(name: &str, params: &Params, placement: Option<&str>) -> String {
    let declared = crate::registry::POLICIES.iter().find(|e| e.name == name).map_or(&[][..], |e| e.params);
    let at_legacy = |k: &str, v: &str| declared.iter().any(|p| p.name == k && p.legacy == Some(v));
    let mut kv: Vec<(&str, &str)> = params.iter().map(|(k, v)| (k.as_str(), v.as_str())).filter(|(k, v)| !at_legacy(k, v)).collect();
    if let Some(p) = placement {
        kv.push((PLACEMENT_KEY, p));
        kv.sort();
    }
    if kv.is_empty() {
        return name.to_string();
    }
    let kv: Vec<String> = kv.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}:{}", kv.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::{prop_assert_eq, proptest};

    fn params(kv: &[(&str, &str)]) -> Params {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_parameter_at_the_value_from_before_it_existed_is_left_out_of_the_label() {
        // react's victim, resume and gain came later; newest, own and off
        // behave as before, so a run stored then still has this label.
        let p = params(&[("action", "suspend"), ("gain", "off"), ("inner", "best-match"), ("resume", "own"), ("threshold", "1.3"), ("victim", "newest")]);
        assert_eq!(label_of("react", &p, None), "react:action=suspend,inner=best-match,threshold=1.3");
        let p = params(&[("action", "suspend"), ("gain", "on"), ("resume", "free"), ("victim", "newest")]);
        assert_eq!(label_of("react", &p, None), "react:action=suspend,gain=on,resume=free");
        // Another policy's parameter of the same name is kept.
        assert_eq!(label_of("best-match", &params(&[("gain", "off")]), None), "best-match:gain=off");
    }

    #[test]
    fn a_name_alone_is_a_spec_without_parameters_or_placement() {
        assert_eq!(Spec::parse(" noplan ").unwrap(), Spec::new("noplan", Params::new()));
        assert_eq!(Spec::parse("noplan").unwrap().label(), "noplan");
    }

    #[test]
    fn parameters_are_kept_as_given_and_labelled_with_sorted_keys() {
        let s = Spec::parse("conflict-aware:threshold=50, idle=gain").unwrap();
        assert_eq!(s, Spec::new("conflict-aware", params(&[("idle", "gain"), ("threshold", "50")])));
        assert_eq!(s.label(), "conflict-aware:idle=gain,threshold=50");
    }

    #[test]
    fn placement_is_the_engines_key_not_a_policy_parameter() {
        let s = Spec::parse("conflict-aware:threshold=50,placement=scatter").unwrap();
        assert_eq!(s.params, params(&[("threshold", "50")]));
        assert_eq!(s.placement, Some(Strategy::Scatter));
        assert_eq!(s.placement_name(), Some("scatter"));
        assert_eq!(s.label(), "conflict-aware:placement=scatter,threshold=50");
        assert_eq!(s.policy_label(), "conflict-aware:threshold=50");
        assert_eq!(Spec::parse("noplan:placement=compact").unwrap().label(), "noplan:placement=compact");
    }

    #[test]
    fn a_lua_path_is_a_parameter_like_any_other() {
        let s = Spec::parse("lua:path=examples/lua/noplan.lua,budget=500").unwrap();
        assert_eq!(s.name, "lua");
        assert_eq!(s.params, params(&[("budget", "500"), ("path", "examples/lua/noplan.lua")]));
    }

    #[test]
    fn mistakes_name_the_spec_and_the_item() {
        let err = |t: &str| Spec::parse(t).unwrap_err();
        assert_eq!(err("best-match:aging"), "policy `best-match:aging`: `aging` is not key=value");
        assert_eq!(
            err("conflict-aware:threshold=1,threshold=2"),
            "policy `conflict-aware:threshold=1,threshold=2`: `threshold` is given twice"
        );
        assert!(err("noplan:placement=round-robin").starts_with("policy `noplan:placement=round-robin`: placement=round-robin: "));
        assert!(err(":threshold=1").contains("no policy name"));
        assert!(err("noplan:placement=compact,placement=scatter").contains("`placement` is given twice"));
    }

    proptest! {
        #[test]
        fn labels_parse_back_to_the_same_spec(
            n in "[a-z][a-z-]{0,12}",
            kv in proptest::collection::btree_map("[a-z][a-z_]{0,8}", "[A-Za-z0-9./_-]{1,10}", 0..5),
            p in proptest::option::of(0..STRATEGIES.len()),
        ) {
            let mut kv = kv;
            kv.remove(PLACEMENT_KEY);
            let s = Spec { name: n, params: kv, placement: p.map(|i| STRATEGIES[i].strategy) };
            prop_assert_eq!(Spec::parse(&s.label()).unwrap(), s);
        }
    }
}
