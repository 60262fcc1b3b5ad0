//! Policy specs as the verbs take them: the registered Rust policies
//! (`NAME[:key=value,...]`, `sched::registry`) and Lua scripts
//! (`lua:path=FILE[,key=value,...]`, `cosched-lua`).
//!
//! The dependencies point one way: `sched` knows nothing of Lua; this module
//! resolves a `lua:` spec through `cosched-lua` and hands the engines a
//! builder (`montecarlo::run_orders_with`) that knows both.

use std::path::PathBuf;
use std::sync::Arc;

use cosched_lua::{Builder, Governor, Level, Log, LuaPolicy, LuaSpec};
use cosched_model::params::split_spec;
use cosched_sched::montecarlo::spec_label;
use cosched_sched::{policy_by_name, Params, Policy};

/// A spec resolved: the policy's name and every parameter's value.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub name: String,
    pub params: Params,
    /// Parameters the spec left at their defaults, as `key=value`.
    pub defaulted: Vec<String>,
}

impl Resolved {
    /// `name:key=value,...`, keys sorted, every value named.
    pub fn label(&self) -> String {
        spec_label(&self.name, &self.params)
    }

    pub fn is_lua(&self) -> bool {
        self.name == cosched_lua::NAME
    }

    /// The script of a `lua:` spec.
    pub fn script(&self) -> Option<PathBuf> {
        self.is_lua().then(|| PathBuf::from(self.params.get("path").cloned().unwrap_or_default()))
    }
}

/// Resolves `NAME[:key=value,...]` against the registry, or a `lua:` spec
/// whose script is loaded and checked now, so a bad script is refused (with
/// its file and line) before any work starts.
pub fn resolve(spec: &str) -> Result<Resolved, String> {
    let (name, given) = split_spec(spec).map_err(|e| format!("policy `{}`: {e}", spec.trim()))?;
    if name == cosched_lua::NAME {
        let s = LuaSpec::from_params(&given)?;
        LuaPolicy::check(&s)?;
        return Ok(Resolved { name: name.to_string(), params: s.to_map(), defaulted: s.defaulted() });
    }
    let s = cosched_sched::registry::resolve_spec(spec)?;
    Ok(Resolved { name: s.entry.name.to_string(), params: s.params.to_map(), defaulted: s.params.defaulted() })
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
        if name == cosched_lua::NAME {
            return Ok(Box::new(self.lua.build(params)?));
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

/// `cosched governor [high|low]`: the level now (high when never set), after
/// setting it when asked.
pub fn governor(set: Option<&str>, file: Option<PathBuf>) -> anyhow::Result<(PathBuf, Level)> {
    let file = file.unwrap_or_else(governor_file);
    if let Some(word) = set {
        let level = Level::parse(word).map_err(crate::bad_input)?;
        cosched_lua::live::write_governor(&file, level).map_err(anyhow::Error::msg)?;
    }
    let level = cosched_lua::live::read_governor(&file).map_err(crate::bad_input)?.unwrap_or(Level::High);
    Ok((file, level))
}
