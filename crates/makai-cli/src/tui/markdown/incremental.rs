//! [`Incremental`]: a markdown text that grows at its end (a streaming answer)
//! rendered again only from the first top-level block that later text can
//! still change.
//!
//! A top-level block is *settled* once a blank line follows it and the first
//! line of the next top-level block is complete. Whether a block goes on is
//! decided by the lines after it up to the first non-blank one at top level
//! (a paragraph, a list, a quote or a table ends at a blank line unless that
//! line continues it; a fence or an HTML block ends at its closing line, which
//! the parser has then seen). So once that line is whole, nothing appended can
//! reopen the blocks before it, and the text after it parses alone as it
//! parses in place. The one exception is a link reference definition: it
//! applies to the whole document, earlier text included, so a text that has
//! one is rendered whole.

use std::ops::Range;

use pulldown_cmark::{Event, Parser};
use ratatui::text::Line;

use super::{Renderer, Resume, options};
use crate::tui::wrap::indent_rows;

/// The rows of a growing markdown text, kept between renders: the rows of its
/// settled blocks, and those of the rest, rendered again at each
/// [`update`](Self::update). Gives the rows [`super::render`] gives.
#[derive(Default)]
pub struct Incremental {
    width: usize,
    /// Blank columns before every row (pi's `outputPad`).
    margin: usize,
    /// The source of the settled rows: a prefix of the text last rendered.
    settled_text: String,
    settled: Vec<Line<'static>>,
    /// Where the renderer stood after the settled rows.
    resume: Resume,
    /// The rows of the text after `settled_text`.
    tail: Vec<Line<'static>>,
    /// The text may still grow (its message streams).
    open: bool,
}

impl Incremental {
    /// Renders `text` at `width` columns, each row after `margin` blank
    /// ones; `open`: its message may still grow. Cheap when `text` is the
    /// text of the last update with more appended; any other text, or the
    /// message's end, is rendered anew (markdown that waits for the whole
    /// message, such as Mermaid's `"final"` mode, is drawn then).
    pub fn update(&mut self, text: &str, width: usize, margin: usize, open: bool) {
        if width != self.width
            || margin != self.margin
            || open != self.open
            || !text.starts_with(self.settled_text.as_str())
        {
            self.width = width;
            self.margin = margin;
            self.open = open;
            self.settled_text.clear();
            self.settled.clear();
            self.resume = Resume::default();
        }
        let rest = &text[self.settled_text.len()..];
        let parser = Parser::new_ext(rest, options());
        if parser.reference_definitions().iter().next().is_some() {
            // Definitions reach back into settled text: render it all, and
            // settle nothing while the text has them.
            self.settled_text.clear();
            self.settled.clear();
            self.resume = Resume::default();
            self.tail = super::render_as(text, width, open);
            indent_rows(&mut self.tail, margin);
            return;
        }
        let mut r = Renderer::new(width, self.resume);
        r.message_open = open;
        let mut depth = 0usize;
        // The last settled cut: (bytes of `rest` before it, rows, state).
        let mut cut: Option<(usize, usize, Resume)> = None;
        for (event, range) in super::math::dollar_rule(rest, parser.into_offset_iter()) {
            let block_starts = match &event {
                Event::Start(_) => {
                    depth += 1;
                    depth == 1
                }
                Event::End(_) => {
                    depth = depth.saturating_sub(1);
                    false
                }
                Event::Rule => depth == 0,
                _ => false,
            };
            if block_starts && let Some(line) = settled_before(rest, range.clone()) {
                cut = Some((line, r.out.len(), r.resume()));
            }
            r.source_event(event, rest.get(range).unwrap_or_default());
        }
        r.flush();
        let mut rows = r.out;
        indent_rows(&mut rows, margin);
        if let Some((bytes, settled_rows, resume)) = cut {
            self.settled_text.push_str(&rest[..bytes]);
            self.settled.extend(rows.drain(..settled_rows));
            self.resume = resume;
        }
        self.tail = rows;
    }

    /// The rows of the text last rendered, top to bottom.
    pub fn lines(&self) -> impl Iterator<Item = &Line<'static>> {
        self.settled.iter().chain(self.tail.iter())
    }

    /// The rows of [`lines`](Self::lines) as two runs: the settled ones and
    /// the rest.
    pub fn runs(&self) -> [&[Line<'static>]; 2] {
        [&self.settled, &self.tail]
    }

    /// How many rows [`lines`](Self::lines) yields.
    pub fn len(&self) -> usize {
        self.settled.len() + self.tail.len()
    }

    /// How many of the rows are settled (kept, not rendered again).
    pub fn settled_rows(&self) -> usize {
        self.settled.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the line of a top-level block spanning `block` starts, when the
/// blocks before it are settled: a blank line comes before that line, and the
/// line is complete.
fn settled_before(text: &str, block: Range<usize>) -> Option<usize> {
    let start = block.start.min(text.len());
    let line = text[..start].rfind('\n')? + 1;
    // The block's first line, indentation aside, and all of it.
    if !text[line..start].bytes().all(|b| b == b' ' || b == b'\t') || !text[start..].contains('\n')
    {
        return None;
    }
    let before = &text[..line - 1];
    let previous = before.rfind('\n').map_or(0, |i| i + 1);
    before[previous..].trim().is_empty().then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::test_rng::Rng;

    /// Renders `text` as it streams in, `step` bytes at a time (on character
    /// boundaries), and checks every step against a whole render.
    fn check_growing(text: &str, width: usize, step: usize) -> usize {
        let mut inc = Incremental::default();
        let mut end = 0;
        let mut settled_max = 0;
        while end < text.len() {
            end = (end + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let part = &text[..end];
            // With and without pi's margin (`outputPad`), by the width.
            let margin = width % 2;
            inc.update(part, width, margin, true);
            let got: Vec<Line<'static>> = inc.lines().cloned().collect();
            let mut whole = super::super::render_as(part, width, true);
            indent_rows(&mut whole, margin);
            assert_eq!(got, whole, "rows differ after {end} bytes of {text:?}");
            assert_eq!(inc.len(), got.len());
            settled_max = settled_max.max(inc.settled.len());
        }
        // The message's end: the rows of the whole message.
        let margin = width % 2;
        inc.update(text, width, margin, false);
        let mut whole = super::super::render(text, width);
        indent_rows(&mut whole, margin);
        assert_eq!(
            inc.lines().cloned().collect::<Vec<_>>(),
            whole,
            "{text:?} ended"
        );
        settled_max
    }

    /// Blocks a model writes, each with what tends to follow it.
    const PIECES: &[&str] = &[
        "A paragraph with **bold**, *italic* and `code` in it.\n\n",
        "A paragraph\nthat goes on for a second line.\n\n",
        "# A heading\n\n",
        "## Heading right before text\nText under it.\n\n",
        "Setext heading\n===\n\n",
        "Setext two\n---\n\n",
        "- one\n- two\n- three\n\n",
        "- loose one\n\n- loose two\n\n",
        "1. first\n2. second\n\n",
        "1. a\n\n2. b\n\n3. c\n\n",
        "1) other delimiter\n\n",
        "* star list\n  continued under it\n\n",
        "- item\n\n  a second paragraph in the item\n\n",
        "```rust\nfn main() {\n\n    x();\n}\n```\n\n",
        "~~~\nunclosed? no, closed\n~~~\n\n",
        "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n```\n\n",
        "    indented code\n\n    more of it\n\n",
        "> a quote\n> on two lines\n\n",
        "> quote\n\nafter the quote\n\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n",
        "---\n\n",
        "***\n",
        "<div>\nhtml block\n</div>\n\n",
        "<!-- a comment\n\nover a blank line -->\n\n",
        "Some [link](https://example.com) and an ![image](x.png).\n\n",
        "- [x] done\n- [ ] to do\n\n",
        "2\n\n",
        "text with trailing spaces  \nhard break\n\n",
        "\t tabbed text\n\n",
        "A line then a list\n- interrupting\n\n",
        "wide 漢字 text and emoji 🎉 in a paragraph\n\n",
    ];

    #[test]
    fn streaming_each_block_kind_renders_as_the_whole_text_does() {
        for (i, piece) in PIECES.iter().enumerate() {
            for next in PIECES {
                let text = format!("Intro.\n\n{piece}{next}Outro paragraph.\n");
                for width in [12, 40] {
                    check_growing(&text, width, 1);
                }
            }
            // The piece at the very start, and with no blank line after it.
            check_growing(piece, 30, 1);
            let tight = format!("{}\n{}", piece.trim_end(), PIECES[(i + 7) % PIECES.len()]);
            check_growing(&tight, 30, 1);
        }
    }

    /// Random texts of markdown's significant pieces, streamed a byte at a
    /// time: whatever they parse as, the rows equal a whole render's.
    #[test]
    fn random_markdown_streams_render_as_the_whole_text_does() {
        const TOKENS: &[&str] = &[
            "- ",
            "* ",
            "1. ",
            "2) ",
            "3.",
            "> ",
            "# ",
            "## ",
            "`",
            "```",
            "~~~",
            "mermaid\nflowchart LR\n",
            "A --> B",
            "    ",
            "\t",
            "\n",
            "\n\n",
            "\n\n",
            "| a ",
            "|---",
            "---",
            "===",
            "***",
            "*",
            "_",
            "**",
            "[x]",
            "[",
            "]",
            "(",
            ")",
            ":",
            "[r]: /u",
            "<div>",
            "</div>",
            "<!--",
            "-->",
            "word",
            "two words",
            " ",
            "漢字",
            "🎉",
            "\\",
            "$",
            "$$",
            "\\frac{a}{b}",
            "^2",
            "5",
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..400 {
            let text = rng.text(TOKENS, 50);
            check_growing(&text, 6 + rng.index(30), 1);
        }
    }

    #[test]
    fn an_ordered_list_resumed_after_a_paragraph_like_line_renders_as_the_whole_text_does() {
        // "3" alone is a paragraph that ends the tight list; "3." is a third
        // item, and the blank line before it makes the list loose, a blank
        // row between every item. A cut taken on the incomplete line would
        // keep the tight rows.
        check_growing("1. first\n2. second\n\n3. third\n", 20, 1);
        check_growing("- first\n- second\n\n-x\n\n- third\n", 20, 1);
    }

    #[test]
    fn a_reference_definition_late_in_the_text_links_earlier_text() {
        let text = "See [the docs][d] here.\n\nMore text.\n\nAnd more.\n\n[d]: https://example.com\n\nEnd.\n";
        check_growing(text, 40, 1);
        let mut inc = Incremental::default();
        inc.update(text, 40, 0, true);
        let rows: Vec<String> = inc.lines().map(|l| l.to_string()).collect();
        assert!(rows[0].contains("(https://example.com)"), "{rows:?}");
    }

    #[test]
    fn streamed_math_renders_as_the_whole_text_does() {
        let texts = [
            "Inline $x^2$ and $\\frac{1}{2}$, prices $5 and $10, $5-$10.\n\nNext.\n",
            "Intro.\n\n$$\n\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}\n$$\n\nOutro.\n",
            "$$\n\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}\n$$\n- $$\\frac{a}{b}$$\n",
            "$$\n\\frac{a}{b}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd.\n",
        ];
        for text in texts {
            for width in [12, 40] {
                check_growing(text, width, 1);
            }
        }
        // An unclosed display block shows its source so far, then its layout.
        let mut inc = Incremental::default();
        inc.update("$$\n\\frac{a}{b}\n", 40, 0, true);
        let rows: Vec<String> = inc.lines().map(|l| l.to_string()).collect();
        assert_eq!(rows, ["$$", "\\frac{a}{b}"]);
        inc.update("$$\n\\frac{a}{b}\n$$\n", 40, 0, true);
        let rows: Vec<String> = inc.lines().map(|l| l.to_string()).collect();
        assert_eq!(rows, [" a", "───", " b"]);
    }

    #[test]
    fn settled_blocks_are_not_rendered_again() {
        let text: String = (0..50)
            .map(|i| format!("Paragraph {i} with a few words in it.\n\n"))
            .collect();
        // Each paragraph is two rows and a blank one; the blank row before a
        // block is its own, and the last paragraph is never settled.
        let settled = check_growing(&text, 30, 7);
        assert_eq!(settled, 49 * 3 - 1);
    }

    #[test]
    fn a_new_width_or_a_replaced_text_renders_anew() {
        let mut inc = Incremental::default();
        let text = "One paragraph here.\n\nTwo paragraph here.\n\nThree.\n";
        inc.update(text, 40, 0, true);
        inc.update(text, 10, 0, true);
        let got: Vec<Line<'static>> = inc.lines().cloned().collect();
        assert_eq!(got, super::super::render(text, 10));
        let other = "Different.\n\nText.\n";
        inc.update(other, 10, 0, true);
        let got: Vec<Line<'static>> = inc.lines().cloned().collect();
        assert_eq!(got, super::super::render(other, 10));
    }
}
