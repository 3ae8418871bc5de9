//! Settings: `~/.makai/settings.json` (user) and `.makai/settings.json` in
//! the working directory (project), with pi's field names. The `makai` CLI
//! also reads pi 1.5.2's own files beneath each ([`Settings::files`]):
//! `~/.pi/agent/settings.json` under the user file and `.pi/settings.json`
//! under the project's, so makai's files win where both set a key.
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
use std::path::PathBuf;

use makai_ai::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approvals::ApprovalSettings;
use crate::sandbox_settings::SandboxSettings;

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_true(v: &bool) -> bool {
    *v
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

/// The strings of a JSON array (a settings list, a details list); none for
/// anything else, other items left out.
pub fn strings_of(value: Option<&serde_json::Value>) -> Vec<String> {
    value
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

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
    /// Longest back-off delay, and longest server-requested wait accepted
    /// (pi 1.5.2 calls it `maxAgentDelayMs`, also read).
    #[serde(alias = "maxAgentDelayMs")]
    pub max_delay_ms: u64,
    /// pi 1.5's provider-level knobs (`retry.provider`).
    #[serde(skip_serializing_if = "is_default")]
    pub provider: ProviderRetrySettings,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2_000,
            max_delay_ms: 60_000,
            provider: ProviderRetrySettings::default(),
        }
    }
}

/// pi 1.5's `retry.provider`: makai retries in one layer, so these add to
/// [`RetrySettings`] (see [`RetrySettings::policy`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProviderRetrySettings {
    /// A model response's longest silence, when `httpIdleTimeoutMs` is unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries on top of `retry.maxRetries`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// The longest server-requested wait accepted (0: any), when longer
    /// than `retry.maxDelayMs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u64>,
}

/// What "no limit" on a server-requested wait is taken as.
const UNLIMITED_RETRY_DELAY_MS: u64 = 24 * 60 * 60 * 1000;

impl RetrySettings {
    /// The retries in force: `maxRetries` plus pi's `provider.maxRetries`,
    /// `baseDelayMs` doubled each time, waits up to the longer of
    /// `maxDelayMs` and `provider.maxRetryDelayMs` (0 there: any).
    /// `(max_retries, base_delay_ms, max_delay_ms)`.
    pub fn policy(&self) -> (u32, u64, u64) {
        let provider_delay = match self.provider.max_retry_delay_ms {
            Some(0) => UNLIMITED_RETRY_DELAY_MS,
            Some(ms) => ms,
            None => 0,
        };
        (
            self.max_retries
                .saturating_add(self.provider.max_retries.unwrap_or(0)),
            self.base_delay_ms,
            self.max_delay_ms.max(provider_delay),
        )
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

/// How often makai reads a fast model stream by default, in milliseconds:
/// once reads come closer together than this, each read takes what arrived
/// in the interval, one wake-up for several tokens. One frame of a 60 Hz
/// display, half of the full-screen UI's (it draws at most every 33 ms).
pub const DEFAULT_STREAM_READ_INTERVAL_MS: u64 = 16;

impl Settings {
    /// pi's `enableSkillCommands`, on unless set to `false`.
    pub fn skill_commands_enabled(&self) -> bool {
        self.enable_skill_commands != Some(false)
    }

    /// The idle timeout of model responses ([`Settings::http_idle_timeout_ms`],
    /// else pi's `retry.provider.timeoutMs`): `None` when unset (the
    /// library's default), zero when disabled.
    pub fn http_idle_timeout(&self) -> Option<std::time::Duration> {
        let Some(setting) = self.http_idle_timeout_ms else {
            return self
                .retry
                .provider
                .timeout_ms
                .map(std::time::Duration::from_millis);
        };
        Some(match setting {
            IdleTimeoutSetting::Millis(ms) => std::time::Duration::from_millis(ms),
            IdleTimeoutSetting::Word(Disabled::Disabled) => std::time::Duration::ZERO,
        })
    }

    /// The read interval of model streams ([`Settings::stream_read_interval_ms`]),
    /// `None` to read as data arrives.
    pub fn stream_read_interval(&self) -> Option<std::time::Duration> {
        let ms = self
            .stream_read_interval_ms
            .unwrap_or(DEFAULT_STREAM_READ_INTERVAL_MS);
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }
}

/// pi's `images` settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageSettings {
    /// Images given in prompts, steering and follow-up messages, and those
    /// `read` returns, are fitted within 2000 by 2000 pixels and 4.5 MiB
    /// before they are sent and saved (pi's `autoResize`, on by default;
    /// see [`crate::images`]).
    #[serde(skip_serializing_if = "is_true")]
    pub auto_resize: bool,
    /// No image reaches a model: each is replaced by a note in the request
    /// (the session keeps it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub block_images: bool,
    /// Keys makai does not use, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for ImageSettings {
    fn default() -> Self {
        ImageSettings {
            auto_resize: true,
            block_images: false,
            extra: Map::new(),
        }
    }
}

/// pi's `httpIdleTimeoutMs`: milliseconds, or `"disabled"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IdleTimeoutSetting {
    /// Milliseconds (`0`: no timeout).
    Millis(u64),
    /// `"disabled"`.
    Word(Disabled),
}

/// The word `"disabled"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disabled {
    /// No limit.
    Disabled,
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
    /// The longest silence of a model's response (before its head, or
    /// between two pieces of its body) before the request fails and is
    /// retried: milliseconds, or `0` / `"disabled"` for none (pi's
    /// `httpIdleTimeoutMs`; unset: 120 s, makai's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_idle_timeout_ms: Option<IdleTimeoutSetting>,
    /// The interactive UI's theme (pi's `theme`): `system` (the default:
    /// the built-in theme of the terminal's appearance), a theme's name, or
    /// `light/dark`, the first for a light terminal and the second for a
    /// dark one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Theme files and folders loaded besides the discovered ones (pi's
    /// `themes`), absolute once loaded: a user file's relative to its
    /// folder (pi's agent folder), a project file's to its `.pi` or
    /// `.makai` folder. The lists of every file are kept, user files'
    /// first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub themes: Vec<PathBuf>,
    /// pi's `images` settings (`autoResize`, `blockImages`).
    #[serde(skip_serializing_if = "is_default")]
    pub images: ImageSettings,
    /// Start the full-screen UI with thinking blocks folded to one line each
    /// (pi's `hideThinkingBlock`; `/settings` and the keys still switch).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hide_thinking_block: bool,
    /// Model patterns scoping the start-up choice and model cycling, in the
    /// form of `--models` (pi's `enabledModels`); `--models` replaces them.
    /// The first usable match starts a new session; a session with messages
    /// keeps its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_models: Option<Vec<String>>,
    /// The start-up thinking level of a model, keyed by its exact
    /// `provider/modelId` (pi's `modelThinkingLevels`): below `--thinking`,
    /// a `:level` suffix, the session's level and an agent spec's, above
    /// `defaultThinkingLevel`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub model_thinking_levels: std::collections::BTreeMap<String, ThinkingLevel>,
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
    /// pi's `extensions`: makai reads its `builtin:<name>` entries
    /// ([`crate::extensions::BuiltinExtensions`]); the user's and the
    /// project's entries both count, the project's last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// pi's `codemode` settings (`mode`, `inlineBudget`), used when the
    /// `codemode` tool is on (`defaultTools: ["+codemode"]`, `--tools +codemode`).
    #[serde(skip_serializing_if = "is_default")]
    pub codemode: crate::tools::codemode::CodemodeSettings,
    /// pi's `enableSkillCommands` (default on): whether the interactive
    /// command completion offers `/skill:name` (typed in full, it works
    /// either way). See [`Settings::skill_commands_enabled`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_skill_commands: Option<bool>,
    /// The filter `/tree` opens with (pi's `treeFilterMode`: `default`,
    /// `no-tools`, `user-only`, `labeled-only`, `all`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_filter_mode: Option<String>,
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
    /// How often a fast model stream is read, in milliseconds (unset:
    /// [`DEFAULT_STREAM_READ_INTERVAL_MS`]; 0 reads as data arrives). See
    /// `makai_ai::StreamOptions::read_interval`. A makai key (pi has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_read_interval_ms: Option<u64>,
    /// Hand the deltas of one block that one read of a model stream
    /// delivered to the session as one event (unset: `true`). See
    /// `makai_ai::StreamOptions::merge_deltas`. A makai key (pi has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_merge_deltas: Option<bool>,
    /// User settings only: let a trusted project's file set
    /// [`PROJECT_RESTRICTED_KEYS`] and start its MCP servers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trust_project_settings: bool,
    /// User settings only: project trust when neither `--approve` /
    /// `--no-approve` nor a saved decision applies (pi's `defaultProjectTrust`;
    /// see [`crate::trust`]).
    #[serde(skip_serializing_if = "is_default")]
    pub default_project_trust: crate::trust::DefaultProjectTrust,
    /// User settings only: pi's `cacheWarming` (see [`crate::cache_warming`]).
    #[serde(skip_serializing_if = "is_default")]
    pub cache_warming: crate::cache_warming::CacheWarmingMode,
    /// Keys this version does not use, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
    /// The file cannot be written (a setting saved by the UI).
    #[error("cannot write settings file {path}: {source}")]
    Write {
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

mod files;

pub use files::{
    LoadedSettings, SettingsFile, SettingsOrigin, deep_merge, expand_path, read_settings_file,
    save_setting,
};
