//! Images drawn in the conversation, as pi draws them (its
//! `terminal.showImages`, `terminal.images`, `terminal.imageWidthCells` and
//! `PI_IMAGE_PROTOCOL`): the images of user messages and tool results, in
//! terminals that speak kitty's graphics protocol with Unicode placeholders
//! (kitty, Ghostty; [`kitty`]) or iTerm2's inline images (iTerm2, WezTerm;
//! [`iterm2`]). Elsewhere, and in the transcript left on the terminal at
//! exit, an image is the note "[N image(s)]".
//!
//! With kitty's protocol an image is sent to the terminal once
//! ([`Uploads`]), before the frame that first needs it, and again after the
//! screen was cleared; the conversation's rows hold its placeholder cells
//! ([`InlineImage::lines`]). With iTerm2's the rows are blank cells and the
//! screen draws the image over them whenever the whole box is on screen and
//! the terminal does not show it there already (`screen::placed`).

pub mod iterm2;
pub mod kitty;

use std::collections::HashSet;
use std::io::Cursor;
use std::sync::Arc;

use base64::Engine;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// pi's default `terminal.imageWidthCells`.
pub const DEFAULT_WIDTH_CELLS: u16 = 60;
/// The most rows an image takes.
const MAX_ROWS: u16 = 40;

/// How a terminal is sent images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// kitty's graphics protocol with Unicode placeholders.
    Kitty,
    /// iTerm2's inline images.
    Iterm2,
}

/// Whether and how the conversation draws images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageChoice {
    /// Drawn with `protocol`, at most `width_cells` columns wide; `tmux`:
    /// makai runs inside tmux, which must pass the images on.
    Drawn {
        /// The terminal's protocol.
        protocol: Protocol,
        /// The widest an image is drawn, in cells.
        width_cells: u16,
        /// Inside tmux.
        tmux: bool,
    },
    /// Shown as a note; `why`, when the user asked for a protocol makai does
    /// not draw with.
    Text {
        /// What to tell the user.
        why: Option<String>,
    },
}

impl ImageChoice {
    /// pi's rules: `terminal.showImages: false` shows none; `terminal.images`
    /// (`"kitty"`, `"iterm2"`, `false`, `"auto"`), else `PI_IMAGE_PROTOCOL`
    /// (`kitty`, `iterm2`, `none`, `auto`), else the terminal's own word
    /// (`var` reads the environment), not through tmux or screen, where only
    /// a forced choice draws them: kitty's protocol in kitty
    /// (`TERM=xterm-kitty`, `TERM_PROGRAM=kitty`, `KITTY_WINDOW_ID`) and
    /// Ghostty (`TERM_PROGRAM=ghostty`, `TERM` naming it,
    /// `GHOSTTY_RESOURCES_DIR`); iTerm2's in iTerm2 (`ITERM_SESSION_ID`,
    /// `TERM_PROGRAM=iTerm.app`) and in WezTerm (`WEZTERM_PANE`,
    /// `TERM_PROGRAM=WezTerm`), which pi sends kitty's placements but which
    /// draws no Unicode placeholders.
    pub fn from_settings(
        terminal: Option<&serde_json::Value>,
        var: impl Fn(&str) -> Option<String>,
    ) -> ImageChoice {
        let setting = |key: &str| terminal.and_then(|t| t.get(key));
        if setting("showImages").and_then(serde_json::Value::as_bool) == Some(false) {
            return ImageChoice::Text { why: None };
        }
        let width_cells = setting("imageWidthCells")
            .and_then(serde_json::Value::as_u64)
            .filter(|w| *w > 0)
            .map_or(DEFAULT_WIDTH_CELLS, |w| {
                u16::try_from(w)
                    .unwrap_or(kitty::MAX_CELLS)
                    .min(kitty::MAX_CELLS)
            });
        let tmux = var("TMUX").is_some_and(|v| !v.is_empty());
        let drawn = |protocol| ImageChoice::Drawn {
            protocol,
            width_cells,
            tmux,
        };
        let forced = match setting("images") {
            Some(serde_json::Value::Bool(false)) => Some("none".to_string()),
            Some(serde_json::Value::String(s)) if s != "auto" => Some(s.to_ascii_lowercase()),
            _ => var("PI_IMAGE_PROTOCOL")
                .map(|v| v.trim().to_ascii_lowercase())
                .filter(|v| !v.is_empty() && v != "auto"),
        };
        match forced.as_deref() {
            Some("kitty") => return drawn(Protocol::Kitty),
            Some("iterm2") => return drawn(Protocol::Iterm2),
            Some(_) => return ImageChoice::Text { why: None },
            None => {}
        }
        let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
        let term = var("TERM").unwrap_or_default().to_ascii_lowercase();
        let program = var("TERM_PROGRAM").unwrap_or_default().to_ascii_lowercase();
        if tmux || term.starts_with("screen") || term.starts_with("tmux") {
            return ImageChoice::Text { why: None };
        }
        if term == "xterm-kitty"
            || program == "kitty"
            || set("KITTY_WINDOW_ID")
            || program == "ghostty"
            || term.contains("ghostty")
            || set("GHOSTTY_RESOURCES_DIR")
        {
            drawn(Protocol::Kitty)
        } else if set("ITERM_SESSION_ID")
            || program == "iterm.app"
            || set("WEZTERM_PANE")
            || program == "wezterm"
        {
            drawn(Protocol::Iterm2)
        } else {
            ImageChoice::Text { why: None }
        }
    }
}

/// One image as the conversation draws it: sent as PNG, placed in
/// `columns` x `rows` cells.
pub struct InlineImage {
    /// The terminal's id of it (24 bits; also names it in the screen's
    /// list of images drawn over cells).
    pub id: u32,
    /// Cells across.
    pub columns: u16,
    /// Cells down.
    pub rows: u16,
    /// How it is sent.
    pub protocol: Protocol,
    /// The PNG, base64.
    png: String,
}

impl std::fmt::Debug for InlineImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineImage")
            .field("id", &self.id)
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl PartialEq for InlineImage {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl InlineImage {
    /// The rows it takes in the conversation: its placeholder cells
    /// (kitty), or blank cells the screen draws it over (iTerm2).
    pub fn lines(&self) -> Vec<Line<'static>> {
        match self.protocol {
            Protocol::Kitty => {
                let (r, g, b) = kitty::id_colour(self.id);
                let style = Style::default().fg(Color::Rgb(r, g, b));
                (0..self.rows)
                    .map(|row| {
                        Line::from(Span::styled(
                            kitty::placeholder_row(row, self.columns),
                            style,
                        ))
                    })
                    .collect()
            }
            Protocol::Iterm2 => {
                let blank = " ".repeat(usize::from(self.columns));
                (0..self.rows).map(|_| Line::from(blank.clone())).collect()
            }
        }
    }

    /// What sends it to the terminal ahead of the frames (kitty; nothing
    /// for iTerm2, whose image is drawn where it shows).
    pub fn transmission(&self, tmux: bool) -> Vec<u8> {
        match self.protocol {
            Protocol::Kitty => {
                kitty::transmission(self.id, self.columns, self.rows, &self.png, tmux)
            }
            Protocol::Iterm2 => Vec::new(),
        }
    }

    /// What draws it at the cursor (iTerm2's protocol).
    pub fn drawing(&self, tmux: bool) -> Vec<u8> {
        let padding = self.png.bytes().rev().take_while(|b| *b == b'=').count();
        let bytes = (self.png.len() / 4 * 3).saturating_sub(padding);
        iterm2::sequence(self.columns, self.rows, &self.png, bytes, tmux)
    }
}

/// Makes [`InlineImage`]s for one conversation: the ids, the widest an
/// image is drawn, and the shape of a cell.
#[derive(Debug)]
pub struct ImageMaker {
    next_id: u32,
    protocol: Protocol,
    width_cells: u16,
    /// A cell's width and height in pixels.
    cell: (u32, u32),
}

impl ImageMaker {
    /// Images for `protocol` at most `width_cells` wide, in cells of `cell`
    /// pixels (`None`: the terminal does not say; a cell is taken as 10 x 20).
    pub fn new(protocol: Protocol, width_cells: u16, cell: Option<(u32, u32)>) -> ImageMaker {
        // Ids start apart for each process, so that two makai in one
        // terminal window seldom name each other's images.
        let start = ((std::process::id() & 0xFFFF) << 8).max(1);
        ImageMaker {
            next_id: start,
            protocol,
            width_cells: width_cells.clamp(1, kitty::MAX_CELLS),
            cell: cell.filter(|(w, h)| *w > 0 && *h > 0).unwrap_or((10, 20)),
        }
    }

    /// The image of `data` (base64 of a PNG, JPEG, GIF or WebP file, as
    /// `mime_type` says); `None` when it cannot be read.
    pub fn make(&mut self, mime_type: &str, data: &str) -> Option<Arc<InlineImage>> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .ok()?;
        let reader = image::ImageReader::new(Cursor::new(&bytes))
            .with_guessed_format()
            .ok()?;
        let is_png = reader.format() == Some(image::ImageFormat::Png);
        let (width, height) = reader.into_dimensions().ok()?;
        if width == 0 || height == 0 {
            return None;
        }
        // Both protocols are sent PNG; other formats are converted once.
        let png = if is_png && mime_type.eq_ignore_ascii_case("image/png") {
            data.trim().to_string()
        } else {
            let decoded = image::load_from_memory(&bytes).ok()?;
            let mut out = Cursor::new(Vec::new());
            decoded.write_to(&mut out, image::ImageFormat::Png).ok()?;
            base64::engine::general_purpose::STANDARD.encode(out.into_inner())
        };
        let (cell_w, cell_h) = self.cell;
        let natural = width.div_ceil(cell_w).max(1);
        let columns = u16::try_from(natural)
            .unwrap_or(u16::MAX)
            .min(self.width_cells);
        let rows = (u64::from(columns) * u64::from(cell_w) * u64::from(height))
            .div_ceil(u64::from(width) * u64::from(cell_h))
            .clamp(1, u64::from(MAX_ROWS.min(kitty::MAX_CELLS)));
        let id = self.next_id;
        self.next_id = if self.next_id >= 0x00FF_FFFF {
            1
        } else {
            self.next_id + 1
        };
        Some(Arc::new(InlineImage {
            id,
            columns,
            rows: u16::try_from(rows).unwrap_or(MAX_ROWS),
            protocol: self.protocol,
            png,
        }))
    }
}

/// The images of a UI that draws them: what the terminal was sent, and
/// whether it is reached through tmux.
#[derive(Debug)]
pub struct ImageOutput {
    /// How they are sent.
    pub protocol: Protocol,
    /// What the terminal has (kitty's protocol).
    pub uploads: Uploads,
    /// Inside tmux: images are wrapped for tmux to pass on.
    pub tmux: bool,
}

/// Asks the tmux makai runs in to pass images on to the terminal (its
/// pane's `allow-passthrough` option); best effort: a tmux that refuses
/// leaves images undrawn, as before.
pub fn let_tmux_pass_images() {
    let _ = std::process::Command::new("tmux")
        .args(["set-option", "-p", "allow-passthrough", "on"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// The size of a cell in pixels, as the terminal says it (`None`: it does not).
pub fn cell_pixels() -> Option<(u32, u32)> {
    let size = crossterm::terminal::window_size().ok()?;
    if size.columns == 0 || size.rows == 0 || size.width == 0 || size.height == 0 {
        return None;
    }
    Some((
        u32::from(size.width) / u32::from(size.columns),
        u32::from(size.height) / u32::from(size.rows),
    ))
}

/// The images the terminal has: each is sent before the first frame that
/// needs it, sent again after the screen was cleared, and deleted when the
/// UI ends.
#[derive(Debug, Default)]
pub struct Uploads {
    sent: HashSet<u32>,
}

impl Uploads {
    /// The bytes sending those of `images` the terminal does not have.
    pub fn pending<'a>(
        &mut self,
        images: impl IntoIterator<Item = &'a Arc<InlineImage>>,
        tmux: bool,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        for image in images {
            if image.protocol == Protocol::Kitty && self.sent.insert(image.id) {
                out.extend(image.transmission(tmux));
            }
        }
        out
    }

    /// The screen was cleared: every image is sent again.
    pub fn forget(&mut self) {
        self.sent.clear();
    }

    /// The bytes deleting every image sent.
    pub fn deletions(&mut self, tmux: bool) -> Vec<u8> {
        let mut ids: Vec<u32> = self.sent.drain().collect();
        ids.sort_unstable();
        ids.into_iter()
            .flat_map(|id| kitty::deletion(id, tmux))
            .collect()
    }
}

/// An image of `width` x `height` pixels for `protocol`, in cells of 10 x
/// 20 pixels (for tests).
#[cfg(test)]
pub(crate) fn test_image(protocol: Protocol, width: u32, height: u32) -> Arc<InlineImage> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb([9, 9, 9]));
    let mut png = Cursor::new(Vec::new());
    let written = image::DynamicImage::ImageRgb8(img).write_to(&mut png, image::ImageFormat::Png);
    assert!(written.is_ok());
    let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
    let made = ImageMaker::new(protocol, 60, Some((10, 20))).make("image/png", &data);
    made.unwrap_or_else(|| panic!("a test image of {width} x {height}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tui::test_vars::vars as env;

    fn kitty(tmux: bool) -> ImageChoice {
        drawn(Protocol::Kitty, tmux)
    }

    fn drawn(protocol: Protocol, tmux: bool) -> ImageChoice {
        ImageChoice::Drawn {
            protocol,
            width_cells: DEFAULT_WIDTH_CELLS,
            tmux,
        }
    }

    #[test]
    fn the_choice_is_the_settings_then_pi_s_variable_then_the_terminal() {
        let text = ImageChoice::Text { why: None };
        assert_eq!(ImageChoice::from_settings(None, env(&[])), text);
        assert_eq!(
            ImageChoice::from_settings(None, env(&[("TERM", "xterm-kitty")])),
            kitty(false)
        );
        assert_eq!(
            ImageChoice::from_settings(None, env(&[("TERM_PROGRAM", "ghostty")])),
            kitty(false)
        );
        // Through tmux only when forced.
        let in_tmux = &[("TERM", "xterm-kitty"), ("TMUX", "/tmp/tmux-1/default,1,0")];
        assert_eq!(ImageChoice::from_settings(None, env(in_tmux)), text);
        let forced = &[("TMUX", "/tmp/t,1,0"), ("PI_IMAGE_PROTOCOL", "kitty")];
        assert_eq!(ImageChoice::from_settings(None, env(forced)), kitty(true));
        let off = serde_json::json!({"images": false});
        assert_eq!(ImageChoice::from_settings(Some(&off), env(forced)), text);
        let hidden = serde_json::json!({"showImages": false, "images": "kitty"});
        assert_eq!(ImageChoice::from_settings(Some(&hidden), env(&[])), text);
        let wide = serde_json::json!({"images": "kitty", "imageWidthCells": 30});
        assert_eq!(
            ImageChoice::from_settings(Some(&wide), env(&[])),
            ImageChoice::Drawn {
                protocol: Protocol::Kitty,
                width_cells: 30,
                tmux: false
            }
        );
        // pi's other names for kitty and Ghostty.
        for vars in [
            [("TERM_PROGRAM", "kitty")],
            [("KITTY_WINDOW_ID", "3")],
            [("GHOSTTY_RESOURCES_DIR", "/usr/share/ghostty")],
            [("TERM", "xterm-ghostty")],
        ] {
            assert_eq!(ImageChoice::from_settings(None, env(&vars)), kitty(false));
        }
        // iTerm2's protocol: forced, in iTerm2, in WezTerm.
        let iterm2 = drawn(Protocol::Iterm2, false);
        assert_eq!(
            ImageChoice::from_settings(None, env(&[("PI_IMAGE_PROTOCOL", "iterm2")])),
            iterm2
        );
        let setting = serde_json::json!({"images": "iterm2"});
        assert_eq!(ImageChoice::from_settings(Some(&setting), env(&[])), iterm2);
        for vars in [
            [("TERM_PROGRAM", "iTerm.app")],
            [("ITERM_SESSION_ID", "w0t0p0:1234")],
            [("TERM_PROGRAM", "WezTerm")],
            [("WEZTERM_PANE", "0")],
        ] {
            assert_eq!(ImageChoice::from_settings(None, env(&vars)), iterm2);
        }
        let in_tmux = &[("TERM_PROGRAM", "iTerm.app"), ("TMUX", "/tmp/t,1,0")];
        assert_eq!(ImageChoice::from_settings(None, env(in_tmux)), text);
        let forced = &[("TMUX", "/tmp/t,1,0"), ("PI_IMAGE_PROTOCOL", "iterm2")];
        assert_eq!(
            ImageChoice::from_settings(None, env(forced)),
            drawn(Protocol::Iterm2, true)
        );
        let unknown = &[("PI_IMAGE_PROTOCOL", "sixel"), ("TERM", "xterm-kitty")];
        assert_eq!(ImageChoice::from_settings(None, env(unknown)), text);
    }

    fn png(width: u32, height: u32) -> String {
        let img = image::RgbImage::from_pixel(width, height, image::Rgb([200, 10, 10]));
        let mut out = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(out.into_inner())
    }

    #[test]
    fn an_image_takes_the_cells_its_shape_needs_up_to_the_width() {
        let mut maker = ImageMaker::new(Protocol::Kitty, 60, Some((10, 20)));
        // 200 x 100 pixels: 20 cells across, 5 rows of 20 pixels.
        let small = maker.make("image/png", &png(200, 100)).unwrap();
        assert_eq!((small.columns, small.rows), (20, 5));
        // 2000 x 1000: 60 cells at most, rows in proportion.
        let wide = maker.make("image/png", &png(2000, 1000)).unwrap();
        assert_eq!((wide.columns, wide.rows), (60, 15));
        assert_ne!(small.id, wide.id);
        let lines = small.lines();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0].width(), 20, "one cell per placeholder");
        assert!(maker.make("image/png", "not base64!").is_none());
        assert!(
            maker.make("image/png", "aGVsbG8=").is_none(),
            "not an image"
        );
    }

    #[test]
    fn an_iterm2_image_is_blank_rows_drawn_where_it_shows_and_never_uploaded() {
        let mut maker = ImageMaker::new(Protocol::Iterm2, 60, Some((10, 20)));
        let data = png(200, 100);
        let image = maker.make("image/png", &data).unwrap();
        assert_eq!((image.columns, image.rows), (20, 5));
        let lines = image.lines();
        assert_eq!(lines.len(), 5);
        assert!(lines.iter().all(|l| l.to_string() == " ".repeat(20)));
        assert!(image.transmission(false).is_empty());
        let mut uploads = Uploads::default();
        assert!(uploads.pending([&image], false).is_empty());
        assert!(uploads.deletions(false).is_empty());
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&data)
            .unwrap()
            .len();
        let drawing = String::from_utf8(image.drawing(false)).unwrap();
        assert_eq!(
            drawing,
            format!(
                "\x1b]1337;File=inline=1;size={bytes};width=20;height=5;preserveAspectRatio=1:{data}\x07"
            )
        );
    }

    #[test]
    fn a_jpeg_is_sent_as_png() {
        let img = image::RgbImage::from_pixel(30, 30, image::Rgb([1, 2, 3]));
        let mut jpeg = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut jpeg, image::ImageFormat::Jpeg)
            .unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(jpeg.into_inner());
        let mut maker = ImageMaker::new(Protocol::Kitty, 60, None);
        let image = maker.make("image/jpeg", &data).unwrap();
        let sent = String::from_utf8(image.transmission(false)).unwrap();
        let payload = sent.split(';').nth(1).unwrap().trim_end_matches("\x1b\\");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(payload)
            .unwrap();
        assert!(bytes.starts_with(b"\x89PNG"));
    }

    #[test]
    fn uploads_send_each_image_once_until_the_screen_is_cleared() {
        let mut maker = ImageMaker::new(Protocol::Kitty, 60, None);
        let a = maker.make("image/png", &png(10, 10)).unwrap();
        let b = maker.make("image/png", &png(10, 10)).unwrap();
        let mut uploads = Uploads::default();
        let first = uploads.pending([&a], false);
        assert!(!first.is_empty());
        assert!(uploads.pending([&a], false).is_empty());
        assert!(!uploads.pending([&a, &b], false).is_empty());
        uploads.forget();
        assert_eq!(uploads.pending([&a], false), first);
        let deleted = String::from_utf8(uploads.deletions(false)).unwrap();
        assert_eq!(deleted, format!("\x1b_Ga=d,d=I,i={},q=2\x1b\\", a.id));
    }
}
