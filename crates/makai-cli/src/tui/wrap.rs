//! Word wrapping of styled lines to a column width, keeping span styles.
//!
//! The transcript is wrapped here (not by the paragraph widget) so that the
//! number of screen rows is known exactly, which scrolling needs.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display width of a string in terminal columns.
pub fn str_width(s: &str) -> usize {
    // Printable ASCII, most of what a model writes: one column a byte.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    Span::raw(s).width()
}

/// Display width of one character.
pub fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    str_width(c.encode_utf8(&mut buf))
}

/// Cuts `s` to at most `max` columns, ending with `…` when shortened.
pub fn truncate(s: &str, max: usize) -> String {
    if str_width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = char_width(c);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// One run of text with one style: a word or a run of spaces (a tab counts
/// as a space). Borrowed from the spans, so wrapping a message allocates per
/// row, not per word.
struct Piece<'a> {
    text: Cow<'a, str>,
    style: Style,
    space: bool,
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Splits spans into words and space runs, each with its style; adjacent runs
/// of the same kind and style (across spans) are one piece.
fn pieces<'a>(spans: &'a [Span<'_>]) -> Vec<Piece<'a>> {
    let mut out: Vec<Piece<'a>> = Vec::new();
    for span in spans {
        let s: &'a str = &span.content;
        let bytes = s.as_bytes();
        let mut start = 0;
        // Spaces and tabs are ASCII: a byte split never cuts a character.
        while start < bytes.len() {
            let space = is_space(bytes[start]);
            let end = bytes[start..]
                .iter()
                .position(|&b| is_space(b) != space)
                .map_or(bytes.len(), |n| start + n);
            let run = &s[start..end];
            let text = if space && run.contains('\t') {
                Cow::Owned(run.replace('\t', " "))
            } else {
                Cow::Borrowed(run)
            };
            match out.last_mut() {
                Some(p) if p.space == space && p.style == span.style => {
                    p.text.to_mut().push_str(&text)
                }
                _ => out.push(Piece {
                    text,
                    style: span.style,
                    space,
                }),
            }
            start = end;
        }
    }
    out
}

/// Builder of wrapped rows.
struct Rows {
    width: usize,
    first: Vec<Span<'static>>,
    rest: Vec<Span<'static>>,
    rows: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    cur_w: usize,
    /// True while `cur` holds only the prefix.
    empty: bool,
}

impl Rows {
    fn prefix_width(spans: &[Span<'static>]) -> usize {
        spans.iter().map(Span::width).sum()
    }

    fn start_row(&mut self) {
        let prefix = if self.rows.is_empty() {
            &self.first
        } else {
            &self.rest
        };
        self.cur = prefix.clone();
        self.cur_w = Self::prefix_width(prefix);
        self.empty = true;
    }

    fn end_row(&mut self) {
        if !self.empty {
            while let Some(last) = self.cur.last_mut() {
                let trimmed = last.content.trim_end_matches(' ').len();
                if trimmed == 0 {
                    self.cur.pop();
                } else {
                    last.content.to_mut().truncate(trimmed);
                    break;
                }
            }
        }
        let spans = std::mem::take(&mut self.cur);
        self.rows.push(Line::from(spans));
        self.start_row();
    }

    /// Adds `text`, `width` columns wide, to the row.
    fn push(&mut self, text: &str, width: usize, style: Style) {
        match self.cur.last_mut() {
            Some(last) if last.style == style && !self.empty => {
                last.content.to_mut().push_str(text)
            }
            _ => self.cur.push(Span::styled(text.to_string(), style)),
        }
        self.cur_w += width;
        self.empty = false;
    }

    /// Adds a word, breaking it by characters when it is wider than a row.
    fn word(&mut self, text: &str, style: Style) {
        let w = str_width(text);
        if self.cur_w + w <= self.width {
            self.push(text, w, style);
            return;
        }
        if !self.empty {
            self.end_row();
            if self.cur_w + w <= self.width {
                self.push(text, w, style);
                return;
            }
        }
        let mut chunk = String::new();
        let mut chunk_w = 0;
        for c in text.chars() {
            let cw = char_width(c);
            if self.cur_w + chunk_w + cw > self.width && !(chunk.is_empty() && self.empty) {
                self.push(&chunk, chunk_w, style);
                chunk.clear();
                chunk_w = 0;
                self.end_row();
            }
            chunk.push(c);
            chunk_w += cw;
        }
        if !chunk.is_empty() {
            self.push(&chunk, chunk_w, style);
        }
    }

    fn space(&mut self, text: &str, style: Style) {
        if self.empty && !self.rows.is_empty() {
            // No leading spaces on continuation rows.
            return;
        }
        let w = str_width(text);
        if self.cur_w + w > self.width {
            self.end_row();
            return;
        }
        self.push(text, w, style);
    }
}

/// Wraps `spans` (one logical line, no newlines) to `width` columns. The first
/// row starts with `first`, the others with `rest` (e.g. a list bullet and its
/// indentation). Always returns at least one row.
pub fn wrap_spans(
    spans: &[Span<'_>],
    width: usize,
    first: Vec<Span<'static>>,
    rest: Vec<Span<'static>>,
) -> Vec<Line<'static>> {
    let width = width
        .max(Rows::prefix_width(&first) + 1)
        .max(Rows::prefix_width(&rest) + 1);
    let mut rows = Rows {
        width,
        first,
        rest,
        rows: Vec::new(),
        cur: Vec::new(),
        cur_w: 0,
        empty: true,
    };
    rows.start_row();
    for p in pieces(spans) {
        if p.space {
            rows.space(&p.text, p.style);
        } else {
            rows.word(&p.text, p.style);
        }
    }
    let last = std::mem::take(&mut rows.cur);
    rows.rows.push(Line::from(last));
    rows.rows
}

/// Wraps plain text (which may hold newlines) in one style, every row
/// starting with `indent`.
pub fn wrap_text(text: &str, width: usize, style: Style, indent: &str) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let prefix = || vec![Span::styled(indent.to_string(), style)];
        out.extend(wrap_spans(
            &[Span::styled(line, style)],
            width,
            prefix(),
            prefix(),
        ));
    }
    out
}

/// Puts `margin` blank columns before each of `rows` (pi's `outputPad`):
/// rows laid out `margin` columns narrower keep as many free on the right.
pub fn indent_rows(rows: &mut [Line<'static>], margin: usize) {
    if margin == 0 {
        return;
    }
    for row in rows {
        // One span more, not twice the room: a long conversation keeps
        // every row.
        row.spans.reserve_exact(1);
        row.spans.insert(0, Span::raw(blanks(margin)));
    }
}

/// `n` spaces, borrowed when few (a margin: no allocation per row).
pub fn blanks(n: usize) -> Cow<'static, str> {
    const SPACES: &str = "                ";
    match SPACES.get(..n) {
        Some(few) => Cow::Borrowed(few),
        None => Cow::Owned(" ".repeat(n)),
    }
}

/// Hard-wraps text by characters (for code, where spaces matter).
pub fn hard_wrap(text: &str, width: usize, style: Style, indent: &str) -> Vec<Line<'static>> {
    text.split('\n')
        .flat_map(|line| hard_wrap_pieces(&[(line, style)], width, indent, style))
        .collect()
}

/// Styled pieces cut to at most `max` columns, ending with `…` (in the
/// last piece's style) when shortened; tabs become four spaces.
pub fn truncate_pieces(pieces: &[(&str, Style)], max: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let total: usize = pieces
        .iter()
        .map(|(t, _)| str_width(&t.replace('\t', "    ")))
        .sum();
    let room = if total > max {
        max.saturating_sub(1)
    } else {
        max
    };
    let mut w = 0;
    for (text, style) in pieces {
        let text = text.replace('\t', "    ");
        let mut cur = String::new();
        for c in text.chars() {
            let cw = char_width(c);
            if w + cw > room {
                if !cur.is_empty() {
                    out.push(Span::styled(cur, *style));
                }
                if max > 0 {
                    out.push(Span::styled("…", *style));
                }
                return out;
            }
            cur.push(c);
            w += cw;
        }
        if !cur.is_empty() {
            out.push(Span::styled(cur, *style));
        }
    }
    out
}

/// One source line of styled pieces (a highlighted line of code) cut into
/// rows of at most `width` columns, each row starting with `indent` in
/// `indent_style`; tabs become four spaces. An empty line is one row.
pub fn hard_wrap_pieces(
    pieces: &[(&str, Style)],
    width: usize,
    indent: &str,
    indent_style: Style,
) -> Vec<Line<'static>> {
    let indent_w = str_width(indent);
    let width = width.max(indent_w + 1);
    let start = || vec![Span::styled(indent.to_string(), indent_style)];
    let mut out = Vec::new();
    let mut row = start();
    let mut w = indent_w;
    for (text, style) in pieces {
        let text = text
            .strip_suffix('\r')
            .unwrap_or(text)
            .replace('\t', "    ");
        let mut cur = String::new();
        for c in text.chars() {
            let cw = char_width(c);
            if w + cw > width {
                if !cur.is_empty() {
                    row.push(Span::styled(std::mem::take(&mut cur), *style));
                }
                out.push(Line::from(std::mem::replace(&mut row, start())));
                w = indent_w;
            }
            cur.push(c);
            w += cw;
        }
        if !cur.is_empty() {
            row.push(Span::styled(cur, *style));
        }
    }
    if out.is_empty() || row.len() > 1 {
        out.push(Line::from(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn wraps_words_and_keeps_styles() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = [
            Span::raw("hello "),
            Span::styled("bold world", bold),
            Span::raw(" and more"),
        ];
        let rows = wrap_spans(&spans, 11, vec![], vec![Span::raw("  ")]);
        assert_eq!(texts(&rows), ["hello bold", "  world and", "  more"]);
        assert!(
            rows[0]
                .spans
                .iter()
                .any(|s| s.content == "bold" && s.style == bold)
        );
        assert!(rows.iter().all(|r| r.width() <= 11));
    }

    #[test]
    fn tabs_are_spaces_and_same_style_spans_join_into_words() {
        let rows = wrap_spans(&[Span::raw("a\t\tb")], 10, vec![], vec![]);
        assert_eq!(texts(&rows), ["a  b"]);
        // "wo" + "rd" is one word: it moves to the next row whole.
        let spans = [Span::raw("x wo"), Span::raw("rd é\tz")];
        let rows = wrap_spans(&spans, 5, vec![], vec![]);
        assert_eq!(texts(&rows), ["x", "word", "é z"]);
    }

    #[test]
    fn breaks_long_words_and_wide_characters() {
        let rows = wrap_text("abcdefghij", 4, Style::default(), "");
        assert_eq!(texts(&rows), ["abcd", "efgh", "ij"]);
        let rows = wrap_text("日本語のテキスト", 6, Style::default(), "");
        assert!(rows.iter().all(|r| r.width() <= 6), "{:?}", texts(&rows));
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn empty_lines_survive_and_code_is_hard_wrapped() {
        assert_eq!(
            texts(&wrap_text("a\n\nb", 10, Style::default(), "")),
            ["a", "", "b"]
        );
        let rows = hard_wrap("  let x = 1;", 8, Style::default(), "| ");
        assert_eq!(texts(&rows), ["|   let ", "| x = 1;"]);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn highlighted_pieces_wrap_with_their_styles() {
        let red = Style::default().fg(ratatui::style::Color::Red);
        let rows = hard_wrap_pieces(
            &[("let", red), (" x\t= 1;", Style::default())],
            8,
            "| ",
            Style::default(),
        );
        assert_eq!(texts(&rows), ["| let x ", "|    = 1", "| ;"]);
        assert_eq!(rows[0].spans[1], Span::styled("let", red));
        assert_eq!(
            texts(&hard_wrap_pieces(&[], 8, "| ", Style::default())),
            ["| "]
        );
        let cut = truncate_pieces(&[("let", red), (" x = 1;", Style::default())], 6);
        assert_eq!(Line::from(cut.clone()).to_string(), "let x…");
        assert_eq!(cut[0], Span::styled("let", red));
        let whole = truncate_pieces(&[("let", red), (" x", Style::default())], 6);
        assert_eq!(Line::from(whole).to_string(), "let x");
    }
}
