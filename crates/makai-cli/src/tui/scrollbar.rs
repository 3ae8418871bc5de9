//! The conversation's scrollbar (pi's `fullscreenScrollbar`): a track down
//! the conversation's rightmost column with a thumb for the rows shown.
//!
//! `"always"` keeps the column for it (the conversation is a column
//! narrower); `"auto"`, the default, draws it over that column while the
//! mouse pointer is on it or drags it; `"hidden"` never. It shows only when
//! the conversation is longer than its area. A click on the track moves the
//! thumb there, and dragging the thumb scrolls. Colours: the theme's
//! `scrollbarTrack` and `scrollbarThumb`.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::screen::Frame;
use super::theme;

/// pi's `fullscreenScrollbar` modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Shown while the pointer is on the rightmost column, or drags it.
    #[default]
    Auto,
    /// Always shown, in a column of its own.
    Always,
    /// Never shown.
    Hidden,
}

impl Mode {
    /// The mode a `fullscreenScrollbar` value names; `auto` for any other.
    pub fn from_setting(value: Option<&serde_json::Value>) -> Mode {
        match value.and_then(serde_json::Value::as_str) {
            Some("always") => Mode::Always,
            Some("hidden") => Mode::Hidden,
            _ => Mode::Auto,
        }
    }

    /// The setting's value for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Always => "always",
            Mode::Hidden => "hidden",
        }
    }

    /// The mode after this one in `/settings` (auto, always, hidden).
    pub fn next(self) -> Mode {
        match self {
            Mode::Auto => Mode::Always,
            Mode::Always => Mode::Hidden,
            Mode::Hidden => Mode::Auto,
        }
    }
}

/// Where the conversation stood at the last frame, for the mouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The conversation's area (the scrollbar column included).
    pub area: Rect,
    /// Rows of the whole conversation.
    pub total: usize,
}

impl Geometry {
    fn column(&self) -> u16 {
        self.area.x + self.area.width.saturating_sub(1)
    }

    fn height(&self) -> usize {
        self.area.height as usize
    }

    fn scrollable(&self) -> bool {
        self.total > self.height() && self.area.width > 1
    }

    /// True when (`column`, `row`) is on the scrollbar's column.
    fn on_bar(&self, column: u16, row: u16) -> bool {
        column == self.column() && row >= self.area.y && row < self.area.y + self.area.height
    }

    /// The scroll offset (rows up from the bottom) that puts the thumb's
    /// middle at screen row `row`.
    fn scroll_for(&self, row: u16) -> usize {
        let height = self.height();
        let (_, len) = thumb(self.total, height, 0);
        let room = height - len;
        if room == 0 {
            return 0;
        }
        let at = (row.saturating_sub(self.area.y) as usize)
            .saturating_sub(len / 2)
            .min(room);
        let max_start = self.total - height;
        let start = (at * max_start + room / 2) / room;
        max_start - start.min(max_start)
    }
}

/// The thumb's first row and length on a track `height` rows tall, for a
/// conversation of `total` rows whose row `start` is shown first.
pub fn thumb(total: usize, height: usize, start: usize) -> (usize, usize) {
    if total <= height || height == 0 {
        return (0, height);
    }
    let len = (height * height / total).clamp(1, height);
    let room = height - len;
    let max_start = total - height;
    let top = (start.min(max_start) * room + max_start / 2) / max_start;
    (top, len)
}

/// The scrollbar's state between frames.
#[derive(Debug, Default)]
pub struct Scrollbar {
    /// pi's `fullscreenScrollbar`.
    pub mode: Mode,
    /// The pointer is on the scrollbar's column (`auto` shows it).
    hovered: bool,
    /// The left button went down on the scrollbar and is not up yet.
    dragging: bool,
    /// The conversation at the last frame.
    geometry: Option<Geometry>,
}

impl Scrollbar {
    /// A scrollbar in `mode`.
    pub fn new(mode: Mode) -> Scrollbar {
        Scrollbar {
            mode,
            ..Default::default()
        }
    }

    /// Columns the conversation's text leaves to the scrollbar: one in
    /// `always` mode.
    pub fn reserved(&self) -> u16 {
        u16::from(self.mode == Mode::Always)
    }

    /// Whether the scrollbar is drawn now (the conversation overflowing).
    fn visible(&self) -> bool {
        match self.mode {
            Mode::Always => true,
            Mode::Auto => self.hovered || self.dragging,
            Mode::Hidden => false,
        }
    }

    /// Draws the scrollbar down `area`'s rightmost column for a conversation
    /// of `total` rows whose row `start` is shown first, when it shows, and
    /// remembers where it is for the mouse.
    pub fn draw(&mut self, f: &mut Frame<'_>, area: Rect, total: usize, start: usize) {
        let geometry = Geometry { area, total };
        self.geometry = Some(geometry);
        if !self.visible() || !geometry.scrollable() {
            return;
        }
        let height = area.height as usize;
        let (top, len) = thumb(total, height, start);
        let lines: Vec<Line<'static>> = (0..height)
            .map(|row| {
                if (top..top + len).contains(&row) {
                    Line::from(Span::styled("┃", theme::scrollbar_thumb()))
                } else {
                    Line::from(Span::styled("│", theme::scrollbar_track()))
                }
            })
            .collect();
        let column = Rect {
            x: geometry.column(),
            width: 1,
            ..area
        };
        f.draw_lines(column, &lines);
    }

    /// A mouse event: pointer moves show or hide an `auto` scrollbar, a
    /// click on it or a drag of it scrolls. Returns the new scroll offset
    /// (rows up from the bottom) when it scrolled, and whether the frame
    /// must be drawn again.
    pub fn mouse(&mut self, m: &MouseEvent) -> (Option<usize>, bool) {
        let Some(geometry) = self.geometry else {
            return (None, false);
        };
        if self.mode == Mode::Hidden || !geometry.scrollable() {
            let changed = std::mem::take(&mut self.hovered) | std::mem::take(&mut self.dragging);
            return (None, changed);
        }
        let on_bar = geometry.on_bar(m.column, m.row);
        match m.kind {
            MouseEventKind::Moved => {
                let was = std::mem::replace(&mut self.hovered, on_bar);
                (None, was != on_bar && self.mode == Mode::Auto)
            }
            MouseEventKind::Down(MouseButton::Left) if on_bar && self.visible() => {
                self.dragging = true;
                (Some(geometry.scroll_for(m.row)), true)
            }
            MouseEventKind::Drag(MouseButton::Left) if self.dragging => {
                (Some(geometry.scroll_for(m.row)), true)
            }
            MouseEventKind::Up(MouseButton::Left) if self.dragging => {
                self.dragging = false;
                self.hovered = on_bar;
                (None, true)
            }
            _ => (None, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    #[test]
    fn the_thumb_spans_the_rows_shown_and_ends_at_the_ends() {
        assert_eq!(thumb(10, 10, 0), (0, 10), "nothing to scroll");
        assert_eq!(thumb(100, 10, 0), (0, 1));
        assert_eq!(thumb(100, 10, 90), (9, 1), "the bottom");
        assert_eq!(thumb(20, 10, 10), (5, 5));
        assert_eq!(thumb(20, 10, 5), (3, 5));
        assert_eq!(thumb(1000, 10, 2000), (9, 1), "past the end is the end");
    }

    #[test]
    fn clicks_and_drags_on_the_bar_scroll_and_auto_shows_on_hover() {
        let mut bar = Scrollbar::new(Mode::Auto);
        let area = Rect::new(0, 2, 40, 10);
        bar.geometry = Some(Geometry { area, total: 110 });
        // Not shown yet: a click there is the text's.
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Down(MouseButton::Left), 39, 2)),
            (None, false)
        );
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Up(MouseButton::Left), 39, 2)),
            (None, false)
        );
        // The pointer on the column shows it; elsewhere hides it.
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Moved, 39, 5)),
            (None, true)
        );
        assert!(bar.visible());
        // A click at the top row: the conversation's top (100 rows up).
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Down(MouseButton::Left), 39, 2)),
            (Some(100), true)
        );
        // Dragged to the bottom row, even off the column: the bottom.
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Drag(MouseButton::Left), 30, 11)),
            (Some(0), true)
        );
        // The middle row.
        let (middle, _) = bar.mouse(&mouse(MouseEventKind::Drag(MouseButton::Left), 39, 7));
        assert!((40..=60).contains(&middle.unwrap_or(0)), "{middle:?}");
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Up(MouseButton::Left), 30, 11)),
            (None, true)
        );
        assert!(!bar.visible(), "released off the column: hidden again");
        assert_eq!(
            bar.mouse(&mouse(MouseEventKind::Drag(MouseButton::Left), 39, 3)),
            (None, false)
        );
    }

    #[test]
    fn hidden_never_shows_and_always_keeps_its_column() {
        let mut hidden = Scrollbar::new(Mode::Hidden);
        hidden.geometry = Some(Geometry {
            area: Rect::new(0, 0, 40, 10),
            total: 100,
        });
        assert_eq!(
            hidden.mouse(&mouse(MouseEventKind::Moved, 39, 5)),
            (None, false)
        );
        assert_eq!(
            hidden.mouse(&mouse(MouseEventKind::Down(MouseButton::Left), 39, 5)),
            (None, false)
        );
        assert_eq!(hidden.reserved(), 0);
        let always = Scrollbar::new(Mode::Always);
        assert_eq!(always.reserved(), 1);
        assert!(always.visible());
        assert_eq!(
            Mode::from_setting(Some(&serde_json::json!("always"))),
            Mode::Always
        );
        assert_eq!(
            Mode::from_setting(Some(&serde_json::json!("hidden"))),
            Mode::Hidden
        );
        assert_eq!(
            Mode::from_setting(Some(&serde_json::json!(true))),
            Mode::Auto
        );
        assert_eq!(Mode::from_setting(None), Mode::Auto);
        for mode in [Mode::Auto, Mode::Always, Mode::Hidden] {
            let value = serde_json::json!(mode.as_str());
            assert_eq!(Mode::from_setting(Some(&value)), mode);
            assert_ne!(mode.next(), mode);
        }
    }
}
