//! Entering and leaving the UI's terminal mode: raw mode, bracketed paste,
//! (where the terminal supports it) unambiguous key reports so Shift+Enter
//! can be told apart and, in full-screen mode, the alternate screen and
//! mouse reporting (regular mode, [`TuiMode::Regular`], leaves the mouse and
//! the scrollback to the terminal).
//! The terminal is restored when the UI ends, when [`Tui`] is dropped and
//! when the process panics, and handed back for a while to suspend makai
//! (Ctrl+Z) or to edit the prompt in an external editor (Ctrl+G).

use std::future::Future;
use std::io::{BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute};
use ratatui::layout::Size;

use super::app_state::UiState;
use super::images::{ImageOutput, InlineImage};
use super::regular::ScrollbackScreen;
use super::render;
use super::screen::Screen;

/// True while the terminal is in UI mode (the panic hook restores it then).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// True while the full-screen UI holds the terminal (nothing else may
/// write to it then: a line on standard error would tear the screen).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// True while regular mode holds the terminal (no alternate screen, no
/// mouse reporting to undo).
static REGULAR: AtomicBool = AtomicBool::new(false);

/// True when keyboard enhancement flags were pushed.
static ENHANCED: AtomicBool = AtomicBool::new(false);

/// True while the terminal sends unambiguous key reports (the kitty
/// keyboard protocol's flags were pushed): Escape and Alt+key arrive as
/// sequences of their own.
pub fn keyboard_enhanced() -> bool {
    ENHANCED.load(Ordering::SeqCst)
}
static HOOK: Once = Once::new();

/// Puts the terminal back: best effort, never fails.
fn restore_terminal() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        // Restoring the terminal is best effort: each step is tried even if one fails.
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    if REGULAR.load(Ordering::SeqCst) {
        // Leaving an alternate screen one is not on restores a saved cursor
        // on some terminals: only what regular mode set is undone.
        let _ = execute!(out, DisableBracketedPaste, cursor::Show);
    } else {
        let _ = execute!(
            out,
            DisableBracketedPaste,
            DisableMouseCapture,
            LeaveAlternateScreen,
            cursor::Show
        );
    }
    // As above: best effort, every step tried.
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Installs (once) a panic hook that restores the terminal before the
/// default hook prints the panic.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = Arc::new(std::panic::take_hook());
        std::panic::set_hook(Box::new(move |info| {
            // A panic `panic_guard::catch` turns into a value leaves the
            // terminal and the screen as they are.
            if crate::panic_guard::catching() {
                tracing::debug!("caught: {info}");
                return;
            }
            restore_terminal();
            previous(info);
        }));
    });
}

/// Raw mode, bracketed paste, where the terminal supports them unambiguous
/// key reports, and in full-screen mode the alternate screen and mouse
/// reporting.
fn setup_terminal(mode: TuiMode) -> std::io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    REGULAR.store(mode == TuiMode::Regular, Ordering::SeqCst);
    let mut out = std::io::stdout();
    let entered = match mode {
        TuiMode::Fullscreen => execute!(
            out,
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste
        ),
        TuiMode::Regular => execute!(out, EnableBracketedPaste),
    };
    if let Err(e) = entered {
        restore_terminal();
        return Err(e);
    }
    if crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false)
        && execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .is_ok()
    {
        ENHANCED.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// pi's `tuiMode`: how the interactive UI uses the terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TuiMode {
    /// The alternate screen, the conversation scrolled inside it (pi's
    /// default).
    #[default]
    Fullscreen,
    /// The normal screen: the conversation goes into the terminal's
    /// scrollback ([`super::regular`]).
    Regular,
}

impl TuiMode {
    /// `--tui-mode`'s value.
    pub fn parse(s: &str) -> Result<TuiMode, String> {
        match s {
            "fullscreen" => Ok(TuiMode::Fullscreen),
            "regular" => Ok(TuiMode::Regular),
            other => Err(format!(
                "'{other}' is not a terminal mode; use fullscreen or regular"
            )),
        }
    }

    /// The setting's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            TuiMode::Fullscreen => "fullscreen",
            TuiMode::Regular => "regular",
        }
    }

    /// The mode a run uses: `--tui-mode`, else the `tuiMode` setting, else
    /// full-screen (pi's rule: a value that is not `"regular"` is
    /// full-screen).
    pub fn of(flag: Option<TuiMode>, settings: &makai_coding::settings::Settings) -> TuiMode {
        flag.unwrap_or_else(|| match settings.extra.get("tuiMode") {
            Some(serde_json::Value::String(s)) if s == "regular" => TuiMode::Regular,
            _ => TuiMode::Fullscreen,
        })
    }
}

/// pi's `terminal.clearOnShrink` (else `PI_CLEAR_ON_SHRINK=1`): regular
/// mode writes everything again when its rows shrink, so no blank rows stay
/// under the footer.
pub fn clear_on_shrink(
    settings: &makai_coding::settings::Settings,
    var: impl Fn(&str) -> Option<String>,
) -> bool {
    let set = settings
        .extra
        .get("terminal")
        .and_then(|t| t.get("clearOnShrink"))
        .and_then(serde_json::Value::as_bool);
    set.unwrap_or_else(|| var("PI_CLEAR_ON_SHRINK").as_deref() == Some("1"))
}

/// Where the UI draws.
enum Surface {
    Fullscreen(Screen<BufWriter<Stdout>>),
    Regular(ScrollbackScreen<BufWriter<Stdout>>),
}

impl Surface {
    /// A surface on the terminal just set up for `mode`.
    fn new(mode: TuiMode, clear_on_shrink: bool) -> Surface {
        let out = BufWriter::with_capacity(FRAME_BUFFER, std::io::stdout());
        match mode {
            TuiMode::Fullscreen => {
                let mut screen = Screen::new(out);
                // A failed clear leaves old text on screen; the next draw
                // repaints it.
                let _ = screen.clear();
                Surface::Fullscreen(screen)
            }
            TuiMode::Regular => {
                // The UI starts on the cursor's row, under what the shell
                // wrote. Unknown (no answer), it is taken as the top row:
                // the UI then thinks fewer of its rows are on screen than
                // are, which costs a repaint at most, never a wrong one.
                let row = cursor::position().map_or(0, |(_, row)| row);
                Surface::Regular(ScrollbackScreen::new(out, row, clear_on_shrink))
            }
        }
    }
}

/// The terminal in UI mode.
pub struct Tui {
    surface: Surface,
    clear_on_shrink: bool,
    /// The screen was cleared since images were last sent (the UI came
    /// back from the shell or the editor).
    cleared: bool,
}

/// Room for a frame's output. A frame is many small commands (a cursor move,
/// colours, a few cells) flushed at its end; through a buffer they leave in
/// one write, where `Stdout` alone takes its lock and looks for a line end at
/// each.
const FRAME_BUFFER: usize = 64 * 1024;

impl Tui {
    /// Enters UI mode. `clear_on_shrink`: see [`clear_on_shrink`].
    pub fn enter(mode: TuiMode, clear_on_shrink: bool) -> std::io::Result<Tui> {
        install_panic_hook();
        setup_terminal(mode)?;
        let surface = Surface::new(mode, clear_on_shrink);
        Ok(Tui {
            surface,
            clear_on_shrink,
            cleared: true,
        })
    }

    /// The mode the UI draws in.
    pub fn mode(&self) -> TuiMode {
        match self.surface {
            Surface::Fullscreen(_) => TuiMode::Fullscreen,
            Surface::Regular(_) => TuiMode::Regular,
        }
    }

    /// Goes on in `mode`: the terminal is left and entered again; the next
    /// frame draws everything (regular mode under what the terminal shows).
    pub fn switch(&mut self, mode: TuiMode) -> std::io::Result<()> {
        if mode == self.mode() {
            return Ok(());
        }
        let left = self.mode();
        self.restore();
        if left == TuiMode::Regular {
            // What regular mode wrote (on the screen and in the scrollback)
            // goes: the exit transcript writes the whole conversation,
            // which would show it twice. The same clear as regular mode's
            // own rewrites.
            let mut out = std::io::stdout();
            let _ = out
                .write_all(b"\x1b[H\x1b[2J\x1b[3J")
                .and_then(|()| out.flush());
        }
        setup_terminal(mode)?;
        self.surface = Surface::new(mode, self.clear_on_shrink);
        if let Surface::Regular(screen) = &mut self.surface {
            // What regular mode wrote before is on the normal screen still:
            // written again from a clear terminal rather than twice.
            screen.repaint();
        }
        self.cleared = true;
        Ok(())
    }

    /// Hands the terminal back for a while: leaves UI mode, runs `away`, then
    /// enters UI mode again and repaints everything.
    pub async fn away<T>(&mut self, away: impl Future<Output = T>) -> std::io::Result<T> {
        self.restore();
        let out = away.await;
        setup_terminal(self.mode())?;
        match &mut self.surface {
            Surface::Fullscreen(screen) => screen.clear()?,
            Surface::Regular(screen) => screen.repaint(),
        }
        self.cleared = true;
        Ok(out)
    }

    /// Suspends makai like a shell's Ctrl+Z (SIGTSTP), with the terminal
    /// restored; when the shell resumes it (`fg`), the UI comes back. In a
    /// process group without job control the signal is discarded by the
    /// kernel and the UI comes straight back.
    pub async fn suspend(&mut self) -> std::io::Result<()> {
        self.away(async {
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP).map_err(std::io::Error::from)
        })
        .await?
    }

    /// Lets the user edit `text` in their editor (`configured`, the
    /// `externalEditor` setting, else `$VISUAL`, else `$EDITOR`, else `nano`;
    /// run through `sh` so `code --wait` works) and returns what they saved,
    /// without the final newline editors add.
    pub async fn edit_externally(
        &mut self,
        text: &str,
        configured: Option<&str>,
    ) -> std::io::Result<String> {
        let file = tempfile::Builder::new()
            .prefix("makai-prompt-")
            .suffix(".md")
            .tempfile()?;
        std::fs::write(file.path(), text)?;
        let editor = configured
            .map(str::to_string)
            .into_iter()
            .chain(
                ["VISUAL", "EDITOR"]
                    .iter()
                    .filter_map(|v| std::env::var(v).ok()),
            )
            .find(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "nano".to_string());
        let status = self
            .away(
                tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!("{editor} \"$1\""))
                    .arg("sh")
                    .arg(file.path())
                    .status(),
            )
            .await??;
        if !status.success() {
            return Err(std::io::Error::other(format!(
                "the editor `{editor}` ended with {status}; the prompt is unchanged"
            )));
        }
        let edited = std::fs::read_to_string(file.path())?;
        Ok(edited
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&edited)
            .to_string())
    }

    /// Draws a frame of the UI.
    pub fn draw(&mut self, st: &mut UiState) -> std::io::Result<()> {
        let (width, height) = crossterm::terminal::size()?;
        let size = Size { width, height };
        match &mut self.surface {
            Surface::Fullscreen(screen) => screen.draw(size, |f| render::draw(f, st)),
            Surface::Regular(screen) => {
                render::draw_regular(st, size, screen)?;
                // The frame cleared the scrollback: kitty's images are sent
                // again (its placeholders show them once they come).
                if screen.take_rewritten()
                    && let Some(output) = st.image_output.as_mut()
                {
                    output.uploads.forget();
                    let bytes = output.uploads.pending(st.transcript.images(), output.tmux);
                    if !bytes.is_empty() {
                        screen.write_raw(&bytes)?;
                        screen.flush()?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Sends the terminal those of `images` it does not have, ahead of the
    /// next frame: all of them again when the screen was cleared or is
    /// about to be (a new size).
    pub fn send_images(
        &mut self,
        output: &mut ImageOutput,
        images: &[Arc<InlineImage>],
    ) -> std::io::Result<()> {
        let cleared = std::mem::take(&mut self.cleared);
        match &mut self.surface {
            Surface::Fullscreen(screen) => {
                let (width, height) = crossterm::terminal::size()?;
                let resized = screen.fit(Size { width, height })?;
                if resized || cleared {
                    output.uploads.forget();
                }
                let bytes = output.uploads.pending(images, output.tmux);
                if bytes.is_empty() {
                    return Ok(());
                }
                screen.write_raw(&bytes)
            }
            Surface::Regular(screen) => {
                if cleared {
                    output.uploads.forget();
                }
                let bytes = output.uploads.pending(images, output.tmux);
                if bytes.is_empty() {
                    return Ok(());
                }
                screen.write_raw(&bytes)
            }
        }
    }

    /// Deletes the images sent to the terminal (leaving full-screen mode,
    /// or any mode for another: regular mode's scrollback keeps its images
    /// when the UI ends).
    pub fn delete_images(&mut self, output: &mut ImageOutput) {
        let bytes = output.uploads.deletions(output.tmux);
        if bytes.is_empty() {
            return;
        }
        // Best effort: a terminal that cannot be written to keeps them.
        let _ = match &mut self.surface {
            Surface::Fullscreen(screen) => screen.write_raw(&bytes).and_then(|()| screen.flush()),
            Surface::Regular(screen) => screen.write_raw(&bytes).and_then(|()| screen.flush()),
        };
    }

    /// Leaves UI mode (also done on drop). Regular mode erases its live rows
    /// first: the conversation stays, and what comes next is written under it.
    pub fn restore(&mut self) {
        if is_active() {
            // Best effort, as restoring the terminal is.
            let _ = match &mut self.surface {
                Surface::Fullscreen(screen) => screen.show_cursor(),
                Surface::Regular(screen) => screen.hand_off(),
            };
        }
        restore_terminal();
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_coding::settings::Settings;

    fn with(key: &str, value: serde_json::Value) -> Settings {
        let mut settings = Settings::default();
        settings.extra.insert(key.into(), value);
        settings
    }

    #[test]
    fn the_flag_wins_over_the_setting_and_only_regular_is_regular() {
        let regular = with("tuiMode", serde_json::json!("regular"));
        assert_eq!(TuiMode::of(None, &regular), TuiMode::Regular);
        assert_eq!(
            TuiMode::of(Some(TuiMode::Fullscreen), &regular),
            TuiMode::Fullscreen
        );
        assert_eq!(TuiMode::of(None, &Settings::default()), TuiMode::Fullscreen);
        for other in [serde_json::json!("inline"), serde_json::json!(true)] {
            assert_eq!(
                TuiMode::of(None, &with("tuiMode", other)),
                TuiMode::Fullscreen
            );
        }
        let full = with("tuiMode", serde_json::json!("fullscreen"));
        assert_eq!(TuiMode::of(Some(TuiMode::Regular), &full), TuiMode::Regular);
        assert_eq!(TuiMode::parse("regular"), Ok(TuiMode::Regular));
        assert!(TuiMode::parse("Regular").is_err());
    }

    #[test]
    fn clear_on_shrink_is_the_setting_else_pi_s_variable() {
        let var = |value: Option<&'static str>| {
            move |name: &str| {
                (name == "PI_CLEAR_ON_SHRINK")
                    .then_some(value)
                    .flatten()
                    .map(String::from)
            }
        };
        let none = Settings::default();
        assert!(!clear_on_shrink(&none, var(None)));
        assert!(clear_on_shrink(&none, var(Some("1"))));
        assert!(!clear_on_shrink(&none, var(Some("true"))));
        let off = with("terminal", serde_json::json!({"clearOnShrink": false}));
        assert!(!clear_on_shrink(&off, var(Some("1"))));
        let on = with("terminal", serde_json::json!({"clearOnShrink": true}));
        assert!(clear_on_shrink(&on, var(None)));
    }
}
