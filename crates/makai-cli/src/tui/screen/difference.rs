//! The cells a frame changed: what ratatui's `Buffer::diff` returns, cell for
//! cell and in the same order (the tests compare the two on random buffers),
//! at a fraction of its cost.
//!
//! The difference is taken over every cell of the screen at every frame, and
//! most cells are equal to the ones the terminal shows (all the more since
//! the terminal scrolls the conversation). ratatui compares two cells through
//! `Cell::eq`, a call that compares the symbols as strings (one more call, to
//! `memcmp`), and asks each equal cell for its width; this comparison is
//! inlined, compares the style first and one-byte symbols as bytes, and
//! takes a one-byte symbol's width as one, as ratatui's `cell_width` does.
//! The rules for wide characters are ratatui's 0.30 rules.

use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::style::{Color, Modifier};

/// Styles that show on a blank cell: the half of a wide character in one of
/// them is written again when a narrow character replaces it.
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK)
    .union(Modifier::CROSSED_OUT);

/// The cells of `next` to write over `shown` (two buffers of one area), with
/// their positions. The rows flagged in `unchanged` are known to be equal in
/// both and are not compared (no row of a frame ends inside a wide
/// character, so none carries into the next one).
pub fn changed_cells<'a>(
    shown: &Buffer,
    next: &'a Buffer,
    unchanged: &[bool],
) -> Vec<(u16, u16, &'a Cell)> {
    let area = next.area;
    let columns = usize::from(area.width).max(1);
    let position = |i: usize| ((i % columns) as u16 + area.x, (i / columns) as u16 + area.y);
    let (before, after) = (&shown.content[..], &next.content[..]);
    let len = before.len().min(after.len());
    let mut out = Vec::new();
    let mut i = 0;
    let mut row_end = 0;
    while i < len {
        if i >= row_end {
            let row = i / columns;
            row_end = (row + 1) * columns;
            if unchanged.get(row).copied().unwrap_or(false) {
                i = row_end;
                continue;
            }
        }
        let (current, previous) = (&after[i], &before[i]);
        let at = i;
        i += 1;
        match current.diff_option {
            _ if skipped(current) => {}
            CellDiffOption::ForcedWidth(width) => {
                i = i.saturating_add(usize::from(width.get()) - 1);
                if !same(current, previous) {
                    let (x, y) = position(at);
                    out.push((x, y, current));
                }
            }
            CellDiffOption::None | CellDiffOption::AlwaysUpdate | CellDiffOption::Skip => {
                let current_width = width(current);
                if current.diff_option == CellDiffOption::None && same(current, previous) {
                    i += current_width.saturating_sub(1);
                    continue;
                }
                let (x, y) = position(at);
                out.push((x, y, current));
                let previous_width = width(previous);
                if current_width > 1 && current.symbol().contains('\u{FE0F}') {
                    // An emoji presentation sequence: some terminals leave
                    // its second half as it was, so changed halves are
                    // written again.
                    i = trailing(
                        before,
                        after,
                        at + 1,
                        (at + current_width).min(len),
                        false,
                        &mut |j| {
                            let (x, y) = position(j);
                            out.push((x, y, &after[j]));
                        },
                    );
                } else if current_width > 1 {
                    i += current_width - 1;
                } else if previous_width > current_width
                    && (previous.bg != Color::Reset
                        || previous.modifier.intersects(VISIBLE_ON_BLANK))
                {
                    i = trailing(before, after, at + 1, at + previous_width, true, &mut |j| {
                        let (x, y) = position(j);
                        out.push((x, y, &after[j]));
                    });
                }
            }
        }
    }
    out
}

/// The cells from `start` to `end` behind a character just written: each
/// is handed to `emit` when `force`d or when its symbol changed. Returns the
/// index after them.
fn trailing(
    before: &[Cell],
    after: &[Cell],
    start: usize,
    end: usize,
    force: bool,
    emit: &mut impl FnMut(usize),
) -> usize {
    let len = before.len().min(after.len());
    let (mut next, mut end) = (start, end);
    while next < end && next < len {
        let j = next;
        next += width(&after[j]).max(1);
        end = end.max(next).min(len);
        if !skipped(&after[j]) && (force || before[j].symbol() != after[j].symbol()) {
            emit(j);
        }
    }
    end
}

/// A cell the difference never writes: `CellDiffOption::Skip`, or ratatui's
/// deprecated `skip` flag without another option.
#[inline]
fn skipped(cell: &Cell) -> bool {
    #[allow(deprecated)]
    let skip = cell.skip;
    match cell.diff_option {
        CellDiffOption::Skip => true,
        CellDiffOption::None => skip,
        _ => false,
    }
}

/// `Cell::eq`, inlined: the style first, one-byte symbols as bytes.
#[inline]
fn same(a: &Cell, b: &Cell) -> bool {
    #[allow(deprecated)]
    let same_skip = a.skip == b.skip;
    a.fg == b.fg
        && a.bg == b.bg
        && a.modifier == b.modifier
        && a.underline_color == b.underline_color
        && a.diff_option == b.diff_option
        && same_skip
        && match (a.symbol().as_bytes(), b.symbol().as_bytes()) {
            ([a], [b]) => a == b,
            (a, b) => a == b,
        }
}

/// `Cell::cell_width`, with a one-byte symbol's width taken inline.
#[inline]
fn width(cell: &Cell) -> usize {
    match cell.diff_option {
        CellDiffOption::ForcedWidth(width) => usize::from(width.get()),
        _ => width_of_symbol(cell.symbol()),
    }
}

/// A symbol's width in cells.
#[inline]
fn width_of_symbol(symbol: &str) -> usize {
    if symbol.len() == 1 {
        1
    } else {
        usize::from(symbol.cell_width())
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU16;

    use ratatui::layout::Rect;

    use super::*;
    use crate::tui::test_rng::Rng;

    const SYMBOLS: [&str; 12] = [
        " ",
        "a",
        "Z",
        "",
        "漢",
        "🎉",
        "❤\u{FE0F}",
        "👍🏽",
        "e\u{301}",
        "ｶﾞ",
        "─",
        "ab",
    ];

    fn color(rng: &mut Rng) -> Color {
        match rng.below(6) {
            0 => Color::Indexed(rng.below(4) as u8),
            1 => Color::Rgb(1, 2, rng.below(2) as u8),
            2 => Color::Cyan,
            _ => Color::Reset,
        }
    }

    #[allow(deprecated)]
    fn random_cell(rng: &mut Rng) -> Cell {
        let mut cell = Cell::default();
        cell.set_symbol(SYMBOLS[rng.index(SYMBOLS.len())]);
        if rng.below(3) == 0 {
            cell.fg = color(rng);
            cell.bg = color(rng);
            cell.underline_color = color(rng);
            for m in [
                Modifier::BOLD,
                Modifier::UNDERLINED,
                Modifier::REVERSED,
                Modifier::CROSSED_OUT,
            ] {
                if rng.below(4) == 0 {
                    cell.modifier |= m;
                }
            }
        }
        cell.diff_option = match rng.below(20) {
            0 => CellDiffOption::Skip,
            1 => CellDiffOption::AlwaysUpdate,
            2 => CellDiffOption::ForcedWidth(NonZeroU16::new(1 + rng.below(3) as u16).unwrap()),
            _ => CellDiffOption::None,
        };
        cell.skip = rng.below(25) == 0;
        cell
    }

    /// A buffer of random cells, and one that differs from it here and
    /// there (runs of equal cells are the common case). The last cell of
    /// each is narrow, as in every frame: ratatui's difference indexes past
    /// the end of the buffer when a wide character there became narrow
    /// (ours stops at the end).
    fn pair(rng: &mut Rng, area: Rect) -> (Buffer, Buffer) {
        let mut shown = Buffer::empty(area);
        for cell in &mut shown.content {
            if rng.below(2) == 0 {
                *cell = random_cell(rng);
            }
        }
        let mut next = shown.clone();
        let changes = rng.below(3);
        for cell in &mut next.content {
            if changes == 0 || rng.below(4 * changes) == 0 {
                *cell = random_cell(rng);
            }
        }
        for buffer in [&mut shown, &mut next] {
            if let Some(last) = buffer.content.last_mut() {
                *last = Cell::new("a");
            }
        }
        (shown, next)
    }

    #[test]
    fn the_changed_cells_are_ratatuis_difference_cell_for_cell() {
        let mut rng = Rng(0x853c_49e6_748f_ea9b);
        for round in 0..3000 {
            let area = Rect::new(
                rng.below(3) as u16,
                rng.below(3) as u16,
                1 + rng.below(30) as u16,
                rng.below(6) as u16,
            );
            let (shown, next) = pair(&mut rng, area);
            let ours: Vec<_> = changed_cells(&shown, &next, &[])
                .into_iter()
                .map(|(x, y, c)| (x, y, c as *const Cell))
                .collect();
            let ratatuis: Vec<_> = shown
                .diff(&next)
                .into_iter()
                .map(|(x, y, c)| (x, y, c as *const Cell))
                .collect();
            assert_eq!(
                ours, ratatuis,
                "round {round}: {area:?}\n{shown:?}\n{next:?}"
            );
        }
    }

    #[test]
    fn a_wide_character_in_the_last_cell_that_turned_narrow_is_written_without_reading_past_the_end()
     {
        let area = Rect::new(0, 0, 3, 1);
        let mut shown = Buffer::empty(area);
        shown.content[2] = Cell::new("漢");
        shown.content[2].bg = Color::Red;
        let mut next = Buffer::empty(area);
        next.content[2] = Cell::new("b");
        let changed: Vec<_> = changed_cells(&shown, &next, &[])
            .into_iter()
            .map(|(x, y, c)| (x, y, c.symbol().to_string()))
            .collect();
        assert_eq!(changed, [(2, 0, "b".to_string())]);
    }
}
