//! Regular mode (pi's `tuiMode: "regular"`, `--tui-mode regular`): the UI
//! writes on the terminal's normal screen, so the conversation goes into the
//! terminal's own scrollback (searched, selected and copied with the
//! terminal's keys, links clicked the terminal's way) and stays there when
//! makai ends.
//!
//! A frame is a [`Document`]: the greeting, the conversation's rows and, last,
//! the live rows (an open list, the status line, the queue, the editor and
//! the footer). The terminal shows the document's last rows; the rows above
//! have gone into its scrollback, where nothing can change them.
//! [`ScrollbackScreen`] writes a frame as the rows from the first one that
//! differs from the last frame's down to the end, reaching it with relative
//! cursor moves (the terminal's own scrolling pushes rows into scrollback as
//! the document grows), and erases what is left below when the document
//! shrank: the live rows then end above the screen's bottom until the
//! document grows again, as in pi.
//!
//! A change above the screen cannot be written in place. When it is the item
//! that straddles the screen's top that changed (an answer's table widened
//! by a new row, say), the rows on screen are written again and the
//! scrollback keeps the rows above as they were; any other change there (an
//! earlier tool call's result, a block expanded, a session switched), a new
//! terminal size or a new view (thinking shown, tools expanded, another
//! theme) clears the screen and the scrollback and writes the whole document
//! again, as pi does. With `terminal.clearOnShrink` (or
//! `PI_CLEAR_ON_SHRINK=1`) a document that shrinks under a full screen is
//! written again too, so no blank rows stay under the footer.

use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::sync::Arc;

use ratatui::buffer::{Buffer, Cell, CellWidth};
use ratatui::layout::{Rect, Size};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::backend::Pen;
use super::images::InlineImage;

/// What a run of a document's rows belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The greeting at the top.
    Greeting,
    /// The blank row between two items.
    Gap,
    /// The conversation's item of this index.
    Item(usize),
    /// The rows under the conversation: lists, status, queue, editor, footer.
    Live,
}

/// A run of a document's rows.
pub struct Run<'a> {
    /// What the rows belong to.
    pub part: Part,
    /// A stamp of what the rows were drawn from: a run with the same part,
    /// stamp and number of rows as the last frame's run in its place holds
    /// the same rows. `None`: compared row by row.
    pub stamp: Option<u64>,
    /// The rows, each at most the terminal's width.
    pub rows: &'a [Line<'a>],
}

/// One frame of regular mode: its rows, top to bottom, and where the
/// terminal's cursor goes.
pub struct Document<'a> {
    /// The rows in runs.
    pub runs: Vec<Run<'a>>,
    /// The cursor's place (document row, column), if it is shown.
    pub cursor: Option<(usize, u16)>,
    /// The cursor is drawn in the rows (pi's default): the terminal's own
    /// stays hidden, moved there for input methods.
    pub cursor_drawn: bool,
    /// What the rows were drawn for apart from the width (whether thinking
    /// shows, the theme…): a new view writes the whole document again.
    pub view: u64,
    /// Images drawn over their blank rows (iTerm2's protocol): the row
    /// each starts at.
    pub images: Vec<(usize, Arc<InlineImage>)>,
    /// The terminal is reached through tmux (images are wrapped for it).
    pub tmux: bool,
}

impl Document<'_> {
    /// The rows from `start` on.
    fn rows_from(&self, start: usize) -> impl Iterator<Item = &Line<'_>> {
        let mut skip = start;
        self.runs.iter().flat_map(move |run| {
            let from = skip.min(run.rows.len());
            skip -= from;
            run.rows[from..].iter()
        })
    }
}

/// The rows of the last frame in one run, known by their hashes.
struct Shown {
    part: Part,
    stamp: Option<u64>,
    hashes: Vec<u64>,
}

/// The terminal in regular mode. See the module documentation.
pub struct ScrollbackScreen<W: Write> {
    out: W,
    /// The last frame's runs.
    shown: Vec<Shown>,
    /// The last frame's rows.
    len: usize,
    /// The document row on the terminal's first row (negative: rows that
    /// were on the terminal before makai started are still shown above).
    top: i64,
    /// The document row the terminal's cursor is on.
    cursor: i64,
    /// Where the cursor was put for the editor at the last frame.
    placed: Option<(usize, u16)>,
    size: Size,
    view: u64,
    /// No frame was written yet: the first writes from the cursor down,
    /// below what the terminal shows already.
    fresh: bool,
    /// The next frame clears the terminal and writes everything.
    repaint: bool,
    /// A frame cleared the terminal and wrote everything since
    /// [`ScrollbackScreen::take_rewritten`] was last asked.
    rewritten: bool,
    clear_on_shrink: bool,
    hasher: RandomState,
    /// One row, to lay a line out into cells.
    scratch: Buffer,
}

impl<W: Write> ScrollbackScreen<W> {
    /// A screen writing to `out` (buffer it: a frame is flushed at its end)
    /// from the terminal's row `cursor_row`, where its cursor is now. See the
    /// module documentation for `clear_on_shrink`.
    pub fn new(out: W, cursor_row: u16, clear_on_shrink: bool) -> Self {
        ScrollbackScreen {
            out,
            shown: Vec::new(),
            len: 0,
            top: -i64::from(cursor_row),
            cursor: 0,
            placed: None,
            size: Size::default(),
            view: 0,
            fresh: true,
            repaint: false,
            rewritten: false,
            clear_on_shrink,
            hasher: RandomState::new(),
            scratch: Buffer::empty(Rect::default()),
        }
    }

    /// The next frame clears the terminal and its scrollback and writes the
    /// whole document (after the terminal was lent to the shell or an
    /// editor, which wrote on it).
    pub fn repaint(&mut self) {
        self.repaint = true;
    }

    /// Whether a frame cleared the terminal and its scrollback and wrote
    /// everything since the last call (images sent ahead must be sent
    /// again).
    pub fn take_rewritten(&mut self) -> bool {
        std::mem::take(&mut self.rewritten)
    }

    /// Writes `bytes` as they are (images sent ahead of the rows that show
    /// them), sent with the next frame.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }

    /// Sends what was written.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Draws `doc` on a terminal of `size`.
    pub fn draw(&mut self, size: Size, doc: &Document<'_>) -> io::Result<()> {
        let first = std::mem::take(&mut self.fresh);
        if self.repaint || (!first && (size != self.size || doc.view != self.view)) {
            return self.write_everything(size, doc);
        }
        self.size = size;
        self.view = doc.view;
        let old_len = self.len;
        let top_part = self.part_at(self.top);
        let (changed, len) = self.compare(doc);
        let Some((first_changed, part)) = changed else {
            return self.place_cursor_only(doc);
        };
        let mut start = first_changed as i64;
        if start < self.top {
            let straddles = matches!(part, Part::Item(_)) && top_part == Some(part);
            if !straddles {
                return self.write_everything(size, doc);
            }
            start = self.top;
        }
        let height = i64::from(size.height.max(1));
        if self.clear_on_shrink && len < old_len && self.top > 0 && (len as i64) < self.top + height
        {
            return self.write_everything(size, doc);
        }
        self.out.write_all(b"\x1b[?2026h\x1b[?25l")?;
        let last = len as i64 - 1;
        let start = start.min(last).max(0);
        self.move_to(start)?;
        self.out.write_all(b"\r")?;
        let mut rows = doc.rows_from(start as usize);
        for row in start..len as i64 {
            if row > start {
                self.newline()?;
            }
            self.out.write_all(b"\x1b[2K")?;
            if let Some(line) = rows.next() {
                write_line(&mut self.out, &mut self.scratch, size.width, line)?;
            }
        }
        if len < old_len {
            // The rows below the document's end still show the last frame's:
            // erased from the row after the last (on screen, as the last
            // frame's rows were), without scrolling.
            self.out.write_all(b"\r\x1b[B\x1b[J\x1b[A")?;
        }
        self.draw_images(doc, start)?;
        self.finish(doc)
    }

    /// Draws the images whose rows were written from row `written_from`
    /// on (their blank rows erased whatever showed there) and are all on
    /// screen; an image whose rows went into the scrollback as they were
    /// written stays blank there.
    fn draw_images(&mut self, doc: &Document<'_>, written_from: i64) -> io::Result<()> {
        for (row, image) in &doc.images {
            let first = *row as i64;
            let end = first + i64::from(image.rows);
            if end <= written_from || first < self.top || end > self.len as i64 {
                continue;
            }
            self.move_to(first)?;
            // The image moves the cursor: it is put back where the rows
            // left it.
            self.out.write_all(b"\r\x1b7")?;
            self.out.write_all(&image.drawing(doc.tmux))?;
            self.out.write_all(b"\x1b8")?;
        }
        Ok(())
    }

    /// Hands the terminal over (to the shell, an editor, or for good): the
    /// live rows are erased and the cursor, shown, goes to the row after the
    /// conversation, where what comes next is written.
    pub fn hand_off(&mut self) -> io::Result<()> {
        let mut live_from = 0usize;
        for run in &self.shown {
            if run.part == Part::Live {
                break;
            }
            live_from += run.hashes.len();
        }
        self.shown.retain(|run| run.part != Part::Live);
        self.move_to(live_from as i64)?;
        self.len = live_from;
        self.placed = None;
        self.out.write_all(b"\r\x1b[J\x1b[?25h")?;
        self.out.flush()
    }

    /// Compares `doc` with the last frame, keeping its rows' hashes for the
    /// next: the first row that differs and what it belongs to, and the
    /// number of rows.
    fn compare(&mut self, doc: &Document<'_>) -> (Option<(usize, Part)>, usize) {
        let old_len = self.len;
        let mut before = std::mem::take(&mut self.shown).into_iter();
        let mut changed: Option<(usize, Part)> = None;
        let mut row = 0usize;
        for run in &doc.runs {
            let last = before.next();
            let same = matches!(&last, Some(b) if b.part == run.part
                && run.stamp.is_some()
                && b.stamp == run.stamp
                && b.hashes.len() == run.rows.len());
            let hashes = match last {
                Some(b) if same => b.hashes,
                last => {
                    let hashes: Vec<u64> =
                        run.rows.iter().map(|l| self.hasher.hash_one(l)).collect();
                    if changed.is_none() {
                        let at = match &last {
                            Some(b) if b.part == run.part => {
                                b.hashes.iter().zip(&hashes).position(|(x, y)| x != y).or((b
                                    .hashes
                                    .len()
                                    != hashes.len())
                                .then(|| b.hashes.len().min(hashes.len())))
                            }
                            _ => Some(0),
                        };
                        changed = at.map(|at| (row + at, run.part));
                    }
                    hashes
                }
            };
            row += hashes.len();
            self.shown.push(Shown {
                part: run.part,
                stamp: run.stamp,
                hashes,
            });
        }
        if changed.is_none() && row != old_len {
            changed = Some((row.min(old_len), Part::Live));
        }
        self.len = row;
        (changed, row)
    }

    /// What the last frame's row `row` belonged to.
    fn part_at(&self, row: i64) -> Option<Part> {
        let row = usize::try_from(row).ok()?;
        let mut at = 0;
        for run in &self.shown {
            at += run.hashes.len();
            if row < at {
                return Some(run.part);
            }
        }
        None
    }

    /// Clears the terminal and its scrollback and writes every row.
    fn write_everything(&mut self, size: Size, doc: &Document<'_>) -> io::Result<()> {
        self.size = size;
        self.view = doc.view;
        self.repaint = false;
        self.shown.clear();
        self.len = 0;
        self.compare(doc);
        self.out
            .write_all(b"\x1b[?2026h\x1b[?25l\x1b[H\x1b[2J\x1b[3J")?;
        self.rewritten = true;
        self.top = 0;
        self.cursor = 0;
        for (i, line) in doc.rows_from(0).enumerate() {
            if i > 0 {
                self.newline()?;
            }
            write_line(&mut self.out, &mut self.scratch, size.width, line)?;
        }
        self.draw_images(doc, 0)?;
        self.finish(doc)
    }

    /// A frame whose rows did not change: only the cursor may have moved.
    fn place_cursor_only(&mut self, doc: &Document<'_>) -> io::Result<()> {
        if doc.cursor == self.placed {
            return Ok(());
        }
        self.out.write_all(b"\x1b[?2026h\x1b[?25l")?;
        self.finish(doc)
    }

    /// Puts the cursor where the frame wants it (shown unless the frame
    /// draws it) or leaves it hidden, and sends the frame.
    fn finish(&mut self, doc: &Document<'_>) -> io::Result<()> {
        let cursor = doc.cursor;
        self.placed = cursor;
        let visible = cursor.filter(|(row, _)| {
            let row = *row as i64;
            row >= self.top && row < self.len as i64
        });
        if let Some((row, col)) = visible {
            self.move_to(row as i64)?;
            write!(self.out, "\x1b[{}G", u32::from(col) + 1)?;
            if !doc.cursor_drawn {
                self.out.write_all(b"\x1b[?25h")?;
            }
        }
        self.out.write_all(b"\x1b[?2026l")?;
        self.out.flush()
    }

    /// Moves the cursor to document row `row` (on screen or below it: the
    /// terminal scrolls the rows above into scrollback).
    fn move_to(&mut self, row: i64) -> io::Result<()> {
        let row = row.max(self.top);
        if row < self.cursor {
            write!(self.out, "\x1b[{}A", self.cursor - row)?;
            self.cursor = row;
        }
        while self.cursor < row {
            self.newline()?;
        }
        Ok(())
    }

    /// Goes to the start of the next row, scrolling at the screen's bottom.
    fn newline(&mut self) -> io::Result<()> {
        self.out.write_all(b"\r\n")?;
        self.cursor += 1;
        let height = i64::from(self.size.height.max(1));
        if self.cursor - self.top >= height {
            self.top = self.cursor - height + 1;
        }
        Ok(())
    }
}

/// Writes `line` from the cursor, laid out in `width` cells as the full-screen
/// UI lays out a row (cut at the width, wide characters whole), without its
/// trailing blanks.
fn write_line(
    out: &mut impl Write,
    scratch: &mut Buffer,
    width: u16,
    line: &Line<'_>,
) -> io::Result<()> {
    let area = Rect::new(0, 0, width.max(1), 1);
    if scratch.area != area {
        scratch.resize(area);
    }
    scratch.reset();
    super::screen::rows::draw(scratch, area, [line]);
    let blank = Cell::default();
    let end = scratch
        .content
        .iter()
        .rposition(|c| *c != blank)
        .map_or(0, |i| i + 1);
    if end == 0 {
        return Ok(());
    }
    let mut pen = Pen::default();
    let mut hidden = 0u16;
    for cell in &scratch.content[..end] {
        if hidden > 0 {
            hidden -= 1;
            continue;
        }
        pen.put(out, cell)?;
        hidden = cell.symbol().cell_width().saturating_sub(1);
    }
    pen.finish(out)
}

/// The rows of `buffer` as lines (the live rows are drawn with widgets
/// into a buffer; a document holds lines), each cell's style kept.
pub fn buffer_lines(buffer: &Buffer) -> Vec<Line<'static>> {
    let width = usize::from(buffer.area.width);
    if width == 0 {
        return Vec::new();
    }
    buffer
        .content
        .chunks(width)
        .map(|cells| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            let mut hidden = 0u16;
            for cell in cells {
                if hidden > 0 {
                    hidden -= 1;
                    continue;
                }
                let symbol = cell.symbol();
                hidden = symbol.cell_width().saturating_sub(1);
                let style = cell_style(cell);
                match spans.last_mut() {
                    Some(last) if last.style == style => last.content.to_mut().push_str(symbol),
                    _ => spans.push(Span::styled(symbol.to_string(), style)),
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// The style that draws `cell`'s colours, attributes and link.
fn cell_style(cell: &Cell) -> Style {
    let set = |c: Color| (c != Color::Reset).then_some(c);
    Style {
        fg: set(cell.fg),
        bg: set(cell.bg),
        underline_color: set(cell.underline_color),
        add_modifier: cell.modifier,
        sub_modifier: Modifier::empty(),
    }
}

#[cfg(test)]
#[path = "regular_tests.rs"]
mod tests;
