//! pi's session variables for shell commands: what `bash` tells each command
//! it runs about the session it runs in (pi's docs/environment-variables.md,
//! "Shell Tool Session Environment").
//!
//! The values are taken when each command starts, from the tool call's
//! context ([`CallCtx::session`](super::CallCtx)) and the session's file as it
//! is then ([`SessionFile`]): switching the model, the reasoning level or the
//! session changes what the next command sees. A variable without a value
//! (no file for a session kept in memory) is removed from the command's
//! environment, so a makai or pi started by another one never reads its
//! parent's session as its own.

use std::path::PathBuf;
use std::sync::Arc;

/// The current session's ID.
pub const SESSION_ID_VAR: &str = "PI_SESSION_ID";
/// The absolute path of the current session's JSONL file; unset for a
/// session that has none (in memory, or in a database).
pub const SESSION_FILE_VAR: &str = "PI_SESSION_FILE";
/// The provider of the selected model.
pub const PROVIDER_VAR: &str = "PI_PROVIDER";
/// The ID of the selected model.
pub const MODEL_VAR: &str = "PI_MODEL";
/// The effective reasoning level (`off` ... `max`).
pub const REASONING_LEVEL_VAR: &str = "PI_REASONING_LEVEL";

/// Every variable [`ShellSession`] sets or removes.
pub const SESSION_VARS: [&str; 5] = [
    SESSION_ID_VAR,
    SESSION_FILE_VAR,
    PROVIDER_VAR,
    MODEL_VAR,
    REASONING_LEVEL_VAR,
];

/// The session a tool call runs in, as its shell commands are told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellSession {
    /// The session's ID.
    pub id: Option<String>,
    /// The session's file (absolute).
    pub file: Option<PathBuf>,
    /// The provider of the run's model.
    pub provider: Option<String>,
    /// The run's model.
    pub model: Option<String>,
    /// The run's reasoning level, as the model takes it.
    pub reasoning_level: Option<&'static str>,
}

impl ShellSession {
    /// Each of [`SESSION_VARS`] with its value (`None`: removed).
    pub fn vars(&self) -> [(&'static str, Option<std::ffi::OsString>); 5] {
        [
            (SESSION_ID_VAR, self.id.as_ref().map(Into::into)),
            (SESSION_FILE_VAR, self.file.as_ref().map(Into::into)),
            (PROVIDER_VAR, self.provider.as_ref().map(Into::into)),
            (MODEL_VAR, self.model.as_ref().map(Into::into)),
            (REASONING_LEVEL_VAR, self.reasoning_level.map(Into::into)),
        ]
    }

    /// Sets (or removes) the variables on `cmd`.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        for (name, value) in self.vars() {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
    }
}

/// Removes every session variable from `cmd` (a tool that does not expose
/// the session: nothing a parent session left behind stays).
pub fn hide(cmd: &mut tokio::process::Command) {
    for name in SESSION_VARS {
        cmd.env_remove(name);
    }
}

/// Where the file of the session with a given id is when a command starts
/// (`None`: it has none). The front end that owns the sessions provides it:
/// the session may change between two commands (`/new`, `/resume`,
/// `/fork`), and a sub-agent's calls name the sub-agent's own session while
/// sharing the parent's tools.
#[derive(Clone)]
pub struct SessionFile(Arc<FileOf>);

/// The lookup [`SessionFile`] holds: a session id to its file.
type FileOf = dyn Fn(Option<&str>) -> Option<PathBuf> + Send + Sync;

impl SessionFile {
    /// A lookup calling `f` once per command with the call's session id.
    pub fn new(f: impl Fn(Option<&str>) -> Option<PathBuf> + Send + Sync + 'static) -> Self {
        SessionFile(Arc::new(f))
    }

    /// The file of session `id` now.
    pub fn of(&self, id: Option<&str>) -> Option<PathBuf> {
        (self.0)(id)
    }
}

impl std::fmt::Debug for SessionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionFile(..)")
    }
}
