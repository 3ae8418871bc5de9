//! `makai mcp list/add/remove`: the logic behind the subcommands.
//!
//! Editing keeps everything else in the settings file as it was (other keys,
//! their order, other servers); the file is replaced atomically.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::McpServerConfig;
use crate::load::{
    ConfigScope, LoadedMcpConfig, McpConfigError, SERVERS_KEY, load_mcp_config,
    project_settings_file, read_settings_object, user_settings_file,
};
use crate::manager::McpManager;
use crate::status::ServerStatus;
use crate::supervisor::McpOptions;

/// The settings file of `scope`: `<home>/settings.json` or `<cwd>/.makai/settings.json`.
pub fn settings_file_for(
    scope: ConfigScope,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, McpConfigError> {
    match scope {
        ConfigScope::Project => Ok(project_settings_file(cwd)),
        ConfigScope::User => home
            .map(user_settings_file)
            .ok_or_else(|| McpConfigError::Invalid {
                path: PathBuf::from("~/.makai/settings.json"),
                reason: "the home folder is unknown; set MAKAI_HOME".into(),
            }),
    }
}

/// Checks a server name for `makai mcp add`: letters, digits, `-` and `_`,
/// at most 40 characters (its tools are named `mcp__<name>__<tool>`).
pub fn validate_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 40 {
        return Err(format!(
            "the MCP server name {name:?} must have 1 to 40 characters"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "the MCP server name {name:?} contains {c:?}; use only letters, digits, '-' and '_'"
        ));
    }
    Ok(())
}

/// Adds server `name` to the settings file `file` (created if missing).
/// An existing entry of that name is an error unless `replace` is set.
/// Returns a message for the user.
pub fn add_server(
    file: &Path,
    name: &str,
    config: &McpServerConfig,
    replace: bool,
) -> Result<String, McpConfigError> {
    validate_server_name(name).map_err(|reason| McpConfigError::Invalid {
        path: file.to_path_buf(),
        reason,
    })?;
    let mut root = read_settings_object(file)?.unwrap_or_default();
    let servers = servers_mut(file, &mut root)?;
    let existed = servers.contains_key(name);
    if existed && !replace {
        return Err(McpConfigError::Invalid {
            path: file.to_path_buf(),
            reason: format!(
                "an MCP server named '{name}' already exists; remove it first or choose another name"
            ),
        });
    }
    servers.insert(name.to_string(), config.to_json());
    write_settings(file, &root)?;
    Ok(format!(
        "{} MCP server '{name}' ({}) in {}",
        if existed { "Replaced" } else { "Added" },
        config.target(),
        file.display()
    ))
}

/// Removes server `name` from the settings file `file`. Returns a message;
/// a missing server is an error naming the servers that do exist there.
pub fn remove_server(file: &Path, name: &str) -> Result<String, McpConfigError> {
    let Some(mut root) = read_settings_object(file)? else {
        return Err(McpConfigError::Invalid {
            path: file.to_path_buf(),
            reason: format!("there is no MCP server named '{name}' (the file does not exist)"),
        });
    };
    let servers = servers_mut(file, &mut root)?;
    if servers.shift_remove(name).is_none() {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(McpConfigError::Invalid {
            path: file.to_path_buf(),
            reason: format!(
                "there is no MCP server named '{name}' here (it has: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        });
    }
    if servers.is_empty() {
        root.shift_remove(SERVERS_KEY);
    }
    write_settings(file, &root)?;
    Ok(format!(
        "Removed MCP server '{name}' from {}",
        file.display()
    ))
}

fn servers_mut<'a>(
    file: &Path,
    root: &'a mut Map<String, Value>,
) -> Result<&'a mut Map<String, Value>, McpConfigError> {
    let entry = root
        .entry(SERVERS_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry
        .as_object_mut()
        .ok_or_else(|| McpConfigError::Invalid {
            path: file.to_path_buf(),
            reason: format!("\"{SERVERS_KEY}\" is not an object"),
        })
}

/// Writes a settings object (pretty JSON, trailing newline) via a temporary
/// file and a rename, so a crash never leaves half a file.
fn write_settings(file: &Path, root: &Map<String, Value>) -> Result<(), McpConfigError> {
    let io = |source| McpConfigError::Io {
        path: file.to_path_buf(),
        source,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut text = serde_json::to_string_pretty(root).map_err(|e| McpConfigError::Invalid {
        path: file.to_path_buf(),
        reason: e.to_string(),
    })?;
    text.push('\n');
    let tmp = file.with_extension(format!("json.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, file).map_err(|e| {
        // Cleaning up after a failed write; the error above is what matters.
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// `makai mcp list`: loads the servers of both settings files, starts them,
/// waits up to `wait` for them to settle, and describes each one (state,
/// tools, or why it failed). The servers are stopped before returning.
pub async fn list_report(cwd: &Path, home: Option<&Path>, wait: Duration) -> String {
    match load_mcp_config(cwd, home) {
        Ok(loaded) => report_servers(loaded, cwd, wait).await,
        Err(e) => format!("Cannot read the MCP settings: {e}\n"),
    }
}

/// [`list_report`] for servers already loaded (the caller chose the files:
/// `makai mcp list` leaves an untrusted project's out).
pub async fn report_servers(loaded: LoadedMcpConfig, cwd: &Path, wait: Duration) -> String {
    if loaded.servers.is_empty() {
        return format_report(&loaded, &[], &[]);
    }
    let manager = McpManager::start(
        loaded
            .servers
            .iter()
            .map(|e| (e.name.clone(), e.config.clone())),
        McpOptions::new(cwd),
    );
    manager.wait_settled(wait).await;
    let status = manager.status();
    let tools = manager.tools();
    let described: Vec<(String, String, bool)> = tools
        .iter()
        .map(|t| {
            (
                t.name().to_string(),
                first_line(t.description()),
                t.read_only(),
            )
        })
        .collect();
    manager.shutdown().await;
    format_report(&loaded, &status, &described)
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 100 {
        let cut: String = line.chars().take(99).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// Formats the report of [`list_report`] from its parts: `tools` holds
/// (agent name, description, read-only) of the ready servers' tools.
pub fn format_report(
    loaded: &LoadedMcpConfig,
    status: &[ServerStatus],
    tools: &[(String, String, bool)],
) -> String {
    let mut out = String::new();
    if loaded.servers.is_empty() {
        out.push_str("No MCP servers are configured. Add one with `makai mcp add NAME -- COMMAND [ARGS...]` or `makai mcp add NAME --url URL`.\n");
    }
    for entry in &loaded.servers {
        let st = status.iter().find(|s| s.name == entry.name);
        let state = st
            .map(|s| s.state.to_string())
            .unwrap_or_else(|| "not started".into());
        let server_exposure = entry.config.exposure.unwrap_or_default();
        out.push_str(&format!(
            "{} [{}] {}\n  {}\n  defined in {}\n  exposure: {}\n",
            entry.name,
            entry.scope,
            state,
            entry.config.target(),
            entry.source.display(),
            server_exposure.as_str()
        ));
        if let Some(info) = st.and_then(|s| s.server_info.as_deref()) {
            out.push_str(&format!("  server: {info}\n"));
        }
        if let Some(st) = st
            && st.state.is_ready()
        {
            if st.tools.is_empty() {
                out.push_str("  (no tools)\n");
            }
            for name in &st.tools {
                // A tool whose exposure is not its server's says its own.
                let remote = name
                    .strip_prefix(&crate::naming::server_prefix(&entry.name))
                    .unwrap_or(name);
                let own = entry.config.exposure_of(remote);
                let marked = if own == server_exposure {
                    String::new()
                } else {
                    format!(" [{}]", own.as_str())
                };
                match tools.iter().find(|(n, _, _)| n == name) {
                    Some((_, desc, ro)) => out.push_str(&format!(
                        "  - {name}{marked}{}{}{desc}\n",
                        if *ro { " (read-only)" } else { "" },
                        if desc.is_empty() { "" } else { ": " }
                    )),
                    None => out.push_str(&format!("  - {name}{marked}\n")),
                }
            }
        }
    }
    for w in &loaded.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
