//! Self-contained HTML reports: one file, no scripts, no external styles, the
//! plots inline as SVG, so a report can be mailed, archived or opened from a
//! cluster's file system as it is.
//!
//! ```
//! use cosched_report::html::Page;
//! let mut page = Page::new("Simulation of seed000.toml");
//! page.note("10000 orders, seed 1")
//!     .section("Makespan")
//!     .paragraph("Increase rate against sequential execution.")
//!     .table(&["policy", "median"], &[vec!["noplan".into(), "-31.3 %".into()]])
//!     .svg("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>");
//! let html = page.render();
//! assert!(html.contains("<h2 id=\"makespan\">Makespan</h2>"));
//! ```

use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Section(String),
    Paragraph(String),
    Note(String),
    Table { headers: Vec<String>, rows: Vec<Vec<String>> },
    Svg(String),
    Pre(String),
    Link { href: String, text: String },
}

/// A report page under construction: blocks in the order they are added.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    title: String,
    blocks: Vec<Block>,
}

impl Page {
    pub fn new(title: &str) -> Page {
        Page { title: title.to_string(), blocks: Vec::new() }
    }

    /// Renames the page (a verb's sections reused under another title).
    pub fn set_title(&mut self, title: &str) -> &mut Page {
        self.title = title.to_string();
        self
    }

    /// A section heading; sections are listed in a contents line at the top.
    pub fn section(&mut self, title: &str) -> &mut Page {
        self.blocks.push(Block::Section(title.to_string()));
        self
    }

    pub fn paragraph(&mut self, text: &str) -> &mut Page {
        self.blocks.push(Block::Paragraph(text.to_string()));
        self
    }

    /// A remark set apart from the text (provenance, caveats).
    pub fn note(&mut self, text: &str) -> &mut Page {
        self.blocks.push(Block::Note(text.to_string()));
        self
    }

    /// A table; columns of numbers are right-aligned, text columns left
    /// ([`crate::numeric_columns`]).
    pub fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) -> &mut Page {
        self.blocks.push(Block::Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows: rows.to_vec() });
        self
    }

    /// An SVG document inlined as it is (the caller made it; its XML prolog,
    /// if any, is dropped since HTML does not take one inside a page).
    pub fn svg(&mut self, svg: &str) -> &mut Page {
        let body = match svg.trim_start().strip_prefix("<?xml") {
            Some(rest) => rest.split_once("?>").map_or(svg, |(_, r)| r),
            None => svg,
        };
        self.blocks.push(Block::Svg(body.trim().to_string()));
        self
    }

    /// Preformatted text (a command line, a log excerpt).
    pub fn pre(&mut self, text: &str) -> &mut Page {
        self.blocks.push(Block::Pre(text.to_string()));
        self
    }

    /// A link to a file beside the report (CSV, JSON).
    pub fn link(&mut self, href: &str, text: &str) -> &mut Page {
        self.blocks.push(Block::Link { href: href.to_string(), text: text.to_string() });
        self
    }

    /// The whole page.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            esc(&self.title),
            STYLE,
            esc(&self.title)
        );
        let sections: Vec<&String> = self.blocks.iter().filter_map(|b| match b {
            Block::Section(t) => Some(t),
            _ => None,
        }).collect();
        if sections.len() > 1 {
            s.push_str("<nav>");
            for (i, t) in sections.iter().enumerate() {
                if i > 0 {
                    s.push_str(" · ");
                }
                let _ = write!(s, "<a href=\"#{}\">{}</a>", anchor(t), esc(t));
            }
            s.push_str("</nav>\n");
        }
        for b in &self.blocks {
            match b {
                Block::Section(t) => {
                    let _ = writeln!(s, "<h2 id=\"{}\">{}</h2>", anchor(t), esc(t));
                }
                Block::Paragraph(t) => {
                    let _ = writeln!(s, "<p>{}</p>", esc(t));
                }
                Block::Note(t) => {
                    let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(t));
                }
                Block::Pre(t) => {
                    let _ = writeln!(s, "<pre>{}</pre>", esc(t));
                }
                Block::Link { href, text } => {
                    let _ = writeln!(s, "<p><a href=\"{}\">{}</a></p>", esc(href), esc(text));
                }
                Block::Svg(svg) => {
                    let _ = writeln!(s, "<figure>{svg}</figure>");
                }
                Block::Table { headers, rows } => {
                    // A wide table scrolls in its own box instead of widening the page.
                    s.push_str("<div class=\"wide\"><table>\n<thead><tr>");
                    for h in headers {
                        let _ = write!(s, "<th>{}</th>", esc(h));
                    }
                    s.push_str("</tr></thead>\n<tbody>\n");
                    let numbers = crate::numeric_columns(rows);
                    for r in rows {
                        s.push_str("<tr>");
                        for (i, c) in r.iter().enumerate() {
                            if numbers.get(i).copied().unwrap_or(false) {
                                let _ = write!(s, "<td class=\"num\">{}</td>", esc(c));
                            } else {
                                let _ = write!(s, "<td>{}</td>", esc(c));
                            }
                        }
                        s.push_str("</tr>\n");
                    }
                    s.push_str("</tbody>\n</table></div>\n");
                }
            }
        }
        s.push_str("</body>\n</html>\n");
        s
    }
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.8em 0}th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.note{color:#555;font-size:.92em}figure{margin:.8em 0;overflow-x:auto}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}\
nav{margin-bottom:1em}.wide{overflow-x:auto;max-width:100%}";

/// A stable id for a section title: lower-case letters and digits, dashes between.
fn anchor(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_text_and_keeps_blocks_in_order() {
        let mut p = Page::new("a <b> & c");
        p.section("One & two").paragraph("x < y").table(&["k", "v", "why"], &[vec!["<k>".into(), "1".into(), "a reason".into()]]);
        p.section("Plots").svg("<?xml version=\"1.0\"?>\n<svg><rect/></svg>").note("n").pre("a\tb").link("s.csv", "table as CSV");
        let h = p.render();
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("<title>a &lt;b&gt; &amp; c</title>"));
        assert!(h.contains("<h2 id=\"one-two\">One &amp; two</h2>"));
        assert!(h.contains("<a href=\"#plots\">Plots</a>"), "contents line");
        assert!(h.contains("<td>&lt;k&gt;</td><td class=\"num\">1</td><td>a reason</td>"), "numbers right, text left");
        assert!(h.contains("<figure><svg><rect/></svg></figure>"), "prolog dropped");
        assert!(!h.contains("<?xml"));
        let order: Vec<usize> = ["One &amp; two", "x &lt; y", "<table>", "Plots", "<figure>", "class=\"note\"", "<pre>", "s.csv"]
            .iter()
            .map(|k| {
                let body = h.find("</nav>").unwrap();
                body + h[body..].find(k).unwrap_or_else(|| panic!("{k} missing"))
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(h.trim_end().ends_with("</html>"));
    }

    #[test]
    fn anchors_are_plain() {
        assert_eq!(anchor("Worst run time (fig. 13)"), "worst-run-time-fig-13");
    }
}
