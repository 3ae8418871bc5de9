//! Images drawn over cells (iTerm2's protocol, [`crate::tui::images::iterm2`]).
//!
//! Such an image is no text: a frame holds blank cells where it shows and
//! places the image over them ([`super::Frame::place_image`]), and the
//! terminal keeps it there until text is written over its cells, moving it
//! with the rows it scrolls. [`PlacedImages`] knows which images the
//! terminal shows where. After each frame's cells are known, an image the
//! terminal shows is kept where the frame places it again, at the same
//! place (the scroll the screen had the terminal make moves it along) and
//! with none of its cells written; any other is torn down, its cells
//! written again from the frame, so that nothing of it stays over text it
//! no longer belongs to. An image the frame places whole inside its area,
//! on cells still blank (no popup or note over them), is then drawn there
//! if the terminal does not show it already. An image cut by its area's
//! edge is drawn only once whole (it cannot be drawn in part), though one
//! the terminal shows scrolls off in part as any row does.

use std::ops::Range;
use std::sync::Arc;

use ratatui::buffer::Cell;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

use crate::tui::images::InlineImage;

/// An image a frame places over its cells.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The image.
    pub image: Arc<InlineImage>,
    /// Its top left cell's column.
    pub x: u16,
    /// Its top row: above the screen's top when negative.
    pub y: i32,
    /// The area it shows in (the conversation's): what lies outside is cut.
    pub clip: Rect,
    /// The terminal is reached through tmux.
    pub tmux: bool,
}

/// Where an image shows: the same image at the same place in the same area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spot {
    id: u32,
    x: u16,
    y: i32,
    columns: u16,
    rows: u16,
    clip: Rect,
}

impl Spot {
    fn of(placement: &Placement) -> Spot {
        Spot {
            id: placement.image.id,
            x: placement.x,
            y: placement.y,
            columns: placement.image.columns,
            rows: placement.image.rows,
            clip: placement.clip,
        }
    }

    /// Its cells inside its area.
    fn visible(&self) -> Rect {
        let top = self.y.max(i32::from(self.clip.top()));
        let bottom = (self.y + i32::from(self.rows)).min(i32::from(self.clip.bottom()));
        if bottom <= top {
            return Rect::default();
        }
        let (Ok(top), Ok(bottom)) = (u16::try_from(top), u16::try_from(bottom)) else {
            return Rect::default();
        };
        Rect::new(self.x, top, self.columns, bottom - top).intersection(self.clip)
    }

    /// Whether all of it lies inside its area.
    fn whole(&self) -> bool {
        let visible = self.visible();
        visible.height == self.rows
            && visible.width == self.columns
            && i32::from(visible.y) == self.y
    }
}

/// An image the terminal shows.
#[derive(Clone, Copy, Debug)]
struct Shown {
    spot: Spot,
    /// A scroll moved part of it out of its area: that part is gone, and
    /// the image is drawn again when it would show whole.
    cut: bool,
}

/// The images the terminal shows over cells. See the module documentation.
#[derive(Debug, Default)]
pub struct PlacedImages {
    shown: Vec<Shown>,
}

impl PlacedImages {
    /// The screen was cleared: the terminal shows none.
    pub fn forget(&mut self) {
        self.shown.clear();
    }

    /// The terminal moved rows `rows` up by `by` (down when negative): the
    /// images in them moved along.
    pub fn scrolled(&mut self, rows: &Range<u16>, by: i32) {
        for shown in &mut self.shown {
            let visible = shown.spot.visible();
            if visible.height > 0 && rows.contains(&visible.y) {
                shown.spot.y -= by;
                shown.cut |= !shown.spot.whole();
            }
        }
    }

    /// Settles the images for a frame of `screen` whose changed cells are
    /// `cells` and whose cells are `cell_at`: the cells of every image torn
    /// down are added to `cells`; returns the placements (indices into
    /// `placed`) to draw after the cells.
    pub fn settle<'a>(
        &mut self,
        screen: Rect,
        placed: &[Placement],
        cells: &mut Vec<(u16, u16, &'a Cell)>,
        cell_at: impl Fn(u16, u16) -> &'a Cell,
    ) -> Vec<usize> {
        let spots: Vec<Spot> = placed
            .iter()
            .map(|p| {
                let mut spot = Spot::of(p);
                spot.clip = spot.clip.intersection(screen);
                spot
            })
            .collect();
        let mut torn = Vec::new();
        self.shown.retain(|shown| {
            let visible = shown.spot.visible();
            let written = cells
                .iter()
                .any(|(x, y, _)| visible.contains((*x, *y).into()));
            let whole_again = shown.cut && shown.spot.whole();
            let keep = !written && !whole_again && spots.contains(&shown.spot);
            if !keep {
                torn.push(visible);
            }
            keep
        });
        for rect in torn.into_iter().map(|r| r.intersection(screen)) {
            for y in rect.top()..rect.bottom() {
                for x in rect.left()..rect.right() {
                    cells.push((x, y, cell_at(x, y)));
                }
            }
        }
        let mut draw = Vec::new();
        for (i, spot) in spots.into_iter().enumerate() {
            if self.shown.iter().any(|s| s.spot == spot) || !spot.whole() {
                continue;
            }
            let rect = spot.visible();
            let blank = (rect.top()..rect.bottom())
                .all(|y| (rect.left()..rect.right()).all(|x| is_blank(cell_at(x, y))));
            if blank {
                self.shown.push(Shown { spot, cut: false });
                draw.push(i);
            }
        }
        draw
    }
}

/// A cell with nothing drawn in it: a space in the default colours.
fn is_blank(cell: &Cell) -> bool {
    cell.symbol() == " "
        && cell.fg == Color::Reset
        && cell.bg == Color::Reset
        && cell.modifier == Modifier::empty()
}
