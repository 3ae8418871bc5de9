//! The selectors behind `/model`, `/thinking`, `/resume`, `/tree` and
//! `/fork`: what they list and what choosing an item does.

use makai_agent::AgentMessage;
use makai_ai::Message;
use makai_ai::{Model, ThinkingLevel};
use makai_coding::session::{SessionEntry, TreeView};

use super::commands::set_thinking;
use super::event_loop::{Ctx, UiMsg};
use super::selectors::{SelectItem, Selector, SelectorKind, TreeFilter, tree_class};
use super::transcript::Level;
use super::wrap::truncate;
use crate::app::AppSession;
use makai_agent::parts_text as user_text;

/// Characters of a message a row shows.
const ROW_TEXT: usize = 100;

fn one_line(text: &str) -> String {
    truncate(
        &text.split_whitespace().collect::<Vec<_>>().join(" "),
        ROW_TEXT,
    )
}

fn model_key(m: &Model) -> String {
    format!("{}/{}", m.provider, m.id)
}

/// A model as the selectors list it (pi 1.5): its id, and its name after it
/// when the name has words the id lacks (a renamed `models.json` entry:
/// `lab-7 (Team reviewer)`; `claude-opus-5-5` is not followed by "Claude
/// Opus 5.5").
pub fn model_label(m: &Model) -> String {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let id_words = words(&m.id);
    let adds = words(&m.name).iter().any(|w| !id_words.contains(w));
    if adds && !m.name.trim().is_empty() {
        format!("{} ({})", m.id, m.name.trim())
    } else {
        m.id.clone()
    }
}

/// `/model [query]`: switches at once on an exact match, else lists the
/// available models (filtered by the query).
pub fn open_models(ctx: &mut Ctx<'_>, query: Option<&str>) {
    let app = ctx.app.clone();
    let query = query.map(str::to_string);
    ctx.spawn(async move {
        let models = app.available_models().await;
        if let Some(q) = &query {
            let exact: Vec<&Model> = models
                .iter()
                .filter(|m| model_key(m) == *q || m.id == *q)
                .collect();
            if let [m] = exact.as_slice() {
                return switch_model(&app, m);
            }
        }
        let current = app.model();
        let items = models
            .iter()
            .map(|m| {
                let detail = format!(
                    "{} · {}k context{}",
                    m.provider,
                    m.context_window / 1000,
                    if m.reasoning { " · reasoning" } else { "" }
                );
                SelectItem::new(model_label(m), detail, model_key(m))
                    .current(model_key(m) == model_key(&current))
            })
            .collect();
        let mut sel = Selector::new("Model", SelectorKind::Model, items);
        if let Some(q) = query {
            sel.filter = q;
            sel.selected = 0;
        }
        vec![UiMsg::Selector(sel)]
    });
}

fn switch_model(app: &AppSession, m: &Model) -> Vec<UiMsg> {
    app.set_model(m.clone());
    vec![
        UiMsg::Refresh,
        UiMsg::Status(
            Level::Info,
            format!(
                "Model: {} • thinking {}",
                model_key(m),
                app.thinking_level().as_str()
            ),
        ),
    ]
}

/// `/thinking`: the levels the model offers.
pub fn open_thinking(ctx: &mut Ctx<'_>) {
    let levels = ctx.app.available_thinking_levels();
    if levels.len() <= 1 {
        ctx.st.notice(
            Level::Warning,
            format!(
                "{} does not reason; there is no thinking level to choose.",
                ctx.app.model().id
            ),
        );
        return;
    }
    let current = ctx.app.thinking_level();
    let items = levels
        .iter()
        .map(|l| SelectItem::new(l.as_str(), "", l.as_str()).current(*l == current))
        .collect();
    ctx.st.selector = Some(Selector::new(
        "Thinking level",
        SelectorKind::Thinking,
        items,
    ));
}

/// What a tree row says about an entry; `None` hides it.
fn entry_text(e: &SessionEntry) -> Option<String> {
    Some(match e {
        SessionEntry::Message(m) => match &m.message {
            AgentMessage::Llm(Message::User(u)) => {
                format!("user: {}", one_line(&user_text(&u.content)))
            }
            AgentMessage::Llm(Message::Assistant(a)) => {
                let text = a.text();
                let tools: Vec<&str> = a
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        makai_ai::AssistantContent::ToolCall(t) => Some(t.name.as_str()),
                        _ => None,
                    })
                    .collect();
                match (text.trim().is_empty(), tools.is_empty()) {
                    (false, _) => format!("assistant: {}", one_line(&text)),
                    (true, false) => format!("assistant → {}", tools.join(", ")),
                    (true, true) => "assistant: (no text)".into(),
                }
            }
            AgentMessage::Llm(Message::ToolResult(r)) => {
                let err = if r.is_error { " (error)" } else { "" };
                format!("{} result{err}", r.tool_name)
            }
            other => format!("[{}]", other.role()),
        },
        SessionEntry::Compaction(c) => {
            format!("[compaction: {} tokens summarized]", c.tokens_before)
        }
        SessionEntry::BranchSummary(b) => format!("[branch summary: {}]", one_line(&b.summary)),
        SessionEntry::ModelChange(m) => format!("[model: {}/{}]", m.provider, m.model_id),
        SessionEntry::ThinkingLevelChange(t) => format!("[thinking: {}]", t.thinking_level),
        SessionEntry::ContextEdit(e) => match e.replacement {
            None => format!("[context edit: {} left out]", e.target_id),
            Some(_) => format!("[context edit: {} replaced]", e.target_id),
        },
        _ => return None,
    })
}

/// The tree as selector rows, depth-first; indentation grows at branch points only.
fn tree_items(view: &TreeView<'_>, leaf: Option<&str>, label_times: bool) -> Vec<SelectItem> {
    let mut out = Vec::new();
    // (node, indent, starts a branch, the row of its nearest shown ancestor)
    let mut stack: Vec<(usize, usize, bool, Option<usize>)> = view
        .roots
        .iter()
        .rev()
        .map(|&r| (r, 0, false, None))
        .collect();
    let mut seen = vec![false; view.nodes.len()];
    while let Some((i, indent, branch_start, parent)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let node = &view.nodes[i];
        let branching = node.children.len() > 1;
        let text = entry_text(node.entry);
        let row = text.as_ref().map(|_| out.len()).or(parent);
        for &c in node.children.iter().rev() {
            stack.push((c, indent + usize::from(branching), branching, row));
        }
        let Some(text) = text else {
            continue;
        };
        let id = node.entry.id();
        let dot = if node.on_current_path { "● " } else { "○ " };
        let fork = if branch_start { "├ " } else { "" };
        let label = format!("{}{fork}{dot}{text}", "  ".repeat(indent));
        let ts = node.entry.timestamp();
        let mut detail = ts.get(11..16).unwrap_or("").to_string();
        if let Some(l) = node.label {
            let set = node
                .label_timestamp
                .filter(|_| label_times)
                .and_then(|t| t.get(..16))
                .map(|t| format!(" @ {}", t.replace('T', " ")))
                .unwrap_or_default();
            detail = format!("[{l}{set}] {detail}");
        }
        let mut class = entry_class(node.entry);
        if node.label.is_some() {
            class |= tree_class::LABELED;
        }
        out.push(
            SelectItem::new(label, detail, id)
                .current(Some(id) == leaf)
                .class(class)
                .parent(parent),
        );
    }
    out
}

/// What an entry is, for `/tree`'s filters.
fn entry_class(e: &SessionEntry) -> u8 {
    match e {
        SessionEntry::Message(m) => match &m.message {
            AgentMessage::Llm(Message::User(_)) => tree_class::USER,
            AgentMessage::Llm(Message::ToolResult(_)) => tree_class::TOOL,
            AgentMessage::Llm(Message::Assistant(a))
                if a.text().trim().is_empty() && a.tool_calls().next().is_some() =>
            {
                tree_class::TOOL
            }
            AgentMessage::System(_) => tree_class::SETTING,
            _ => 0,
        },
        SessionEntry::ModelChange(_)
        | SessionEntry::ThinkingLevelChange(_)
        | SessionEntry::ContextEdit(_) => tree_class::SETTING,
        _ => 0,
    }
}

/// Ctrl+S in `/model` or `/thinking` (pi's `app.models.save`,
/// `app.thinking.save`): `value` becomes the default of later sessions in
/// the user settings (`defaultProvider` and `defaultModel`, or
/// `defaultThinkingLevel`).
pub fn save_default(ctx: &mut Ctx<'_>, kind: &SelectorKind, value: &str) {
    use super::config_commands::save_user_setting;
    match kind {
        SelectorKind::Model => {
            // The row's value is `provider/id`; either may hold slashes.
            let Some((provider, id)) = ctx
                .app
                .registry()
                .find_exact(value)
                .map(|m| (m.provider.clone(), m.id.clone()))
            else {
                return;
            };
            save_user_setting(ctx, &["defaultProvider"], provider.into());
            save_user_setting(ctx, &["defaultModel"], id.into());
            ctx.st
                .set_status(Level::Info, format!("{value} is the default model now"));
        }
        SelectorKind::Thinking => {
            save_user_setting(ctx, &["defaultThinkingLevel"], value.into());
            ctx.st.set_status(
                Level::Info,
                format!("Thinking level {value} is the default now"),
            );
        }
        _ => {}
    }
}

/// `/tree`'s own keys besides its filters, on its bottom border.
const TREE_HINT: &str = "^←/^→ fold · ⇧L label · ⇧T label times";

/// `/tree`'s title with its filter.
pub fn tree_title(filter: TreeFilter) -> String {
    format!(
        "Session tree (● current branch) · {} · ^D ^T ^U ^L ^A ^O filters",
        filter.as_str()
    )
}

/// `/tree`: every entry of the session; choosing one moves the leaf there.
pub fn open_tree(ctx: &mut Ctx<'_>) {
    let items = {
        let s = ctx.app.session().lock();
        tree_items(&s.view(), s.leaf_id(), ctx.st.tree_label_times)
    };
    if items.is_empty() {
        ctx.st.notice(Level::Info, "The session is empty.");
        return;
    }
    // pi's `treeFilterMode` is the filter it opens with.
    let mode = ctx.app.settings().tree_filter_mode.clone();
    let filter = match mode.as_deref().map(TreeFilter::parse) {
        None => TreeFilter::Default,
        Some(Some(f)) => f,
        Some(None) => {
            ctx.st.notice(
                Level::Warning,
                format!(
                    "treeFilterMode {:?} is not one of default, no-tools, user-only, labeled-only, all",
                    mode.unwrap_or_default()
                ),
            );
            TreeFilter::Default
        }
    };
    let mut selector = Selector::new(tree_title(filter), SelectorKind::Tree, items);
    selector.set_tree_filter(filter);
    selector.hint = Some(TREE_HINT.to_string());
    ctx.st.selector = Some(selector);
}

/// `/tree` opened again (after a label was edited) with `filter` and the
/// entry `id` highlighted when it shows.
fn open_tree_at(ctx: &mut Ctx<'_>, filter: TreeFilter, id: &str) {
    let items = {
        let s = ctx.app.session().lock();
        tree_items(&s.view(), s.leaf_id(), ctx.st.tree_label_times)
    };
    let mut selector = Selector::new(tree_title(filter), SelectorKind::Tree, items);
    selector.set_tree_filter(filter);
    selector.hint = Some(TREE_HINT.to_string());
    let visible = selector.visible();
    if let Some(at) = visible.iter().position(|&i| selector.items[i].value == id) {
        selector.selected = at;
    }
    ctx.st.selector = Some(selector);
}

/// The filter of the last `/tree` a label prompt came from.
fn label_filter(ctx: &Ctx<'_>) -> TreeFilter {
    ctx.st.tree_label_filter.unwrap_or_default()
}

/// Back to `/tree` after its label prompt, at entry `id`.
pub fn reopen_tree(ctx: &mut Ctx<'_>, id: &str) {
    let filter = label_filter(ctx);
    open_tree_at(ctx, filter, id);
}

/// Shift+L in `/tree` (pi's `app.tree.editLabel`): asks the highlighted
/// entry's label (an empty one clears it).
pub fn ask_label(ctx: &mut Ctx<'_>) {
    let Some(sel) = ctx.st.selector.as_ref() else {
        return;
    };
    let Some(&i) = sel.visible().get(sel.selected) else {
        return;
    };
    let (id, row) = (sel.items[i].value.clone(), sel.items[i].label.clone());
    ctx.st.tree_label_filter = Some(sel.tree_filter);
    let current = ctx.app.session().lock().label(&id).map(str::to_string);
    let note = SelectItem::new(row.trim().to_string(), "an empty label clears it", "");
    ctx.st.selector = Some(Selector::prompt(
        "Label the entry",
        SelectorKind::TreeLabel(id),
        "label",
        current.as_deref().unwrap_or(""),
        vec![note],
    ));
}

/// The answer to [`ask_label`]: sets or clears the label, back to `/tree`.
fn label_chosen(ctx: &mut Ctx<'_>, id: &str, label: &str) {
    let label = label.trim();
    let set = ctx
        .app
        .session()
        .lock()
        .set_label(id, (!label.is_empty()).then_some(label));
    if let Err(e) = set {
        ctx.st
            .notice(Level::Error, format!("Cannot label the entry: {e}"));
    }
    reopen_tree(ctx, id);
}

/// Shift+T in `/tree` (pi's `app.tree.toggleLabelTimestamp`): labels show
/// when they were set, or not.
pub fn toggle_label_times(ctx: &mut Ctx<'_>) {
    ctx.st.tree_label_times = !ctx.st.tree_label_times;
    let Some(sel) = ctx.st.selector.as_ref() else {
        return;
    };
    let filter = sel.tree_filter;
    let id = sel
        .visible()
        .get(sel.selected)
        .map(|&i| sel.items[i].value.clone())
        .unwrap_or_default();
    open_tree_at(ctx, filter, &id);
}

/// `/fork`: the user prompts of the session, newest selected.
pub fn open_fork(ctx: &mut Ctx<'_>) {
    let prompts = ctx.app.fork_messages();
    if prompts.is_empty() {
        ctx.st
            .notice(Level::Info, "There is no prompt to fork from yet.");
        return;
    }
    let items: Vec<SelectItem> = prompts
        .iter()
        .map(|(id, text)| SelectItem::new(one_line(text), "", id.clone()))
        .collect();
    let mut sel = Selector::new("Fork from prompt", SelectorKind::Fork, items);
    sel.selected = prompts.len() - 1;
    ctx.st.selector = Some(sel);
}

/// Applies a selector choice.
pub fn on_choice(ctx: &mut Ctx<'_>, kind: SelectorKind, value: String) {
    let app = ctx.app.clone();
    match kind {
        SelectorKind::Model => ctx.spawn(async move {
            let models = app.available_models().await;
            match models.iter().find(|m| model_key(m) == value) {
                Some(m) => switch_model(&app, m),
                None => vec![UiMsg::Notice(
                    Level::Error,
                    format!("Model {value} is not available"),
                )],
            }
        }),
        SelectorKind::Thinking => match value.parse::<ThinkingLevel>() {
            Ok(level) => set_thinking(ctx, level),
            Err(e) => ctx.st.notice(Level::Error, e),
        },
        SelectorKind::Resume => {
            ctx.st.resume.at_start = false;
            super::config_commands::open_session_file(ctx, &value, "Resumed");
        }
        SelectorKind::ResumeDelete => super::resume::delete_chosen(ctx, &value),
        SelectorKind::ResumeRename(target) => super::resume::rename_chosen(ctx, &target, &value),
        SelectorKind::TreeLabel(id) => label_chosen(ctx, &id, &value),
        SelectorKind::Fork => ctx.spawn(async move {
            match app.fork(&value).await {
                Ok(text) => vec![UiMsg::Reload {
                    editor: Some(text),
                    notice: Some(
                        "Forked into a new session; the prompt is back in the editor.".into(),
                    ),
                }],
                Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
            }
        }),
        SelectorKind::Tree => super::tree_move::go_to_entry(ctx, value),
        SelectorKind::BranchSummary(mv) => super::tree_move::branch_summary_chosen(ctx, mv, &value),
        SelectorKind::BranchSummaryFocus(mv) => super::tree_move::move_leaf(ctx, mv, Some(value)),
        SelectorKind::BugDescription => super::bug::ask_content(ctx, value),
        SelectorKind::BugContent(description) => {
            super::bug::content_chosen(ctx, description, &value)
        }
        SelectorKind::Settings => super::config_commands::toggle_setting(ctx, &value),
        SelectorKind::Approval => super::approval::chosen(ctx, Some(&value)),
        SelectorKind::ImportGone => super::config_commands::import_gone_chosen(ctx, &value),
        SelectorKind::Llama => super::llama::on_choice(ctx, &value),
        // Its keys never close it with a choice (`scoped_models::key`).
        SelectorKind::ScopedModels => {}
    }
}

/// Ctrl+X in `/tree` or `/fork`: copies the text of the highlighted entry.
pub fn copy_selected(ctx: &mut Ctx<'_>) {
    let Some(id) = ctx.st.selector.as_ref().and_then(|sel| {
        sel.visible()
            .get(sel.selected)
            .map(|&i| sel.items[i].value.clone())
    }) else {
        return;
    };
    let text = ctx
        .app
        .session()
        .lock()
        .get(&id)
        .and_then(|e| e.message().map(AgentMessage::text));
    match text {
        Some(text) if !text.is_empty() => {
            super::config_commands::copy_text(ctx, &text, "the selected message")
        }
        _ => ctx
            .st
            .set_status(Level::Warning, "The selected entry has no text to copy"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(id: &str, name: &str) -> Model {
        let mut m = Model::custom(
            makai_ai::Api::OpenAiCompletions,
            "lab",
            id,
            "http://localhost:1",
        );
        m.name = name.to_string();
        m
    }

    #[test]
    fn a_model_s_name_follows_its_id_only_when_it_adds_words() {
        assert_eq!(
            model_label(&named("claude-opus-5-5", "Claude Opus 5.5")),
            "claude-opus-5-5"
        );
        assert_eq!(
            model_label(&named("gpt-4o-mini", "GPT-4o mini")),
            "gpt-4o-mini"
        );
        assert_eq!(
            model_label(&named("lab-7", "Team reviewer")),
            "lab-7 (Team reviewer)"
        );
        assert_eq!(
            model_label(&named("sonnet-4-5", "Claude Sonnet 4.5 (latest)")),
            "sonnet-4-5 (Claude Sonnet 4.5 (latest))"
        );
        assert_eq!(model_label(&named("x", "")), "x");
    }
}
