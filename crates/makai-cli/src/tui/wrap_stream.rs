//! [`TextStream`]: plain text that grows at its end (a thinking block while
//! it streams) wrapped again only from its last line that more text can
//! change.
//!
//! The rows are those of `wrap_text(text.trim(), ..)`, which wraps each line
//! on its own. A line is settled once a newline ends it and some
//! non-whitespace follows: the trim can no longer reach it, and more text only
//! adds lines after it.

use ratatui::style::Style;
use ratatui::text::Line;

use super::wrap::{indent_rows, wrap_text};

/// The rows of a growing text, kept between renders. Gives the rows
/// `wrap_text(text.trim(), width, style, "")` gives.
#[derive(Default)]
pub struct TextStream {
    width: usize,
    /// Blank columns before every row (pi's `outputPad`).
    margin: usize,
    style: Style,
    /// The source of the settled rows: a prefix of the text that ends with a
    /// newline and holds some non-whitespace, or nothing.
    settled_text: String,
    settled: Vec<Line<'static>>,
    /// The rows of the text after `settled_text`.
    tail: Vec<Line<'static>>,
}

impl TextStream {
    /// Wraps `text` at `width` columns in `style`, each row after `margin`
    /// blank ones. Cheap when `text` is the text of the last update with
    /// more appended; any other text is wrapped anew.
    pub fn update(&mut self, text: &str, width: usize, style: Style, margin: usize) {
        if width != self.width
            || style != self.style
            || margin != self.margin
            || !text.starts_with(&*self.settled_text)
        {
            self.width = width;
            self.margin = margin;
            self.style = style;
            self.settled_text.clear();
            self.settled.clear();
        }
        let rest = &text[self.settled_text.len()..];
        // Lines up to the last newline before the last non-whitespace settle.
        if let Some(content) = rest.rfind(|c: char| !c.is_whitespace())
            && let Some(newline) = rest[..content].rfind('\n')
        {
            let lines = &rest[..newline];
            let lines = if self.settled_text.is_empty() {
                lines.trim_start()
            } else {
                lines
            };
            if !self.settled_text.is_empty() || !lines.is_empty() {
                let mut rows = wrap_text(lines, width, style, "");
                indent_rows(&mut rows, margin);
                self.settled.extend(rows);
                self.settled_text.push_str(&rest[..=newline]);
            }
        }
        let rest = &text[self.settled_text.len()..];
        self.tail = if self.settled_text.is_empty() {
            wrap_text(rest.trim(), width, style, "")
        } else {
            wrap_text(rest.trim_end(), width, style, "")
        };
        indent_rows(&mut self.tail, margin);
    }

    /// The rows of the text last wrapped, top to bottom.
    pub fn lines(&self) -> impl Iterator<Item = &Line<'static>> {
        self.settled.iter().chain(self.tail.iter())
    }

    /// The rows of [`lines`](Self::lines) as two runs: the settled ones and
    /// the rest.
    pub fn runs(&self) -> [&[Line<'static>]; 2] {
        [&self.settled, &self.tail]
    }

    /// How many of the rows are settled (kept, not wrapped again).
    pub fn settled_rows(&self) -> usize {
        self.settled.len()
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::Modifier;

    use super::*;
    use crate::tui::test_rng::Rng;

    /// Wraps `text` as it streams in, a byte at a time (on character
    /// boundaries), and checks every step against a whole wrap; returns the
    /// settled rows at the end.
    fn check_growing(text: &str, width: usize) -> usize {
        let style = Style::default().add_modifier(Modifier::ITALIC);
        let mut stream = TextStream::default();
        for end in (1..=text.len()).filter(|&e| text.is_char_boundary(e)) {
            let part = &text[..end];
            stream.update(part, width, style, 0);
            let got: Vec<Line<'static>> = stream.lines().cloned().collect();
            assert_eq!(
                got,
                wrap_text(part.trim(), width, style, ""),
                "rows differ after {end} bytes of {text:?}"
            );
        }
        stream.settled_rows()
    }

    #[test]
    fn streamed_text_wraps_as_the_whole_text_does() {
        const PIECES: &[&str] = &[
            "word",
            "two words",
            " ",
            "  ",
            "\t",
            "\n",
            "\n\n",
            "\r\n",
            " \n",
            "\n ",
            "漢字",
            "a-very-long-unbroken-token-that-needs-hard-wrapping",
            "🎉",
            "\u{3000}",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let text = rng.text(PIECES, 40);
            check_growing(&text, 4 + rng.index(20));
        }
    }

    #[test]
    fn leading_blank_lines_and_trailing_whitespace_are_trimmed_as_whole_text_is() {
        check_growing("\n\n  \n  first line\n\nsecond  \n  \n", 10);
        check_growing("   \n\t\n", 10);
        check_growing("only one line, no newline, wrapped at ten", 10);
    }

    #[test]
    fn settled_lines_are_not_wrapped_again() {
        let text: String = (0..40)
            .map(|i| format!("Thought {i} of the model.\n"))
            .collect();
        // Every line but the last (never followed by more) is settled.
        assert_eq!(check_growing(&text, 80), 39);
    }

    #[test]
    fn a_new_width_or_a_replaced_text_wraps_anew() {
        let style = Style::default();
        let mut stream = TextStream::default();
        let text = "first line here\nsecond line here\nthird";
        stream.update(text, 40, style, 0);
        stream.update(text, 6, style, 0);
        let got: Vec<Line<'static>> = stream.lines().cloned().collect();
        assert_eq!(got, wrap_text(text.trim(), 6, style, ""));
        let other = "other\ntext";
        stream.update(other, 6, style, 0);
        let got: Vec<Line<'static>> = stream.lines().cloned().collect();
        assert_eq!(got, wrap_text(other, 6, style, ""));
    }
}
