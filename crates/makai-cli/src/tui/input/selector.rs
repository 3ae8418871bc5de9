//! Keys for an open selector: pi's `tui.select.*` actions, then the keys
//! of the selector open (`/tree`'s filters and labels, `/resume`'s and
//! `/scoped-models`' own, Ctrl+S in `/model` and `/thinking`), then the
//! list's own (moving, filtering, choosing).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::approval;
use super::super::event_loop::Ctx;
use super::super::keymap::Action;
use super::super::pickers;
use super::super::selectors::{SelectOutcome, SelectorKind};

/// The key as lists know it: a key bound to one of pi's `tui.select.*`
/// actions is that action's usual key (Up, Down, PageUp, PageDown, Enter,
/// Esc), so that rebinding them in `keybindings.json` moves every list.
fn list_key(ctx: &Ctx<'_>, key: KeyEvent) -> KeyEvent {
    let code = ctx
        .st
        .keymap
        .actions(&key)
        .into_iter()
        .find_map(|a| match a {
            Action::SelectUp => Some(KeyCode::Up),
            Action::SelectDown => Some(KeyCode::Down),
            Action::SelectPageUp => Some(KeyCode::PageUp),
            Action::SelectPageDown => Some(KeyCode::PageDown),
            Action::SelectConfirm => Some(KeyCode::Enter),
            Action::SelectCancel => Some(KeyCode::Esc),
            _ => None,
        });
    match code {
        Some(code) => KeyEvent::new(code, KeyModifiers::NONE),
        None => key,
    }
}

/// Keys for an open selector (lists keep their fixed keys; the copy action
/// copies the selected entry in `/tree`).
pub(super) fn selector_key(ctx: &mut Ctx<'_>, key: KeyEvent) {
    let key = list_key(ctx, key);
    if ctx
        .st
        .selector
        .as_ref()
        .is_some_and(|s| s.kind == SelectorKind::ScopedModels)
    {
        super::super::scoped_models::key(ctx, key);
        return;
    }
    if ctx.st.keymap.actions(&key).contains(&Action::MessageCopy) {
        pickers::copy_selected(ctx);
        return;
    }
    let Some(sel) = &mut ctx.st.selector else {
        return;
    };
    // pi's Ctrl+S in `/model` and `/thinking`: the highlighted choice
    // becomes the default, saved in the settings, and is chosen.
    let save = match sel.kind {
        SelectorKind::Model => Some(Action::ModelsSave),
        SelectorKind::Thinking => Some(Action::ThinkingSave),
        _ => None,
    };
    if let Some(save) = save
        && ctx.st.keymap.actions(&key).contains(&save)
    {
        let chosen = sel
            .visible()
            .get(sel.selected)
            .map(|&i| sel.items[i].value.clone());
        if let Some(value) = chosen {
            let kind = sel.kind.clone();
            ctx.st.selector = None;
            pickers::save_default(ctx, &kind, &value);
            pickers::on_choice(ctx, kind, value);
        }
        return;
    }
    let Some(sel) = &mut ctx.st.selector else {
        return;
    };
    // `/tree`'s filters.
    if sel.kind == SelectorKind::Tree {
        use super::super::selectors::TreeFilter as F;
        let now = sel.tree_filter;
        let to = ctx
            .st
            .keymap
            .actions(&key)
            .into_iter()
            .find_map(|a| match a {
                Action::TreeFilterDefault => Some(F::Default),
                Action::TreeFilterNoTools => Some(now.toggle(F::NoTools)),
                Action::TreeFilterUserOnly => Some(now.toggle(F::UserOnly)),
                Action::TreeFilterLabeledOnly => Some(now.toggle(F::LabeledOnly)),
                Action::TreeFilterAll => Some(now.toggle(F::All)),
                Action::TreeFilterCycleForward => Some(now.cycle(true)),
                Action::TreeFilterCycleBackward => Some(now.cycle(false)),
                _ => None,
            });
        let own = ctx.st.keymap.actions(&key).into_iter().find(|a| {
            matches!(
                a,
                Action::TreeEditLabel
                    | Action::TreeToggleLabelTimestamp
                    | Action::TreeFoldOrUp
                    | Action::TreeUnfoldOrDown
            )
        });
        match own {
            Some(Action::TreeEditLabel) => {
                pickers::ask_label(ctx);
                return;
            }
            Some(Action::TreeToggleLabelTimestamp) => {
                pickers::toggle_label_times(ctx);
                return;
            }
            Some(Action::TreeFoldOrUp) => {
                sel.fold_or_up();
                return;
            }
            Some(_) => {
                sel.unfold_or_down();
                return;
            }
            None => {}
        }
        let Some(sel) = &mut ctx.st.selector else {
            return;
        };
        if let Some(to) = to {
            sel.set_tree_filter(to);
            sel.title = pickers::tree_title(to);
            return;
        }
    }
    let Some(sel) = &mut ctx.st.selector else {
        return;
    };
    // The session picker's own keys (Tab, rename, delete, filters).
    if sel.kind == SelectorKind::Resume && super::super::resume::key(ctx, key) {
        return;
    }
    let Some(sel) = &mut ctx.st.selector else {
        return;
    };
    match sel.key(key) {
        SelectOutcome::Open => {}
        SelectOutcome::Cancelled => {
            let kind = sel.kind.clone();
            ctx.st.selector = None;
            match kind {
                SelectorKind::Approval => approval::chosen(ctx, None),
                SelectorKind::ResumeDelete | SelectorKind::ResumeRename(_) => {
                    super::super::resume::back_to_picker(ctx)
                }
                SelectorKind::TreeLabel(id) => pickers::reopen_tree(ctx, &id),
                // `--resume`'s picker: nothing chosen, nothing to run.
                SelectorKind::Resume if ctx.st.resume.at_start => ctx.st.quit = true,
                _ => {}
            }
        }
        SelectOutcome::Chosen(value) => {
            let kind = sel.kind.clone();
            ctx.st.selector = None;
            pickers::on_choice(ctx, kind, value);
        }
    }
}
