//! Selecting the conversation's text with the mouse, as pi's fullscreen
//! mode does: a drag selects from where the button went down, a double
//! click a word (with iTerm2's word characters: paths and flags stay whole),
//! a triple click a paragraph (the rows between blank ones). The selection
//! is drawn reversed and, with pi's `fullscreenCopyOnSelect` (on by
//! default), copied when the button comes up; else Ctrl+X (or
//! `tui.input.copy`, Ctrl+C) copies it.
//!
//! Points are in conversation rows, not screen rows, so a selection stays
//! on its text while the conversation scrolls.

use std::time::{Duration, Instant};

use super::wrap::char_width;

/// Clicks closer together than this count as a double or triple click.
const MULTI_CLICK: Duration = Duration::from_millis(500);

/// A cell of the conversation: its row (from the conversation's first) and
/// its column (from the text's left edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Point {
    /// The conversation row.
    pub row: usize,
    /// The column.
    pub col: u16,
}

/// How far a press selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Unit {
    #[default]
    Cell,
    Word,
    Paragraph,
}

/// The selection and the clicks that make it.
#[derive(Debug, Default)]
pub struct Selection {
    /// Where the selection starts and ends (inclusive), in selection order.
    span: Option<(Point, Point)>,
    /// The button is down.
    dragging: bool,
    unit: Unit,
    /// The last press: when, where, and how many clicks it made.
    last_press: Option<(Instant, Point, u8)>,
    /// pi's `fullscreenCopyOnSelect`.
    pub copy_on_select: bool,
}

impl Selection {
    /// No selection; `copy_on_select`: pi's `fullscreenCopyOnSelect`.
    pub fn new(copy_on_select: bool) -> Selection {
        Selection {
            copy_on_select,
            ..Default::default()
        }
    }

    /// The selected cells from first to last (inclusive), when something is
    /// selected.
    pub fn range(&self) -> Option<(Point, Point)> {
        let (a, b) = self.span?;
        Some(if a <= b { (a, b) } else { (b, a) })
    }

    /// True while the button is down.
    pub fn dragging(&self) -> bool {
        self.dragging
    }

    /// Drops the selection.
    pub fn clear(&mut self) {
        self.span = None;
        self.dragging = false;
    }

    /// The button went down at `at`; `row_text` gives a conversation row's
    /// text (for words and paragraphs).
    pub fn press(&mut self, at: Point, now: Instant, row_text: &dyn Fn(usize) -> Option<String>) {
        let clicks = match self.last_press {
            Some((when, point, n)) if point == at && now.duration_since(when) <= MULTI_CLICK => {
                n % 3 + 1
            }
            _ => 1,
        };
        self.last_press = Some((now, at, clicks));
        self.dragging = true;
        self.unit = match clicks {
            2 => Unit::Word,
            3 => Unit::Paragraph,
            _ => Unit::Cell,
        };
        self.span = match self.unit {
            Unit::Cell => Some((at, at)),
            Unit::Word => row_text(at.row)
                .and_then(|text| word_at(&text, at.col))
                .map(|(from, to)| (Point { col: from, ..at }, Point { col: to, ..at })),
            Unit::Paragraph => Some(paragraph_at(at.row, row_text)),
        };
    }

    /// The pointer moved to `at` with the button down.
    pub fn drag(&mut self, at: Point) {
        if !self.dragging {
            return;
        }
        if let Some((anchor, head)) = &mut self.span {
            match self.unit {
                // A word or paragraph stays whole; the selection grows from it.
                Unit::Word | Unit::Paragraph if at < *anchor => {
                    if anchor < head {
                        std::mem::swap(anchor, head);
                    }
                    *head = at;
                }
                Unit::Word | Unit::Paragraph => {
                    if head < anchor {
                        std::mem::swap(anchor, head);
                    }
                    *head = (*head).max(at);
                }
                Unit::Cell => *head = at,
            }
        }
    }

    /// Where the last press was, when it was a single click (not the
    /// second or third of a multiple click).
    pub fn single_click_at(&self) -> Option<Point> {
        match self.last_press {
            Some((_, at, 1)) => Some(at),
            _ => None,
        }
    }

    /// The button came up: true when something is selected (a click alone
    /// selects nothing).
    pub fn release(&mut self) -> bool {
        self.dragging = false;
        if self.unit == Unit::Cell && self.span.is_some_and(|(a, b)| a == b) {
            self.span = None;
        }
        self.span.is_some()
    }

    /// The columns of conversation row `row` that are selected, as
    /// `from..to`; `None` when none is.
    pub fn columns(&self, row: usize) -> Option<std::ops::Range<u16>> {
        let (first, last) = self.range()?;
        if row < first.row || row > last.row {
            return None;
        }
        let from = if row == first.row { first.col } else { 0 };
        let to = if row == last.row {
            last.col.saturating_add(1)
        } else {
            u16::MAX
        };
        Some(from..to)
    }

    /// The selected text out of the rows' texts (`row_text`): each row's
    /// selected columns, trailing blanks cut, rows joined by newlines. The
    /// first `margin` columns of a row that leaves them blank (pi's
    /// `outputPad`) are not part of the text.
    pub fn text(&self, row_text: &dyn Fn(usize) -> Option<String>, margin: u16) -> Option<String> {
        let (first, last) = self.range()?;
        let rows: Vec<String> = (first.row..=last.row)
            .map(|row| {
                let text = row_text(row).unwrap_or_default();
                let mut cols = self.columns(row).unwrap_or(0..0);
                let blank = text.chars().take(usize::from(margin)).all(|c| c == ' ');
                if blank {
                    cols.start = cols.start.max(margin);
                }
                columns_of(&text, cols).trim_end().to_string()
            })
            .collect();
        let text = rows.join("\n");
        (!text.trim().is_empty()).then_some(text)
    }
}

/// The characters of `text` whose cells start in `cols`.
fn columns_of(text: &str, cols: std::ops::Range<u16>) -> String {
    let mut at = 0u16;
    let mut out = String::new();
    for c in text.chars() {
        if cols.contains(&at) {
            out.push(c);
        }
        at = at.saturating_add(char_width(c) as u16);
    }
    out
}

/// Word characters as iTerm2's defaults have them, so a path, a flag or a
/// URL's host is one word.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || "/-+\\~_.".contains(c)
}

/// The columns (first and last, inclusive) of the word or the run of blanks
/// at column `col` of `text`; `None` past its end.
fn word_at(text: &str, col: u16) -> Option<(u16, u16)> {
    let mut cells: Vec<(u16, char)> = Vec::new();
    let mut at = 0u16;
    for c in text.chars() {
        cells.push((at, c));
        at = at.saturating_add(char_width(c) as u16);
    }
    let i = cells.iter().rposition(|(start, _)| *start <= col)?;
    let kind = |c: char| (word_char(c), c.is_whitespace());
    let here = kind(cells[i].1);
    let mut from = i;
    while from > 0 && kind(cells[from - 1].1) == here {
        from -= 1;
    }
    let mut to = i;
    while to + 1 < cells.len() && kind(cells[to + 1].1) == here {
        to += 1;
    }
    let last = cells[to].0 + (char_width(cells[to].1).max(1) as u16) - 1;
    Some((cells[from].0, last))
}

/// The rows around `row` up to the blank rows (or the conversation's ends)
/// before and after them, from their first column to the last.
fn paragraph_at(row: usize, row_text: &dyn Fn(usize) -> Option<String>) -> (Point, Point) {
    let filled = |r: usize| row_text(r).is_some_and(|t| !t.trim().is_empty());
    let mut first = row;
    while first > 0 && filled(first - 1) && filled(row) {
        first -= 1;
    }
    let mut last = row;
    while filled(last + 1) && filled(row) {
        last += 1;
    }
    (
        Point { row: first, col: 0 },
        Point {
            row: last,
            col: u16::MAX - 1,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[&str] = &[
        "first paragraph line",
        "and its second line",
        "",
        "see crates/makai-cli/src/main.rs --flag now",
        "wide 漢字 here",
    ];

    fn row_text(row: usize) -> Option<String> {
        ROWS.get(row).map(|s| s.to_string())
    }

    fn at(row: usize, col: u16) -> Point {
        Point { row, col }
    }

    #[test]
    fn a_drag_selects_across_rows_and_a_click_alone_selects_nothing() {
        let mut s = Selection::new(true);
        let t0 = Instant::now();
        s.press(at(0, 6), t0, &row_text);
        assert!(!s.release(), "a click");
        assert_eq!(s.range(), None);
        s.press(at(1, 3), t0 + Duration::from_secs(1), &row_text);
        s.drag(at(0, 6));
        assert!(s.release());
        assert_eq!(s.range(), Some((at(0, 6), at(1, 3))));
        assert_eq!(s.text(&row_text, 0).as_deref(), Some("paragraph line\nand"));
        assert_eq!(s.columns(0), Some(6..u16::MAX));
        assert_eq!(s.columns(1), Some(0..4));
        assert_eq!(s.columns(2), None);
        s.clear();
        assert_eq!(s.text(&row_text, 0), None);
    }

    #[test]
    fn double_clicks_select_words_and_triple_clicks_paragraphs() {
        let mut s = Selection::new(true);
        let t0 = Instant::now();
        let click = |s: &mut Selection, p: Point, ms: u64| {
            s.press(p, t0 + Duration::from_millis(ms), &row_text);
            s.release()
        };
        click(&mut s, at(3, 10), 0);
        assert!(click(&mut s, at(3, 10), 100), "a double click");
        assert_eq!(
            s.text(&row_text, 0).as_deref(),
            Some("crates/makai-cli/src/main.rs")
        );
        assert!(click(&mut s, at(3, 10), 200), "a triple click");
        // The paragraph: up to the blank row before, the end after.
        assert_eq!(
            s.text(&row_text, 0),
            Some(format!("{}\n{}", ROWS[3], ROWS[4]))
        );
        assert!(!click(&mut s, at(0, 2), 2000));
        click(&mut s, at(0, 2), 2100);
        click(&mut s, at(0, 2), 2200);
        assert_eq!(
            s.text(&row_text, 0).as_deref(),
            Some("first paragraph line\nand its second line")
        );
        // A flag, and wide characters (two cells each).
        click(&mut s, at(3, 35), 5000);
        click(&mut s, at(3, 35), 5100);
        assert_eq!(s.text(&row_text, 0).as_deref(), Some("--flag"));
        click(&mut s, at(4, 6), 9000);
        click(&mut s, at(4, 6), 9100);
        assert_eq!(s.text(&row_text, 0).as_deref(), Some("漢字"));
        // Dragging from a word keeps it whole and grows by cells.
        s.press(at(3, 40), t0 + Duration::from_secs(20), &row_text);
        s.release();
        s.press(at(3, 40), t0 + Duration::from_millis(20_100), &row_text);
        s.drag(at(3, 33));
        s.release();
        assert_eq!(s.text(&row_text, 0).as_deref(), Some("--flag now"));
    }

    /// pi's `outputPad`: the margin column of the rows that leave it blank
    /// is not copied; a row drawn into it (the greeting) is copied whole.
    #[test]
    fn the_output_margin_is_left_out_of_the_copied_text() {
        let rows = ["makai v1", "", " first line", "   indented code", " last"];
        let row_text = |row: usize| rows.get(row).map(|s| s.to_string());
        let mut s = Selection::new(true);
        let t0 = Instant::now();
        s.press(at(0, 0), t0, &row_text);
        s.drag(at(4, 3));
        assert!(s.release());
        assert_eq!(
            s.text(&row_text, 1).as_deref(),
            Some("makai v1\n\nfirst line\n  indented code\nlas")
        );
        assert_eq!(
            s.text(&row_text, 0).as_deref(),
            Some("makai v1\n\n first line\n   indented code\n las")
        );
    }
}
