//! Slash commands typed in the editor (`/help` lists them).

use makai_ai::ThinkingLevel;

use super::config_commands;
use super::event_loop::{Ctx, UiMsg};
use super::pickers;
use super::transcript::Level;
use crate::app::stats::usage_line;

/// Every command with a one-line description, in the order `/help` lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    ("model", "Choose the model (or /model provider/id)"),
    ("thinking", "Choose the thinking level (or /thinking high)"),
    ("new", "Start a new session"),
    ("resume", "Open another saved session"),
    (
        "tree",
        "Go to another point of the session tree (switch branch)",
    ),
    ("fork", "Start a new session from an earlier prompt"),
    ("clone", "Copy the current branch into a new session"),
    (
        "compact",
        "Summarize older messages to free context (optional instructions)",
    ),
    (
        "session",
        "Show the session file, id, messages, tokens and cost",
    ),
    ("name", "Name the session (without a name: show it)"),
    ("cost", "Show the tokens used and their cost"),
    (
        "export",
        "Save the session as HTML (optional path; a .jsonl path: JSONL)",
    ),
    (
        "share",
        "Upload the session's HTML to a private GitHub gist (gh)",
    ),
    ("import", "Open a .jsonl session file (makai's or pi's)"),
    (
        "bug",
        "Prepare a private bug report (a zip to review and send; optional description)",
    ),
    ("copy", "Copy the last assistant message"),
    (
        "settings",
        "Switch auto-compaction, auto-retry, queue modes, display",
    ),
    (
        "scoped-models",
        "Choose the models Ctrl+P cycles through, and their order (or patterns)",
    ),
    (
        "login",
        "Show stored credentials; /login PROVIDER KEY, or sign in: /login anthropic",
    ),
    ("logout", "Remove stored credentials (/logout PROVIDER)"),
    ("mcp", "Show the MCP servers and their tools"),
    (
        "llama",
        "Load, unload or download a llama.cpp router's models (LLAMA_BASE_URL)",
    ),
    (
        "trust",
        "Show the project's trust, or save a decision: /trust yes|no|forget",
    ),
    (
        "reload",
        "Re-read the settings, keybindings.json and AGENTS.md; find skills, prompt templates and themes again",
    ),
    ("hotkeys", "Show the keyboard shortcuts"),
    ("help", "Show the commands"),
    ("quit", "Leave makai"),
];

/// Shortcuts that are not actions of the key map, for `/hotkeys`.
const OTHER_KEYS: &[(&str, &str)] = &[
    ("Mouse wheel", "Scroll the conversation"),
    (
        "!command",
        "Run a shell command in the sandbox (!! keeps it out of the context)",
    ),
    (
        "/",
        "Commands, prompt templates and /skill:name (Tab or Enter completes)",
    ),
    ("@", "Complete a file path (Tab or Enter inserts)"),
];

/// True when `text` starts with a built-in command (`/name` or `/name args`)
/// or looks like a mistyped one. Prompt templates and `/skill:name` are
/// checked first by the caller (they go to the model, expanded).
pub fn is_command(text: &str) -> bool {
    let name = text[1..].split_whitespace().next().unwrap_or("");
    COMMANDS.iter().any(|(n, _)| *n == name) || name == "exit"
        // `/something` alone (no other slash) is a mistyped command, not a path.
        || (!name.is_empty() && !name.contains('/') && !text.trim().contains(' '))
}

fn table(rows: &[(&str, &str)], prefix: &str) -> String {
    let w = rows
        .iter()
        .map(|(k, _)| k.chars().count() + prefix.len())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("  {:<w$}  {v}", format!("{prefix}{k}")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs a slash command line.
pub fn run(ctx: &mut Ctx<'_>, line: &str) {
    let line = line.trim();
    let (name, arg) = match line[1..].split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (&line[1..], ""),
    };
    let arg = (!arg.is_empty()).then_some(arg);
    match name {
        "help" => ctx
            .st
            .notice(Level::Info, format!("Commands:\n{}", table(COMMANDS, "/"))),
        "hotkeys" => {
            let mut rows = ctx.st.keymap.rows();
            rows.extend(
                OTHER_KEYS
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
            let rows: Vec<(&str, &str)> =
                rows.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            ctx.st.notice(
                Level::Info,
                format!(
                    "Keyboard shortcuts (change them in {}):\n{}",
                    super::keymap::FILE_NAME,
                    table(&rows, "")
                ),
            )
        }
        "quit" | "exit" => ctx.st.quit = true,
        "model" => pickers::open_models(ctx, arg),
        "thinking" => thinking(ctx, arg),
        "new" => {
            let app = ctx.app.clone();
            ctx.spawn(async move {
                match app.new_session(None).await {
                    Ok(()) => vec![UiMsg::Reload {
                        editor: None,
                        notice: Some("New session started.".into()),
                    }],
                    Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
                }
            });
        }
        "resume" => super::resume::open_resume(ctx, super::resume::ResumeScope::Start),
        "tree" => pickers::open_tree(ctx),
        "fork" => pickers::open_fork(ctx),
        "clone" => {
            let app = ctx.app.clone();
            ctx.spawn(async move {
                match app.clone_branch().await {
                    Ok(()) => vec![UiMsg::Reload {
                        editor: None,
                        notice: Some(format!("Branch copied into session {}.", app.session_id())),
                    }],
                    Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
                }
            });
        }
        "compact" => {
            if ctx.st.compacting {
                ctx.st
                    .set_status(Level::Warning, "A compaction is already running");
                return;
            }
            ctx.st.compacting = true;
            let app = ctx.app.clone();
            let instructions = arg.map(str::to_string);
            ctx.spawn(async move {
                // Success and failure are reported by the compaction events.
                let _ = app.compact(instructions.as_deref()).await;
                vec![UiMsg::Refresh]
            });
        }
        "session" => session_info(ctx),
        "name" => match arg {
            Some(n) => match ctx.app.set_session_name(n) {
                Ok(()) => {
                    ctx.st.refresh(ctx.app);
                    ctx.st.notice(Level::Info, format!("Session name: {n}"));
                }
                Err(e) => ctx.st.notice(Level::Error, e.to_string()),
            },
            None => {
                let name = ctx.app.session_name();
                let text = name.map_or_else(
                    || "The session has no name; set one with /name NAME.".to_string(),
                    |n| format!("Session name: {n}"),
                );
                ctx.st.notice(Level::Info, text);
            }
        },
        "cost" => cost(ctx),
        "import" => config_commands::import(ctx, arg),
        "copy" => config_commands::copy_last(ctx),
        "settings" => config_commands::open_settings(ctx),
        "scoped-models" => config_commands::scoped_models(ctx, arg),
        "login" => config_commands::login(ctx, arg),
        "logout" => config_commands::logout(ctx, arg),
        "mcp" => config_commands::mcp(ctx),
        "llama" => super::llama::open(ctx, arg),
        "reload" => config_commands::reload(ctx),
        "trust" => match crate::app::trust::trust_command(
            arg.unwrap_or(""),
            ctx.app.cwd(),
            makai_coding::makai_home().as_deref(),
            ctx.app.project_trust(),
        ) {
            Ok(text) => ctx.st.notice(Level::Info, text),
            Err(e) => ctx.st.notice(Level::Error, e),
        },
        "bug" => super::bug::open(ctx, arg),
        "share" => {
            let app = ctx.app.clone();
            ctx.st.set_status(Level::Info, "Sharing the session…");
            ctx.spawn(async move {
                vec![match crate::export_html::share(&app).await {
                    Ok(url) => UiMsg::Notice(Level::Info, format!("Session shared: {url}")),
                    Err(e) => UiMsg::Notice(Level::Error, e.to_string()),
                }]
            });
        }
        "export" => match crate::export_html::export(ctx.app, arg) {
            Ok(path) => ctx
                .st
                .notice(Level::Info, format!("Session exported to {path}")),
            Err(e) => ctx.st.notice(Level::Error, format!("Export failed: {e}")),
        },
        other => ctx.st.notice(
            Level::Error,
            format!("Unknown command /{other}. /help lists the commands."),
        ),
    }
}

/// `/thinking [level]`.
fn thinking(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    let Some(arg) = arg else {
        pickers::open_thinking(ctx);
        return;
    };
    match arg.parse::<ThinkingLevel>() {
        Ok(level) => set_thinking(ctx, level),
        Err(e) => ctx.st.notice(Level::Error, e),
    }
}

/// Sets the thinking level and says what it became (models clamp it).
pub fn set_thinking(ctx: &mut Ctx<'_>, level: ThinkingLevel) {
    if !ctx.app.model().reasoning && level != ThinkingLevel::Off {
        ctx.st.notice(
            Level::Warning,
            format!(
                "{} does not reason; the thinking level stays off.",
                ctx.app.model().id
            ),
        );
        return;
    }
    ctx.app.set_thinking_level(level);
    ctx.st.refresh(ctx.app);
    let now = ctx.app.thinking_level();
    ctx.st
        .set_status(Level::Info, format!("Thinking level: {}", now.as_str()));
}

/// Shift+Tab: the next thinking level.
pub fn cycle_thinking(ctx: &mut Ctx<'_>) {
    match ctx.app.cycle_thinking_level() {
        Some(level) => {
            ctx.st.refresh(ctx.app);
            ctx.st
                .set_status(Level::Info, format!("Thinking level: {}", level.as_str()));
        }
        None => ctx
            .st
            .set_status(Level::Warning, "This model does not support thinking"),
    }
}

fn session_info(ctx: &mut Ctx<'_>) {
    let s = ctx.app.session_stats();
    let mut lines = vec![
        format!(
            "Session file: {}",
            s.session_file.as_deref().unwrap_or("(not saved)")
        ),
        format!("Session id: {}", s.session_id),
    ];
    if let Some(name) = ctx.app.session_name() {
        lines.push(format!("Name: {name}"));
    }
    let model = ctx.app.model();
    lines.push(format!(
        "Model: {}/{} • thinking {}",
        model.provider,
        model.id,
        ctx.app.thinking_level().as_str()
    ));
    lines.push(format!(
        "Messages: {} user, {} assistant, {} tool calls, {} tool results ({} in all)",
        s.user_messages, s.assistant_messages, s.tool_calls, s.tool_results, s.total_messages
    ));
    lines.push(format!(
        "Tokens: {} in, {} out, {} cache read, {} cache write ({} in all)",
        s.tokens.input, s.tokens.output, s.tokens.cache_read, s.tokens.cache_write, s.tokens.total
    ));
    lines.push(format!("Cost: ${:.4}", s.cost));
    lines.push(format!("Cache warming: {}", ctx.app.cache_warming_status()));
    lines.push(crate::sandboxing::describe(ctx.app.sandbox()));
    if let Some(c) = &s.context_usage {
        lines.push(match (c.tokens, c.percent) {
            (Some(t), Some(p)) => format!("Context: {t} of {} tokens ({p:.1}%)", c.context_window),
            _ => format!(
                "Context: unknown until the next reply (window {})",
                c.context_window
            ),
        });
    }
    ctx.st.notice(Level::Info, lines.join("\n"));
}

fn cost(ctx: &mut Ctx<'_>) {
    let mut lines = Vec::new();
    ctx.app.with_messages(|messages| {
        let mut turn = 0;
        for m in messages {
            if let Some(a) = m.as_assistant() {
                turn += 1;
                lines.push(usage_line(&format!("turn {turn}"), &a.usage));
            }
        }
    });
    let keep = lines.len().saturating_sub(10);
    let mut shown: Vec<String> = lines.split_off(keep);
    if keep > 0 {
        shown.insert(0, format!("({keep} earlier turns not shown)"));
    }
    shown.push(usage_line(
        "session",
        &ctx.app.with_messages(crate::app::stats::total_usage),
    ));
    ctx.st.notice(Level::Info, shown.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_told_from_paths() {
        assert!(is_command("/help"));
        assert!(is_command("/compact keep the API notes"));
        assert!(is_command("/nosuch"));
        assert!(!is_command("/usr/bin/env is a path"));
        assert!(!is_command("/etc/hosts"));
        assert!(table(COMMANDS, "/").contains("/model"));
    }
}
