//! `/scoped-models` without patterns: pi's scoped models selector. Every
//! available model is a row, checked when Ctrl+P cycles through it; the
//! checked rows' order is the cycle's. Enter checks or unchecks the
//! highlighted model, Ctrl+A checks every model the filter shows, Ctrl+X
//! unchecks them, Ctrl+P checks or unchecks the highlighted model's
//! provider, Alt+Up / Alt+Down move it in the cycle, Ctrl+S saves the
//! selection as the `enabledModels` setting (pi's `app.models.*` actions).
//! A model a pattern pins a thinking level for (`anthropic/*:high`) keeps
//! the pin, shown in its row and saved as `provider/id:level`.
//! Each change holds for the session at once; none checked: every model
//! cycles.

use crossterm::event::KeyEvent;

use super::event_loop::Ctx;
use super::keymap::Action;
use super::selectors::{SelectItem, SelectOutcome, Selector, SelectorKind};
use super::transcript::Level;
use crate::app::{model_matches, pinned_thinking};

const TITLE: &str = "Scoped models (✓ cycle with Ctrl+P; none: all)";

/// The selector's own keys, on its bottom border.
const HINT: &str = "enter ✓ · ^a all · ^x none · ^p provider · alt+↑↓ order · ^s save";

/// Opens the selector: the scoped models first, in their order, then the
/// others.
pub fn open(ctx: &mut Ctx<'_>) {
    let app = ctx.app.clone();
    ctx.spawn(async move {
        let models = app.available_models().await;
        let scope = app.scoped_models();
        let rank = |m: &makai_ai::Model| scope.iter().position(|p| model_matches(m, p));
        let mut rows: Vec<(Option<usize>, SelectItem)> = models
            .iter()
            .map(|m| {
                let key = format!("{}/{}", m.provider, m.id);
                let label = match super::pickers::model_label(m) {
                    label if label == m.id => key.clone(),
                    label => format!("{}/{label}", m.provider),
                };
                let mut detail = format!("{} · {}k context", m.provider, m.context_window / 1000);
                // A pinned level stays with the model through changes and saves.
                let mut value = key.clone();
                if let Some(level) = pinned_thinking(m, &scope) {
                    detail.push_str(&format!(" · thinking {}", level.as_str()));
                    value.push_str(&format!(":{}", level.as_str()));
                }
                (
                    rank(m),
                    SelectItem::new(label, detail, value).current(rank(m).is_some()),
                )
            })
            .collect();
        rows.sort_by_key(|(r, _)| r.unwrap_or(usize::MAX));
        let mut selector = Selector::new(
            TITLE,
            SelectorKind::ScopedModels,
            rows.into_iter().map(|(_, item)| item).collect(),
        );
        selector.selected = 0;
        selector.hint = Some(HINT.to_string());
        vec![super::event_loop::UiMsg::Selector(selector)]
    });
}

/// A key of the open selector.
pub fn key(ctx: &mut Ctx<'_>, key: KeyEvent) {
    let actions = ctx.st.keymap.actions(&key);
    let Some(sel) = ctx.st.selector.as_mut() else {
        return;
    };
    let visible = sel.visible();
    let highlighted = visible.get(sel.selected).copied();
    let mut changed = true;
    if key.code == crossterm::event::KeyCode::Enter {
        if let Some(i) = highlighted {
            sel.items[i].current = !sel.items[i].current;
        }
    } else if actions.contains(&Action::ModelsEnableAll) {
        for &i in &visible {
            sel.items[i].current = true;
        }
    } else if actions.contains(&Action::ModelsClearAll) {
        for &i in &visible {
            sel.items[i].current = false;
        }
    } else if actions.contains(&Action::ModelsToggleProvider) {
        if let Some(i) = highlighted {
            let registry = ctx.app.registry();
            let provider_of = |value: &str| registry.find_exact(value).map(|m| m.provider.clone());
            let provider = provider_of(&sel.items[i].value);
            let on = !sel.items[i].current;
            for item in &mut sel.items {
                if provider.is_some() && provider_of(&item.value) == provider {
                    item.current = on;
                }
            }
        }
    } else if let Some(up) = [Action::ModelsReorderUp, Action::ModelsReorderDown]
        .iter()
        .position(|a| actions.contains(a))
    {
        // Moves among the rows shown, keeping it highlighted.
        let to = if up == 0 {
            sel.selected.checked_sub(1)
        } else {
            Some(sel.selected + 1).filter(|&p| p < visible.len())
        };
        if let (Some(i), Some(to)) = (highlighted, to) {
            sel.items.swap(i, visible[to]);
            sel.selected = to;
        }
    } else if actions.contains(&Action::ModelsSave) {
        changed = false;
        save(ctx);
    } else {
        changed = false;
        if matches!(sel.key(key), SelectOutcome::Cancelled) {
            ctx.st.selector = None;
        }
    }
    if changed {
        apply(ctx);
    }
}

/// The checked models, in the rows' order.
fn checked(ctx: &Ctx<'_>) -> Vec<String> {
    ctx.st
        .selector
        .as_ref()
        .map(|sel| {
            sel.items
                .iter()
                .filter(|i| i.current)
                .map(|i| i.value.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Makes the checked models the session's scope.
fn apply(ctx: &mut Ctx<'_>) {
    let scope = checked(ctx);
    ctx.app.set_scoped_models(scope);
}

/// Ctrl+S: saves the checked models as `enabledModels` (none: the setting
/// is cleared, every model cycles).
fn save(ctx: &mut Ctx<'_>) {
    let scope = checked(ctx);
    let value = serde_json::Value::from(scope.clone());
    super::config_commands::save_user_setting(ctx, &["enabledModels"], value);
    let said = if scope.is_empty() {
        "Saved: Ctrl+P cycles through every model".to_string()
    } else {
        format!("Saved enabledModels: {}", scope.join(", "))
    };
    if let Some(sel) = ctx.st.selector.as_mut() {
        sel.title = format!("{TITLE} · saved");
    }
    ctx.st.set_status(Level::Info, said);
}
