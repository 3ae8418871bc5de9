//! Reading `mcpServers` from the user and project files.
//!
//! The servers come from the `mcpServers` object of these files
//! ([`McpSources::standard`]), lowest precedence first:
//! - user: pi's `<agent dir>/mcp.json` (pi 1.5.2 keeps its servers there),
//!   `<home>/mcp.json` and `<home>/settings.json` (home is `$MAKAI_HOME` or
//!   `~/.makai`; the settings file is `makai_coding::settings`'s);
//! - project (only when the project is trusted, `makai_coding::trust`):
//!   `<cwd>/.pi/mcp.json`, `<cwd>/.makai/mcp.json`, `<cwd>/.makai/settings.json`.
//!
//! A server's name has only letters, digits, `-` and `_` (an entry with
//! another name is skipped with a warning). Names that differ only in `-` and
//! `_` are one server, as in pi: a second such entry in one file is skipped.
//! A later entry replaces an earlier one of the same name. A later entry
//! without `command`, `url` or `type` changes only `enabled`, `exposure` and
//! `toolExposure` of the earlier one and keeps the rest (pi's project
//! override: `{"enabled": false}` turns a user server off in one project).
//!
//! `autoEnableCodemode` beside `mcpServers` (default `true`; a later file's
//! value wins) lets makai turn the `codemode` tool on when servers have
//! tools only scripts reach.
//!
//! A project settings file comes with the repository, and an MCP server entry
//! runs a command as soon as makai starts. Like the other keys that widen what
//! makai may run (see `makai_coding::settings::PROJECT_RESTRICTED_KEYS`), the
//! project's `mcpServers` are therefore used only when the user settings say
//! `"trustProjectSettings": true`; otherwise they are listed as ignored, with
//! the reason, in [`LoadedMcpConfig::warnings`].

use std::path::{Path, PathBuf};

use serde_json::Value;

use makai_coding::settings::{Settings, SettingsError, read_settings_file};

use crate::config::McpServerConfig;

/// The settings key holding the servers.
pub const SERVERS_KEY: &str = "mcpServers";

/// Which settings file an entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigScope {
    /// The user settings file.
    User,
    /// The project settings file.
    Project,
}

impl std::fmt::Display for ConfigScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfigScope::User => "user",
            ConfigScope::Project => "project",
        })
    }
}

/// One configured server and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerEntry {
    /// The name under `mcpServers` (its tools are called `mcp__<name>__<tool>`).
    pub name: String,
    /// Its configuration.
    pub config: McpServerConfig,
    /// Whether a user or a project file defined it.
    pub scope: ConfigScope,
    /// The file that defined it (a later entry that changed only `enabled`
    /// does not change this).
    pub source: PathBuf,
}

/// The name of the file that holds only MCP servers (pi 1.5.2's `mcp.json`).
pub const MCP_FILE: &str = "mcp.json";

/// The files MCP servers are read from, by scope, lowest precedence first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpSources {
    /// User files. A `"trustProjectSettings": true` in any of them lets the
    /// project files' servers run (see the module docs).
    pub user: Vec<PathBuf>,
    /// Project files; empty for a project that is not trusted.
    pub project: Vec<PathBuf>,
}

impl McpSources {
    /// The standard files (see the module docs): user files from pi's agent
    /// folder (`pi_agent_dir`, if any) and the makai home (`home`, if
    /// known); the project files of `cwd` when `project_trusted`.
    pub fn standard(
        cwd: &Path,
        home: Option<&Path>,
        pi_agent_dir: Option<&Path>,
        project_trusted: bool,
    ) -> Self {
        let mut user = Vec::new();
        if let Some(dir) = pi_agent_dir {
            user.push(dir.join(MCP_FILE));
        }
        if let Some(home) = home {
            user.push(home.join(MCP_FILE));
            user.push(user_settings_file(home));
        }
        // A home that is pi's agent folder too is read once.
        let mut seen = Vec::new();
        user.retain(|p| {
            let key = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            let first = !seen.contains(&key);
            seen.push(key);
            first
        });
        let project = if project_trusted {
            Self::project_files(cwd)
        } else {
            Vec::new()
        };
        McpSources { user, project }
    }

    /// The project files of `cwd`, whether or not they exist.
    pub fn project_files(cwd: &Path) -> Vec<PathBuf> {
        vec![
            cwd.join(".pi").join(MCP_FILE),
            cwd.join(".makai").join(MCP_FILE),
            project_settings_file(cwd),
        ]
    }
}

/// The servers of both settings files, merged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedMcpConfig {
    /// The usable servers, user entries first, each name once.
    pub servers: Vec<ServerEntry>,
    /// Entries that were ignored and why (invalid entries, untrusted project servers).
    pub warnings: Vec<String>,
    /// The settings files that existed, user first.
    pub sources: Vec<PathBuf>,
    /// pi's `autoEnableCodemode`: turn `codemode` on for servers whose tools
    /// only scripts reach (`None`: unset, which means yes).
    pub auto_enable_codemode: Option<bool>,
}

impl LoadedMcpConfig {
    /// Whether `codemode` is turned on for servers whose tools only scripts
    /// reach (pi's `autoEnableCodemode`, default `true`).
    pub fn auto_enables_codemode(&self) -> bool {
        self.auto_enable_codemode.unwrap_or(true)
    }
}

impl LoadedMcpConfig {
    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// A settings file that cannot be read or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// The file exists but cannot be read or written.
    #[error("cannot access settings file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a JSON object, or `mcpServers` is not an object.
    #[error("settings file {path} is invalid: {reason}. Fix the file or remove it")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The user settings file under a makai home folder.
pub fn user_settings_file(home: &Path) -> PathBuf {
    Settings::user_file(home)
}

/// The project settings file of a working directory.
pub fn project_settings_file(cwd: &Path) -> PathBuf {
    Settings::project_file(cwd)
}

/// Reads a settings file as a JSON object; `None` when missing or empty
/// (makai-coding's reader: one reader of settings files).
pub(crate) fn read_settings_object(
    path: &Path,
) -> Result<Option<serde_json::Map<String, Value>>, McpConfigError> {
    read_settings_file(path).map_err(|e| match e {
        SettingsError::Read { path, source } => McpConfigError::Io { path, source },
        SettingsError::Invalid { path, reason } => McpConfigError::Invalid { path, reason },
        other => McpConfigError::Invalid {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    })
}

/// Loads the servers of makai's own standard files for `cwd`, the project's
/// included ([`McpSources::standard`] without pi's agent folder). `home` is
/// the makai home folder (`makai_coding::makai_home()`); `None` skips the
/// user files.
pub fn load_mcp_config(cwd: &Path, home: Option<&Path>) -> Result<LoadedMcpConfig, McpConfigError> {
    load_mcp_sources(&McpSources::standard(cwd, home, None, true), cwd)
}

/// Loads the servers from explicit files (see the module docs). A relative
/// `cwd` of a server resolves against `cwd`, the session's folder. A missing file is
/// skipped; a file that is not JSON, or whose `mcpServers` is not an object,
/// is an error naming it.
pub fn load_mcp_sources(
    sources: &McpSources,
    cwd: &Path,
) -> Result<LoadedMcpConfig, McpConfigError> {
    let mut out = LoadedMcpConfig::default();
    let mut trust = false;
    for path in &sources.user {
        let Some(obj) = read_settings_object(path)? else {
            continue;
        };
        out.sources.push(path.to_path_buf());
        trust |= obj.get("trustProjectSettings").and_then(Value::as_bool) == Some(true);
        read_auto_enable(&mut out, path, &obj);
        for (name, value) in servers_of(path, &obj)? {
            merge_entry(&mut out, path, ConfigScope::User, name, value);
        }
    }
    for path in &sources.project {
        let Some(obj) = read_settings_object(path)? else {
            continue;
        };
        out.sources.push(path.to_path_buf());
        read_auto_enable(&mut out, path, &obj);
        let servers = servers_of(path, &obj)?;
        if !servers.is_empty() && !trust {
            out.warnings.push(format!(
                "ignored the MCP servers of project file {} ({}): a project's MCP servers run commands as soon as makai starts; set \"trustProjectSettings\": true in your user settings to allow them",
                path.display(),
                servers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        for (name, value) in servers {
            merge_entry(&mut out, path, ConfigScope::Project, name, value);
        }
    }
    // A relative `cwd` is the session folder's (`~/` is the home folder's,
    // expanded when the server starts).
    for entry in &mut out.servers {
        if let crate::config::ServerTransport::Stdio { cwd: Some(dir), .. } =
            &mut entry.config.transport
            && dir.is_relative()
            && !dir.starts_with("~")
        {
            *dir = cwd.join(&*dir);
        }
    }
    for w in &out.warnings {
        tracing::warn!("{w}");
    }
    Ok(out)
}

/// Adds the entry `name` of `path`, or applies it to the earlier entry of that
/// name (see the module docs).
fn merge_entry(
    out: &mut LoadedMcpConfig,
    path: &Path,
    scope: ConfigScope,
    name: String,
    value: Value,
) {
    if let Err(reason) = crate::validate_server_name(&name) {
        out.warnings
            .push(format!("{reason}; skipped (in {})", path.display()));
        return;
    }
    // pi: names that differ only in `-` and `_` are the same server; a
    // second one in the same file is refused, a later file's overrides.
    let existing = out.servers.iter().position(|s| same_server(&s.name, &name));
    if let Some(i) = existing
        && out.servers[i].name != name
        && out.servers[i].source == path
    {
        out.warnings.push(format!(
            "MCP server '{name}' is the same server as '{}' (names that differ only in '-' and '_' are one server); skipped (in {})",
            out.servers[i].name,
            path.display()
        ));
        return;
    }
    // An entry without a transport (`{"enabled": false}`) changes only the
    // earlier entry's `enabled`.
    if let (Some(i), Value::Object(obj)) = (existing, &value)
        && !obj.contains_key("command")
        && !obj.contains_key("url")
        && !obj.contains_key("type")
    {
        let enabled = match (obj.get("enabled"), obj.get("disabled")) {
            (Some(Value::Bool(b)), _) => Some(*b),
            (None, Some(Value::Bool(b))) => Some(!*b),
            (None, None) => None,
            _ => {
                out.warnings.push(format!(
                    "MCP server '{name}': \"enabled\" must be true or false (in {})",
                    path.display()
                ));
                return;
            }
        };
        if let Some(enabled) = enabled {
            out.servers[i].config.enabled = enabled;
        }
        let exposure = crate::config::exposure_field(obj)
            .and_then(|e| Ok((e, crate::config::tool_exposure_field(obj)?)));
        match exposure {
            Ok((e, t)) => {
                let config = &mut out.servers[i].config;
                if e.is_some() {
                    config.exposure = e;
                }
                if !t.is_empty() {
                    config.tool_exposure = t;
                }
            }
            Err(e) => out
                .warnings
                .push(format!("MCP server '{name}': {e} (in {})", path.display())),
        }
        return;
    }
    match McpServerConfig::from_json(&name, &value) {
        Ok(config) => {
            let entry = ServerEntry {
                name,
                config,
                scope,
                source: path.to_path_buf(),
            };
            match existing {
                Some(i) => out.servers[i] = entry,
                None => out.servers.push(entry),
            }
        }
        Err(e) => out.warnings.push(format!("{e} (in {})", path.display())),
    }
}

/// Whether two server names are one server: they differ only in `-` and `_`
/// (their tools' names, as script identifiers, would coincide).
fn same_server(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .all(|(x, y)| x == y || (matches!(x, b'-' | b'_') && matches!(y, b'-' | b'_')))
}

/// Takes a file's `autoEnableCodemode`, if it sets one.
fn read_auto_enable(out: &mut LoadedMcpConfig, path: &Path, obj: &serde_json::Map<String, Value>) {
    match obj.get("autoEnableCodemode") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.auto_enable_codemode = Some(*b),
        Some(_) => out.warnings.push(format!(
            "\"autoEnableCodemode\" must be true or false (in {})",
            path.display()
        )),
    }
}

/// The `mcpServers` object of a settings object, as (name, entry) pairs in file order.
fn servers_of(
    path: &Path,
    obj: &serde_json::Map<String, Value>,
) -> Result<Vec<(String, Value)>, McpConfigError> {
    match obj.get(SERVERS_KEY) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => Ok(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        Some(_) => Err(McpConfigError::Invalid {
            path: path.to_path_buf(),
            reason: format!("\"{SERVERS_KEY}\" must be an object mapping server names to entries"),
        }),
    }
}

/// Replaces `${VAR}` and `${VAR:-default}` in `text` using `lookup`. An unset
/// variable without a default becomes empty (and is reported in the result's
/// second element so callers can warn).
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match lookup(name).filter(|v| !v.is_empty()) {
                Some(v) => out.push_str(&v),
                None => match default {
                    Some(d) => out.push_str(d),
                    None => missing.push(name.to_string()),
                },
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    (out, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_variables() {
        let look = |k: &str| (k == "T").then(|| "tok".to_string());
        assert_eq!(
            expand_vars("Bearer ${T}", &look),
            ("Bearer tok".into(), vec![])
        );
        assert_eq!(expand_vars("${U:-d}/${T}", &look), ("d/tok".into(), vec![]));
        assert_eq!(
            expand_vars("a${U}b", &look),
            ("ab".into(), vec!["U".to_string()])
        );
        assert_eq!(expand_vars("${not valid}$", &look).0, "${not valid}$");
        assert_eq!(expand_vars("x${T", &look).0, "x${T");
    }
}
