//! The interactive terminal UI (default when stdout is a terminal).
//!
//! A full-screen view over an [`AppSession`]: the conversation with streaming
//! markdown, thinking (dimmed, collapsible with Ctrl+T), tool calls with their
//! arguments and results (cut short, expanded with Ctrl+O), a spinner while
//! the agent works, queued steering and follow-up messages, a multi-line
//! editor with history and `@` path completion, slash commands, and a footer
//! with the model, thinking level, tokens, cost and context-window use.
//!
//! - [`event_loop`]: the loop over terminal input, session events and a tick.
//! - [`app_state`]: what the UI remembers; [`transcript`]: the conversation items.
//! - [`render`]: drawing; [`markdown`] and [`wrap`]: text to styled rows.
//! - [`input`]: keys, the editor and completion; [`keymap`]: pi's named
//!   actions, their keys and `keybindings.json`; [`commands`] and
//!   [`pickers`]: slash commands and their selectors ([`selectors`]).
//! - [`approval`]: approval questions; [`bang`]: `!command` shell runs;
//!   [`login`]: `/login` sign-ins.
//! - [`screen`]: frames on the terminal, scrolled by the terminal where the
//!   conversation moved.
//! - [`terminal`]: entering and restoring the terminal (also on panic),
//!   suspending (Ctrl+Z) and handing it to an external editor (Ctrl+G).

pub mod app_state;
pub mod approval;
pub mod backend;
pub mod bang;
pub mod clipboard;
pub mod commands;
pub mod config_commands;
pub mod event_loop;
pub mod input;
pub mod keymap;
pub mod login;
pub mod markdown;
pub mod pickers;
pub mod render;
pub mod screen;
pub mod selectors;
pub mod terminal;
#[cfg(test)]
mod test_rng;
pub mod theme;
pub mod transcript;
pub mod wrap;
pub mod wrap_stream;

use crate::app::AppSession;
use crate::modes::print::Prompt;

/// Runs the interactive UI until the user leaves; returns the exit code.
/// `initial` prompts (from the command line) are sent one run after another.
pub async fn run(app: AppSession, initial: Vec<Prompt>, _verbose: bool) -> i32 {
    let mut tui = match terminal::Tui::enter() {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "makai: cannot start the terminal UI: {e}; use -p for print mode or --mode rpc/json"
            );
            return crate::error::EXIT_FAILED;
        }
    };
    app.set_full_screen(true);
    let code = event_loop::run(&mut tui, &app, initial).await;
    tui.restore();
    app.set_full_screen(false);
    code
}
