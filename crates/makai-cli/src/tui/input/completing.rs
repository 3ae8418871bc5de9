//! The completion list under the editor: `/` commands (built-ins, prompt
//! templates, skills) and `@` paths, opened and narrowed as the text at the
//! cursor changes, and its keys while it is open.

use crossterm::event::{KeyCode, KeyEvent};

use super::complete::{self, CompletionKind, command_candidates, path_candidates, path_token};
use super::{Queue, submit};
use crate::tui::commands;
use crate::tui::event_loop::Ctx;

/// The `/` commands for completion: built-ins, then templates and skills.
fn all_commands(ctx: &Ctx<'_>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = commands::COMMANDS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    // pi's `enableSkillCommands: false` keeps skills out of the list (typed
    // in full, `/skill:name` still works).
    let skills = ctx.app.settings().skill_commands_enabled();
    for c in ctx.app.commands() {
        if !skills && c.name.starts_with("skill:") {
            continue;
        }
        if !out.iter().any(|(n, _)| *n == c.name) {
            let hint = c.argument_hint.map(|h| format!("{h} ")).unwrap_or_default();
            out.push((c.name, format!("{hint}{}", c.description)));
        }
    }
    out
}

/// Keys for an open completion popup; true when the key was used.
pub(super) fn completion_key(ctx: &mut Ctx<'_>, key: KeyEvent) -> bool {
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
pub(super) fn update_completion(ctx: &mut Ctx<'_>) {
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
