//! Text from outside cosched (job output, job names, Slurm fields) made
//! safe to print on a terminal.
//!
//! A job's output line or a Slurm user's job name may hold escape
//! sequences: printed raw they can move the cursor, rewrite earlier lines
//! of a report on screen, set the window title or, on some terminals,
//! answer back into the input. Every control character is therefore shown
//! as a visible escape, so what reaches the terminal is only text.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` with every control character (C0 but tab, DEL, C1) shown as a
/// visible escape: `\n`, `\r`, `\e` for ESC, else `\xNN` / `\u{NN}`.
/// Text without any comes back borrowed.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x80 && needs_escape(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c != '\t' && c.is_control()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(printable("stream-1\tok ü"), Cow::Borrowed("stream-1\tok ü")));
    }

    #[test]
    fn escape_sequences_and_line_breaks_become_visible() {
        assert_eq!(printable("a\u{1b}[2Jb\nc\rd\u{7}"), "a\\e[2Jb\\nc\\rd\\x07");
        assert_eq!(printable("\u{7f}\u{9b}31m"), "\\x7f\\u{9b}31m");
    }

    proptest! {
        #[test]
        fn printable_output_holds_no_control_character_but_tab(s in any::<String>()) {
            prop_assert!(!printable(&s).chars().any(|c| c != '\t' && c.is_control()));
        }
    }
}
