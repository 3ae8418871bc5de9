//! The slash commands pi users know for configuration and resources:
//! `/settings`, `/login`, `/logout`, `/scoped-models`, `/copy`, `/import`,
//! `/mcp` and `/reload`.

use super::terminal::TuiMode;
use makai_agent::QueueMode;

use super::clipboard;
use super::event_loop::{Ctx, UiMsg};
use super::selectors::{SelectItem, Selector, SelectorKind};
use super::transcript::Level;
use makai_auth::{AuthStore, Credential};

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn mode_name(m: QueueMode) -> &'static str {
    match m {
        QueueMode::All => "all",
        _ => "one-at-a-time",
    }
}

/// `/settings`: the switches of this session; choosing one flips it.
pub fn open_settings(ctx: &mut Ctx<'_>) {
    let (steering, follow_up) = ctx.app.queue_modes();
    let theme = super::theme::active_name();
    let rows = [
        (
            "autoCompaction",
            "Auto-compaction",
            on_off(ctx.app.auto_compaction()),
        ),
        ("autoRetry", "Auto-retry", on_off(ctx.app.auto_retry())),
        ("steeringMode", "Steering mode", mode_name(steering)),
        ("followUpMode", "Follow-up mode", mode_name(follow_up)),
        (
            "showThinking",
            "Show thinking",
            on_off(ctx.st.show_thinking),
        ),
        (
            "expandTools",
            "Expand tool output",
            on_off(ctx.st.expand_tools),
        ),
        ("theme", "Theme", theme.as_str()),
        ("scrollbar", "Scrollbar", ctx.st.scrollbar.mode.as_str()),
        ("tuiMode", "TUI mode", tui_mode(ctx.st).as_str()),
    ];
    let items = rows
        .iter()
        .map(|(key, label, value)| SelectItem::new(format!("{label}: {value}"), "", *key))
        .collect();
    ctx.st.selector = Some(Selector::new(
        "Settings (Enter switches, Esc closes)",
        SelectorKind::Settings,
        items,
    ));
}

/// Flips one setting, saves it in the user settings file as pi saves what
/// its `/settings` changes (expanding tool output is this run's only, as in
/// pi), and shows the list again with the same row selected.
pub fn toggle_setting(ctx: &mut Ctx<'_>, key: &str) {
    let flip = |m: QueueMode| match m {
        QueueMode::All => QueueMode::OneAtATime,
        _ => QueueMode::All,
    };
    let (steering, follow_up) = ctx.app.queue_modes();
    let saved: Option<(&[&str], serde_json::Value)> = match key {
        "autoCompaction" => {
            let on = !ctx.app.auto_compaction();
            ctx.app.set_auto_compaction(on);
            Some((&["compaction", "enabled"], on.into()))
        }
        "autoRetry" => {
            let on = !ctx.app.auto_retry();
            ctx.app.set_auto_retry(on);
            Some((&["retry", "enabled"], on.into()))
        }
        "steeringMode" => {
            ctx.app.set_steering_mode(flip(steering));
            Some((&["steeringMode"], mode_name(flip(steering)).into()))
        }
        "followUpMode" => {
            ctx.app.set_follow_up_mode(flip(follow_up));
            Some((&["followUpMode"], mode_name(flip(follow_up)).into()))
        }
        "showThinking" => {
            ctx.st.show_thinking = !ctx.st.show_thinking;
            Some((&["hideThinkingBlock"], (!ctx.st.show_thinking).into()))
        }
        "expandTools" => {
            ctx.st.expand_tools = !ctx.st.expand_tools;
            ctx.st.transcript.unset_summary_choices();
            None
        }
        "theme" => next_theme().map(|name| (&["theme"][..], name.into())),
        "scrollbar" => {
            let mode = ctx.st.scrollbar.mode.next();
            ctx.st.scrollbar.mode = mode;
            Some((&["fullscreenScrollbar"][..], mode.as_str().into()))
        }
        "tuiMode" => {
            let next = match tui_mode(ctx.st) {
                TuiMode::Fullscreen => TuiMode::Regular,
                TuiMode::Regular => TuiMode::Fullscreen,
            };
            ctx.st.terminal_request = Some(super::app_state::TerminalRequest::SwitchMode(next));
            // The list shows the mode the UI is switching to.
            ctx.st.regular = next == TuiMode::Regular;
            Some((&["tuiMode"][..], next.as_str().into()))
        }
        _ => None,
    };
    if let Some((path, value)) = saved {
        save_user_setting(ctx, path, value);
    }
    open_settings(ctx);
    if let Some(sel) = &mut ctx.st.selector {
        sel.selected = sel.items.iter().position(|i| i.value == key).unwrap_or(0);
    }
}

/// Writes one key of makai's user settings file (which sits above pi's);
/// a failure is said, and the change holds for this run.
pub(crate) fn save_user_setting(ctx: &mut Ctx<'_>, key: &[&str], value: serde_json::Value) {
    let Some(home) = makai_coding::makai_home() else {
        ctx.st.notice(
            Level::Warning,
            "No home folder for settings.json (set MAKAI_HOME): the change holds for this run only",
        );
        return;
    };
    let file = makai_coding::settings::Settings::user_file(&home);
    if let Err(e) = makai_coding::settings::save_setting(&file, key, value) {
        ctx.st.notice(
            Level::Error,
            format!("{e}; the change holds for this run only"),
        );
    }
}

/// The mode the UI runs in.
fn tui_mode(st: &super::app_state::UiState) -> TuiMode {
    if st.regular {
        TuiMode::Regular
    } else {
        TuiMode::Fullscreen
    }
}

/// Switches to the theme after the active one; returns its name.
fn next_theme() -> Option<String> {
    let names = super::theme::names();
    let active = super::theme::active_name();
    let at = names.iter().position(|n| *n == active).unwrap_or(0);
    let next = names.get((at + 1) % names.len().max(1))?;
    super::theme::switch_to(next).then(|| next.clone())
}

fn auth_store() -> Result<AuthStore, String> {
    let home = makai_coding::makai_home()
        .ok_or("no home folder for auth.json; set MAKAI_HOME to a folder")?;
    AuthStore::load(AuthStore::file_in(&home)).map_err(|e| e.to_string())
}

/// `/login [provider] [key]`: without a provider, who has credentials; with
/// a provider and a key, stores the key in auth.json; with a provider that
/// has a sign-in and no key, runs the sign-in.
pub fn login(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    let mut words = arg.unwrap_or("").split_whitespace();
    let (provider, key) = (words.next(), words.next());
    if let (Some(p), None) = (provider, key)
        && crate::auth::has_login(p)
    {
        super::login::start(ctx, p);
        return;
    }
    let result = (|| -> Result<String, String> {
        let mut store = auth_store()?;
        match (provider, key) {
            (None, _) => {
                let now = makai_ai::now_ms();
                let mut lines: Vec<String> = store
                    .iter()
                    .map(|(p, c)| format!("  {p}: {}", c.describe(now)))
                    .collect();
                if lines.is_empty() {
                    lines.push("  (no stored credentials)".into());
                }
                Ok(format!(
                    "Stored credentials ({}):\n{}\n/login PROVIDER KEY stores an API key; \
                     /login anthropic, /login openai-codex and /login github-copilot sign in \
                     with a Claude Pro/Max, ChatGPT or Copilot subscription",
                    store.path().display(),
                    lines.join("\n")
                ))
            }
            (Some(p), None) => Err(format!(
                "/login {p} needs the API key after the provider (/login {p} KEY); \
                 sign-ins are offered for anthropic, openai-codex and github-copilot"
            )),
            (Some(p), Some(k)) => {
                store.set(p, Credential::ApiKey { key: k.to_string() });
                store.save().map_err(|e| e.to_string())?;
                Ok(format!(
                    "API key for {p} saved to {}.",
                    store.path().display()
                ))
            }
        }
    })();
    match result {
        Ok(text) => ctx.st.notice(Level::Info, text),
        Err(e) => ctx.st.notice(Level::Error, e),
    }
}

/// `/logout [provider]`: removes stored credentials (all without a provider).
pub fn logout(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    let result = (|| -> Result<String, String> {
        let mut store = auth_store()?;
        let text = match arg {
            Some(p) => {
                if !store.remove(p) {
                    return Err(format!("No stored credentials for {p}."));
                }
                format!("Removed the credentials of {p}.")
            }
            None => {
                store.clear();
                "Removed every stored credential.".to_string()
            }
        };
        store.save().map_err(|e| e.to_string())?;
        Ok(text)
    })();
    match result {
        Ok(text) => ctx.st.notice(Level::Info, text),
        Err(e) => ctx.st.notice(Level::Error, e),
    }
}

/// `/scoped-models [patterns]`: sets (comma or space separated patterns;
/// `all` clears) or shows the models Ctrl+P cycles through.
pub fn scoped_models(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    match arg {
        Some("all") => {
            ctx.app.set_scoped_models(Vec::new());
            ctx.st
                .notice(Level::Info, "Ctrl+P cycles through every available model.");
        }
        Some(list) => {
            let patterns: Vec<String> = list
                .split([',', ' '])
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
            ctx.st.notice(
                Level::Info,
                format!("Ctrl+P cycles through: {}", patterns.join(", ")),
            );
            ctx.app.set_scoped_models(patterns);
        }
        None => super::scoped_models::open(ctx),
    }
}

/// `/copy` and Ctrl+X: copies the last assistant message.
pub fn copy_last(ctx: &mut Ctx<'_>) {
    match ctx.app.last_assistant_text() {
        Some(text) => copy_text(ctx, &text, "the last assistant message"),
        None => ctx
            .st
            .set_status(Level::Warning, "There is no assistant message to copy yet"),
    }
}

/// Copies `text` and says so on the status line.
pub fn copy_text(ctx: &mut Ctx<'_>, text: &str, what: &str) {
    match clipboard::copy(text) {
        Ok(how) => ctx
            .st
            .set_status(Level::Info, format!("Copied {what} ({how})")),
        Err(e) => ctx.st.set_status(Level::Error, format!("Copy failed: {e}")),
    }
}

/// `/import <path>`: opens a session file written by makai or pi, keeping its
/// id, in its working directory as pi does (see [`open_session_file`]).
pub fn import(ctx: &mut Ctx<'_>, arg: Option<&str>) {
    let Some(path) = arg else {
        ctx.st.notice(
            Level::Error,
            "/import needs the path of a .jsonl session file",
        );
        return;
    };
    let path = ctx.app.cwd().join(path).display().to_string();
    open_session_file(ctx, &path, "Imported");
}

/// Opens a session (`/import`, `/resume`): a file, or an id in a database
/// store. One of another directory is reopened there (the UI rebuilds the
/// session for it, see [`super::run`]); one whose directory is gone asks to
/// continue it here, fork it here, or cancel (pi 1.5.2). `done` names what
/// happened in the notice ("Imported", "Resumed").
pub fn open_session_file(ctx: &mut Ctx<'_>, value: &str, done: &'static str) {
    let path = std::path::PathBuf::from(value);
    let here = ctx.app.cwd().to_path_buf();
    match crate::session_cwd::recorded_elsewhere(&path, &here) {
        Some(dir) if dir.is_dir() => {
            ctx.st.reopen = Some((path, dir, done));
            ctx.st.quit = true;
        }
        Some(dir) => {
            let item = |label: &str, detail: String, action: &str| {
                SelectItem::new(label, detail, format!("{action}\t{value}"))
            };
            ctx.st.selector = Some(Selector::new(
                format!("{} no longer exists", dir.display()),
                SelectorKind::ImportGone,
                vec![
                    item(
                        "Continue",
                        format!("run it in {} (asked again next time)", here.display()),
                        "continue",
                    ),
                    item(
                        "Fork",
                        "copy it into this directory as a new session; the original stays".into(),
                        "fork",
                    ),
                    item("Cancel", "keep the current session".into(), "cancel"),
                ],
            ));
        }
        None => switch_to(ctx, value.to_string(), done),
    }
}

/// Opens the session `query` (a file, or an id in a database store) in this
/// directory.
fn switch_to(ctx: &mut Ctx<'_>, query: String, done: &'static str) {
    let app = ctx.app.clone();
    ctx.spawn(async move {
        match app.switch_session(&query).await {
            Ok(()) => {
                let from = if std::path::Path::new(&query).is_file() {
                    format!(" from {query}")
                } else {
                    String::new()
                };
                vec![UiMsg::Reload {
                    editor: None,
                    notice: Some(format!("{done} session {}{from}.", app.session_id())),
                }]
            }
            Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
        }
    });
}

/// The answer to the question about a session whose directory is gone.
pub fn import_gone_chosen(ctx: &mut Ctx<'_>, value: &str) {
    let Some((action, path)) = value.split_once('\t') else {
        return;
    };
    let path = path.to_string();
    match action {
        "continue" => switch_to(ctx, path, "Imported"),
        "fork" => {
            let app = ctx.app.clone();
            ctx.spawn(async move {
                match app.fork_file(&path).await {
                    Ok(()) => vec![UiMsg::Reload {
                        editor: None,
                        notice: Some(format!(
                            "Forked {path} into a new session of this directory, {}.",
                            app.session_id()
                        )),
                    }],
                    Err(e) => vec![UiMsg::Notice(Level::Error, e.to_string())],
                }
            });
        }
        _ => ctx.st.notice(Level::Info, "Import cancelled."),
    }
}

/// `/mcp`: the MCP servers and their state.
pub fn mcp(ctx: &mut Ctx<'_>) {
    let statuses = ctx.app.mcp().map(|m| m.status()).unwrap_or_default();
    if statuses.is_empty() {
        ctx.st.notice(
            Level::Info,
            "No MCP servers are configured (add one with `makai mcp add`).",
        );
        return;
    }
    let lines: Vec<String> = statuses
        .iter()
        .map(|s| {
            let tools = if s.tools.is_empty() {
                String::new()
            } else {
                format!(" · tools: {}", s.tools.join(", "))
            };
            format!("  {}: {} ({}){tools}", s.name, s.state, s.target)
        })
        .collect();
    ctx.st
        .notice(Level::Info, format!("MCP servers:\n{}", lines.join("\n")));
}

/// `/reload`: reads the settings again (what the UI draws with, the
/// agent's configuration, the `theme` setting: [`crate::app::AppSession::reload_settings`])
/// and the MCP servers ([`crate::app::AppSession::reload_mcp`]),
/// finds skills and prompt templates again, reads the themes again (the
/// active one drawn as its file now says), the instructions (context files,
/// `SYSTEM.md`, `APPEND_SYSTEM.md`: the next run's system prompt has them)
/// and the key bindings.
pub fn reload(ctx: &mut Ctx<'_>) {
    // As pi's reload asks its caller to wait: what a run uses (an MCP
    // server, its tools) is not replaced under it.
    if ctx.st.busy() || ctx.st.compacting {
        ctx.st.notice(
            Level::Warning,
            "/reload waits for the answer: run it again once it is done.",
        );
        return;
    }
    let settings = ctx.app.reload_settings();
    let fresh = ctx.app.settings();
    ctx.st.apply_settings(&fresh, ctx.app.cwd());
    if settings.changed.iter().any(|k| k == "hideThinkingBlock") {
        ctx.st.show_thinking = !fresh.hide_thinking_block;
    }
    ctx.st.load_keymap();
    let mcp = ctx.app.reload_mcp();
    let r = ctx.app.reload_resources();
    let theme_setting = settings
        .changed
        .iter()
        .any(|k| k == "theme")
        .then_some(fresh.theme.as_deref().unwrap_or("dark"));
    let theme_paths = settings
        .changed
        .iter()
        .any(|k| k == "themes")
        .then_some(fresh.themes.as_slice());
    let (themes, theme_warnings) = super::theme::reload(theme_setting, theme_paths);
    let instructions = ctx.app.reload_instructions();
    let mut text = format!(
        "Reloaded: {} skills, {} prompt templates, {themes} themes, {} context files, {}.",
        r.skills.len(),
        r.templates.len(),
        instructions.context_files.len(),
        match settings.changed.len() {
            0 => "settings unchanged".to_string(),
            1 => format!("1 setting changed ({})", settings.changed[0]),
            n => format!("{n} settings changed ({})", settings.changed.join(", ")),
        }
    );
    for (what, servers) in [
        ("started", &mcp.servers.added),
        (
            "restarted with their new configuration",
            &mcp.servers.changed,
        ),
        ("stopped", &mcp.servers.removed),
    ] {
        if !servers.is_empty() {
            text.push_str(&format!("\n  MCP servers {what}: {}", servers.join(", ")));
        }
    }
    if !settings.enabled_tools.is_empty() {
        text.push_str(&format!(
            "\n  tools enabled (added to defaultTools): {}",
            settings.enabled_tools.join(", ")
        ));
    }
    if !settings.at_next_start.is_empty() {
        text.push_str(&format!(
            "\n  takes effect when makai starts again: {}",
            settings.at_next_start.join(", ")
        ));
    }
    for w in &r.warnings {
        text.push_str(&format!("\n  {w}"));
    }
    for w in settings
        .warnings
        .iter()
        .chain(&mcp.warnings)
        .chain(&theme_warnings)
        .chain(&instructions.warnings)
    {
        text.push_str(&format!("\n  {w}"));
    }
    ctx.st.notice(Level::Info, text);
}
