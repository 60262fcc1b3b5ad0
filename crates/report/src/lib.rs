//! Tables, plots and reports: everything cosched shows a person.
//!
//! It formats results it is handed; it never measures, predicts or decides.

pub mod boxplot;
pub mod cdf;
pub mod curves;
pub mod doc;
pub mod gantt;
pub mod html;
pub mod scatter;
pub mod svg;

use comfy_table::{presets, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width};
use cosched_model::stats::Summary;

/// The widest line a printed table may have, in characters (issue 40): a
/// terminal of 100 columns, a log or a mail shows it without wrapping it
/// anew. A terminal narrower than this narrows it further.
pub const MAX_TABLE_WIDTH: u16 = 100;

/// A plain table that reads well in a terminal, a log and a Markdown file,
/// never wider than [`MAX_TABLE_WIDTH`] (or the terminal, when narrower):
/// a table that fits stays one row per line; one that does not wraps its
/// widest cells between words onto continuation lines; one that cannot fit
/// without breaking a word inside a cell is printed row by row, each row
/// as a two-column block of header and value, a token too long for its
/// column broken after its punctuation ([`fit`]).
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    fit(headers, rows, table_width())
}

/// [`table`] that never wraps, for Markdown written into files (a wrapped
/// row would break the Markdown table).
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    build(headers, rows, ContentArrangement::Disabled)
}

/// The width [`table`] fits its tables to: the terminal's when it is one,
/// never above [`MAX_TABLE_WIDTH`].
pub fn table_width() -> u16 {
    let terminal = Table::new().width().filter(|_| Table::new().is_tty());
    terminal.map_or(MAX_TABLE_WIDTH, |w| w.min(MAX_TABLE_WIDTH))
}

/// Whether [`fit`] keeps the table a grid at `width` (whole or wrapped
/// between words) rather than printing it row by row: a matrix read row
/// by row loses its columns, so callers can show less per cell instead.
pub fn fits_as_grid(headers: &[&str], rows: &[Vec<String>], width: u16) -> bool {
    framed(&longest_words(headers, rows)) <= usize::from(width)
}

/// [`table`] fitted to `width` columns, as a terminal of that width shows it.
pub fn table_for_width(headers: &[&str], rows: &[Vec<String>], width: u16) -> String {
    fit(headers, rows, width)
}

/// Widest run of characters without a space in each column (header
/// included): the narrowest the column can be without breaking a word.
fn longest_words(headers: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let words = |c: &str| c.split_whitespace().map(|w| w.chars().count()).max().unwrap_or(0);
    let mut out: Vec<usize> = headers.iter().map(|h| words(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i >= out.len() {
                out.push(0);
            }
            out[i] = out[i].max(words(c));
        }
    }
    out
}

/// Each column's widest line (header included).
fn widest_cells(headers: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let len = |c: &str| c.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut out: Vec<usize> = headers.iter().map(|h| len(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i >= out.len() {
                out.push(0);
            }
            out[i] = out[i].max(len(c));
        }
    }
    out
}

/// The width of a Markdown table whose columns are `cols` wide: each
/// column's cell padded by a space each side and closed by a bar, plus the
/// opening bar.
fn framed(cols: &[usize]) -> usize {
    cols.iter().map(|c| c + 3).sum::<usize>() + 1
}

/// The table in at most `width` columns: whole when it fits; else its
/// cells wrapped between words, no column narrower than its longest word;
/// else, when even that is too wide, transposed row by row (each row a
/// block of `header | value` lines under the first column's header and
/// value), the blocks separated by a blank line, a header or value longer
/// than its column broken after a `,` `=` `:` or `/` ([`break_long`]).
pub fn fit(headers: &[&str], rows: &[Vec<String>], width: u16) -> String {
    let width = usize::from(width);
    if framed(&widest_cells(headers, rows)) <= width {
        return build(headers, rows, ContentArrangement::Disabled);
    }
    let words = longest_words(headers, rows);
    // Headers wrap before cells do: a row read on one line is worth more
    // than a header on one.
    let body: Vec<usize> = widest_cells(&[], rows).iter().zip(&words).map(|(b, w)| *b.max(w)).collect();
    if body.len() == words.len() && framed(&body) <= width {
        let mut t = new_table(headers, rows, ContentArrangement::Dynamic);
        t.set_width(width as u16);
        for (col, w) in t.column_iter_mut().zip(&body) {
            col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(*w as u16 + 2)));
        }
        return t.to_string();
    }
    if framed(&words) <= width {
        let mut t = new_table(headers, rows, ContentArrangement::Dynamic);
        t.set_width(width as u16);
        for (col, w) in t.column_iter_mut().zip(&words) {
            // A constraint counts the cell's padding, a space each side.
            col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(*w as u16 + 2)));
        }
        return t.to_string();
    }
    let (Some(first), rest) = (headers.first(), headers.get(1..).unwrap_or(&[])) else { return String::new() };
    // Headers take at most half the width, values the rest; a token longer
    // than its column (a policy label such as `react:action=suspend,...`)
    // is broken after its punctuation rather than cut inside a word.
    let (header_max, value_max) = {
        let h = rest.iter().chain([first]).map(|h| widest_line(&break_long(h, width / 2))).max().unwrap_or(0).min(width / 2);
        (h, width.saturating_sub(h + 7).max(1))
    };
    let blocks: Vec<String> = rows
        .iter()
        .map(|r| {
            let fields: Vec<Vec<String>> = rest
                .iter()
                .enumerate()
                .map(|(i, h)| vec![break_long(h, header_max), break_long(r.get(i + 1).map_or("", String::as_str), value_max)])
                .collect();
            let head = [break_long(first, header_max), break_long(r.first().map_or("", String::as_str), value_max)];
            let head: Vec<&str> = head.iter().map(String::as_str).collect();
            let mut t = new_table(&head, &fields, ContentArrangement::Dynamic);
            t.set_width(width as u16);
            let mut cols = t.column_iter_mut();
            // A constraint counts the cell's padding, a space each side.
            if let Some(c) = cols.next() {
                c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(header_max as u16 + 2)));
            }
            if let Some(c) = cols.next() {
                c.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(value_max as u16 + 2)));
            }
            t.to_string()
        })
        .collect();
    blocks.join("\n\n")
}

/// The widest line of `text`, in characters.
fn widest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// `text` with every space-free token longer than `max` characters broken
/// onto lines of at most `max` after a `,` (so `key=value` stays whole),
/// else, within a piece still too long, after a `=` `:` or `/`; the
/// punctuation ends the line, so a reader sees the token goes on, and as
/// many pieces go on a line as fit. A piece longer than `max` between two
/// such marks stays whole: the table cuts it, as it must.
pub fn break_long(text: &str, max: usize) -> String {
    let max = max.max(1);
    let token = |w: &str| -> String {
        if w.chars().count() <= max {
            return w.to_string();
        }
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        for piece in w.split_inclusive(',') {
            let parts: Vec<&str> = if piece.chars().count() > max { piece.split_inclusive(['=', ':', '/']).collect() } else { vec![piece] };
            for part in parts {
                if !line.is_empty() && line.chars().count() + part.chars().count() > max {
                    lines.push(std::mem::take(&mut line));
                }
                line.push_str(part);
            }
        }
        lines.push(line);
        lines.join("\n")
    };
    text.lines().map(|l| l.split(' ').map(token).collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n")
}

fn build(headers: &[&str], rows: &[Vec<String>], arrangement: ContentArrangement) -> String {
    new_table(headers, rows, arrangement).to_string()
}

fn new_table(headers: &[&str], rows: &[Vec<String>], arrangement: ContentArrangement) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN).set_content_arrangement(arrangement).set_header(headers.to_vec());
    for r in rows {
        t.add_row(r.clone());
    }
    // Numbers line up on the right; names and text read from the left.
    let numbers = numeric_columns(rows);
    for (i, col) in t.column_iter_mut().enumerate() {
        if numbers.get(i).copied().unwrap_or(false) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Which columns hold numbers (right-aligned in tables): every cell a
/// figure (`1.52`, `-3 %`, `+0.4`, `12 [10, 14]`, `3.1 s`) or a placeholder
/// (`-`, empty), and at least one a figure. Text columns (names, reasons,
/// CPU lists such as `0-3`, dates) stay left-aligned.
pub fn numeric_columns(rows: &[Vec<String>]) -> Vec<bool> {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..width)
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i)).map(|c| c.trim());
            let mut any = false;
            for c in cells {
                if c.is_empty() || c == "-" {
                    continue;
                }
                if !figure(c) {
                    return false;
                }
                any = true;
            }
            any
        })
        .collect()
}

/// A figure: an optional sign, digits, then nothing that makes it a word
/// (a unit, a percent sign or a bracketed interval may follow after a
/// space). `0-3` and `2026-11-28` are lists and dates, not figures.
fn figure(c: &str) -> bool {
    let body = c.strip_prefix(['+', '-', '\u{2212}']).unwrap_or(c);
    let num_end = body.find(|ch: char| !(ch.is_ascii_digit() || ch == '.')).unwrap_or(body.len());
    let (num, rest) = body.split_at(num_end);
    if num.is_empty() || !num.starts_with(|ch: char| ch.is_ascii_digit()) || num.parse::<f64>().is_err() {
        return false;
    }
    rest.is_empty() || rest.starts_with(' ') || rest.starts_with(['%', 'x', 'k', 'M', 'G', 'e', 'E'])
}

#[cfg(test)]
mod table_tests {
    use super::*;

    fn rows() -> Vec<Vec<String>> {
        vec![vec!["best-match:aging=4,window=8".into(), "a long explanation of why this policy refused the pair".into()]]
    }

    #[test]
    fn intervals_of_fewer_than_six_samples_are_called_the_range() {
        assert_eq!(interval_name([3, 5]), "range");
        assert_eq!(interval_name([6, 20]), "95% CI");
        assert_eq!(interval_name([5, 6]), "95% CI, range below 6 repeats");
        assert_eq!(interval_name([]), "95% CI");
    }

    #[test]
    fn numbers_are_right_aligned_and_text_columns_left() {
        let rows = vec![
            vec!["noplan".into(), "1.52 [1.40, 1.60]".into(), "-3.1 %".into(), "0-3".into(), "held back: a beside b".into(), "-".into()],
            vec!["best-match:window=8".into(), "12".into(), "+0.4 %".into(), "4,5".into(), "none".into(), "2.5 s".into()],
        ];
        assert_eq!(numeric_columns(&rows), [false, true, true, false, false, true]);
        let t = table(&["policy", "median", "rate", "cpus", "why", "time"], &rows);
        let line = t.lines().nth(3).unwrap();
        assert!(line.contains("| none "), "text left-aligned: {t}");
        assert!(line.contains(" 12 |"), "numbers right-aligned: {t}");
    }

    #[test]
    fn a_table_wider_than_the_terminal_wraps_within_its_width() {
        let t = table_for_width(&["policy", "why"], &rows(), 50);
        assert!(t.lines().count() > 3, "wrapped onto continuation lines:\n{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 50), "every line fits 50 columns:\n{t}");
    }

    /// Every line's width in characters, and whether any word of `cells`
    /// is missing whole from the output (broken inside its cell).
    fn widths_and_broken_words(t: &str, cells: &[&str]) -> (usize, Vec<String>) {
        let widest = t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        let words: Vec<&str> = t.split(|c: char| c == '|' || c.is_whitespace()).collect();
        let broken = cells
            .iter()
            .flat_map(|c| c.split_whitespace())
            .filter(|w| !words.contains(w))
            .map(str::to_string)
            .collect();
        (widest, broken)
    }

    #[test]
    fn a_wide_table_fits_a_hundred_columns_without_breaking_a_word() {
        let head = ["job", "solo s", "host load U", "syscalls/s", "I/O MB/s", "ctx switches/s", "what it waits for", "note"];
        let row: Vec<String> = ["flops.1", "0.31 [0.30, 0.33]", "0.98", "12.5", "0.0", "41", "nothing: it computes", "pinned to CPU 0 alone"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows = vec![row.clone(), row.clone()];
        let plain = markdown_table(&head, &rows);
        assert!(plain.lines().next().unwrap().chars().count() > 100, "the case is wide: {plain}");
        let t = fit(&head, &rows, MAX_TABLE_WIDTH);
        let cells: Vec<&str> = row.iter().map(String::as_str).chain(head).collect();
        let (widest, broken) = widths_and_broken_words(&t, &cells);
        assert!(widest <= 100, "{widest} columns:\n{t}");
        assert!(broken.is_empty(), "words broken inside cells: {broken:?}\n{t}");
    }

    #[test]
    fn a_table_whose_words_alone_overflow_is_printed_row_by_row() {
        let head: Vec<String> = (0..12).map(|i| format!("column-number-{i}")).collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let rows = vec![(0..12).map(|i| format!("value-{i}")).collect::<Vec<_>>()];
        let t = fit(&head, &rows, MAX_TABLE_WIDTH);
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        assert!(t.contains("| column-number-5 ") && t.contains(" value-5 "), "header beside its value: {t}");
        assert_eq!(t.lines().filter(|l| l.starts_with('|')).count(), 13, "a header line, then one line per other column: {t}");
    }

    /// evaluate's "Every order" table with a react policy: its label is a
    /// 63-character token, once cut at 50 characters as `threshold=1.` / `3`.
    #[test]
    fn a_long_policy_label_breaks_after_its_punctuation_never_inside_a_word() {
        let label = "react:action=suspend,inner=best-match,resume=free,threshold=1.3";
        let heads = [
            "order".to_string(),
            "CPU 0-1 round trip".into(),
            "regime".into(),
            "best-match: makespan / mean TAT / worst slowdown".into(),
            format!("{label}: makespan / mean TAT / worst slowdown"),
        ];
        let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = (1..=3)
            .map(|k| vec![k.to_string(), "152 ns".into(), "shared (switched within the order)".into(), "4.10 / 2.96 / 1.52".into(), "3.98 / 2.71 / 1.33".into()])
            .collect();
        let t = fit(&heads, &rows, MAX_TABLE_WIDTH);
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        let first_cells: Vec<&str> = t.lines().filter_map(|l| l.split('|').nth(1)).map(str::trim).collect();
        assert_eq!(first_cells.iter().filter(|c| **c == "react:action=suspend,inner=best-match,resume=free,").count(), 3, "{t}");
        assert_eq!(first_cells.iter().filter(|c| c.starts_with("threshold=1.3: makespan")).count(), 3, "{t}");
        assert!(!t.contains("threshold=1. ") && !t.contains("threshold=1.|"), "{t}");
    }

    #[test]
    fn long_tokens_break_only_after_punctuation_and_short_ones_are_left_alone() {
        assert_eq!(break_long("a b", 1), "a b");
        assert_eq!(break_long("see react:action=suspend,inner=best-match", 21), "see react:action=suspend,\ninner=best-match");
        assert_eq!(break_long("/usr/share/doc/cosched", 12), "/usr/share/\ndoc/cosched");
        // No mark to break at: left whole, for the table to cut.
        assert_eq!(break_long("abcdefghijkl", 5), "abcdefghijkl");
        // After a comma rather than inside a key=value pair, where one fits.
        let stored = "react:action=suspend,inner=best-match,threshold=1.3:";
        assert_eq!(break_long(stored, 50), "react:action=suspend,inner=best-match,\nthreshold=1.3:");
        assert_eq!(break_long(stored, 12), "react:\naction=\nsuspend,\ninner=\nbest-match,\nthreshold=\n1.3:");
        for max in 1..70 {
            let label = "react:action=suspend,inner=best-match,resume=free,threshold=1.3";
            let b = break_long(label, max);
            assert_eq!(b.replace('\n', ""), label, "nothing lost or added at {max}");
            for l in b.lines().filter(|l| l.chars().count() > max) {
                // Only a single piece between two marks is longer than the limit.
                assert!(!l[..l.len() - 1].contains([',', '=', ':', '/']), "{l:?} at {max}");
            }
            assert!(b.lines().rev().skip(1).all(|l| l.ends_with([',', '=', ':', '/'])), "{b:?}");
        }
    }

    #[test]
    fn headers_wrap_before_cells_do() {
        let head = ["a column with a long header", "another column with a long header", "a third with a long header", "x"];
        let rows = vec![vec!["1.52 [1.40, 1.60]".to_string(), "done".into(), "best-match".into(), "2".into()]];
        let t = fit(&head, &rows, 80);
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        let body: Vec<&str> = t.lines().skip_while(|l| !l.starts_with("|--")).skip(1).collect();
        assert_eq!(body.len(), 1, "the row stays on one line: {t}");
        assert!(t.lines().position(|l| l.starts_with("|--")).unwrap() > 1, "the header wrapped: {t}");
    }

    #[test]
    fn a_table_that_fits_is_left_as_it_is() {
        let rows = vec![vec!["a".to_string(), "1".to_string()]];
        assert_eq!(fit(&["x", "n"], &rows, MAX_TABLE_WIDTH), markdown_table(&["x", "n"], &rows));
    }

    #[test]
    fn markdown_tables_and_piped_tables_keep_one_line_per_row() {
        for t in [markdown_table(&["policy", "why"], &rows()), table(&["policy", "why"], &rows())] {
            // Under `cargo test` stdout is not a terminal, so `table` stays whole too.
            assert_eq!(t.lines().count(), 3, "{t}");
        }
    }
}

/// What the brackets of `median [lo, hi]` are over summaries of these
/// sample sizes: the ~95 % confidence interval of the median, which below
/// six samples is their whole range (`stats::median_ci_ranks`), so it is
/// called that.
pub fn interval_name(ns: impl IntoIterator<Item = usize>) -> &'static str {
    let (mut few, mut enough) = (false, false);
    for n in ns {
        if n < cosched_model::stats::CI_MIN_SAMPLES {
            few = true;
        } else {
            enough = true;
        }
    }
    match (few, enough) {
        (true, false) => "range",
        (true, true) => "95% CI, range below 6 repeats",
        _ => "95% CI",
    }
}

/// `median [lo, hi]` of the confidence interval, with `digits` decimals.
pub fn fmt_ci(s: &Summary, digits: usize) -> String {
    format!("{:.d$} [{:.d$}, {:.d$}]", s.median, s.ci_lo, s.ci_hi, d = digits)
}

/// Like [`fmt_ci`], with decimals chosen by magnitude (three significant
/// figures or more), for figures whose scale is not known in advance.
pub fn fmt_ci_auto(s: &Summary) -> String {
    let m = s.median.abs();
    let digits = if m >= 100.0 { 0 } else if m >= 10.0 { 1 } else if m >= 1.0 { 2 } else { 3 };
    fmt_ci(s, digits)
}

/// `median (min-max, n=N)`: the spread of a small sample, where an interval
/// would claim more than a handful of repeats can give.
pub fn fmt_spread(s: &Summary, digits: usize) -> String {
    format!("{:.d$} ({:.d$}-{:.d$}, n={})", s.median, s.min, s.max, s.n, d = digits)
}

/// A CSV file's text: the header, then one line per row, a field quoted
/// only where it needs it (a comma, a quote or a line break; RFC 4180) and
/// every line ending in `\n`. Through the `csv` crate, as every CSV cosched
/// writes, so one quoting rule holds across its files.
pub fn csv_text(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let io = "writing CSV to memory cannot fail";
    w.write_record(headers).expect(io);
    for r in rows {
        w.write_record(&r).expect(io);
    }
    String::from_utf8(w.into_inner().expect(io)).expect("CSV of UTF-8 fields is UTF-8")
}

/// A rate with an SI prefix: 1234567 -> "1.23M".
pub fn si(v: f64) -> String {
    let (div, suffix) = match v.abs() {
        x if x >= 1e9 => (1e9, "G"),
        x if x >= 1e6 => (1e6, "M"),
        x if x >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    format!("{:.3}{suffix}", v / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_header_and_rows_aligned() {
        let t = table(&["job", "slowdown"], &[vec!["stream".into(), "1.52".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].contains("job") && lines[0].contains("slowdown"));
        assert!(lines[2].contains("stream") && lines[2].contains("1.52"));
    }

    #[test]
    fn summaries_format_with_interval_and_spread() {
        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(fmt_ci(&s, 1), "2.0 [1.0, 3.0]");
        assert_eq!(fmt_spread(&s, 2), "2.00 (1.00-3.00, n=3)");
    }

    #[test]
    fn auto_decimals_keep_small_figures_readable() {
        assert_eq!(fmt_ci_auto(&Summary::of(&[0.2, 0.21, 0.22]).unwrap()), "0.210 [0.200, 0.220]");
        assert_eq!(fmt_ci_auto(&Summary::of(&[1234.4]).unwrap()), "1234 [1234, 1234]");
    }

    #[test]
    fn csv_quotes_only_what_needs_it_and_round_trips_commas_quotes_and_newlines() {
        let awkward = "best-match:aging=4,window=8 \"x\"\nnext";
        let text = csv_text(&["policy", "median"], [vec!["noplan".into(), "1.5".into()], vec![awkward.into(), "2".into()]]);
        assert_eq!(text, "policy,median\nnoplan,1.5\n\"best-match:aging=4,window=8 \"\"x\"\"\nnext\",2\n");
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let got: Vec<Vec<String>> = r.records().map(|rec| rec.unwrap().iter().map(String::from).collect()).collect();
        assert_eq!(got, [vec!["noplan".to_string(), "1.5".into()], vec![awkward.into(), "2".into()]]);
    }

    #[test]
    fn si_prefixes() {
        assert_eq!(si(1_234_567.0), "1.235M");
        assert_eq!(si(12.0), "12.000");
    }
}
