//! Writing prepared rows into the frame's buffer (the conversation, the
//! status line, the queue, the editor and the footer).
//!
//! The conversation is drawn whole at every frame while an answer streams
//! (new rows scroll it). Its rows are wrapped already, so drawing them is
//! copying cells, and `Paragraph` would split every span into graphemes
//! first; [`draw`] writes printable ASCII a byte a cell and leaves graphemes
//! to the rest. The cells are those `Paragraph::new(rows)` writes: the tests
//! compare the two buffers.

use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use unicode_segmentation::UnicodeSegmentation;

/// Writes `rows` into `area`, one a row from the top, each cut at the area's
/// width: the cells `Paragraph::new(rows)` (no wrapping, no scrolling)
/// writes into a cleared area.
pub(crate) fn draw<'a>(buf: &mut Buffer, area: Rect, rows: impl IntoIterator<Item = &'a Line<'a>>) {
    let area = area.intersection(buf.area);
    for (y, line) in (area.top()..area.bottom()).zip(rows) {
        if matches!(line.alignment, Some(Alignment::Center | Alignment::Right)) {
            let row = Rect {
                y,
                height: 1,
                ..area
            };
            Paragraph::new(line.clone()).render(row, buf);
        } else {
            draw_line(buf, area.left(), y, area.width, line);
        }
    }
}

/// One left-aligned row from (`left`, `y`), at most `width` cells.
fn draw_line(buf: &mut Buffer, left: u16, y: u16, width: u16, line: &Line<'_>) {
    let mut x = 0u16;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        let text = span.content.as_ref();
        if text.is_ascii() {
            for b in text.bytes() {
                // Each ASCII control character is a grapheme of its own
                // (CR LF one of two), and graphemes with one are dropped.
                if b.is_ascii_control() {
                    continue;
                }
                if x >= width {
                    return;
                }
                buf[(left + x, y)].set_char(char::from(b)).set_style(style);
                x += 1;
            }
            continue;
        }
        for g in text.graphemes(true) {
            if g.contains(char::is_control) {
                continue;
            }
            let w = g.cell_width();
            // Wider than the whole row: dropped; past its end: the row ends.
            if w > width {
                continue;
            }
            if x + w > width {
                return;
            }
            if w == 0 {
                continue;
            }
            buf[(left + x, y)].set_symbol(g).set_style(style);
            x += w;
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier, Style};
    use ratatui::text::Span;

    use super::*;

    /// The buffer `Paragraph` and [`draw`] each leave for `rows` in a
    /// `width` x `height` area set inside a larger buffer.
    fn both(rows: &[Line<'static>], width: u16, height: u16) -> (Buffer, Buffer) {
        let whole = Rect::new(0, 0, width + 4, height + 2);
        let area = Rect::new(2, 1, width, height);
        let mut expected = Buffer::empty(whole);
        Paragraph::new(rows.to_vec()).render(area, &mut expected);
        let mut got = Buffer::empty(whole);
        draw(&mut got, area, rows.iter());
        (expected, got)
    }

    fn styled(text: &str, i: usize) -> Span<'static> {
        let style = match i % 4 {
            0 => Style::default(),
            1 => Style::default().fg(Color::Cyan),
            2 => Style::default().add_modifier(Modifier::BOLD),
            _ => Style::default().bg(Color::Blue).fg(Color::Red),
        };
        Span::styled(text.to_string(), style)
    }

    #[test]
    fn rows_are_the_cells_paragraph_writes() {
        let texts = [
            "plain ascii words",
            "",
            "tab\there and a bell\u{7} and crlf\r\n end",
            "漢字 wide text 漢字漢字漢字漢字",
            "emoji 🎉👍🏽 and a family 👨‍👩‍👧",
            "e\u{301} combining and zero\u{200b}width",
            "\u{301} a mark first",
            "halfwidth ｶﾞ sound marks",
            "a long row that goes well past the edge of the area to be cut",
            "│ box ─ drawing • bullets … ellipsis",
        ];
        let mut rows: Vec<Line<'static>> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            // One span, the text split into styled spans, and a line style.
            rows.push(Line::from(styled(text, i)));
            let spans: Vec<Span<'static>> = text
                .split_inclusive(' ')
                .enumerate()
                .map(|(j, part)| styled(part, i + j))
                .collect();
            rows.push(Line::from(spans.clone()));
            rows.push(Line::from(spans).style(Style::default().add_modifier(Modifier::ITALIC)));
        }
        rows.push(Line::from("centered").alignment(Alignment::Center));
        rows.push(Line::from("right").alignment(Alignment::Right));
        rows.push(Line::from("left").alignment(Alignment::Left));
        for width in [1, 2, 5, 11, 40] {
            for height in [1, 7, rows.len() as u16 + 3] {
                let (expected, got) = both(&rows, width, height);
                assert_eq!(got, expected, "width {width}, height {height}");
            }
        }
    }
}
