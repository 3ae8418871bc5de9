//! Keyboard, paste and mouse input: editing, sending (Enter), steering and
//! follow-ups while a run goes, aborting (Esc), leaving (Ctrl+C twice),
//! toggles, scrolling, completion popups and selectors. Which key does what
//! is the [`KeyMap`](super::keymap::KeyMap)'s to say.

pub mod complete;
mod completing;
pub mod editor;
mod mouse;
mod paste_markers;
mod selector;

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

pub use mouse::{copy_selection, on_mouse};

use super::app_state::TerminalRequest;
use super::approval;
use super::commands;
use super::event_loop::{Ctx, UiMsg};
use super::keymap::Action;
use super::pickers;
use super::search::Search;
use super::transcript::Level;
use crate::modes::print::Prompt;
use completing::{completion_key, update_completion};
use makai_coding::settings::DoubleEscapeAction;

/// Two Ctrl+C within this time leave the UI.
const DOUBLE_CTRL_C: Duration = Duration::from_millis(1000);
/// Two Esc within this time in an empty editor open the double-Esc action.
const DOUBLE_ESCAPE: Duration = Duration::from_millis(500);

/// How a message typed while a run goes is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    /// After the current tool calls (Enter).
    Steer,
    /// When the run would end (Alt+Enter).
    FollowUp,
}

/// Handles a key press: an open selector or completion popup takes its
/// keys first, then the actions bound to the key (see [`keymap`]), else a
/// plain character is typed.
pub fn on_key(ctx: &mut Ctx<'_>, key: KeyEvent) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    ctx.st.dirty = true;
    if ctx.st.selector.is_some() {
        selector::selector_key(ctx, key);
        return;
    }
    if ctx.st.search.is_some() {
        search_key(ctx, key);
        return;
    }
    if ctx.st.completion.is_some() && completion_key(ctx, key) {
        return;
    }
    if let Some(forward) = ctx.st.pending_jump.take() {
        if let KeyCode::Char(c) = key.code
            && !ctx.st.editor.jump_to(c, forward)
        {
            ctx.st
                .set_status(Level::Info, format!("No '{c}' to jump to"));
        }
        return;
    }
    for action in ctx.st.keymap.actions(&key) {
        if run_action(ctx, action) {
            return;
        }
    }
    let typing = key.modifiers - KeyModifiers::SHIFT;
    if let KeyCode::Char(c) = key.code
        && typing.is_empty()
        && !is_functional_key(c)
    {
        ctx.st.editor.stop_browsing();
        ctx.st.editor.insert_char(c);
        update_completion(ctx);
    }
}

/// A key the kitty keyboard protocol reports with a code of Unicode's
/// private use area (F13 and up, media and keypad keys a decoder does not
/// name): a key, not a character to type (pi's #11345). Pasted text keeps
/// such characters (a Nerd Font icon).
fn is_functional_key(c: char) -> bool {
    ('\u{E000}'..='\u{F8FF}').contains(&c)
}

/// Keys while the transcript search is open: they edit its query, move
/// between its matches and close it; the conversation still scrolls.
fn search_key(ctx: &mut Ctx<'_>, key: KeyEvent) {
    use Action as A;
    let top = ctx.st.cache.top_row();
    let Some(search) = &mut ctx.st.search else {
        return;
    };
    let mut query = search.query().to_string();
    for action in ctx.st.keymap.actions(&key) {
        match action {
            A::SearchNext => search.next(),
            A::SearchPrevious => search.previous(),
            A::SearchClose | A::Interrupt | A::Clear => ctx.st.search = None,
            A::Search => {}
            A::DeleteCharBackward => {
                query.pop();
                search.set_query(query, top);
            }
            A::DeleteWordBackward => {
                let kept = query.trim_end().rfind(' ').map_or(0, |at| at + 1);
                query.truncate(kept);
                search.set_query(query, top);
            }
            A::DeleteToLineStart => search.set_query(String::new(), top),
            A::ScrollPageUp
            | A::ScrollPageDown
            | A::ScrollHalfPageUp
            | A::ScrollHalfPageDown
            | A::ScrollLineUp
            | A::ScrollLineDown
            | A::ScrollTop
            | A::ScrollBottom
            | A::PromptPrevious
            | A::PromptNext => {
                run_action(ctx, action);
            }
            _ => continue,
        }
        return;
    }
    let typing = key.modifiers - KeyModifiers::SHIFT;
    if let KeyCode::Char(c) = key.code
        && typing.is_empty()
        && !is_functional_key(c)
    {
        query.push(c);
        search.set_query(query, top);
    }
}

/// Does what `action` asks; false when it does not apply now (Ctrl+D in a
/// non-empty editor), so the next action bound to the key gets it.
fn run_action(ctx: &mut Ctx<'_>, action: Action) -> bool {
    use Action as A;
    match action {
        // `/tree`'s own (`selector_key`).
        A::TreeFilterDefault
        | A::TreeFilterNoTools
        | A::TreeFilterUserOnly
        | A::TreeFilterLabeledOnly
        | A::TreeFilterAll
        | A::TreeFilterCycleForward
        | A::TreeFilterCycleBackward
        | A::SelectUp
        | A::SelectDown
        | A::SelectPageUp
        | A::SelectPageDown
        | A::SelectConfirm
        | A::SelectCancel
        | A::ModelsSave
        | A::ModelsEnableAll
        | A::ModelsClearAll
        | A::ModelsToggleProvider
        | A::ModelsReorderUp
        | A::ModelsReorderDown
        | A::ThinkingSave
        | A::TreeEditLabel
        | A::TreeToggleLabelTimestamp
        | A::TreeFoldOrUp
        | A::TreeUnfoldOrDown
        | A::SessionTogglePath
        | A::SessionToggleSort
        | A::SessionToggleNamedFilter
        | A::SessionRename
        | A::SessionDelete
        | A::SessionDeleteNoninvasive => return false,
        A::HistoryPrevious => {
            ctx.st.editor.history_prev();
        }
        A::HistoryNext => {
            ctx.st.editor.history_next();
        }
        A::CursorUp => {
            let e = &mut ctx.st.editor;
            e.end_edit_group();
            let moved = (!e.browsing_history() && e.up())
                || ((e.is_empty() || e.browsing_history()) && e.history_prev());
            if !moved {
                e.home();
            }
        }
        A::CursorDown => {
            let e = &mut ctx.st.editor;
            e.end_edit_group();
            let through_history = e.browsing_history() && e.history_next();
            if !through_history && !e.down() {
                e.end();
            }
        }
        A::CursorLeft => motion(ctx, editor::Editor::left),
        A::CursorRight => motion(ctx, editor::Editor::right),
        A::CursorWordLeft => motion(ctx, editor::Editor::word_left),
        A::CursorWordRight => motion(ctx, editor::Editor::word_right),
        A::CursorLineStart => motion(ctx, editor::Editor::home),
        A::CursorLineEnd => motion(ctx, editor::Editor::end),
        A::JumpForward | A::JumpBackward => {
            ctx.st.pending_jump = Some(action == A::JumpForward);
            ctx.st
                .set_status(Level::Info, "Jump to: type the character");
        }
        A::ScrollPageUp => ctx.st.scroll += page(ctx),
        A::ScrollPageDown => ctx.st.scroll = ctx.st.scroll.saturating_sub(page(ctx)),
        A::ScrollHalfPageUp => ctx.st.scroll += page(ctx).div_ceil(2),
        A::ScrollHalfPageDown => {
            ctx.st.scroll = ctx.st.scroll.saturating_sub(page(ctx).div_ceil(2))
        }
        A::ScrollLineUp => ctx.st.scroll += 1,
        A::ScrollLineDown => ctx.st.scroll = ctx.st.scroll.saturating_sub(1),
        A::ScrollTop => ctx.st.scroll = usize::MAX / 2,
        A::PromptPrevious | A::PromptNext => {
            if let Some(scroll) = ctx.st.cache.prompt_scroll(action == A::PromptNext) {
                ctx.st.scroll = scroll;
            }
        }
        A::Search if ctx.st.regular => ctx.st.set_status(
            Level::Info,
            "Regular mode leaves the conversation to the terminal: use its own search",
        ),
        A::Search => {
            ctx.st.completion = None;
            ctx.st.search = Some(Search::open(ctx.st.cache.top_row()));
        }
        // Only while a search is open (see `search_key`).
        A::SearchNext | A::SearchPrevious | A::SearchClose => return false,
        A::ScrollBottom => ctx.st.scroll = 0,
        A::Exit => {
            if !ctx.st.editor.is_empty() {
                return false;
            }
            ctx.st.quit = true;
        }
        A::DeleteCharBackward => edit(ctx, editor::Editor::backspace),
        A::DeleteCharForward => edit(ctx, editor::Editor::delete),
        A::DeleteWordBackward => edit(ctx, editor::Editor::delete_word_back),
        A::DeleteWordForward => edit(ctx, editor::Editor::delete_word_forward),
        A::DeleteToLineStart => edit(ctx, editor::Editor::kill_to_start),
        A::DeleteToLineEnd => edit(ctx, editor::Editor::kill_to_end),
        A::Yank => edit(ctx, editor::Editor::yank),
        A::YankPop => edit(ctx, |e| {
            e.yank_pop();
        }),
        A::Undo => edit(ctx, |e| {
            e.undo();
        }),
        A::NewLine => edit(ctx, editor::Editor::newline),
        A::Submit => submit(ctx, Queue::Steer),
        A::MessageFollowUp => submit(ctx, Queue::FollowUp),
        A::Tab => {}
        A::Interrupt => escape(ctx),
        A::Clear => ctrl_c(ctx),
        A::Suspend => ctx.st.terminal_request = Some(TerminalRequest::Suspend),
        A::ExternalEditor => ctx.st.terminal_request = Some(TerminalRequest::ExternalEditor),
        A::SessionNew => commands::run(ctx, "/new"),
        A::SessionTree => commands::run(ctx, "/tree"),
        A::SessionFork => commands::run(ctx, "/fork"),
        A::SessionResume => commands::run(ctx, "/resume"),
        A::ModelSelect => pickers::open_models(ctx, None),
        A::ModelCycleForward => cycle_model(ctx, true),
        A::ModelCycleBackward => cycle_model(ctx, false),
        A::ThinkingCycle => commands::cycle_thinking(ctx),
        A::ThinkingToggle => ctx.st.show_thinking = !ctx.st.show_thinking,
        A::ToolsExpand => {
            ctx.st.expand_tools = !ctx.st.expand_tools;
            // As pi's: every block follows it, whatever a click chose.
            ctx.st.transcript.unset_summary_choices();
        }
        A::MessageCopy => {
            // The selected text first, as pi's Ctrl+X.
            if !super::login::copy_url(ctx) && !copy_selection(ctx) {
                super::config_commands::copy_last(ctx)
            }
        }
        A::InputCopy => {
            if !copy_selection(ctx) {
                return false;
            }
            ctx.st.selection.clear();
        }
        A::MessageDequeue => dequeue(ctx),
        A::PasteImage => paste_clipboard(ctx),
    }
    true
}

/// Reads the clipboard in the background: its image is attached, its text
/// inserted ([`on_clipboard`]); Ctrl+V and a right click.
pub fn paste_clipboard(ctx: &mut Ctx<'_>) {
    ctx.spawn(async {
        let pasted = tokio::task::spawn_blocking(super::clipboard::paste)
            .await
            .unwrap_or_else(|e| Err(format!("reading the clipboard failed: {e}")));
        vec![UiMsg::Pasted(pasted)]
    });
}

/// The marker of pasted image `n` (from 1) in the editor.
fn image_marker(n: usize) -> String {
    format!("[image {n}]")
}

/// What Ctrl+V read: an image is attached (a marker goes into the editor),
/// text is inserted.
pub fn on_clipboard(ctx: &mut Ctx<'_>, pasted: Result<super::clipboard::Pasted, String>) {
    use base64::Engine;
    match pasted {
        Ok(super::clipboard::Pasted::Image(bytes, mime)) => {
            let kb = bytes.len().div_ceil(1024);
            ctx.st.images.push(makai_ai::ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_string(),
            });
            let marker = image_marker(ctx.st.images.len());
            ctx.st.editor.insert_str(&format!("{marker} "));
            ctx.st
                .set_status(Level::Info, format!("Attached {marker} ({mime}, {kb} KB)"));
        }
        Ok(super::clipboard::Pasted::Text(text)) => ctx.st.editor.paste(&text),
        Err(e) => ctx.st.set_status(Level::Warning, e),
    }
    update_completion(ctx);
}

/// The pasted images whose marker is still in `text`; the list empties.
fn take_images(ctx: &mut Ctx<'_>, text: &str) -> Vec<makai_ai::ImageContent> {
    std::mem::take(&mut ctx.st.images)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| text.contains(&image_marker(i + 1)))
        .map(|(_, image)| image)
        .collect()
}

/// Rows one page scroll moves.
fn page(ctx: &Ctx<'_>) -> usize {
    ctx.st.cache.page.saturating_sub(2).max(1)
}

/// A cursor move: ends history browsing and the current undo step.
fn motion(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut editor::Editor)) {
    let e = &mut ctx.st.editor;
    e.stop_browsing();
    e.end_edit_group();
    f(e);
    update_completion(ctx);
}

fn edit(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut editor::Editor)) {
    ctx.st.editor.stop_browsing();
    f(&mut ctx.st.editor);
    update_completion(ctx);
}

/// Handles pasted text (bracketed paste): inserted as is, newlines
/// included, a large paste as its marker.
pub fn on_paste(ctx: &mut Ctx<'_>, text: &str) {
    let top = ctx.st.cache.top_row();
    if let Some(search) = &mut ctx.st.search {
        let query = format!("{}{}", search.query(), text.replace(['\r', '\n'], " "));
        search.set_query(query, top);
        ctx.st.dirty = true;
    } else if ctx.st.selector.is_none() {
        ctx.st.editor.paste(text);
        update_completion(ctx);
        ctx.st.dirty = true;
    }
}

/// Ctrl+C: clears the editor; a second press within a second leaves.
fn ctrl_c(ctx: &mut Ctx<'_>) {
    let now = Instant::now();
    if ctx
        .st
        .last_ctrl_c
        .is_some_and(|t| now.duration_since(t) <= DOUBLE_CTRL_C)
    {
        ctx.st.quit = true;
        return;
    }
    ctx.st.last_ctrl_c = Some(now);
    ctx.st.editor.clear();
    ctx.st.completion = None;
    ctx.st
        .set_status(Level::Warning, "Press Ctrl+C again to exit");
}

/// Esc: closes a popup, else aborts the run (queued messages return to the
/// editor), else jumps back to the bottom of the conversation; twice within
/// a moment in an empty editor, opens what `doubleEscapeAction` names
/// (`/tree` by default, `/fork`, or nothing).
fn escape(ctx: &mut Ctx<'_>) {
    if approval::skip_reason(ctx) || super::login::cancel(ctx) {
        return;
    }
    // Esc also drops a selection of the conversation.
    ctx.st.selection.clear();
    if ctx.st.busy() || ctx.st.compacting || ctx.app.is_streaming() {
        dequeue(ctx);
        ctx.st.aborting = true;
        let app = ctx.app.clone();
        ctx.spawn(async move {
            app.abort().await;
            vec![UiMsg::Refresh]
        });
    } else {
        ctx.st.scroll = 0;
        if !ctx.st.editor.is_empty() {
            return;
        }
        let now = Instant::now();
        let again = ctx
            .st
            .last_escape
            .is_some_and(|t| now.duration_since(t) <= DOUBLE_ESCAPE);
        ctx.st.last_escape = (!again).then_some(now);
        if again {
            match ctx.app.settings().double_escape_action {
                DoubleEscapeAction::Tree => pickers::open_tree(ctx),
                DoubleEscapeAction::Fork => pickers::open_fork(ctx),
                DoubleEscapeAction::None => {}
            }
        }
    }
}

/// Moves queued messages back into the editor (they are not sent).
fn dequeue(ctx: &mut Ctx<'_>) {
    let st = &mut *ctx.st;
    let mut queued: Vec<String> = st
        .steering
        .drain(..)
        .chain(st.follow_up.drain(..))
        .collect();
    if queued.is_empty() {
        return;
    }
    ctx.app.agent().clear_all_queues();
    if !st.editor.is_empty() {
        queued.push(st.editor.text());
    }
    st.editor.set_text(&queued.join("\n\n"));
    st.set_status(Level::Info, "Queued messages moved back to the editor");
}

/// Enter / Alt+Enter: runs a slash command, sends a prompt, or queues it while a run goes.
fn submit(ctx: &mut Ctx<'_>, queue: Queue) {
    // What is sent holds the pastes; the history keeps their markers.
    let shown = ctx.st.editor.text();
    let text = ctx.st.editor.expanded_text();
    if ctx.st.awaiting_reason.is_some() {
        ctx.st.editor.clear();
        approval::take_reason(ctx, &text);
        return;
    }
    if text.trim().is_empty() {
        return;
    }
    if !text.starts_with('/') && super::login::take_pasted(ctx, &text) {
        return;
    }
    if text.starts_with('!') {
        ctx.st.editor.push_history(&shown);
        ctx.st.editor.clear();
        ctx.st.completion = None;
        super::bang::run(ctx, &text);
        return;
    }
    if text.starts_with('/') && !is_resource_command(ctx, &text) && commands::is_command(&text) {
        ctx.st.editor.push_history(&shown);
        ctx.st.editor.clear();
        ctx.st.completion = None;
        commands::run(ctx, &text);
        return;
    }
    ctx.st.editor.push_history(&shown);
    ctx.st.editor.clear();
    ctx.st.completion = None;
    ctx.st.scroll = 0;
    let images = take_images(ctx, &text);
    if ctx.st.busy() || ctx.app.is_streaming() {
        if images.is_empty() {
            let queued = match queue {
                Queue::Steer => ctx.app.steer(text.clone(), images),
                Queue::FollowUp => ctx.app.follow_up(text.clone(), images),
            };
            if let Err(e) = queued {
                // Nothing was queued: the text goes back to the editor.
                ctx.st.editor.set_text(&shown);
                ctx.st.notice(Level::Error, e.to_string());
            }
        } else {
            // Images are fitted aside, then the message is queued.
            let app = ctx.app.clone();
            ctx.spawn(async move {
                let queued = match app.fit_images_aside(images).await {
                    Ok(images) => match queue {
                        Queue::Steer => app.steer(text.clone(), images),
                        Queue::FollowUp => app.follow_up(text.clone(), images),
                    },
                    Err(e) => Err(e),
                };
                match queued {
                    Ok(()) => Vec::new(),
                    Err(e) => vec![
                        UiMsg::Notice(Level::Error, e.to_string()),
                        UiMsg::Notice(Level::Info, format!("Not queued: {text}")),
                    ],
                }
            });
        }
    } else {
        ctx.send_prompt(Prompt { text, images });
    }
}

fn cycle_model(ctx: &mut Ctx<'_>, forward: bool) {
    let app = ctx.app.clone();
    ctx.spawn(async move {
        match app.cycle_model_by(forward).await {
            Some((m, level)) => vec![
                UiMsg::Refresh,
                UiMsg::Status(
                    Level::Info,
                    format!(
                        "Model: {}/{} • thinking {}",
                        m.provider,
                        m.id,
                        level.as_str()
                    ),
                ),
            ],
            None => vec![UiMsg::Status(
                Level::Warning,
                "No other model is available".into(),
            )],
        }
    });
}

/// True when `text` calls a prompt template or a skill (and no built-in
/// command of the same name): it goes to the model, expanded.
fn is_resource_command(ctx: &Ctx<'_>, text: &str) -> bool {
    let name = text[1..].split_whitespace().next().unwrap_or("");
    if commands::COMMANDS.iter().any(|(n, _)| *n == name) {
        return false;
    }
    let resources = ctx.app.resources();
    match name.strip_prefix("skill:") {
        Some(skill) => resources.skill(skill).is_some(),
        None => resources.template(name).is_some(),
    }
}
