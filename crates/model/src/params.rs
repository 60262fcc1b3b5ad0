//! Typed parameters of the things cosched registers by name (policies,
//! predictors).
//!
//! Each registry entry declares its parameters once: name, [`Kind`] (with
//! its range), default and one line of help. A `NAME:key=value,...` spec is
//! checked against those declarations before anything is built, so a typo,
//! a value out of range or an unknown key is refused with the parameter, the
//! value and what was expected, and defaults live in one place: the
//! declaration, which `--list` and the docs tables also print.
//!
//! The kernel catalogue (`kernel`) keeps its own string-valued `ParamSpec`:
//! kernel parameters travel as command-line flags to another process,
//! whereas these are read as typed values in this one.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

/// Where a number may lie; each end included, excluded or open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub lo: Bound<f64>,
    pub hi: Bound<f64>,
}

impl Range {
    pub const ANY: Range = Range { lo: Bound::Unbounded, hi: Bound::Unbounded };
    pub const NON_NEGATIVE: Range = Range::at_least(0.0);
    pub const POSITIVE: Range = Range { lo: Bound::Excluded(0.0), hi: Bound::Unbounded };

    pub const fn at_least(lo: f64) -> Range {
        Range { lo: Bound::Included(lo), hi: Bound::Unbounded }
    }

    pub fn contains(&self, v: f64) -> bool {
        let lo = match self.lo {
            Bound::Included(l) => v >= l,
            Bound::Excluded(l) => v > l,
            Bound::Unbounded => true,
        };
        let hi = match self.hi {
            Bound::Included(h) => v <= h,
            Bound::Excluded(h) => v < h,
            Bound::Unbounded => true,
        };
        lo && hi
    }

    /// `>= 1`, `> 0 and <= 2`, or empty for an unbounded range.
    pub fn describe(&self) -> String {
        let lo = match self.lo {
            Bound::Included(l) => Some(format!(">= {l}")),
            Bound::Excluded(l) => Some(format!("> {l}")),
            Bound::Unbounded => None,
        };
        let hi = match self.hi {
            Bound::Included(h) => Some(format!("<= {h}")),
            Bound::Excluded(h) => Some(format!("< {h}")),
            Bound::Unbounded => None,
        };
        lo.into_iter().chain(hi).collect::<Vec<_>>().join(" and ")
    }
}

/// What a parameter's value may be.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A finite number in the range.
    Float(Range),
    /// A number in the range, or `inf`: for thresholds, where infinity means
    /// "never refuse". Thresholds are scores in percent for C_all, so a
    /// trailing `%` is tolerated.
    FloatOrInf(Range),
    /// A whole number from 0 to `max`.
    Uint { max: u64 },
    /// `on` or `off` (`true`/`false`, `yes`/`no` are read too).
    Flag,
    /// One of the listed words.
    Word(&'static [&'static str]),
    /// One of the words a function lists when asked: another registry's
    /// names, so that registering an entry there needs no edit here.
    WordOf(fn() -> Vec<&'static str>),
}

impl Kind {
    /// The kind and its range, as `--list` prints it: `number >= 0 or inf`.
    pub fn describe(&self) -> String {
        let ranged = |what: &str, r: &Range| match r.describe() {
            d if d.is_empty() => what.to_string(),
            d => format!("{what} {d}"),
        };
        match self {
            Kind::Float(r) => ranged("number", r),
            Kind::FloatOrInf(r) => format!("{} or inf", ranged("number", r)),
            Kind::Uint { max } if *max == u64::MAX => "whole number".into(),
            Kind::Uint { max } => format!("whole number <= {max}"),
            Kind::Flag => "on or off".into(),
            Kind::Word(w) => format!("one of {}", w.join(", ")),
            Kind::WordOf(f) => format!("one of {}", f().join(", ")),
        }
    }

    /// What an error message says was expected.
    pub fn expected(&self) -> String {
        match self {
            Kind::Flag | Kind::Word(_) | Kind::WordOf(_) => self.describe(),
            _ => format!("a {}", self.describe()),
        }
    }

    /// Reads a value written on a command line; `None` if it is not of this kind.
    fn read(&self, text: &str) -> Option<Value> {
        let s = text.trim();
        match self {
            Kind::Float(r) => s.parse::<f64>().ok().filter(|v| v.is_finite() && r.contains(*v)).map(Value::Float),
            Kind::FloatOrInf(r) => {
                let s = s.strip_suffix('%').unwrap_or(s).trim();
                if s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("infinity") {
                    return Some(Value::Float(f64::INFINITY));
                }
                s.parse::<f64>().ok().filter(|v| v.is_finite() && r.contains(*v)).map(Value::Float)
            }
            Kind::Uint { max } => s.parse::<u64>().ok().filter(|v| v <= max).map(Value::Uint),
            Kind::Flag => match s.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" => Some(Value::Flag(true)),
                "off" | "false" | "no" => Some(Value::Flag(false)),
                _ => None,
            },
            Kind::Word(w) => w.contains(&s).then(|| Value::Word(s.to_string())),
            Kind::WordOf(f) => f().contains(&s).then(|| Value::Word(s.to_string())),
        }
    }
}

/// A typed parameter value. Its `Display` is the form [`Kind`] reads back.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Float(f64),
    Uint(u64),
    Flag(bool),
    Word(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Float(v) if *v == f64::INFINITY => f.write_str("inf"),
            // Rust prints the shortest decimal that reads back to the same
            // f64, so a label parses to exactly the value that ran.
            Value::Float(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}"),
            Value::Flag(on) => f.write_str(if *on { "on" } else { "off" }),
            Value::Word(w) => f.write_str(w),
        }
    }
}

/// What a parameter is when the spec does not give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// This value, written as on a command line.
    Fixed(&'static str),
    /// The spec must give it.
    Required,
    /// No value: the entry decides otherwise (the text says how), e.g. a
    /// width chosen by cross-validation.
    Unset(&'static str),
}

/// One declared parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub help: &'static str,
    /// The value that gives the behaviour from before this parameter
    /// existed. A stored run's label leaves the parameter out at that
    /// value, so runs stored before it was added still match their
    /// settings (`evaluate --resume` reading a shipped series back).
    pub legacy: Option<&'static str>,
}

impl Param {
    pub const fn new(name: &'static str, kind: Kind, default: &'static str, help: &'static str) -> Param {
        Param { name, kind, default: DefaultValue::Fixed(default), help, legacy: None }
    }

    /// A parameter without a default that the entry handles by itself.
    pub const fn optional(name: &'static str, kind: Kind, otherwise: &'static str, help: &'static str) -> Param {
        Param { name, kind, default: DefaultValue::Unset(otherwise), help, legacy: None }
    }

    pub const fn required(name: &'static str, kind: Kind, help: &'static str) -> Param {
        Param { name, kind, default: DefaultValue::Required, help, legacy: None }
    }

    /// Declares the value that behaves as before the parameter was added
    /// ([`Param::legacy`]).
    pub const fn before(mut self, legacy: &'static str) -> Param {
        self.legacy = Some(legacy);
        self
    }

    /// Reads `text` as this parameter's value.
    pub fn parse(&self, text: &str) -> Result<Value, ParamError> {
        self.kind.read(text).ok_or_else(|| ParamError::Invalid {
            name: self.name,
            value: text.trim().to_string(),
            expected: self.kind.expected(),
        })
    }

    /// The default as `--list` and the docs print it.
    pub fn default_text(&self) -> String {
        match self.default {
            DefaultValue::Fixed(v) => v.to_string(),
            DefaultValue::Required => "required".into(),
            DefaultValue::Unset(why) => format!("unset ({why})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error("`{item}` is not key=value")]
    Syntax { item: String },
    #[error("`{key}` is given twice")]
    Duplicate { key: String },
    #[error("no parameter `{key}`; {}", known_list(known))]
    Unknown { key: String, known: Vec<&'static str> },
    #[error("{name}={value}: expected {expected}")]
    Invalid { name: &'static str, value: String, expected: String },
    #[error("{name} is required: {expected}")]
    Missing { name: &'static str, expected: String },
}

fn known_list(known: &[&str]) -> String {
    if known.is_empty() {
        "it takes no parameters".into()
    } else {
        format!("known: {}", known.join(", "))
    }
}

/// Validated values of declared parameters, in declaration order, defaults
/// filled in.
#[derive(Debug, Clone)]
pub struct ParamSet {
    decls: &'static [Param],
    values: Vec<Option<Value>>,
    given: Vec<bool>,
}

/// Two sets are equal when they hold the same values: whether a value was
/// written or defaulted does not change what it builds.
impl PartialEq for ParamSet {
    fn eq(&self, other: &ParamSet) -> bool {
        self.decls.len() == other.decls.len()
            && self.decls.iter().zip(other.decls).all(|(a, b)| a.name == b.name)
            && self.values == other.values
    }
}

impl ParamSet {
    /// Checks `given` (key to text) against `decls`.
    pub fn from_map(decls: &'static [Param], given: &BTreeMap<String, String>) -> Result<ParamSet, ParamError> {
        if let Some(k) = given.keys().find(|k| !decls.iter().any(|d| d.name == k.as_str())) {
            return Err(ParamError::Unknown { key: k.clone(), known: decls.iter().map(|d| d.name).collect() });
        }
        let mut values = Vec::with_capacity(decls.len());
        let mut was_given = Vec::with_capacity(decls.len());
        for d in decls {
            let v = match (given.get(d.name), d.default) {
                (Some(text), _) => Some(d.parse(text)?),
                (None, DefaultValue::Fixed(text)) => Some(d.parse(text)?),
                (None, DefaultValue::Unset(_)) => None,
                (None, DefaultValue::Required) => {
                    return Err(ParamError::Missing { name: d.name, expected: d.kind.expected() })
                }
            };
            values.push(v);
            was_given.push(given.contains_key(d.name));
        }
        Ok(ParamSet { decls, values, given: was_given })
    }

    /// Every parameter at its default.
    pub fn defaults(decls: &'static [Param]) -> Result<ParamSet, ParamError> {
        ParamSet::from_map(decls, &BTreeMap::new())
    }

    /// Reads `key=value,key=value` (the part of a spec after `NAME:`).
    pub fn parse(decls: &'static [Param], text: &str) -> Result<ParamSet, ParamError> {
        ParamSet::from_map(decls, &split_pairs(text)?)
    }

    pub fn decls(&self) -> &'static [Param] {
        self.decls
    }

    fn index(&self, name: &str) -> usize {
        self.decls
            .iter()
            .position(|d| d.name == name)
            .unwrap_or_else(|| panic!("no parameter `{name}` is declared; the entry's constructor and its declarations disagree"))
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values[self.index(name)].as_ref()
    }

    /// The value of a `Float` or `FloatOrInf` parameter, if set.
    ///
    /// The getters panic on an undeclared name or another kind: that is a
    /// mistake in a registry entry, which its build-with-defaults test meets.
    pub fn float_opt(&self, name: &str) -> Option<f64> {
        self.get(name).map(|v| match v {
            Value::Float(x) => *x,
            other => panic!("parameter `{name}` is {other:?}, not a number"),
        })
    }

    pub fn float(&self, name: &str) -> f64 {
        self.float_opt(name).unwrap_or_else(|| panic!("parameter `{name}` has no value"))
    }

    pub fn uint(&self, name: &str) -> u64 {
        match self.get(name) {
            Some(Value::Uint(x)) => *x,
            other => panic!("parameter `{name}` is {other:?}, not a whole number"),
        }
    }

    pub fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            Some(Value::Flag(x)) => *x,
            other => panic!("parameter `{name}` is {other:?}, not on/off"),
        }
    }

    pub fn word(&self, name: &str) -> &str {
        match self.get(name) {
            Some(Value::Word(w)) => w,
            other => panic!("parameter `{name}` is {other:?}, not a word"),
        }
    }

    /// Each declared parameter with its value (if set) and whether the spec gave it.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Param, Option<&Value>, bool)> + '_ {
        self.decls.iter().zip(&self.values).zip(&self.given).map(|((d, v), g)| (d, v.as_ref(), *g))
    }

    /// Every set value as key to text: what [`ParamSet::from_map`] reads back
    /// to an equal set.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter().filter_map(|(d, v, _)| Some((d.name.to_string(), v?.to_string()))).collect()
    }

    /// `key=value` of the parameters the spec did not give, for a note
    /// saying which defaults are in force.
    pub fn defaulted(&self) -> Vec<String> {
        self.iter().filter(|(_, _, g)| !g).filter_map(|(d, v, _)| Some(format!("{}={}", d.name, v?))).collect()
    }
}

/// `key=value,...` of every set value, in declaration order.
impl fmt::Display for ParamSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kv: Vec<String> =
            self.iter().filter_map(|(d, v, _)| Some(format!("{}={}", d.name, v?))).collect();
        f.write_str(&kv.join(","))
    }
}

/// Splits `key=value,key=value`; empty items are skipped, a repeated key is
/// refused (the second would silently win otherwise).
pub fn split_pairs(text: &str) -> Result<BTreeMap<String, String>, ParamError> {
    let mut out = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| ParamError::Syntax { item: item.to_string() })?;
        if out.insert(k.trim().to_string(), v.trim().to_string()).is_some() {
            return Err(ParamError::Duplicate { key: k.trim().to_string() });
        }
    }
    Ok(out)
}

/// Splits `NAME` or `NAME:key=value,...` into the name and its raw pairs.
pub fn split_spec(spec: &str) -> Result<(&str, BTreeMap<String, String>), ParamError> {
    match spec.split_once(':') {
        Some((name, rest)) => Ok((name.trim(), split_pairs(rest)?)),
        None => Ok((spec.trim(), BTreeMap::new())),
    }
}

/// What every registry entry declares about itself.
pub trait Declared {
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    fn params(&self) -> &'static [Param];
}

/// The entry called `name`, or an error listing the known ones; `what` is
/// the registry's noun (`policy`, `predictor`).
pub fn find<'t, E: Declared>(table: &'t [E], what: &str, name: &str) -> Result<&'t E, String> {
    table.iter().find(|e| e.name() == name).ok_or_else(|| {
        let known: Vec<&str> = table.iter().map(|e| e.name()).collect();
        format!("unknown {what} `{name}`; expected one of {}", known.join(", "))
    })
}

/// The entry called `name` and its parameters checked against its declarations.
pub fn resolve<'t, E: Declared>(
    table: &'t [E],
    what: &str,
    name: &str,
    given: &BTreeMap<String, String>,
) -> Result<(&'t E, ParamSet), String> {
    let entry = find(table, what, name)?;
    let set = ParamSet::from_map(entry.params(), given).map_err(|e| format!("{what} `{name}`: {e}"))?;
    Ok((entry, set))
}

/// One row per entry and parameter: name, summary, parameter, kind and
/// range, default, help; an entry's later rows leave its name and summary
/// empty, an entry without parameters has `-` for its parameter.
pub fn list_rows<E: Declared>(table: &[E]) -> Vec<[String; 6]> {
    let mut rows = Vec::new();
    for e in table {
        if e.params().is_empty() {
            rows.push([e.name().into(), e.summary().into(), "-".into(), String::new(), String::new(), String::new()]);
        }
        for (i, p) in e.params().iter().enumerate() {
            let (name, summary) = if i == 0 { (e.name(), e.summary()) } else { ("", "") };
            rows.push([name.into(), summary.into(), p.name.into(), p.kind.describe(), p.default_text(), p.help.into()]);
        }
    }
    rows
}

/// The registry for a terminal (`--list`): each entry's name and summary,
/// then one indented line per parameter with its kind, range and default.
pub fn list_text<E: Declared>(table: &[E]) -> String {
    let width = table.iter().map(|e| e.name().len()).max().unwrap_or(0);
    let mut out = String::new();
    for e in table {
        out.push_str(&format!("{:width$}  {}\n", e.name(), e.summary()));
        for p in e.params() {
            out.push_str(&format!(
                "{:width$}    {}: {}; default {}; {}\n",
                "",
                p.name,
                p.kind.describe(),
                p.default_text(),
                p.help
            ));
        }
    }
    out
}

/// The registry as a Markdown table (`what` heads the first column), the
/// form the docs carry between [`DOC_BEGIN`] and [`DOC_END`].
pub fn markdown_table<E: Declared>(table: &[E], what: &str) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let code = |s: &str| if s.is_empty() { String::new() } else { format!("`{s}`") };
    let mut out = format!("| {what} | summary | parameter | kind | default | help |\n|---|---|---|---|---|---|\n");
    for r in list_rows(table) {
        let param = if r[2] == "-" { "-".to_string() } else { code(&r[2]) };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            code(&r[0]),
            cell(&r[1]),
            param,
            cell(&r[3]),
            cell(&r[4]),
            cell(&r[5])
        ));
    }
    out
}

/// Marker comments around a generated table in a Markdown document; the
/// opening comment may go on to say where the table comes from (the
/// convention of `evaluate-predictors`' `accuracy:begin`).
pub const DOC_BEGIN: &str = "<!-- registry:begin";
pub const DOC_END: &str = "<!-- registry:end -->";

/// Whether `doc` carries exactly `table` between the markers; the error says
/// what to paste where.
pub fn check_generated(doc: &str, table: &str) -> Result<(), String> {
    let current = doc
        .split_once(DOC_BEGIN)
        .and_then(|(_, rest)| rest.split_once("-->"))
        .and_then(|(_, rest)| rest.split_once(DOC_END))
        .map(|(inside, _)| inside.trim());
    match current {
        Some(c) if c == table.trim() => Ok(()),
        Some(_) => Err(format!("the table between the markers is out of date; replace it with:\n\n{table}")),
        None => Err(format!("no `{DOC_BEGIN} -->` ... `{DOC_END}` markers; add them around:\n\n{table}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WORDS: &[&str] = &["scn", "probe"];

    fn words() -> Vec<&'static str> {
        vec!["learned", "nearest"]
    }

    const DECLS: &[Param] = &[
        Param::new("threshold", Kind::FloatOrInf(Range::NON_NEGATIVE), "100", "largest score"),
        Param::new("bound", Kind::Float(Range::at_least(1.0)), "1.5", "worst slowdown"),
        Param::new("step", Kind::Float(Range::POSITIVE), "10", "step"),
        Param::new("aging", Kind::Uint { max: u32::MAX as u64 }, "4", "passes"),
        Param::new("explore", Kind::Flag, "on", "explore"),
        Param::new("base", Kind::Word(WORDS), "scn", "base"),
        Param::new("fallback", Kind::WordOf(words), "learned", "fallback"),
        Param::optional("width", Kind::Float(Range::POSITIVE), "chosen by cross-validation", "width"),
    ];

    const NEEDS: &[Param] = &[Param::required("t", Kind::FloatOrInf(Range::ANY), "t")];

    #[test]
    fn every_declared_default_parses_under_its_own_kind() {
        for d in DECLS {
            if let DefaultValue::Fixed(v) = d.default {
                d.parse(v).unwrap_or_else(|e| panic!("{}: {e}", d.name));
            }
        }
        let s = ParamSet::defaults(DECLS).unwrap();
        assert_eq!(s.float("threshold"), 100.0);
        assert_eq!(s.uint("aging"), 4);
        assert!(s.flag("explore"));
        assert_eq!(s.word("fallback"), "learned");
        assert_eq!(s.float_opt("width"), None);
        assert_eq!(s.to_string(), "threshold=100,bound=1.5,step=10,aging=4,explore=on,base=scn,fallback=learned");
    }

    #[test]
    fn each_kind_refuses_a_bad_value_naming_the_parameter_and_what_was_expected() {
        let cases = [
            ("threshold", "lots", "threshold=lots: expected a number >= 0 or inf"),
            ("threshold", "-1", "threshold=-1: expected a number >= 0 or inf"),
            ("bound", "0.5", "bound=0.5: expected a number >= 1"),
            ("bound", "inf", "bound=inf: expected a number >= 1"),
            ("step", "0", "step=0: expected a number > 0"),
            ("aging", "-1", "aging=-1: expected a whole number <= 4294967295"),
            ("aging", "2.5", "aging=2.5: expected a whole number"),
            ("explore", "maybe", "explore=maybe: expected on or off"),
            ("base", "oracle", "base=oracle: expected one of scn, probe"),
            ("fallback", "scn", "fallback=scn: expected one of learned, nearest"),
            ("width", "nan", "width=nan: expected a number > 0"),
        ];
        for (k, v, msg) in cases {
            let given = BTreeMap::from([(k.to_string(), v.to_string())]);
            let err = ParamSet::from_map(DECLS, &given).unwrap_err();
            assert!(err.to_string().starts_with(msg), "{k}={v}: {err}");
        }
    }

    #[test]
    fn unknown_repeated_and_missing_keys_are_refused() {
        let err = ParamSet::parse(DECLS, "threshold=1,treshold=2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no parameter `treshold`; known: threshold, bound, step, aging, explore, base, fallback, width"
        );
        assert_eq!(ParamSet::parse(&[], "x=1").unwrap_err().to_string(), "no parameter `x`; it takes no parameters");
        assert_eq!(ParamSet::parse(DECLS, "step=1,step=2").unwrap_err(), ParamError::Duplicate { key: "step".into() });
        assert_eq!(ParamSet::parse(DECLS, "step").unwrap_err(), ParamError::Syntax { item: "step".into() });
        assert_eq!(ParamSet::defaults(NEEDS).unwrap_err().to_string(), "t is required: a number or inf");
    }

    #[test]
    fn thresholds_read_inf_and_tolerate_a_percent_sign() {
        let t = &DECLS[0];
        assert_eq!(t.parse("inf"), Ok(Value::Float(f64::INFINITY)));
        assert_eq!(t.parse(" 150 % "), Ok(Value::Float(150.0)));
        assert!(DECLS[1].parse("1.5%").is_err(), "only thresholds carry a unit sign");
    }

    #[test]
    fn specs_split_into_name_and_pairs() {
        let (n, p) = split_spec(" twins : base=probe, ").unwrap();
        assert_eq!((n, p), ("twins", BTreeMap::from([("base".to_string(), "probe".to_string())])));
        assert_eq!(split_spec("noplan").unwrap(), ("noplan", BTreeMap::new()));
    }

    struct E(&'static str, &'static [Param]);
    impl Declared for E {
        fn name(&self) -> &'static str {
            self.0
        }
        fn summary(&self) -> &'static str {
            "does | things"
        }
        fn params(&self) -> &'static [Param] {
            self.1
        }
    }

    #[test]
    fn markdown_table_has_a_row_per_parameter_and_escapes_bars() {
        let t = markdown_table(&[E("plain", &[]), E("tuned", &DECLS[3..5])], "policy");
        assert_eq!(
            t,
            "| policy | summary | parameter | kind | default | help |\n|---|---|---|---|---|---|\n\
             | `plain` | does \\| things | - |  |  |  |\n\
             | `tuned` | does \\| things | `aging` | whole number <= 4294967295 | 4 | passes |\n\
             |  |  | `explore` | on or off | on | explore |\n"
        );
        let doc = format!("# P\n\n{DOC_BEGIN} from the registry -->\n{t}{DOC_END}\n\ntext\n");
        assert_eq!(check_generated(&doc, &t), Ok(()));
        assert!(check_generated(&doc.replace("passes", "old"), &t).unwrap_err().contains(&t));
        assert!(check_generated("# P\n", &t).unwrap_err().contains("markers"));
        assert_eq!(
            list_text(&[E("plain", &[]), E("tuned", &DECLS[3..5])]),
            "plain  does | things\n\
             tuned  does | things\n\
             \x20        aging: whole number <= 4294967295; default 4; passes\n\
             \x20        explore: on or off; default on; explore\n"
        );
        assert_eq!(find(&[E("plain", &[])], "policy", "fifo").err().unwrap(), "unknown policy `fifo`; expected one of plain");
    }

    fn value_text(k: usize) -> BoxedStrategy<String> {
        match k {
            0 => prop_oneof![Just("inf".to_string()), (0.0..1e9f64).prop_map(|v| v.to_string())].boxed(),
            1 => (1.0..1e6f64).prop_map(|v| v.to_string()).boxed(),
            2 => (1e-9..1e6f64).prop_map(|v| v.to_string()).boxed(),
            3 => (0..=u32::MAX as u64).prop_map(|v| v.to_string()).boxed(),
            4 => prop_oneof![Just("on"), Just("off"), Just("yes"), Just("false")].prop_map(String::from).boxed(),
            5 => prop::sample::select(WORDS).prop_map(String::from).boxed(),
            6 => prop::sample::select(words()).prop_map(String::from).boxed(),
            _ => (1e-9..1e3f64).prop_map(|v| v.to_string()).boxed(),
        }
    }

    fn given() -> impl Strategy<Value = BTreeMap<String, String>> {
        let each: Vec<_> =
            (0..DECLS.len()).map(|k| prop::option::of(value_text(k)).prop_map(move |v| (k, v))).collect();
        each.prop_map(|kvs| {
            kvs.into_iter().filter_map(|(k, v)| Some((DECLS[k].name.to_string(), v?))).collect()
        })
    }

    proptest! {
        #[test]
        fn a_formatted_set_parses_back_to_the_same_set(given in given()) {
            let set = ParamSet::from_map(DECLS, &given).unwrap();
            prop_assert_eq!(&ParamSet::parse(DECLS, &set.to_string()).unwrap(), &set);
            prop_assert_eq!(&ParamSet::from_map(DECLS, &set.to_map()).unwrap(), &set);
        }
    }
}
