//! [`Screen`]: the full-screen UI's frames on the terminal, written as the
//! changes from the frame before, with the conversation's scrolling done by
//! the terminal.
//!
//! ratatui's `Terminal` keeps the last frame's buffer and writes the cells
//! that differ from it. While an answer streams, the conversation moves up a
//! row or more at each frame, so nearly every cell of it differs from the
//! cell above it a frame earlier and is written again: thousands of cells a
//! frame, for the terminal to parse and paint. A [`Frame`] can say that a
//! band of rows shows what the last frame showed there, moved up or down
//! ([`Frame::scrolled`]); the screen then has the terminal move those rows
//! (a scroll region and one scroll command, which every VT100 descendant
//! knows), moves the kept buffer's rows alike, and writes only what still
//! differs: the new rows and whatever else changed. A wrong claim costs only
//! the cells it fails to save, never a wrong screen: the difference is taken
//! against what the terminal shows after the move.
//!
//! Everything else is what ratatui's `Terminal` does, which ratatui's
//! `Terminal` cannot do because it hands out neither its kept buffer nor
//! control over the write between two frames: the buffers are resized and
//! the screen cleared when the terminal's size changes, the cursor is shown
//! where the frame puts it or hidden, and a frame leaves in one write, inside
//! a synchronized update (`CSI ? 2026 h` … `l`), so terminals that know it
//! never show half a frame; the others ignore it.

use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::ops::Range;

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;
use ratatui::widgets::Widget;

use super::backend::FrameBackend;

mod difference;
pub mod placed;
pub(crate) mod rows;

pub use difference::changed_cells;
pub use placed::Placement;

/// A frame being drawn: its buffer, where the cursor goes, which rows moved
/// since the last frame and what each row was drawn from.
pub struct Frame<'a> {
    buffer: &'a mut Buffer,
    cursor: Option<Position>,
    /// The cursor is drawn into the cells ([`Frame::draw_cursor`]): the
    /// terminal's own stays hidden.
    cursor_drawn: bool,
    scroll: Option<Scroll>,
    rows: &'a mut [RowKey],
    /// What the terminal shows, and what its rows were drawn from.
    shown: &'a Buffer,
    shown_rows: &'a [RowKey],
    /// Rows left undrawn because the terminal shows them already (after the
    /// claimed scroll): the screen takes their cells from `shown`.
    borrowed: &'a mut [bool],
    hasher: &'a RandomState,
    /// Images placed over the frame's cells ([`Frame::place_image`]).
    placed: &'a mut Vec<Placement>,
}

/// Rows `rows` show what they showed at the last frame, moved up by `by`
/// rows (down when negative).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Scroll {
    rows: Range<u16>,
    by: i32,
}

impl Scroll {
    /// Whether the terminal can make this move on a screen of `area`: a
    /// band inside the screen, moved by less than its height.
    fn fits(&self, area: Rect) -> bool {
        let height = i32::from(self.rows.end.saturating_sub(self.rows.start));
        self.by != 0 && self.rows.end <= area.height && self.by.abs() < height && area.width > 0
    }

    /// The row that shows at row `y` after the move: the one it came from, or
    /// `None` for a row that came in blank.
    fn origin(&self, y: u16) -> Option<u16> {
        if !self.rows.contains(&y) {
            return Some(y);
        }
        let from = i32::from(y) + self.by;
        (i32::from(self.rows.start)..i32::from(self.rows.end))
            .contains(&from)
            .then_some(from as u16)
    }
}

/// What a row of a frame was drawn from: two rows with the same key, other
/// than `Mixed`, hold the same cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowKey {
    /// Nothing: the row is blank.
    Blank,
    /// One line across the whole width ([`Frame::draw_lines`]), by its hash.
    Line(u64),
    /// Anything else: compared cell by cell.
    Mixed,
}

impl Frame<'_> {
    /// The whole frame.
    pub fn area(&self) -> Rect {
        self.buffer.area
    }

    /// The frame's cells. Every row of the frame is compared cell by cell
    /// with the terminal's after this: draw rows with [`Frame::draw_lines`]
    /// and widgets with [`Frame::render_widget`] where you can.
    pub fn buffer_mut(&mut self) -> &mut Buffer {
        let whole = self.buffer.area;
        self.mix(whole);
        self.buffer
    }

    /// Renders `widget` into `area`.
    pub fn render_widget<W: Widget>(&mut self, widget: W, area: Rect) {
        self.mix(area);
        widget.render(area, self.buffer);
    }

    /// Writes `lines` into `area`, a line a row from the top, each cut at
    /// the area's width (the cells `Paragraph::new(lines)` writes into a
    /// blank area). A row that a line across the whole screen's width is
    /// drawn into, and nothing else, is known by that line: where the
    /// terminal shows a row drawn from an equal line (after the claimed
    /// scroll), the row is neither drawn nor compared again.
    pub fn draw_lines<'l>(&mut self, area: Rect, lines: impl IntoIterator<Item = &'l Line<'l>>) {
        let whole = self.buffer.area;
        let area = area.intersection(whole);
        let across = area.x == whole.x && area.width == whole.width;
        for (y, line) in (area.top()..area.bottom()).zip(lines) {
            let row = usize::from(y - whole.y);
            if across && self.rows[row] == RowKey::Blank {
                let key = RowKey::Line(self.hasher.hash_one((area.width, line)));
                self.rows[row] = key;
                if self.shown_key(y) == key {
                    self.borrowed[row] = true;
                    continue;
                }
            } else {
                self.materialize(y);
                self.rows[row] = RowKey::Mixed;
            }
            rows::draw(
                self.buffer,
                Rect {
                    y,
                    height: 1,
                    ..area
                },
                [line],
            );
        }
    }

    /// Shows the cursor at `position` after the frame (it is hidden when no
    /// position is set).
    pub fn set_cursor_position<P: Into<Position>>(&mut self, position: P) {
        self.cursor = Some(position.into());
    }

    /// Draws the cursor as pi does unless `showHardwareCursor` is set: the
    /// cell under it in reverse video. The terminal's own cursor is then
    /// hidden, though still moved there for input methods (their
    /// composition window follows it).
    pub fn draw_cursor(&mut self) {
        let Some(at) = self.cursor else { return };
        let whole = self.buffer.area;
        if !whole.contains(at) {
            return;
        }
        self.mix(Rect::new(whole.x, at.y, whole.width, 1));
        if let Some(cell) = self.buffer.cell_mut(at) {
            cell.modifier.insert(ratatui::style::Modifier::REVERSED);
        }
        self.cursor_drawn = true;
    }

    /// Places an image over the frame's cells (iTerm2's protocol): drawn
    /// there when the whole of it lies inside `placement.clip` on blank
    /// cells and the terminal does not show it there already (see
    /// [`placed`]).
    pub fn place_image(&mut self, placement: Placement) {
        self.placed.push(placement);
    }

    /// Says that rows `rows` (of the whole screen's width) show what they
    /// showed at the last frame, moved up by `by` rows (down when negative).
    /// Only the last claim of a frame counts; one that does not fit the
    /// screen, or moves the rows by their whole height or more, is ignored.
    /// Claim before drawing the rows: rows drawn before a claim are drawn
    /// in full.
    pub fn scrolled(&mut self, rows: Range<u16>, by: i32) {
        let whole = self.buffer.area;
        self.materialize_rows(whole.top()..whole.bottom());
        self.scroll = Some(Scroll { rows, by }).filter(|s| s.fits(whole));
    }

    /// The key of the row the terminal will show at row `y` once the
    /// claimed scroll is made.
    fn shown_key(&self, y: u16) -> RowKey {
        let origin = match &self.scroll {
            Some(scroll) => scroll.origin(y),
            None => Some(y),
        };
        origin.map_or(RowKey::Blank, |from| {
            self.shown_rows[usize::from(from - self.buffer.area.y)]
        })
    }

    /// Rows of `area` hold more than one line now.
    fn mix(&mut self, area: Rect) {
        let whole = self.buffer.area;
        let area = area.intersection(whole);
        self.materialize_rows(area.top()..area.bottom());
        for y in area.top()..area.bottom() {
            self.rows[usize::from(y - whole.y)] = RowKey::Mixed;
        }
    }

    /// Draws the borrowed rows among `rows` after all.
    fn materialize_rows(&mut self, rows: Range<u16>) {
        for y in rows {
            self.materialize(y);
        }
    }

    /// Draws row `y` if it was borrowed: its cells are the shown row's it
    /// was borrowed from.
    fn materialize(&mut self, y: u16) {
        let whole = self.buffer.area;
        let row = usize::from(y - whole.y);
        if !std::mem::take(&mut self.borrowed[row]) {
            return;
        }
        let origin = match &self.scroll {
            Some(scroll) => scroll.origin(y),
            None => Some(y),
        };
        if let Some(from) = origin {
            let width = usize::from(whole.width);
            let from = usize::from(from - whole.y) * width;
            self.buffer.content[row * width..(row + 1) * width]
                .clone_from_slice(&self.shown.content[from..from + width]);
        }
    }
}

/// What [`draw_offscreen`] drew.
pub struct Offscreen {
    /// The cells.
    pub buffer: Buffer,
    /// Where the frame put the cursor.
    pub cursor: Option<Position>,
    /// The cursor is drawn in the cells ([`Frame::draw_cursor`]).
    pub cursor_drawn: bool,
}

/// Draws into a buffer of `area` that no terminal shows (regular mode's
/// editor and footer, see [`super::regular`]).
pub fn draw_offscreen(area: Rect, draw: impl FnOnce(&mut Frame<'_>)) -> Offscreen {
    let mut buffer = Buffer::empty(area);
    let shown = Buffer::empty(area);
    let height = usize::from(area.height);
    let mut rows = vec![RowKey::Blank; height];
    // Nothing is shown, so no row can be borrowed from what is.
    let shown_rows = vec![RowKey::Mixed; height];
    let mut borrowed = vec![false; height];
    let hasher = RandomState::new();
    // Images are placed by the full-screen conversation only.
    let mut placed = Vec::new();
    let mut frame = Frame {
        buffer: &mut buffer,
        cursor: None,
        cursor_drawn: false,
        scroll: None,
        rows: &mut rows,
        shown: &shown,
        shown_rows: &shown_rows,
        borrowed: &mut borrowed,
        hasher: &hasher,
        placed: &mut placed,
    };
    draw(&mut frame);
    let (cursor, cursor_drawn) = (frame.cursor, frame.cursor_drawn);
    Offscreen {
        buffer,
        cursor,
        cursor_drawn,
    }
}

/// The terminal in full-screen mode, drawn a frame at a time. See the module
/// documentation.
pub struct Screen<W: Write> {
    backend: FrameBackend<W>,
    /// What the terminal shows: the last frame, moved as a scroll moved it.
    shown: Buffer,
    /// What each of `shown`'s rows was drawn from.
    shown_rows: Vec<RowKey>,
    /// The frame being drawn (blank between frames).
    next: Buffer,
    /// What each of `next`'s rows was drawn from.
    next_rows: Vec<RowKey>,
    /// Rows of `next` known to equal the ones shown (one flag a row; kept to
    /// reuse its memory).
    unchanged: Vec<bool>,
    /// Rows of `next` left undrawn: the terminal shows them already.
    borrowed: Vec<bool>,
    /// Hashes lines with keys of this process, so that no text can be made
    /// to collide with another.
    hasher: RandomState,
    /// The images the frame being drawn places (empty between frames).
    placed: Vec<Placement>,
    /// The images the terminal shows over cells.
    images: placed::PlacedImages,
}

impl<W: Write> Screen<W> {
    /// A screen writing to `writer` (buffer it: a frame is flushed at its
    /// end). The first frame draws every cell.
    pub fn new(writer: W) -> Self {
        Screen {
            backend: FrameBackend::new(writer),
            shown: Buffer::empty(Rect::default()),
            shown_rows: Vec::new(),
            next: Buffer::empty(Rect::default()),
            next_rows: Vec::new(),
            unchanged: Vec::new(),
            borrowed: Vec::new(),
            hasher: RandomState::new(),
            placed: Vec::new(),
            images: placed::PlacedImages::default(),
        }
    }

    /// Clears the terminal; the next frame draws every cell.
    pub fn clear(&mut self) -> io::Result<()> {
        self.backend.clear_region(ClearType::All)?;
        self.shown.reset();
        self.shown_rows.fill(RowKey::Mixed);
        self.images.forget();
        Backend::flush(&mut self.backend)
    }

    /// Makes the screen `size`: when that is a new size, the buffers are
    /// resized and the terminal cleared (returns true). [`Screen::draw`]
    /// does it first.
    pub fn fit(&mut self, size: Size) -> io::Result<bool> {
        let area = Rect::new(0, 0, size.width, size.height);
        if area == self.shown.area {
            return Ok(false);
        }
        self.shown.resize(area);
        self.next.resize(area);
        self.next.reset();
        self.backend.clear_region(ClearType::All)?;
        self.shown.reset();
        self.images.forget();
        self.shown_rows = vec![RowKey::Mixed; usize::from(size.height)];
        self.next_rows = vec![RowKey::Blank; usize::from(size.height)];
        self.borrowed = vec![false; usize::from(size.height)];
        Ok(true)
    }

    /// Writes `bytes` as they are (escape sequences the cells do not carry:
    /// images), sent with the next frame.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.backend.write_all(bytes)
    }

    /// Sends what was written.
    pub fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.backend)
    }

    /// Shows the cursor (when leaving full-screen mode).
    pub fn show_cursor(&mut self) -> io::Result<()> {
        self.backend.show_cursor()
    }

    /// What the terminal shows after the last frame.
    pub fn shown(&self) -> &Buffer {
        &self.shown
    }

    /// Draws a frame of `size` with `draw`, and writes it in one flush. A new
    /// size clears the terminal first.
    pub fn draw(&mut self, size: Size, draw: impl FnOnce(&mut Frame<'_>)) -> io::Result<()> {
        self.fit(size)?;
        let area = Rect::new(0, 0, size.width, size.height);
        let mut frame = Frame {
            buffer: &mut self.next,
            cursor: None,
            cursor_drawn: false,
            scroll: None,
            rows: &mut self.next_rows,
            shown: &self.shown,
            shown_rows: &self.shown_rows,
            borrowed: &mut self.borrowed,
            hasher: &self.hasher,
            placed: &mut self.placed,
        };
        draw(&mut frame);
        let Frame {
            cursor,
            cursor_drawn,
            scroll,
            ..
        } = frame;
        self.backend.write_all(b"\x1b[?2026h")?;
        if let Some(scroll) = scroll {
            self.scroll(scroll)?;
        }
        self.unchanged.clear();
        self.unchanged.extend(
            self.shown_rows
                .iter()
                .zip(&self.next_rows)
                .map(|(shown, next)| shown == next && *next != RowKey::Mixed),
        );
        let mut cells = difference::changed_cells(&self.shown, &self.next, &self.unchanged);
        let width = usize::from(area.width);
        let (shown, next, borrowed) = (&self.shown, &self.next, &self.borrowed);
        // A borrowed row's cells are the shown row's.
        let cell_at = |x: u16, y: u16| {
            let row = usize::from(y);
            let cells = if borrowed.get(row).copied().unwrap_or(false) {
                &shown.content
            } else {
                &next.content
            };
            &cells[row * width + usize::from(x)]
        };
        let images = self.images.settle(area, &self.placed, &mut cells, cell_at);
        self.backend.draw(cells.into_iter())?;
        for i in images {
            let placement = &self.placed[i];
            if let Ok(y) = u16::try_from(placement.y) {
                super::backend::move_to(&mut self.backend, placement.x, y)?;
                self.backend
                    .write_all(&placement.image.drawing(placement.tmux))?;
            }
        }
        self.placed.clear();
        match cursor {
            None => self.backend.write_all(b"\x1b[?25l")?,
            Some(Position { x, y }) => {
                self.backend.write_all(if cursor_drawn {
                    b"\x1b[?25l"
                } else {
                    b"\x1b[?25h"
                })?;
                super::backend::move_to(&mut self.backend, x, y)?;
            }
        }
        self.backend.write_all(b"\x1b[?2026l")?;
        // The borrowed rows' cells are the shown ones: they stay.
        for (row, borrowed) in self.borrowed.iter_mut().enumerate() {
            if std::mem::take(borrowed) {
                let cells = row * width..(row + 1) * width;
                self.next.content[cells.clone()].swap_with_slice(&mut self.shown.content[cells]);
            }
        }
        std::mem::swap(&mut self.shown, &mut self.next);
        std::mem::swap(&mut self.shown_rows, &mut self.next_rows);
        self.next.reset();
        self.next_rows.fill(RowKey::Blank);
        Backend::flush(&mut self.backend)
    }

    /// Has the terminal move `scroll.rows` by `scroll.by`, and moves the
    /// shown buffer's rows alike: the rows that come in are blank, as the
    /// terminal erases them (each frame ends with colours and attributes
    /// reset, so they are erased to the default ones).
    fn scroll(&mut self, scroll: Scroll) -> io::Result<()> {
        let area = self.shown.area;
        if !scroll.fits(area) {
            return Ok(());
        }
        let Scroll { rows, by } = scroll;
        self.images.scrolled(&rows, by);
        let moved = by.unsigned_abs() as usize;
        let direction = if by > 0 { 'S' } else { 'T' };
        write!(
            self.backend,
            "\x1b[{};{}r\x1b[{moved}{direction}\x1b[r",
            rows.start + 1,
            rows.end
        )?;
        let width = usize::from(area.width);
        let band =
            &mut self.shown.content[usize::from(rows.start) * width..usize::from(rows.end) * width];
        let blank = if by > 0 {
            band.rotate_left(moved * width);
            band.len() - moved * width..band.len()
        } else {
            band.rotate_right(moved * width);
            0..moved * width
        };
        band[blank].iter_mut().for_each(Cell::reset);
        let keys = &mut self.shown_rows[usize::from(rows.start)..usize::from(rows.end)];
        if by > 0 {
            keys.rotate_left(moved);
            let end = keys.len();
            keys[end - moved..].fill(RowKey::Blank);
        } else {
            keys.rotate_right(moved);
            keys[..moved].fill(RowKey::Blank);
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod emulated;

#[cfg(test)]
mod tests;
