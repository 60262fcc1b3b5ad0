//! Reading one key: its value checked for type and range, and a
//! diagnostic naming the file, line and key when it is wrong.

use super::*;

impl Checker<'_> {
    pub(super) fn error(&mut self, at: usize, message: impl Into<String>, expected: impl Into<String>) {
        let (line, col) = self.lines.position(at);
        self.diags.push(Diagnostic {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
            expected: expected.into(),
        });
    }

    pub(super) fn line(&self, at: usize) -> u32 {
        self.lines.position(at).0
    }

    /// The value as written, for messages.
    pub(super) fn src(&self, span: &Range<usize>) -> &str {
        self.text.get(span.clone()).unwrap_or("").trim()
    }

    pub(super) fn finish(&mut self) -> Diagnostics {
        let mut d = std::mem::take(&mut self.diags);
        d.sort_by_key(|d| (d.line, d.col));
        Diagnostics(d)
    }

    pub(super) fn unknown_key(&mut self, e: &Entry, place: &str, allowed: &[&str]) {
        let hint = suggest(&e.key, allowed.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        self.error(
            e.key_span.start,
            format!("unknown key `{}` {place}{hint}", e.key),
            format!("expected one of: {}", allowed.join(", ")),
        );
    }

    pub(super) fn wrong_type(&mut self, e: &Entry, expected: &str) {
        self.error(
            e.item.span.start,
            format!(
                "wrong type for `{}`: found {}",
                e.key,
                e.item.value.describe()
            ),
            format!("expected {expected}"),
        );
    }

    pub(super) fn out_of_range(&mut self, e: &Entry, expected: &str) {
        let msg = format!("`{} = {}` is out of range", e.key, self.src(&e.item.span));
        self.error(e.item.span.start, msg, format!("expected {expected}"));
    }

    pub(super) fn string(&mut self, e: &Entry, expected: &str) -> Option<Located<String>> {
        match &e.item.value {
            Value::String(s) => Some(Located::new(s.clone(), e)),
            _ => {
                self.wrong_type(e, expected);
                None
            }
        }
    }

    pub(super) fn name(&mut self, e: &Entry, what: &str) -> Option<Located<String>> {
        let expected = format!("a {what} name of letters, digits, `_` and `-`");
        let s = self.string(e, &expected)?;
        let chars = s.v.chars().count();
        if chars > MAX_NAME_CHARS {
            self.error(
                s.val.start,
                format!("the {what} name is {chars} characters long"),
                format!("expected at most {MAX_NAME_CHARS} characters (a name becomes a cgroup directory and a file name)"),
            );
            None
        } else if valid_name(&s.v) {
            Some(s)
        } else {
            let why = if s.v.contains('.') {
                " (`.` is reserved for copies made by `count`)"
            } else {
                ""
            };
            self.error(
                s.val.start,
                format!("invalid {what} name {:?}{why}", s.v),
                format!("expected {expected}"),
            );
            None
        }
    }

    /// An integer in `min..=max`; `expected` describes it for messages.
    pub(super) fn integer(&mut self, e: &Entry, min: i64, max: i64, expected: &str) -> Option<Located<i64>> {
        match e.item.value {
            Value::Integer(v) if (min..=max).contains(&v) => Some(Located::new(v, e)),
            Value::Integer(_) => {
                self.out_of_range(e, expected);
                None
            }
            _ => {
                self.wrong_type(e, expected);
                None
            }
        }
    }

    pub(super) fn count_like(&mut self, e: &Entry, expected: &str) -> Option<Located<u32>> {
        self.integer(e, 1, u32::MAX as i64, expected)
            .map(|a| a.map(|v| v as u32))
    }

    /// Threads, cores or slots: 1 ..= [`MAX_CPUS`].
    pub(super) fn cpus(&mut self, e: &Entry, what: &str) -> Option<Located<u32>> {
        self.integer(e, 1, i64::from(MAX_CPUS), &format!("an integer from 1 to {MAX_CPUS} ({what})"))
            .map(|a| a.map(|v| v as u32))
    }

    /// Seconds, bounded by [`MAX_SECONDS`] (30 days).
    pub(super) fn seconds(&mut self, e: &Entry, zero_ok: bool, what: &str) -> Option<Located<f64>> {
        let lo = if zero_ok { ">= 0" } else { "> 0" };
        self.number(
            e,
            |v| (if zero_ok { v >= 0.0 } else { v > 0.0 }) && v <= MAX_SECONDS,
            &format!("{what}, {lo} and at most {MAX_SECONDS} (30 days)"),
        )
    }

    /// A string of at most [`MAX_TEXT_BYTES`] bytes without NUL.
    pub(super) fn text(&mut self, e: &Entry, expected: &str) -> Option<Located<String>> {
        let s = self.string(e, expected)?;
        if s.v.len() > MAX_TEXT_BYTES || s.v.contains('\0') || s.v.is_empty() {
            self.error(
                s.val.start,
                format!("`{}` is empty, holds a NUL byte or is longer than {MAX_TEXT_BYTES} bytes", e.key),
                format!("expected {expected}"),
            );
            return None;
        }
        Some(s)
    }

    /// A finite number (integer or float) accepted by `ok`.
    pub(super) fn number(&mut self, e: &Entry, ok: impl Fn(f64) -> bool, expected: &str) -> Option<Located<f64>> {
        let v = match e.item.value {
            Value::Integer(v) => v as f64,
            Value::Float(v) => v,
            _ => {
                self.wrong_type(e, expected);
                return None;
            }
        };
        if v.is_finite() && ok(v) {
            Some(Located::new(v, e))
        } else {
            self.out_of_range(e, expected);
            None
        }
    }

    /// The tables of an array of tables (`[[jobs]]`).
    pub(super) fn tables<'t>(&mut self, e: &'t Entry) -> Vec<(&'t Range<usize>, &'t [Entry])> {
        let expected = format!("an array of tables: one [[{}]] section each", e.key);
        match &e.item.value {
            Value::Array(items) => items
                .iter()
                .filter_map(|item| match &item.value {
                    Value::Table(entries) => Some((&item.span, entries.as_slice())),
                    other => {
                        let msg = format!("an entry of `{}` is {}", e.key, other.describe());
                        self.error(item.span.start, msg, format!("expected {expected}"));
                        None
                    }
                })
                .collect(),
            Value::Table(_) => {
                let msg = format!("`{}` is a single table", e.key);
                self.error(
                    e.key_span.start,
                    msg,
                    format!("expected {expected}: write [[{}]], not [{}]", e.key, e.key),
                );
                Vec::new()
            }
            _ => {
                self.wrong_type(e, &expected);
                Vec::new()
            }
        }
    }
}



impl<T> Located<T> {
    pub(super) fn new(v: T, e: &Entry) -> Self {
        Located {
            v,
            key: e.key_span.clone(),
            val: e.item.span.clone(),
        }
    }
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Located<U> {
        Located {
            v: f(self.v),
            key: self.key,
            val: self.val,
        }
    }
}

pub(super) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

pub(super) fn list(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| n.as_ref().to_string()).collect();
    if names.len() > MAX_LISTED {
        format!(
            "{}, ... ({} in all)",
            names[..MAX_LISTED].join(", "),
            names.len()
        )
    } else {
        names.join(", ")
    }
}

/// The closest candidate to a misspelt word, if one is close enough to be
/// what was meant.
pub(super) fn suggest<'c>(word: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: like Levenshtein, but a swap of two
/// neighbouring letters (`nmae`) counts as one typo, not two.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}
