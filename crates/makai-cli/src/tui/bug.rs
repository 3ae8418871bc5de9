//! `/bug [description]`: asks what went wrong (unless the command says it),
//! then what the report tells of the conversation (the transcript, nothing,
//! or the model's summary of the problem), and writes the report's archive
//! ([`crate::bug_report`]).

use super::event_loop::{Ctx, UiMsg};
use super::selectors::{SelectItem, Selector, SelectorKind};
use super::transcript::Level;
use crate::bug_report::{self, Content};

/// `/bug`, with the description typed after it if any.
pub(super) fn open(ctx: &mut Ctx<'_>, description: Option<&str>) {
    match description {
        Some(d) => ask_content(ctx, d.to_string()),
        None => {
            ctx.st.selector = Some(Selector::prompt(
                "Report a bug",
                SelectorKind::BugDescription,
                "what went wrong",
                "",
                vec![SelectItem::new(
                    "Describe the problem (optional)",
                    "Enter to go on, Esc to cancel",
                    "",
                )],
            ));
        }
    }
}

/// Asks what the report tells of the conversation.
pub(super) fn ask_content(ctx: &mut Ctx<'_>, description: String) {
    let provider = ctx.app.model().provider;
    let choice = |label: &str, detail: String, value: &str| SelectItem::new(label, detail, value);
    ctx.st.selector = Some(Selector::new(
        "What should the bug report include?",
        SelectorKind::BugContent(description),
        vec![
            choice(
                "Include the session transcript",
                "the current branch: prompts, answers, file contents and command output".into(),
                "transcript",
            ),
            choice(
                "Leave the transcript out",
                "settings, environment and error diagnostics only".into(),
                "nothing",
            ),
            choice(
                "Have the model summarize the problem",
                format!("the transcript goes to {provider} once; only the summary is kept"),
                "summary",
            ),
        ],
    ));
}

/// Writes the report with what the user chose.
pub(super) fn content_chosen(ctx: &mut Ctx<'_>, description: String, value: &str) {
    let content = match value {
        "transcript" => Content::Transcript,
        "summary" => Content::Summary,
        _ => Content::Nothing,
    };
    if content == Content::Summary {
        if ctx.app.is_streaming() {
            ctx.st.notice(
                Level::Error,
                "An answer is streaming; ask for the summary when it ends.",
            );
            return;
        }
        ctx.st.compacting = true;
        ctx.st.summarizing = Some("Writing the bug report's summary");
    } else {
        ctx.st.set_status(Level::Info, "Preparing the bug report…");
    }
    let app = ctx.app.clone();
    ctx.spawn(async move {
        let home = makai_coding::makai_home();
        let written = bug_report::prepare(&app, Some(&description), content, home.as_deref()).await;
        let mut out = Vec::new();
        if content == Content::Summary {
            out.push(UiMsg::SummaryEnded);
        }
        out.push(match written {
            Ok(w) => UiMsg::Notice(Level::Info, saved_notice(&w)),
            Err(e) => UiMsg::Notice(Level::Error, format!("No bug report: {e}")),
        });
        out
    });
}

fn saved_notice(w: &bug_report::Written) -> String {
    let crashes = match w.crashes {
        0 => String::new(),
        1 => " It holds the crash recorded earlier.".into(),
        n => format!(" It holds the {n} crashes recorded earlier."),
    };
    format!(
        "Bug report {} saved to {}.{crashes} Review it before you send it: it can hold what the session read.",
        w.id,
        w.path.display()
    )
}
