//! `lua:path=FILE[,key=value...]`: which script, how it is run, and the
//! parameters handed to it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_model::params::{Declared, Kind, Param, ParamSet};

use crate::live::Level;

/// The policy name of every Lua script in a spec.
pub const NAME: &str = "lua";

fn fallback_names() -> Vec<&'static str> {
    cosched_sched::registry::POLICIES.iter().map(|e| e.name).collect()
}

/// The keys the runtime reads; every other key of a spec is handed to the
/// script in its `params` table. `path` is required and taken apart, since
/// a file name is no declared kind of value.
pub const PARAMS: &[Param] = &[
    Param::new(
        "budget",
        Kind::Uint { max: 1_000_000_000 },
        // Interrupts, not instructions: Luau's come at calls, returns and
        // loop back-edges. The SX-Aurora paper's conflict-aware takes at most a few
        // hundred per decision, the VarySched strategies on 100 jobs some
        // thousands; a million stops a runaway loop within tens of ms.
        "1000000",
        "Luau interrupts (one per call, return or loop iteration) one call of decide or observe may take before it is stopped as a runaway",
    ),
    Param::new(
        "fallback",
        Kind::WordOf(fallback_names),
        // Never co-runs anything, so a broken script cannot hurt jobs.
        "exclusive",
        "registered policy that decides once the script errs, overruns its budget or decides what the engine would refuse",
    ),
    Param::new(
        "memory_mib",
        Kind::Uint { max: 1 << 20 },
        // The view of a 100,000-job queue takes tens of MiB; a script that
        // builds tables without end stops here instead of taking the
        // node's memory (the runner's, and its jobs').
        "256",
        "MiB the script's Lua state may hold (1 or more); an allocation past it fails the call, and the fallback decides",
    ),
    Param::new(
        "governor",
        Kind::Word(&["high", "low"]),
        "high",
        "resource governor level the script sees (cosched run: until `cosched governor` sets another)",
    ),
    Param::new(
        "grant",
        Kind::Word(&["none", "os", "io", "all"]),
        "none",
        "libraries beyond the sandbox: os (Luau's: clock, date, time), io (files, stdin, stdout), all (both, require, load, dofile)",
    ),
];

/// `lua` as a registry-like entry, so listings print its parameters.
#[derive(Debug, Clone, Copy)]
pub struct Entry;

impl Declared for Entry {
    fn name(&self) -> &'static str {
        NAME
    }
    fn summary(&self) -> &'static str {
        "the VarySched paper: a Lua script's decide(view) (path=FILE required; other key=value pairs go to the script as `params`)"
    }
    fn params(&self) -> &'static [Param] {
        PARAMS
    }
}

/// A resolved `lua:` spec.
#[derive(Debug, Clone)]
pub struct LuaSpec {
    pub path: PathBuf,
    pub runtime: ParamSet,
    /// Handed to the script as `params`: numbers as numbers, `true` and
    /// `false` as booleans, anything else as a string.
    pub script: BTreeMap<String, String>,
    /// `react:inner=lua,...`: the script runs inside the `react` wrapper,
    /// with these parameters of `react`'s (threshold, action).
    pub react: Option<ParamSet>,
}

/// The registered wrapper a script may run inside, and the value of its
/// `inner` key that names a script.
pub const REACT: &str = "react";

/// Whether `name` with `params` is `react:inner=lua,...`: the wrapper
/// around a script, whose other keys are the script's spec.
pub fn is_react_over_lua(name: &str, params: &BTreeMap<String, String>) -> bool {
    name == REACT && params.get("inner").is_some_and(|i| i.trim() == NAME)
}

impl LuaSpec {
    /// From the key=value pairs of `lua:...`.
    pub fn from_params(given: &BTreeMap<String, String>) -> Result<LuaSpec, String> {
        let path = given
            .get("path")
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| "policy `lua`: give the script as path=FILE, e.g. lua:path=examples/lua/noplan.lua".to_string())?;
        let mut runtime = BTreeMap::new();
        let mut script = BTreeMap::new();
        for (k, v) in given {
            if k == "path" {
                continue;
            }
            if PARAMS.iter().any(|p| p.name == k) {
                runtime.insert(k.clone(), v.clone());
            } else {
                script.insert(k.clone(), v.clone());
            }
        }
        let runtime = ParamSet::from_map(PARAMS, &runtime).map_err(|e| format!("policy `lua`: {e}"))?;
        if runtime.uint("memory_mib") == 0 {
            // mlua reads a limit of 0 as none at all.
            return Err("policy `lua`: memory_mib=0; expected 1 or more MiB".into());
        }
        Ok(LuaSpec { path: PathBuf::from(path.trim()), runtime, script, react: None })
    }

    /// From a spec's name and key=value pairs: `lua:...`, or
    /// `react:inner=lua,...`, where `react`'s own keys (`threshold`,
    /// `action`) go to the wrapper and every other key to the script's spec
    /// as under `lua:` (so a script under `react` cannot take parameters of
    /// those two names).
    pub fn from_spec(name: &str, given: &BTreeMap<String, String>) -> Result<LuaSpec, String> {
        if !is_react_over_lua(name, given) {
            return LuaSpec::from_params(given);
        }
        let entry = cosched_sched::registry::POLICIES.iter().find(|e| e.name == REACT).expect("react is registered");
        let own = |k: &str| k != "inner" && entry.params.iter().any(|p| p.name == k);
        let react: BTreeMap<String, String> = given.iter().filter(|(k, _)| own(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let rest: BTreeMap<String, String> = given.iter().filter(|(k, _)| !own(k) && k.as_str() != "inner").map(|(k, v)| (k.clone(), v.clone())).collect();
        let react = ParamSet::from_map(entry.params, &react).map_err(|e| format!("policy `{REACT}`: {e}"))?;
        let mut spec = LuaSpec::from_params(&rest)?;
        spec.react = Some(react);
        Ok(spec)
    }

    /// Every value, defaults included, as the parameters of a stored label.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = self.runtime.to_map();
        m.insert("path".into(), self.path.display().to_string());
        m.extend(self.script.clone());
        if let Some(r) = &self.react {
            m.extend(r.to_map());
            m.insert("inner".into(), NAME.into());
        }
        m
    }

    pub fn budget(&self) -> u64 {
        self.runtime.uint("budget")
    }

    /// The Lua state's memory limit, bytes.
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.runtime.uint("memory_mib") << 20).unwrap_or(usize::MAX)
    }

    pub fn fallback(&self) -> &str {
        self.runtime.word("fallback")
    }

    pub fn governor(&self) -> Level {
        Level::parse(self.runtime.word("governor")).expect("declared words")
    }

    pub fn grant(&self) -> &str {
        self.runtime.word("grant")
    }

    /// The runtime defaults the spec did not give, as `key=value`.
    pub fn defaulted(&self) -> Vec<String> {
        let mut d = self.runtime.defaulted();
        if let Some(r) = &self.react {
            d.extend(r.defaulted().into_iter().filter(|kv| !kv.starts_with("inner=")));
        }
        d
    }

    /// The policy name the spec is given under.
    pub fn name(&self) -> &'static str {
        if self.react.is_some() { REACT } else { NAME }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn runtime_keys_are_checked_and_the_rest_go_to_the_script() {
        let s = LuaSpec::from_params(&map(&[("path", "a.lua"), ("threshold", "50"), ("budget", "500")])).unwrap();
        assert_eq!(s.path, PathBuf::from("a.lua"));
        assert_eq!(s.budget(), 500);
        assert_eq!(s.fallback(), "exclusive");
        assert_eq!(s.governor(), Level::High);
        assert_eq!(s.script, map(&[("threshold", "50")]));
        assert_eq!(
            s.to_map(),
            map(&[
                ("path", "a.lua"),
                ("threshold", "50"),
                ("budget", "500"),
                ("fallback", "exclusive"),
                ("governor", "high"),
                ("grant", "none"),
                ("memory_mib", "256")
            ])
        );
    }

    #[test]
    fn react_over_a_script_takes_its_own_keys_and_hands_the_rest_to_the_script() {
        let given = map(&[("inner", "lua"), ("path", "a.lua"), ("threshold", "1.5"), ("limit", "3"), ("budget", "500")]);
        assert!(is_react_over_lua("react", &given));
        assert!(!is_react_over_lua("react", &map(&[("inner", "noplan")])));
        let s = LuaSpec::from_spec("react", &given).unwrap();
        assert_eq!((s.name(), s.budget()), ("react", 500));
        assert_eq!(s.script, map(&[("limit", "3")]));
        let r = s.react.as_ref().unwrap();
        assert_eq!((r.float("threshold"), r.word("action")), (1.5, "suspend"));
        let m = s.to_map();
        assert_eq!((m["inner"].as_str(), m["threshold"].as_str(), m["action"].as_str(), m["path"].as_str()), ("lua", "1.5", "suspend", "a.lua"));
        // The label parses back to the same spec.
        assert_eq!(LuaSpec::from_spec("react", &m).unwrap().to_map(), m);
        assert!(LuaSpec::from_spec("react", &map(&[("inner", "lua"), ("path", "a.lua"), ("threshold", "0.5")])).unwrap_err().contains("policy `react`"));
        assert!(LuaSpec::from_spec("react", &map(&[("inner", "lua")])).unwrap_err().contains("path=FILE"));
    }

    #[test]
    fn a_spec_without_a_path_or_with_a_bad_runtime_value_is_refused() {
        assert!(LuaSpec::from_params(&map(&[])).unwrap_err().contains("path=FILE"));
        assert_eq!(
            LuaSpec::from_params(&map(&[("path", "a.lua"), ("fallback", "fifo")])).unwrap_err().split(':').next(),
            Some("policy `lua`")
        );
        assert!(LuaSpec::from_params(&map(&[("path", "a.lua"), ("governor", "medium")])).unwrap_err().contains("governor=medium"));
        assert!(LuaSpec::from_params(&map(&[("path", "a.lua"), ("budget", "-1")])).unwrap_err().contains("budget=-1"));
        assert!(LuaSpec::from_params(&map(&[("path", "a.lua"), ("memory_mib", "0")])).unwrap_err().contains("memory_mib=0"));
    }
}
