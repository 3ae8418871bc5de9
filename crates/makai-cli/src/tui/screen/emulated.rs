//! A terminal emulator (the `vt100` crate) fed with everything a [`Screen`]
//! writes, for the tests: after each frame the emulated terminal must show
//! what the frame drew.

use std::num::NonZeroU16;

use ratatui::buffer::CellWidth;
use ratatui::layout::Size;
use ratatui::style::{Color, Modifier};

use super::{Frame, Screen};
use crate::tui::test_rng::Shared;

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap()
}

/// The images drawn with iTerm2's protocol (the emulator draws none): where
/// the cursor was and the sequence's arguments.
#[derive(Default)]
pub(crate) struct DrawnImages(Vec<((u16, u16), String)>);

impl DrawnImages {
    /// The images drawn since the last call.
    pub(crate) fn take(&mut self) -> Vec<((u16, u16), String)> {
        std::mem::take(&mut self.0)
    }
}

impl vt100::Callbacks for DrawnImages {
    fn unhandled_osc(&mut self, screen: &mut vt100::Screen, params: &[&[u8]]) {
        if params.first() != Some(&&b"1337"[..]) {
            return;
        }
        let (row, col) = screen.cursor_position();
        let arguments: Vec<String> = params[1..]
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        self.0.push(((col, row), arguments.join(";")));
    }
}

/// A terminal emulator fed with everything a screen writes.
pub(crate) struct Emulated {
    screen: Screen<Shared>,
    output: Shared,
    terminal: vt100::Parser<DrawnImages>,
    /// Bytes written by the last frame.
    pub(crate) last_bytes: usize,
}

impl Emulated {
    pub(crate) fn new(size: Size) -> Emulated {
        let output = Shared::default();
        Emulated {
            screen: Screen::new(output.clone()),
            output,
            terminal: vt100::Parser::new_with_callbacks(
                nonzero(size.height),
                nonzero(size.width),
                0,
                DrawnImages::default(),
            ),
            last_bytes: 0,
        }
    }

    /// Draws a frame and plays its bytes through the emulator.
    pub(crate) fn draw(&mut self, size: Size, draw: impl FnOnce(&mut Frame<'_>)) {
        let (rows, cols) = self.terminal.screen().size();
        if (cols.get(), rows.get()) != (size.width, size.height) {
            self.terminal
                .set_size(nonzero(size.height), nonzero(size.width));
        }
        self.screen.draw(size, draw).unwrap();
        let bytes = self.output.0.take();
        self.last_bytes = bytes.len();
        self.terminal.process(&bytes);
    }

    /// The images drawn (iTerm2's protocol) since the last call: the cell
    /// each was drawn at and the sequence's arguments.
    pub(crate) fn images_drawn(&mut self) -> Vec<((u16, u16), String)> {
        self.terminal.callbacks_mut().take()
    }

    /// What the screen shows after the last frame.
    pub(crate) fn shown(&self) -> &ratatui::buffer::Buffer {
        self.screen.shown()
    }

    /// Where the emulator's cursor is (column, row), and whether it shows.
    pub(crate) fn cursor(&self) -> ((u16, u16), bool) {
        let screen = self.terminal.screen();
        let (row, col) = screen.cursor_position();
        ((col, row), !screen.hide_cursor())
    }

    /// Fails unless the emulator shows what the last frame drew, cell
    /// for cell: text, colours and attributes.
    pub(crate) fn assert_shows_the_frame(&self, context: &str) {
        let frame = self.screen.shown();
        let terminal = self.terminal.screen();
        for y in 0..frame.area.height {
            let mut hidden = 0;
            for x in 0..frame.area.width {
                if hidden > 0 {
                    hidden -= 1;
                    continue;
                }
                let drawn = &frame[(x, y)];
                let Some(shown) = terminal.cell(y, x) else {
                    panic!("{context}: the emulator has no cell ({x}, {y})");
                };
                let text = if shown.has_contents() {
                    shown.contents()
                } else {
                    " "
                };
                assert_eq!(text, drawn.symbol(), "{context}: the text of ({x}, {y})");
                let style = |c: &vt100::Cell| {
                    (
                        c.fgcolor(),
                        c.bgcolor(),
                        c.bold(),
                        c.dim(),
                        c.italic(),
                        c.underline(),
                        c.inverse(),
                    )
                };
                let wanted = (
                    vt_color(drawn.fg),
                    vt_color(drawn.bg),
                    drawn.modifier.contains(Modifier::BOLD),
                    drawn.modifier.contains(Modifier::DIM),
                    drawn.modifier.contains(Modifier::ITALIC),
                    drawn.modifier.contains(Modifier::UNDERLINED),
                    drawn.modifier.contains(Modifier::REVERSED),
                );
                assert_eq!(
                    wanted,
                    style(shown),
                    "{context}: the style of ({x}, {y}), {:?}",
                    drawn.symbol()
                );
                hidden = drawn.symbol().cell_width().saturating_sub(1);
            }
        }
    }
}

/// The colour the emulator reports for a cell drawn in `color`: crossterm
/// writes the sixteen named colours as indexed ones.
fn vt_color(color: Color) -> vt100::Color {
    match color {
        Color::Reset => vt100::Color::Default,
        Color::Indexed(i) => vt100::Color::Idx(i),
        Color::Rgb(r, g, b) => vt100::Color::Rgb(r, g, b),
        named_color => match crate::tui::theme::BASIC
            .iter()
            .position(|c| *c == named_color)
        {
            Some(i) => vt100::Color::Idx(i as u8),
            None => panic!("no emulator colour for {named_color:?}"),
        },
    }
}
