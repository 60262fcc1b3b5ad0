//! The registered predictors and the registry that builds them by name.

mod call;
mod learned;
mod measured;
mod nearest;
mod probe;
mod scn;
mod twins;

use std::collections::BTreeMap;

pub use call::CAll;
pub use learned::Learned;
pub use measured::Measured;
pub use nearest::Nearest;
pub use probe::ProbeCurve;
pub use scn::Scn;
pub use twins::Twins;

use crate::{Characterization, PredictError, Predictor, TrainingSet};

/// Predictor parameters by name (`base=scn`), as on a command line.
pub type Params = BTreeMap<String, String>;

const PREDICTORS: &[(&str, &str)] = &[
    ("c-all", "seed 000: isotonic fit of slowdown against C_all = (U_victim + U_other) x 100 % of the host loads"),
    ("scn", "seed 003(a): N/C/S classes from the probe; per-class-pair constants, lines in the co-runner's bandwidth for C-S and S-S"),
    ("probe", "seed 003(c): the victim's probe sensitivity read at the co-runner's contentiousness, calibrated by a line"),
    ("twins", "seed 003(d): another predictor (base=NAME, default scn) times a factor learned for twins"),
    ("learned", "ridge regression of ln slowdown on profile and probe features of both jobs"),
    ("nearest", "twins generalised: kernel-weighted mean of the measured pairs whose programs look most alike alone (width=H fixes the kernel width)"),
    ("measured", "the measured pair matrix where a pair was measured; another predictor (fallback=NAME, default learned) elsewhere"),
];

/// Names and one-line descriptions of every registered predictor.
pub fn predictor_names() -> Vec<(&'static str, &'static str)> {
    PREDICTORS.to_vec()
}

/// Builds an unfitted predictor by name; unknown names and parameters are
/// errors, so a typo never silently predicts with a default.
pub fn predictor_by_name(name: &str, params: &Params) -> Result<Box<dyn Predictor>, String> {
    let allowed: &[&str] = match name {
        "twins" => &["base"],
        "measured" => &["fallback"],
        "nearest" => &["width"],
        "c-all" | "scn" | "probe" | "learned" => &[],
        _ => {
            let known: Vec<&str> = PREDICTORS.iter().map(|p| p.0).collect();
            return Err(format!("unknown predictor `{name}`; expected one of {}", known.join(", ")));
        }
    };
    if let Some(k) = params.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(if allowed.is_empty() {
            format!("predictor `{name}` takes no parameters, got `{k}`")
        } else {
            format!("predictor `{name}` has no parameter `{k}`; expected {}", allowed.join(", "))
        });
    }
    let inner = |key: &str, default: &str| -> Result<Box<dyn Predictor>, String> {
        let n = params.get(key).map(String::as_str).unwrap_or(default);
        if n == name || n == "twins" || n == "measured" {
            return Err(format!("predictor `{name}`: {key}={n} is not allowed (it would wrap a wrapper)"));
        }
        predictor_by_name(n, &Params::new())
    };
    Ok(match name {
        "c-all" => Box::new(CAll::default()),
        "scn" => Box::new(Scn::default()),
        "probe" => Box::new(ProbeCurve::default()),
        "learned" => Box::new(Learned::default()),
        "nearest" => match params.get("width") {
            None => Box::new(Nearest::default()),
            Some(w) => match w.parse::<f64>() {
                Ok(h) if h.is_finite() && h > 0.0 => Box::new(Nearest::with_width(h)),
                _ => return Err(format!("predictor `nearest`: width={w} is not a positive number")),
            },
        },
        "twins" => Box::new(Twins::new(inner("base", "scn")?)),
        _ => Box::new(Measured::new(inner("fallback", "learned")?)),
    })
}

/// Parses `NAME` or `NAME:key=value,key=value` (as `--model` takes it).
pub fn parse_spec(spec: &str) -> Result<(String, Params), String> {
    let (name, rest) = match spec.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (spec.trim(), None),
    };
    let mut params = Params::new();
    for kv in rest.into_iter().flat_map(|r| r.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("`{kv}` is not key=value"))?;
        params.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok((name.to_string(), params))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_builds_every_listed_predictor_with_its_own_name() {
        for (name, _) in predictor_names() {
            let p = predictor_by_name(name, &Params::new()).unwrap();
            assert_eq!(p.name(), name);
        }
    }

    #[test]
    fn registry_refuses_mistakes() {
        let mut p = Params::new();
        assert!(predictor_by_name("oracle", &p).err().unwrap().contains("unknown predictor"));
        p.insert("base".into(), "c-all".into());
        assert!(predictor_by_name("scn", &p).err().unwrap().contains("no parameters"));
        assert!(predictor_by_name("twins", &p).is_ok());
        p.insert("base".into(), "twins".into());
        assert!(predictor_by_name("twins", &p).err().unwrap().contains("wrap a wrapper"));
        assert_eq!(parse_spec("twins:base=probe").unwrap(), ("twins".into(), [("base".into(), "probe".into())].into()));
        assert!(parse_spec("twins:base").is_err());
    }
}
