//! Entering and leaving the full-screen terminal mode: raw mode, the
//! alternate screen, mouse reporting, bracketed paste and (where the terminal
//! supports it) unambiguous key reports so Shift+Enter can be told apart.
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

use super::images::{ImageOutput, InlineImage};
use super::screen::{Frame, Screen};

/// True while the terminal is in UI mode (the panic hook restores it then).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// True while the full-screen UI holds the terminal (nothing else may
/// write to it then: a line on standard error would tear the screen).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// True when keyboard enhancement flags were pushed.
static ENHANCED: AtomicBool = AtomicBool::new(false);
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
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
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
            restore_terminal();
            previous(info);
        }));
    });
}

/// Raw mode, the alternate screen, mouse reporting, bracketed paste and,
/// where the terminal supports them, unambiguous key reports.
fn setup_terminal() -> std::io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    let entered = execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    );
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

/// The terminal in UI mode.
pub struct Tui {
    screen: Screen<BufWriter<Stdout>>,
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
    /// Enters UI mode.
    pub fn enter() -> std::io::Result<Tui> {
        install_panic_hook();
        setup_terminal()?;
        let out = BufWriter::with_capacity(FRAME_BUFFER, std::io::stdout());
        let mut screen = Screen::new(out);
        // A failed clear leaves old text on screen; the next draw repaints it.
        let _ = screen.clear();
        Ok(Tui {
            screen,
            cleared: true,
        })
    }

    /// Hands the terminal back for a while: leaves UI mode, runs `away`, then
    /// enters UI mode again and repaints everything.
    pub async fn away<T>(&mut self, away: impl Future<Output = T>) -> std::io::Result<T> {
        self.restore();
        let out = away.await;
        setup_terminal()?;
        self.screen.clear()?;
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

    /// Draws a frame.
    pub fn draw(&mut self, f: impl FnOnce(&mut Frame<'_>)) -> std::io::Result<()> {
        let (width, height) = crossterm::terminal::size()?;
        self.screen.draw(Size { width, height }, f)
    }

    /// Sends the terminal those of `images` it does not have, ahead of the
    /// next frame: all of them again when the screen was cleared or is
    /// about to be (a new size).
    pub fn send_images(
        &mut self,
        output: &mut ImageOutput,
        images: &[Arc<InlineImage>],
    ) -> std::io::Result<()> {
        let (width, height) = crossterm::terminal::size()?;
        let resized = self.screen.fit(Size { width, height })?;
        if resized || std::mem::take(&mut self.cleared) {
            output.uploads.forget();
        }
        let bytes = output.uploads.pending(images, output.tmux);
        if bytes.is_empty() {
            return Ok(());
        }
        self.screen.write_raw(&bytes)
    }

    /// Deletes the images sent to the terminal (the UI is ending).
    pub fn delete_images(&mut self, output: &mut ImageOutput) {
        let bytes = output.uploads.deletions(output.tmux);
        if !bytes.is_empty() {
            // Best effort: a terminal that cannot be written to keeps them.
            let _ = self.screen.write_raw(&bytes);
            let _ = self.screen.flush();
        }
    }

    /// Leaves UI mode (also done on drop).
    pub fn restore(&mut self) {
        let _ = self.screen.show_cursor();
        restore_terminal();
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.restore();
    }
}
