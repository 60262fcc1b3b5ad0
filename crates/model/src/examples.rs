//! Example command lines fitted to a terminal: `--help` and the man pages
//! show examples that a user copies, and a line a terminal of 80 columns
//! wraps pastes as two commands. Long lines are broken here, once, for
//! every verb, so an example can be written as one line where it is
//! defined.

/// Columns an example line may take.
pub const WIDTH: usize = 80;

/// `text` with the lines of its example paragraphs (those whose first line
/// starts with "Example" and ends with ':') fitted; other paragraphs are
/// clap's to wrap.
pub fn fit_examples(text: &str) -> String {
    text.split("\n\n")
        .map(|para| {
            let mut lines = para.lines();
            match lines.next() {
                Some(first) if first.starts_with("Example") && first.trim_end().ends_with(':') => {
                    let mut out = vec![first.to_string()];
                    out.extend(lines.flat_map(fit_line));
                    out.join("\n")
                }
                _ => para.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One example line as one or more lines of at most [`WIDTH`] columns: a
/// trailing `   # comment` moves above the command as a comment line of its
/// own, and the command breaks between words with a shell continuation
/// (` \`), a flag kept with its value. A word longer than the width stays
/// whole on a line of its own.
fn fit_line(line: &str) -> Vec<String> {
    if line.chars().count() <= WIDTH {
        return vec![line.to_string()];
    }
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let body = &line[indent.len()..];
    let (command, comment) = match split_comment(body) {
        Some((c, k)) => (c, Some(k)),
        None => (body, None),
    };
    let mut out = Vec::new();
    if let Some(comment) = comment {
        let lead = format!("{indent}# ");
        out.extend(fill(&lead, &lead, &words(comment, false), ""));
    }
    out.extend(fill(&indent, &format!("{indent}    "), &words(command, true), " \\"));
    out
}

/// The command and its trailing comment: a `#` after at least two spaces,
/// outside quotes.
fn split_comment(s: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i >= 2 && bytes[i - 1] == b' ' && bytes[i - 2] == b' ' => {
                return Some((s[..i].trim_end(), s[i + 1..].trim()));
            }
            _ => {}
        }
    }
    None
}

/// The words of `s` split at spaces outside quotes; with `pair_flags`, a
/// `--flag` and the value after it are one word.
fn words(s: &str, pair_flags: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in s.chars() {
        match (quote, c) {
            (None, ' ') => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if !pair_flags {
        return out;
    }
    let mut paired: Vec<String> = Vec::new();
    for w in out {
        match paired.last_mut() {
            Some(prev) if prev.starts_with('-') && !prev.contains('=') && !prev.contains(' ') && !w.starts_with('-') && w != "|" => {
                prev.push(' ');
                prev.push_str(&w);
            }
            _ => paired.push(w),
        }
    }
    paired
}

/// Words filled greedily into lines of at most [`WIDTH`] columns, the
/// first line starting with `first`, the others with `next`; every line
/// but the last ends with `cont`.
fn fill(first: &str, next: &str, words: &[String], cont: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for w in words {
        let lead = if lines.is_empty() { first } else { next };
        if cur.is_empty() {
            cur = format!("{lead}{w}");
        } else if cur.chars().count() + 1 + w.chars().count() + cont.chars().count() <= WIDTH {
            cur.push(' ');
            cur.push_str(w);
        } else {
            lines.push(format!("{cur}{cont}"));
            cur = format!("{next}{w}");
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// A verb's `after_help` sorted into the sections of its man page:
/// paragraphs headed `Example(s):` are examples, one headed `Exit code`
/// the exit status, the rest notes.
#[derive(Debug, Default, PartialEq)]
pub struct AfterHelp {
    /// Example command lines, as written (their leading two spaces off).
    pub examples: Vec<String>,
    /// The verb's own exit status paragraph, if it has one.
    pub exit: Option<String>,
    /// Every other paragraph, its lines joined.
    pub notes: Vec<String>,
}

pub fn sections(text: &str) -> AfterHelp {
    let mut out = AfterHelp::default();
    for para in text.split("\n\n").map(str::trim_end).filter(|p| !p.trim().is_empty()) {
        let mut lines = para.lines();
        let first = lines.next().unwrap_or_default();
        if first.starts_with("Example") && first.ends_with(':') {
            out.examples.extend(lines.map(|l| l.strip_prefix("  ").unwrap_or(l).to_string()));
        } else if first.starts_with("Exit code") {
            out.exit = Some(para.split_whitespace().collect::<Vec<_>>().join(" "));
        } else {
            out.notes.push(para.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn after_help_examples_stay_line_by_line_and_prose_becomes_notes() {
        let text = "Each order is one round.\nIt counts.\n\nExamples:\n  cosched run --workload w.toml\n  cosched run --policy noplan   # x\n\nExit codes: 0 ok;\n1 failed.";
        let p = sections(text);
        assert_eq!(p.examples, ["cosched run --workload w.toml", "cosched run --policy noplan   # x"]);
        assert_eq!(p.notes, ["Each order is one round. It counts."]);
        assert_eq!(p.exit.as_deref(), Some("Exit codes: 0 ok; 1 failed."));
    }

    #[test]
    fn a_long_example_breaks_with_continuations_and_its_comment_moves_above() {
        let line = "  cosched run --workload examples/mixed.toml --baseline exclusive --baseline noplan --repeats 3   # best-match";
        assert_eq!(
            fit_line(line),
            [
                "  # best-match",
                "  cosched run --workload examples/mixed.toml --baseline exclusive \\",
                "      --baseline noplan --repeats 3",
            ]
        );
    }

    #[test]
    fn short_lines_prose_and_quoted_hashes_are_left_alone() {
        let text = "Examples:\n  cosched node\n\nA paragraph of prose that is much longer than eighty columns and is clap's to wrap as it likes.";
        assert_eq!(fit_examples(text), text);
        let quoted = "  cosched run --workload w.toml --json | jq '.runs[0] # not a comment, inside quotes of the filter'";
        assert!(fit_line(quoted).iter().all(|l| !l.trim_start().starts_with('#')), "{:?}", fit_line(quoted));
    }

    proptest! {
        /// Fitting keeps every word in order: joining the fitted lines back
        /// (continuations and comment moved) gives the same words.
        #[test]
        fn fitting_loses_no_word(ws in proptest::collection::vec("[a-z=./-]{1,20}", 1..30)) {
            let line = format!("  cosched {}", ws.join(" "));
            let fitted = fit_line(&line);
            let back: Vec<String> = fitted.iter().flat_map(|l| l.trim_end_matches(" \\").split_whitespace().map(str::to_string).collect::<Vec<_>>()).collect();
            let orig: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            prop_assert_eq!(back, orig);
            for l in &fitted {
                prop_assert!(l.chars().count() <= WIDTH, "{}", l);
            }
        }
    }
}
