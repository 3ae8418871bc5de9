//! `!command` in the editor runs a shell command in the working directory,
//! under the session's sandbox, and its output joins the context (as pi's
//! `!`); `!!command` keeps it out of the model's context.

use super::event_loop::{Ctx, UiMsg};
use super::transcript::Level;

/// Output lines shown in the conversation (the model gets the tool's usual cap).
const SHOWN_LINES: usize = 40;

/// Runs the `!` line `text` on a task; the result comes back as a notice.
pub fn run(ctx: &mut Ctx<'_>, text: &str) {
    let rest = &text[1..];
    let (exclude, command) = match rest.strip_prefix('!') {
        Some(c) => (true, c.trim().to_string()),
        None => (false, rest.trim().to_string()),
    };
    if command.is_empty() {
        ctx.st.set_status(
            Level::Warning,
            "Type a command after ! (or !! to keep it out of the context)",
        );
        return;
    }
    ctx.st.notice(Level::Info, format!("$ {command}"));
    ctx.st
        .set_status(Level::Info, format!("Running: {command}"));
    let app = ctx.app.clone();
    ctx.spawn(async move {
        match app.execute_bash(&command, exclude, |_| {}).await {
            Ok(r) => {
                let (level, body) = result_notice(&r.output, r.exit_code, r.cancelled);
                vec![UiMsg::Notice(level, body)]
            }
            Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
        }
    });
}

/// The notice of a finished `!` command (as it ran, or read back from the
/// session): its last lines of output, then how it ended; a warning unless
/// it ended with code 0.
pub fn result_notice(output: &str, exit_code: Option<i64>, cancelled: bool) -> (Level, String) {
    let lines: Vec<&str> = output.lines().collect();
    let skip = lines.len().saturating_sub(SHOWN_LINES);
    let mut body = String::new();
    if skip > 0 {
        body.push_str(&format!("… {skip} earlier lines\n"));
    }
    body.push_str(&lines[skip..].join("\n"));
    let level = match exit_code {
        Some(0) => Level::Info,
        _ => Level::Warning,
    };
    let status = match (cancelled, exit_code) {
        (true, _) => "cancelled".to_string(),
        (false, Some(c)) => format!("exit code {c}"),
        (false, None) => "killed".to_string(),
    };
    if !body.is_empty() {
        body.push('\n');
    }
    body.push_str(&format!("({status})"));
    (level, body)
}
