//! Policy specs as the verbs take them: the registered Rust policies
//! (`NAME[:key=value,...]`, `sched::registry`) and Lua scripts
//! (`lua:path=FILE[,key=value,...]`, `cosched-lua`).
//!
//! The dependencies point one way: `sched` knows nothing of Lua; this module
//! resolves a `lua:` spec through `cosched-lua` and hands the engines a
//! builder (`montecarlo::run_orders_with`) that knows both.

use std::path::PathBuf;
use std::sync::Arc;

use cosched_lua::spec::is_react_over_lua;
use cosched_lua::{Builder, Governor, Level, Log, LuaPolicy, LuaSpec};
use cosched_model::placement::Strategy;
use cosched_sched::spec::{label_of, Spec};
use cosched_sched::{policy_by_name, Params, Policy};

/// A policy spec parsed and resolved once, where a request enters the
/// application ([`parse`]), then carried as a value to the engines: what
/// the user wrote, what runs, and where its starts are placed.
#[derive(Debug, Clone)]
pub struct PolicySpec {
    /// As given: name, parameters, `placement=NAME`.
    pub spec: Spec,
    /// What runs, with every parameter typed.
    pub policy: Resolution,
}

/// What a spec resolved to: a registered policy, or a Lua script loaded
/// and checked.
#[derive(Debug, Clone)]
pub enum Resolution {
    Registered(cosched_sched::registry::PolicySpec),
    Lua(LuaSpec),
}

impl PolicySpec {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Where the engine places the policy's starts (`None`: its default).
    pub fn placement(&self) -> Option<Strategy> {
        self.spec.placement
    }

    /// Every parameter's value, defaults included, as text by key.
    pub fn params(&self) -> Params {
        match &self.policy {
            Resolution::Registered(r) => r.params.to_map(),
            Resolution::Lua(l) => l.to_map(),
        }
    }

    /// Parameters the spec left at their defaults, as `key=value`.
    pub fn defaulted(&self) -> Vec<String> {
        match &self.policy {
            Resolution::Registered(r) => r.params.defaulted(),
            Resolution::Lua(l) => l.defaulted(),
        }
    }

    /// `name:key=value,...`, keys sorted, every value named and
    /// `placement=NAME` among them when set: the label a run is stored
    /// under, so it still says what ran if a default changes.
    pub fn label(&self) -> String {
        label_of(self.name(), &self.params(), self.spec.placement_name())
    }

    pub fn is_lua(&self) -> bool {
        matches!(self.policy, Resolution::Lua(_))
    }
}

/// Parses `NAME[:key=value,...]` once and resolves it against the registry,
/// or as a `lua:` spec (or `react:inner=lua,...`, a script inside the
/// `react` wrapper) whose script is loaded and checked now, so a bad
/// script is refused (with its file and line) before any work starts.
/// `placement=NAME` is taken by every policy: it is the engine's.
pub fn parse(text: &str) -> Result<PolicySpec, String> {
    let spec = Spec::parse(text)?;
    let policy = if spec.name == cosched_lua::NAME || is_react_over_lua(&spec.name, &spec.params) {
        let s = LuaSpec::from_spec(&spec.name, &spec.params)?;
        LuaPolicy::check(&s)?;
        Resolution::Lua(s)
    } else {
        Resolution::Registered(cosched_sched::registry::resolve(&spec)?)
    };
    Ok(PolicySpec { spec, policy })
}

/// Builds the policies of one verb by name and parameters.
pub struct Policies {
    lua: Builder,
}

impl Policies {
    /// For simulations: scripts are read once, the governor is each spec's.
    pub fn simulation() -> Policies {
        Policies { lua: Builder::simulation(Arc::new(Log::default())) }
    }

    /// For real runs: scripts are read at each build and reloaded on SIGHUP;
    /// every Lua policy reads `governor`.
    pub fn live(governor: Governor) -> Policies {
        Policies { lua: Builder::live(Arc::new(Log::default()), governor) }
    }

    /// What the Lua policies built so far reported.
    pub fn log(&self) -> &Arc<Log> {
        self.lua.log()
    }

    /// Uses `text` as the script at `path` (a script built into the binary).
    pub fn preload(&self, path: &std::path::Path, text: &str) {
        self.lua.preload(path, text);
    }

    pub fn build(&self, name: &str, params: &Params) -> Result<Box<dyn Policy>, String> {
        if name == cosched_lua::NAME || is_react_over_lua(name, params) {
            return self.lua.build_named(name, params);
        }
        policy_by_name(name, params)
    }
}

/// Each job's `priority` by name, as engines hand it to policies.
pub fn priorities(w: &cosched_model::workload::Workload) -> std::collections::BTreeMap<String, u32> {
    w.jobs.iter().map(|j| (j.name.clone(), j.priority)).collect()
}

/// Where the resource governor's level is kept: `$COSCHED_GOVERNOR`, else
/// `governor` in the data directory. `cosched governor` writes it and a
/// running `cosched run` reads it.
pub fn governor_file() -> PathBuf {
    match std::env::var_os("COSCHED_GOVERNOR") {
        Some(f) => PathBuf::from(f),
        None => cosched_store::default_data_dir().join("governor"),
    }
}

/// The governor's level and where it is kept (`cosched governor`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct GovernorState {
    pub file: PathBuf,
    /// `high` or `low`.
    pub level: &'static str,
}

impl crate::render::Render for GovernorState {
    fn doc(&self) -> crate::render::Doc {
        let mut d = crate::render::Doc::new();
        d.line(format!("governor: {} ({})", self.level, self.file.display()));
        d
    }
}

/// `cosched governor [high|low]`: the level now (high when never set), after
/// setting it when asked.
pub fn governor(set: Option<&str>, file: Option<PathBuf>) -> anyhow::Result<GovernorState> {
    let file = file.unwrap_or_else(governor_file);
    if let Some(word) = set {
        let level = Level::parse(word).map_err(crate::bad_input)?;
        cosched_lua::live::write_governor(&file, level).map_err(anyhow::Error::msg)?;
    }
    let level = cosched_lua::live::read_governor(&file).map_err(crate::bad_input)?.unwrap_or(Level::High);
    Ok(GovernorState { file, level: level.name() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_resolves_once_with_its_placement_and_labels_every_value() {
        let p = parse("conflict-aware:placement=scatter,threshold=50").unwrap();
        assert_eq!(p.placement(), Some(Strategy::Scatter));
        assert_eq!(p.label(), "conflict-aware:idle=always,placement=scatter,threshold=50");
        assert_eq!(p.spec.label(), "conflict-aware:placement=scatter,threshold=50");
        assert_eq!(p.defaulted(), vec!["idle=always"]);
        assert!(!p.is_lua());
        assert_eq!(parse("noplan").unwrap().label(), "noplan");
    }

    #[test]
    fn a_lua_spec_loads_its_script_and_takes_a_placement_like_any_policy() {
        let p = parse("lua:path=../../examples/lua/noplan.lua,placement=compact,budget=5000").unwrap();
        assert!(p.is_lua());
        assert_eq!(p.placement(), Some(Strategy::Compact));
        assert!(!p.params().contains_key("placement"));
        assert_eq!(p.params()["budget"], "5000");
        assert!(parse("lua:path=../../examples/lua/no-such.lua").unwrap_err().contains("no-such.lua"));
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_policy_and_the_key() {
        assert_eq!(parse("noplan:threshold=1").unwrap_err(), "policy `noplan`: no parameter `threshold`; it takes no parameters");
        assert_eq!(parse("conflict-aware:threshold=lots").unwrap_err(), "policy `conflict-aware`: threshold=lots: expected a number >= 0 or inf");
        assert_eq!(parse("noplan:x=1,x=2").unwrap_err(), "policy `noplan:x=1,x=2`: `x` is given twice");
    }
}
