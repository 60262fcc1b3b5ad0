//! The registered predictors and the registry that builds them by name.
//!
//! Adding a predictor: its type and its [`PredictorEntry`] (a
//! `pub(super) const`) in a new file `predictors/NAME.rs`, and here the
//! file's `mod` line and the entry's line in [`PREDICTORS`] (a predictor
//! that wraps another by name also goes into `WRAPPERS`).

mod blind;
mod median;
mod call;
mod learned;
mod measured;
mod mechanism;
mod nearest;
mod probe;
mod reuse;
mod scn;
mod twins;

use std::collections::BTreeMap;

use cosched_model::params::{self, Declared, Param, ParamSet};

pub use blind::Blind;
pub use call::CAll;
pub use learned::Learned;
pub use measured::Measured;
pub use median::Median;
pub use mechanism::Mechanism;
pub use nearest::Nearest;
pub use probe::ProbeCurve;
pub use reuse::ReuseDistance;
pub use scn::Scn;
pub use twins::Twins;

use crate::{Characterization, PredictError, Predictor, TrainingSet};

/// Predictor parameters as text, by name (`base=scn`), as on a command line.
pub type Params = BTreeMap<String, String>;

/// One registered predictor.
#[derive(Debug, Clone, Copy)]
pub struct PredictorEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [Param],
    /// Builds the unfitted predictor from parameters already checked
    /// against `params`.
    pub make: fn(&ParamSet) -> Result<Box<dyn Predictor>, String>,
}

impl Declared for PredictorEntry {
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn params(&self) -> &'static [Param] {
        self.params
    }
}

/// Predictors that wrap another one; they cannot be wrapped themselves
/// (a twin factor over a twin factor, a matrix falling back on a matrix).
const WRAPPERS: &[&str] = &["twins", "measured"];

/// Predictors another may wrap: every registered one but the wrappers, so
/// a new predictor is a possible base without being listed twice.
fn bases() -> Vec<&'static str> {
    PREDICTORS.iter().map(|e| e.name).filter(|n| !WRAPPERS.contains(n)).collect()
}

fn base(p: &ParamSet, key: &str) -> Result<Box<dyn Predictor>, String> {
    predictor_by_name(p.word(key), &Params::new())
}

/// Every predictor, in the order `--list`, evaluations and the docs show
/// them: one line each, the entry declared beside its type.
pub const PREDICTORS: &[PredictorEntry] = &[
    call::C_ALL,
    scn::SCN,
    probe::PROBE,
    reuse::REUSE,
    twins::TWINS,
    learned::LEARNED,
    mechanism::MECHANISM,
    nearest::NEAREST,
    measured::MEASURED,
    blind::BLIND,
    median::MEDIAN,
];

/// A predictor spec resolved against its entry.
#[derive(Debug, Clone)]
pub struct PredictorSpec {
    pub entry: &'static PredictorEntry,
    pub params: ParamSet,
}

impl PredictorSpec {
    pub fn build(&self) -> Result<Box<dyn Predictor>, String> {
        (self.entry.make)(&self.params).map_err(|e| format!("predictor `{}`: {e}", self.entry.name))
    }

    /// `name:key=value,...` with every set value, defaults included.
    pub fn label(&self) -> String {
        match self.params.to_string() {
            kv if kv.is_empty() => self.entry.name.to_string(),
            kv => format!("{}:{kv}", self.entry.name),
        }
    }
}

fn resolve_in(table: &'static [PredictorEntry], name: &str, given: &Params) -> Result<PredictorSpec, String> {
    let (entry, params) = params::resolve(table, "predictor", name, given)?;
    Ok(PredictorSpec { entry, params })
}

/// Resolves a `NAME` or `NAME:key=value,...` spec without building it.
pub fn resolve_spec(spec: &str) -> Result<PredictorSpec, String> {
    let (name, given) = parse_spec(spec)?;
    resolve_in(PREDICTORS, &name, &given)
}

/// Builds an unfitted predictor from `NAME` or `NAME:key=value,...`.
pub fn predictor_from_spec(spec: &str) -> Result<Box<dyn Predictor>, String> {
    resolve_spec(spec)?.build()
}

/// Names and one-line summaries of every registered predictor.
pub fn predictor_names() -> Vec<(&'static str, &'static str)> {
    PREDICTORS.iter().map(|e| (e.name, e.summary)).collect()
}

/// Builds an unfitted predictor by name; unknown names and parameters and
/// values out of range are errors, so a typo never silently predicts with
/// a default.
pub fn predictor_by_name(name: &str, params: &Params) -> Result<Box<dyn Predictor>, String> {
    resolve_in(PREDICTORS, name, params)?.build()
}

/// Parses `NAME` or `NAME:key=value,key=value` (as `--model` takes it).
pub fn parse_spec(spec: &str) -> Result<(String, Params), String> {
    let (name, params) = params::split_spec(spec).map_err(|e| format!("predictor `{}`: {e}", spec.trim()))?;
    Ok((name.to_string(), params))
}

/// The registry as the Markdown table `docs/predictors.md` carries.
pub fn markdown_table() -> String {
    params::markdown_table(PREDICTORS, "predictor")
}

/// The training pairs with their characterizations and measured medians.
pub(crate) fn observations(train: &TrainingSet) -> Vec<(&Characterization, &Characterization, f64)> {
    train
        .pairs
        .iter()
        .filter_map(|p| Some((train.program(&p.victim)?, train.program(&p.aggressor)?, p.median())))
        .collect()
}

pub(crate) fn need_pairs(name: &str, train: &TrainingSet) -> Result<(), PredictError> {
    if train.pairs.is_empty() {
        return Err(PredictError::Fit { name: name.into(), why: "no measured pairs to learn from".into() });
    }
    Ok(())
}

/// Predictors that read probe curves have nothing to stand on without any:
/// fitted anyway they would predict one flat constant and look like a model.
pub(crate) fn need_probes(name: &str, train: &TrainingSet) -> Result<(), PredictError> {
    if train.programs.values().all(|c| c.probe.is_empty()) {
        return Err(PredictError::Fit {
            name: name.into(),
            why: "no program has a probe curve (run `cosched probe --workload FILE`)".into(),
        });
    }
    Ok(())
}

/// Likewise for predictors that read miss-ratio curves; and a curve is
/// read at a last-level size, which a program takes from its probe's node
/// or, without a probe, from the node the training set is built on.
pub(crate) fn need_miss_curves(name: &str, train: &TrainingSet) -> Result<(), PredictError> {
    let curved: Vec<&Characterization> =
        train.programs.values().filter(|c| c.profile.as_ref().is_some_and(|p| !p.miss_curve.is_empty())).collect();
    let why = if curved.is_empty() {
        "no program has a miss-ratio curve (run `cosched profile --workload FILE --miss-curve 256K,1M,4M,16M,64M`; it needs valgrind)"
    } else if curved.iter().all(|c| c.llc_kib.is_none()) {
        "no program with a miss-ratio curve has a last-level cache size to read it at (its probe's node's, else the node's that cosched reads when it builds the training set)"
    } else {
        return Ok(());
    };
    Err(PredictError::Fit { name: name.into(), why: why.into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::params::DefaultValue;

    #[test]
    fn predictors_that_read_probe_curves_refuse_to_fit_without_any() {
        let ch = |n: &str| crate::Characterization {
            name: n.into(),
            program: n.into(),
            cores: 1,
            profile: None,
            probe: Vec::new(),
            llc_kib: None,
            stressors: Default::default(),
        };
        let ps = |v: &str, a: &str, s: f64| crate::PairSamples { victim: v.into(), aggressor: a.into(), slowdowns: vec![s] };
        let train = TrainingSet::new(
            vec![ch("a"), ch("b")],
            vec![ps("a", "a", 1.5), ps("a", "b", 1.1), ps("b", "a", 1.0), ps("b", "b", 1.0)],
        )
        .unwrap();
        for name in ["scn", "probe", "twins"] {
            let mut p = predictor_by_name(name, &Params::new()).unwrap();
            let err = p.fit(&train).expect_err(name).to_string();
            assert!(err.contains("probe curve"), "{name}: {err}");
        }
        // Predictors of measured pairs alone still fit.
        let mut m = predictor_by_name("measured", &Params::new()).unwrap();
        m.fit(&train).unwrap();
    }

    #[test]
    fn every_registered_predictor_builds_with_its_defaults_under_its_own_name() {
        for e in PREDICTORS {
            let p = predictor_by_name(e.name, &Params::new()).unwrap_or_else(|err| panic!("{err}"));
            assert_eq!(p.name(), e.name);
        }
    }

    #[test]
    fn every_declared_default_parses_under_its_own_kind() {
        for e in PREDICTORS {
            for p in e.params {
                if let DefaultValue::Fixed(v) = p.default {
                    p.parse(v).unwrap_or_else(|err| panic!("{}: {err}", e.name));
                }
            }
        }
    }

    #[test]
    fn wrappers_take_every_predictor_but_a_wrapper() {
        assert_eq!(bases(), vec!["c-all", "scn", "probe", "reuse", "learned", "mechanism", "nearest", "blind", "median"]);
        for w in WRAPPERS {
            assert!(PREDICTORS.iter().any(|e| e.name == *w), "{w} is not registered");
        }
    }

    #[test]
    fn mistakes_are_refused_naming_the_parameter_and_the_value() {
        let err = |spec: &str| predictor_from_spec(spec).err().unwrap();
        assert_eq!(err("oracle"), "unknown predictor `oracle`; expected one of c-all, scn, probe, reuse, twins, learned, mechanism, nearest, measured, blind, median");
        assert_eq!(err("scn:base=c-all"), "predictor `scn`: no parameter `base`; it takes no parameters");
        assert_eq!(
            err("twins:base=twins"),
            "predictor `twins`: base=twins: expected one of c-all, scn, probe, reuse, learned, mechanism, nearest, blind, median"
        );
        assert_eq!(err("nearest:width=0"), "predictor `nearest`: width=0: expected a number > 0");
        assert_eq!(err("twins:base"), "predictor `twins:base`: `base` is not key=value");
        assert!(predictor_from_spec("twins:base=c-all").is_ok());
        assert_eq!(parse_spec("twins:base=probe").unwrap(), ("twins".into(), [("base".into(), "probe".into())].into()));
    }

    #[test]
    fn labels_name_every_set_value() {
        assert_eq!(resolve_spec("measured").unwrap().label(), "measured:fallback=learned");
        assert_eq!(resolve_spec("nearest").unwrap().label(), "nearest");
        assert_eq!(resolve_spec("nearest:width=0.5").unwrap().label(), "nearest:width=0.5");
    }
}
