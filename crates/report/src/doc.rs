//! What a verb's result looks like to a reader: lines and tables in order,
//! rendered as terminal text or as an HTML page from the same blocks, so
//! the two never tell different things.
//!
//! ```
//! use cosched_report::doc::Doc;
//! let mut d = Doc::new();
//! d.table(&["run", "status"], vec![vec!["1".into(), "done".into()]]).line("1 run");
//! assert!(d.text().ends_with("|\n1 run\n"));
//! assert!(d.html("runs").contains("<th>status</th>"));
//! ```

use crate::html::Page;

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Line(String),
    Table { head: Vec<String>, rows: Vec<Vec<String>> },
}

/// Lines and tables under construction, in the order they are added.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Doc {
    blocks: Vec<Block>,
}

impl Doc {
    pub fn new() -> Doc {
        Doc::default()
    }

    /// One line of text (it may hold line breaks; `""` is a blank line).
    pub fn line(&mut self, text: impl Into<String>) -> &mut Doc {
        self.blocks.push(Block::Line(text.into()));
        self
    }

    /// A table as [`crate::table`] draws it.
    pub fn table<S: AsRef<str>>(&mut self, head: &[S], rows: Vec<Vec<String>>) -> &mut Doc {
        self.blocks.push(Block::Table { head: head.iter().map(|h| h.as_ref().to_string()).collect(), rows });
        self
    }

    /// Nothing added yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The text a terminal shows: each block followed by a line break.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for b in &self.blocks {
            match b {
                Block::Line(l) => s.push_str(l),
                Block::Table { head, rows } => {
                    let head: Vec<&str> = head.iter().map(String::as_str).collect();
                    s.push_str(&crate::table(&head, rows));
                }
            }
            s.push('\n');
        }
        s
    }

    /// The same blocks as a self-contained HTML page (lines as paragraphs,
    /// blank lines dropped).
    pub fn html(&self, title: &str) -> String {
        let mut page = Page::new(title);
        for b in &self.blocks {
            match b {
                Block::Line(l) if l.trim().is_empty() => {}
                Block::Line(l) => {
                    page.paragraph(l.trim());
                }
                Block::Table { head, rows } => {
                    let head: Vec<&str> = head.iter().map(String::as_str).collect();
                    page.table(&head, rows);
                }
            }
        }
        page.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_what_one_println_per_block_prints() {
        let mut d = Doc::new();
        d.line("database  x.db").line("integrity ok\n").table(&["table", "rows"], vec![vec!["runs".into(), "3".into()]]);
        let table = crate::table(&["table", "rows"], &[vec!["runs".into(), "3".into()]]);
        assert_eq!(d.text(), format!("database  x.db\nintegrity ok\n\n{table}\n"));
    }

    #[test]
    fn html_holds_the_same_cells_and_lines_escaped() {
        let mut d = Doc::new();
        d.line("").line("a < b").table(&["job"], vec![vec!["x&y".into()]]);
        let h = d.html("t");
        assert!(h.contains("a &lt; b") && h.contains("x&amp;y") && h.contains("<th>job</th>"), "{h}");
        assert!(!h.contains("<p></p>"), "{h}");
    }
}
