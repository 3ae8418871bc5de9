//! `report.json`: makai's version, the system and terminal, the session,
//! the model and its provider (how it is signed in, never with what), the
//! MCP servers and the settings, every credential left out.

use std::path::Path;

use serde_json::{Value, json};

use crate::app::AppSession;

use super::redact::redact_json;

/// What the report says of the session.
pub struct SessionFacts<'a> {
    /// The report's id.
    pub id: &'a str,
    /// When it was made (RFC 3339).
    pub created_at: &'a str,
    /// What the user said of the problem.
    pub hint: Option<&'a str>,
    /// Whether `session.jsonl` is in the report.
    pub include_session: bool,
    /// Whether `summary.md` is in the report.
    pub include_summary: bool,
}

/// `report.json` for `app` (pi's fields; makai adds `mcpServers` and the
/// settings in force).
pub async fn collect(app: &AppSession, facts: &SessionFacts<'_>, home: Option<&Path>) -> Value {
    let model = app.model();
    let source = app.keys().source(&model.provider).await.ok().flatten();
    let message_count = app.with_messages(|m| m.len());
    let header_names = |headers: &std::collections::BTreeMap<String, String>| -> Vec<String> {
        headers.keys().cloned().collect()
    };
    let mcp_servers: Vec<Value> = app
        .mcp()
        .map(|m| m.status())
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            // The command line or URL is left out: arguments carry tokens.
            let mut v = serde_json::to_value(&s).unwrap_or(Value::Null);
            if let Some(map) = v.as_object_mut() {
                map.remove("target");
            }
            v
        })
        .collect();
    json!({
        "schemaVersion": super::SCHEMA_VERSION,
        "id": facts.id,
        "createdAt": facts.created_at,
        "hint": facts.hint,
        "environment": environment(),
        "session": {
            "id": app.session_id(),
            "included": facts.include_session,
            "summaryIncluded": facts.include_summary,
            "messageCount": message_count,
            "cwd": app.cwd().display().to_string(),
        },
        "model": redact_json(&json!({
            "provider": model.provider,
            "id": model.id,
            "name": model.name,
            "api": model.api.as_str(),
            "baseUrl": model.base_url,
            "reasoning": model.reasoning,
            "input": model.input,
            "contextWindow": model.context_window,
            "maxTokens": model.max_tokens,
            "compat": model.compat,
            "thinkingLevelMap": model.thinking_level_map,
            "headerNames": header_names(&model.headers),
        })),
        "provider": {
            "id": model.provider,
            "baseUrl": super::redact::redact_url(&model.base_url),
            "headerNames": header_names(&model.headers),
            "authStatus": source.map(source_name).unwrap_or("none"),
            "usingOAuth": source == Some(makai_auth::KeySource::OAuth),
        },
        "thinkingLevel": app.thinking_level(),
        "mcpServers": mcp_servers,
        "settings": settings(app, home),
    })
}

fn source_name(source: makai_auth::KeySource) -> &'static str {
    use makai_auth::KeySource::*;
    match source {
        Flag => "flag",
        AuthFile => "auth_file",
        OAuth => "oauth",
        ModelsJson => "models_json",
        Environment => "environment",
    }
}

/// The system, the terminal, and which of makai's and pi's variables are
/// set (their names only).
fn environment() -> Value {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let (release, version) = match nix::sys::utsname::uname() {
        Ok(u) => (
            u.release().to_string_lossy().into_owned(),
            u.version().to_string_lossy().into_owned(),
        ),
        Err(_) => (String::new(), String::new()),
    };
    let mut variables: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("MAKAI_") || k.starts_with("PI_"))
        .collect();
    variables.sort();
    let version_text = env!("CARGO_PKG_VERSION");
    json!({
        "version": version_text,
        "userAgent": format!("makai/{version_text}"),
        "runtime": format!("makai {version_text} (Rust, Tokio)"),
        "platform": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "osRelease": release,
        "osVersion": version,
        "shell": var("SHELL"),
        "terminal": {
            "term": var("TERM"),
            "program": var("TERM_PROGRAM"),
            "programVersion": var("TERM_PROGRAM_VERSION"),
            "colorterm": var("COLORTERM"),
            "tmux": set("TMUX"),
            "ssh": set("SSH_CONNECTION") || set("SSH_TTY"),
            "ci": set("CI"),
        },
        "piEnvironmentVariables": variables,
    })
}

/// The user files' settings merged (`global`), the project's (`project`,
/// when the project is trusted), and the settings in force (`inForce`).
fn settings(app: &AppSession, home: Option<&Path>) -> Value {
    let pi = makai_coding::resources::pi_agent_dir();
    let files = makai_coding::settings::Settings::files(
        app.cwd(),
        home,
        pi.as_deref(),
        app.project_trust().trusted,
    );
    let mut global = serde_json::Map::new();
    let mut project = serde_json::Map::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file.path) else {
            continue;
        };
        let read = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) | Err(_) => {
                let mut note = serde_json::Map::new();
                note.insert(
                    "unreadable".into(),
                    Value::String(file.path.display().to_string()),
                );
                note
            }
        };
        let into = if file.project {
            &mut project
        } else {
            &mut global
        };
        into.extend(read);
    }
    json!({
        "global": redact_json(&Value::Object(global)),
        "project": redact_json(&Value::Object(project)),
        "inForce": redact_json(&serde_json::to_value(app.settings()).unwrap_or(Value::Null)),
    })
}
