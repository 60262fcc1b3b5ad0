//! A TOML document as a tree that remembers where every key and value is.
//!
//! serde's derived deserializers stop at the first problem and only know the
//! span of values, not of keys; validating a tree of our own lets the parser
//! report every semantic error at once and point at the offending key.

use std::fmt;
use std::ops::Range;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

/// A value and the byte range it occupies in the text.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub span: Range<usize>,
    pub value: Value,
}

#[derive(Debug, Clone)]
pub(crate) enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Array(Vec<Item>),
    /// Entries in document order, so diagnostics come out in reading order.
    Table(Vec<Entry>),
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub key_span: Range<usize>,
    pub item: Item,
}

impl Value {
    /// What the value is, for "found ..." in type errors.
    pub fn describe(&self) -> String {
        match self {
            Value::String(s) => format!("a string ({s:?})"),
            Value::Integer(i) => format!("an integer ({i})"),
            Value::Float(f) => format!("a float ({f})"),
            Value::Boolean(b) => format!("a boolean ({b})"),
            Value::Array(_) => "an array".into(),
            Value::Table(_) => "a table".into(),
        }
    }
}

/// Why the text is not a TOML document we can walk.
#[derive(Debug)]
pub(crate) enum TreeError {
    Syntax {
        span: Option<Range<usize>>,
        message: String,
    },
    /// Dates are valid TOML but mean nothing in a workload; the spanned
    /// deserializer cannot represent them, so they end the walk early.
    Datetime { span: Option<Range<usize>> },
}

pub(crate) fn parse(text: &str) -> Result<Item, TreeError> {
    // The plain parse gives the syntax errors with toml's own wording; only
    // a document that passes it reaches the spanned walk below.
    if let Err(e) = toml::from_str::<toml::Table>(text) {
        return Err(TreeError::Syntax {
            span: e.span(),
            message: e.message().trim().to_string(),
        });
    }
    match toml::from_str::<Spanned<Raw>>(text) {
        Ok(root) => Ok(into_item(root)),
        Err(e) => Err(TreeError::Datetime { span: e.span() }),
    }
}

struct Raw(RawValue);

enum RawValue {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Array(Vec<Spanned<Raw>>),
    Table(Vec<(Spanned<String>, Spanned<Raw>)>),
}

fn into_item(s: Spanned<Raw>) -> Item {
    let span = s.span();
    let value = match s.into_inner().0 {
        RawValue::String(v) => Value::String(v),
        RawValue::Integer(v) => Value::Integer(v),
        RawValue::Float(v) => Value::Float(v),
        RawValue::Boolean(v) => Value::Boolean(v),
        RawValue::Array(v) => Value::Array(v.into_iter().map(into_item).collect()),
        RawValue::Table(v) => Value::Table(
            v.into_iter()
                .map(|(k, item)| Entry {
                    key_span: k.span(),
                    key: k.into_inner(),
                    item: into_item(item),
                })
                .collect(),
        ),
    };
    Item { span, value }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw(RawValue::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw(RawValue::String(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw(RawValue::Integer(v)))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Raw, E> {
        i64::try_from(v)
            .map(|v| Raw(RawValue::Integer(v)))
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw(RawValue::Float(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw(RawValue::Boolean(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Raw(RawValue::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut out = Vec::new();
        while let Some(k) = map.next_key::<Spanned<String>>()? {
            let v = map.next_value()?;
            out.push((k, v));
        }
        Ok(Raw(RawValue::Table(out)))
    }
}

/// Maps byte offsets to 1-based line and column (columns count characters,
/// so a message about a line with `µ` in it still points at the right place).
pub(crate) struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    pub fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        // A span may in principle start inside a multi-byte character;
        // counting up to the previous boundary keeps this from panicking.
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let col = self.text[start..end].chars().count() + 1;
        (line as u32 + 1, col as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_keep_their_spans() {
        let text = "a = 1\n[[jobs]]\nname = \"x\"\n";
        let root = parse(text).unwrap();
        let Value::Table(entries) = root.value else {
            panic!()
        };
        assert_eq!(&text[entries[0].key_span.clone()], "a");
        assert_eq!(&text[entries[0].item.span.clone()], "1");
        let Value::Array(jobs) = &entries[1].item.value else {
            panic!()
        };
        assert!(text[jobs[0].span.clone()].starts_with("[[jobs]]"));
    }

    #[test]
    fn datetimes_are_reported_not_panicked_on() {
        let text = "a = 1979-05-27\n";
        match parse(text) {
            Err(TreeError::Datetime { span: Some(s) }) => assert_eq!(s.start, 4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let l = Lines::new("ab\nµx = 1\n");
        assert_eq!(l.position(0), (1, 1));
        assert_eq!(l.position(3), (2, 1));
        assert_eq!(l.position(5), (2, 2));
        assert_eq!(l.position(100), (3, 1));
    }
}
