//! The HTML page of a `cosched run` report: one self-contained file with
//! headings, paragraphs, tables and inline SVG. (Kept apart so it can move
//! onto a shared page builder without touching the verb.)

use crate::svg::esc;

/// A block of the page.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(String),
    Paragraph(String),
    /// Header row and body rows, text escaped.
    Table(Vec<String>, Vec<Vec<String>>),
    /// An SVG document, inlined as is.
    Svg(String),
    /// Links to files beside the page: (text, relative path).
    Links(Vec<(String, String)>),
}

/// The page as HTML.
pub fn page(title: &str, blocks: &[Block]) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
         body{{font-family:sans-serif;margin:2em;max-width:1000px}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
    for b in blocks {
        match b {
            Block::Heading(h) => s.push_str(&format!("<h2>{}</h2>\n", esc(h))),
            Block::Paragraph(p) => s.push_str(&format!("<p>{}</p>\n", esc(p))),
            Block::Table(head, rows) => {
                s.push_str("<table><tr>");
                for h in head {
                    s.push_str(&format!("<th>{}</th>", esc(h)));
                }
                s.push_str("</tr>\n");
                for r in rows {
                    s.push_str("<tr>");
                    for c in r {
                        s.push_str(&format!("<td>{}</td>", esc(c)));
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
            Block::Svg(svg) => {
                s.push_str("<div>");
                s.push_str(svg);
                s.push_str("</div>\n");
            }
            Block::Links(links) => {
                s.push_str("<ul>");
                for (text, href) in links {
                    s.push_str(&format!("<li><a href=\"{}\">{}</a></li>", esc(href), esc(text)));
                }
                s.push_str("</ul>\n");
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_escaped_and_svg_is_inlined() {
        let html = page(
            "run <1>",
            &[
                Block::Table(vec!["job".into()], vec![vec!["a&b".into()]]),
                Block::Svg("<svg></svg>".into()),
                Block::Links(vec![("jobs".into(), "jobs.csv".into())]),
            ],
        );
        assert!(html.contains("<title>run &lt;1&gt;</title>"));
        assert!(html.contains("<td>a&amp;b</td>"));
        assert!(html.contains("<div><svg></svg></div>"));
        assert!(html.contains("<a href=\"jobs.csv\">jobs</a>"));
    }
}
