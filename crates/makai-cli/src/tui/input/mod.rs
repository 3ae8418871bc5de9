//! Keyboard, paste and mouse input: editing, sending (Enter), steering and
//! follow-ups while a run goes, aborting (Esc), leaving (Ctrl+C twice),
//! toggles, scrolling, completion popups and selectors.

pub mod complete;
pub mod editor;

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use super::approval;
use super::commands;
use super::event_loop::{Ctx, UiMsg};
use super::pickers;
use super::selectors::{SelectOutcome, SelectorKind};
use super::transcript::Level;
use crate::modes::print::Prompt;
use complete::{CompletionKind, command_candidates, path_candidates, path_token};

/// Two Ctrl+C within this time leave the UI.
const DOUBLE_CTRL_C: Duration = Duration::from_millis(1000);
/// Rows one mouse wheel step scrolls.
const WHEEL_ROWS: usize = 3;

/// How a message typed while a run goes is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    /// After the current tool calls (Enter).
    Steer,
    /// When the run would end (Alt+Enter).
    FollowUp,
}

/// Handles a key press.
pub fn on_key(ctx: &mut Ctx<'_>, key: KeyEvent) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    ctx.st.dirty = true;
    let ctrl_x = key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('x');
    if ctrl_x && ctx.st.selector.is_some() {
        pickers::copy_selected(ctx);
        return;
    }
    if let Some(sel) = &mut ctx.st.selector {
        match sel.key(key) {
            SelectOutcome::Open => {}
            SelectOutcome::Cancelled => {
                let kind = sel.kind.clone();
                ctx.st.selector = None;
                if kind == SelectorKind::Approval {
                    approval::chosen(ctx, None);
                }
            }
            SelectOutcome::Chosen(value) => {
                let kind = sel.kind.clone();
                ctx.st.selector = None;
                pickers::on_choice(ctx, kind, value);
            }
        }
        return;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    if ctrl && key.code == KeyCode::Char('c') {
        ctrl_c(ctx);
        return;
    }
    if ctx.st.completion.is_some() && completion_key(ctx, key) {
        return;
    }
    match key.code {
        KeyCode::Esc => escape(ctx),
        KeyCode::Enter if alt => submit(ctx, Queue::FollowUp),
        KeyCode::Enter if shift || ctrl => edit(ctx, |e| e.newline()),
        KeyCode::Enter => submit(ctx, Queue::Steer),
        KeyCode::Char('j') if ctrl => edit(ctx, |e| e.newline()),
        KeyCode::Char('d') if ctrl => {
            if ctx.st.editor.is_empty() {
                ctx.st.quit = true;
            } else {
                edit(ctx, |e| e.delete());
            }
        }
        KeyCode::Char('t') if ctrl => ctx.st.show_thinking = !ctx.st.show_thinking,
        KeyCode::Char('o') if ctrl => ctx.st.expand_tools = !ctx.st.expand_tools,
        KeyCode::Char('l') if ctrl => pickers::open_models(ctx, None),
        KeyCode::Char('p') if ctrl => cycle_model(ctx),
        KeyCode::Char('x') if ctrl => super::config_commands::copy_last(ctx),
        KeyCode::BackTab => commands::cycle_thinking(ctx),
        KeyCode::Up if alt => dequeue(ctx),
        KeyCode::PageUp => {
            let page = ctx.st.cache.page.saturating_sub(2).max(1);
            ctx.st.scroll += page;
        }
        KeyCode::PageDown => {
            let page = ctx.st.cache.page.saturating_sub(2).max(1);
            ctx.st.scroll = ctx.st.scroll.saturating_sub(page);
        }
        KeyCode::Up => {
            let e = &mut ctx.st.editor;
            let moved = (!e.browsing_history() && e.up())
                || ((e.is_empty() || e.browsing_history()) && e.history_prev());
            if !moved {
                e.home();
            }
        }
        KeyCode::Down => {
            let e = &mut ctx.st.editor;
            let through_history = e.browsing_history() && e.history_next();
            if !through_history && !e.down() {
                e.end();
            }
        }
        _ => editing_key(ctx, key, ctrl, alt),
    }
}

/// Keys that edit text; refreshes the completion popup afterwards.
fn editing_key(ctx: &mut Ctx<'_>, key: KeyEvent, ctrl: bool, alt: bool) {
    let e = &mut ctx.st.editor;
    e.stop_browsing();
    match key.code {
        KeyCode::Char('a') if ctrl => e.home(),
        KeyCode::Char('e') if ctrl => e.end(),
        KeyCode::Char('b') if ctrl => e.left(),
        KeyCode::Char('f') if ctrl => e.right(),
        KeyCode::Char('w') if ctrl => e.delete_word_back(),
        KeyCode::Char('u') if ctrl => e.kill_to_start(),
        KeyCode::Char('k') if ctrl => e.kill_to_end(),
        KeyCode::Char('y') if ctrl => e.yank(),
        KeyCode::Char('d') if alt => e.delete_word_forward(),
        KeyCode::Char('b') if alt => e.word_left(),
        KeyCode::Char('f') if alt => e.word_right(),
        KeyCode::Char(_) if ctrl => return,
        KeyCode::Char(c) => e.insert_char(c),
        KeyCode::Backspace if alt || ctrl => e.delete_word_back(),
        KeyCode::Backspace => e.backspace(),
        KeyCode::Delete => e.delete(),
        KeyCode::Left if alt || ctrl => e.word_left(),
        KeyCode::Right if alt || ctrl => e.word_right(),
        KeyCode::Left => e.left(),
        KeyCode::Right => e.right(),
        KeyCode::Home => e.home(),
        KeyCode::End => e.end(),
        KeyCode::Tab => {}
        _ => return,
    }
    update_completion(ctx);
}

fn edit(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut editor::Editor)) {
    f(&mut ctx.st.editor);
    update_completion(ctx);
}

/// Handles pasted text (bracketed paste): inserted as is, newlines included.
pub fn on_paste(ctx: &mut Ctx<'_>, text: &str) {
    if ctx.st.selector.is_none() {
        ctx.st.editor.insert_str(text);
        update_completion(ctx);
        ctx.st.dirty = true;
    }
}

/// Scrolls the conversation with the mouse wheel.
pub fn on_mouse(ctx: &mut Ctx<'_>, m: MouseEvent) {
    match m.kind {
        MouseEventKind::ScrollUp => ctx.st.scroll += WHEEL_ROWS,
        MouseEventKind::ScrollDown => ctx.st.scroll = ctx.st.scroll.saturating_sub(WHEEL_ROWS),
        _ => return,
    }
    ctx.st.dirty = true;
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
/// editor), else jumps back to the bottom of the conversation.
fn escape(ctx: &mut Ctx<'_>) {
    if approval::skip_reason(ctx) {
        return;
    }
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
    let text = ctx.st.editor.text();
    if ctx.st.awaiting_reason.is_some() {
        ctx.st.editor.clear();
        approval::take_reason(ctx, &text);
        return;
    }
    if text.trim().is_empty() {
        return;
    }
    if text.starts_with('!') {
        ctx.st.editor.push_history(&text);
        ctx.st.editor.clear();
        ctx.st.completion = None;
        super::bang::run(ctx, &text);
        return;
    }
    if text.starts_with('/') && !is_resource_command(ctx, &text) && commands::is_command(&text) {
        ctx.st.editor.push_history(&text);
        ctx.st.editor.clear();
        ctx.st.completion = None;
        commands::run(ctx, &text);
        return;
    }
    ctx.st.editor.push_history(&text);
    ctx.st.editor.clear();
    ctx.st.completion = None;
    ctx.st.scroll = 0;
    if ctx.st.busy() || ctx.app.is_streaming() {
        match queue {
            Queue::Steer => ctx.app.steer(text, Vec::new()),
            Queue::FollowUp => ctx.app.follow_up(text, Vec::new()),
        }
    } else {
        ctx.send_prompt(Prompt {
            text,
            images: Vec::new(),
        });
    }
}

fn cycle_model(ctx: &mut Ctx<'_>) {
    let app = ctx.app.clone();
    ctx.spawn(async move {
        match app.cycle_model().await {
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

/// The `/` commands for completion: built-ins, then templates and skills.
fn all_commands(ctx: &Ctx<'_>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = commands::COMMANDS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    for c in ctx.app.commands() {
        if !out.iter().any(|(n, _)| *n == c.name) {
            let hint = c.argument_hint.map(|h| format!("{h} ")).unwrap_or_default();
            out.push((c.name, format!("{hint}{}", c.description)));
        }
    }
    out
}

/// Keys for an open completion popup; true when the key was used.
fn completion_key(ctx: &mut Ctx<'_>, key: KeyEvent) -> bool {
    let Some(c) = &mut ctx.st.completion else {
        return false;
    };
    match key.code {
        KeyCode::Up => c.move_by(-1),
        KeyCode::Down => c.move_by(1),
        KeyCode::Esc => ctx.st.completion = None,
        KeyCode::Tab => accept_completion(ctx),
        KeyCode::Enter if key.modifiers.is_empty() => {
            let builtin = c.kind == CompletionKind::Command
                && c.current().is_some_and(|item| {
                    commands::COMMANDS
                        .iter()
                        .any(|(n, _)| item.insert.strip_prefix('/') == Some(*n))
                });
            let resource = c.kind == CompletionKind::Command && !builtin;
            accept_completion(ctx);
            if builtin {
                submit(ctx, Queue::Steer);
            } else if resource {
                // A template or skill takes arguments: leave room to type them.
                ctx.st.editor.insert_char(' ');
            }
        }
        _ => return false,
    }
    true
}

fn accept_completion(ctx: &mut Ctx<'_>) {
    let Some(c) = ctx.st.completion.take() else {
        return;
    };
    let Some(item) = c.current().cloned() else {
        return;
    };
    let e = &mut ctx.st.editor;
    match c.kind {
        CompletionKind::Command => e.set_text(&item.insert),
        CompletionKind::Path => {
            e.replace_before_cursor(c.start, &item.insert);
            if item.is_dir {
                update_completion(ctx);
            } else {
                e.insert_char(' ');
            }
        }
    }
}

/// Opens, updates or closes the completion popup for the text at the cursor.
fn update_completion(ctx: &mut Ctx<'_>) {
    let e = &ctx.st.editor;
    let text = e.text();
    let single = e.lines().len() == 1;
    let completion = if single && text.starts_with('/') && !text.contains(char::is_whitespace) {
        let commands = all_commands(ctx);
        let items = command_candidates(&text[1..], &commands);
        let exact = items.len() == 1 && items[0].insert == text;
        (!items.is_empty() && !exact).then_some(complete::Completion {
            kind: CompletionKind::Command,
            start: 0,
            items,
            selected: 0,
        })
    } else if let Some((start, query)) = path_token(e.before_cursor()) {
        let items = path_candidates(ctx.app.cwd(), &query, &mut ctx.st.file_index);
        (!items.is_empty()).then_some(complete::Completion {
            kind: CompletionKind::Path,
            start,
            items,
            selected: 0,
        })
    } else {
        None
    };
    ctx.st.completion = completion;
}
