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
//! - [`search`]: finding text in the conversation (Ctrl+Shift+F).
//! - [`screen`]: frames on the terminal, scrolled by the terminal where the
//!   conversation moved.
//! - [`exit_output`]: what the terminal keeps when the UI ends.
//! - [`terminal`]: entering and restoring the terminal (also on panic),
//!   suspending (Ctrl+Z) and handing it to an external editor (Ctrl+G).

pub mod app_state;
pub mod approval;
pub mod backend;
pub mod bang;
mod bug;
pub mod cache_notices;
pub mod clipboard;
pub mod commands;
pub mod config_commands;
pub mod event_loop;
pub mod exit_output;
pub mod hangup;
pub mod images;
pub mod input;
pub mod keymap;
pub mod links;
pub mod llama;
pub mod login;
pub mod lone_escape;
pub mod markdown;
pub mod pickers;
pub mod program_status;
pub mod progress;
pub mod regular;
pub mod render;
pub mod resume;
mod resume_order;
pub mod scoped_models;
pub mod screen;
pub mod scrollbar;
pub mod search;
pub mod selection;
pub mod selectors;
pub mod split_sequence;
pub mod summary;
pub mod terminal;
pub mod terminal_title;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod test_vars;
pub mod theme;
pub mod transcript;
pub mod tree_fold;
pub mod tree_move;
pub mod wheel;
pub mod wrap;
pub mod wrap_stream;

use crate::app::AppSession;
use crate::modes::print::Prompt;
use transcript::Level;

/// Builds the session the UI switches to (`/import`, `/resume` of another
/// directory's session). It runs with the terminal handed back, so what
/// building says (and pi's project trust question) reaches the user.
pub use crate::session_cwd::Reopen;

/// The interactive UI's [`Reopen`]: the session is built in its directory
/// as [`crate::session_cwd::reopener`] builds it (the trust question asked
/// first), then what the UI draws with is chosen for it as at start: the
/// theme (its project's themes and `theme` setting; `--use-theme` still
/// wins) and the code blocks' indent. What the user should hear of the
/// themes goes with the session's warnings, which the UI shows.
pub fn reopener(args: crate::cli::Args) -> Reopen {
    let build = crate::session_cwd::reopener(args.clone(), true);
    Box::new(move |session, cwd| {
        let built = build(session, cwd);
        let args = args.clone();
        Box::pin(async move {
            let app = built.await?;
            for warning in theme::choose_at_start(&app, &args) {
                app.warn(warning);
            }
            markdown::set_code_block_indent(&app.settings());
            markdown::set_mermaid_mode(&app.settings());
            Ok(app)
        })
    })
}

/// Runs the interactive UI until the user leaves; returns the exit code.
/// `initial` prompts (from the command line) are sent one run after another.
/// A session of another directory the user opens is built by `reopen` and
/// the UI goes on with it (the previous one is stopped).
/// `warnings` (the theme's problems, say) are shown when the UI opens.
/// `pick_session`: the UI opens with the `/resume` picker (`--resume`);
/// Esc in it ends the run.
pub async fn run(
    app: AppSession,
    initial: Vec<Prompt>,
    warnings: Vec<String>,
    reopen: Reopen,
    pick_session: bool,
    mode: Option<terminal::TuiMode>,
) -> i32 {
    let mode = terminal::TuiMode::of(mode, &app.settings());
    let clear_on_shrink =
        terminal::clear_on_shrink(&app.settings(), |name| std::env::var(name).ok());
    let mut tui = match terminal::Tui::enter(mode, clear_on_shrink) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "makai: cannot start the terminal UI: {e}; use -p for print mode or --mode rpc/json"
            );
            return crate::error::EXIT_FAILED;
        }
    };
    let mut app = app;
    let mut initial = initial;
    let mut pick_session = pick_session;
    let mut notices: Vec<(Level, String)> =
        warnings.into_iter().map(|w| (Level::Warning, w)).collect();
    loop {
        app.set_full_screen(true);
        let (code, mut st) = event_loop::run(
            &mut tui,
            &app,
            std::mem::take(&mut initial),
            notices,
            std::mem::take(&mut pick_session),
        )
        .await;
        notices = Vec::new();
        if let Some((session, cwd, done)) = st.reopen.take() {
            app.set_full_screen(false);
            let built = tui
                .away(async {
                    println!(
                        "makai: opening {} in its working directory, {}",
                        session.display(),
                        cwd.display()
                    );
                    reopen(session.clone(), cwd.clone()).await
                })
                .await;
            match built {
                Ok(Ok(next)) => {
                    app.abort().await;
                    app.shutdown_mcp().await;
                    notices.push((
                        Level::Info,
                        format!(
                            "{done} session {} from {}; it runs in its working directory, {}.",
                            next.session_id(),
                            session.display(),
                            cwd.display()
                        ),
                    ));
                    app = next;
                }
                Ok(Err(e)) => notices.push((
                    Level::Error,
                    format!("Cannot open {}: {e}", session.display()),
                )),
                Err(e) => {
                    eprintln!("makai: cannot start the terminal UI again: {e}");
                    return crate::error::EXIT_FAILED;
                }
            }
            continue;
        }
        // The mode the UI ended in (`/settings` may have switched it).
        let ended_in = tui.mode();
        tui.restore();
        app.set_full_screen(false);
        leave_output(&app, &mut st, ended_in);
        // The session the UI ended on may not be the one it started with.
        app.shutdown_mcp().await;
        return code;
    }
}

/// Writes what the terminal keeps of the UI (see [`exit_output`]); a write
/// that fails (a closed terminal) loses nothing but the copy.
fn leave_output(app: &AppSession, st: &mut app_state::UiState, mode: terminal::TuiMode) {
    let said_something = st
        .transcript
        .items()
        .iter()
        .any(|i| matches!(i.kind, transcript::ItemKind::User(_)));
    let hint = (said_something && app.session_location().is_some())
        .then(|| exit_output::resume_hint(&app.session_id()));
    let transcript = match exit_output::ExitOutput::of(&app.settings()) {
        // Regular mode's conversation is in the scrollback already.
        _ if mode == terminal::TuiMode::Regular => false,
        exit_output::ExitOutput::Transcript => true,
        exit_output::ExitOutput::ResumeHint => false,
    };
    let width = crossterm::terminal::size().map_or(80, |(w, _)| w.max(20));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Best effort, as above.
    let _ = if transcript {
        exit_output::write(
            &mut out,
            render::conversation_lines(st, width),
            hint.as_deref(),
        )
    } else {
        exit_output::write(
            &mut out,
            std::iter::empty::<ratatui::text::Line<'static>>(),
            hint.as_deref(),
        )
    };
}
