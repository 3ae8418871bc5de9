//! Settings: `~/.makai/settings.json` (user) and `.makai/settings.json` in
//! the working directory (project), with pi's field names.
//!
//! The project file is part of a project's configuration, read only once the
//! project is trusted ([`crate::trust`]; the caller leaves it out of
//! [`Settings::load_files`] otherwise). Project settings override user settings; objects are merged key by key
//! (`{"compaction": {"reserveTokens": 8192}}` in the project keeps the user's
//! `compaction.enabled`), anything else is replaced.
//!
//! Security-sensitive keys — `allowedPaths`, `shellPath`,
//! `shellCommandPrefix`, `sandbox` and `approvals` — widen what tools may
//! touch or run; `store` decides where sessions (and what they hold) go. A project file
//! comes with the repository, so these keys are taken from it only when the
//! user settings say `"trustProjectSettings": true`; otherwise they are
//! ignored with a warning.
//!
//! The makai home folder is `$MAKAI_HOME`, or `~/.makai` when unset; every
//! path under it (settings, sessions, agents, the global `AGENTS.md`) derives
//! from [`makai_home`], so tests can point it at a temporary folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use makai_ai::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approvals::ApprovalSettings;
use crate::sandbox_settings::SandboxSettings;

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Environment variable overriding the makai home folder (default `~/.makai`).
pub const HOME_ENV: &str = "MAKAI_HOME";

/// Keys a project settings file may only set when the user trusts it.
pub const PROJECT_RESTRICTED_KEYS: [&str; 6] = [
    "allowedPaths",
    "shellPath",
    "shellCommandPrefix",
    "sandbox",
    "approvals",
    "store",
];

/// The makai home folder: `$MAKAI_HOME` when set and non-empty, else `~/.makai`.
pub fn makai_home() -> Option<PathBuf> {
    home_from(std::env::var_os(HOME_ENV))
}

/// [`makai_home`] with the variable's value passed in.
pub fn home_from(env_value: Option<OsString>) -> Option<PathBuf> {
    match env_value.filter(|v| !v.is_empty()) {
        Some(v) => Some(PathBuf::from(v)),
        None => dirs::home_dir().map(|h| h.join(".makai")),
    }
}

pub use makai_agent::{QueueMode, SteeringBehavior};

/// Automatic compaction of long conversations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Compact automatically when the context nears the window.
    pub enabled: bool,
    /// Tokens kept free for the model's answer; compaction starts when the
    /// context would leave less than this.
    pub reserve_tokens: u64,
    /// Recent tokens kept verbatim (not summarised).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// Agent-level retries of failed model calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetrySettings {
    /// Retry transient errors.
    pub enabled: bool,
    /// Attempts after the first.
    pub max_retries: u32,
    /// First back-off delay; doubled each attempt.
    pub base_delay_ms: u64,
    /// Longest back-off delay, and longest server-requested wait accepted.
    pub max_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2_000,
            max_delay_ms: 60_000,
        }
    }
}

/// Custom token budgets per thinking level (unset levels keep the defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinkingBudgetSettings {
    /// Budget for `minimal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimal: Option<u32>,
    /// Budget for `low`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<u32>,
    /// Budget for `medium`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub medium: Option<u32>,
    /// Budget for `high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<u32>,
}

/// What Esc pressed twice in an empty editor does in the interactive UI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DoubleEscapeAction {
    /// Opens the session tree (`/tree`).
    #[default]
    Tree,
    /// Opens the fork selector (`/fork`).
    Fork,
    /// Nothing.
    None,
}

/// The merged settings. Unknown keys (pi's UI settings and the like) are kept in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Provider used when none is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<String>,
    /// Model id used when none is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Thinking level used when none is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_thinking_level: Option<ThinkingLevel>,
    /// Token budgets per thinking level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<ThinkingBudgetSettings>,
    /// Delivery of steering messages.
    pub steering_mode: QueueMode,
    /// When steering interrupts tool calls: `interrupt-tools` (the default:
    /// calls not started yet are skipped) or `after-tool-batch` (pi 1.x:
    /// delivered once the whole batch ran). makai's setting.
    pub steering_delivery: SteeringBehavior,
    /// Delivery of follow-up messages.
    pub follow_up_mode: QueueMode,
    /// Compaction.
    pub compaction: CompactionSettings,
    /// Retries.
    pub retry: RetrySettings,
    /// Folders outside the working directory that tools may use (absolute after loading).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_paths: Vec<PathBuf>,
    /// Shell used by the `bash` tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_path: Option<String>,
    /// Text prepended to every `bash` command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_command_prefix: Option<String>,
    /// The command the external-editor key (Ctrl+G) opens, before `$VISUAL`
    /// and `$EDITOR` (pi's `externalEditor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_editor: Option<String>,
    /// The built-in tools of the default agent (pi's `defaultTools`: plain
    /// names replace the default set, `+name`/`-name` change it; see
    /// [`crate::tools::selection`]). A project list of only changes applies on
    /// top of the user's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_tools: Option<Vec<String>>,
    /// What Esc twice in an empty, idle editor opens (pi's `doubleEscapeAction`).
    #[serde(skip_serializing_if = "is_default")]
    pub double_escape_action: DoubleEscapeAction,
    /// Folder for session files (absolute after loading).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<PathBuf>,
    /// Where sessions are stored: `jsonl` (the files, the default) or a
    /// PostgreSQL URL. User settings only unless the project is trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Agent spec used when none is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<String>,
    /// The sandbox of commands and MCP servers.
    #[serde(skip_serializing_if = "is_default")]
    pub sandbox: SandboxSettings,
    /// Which tool calls need the user's approval.
    #[serde(skip_serializing_if = "is_default")]
    pub approvals: ApprovalSettings,
    /// Limits of runs and the budget of the session tree (see [`crate::limits`]).
    #[serde(skip_serializing_if = "is_default")]
    pub limits: crate::limits::Limits,
    /// The `task` tool's depth and parallelism (`{"maxDepth": 1, "maxParallel": 4}`).
    #[serde(skip_serializing_if = "is_default")]
    pub subagents: crate::agent_spec::SubagentPolicy,
    /// Put an overview of the working directory (README top, top-level
    /// entries, git status) in the system prompt: `true` for every model,
    /// `false` never; unset (the default) when the run has no tools, such as
    /// with the built-in local model. A makai key (pi has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_overview: Option<bool>,
    /// User settings only: let a trusted project's file set
    /// [`PROJECT_RESTRICTED_KEYS`] and start its MCP servers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trust_project_settings: bool,
    /// User settings only: project trust when neither `--approve` /
    /// `--no-approve` nor a saved decision applies (pi's `defaultProjectTrust`;
    /// see [`crate::trust`]).
    #[serde(skip_serializing_if = "is_default")]
    pub default_project_trust: crate::trust::DefaultProjectTrust,
    /// Keys this version does not use, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A project `defaultTools` list of only `+name`/`-name` entries changes the
/// user's selection rather than replacing it: the user's list is put in
/// front of it (the entries apply in order).
fn chain_tool_changes(user: &Value, project: &mut Value) {
    let (Some(Value::Array(user_list)), Some(Value::Array(project_list))) =
        (user.get("defaultTools"), project.get("defaultTools"))
    else {
        return;
    };
    let entries: Option<Vec<String>> = project_list
        .iter()
        .map(|e| e.as_str().map(str::to_string))
        .collect();
    if entries.is_some_and(|e| crate::tools::selection::only_changes(&e)) {
        let chained: Vec<Value> = user_list.iter().chain(project_list).cloned().collect();
        project["defaultTools"] = Value::Array(chained);
    }
}

/// A settings file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file exists but cannot be read.
    #[error("cannot read settings file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON or a value has the wrong type.
    #[error(
        "settings file {path} is invalid: {reason}. Fix the file (it must be a JSON object with pi's setting names) or remove it"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// serde's description, with line and column.
        reason: String,
    },
}

/// Settings plus where they came from and what was ignored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedSettings {
    /// The merged settings.
    pub settings: Settings,
    /// The files that existed and were read, user first.
    pub sources: Vec<PathBuf>,
    /// Keys ignored and why.
    pub warnings: Vec<String>,
}

impl Settings {
    /// The user settings file under a makai home folder.
    pub fn user_file(home: &Path) -> PathBuf {
        home.join("settings.json")
    }

    /// The project settings file for a working directory.
    pub fn project_file(cwd: &Path) -> PathBuf {
        cwd.join(".makai").join("settings.json")
    }

    /// Loads `<home>/settings.json` and `<cwd>/.makai/settings.json` (either may
    /// be missing) and merges them. Relative paths resolve against the user's
    /// home folder (user file) or `cwd` (project file); `~` expands to the
    /// user's home folder.
    pub fn load(cwd: &Path, home: Option<&Path>) -> Result<LoadedSettings, SettingsError> {
        let user = home.map(Settings::user_file);
        Settings::load_files(user.as_deref(), Some(&Settings::project_file(cwd)), cwd)
    }

    /// Loads and merges explicit files (see [`Settings::load`]).
    pub fn load_files(
        user: Option<&Path>,
        project: Option<&Path>,
        cwd: &Path,
    ) -> Result<LoadedSettings, SettingsError> {
        let user_home = dirs::home_dir();
        let mut out = LoadedSettings::default();
        let mut merged = Value::Object(Map::new());
        let mut trust = false;
        if let Some(path) = user
            && let Some(mut v) = read_object(path)?
        {
            let base = user_home.clone().unwrap_or_else(|| cwd.to_path_buf());
            resolve_paths(&mut v, &base, user_home.as_deref());
            trust = v.get("trustProjectSettings").and_then(Value::as_bool) == Some(true);
            deep_merge(&mut merged, v);
            out.sources.push(path.to_path_buf());
        }
        if let Some(path) = project
            && let Some(mut v) = read_object(path)?
        {
            resolve_paths(&mut v, cwd, user_home.as_deref());
            if let Value::Object(map) = &mut v {
                // The trust switches only count in the user file.
                map.remove("trustProjectSettings");
                map.remove("defaultProjectTrust");
                if !trust {
                    for key in PROJECT_RESTRICTED_KEYS {
                        if map.remove(key).is_some() {
                            out.warnings.push(format!(
                                "ignored \"{key}\" in project settings {}: it lets the project widen what tools may touch or run, or send the sessions elsewhere; set \"trustProjectSettings\": true in your user settings to allow it",
                                path.display()
                            ));
                        }
                    }
                }
            }
            chain_tool_changes(&merged, &mut v);
            deep_merge(&mut merged, v);
            out.sources.push(path.to_path_buf());
        }
        for w in &out.warnings {
            tracing::warn!("{w}");
        }
        out.settings = serde_json::from_value(merged).map_err(|e| SettingsError::Invalid {
            path: out.sources.last().cloned().unwrap_or_default(),
            reason: e.to_string(),
        })?;
        Ok(out)
    }
}

/// Reads a settings file as a JSON object; `None` when it does not exist.
/// Each file is also checked against [`Settings`] alone so a type error names its file.
/// Reads one settings file as its top-level JSON object: the one reader of
/// settings files (this module's loader and the MCP server configuration both
/// use it). `None` when the file is missing or empty.
pub fn read_settings_file(path: &Path) -> Result<Option<Map<String, Value>>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source: e,
            });
        }
    };
    let invalid = |reason: String| SettingsError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))? {
        Value::Object(map) => Ok(Some(map)),
        _ => Err(invalid("the top level is not a JSON object".into())),
    }
}

/// A settings file whose known keys have the right types.
fn read_object(path: &Path) -> Result<Option<Value>, SettingsError> {
    let Some(map) = read_settings_file(path)? else {
        return Ok(None);
    };
    let value = Value::Object(map);
    Settings::deserialize(&value).map_err(|e| SettingsError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(Some(value))
}

/// Merges `over` into `base`: objects key by key, everything else replaced.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        deep_merge(existing, v)
                    }
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Makes `allowedPaths`, `sessionDir` and the sandbox's paths absolute.
fn resolve_paths(v: &mut Value, base: &Path, user_home: Option<&Path>) {
    let Value::Object(map) = v else { return };
    if let Some(Value::Array(paths)) = map.get_mut("allowedPaths") {
        for p in paths.iter_mut() {
            if let Value::String(s) = p {
                *s = expand_path(s, base, user_home).display().to_string();
            }
        }
    }
    if let Some(Value::String(s)) = map.get_mut("sessionDir") {
        *s = expand_path(s, base, user_home).display().to_string();
    }
    if let Some(Value::Object(sandbox)) = map.get_mut("sandbox") {
        for key in ["writableRoots", "denyRead"] {
            if let Some(Value::Array(paths)) = sandbox.get_mut(key) {
                for p in paths.iter_mut() {
                    if let Value::String(s) = p {
                        *s = expand_path(s, base, user_home).display().to_string();
                    }
                }
            }
        }
    }
}

/// Expands `~` / `~/...` to the user's home folder and makes a relative path
/// absolute against `base`.
pub fn expand_path(raw: &str, base: &Path, user_home: Option<&Path>) -> PathBuf {
    if let Some(home) = user_home {
        if raw == "~" {
            return home.to_path_buf();
        }
        if let Some(rest) = raw.strip_prefix("~/") {
            return home.join(rest);
        }
    }
    let p = Path::new(raw);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_is_deep_for_objects_only() {
        let mut a =
            json!({"compaction": {"enabled": true, "reserveTokens": 1}, "allowedPaths": ["/a"]});
        deep_merge(
            &mut a,
            json!({"compaction": {"reserveTokens": 2}, "allowedPaths": ["/b"]}),
        );
        assert_eq!(
            a,
            json!({"compaction": {"enabled": true, "reserveTokens": 2}, "allowedPaths": ["/b"]})
        );
    }

    #[test]
    fn home_env_wins_when_set() {
        assert_eq!(home_from(Some("/x/y".into())), Some(PathBuf::from("/x/y")));
        assert_ne!(home_from(Some("".into())), Some(PathBuf::from("")));
    }

    #[test]
    fn expands_tilde_and_relative() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_path("~/a", Path::new("/p"), Some(home)),
            PathBuf::from("/home/u/a")
        );
        assert_eq!(
            expand_path("b", Path::new("/p"), Some(home)),
            PathBuf::from("/p/b")
        );
        assert_eq!(
            expand_path("/c", Path::new("/p"), Some(home)),
            PathBuf::from("/c")
        );
    }
}
