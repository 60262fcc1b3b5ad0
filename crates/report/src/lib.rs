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

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use cosched_model::stats::Summary;

/// A plain table that reads well in a terminal, a log and a Markdown file.
/// Printed to a terminal narrower than the table, its widest cells wrap onto
/// continuation lines; to a pipe or a file it stays whole, one row per line.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    build(headers, rows, ContentArrangement::Dynamic)
}

/// [`table`] that never wraps, for Markdown written into files (a wrapped
/// row would break the Markdown table).
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    build(headers, rows, ContentArrangement::Disabled)
}

/// [`table`] wrapped to `width` columns, as a terminal of that width shows it.
pub fn table_for_width(headers: &[&str], rows: &[Vec<String>], width: u16) -> String {
    let mut t = new_table(headers, rows, ContentArrangement::Dynamic);
    t.set_width(width);
    t.to_string()
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
