//! A `/tree` choice: the leaf moves to the entry chosen (before it, for a
//! user prompt, which goes back to the editor), after pi's question about
//! the branch it leaves ("Summarize branch?": no summary, a summary, a
//! summary with what to focus on; `branchSummary.skipPrompt` skips it).

use makai_agent::parts_text as user_text;
use makai_coding::session::SessionEntry;

use super::event_loop::{Ctx, UiMsg};
use super::selectors::{BranchMove, SelectItem, Selector, SelectorKind};
use super::transcript::Level;

/// Moves the leaf. On a user prompt the leaf goes to the entry before it and
/// the prompt returns to the editor, so sending it starts a new branch.
pub(super) fn go_to_entry(ctx: &mut Ctx<'_>, id: String) {
    let target = {
        let s = ctx.app.session().lock();
        if s.leaf_id() == Some(id.as_str()) {
            None
        } else {
            match s.get(&id) {
                Some(SessionEntry::Message(m)) => match m.message.as_user() {
                    Some(u) => Some((m.parent_id.clone(), Some(user_text(&u.content)))),
                    None => Some((Some(id.clone()), None)),
                },
                Some(_) => Some((Some(id.clone()), None)),
                None => None,
            }
        }
    };
    let Some((leaf, editor)) = target else {
        ctx.st.set_status(Level::Info, "Already there");
        return;
    };
    let mv = BranchMove { leaf, editor };
    // pi asks whether to summarize the branch left, unless
    // `branchSummary.skipPrompt` (then: no summary).
    let skip = ctx
        .app
        .settings()
        .extra
        .get("branchSummary")
        .and_then(|b| b.get("skipPrompt"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    if skip || ctx.app.branch_left(mv.leaf.as_deref()).messages.is_empty() {
        move_leaf(ctx, mv, None);
        return;
    }
    let choice = |label: &str, detail: &str, value: &str| SelectItem::new(label, detail, value);
    ctx.st.selector = Some(Selector::new(
        "Summarize branch?",
        SelectorKind::BranchSummary(mv),
        vec![
            choice("No summary", "leave the branch as it is", "none"),
            choice(
                "Summarize",
                "its summary joins the branch you go to",
                "summarize",
            ),
            choice(
                "Summarize with custom prompt",
                "say what the summary should focus on",
                "custom",
            ),
        ],
    ));
}

/// The answer to "Summarize branch?".
pub(super) fn branch_summary_chosen(ctx: &mut Ctx<'_>, mv: BranchMove, value: &str) {
    match value {
        "summarize" => move_leaf(ctx, mv, Some(String::new())),
        "custom" => {
            ctx.st.selector = Some(Selector::prompt(
                "Summarize branch",
                SelectorKind::BranchSummaryFocus(mv),
                "focus on",
                "",
                vec![SelectItem::new(
                    "What should the summary focus on?",
                    "Enter to summarize, Esc to stay",
                    "",
                )],
            ));
        }
        _ => move_leaf(ctx, mv, None),
    }
}

/// Moves the leaf as `mv` says; with `summary` (focus instructions, maybe
/// empty) after summarizing the branch left. Esc cancels the summary: then
/// nothing moves.
pub(super) fn move_leaf(ctx: &mut Ctx<'_>, mv: BranchMove, summary: Option<String>) {
    let app = ctx.app.clone();
    let BranchMove { leaf, editor } = mv;
    if summary.is_some() {
        ctx.st.compacting = true;
        ctx.st.summarizing = Some("Summarizing the branch");
    }
    ctx.spawn(async move {
        let moved = match &summary {
            Some(focus) => {
                let focus = Some(focus.trim()).filter(|f| !f.is_empty());
                let moved = app.navigate_with_summary(leaf.as_deref(), focus).await;
                let mut out = vec![UiMsg::SummaryEnded];
                match moved {
                    Ok(()) => out.push(UiMsg::Reload {
                        notice: Some(
                            "Summarized the branch left; the summary is where you are now.".into(),
                        ),
                        editor,
                    }),
                    Err(e) => out.push(UiMsg::Notice(Level::Error, format!("{e}; nothing moved."))),
                }
                return out;
            }
            None => app.move_leaf(leaf.as_deref()).await,
        };
        match moved {
            Ok(()) => vec![UiMsg::Reload {
                notice: Some(if editor.is_some() {
                    "Moved before the prompt; edit and send it to start a new branch.".into()
                } else {
                    "Moved to the chosen entry.".into()
                }),
                editor,
            }],
            Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
        }
    });
}
