//! The built-in coding tools: `read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`.
//!
//! Each tool is a plain async function over a [`ToolEnv`] (working directory,
//! path confinement, dry-run) and a per-call [`CallCtx`] (cancellation and a
//! sink for streamed partial results), with typed arguments that derive their
//! JSON Schema. [`builtin_tools`] wraps them as agent-layer tools.
//!
//! Argument names follow pi's coding agent so prompts and transcripts carry over.

mod adapter;
pub mod args;
pub mod bash;
mod bash_escalate;
mod bash_output;
pub mod codemode;
pub mod edit;
mod edit_apply;
mod error;
pub mod find;
pub mod fsutil;
pub mod grep;
pub mod ls;
pub mod policy;
pub mod read;
pub mod selection;
pub mod session_env;
pub mod terminal_text;
pub mod tool_search;
pub mod truncate;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use adapter::{BuiltinTool, builtin_tools, tools_by_names};
pub use error::ToolError;
pub use makai_agent::ToolOutput;
pub use policy::{PathPolicy, ResolvedPath};
pub use selection::select_tools;
pub use session_env::{SessionFile, ShellSession};

/// The names of the built-in tools, in their usual order.
pub const BUILTIN_TOOL_NAMES: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// What every built-in tool call runs in.
#[derive(Clone, Debug)]
pub struct ToolEnv {
    /// The working directory: relative paths resolve here and `bash` runs here.
    pub cwd: PathBuf,
    /// Which paths outside `cwd` are allowed.
    pub policy: PathPolicy,
    /// When true, tools that change things (`write`, `edit`, `bash`) only
    /// describe what they would have done.
    pub dry_run: bool,
    /// When true (the default), `read` prefixes each line with its number.
    pub line_numbers: bool,
    /// Where `bash` saves the full output of a truncated run (default: the system temp folder).
    pub temp_dir: Option<PathBuf>,
    /// The sandbox `bash` runs its commands in (`None`: no sandbox, the
    /// library default; makai's front ends always set one).
    pub sandbox: Option<SandboxChoice>,
    /// Who may let `bash` leave the sandbox, and when (`None`: never).
    pub escalation: Option<crate::approvals::Escalation>,
    /// When true (the default), `read` fits the images it returns within
    /// 2000 by 2000 pixels and 4.5 MiB (pi's `images.autoResize`).
    pub fit_images: bool,
    /// When true (the default), `bash` tells its commands about the session
    /// (pi's `PI_SESSION_ID`, `PI_MODEL`, ...: [`session_env`]); when false it
    /// removes those variables, inherited ones included.
    pub expose_session: bool,
    /// Where the session's file is, looked up when each command starts
    /// (`None`: the session has none, and `PI_SESSION_FILE` is unset).
    pub session_file: Option<SessionFile>,
}

/// The sandbox commands run under, or why the chosen one cannot be enforced
/// on this system (every command is then refused with that error).
pub type SandboxChoice = Result<Arc<makai_sandbox::Sandbox>, Arc<makai_sandbox::SandboxError>>;

impl ToolEnv {
    /// An environment confined to `cwd`, not dry-run, with line numbers.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolEnv {
            cwd: cwd.into(),
            policy: PathPolicy::confined(),
            dry_run: false,
            line_numbers: true,
            temp_dir: None,
            sandbox: None,
            escalation: None,
            fit_images: true,
            expose_session: true,
            session_file: None,
        }
    }

    /// Sets where the session's file is (`PI_SESSION_FILE` of `bash`'s commands).
    pub fn with_session_file(mut self, file: SessionFile) -> Self {
        self.session_file = Some(file);
        self
    }

    /// Lets `bash` leave the sandbox with the approver's consent.
    pub fn with_escalation(mut self, escalation: crate::approvals::Escalation) -> Self {
        self.escalation = Some(escalation);
        self
    }

    /// Sets the sandbox of `bash` commands.
    pub fn with_sandbox(mut self, sandbox: SandboxChoice) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Sets the path policy.
    pub fn with_policy(mut self, policy: PathPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Turns dry-run mode on or off.
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Turns `read`'s line numbers on or off.
    pub fn with_line_numbers(mut self, on: bool) -> Self {
        self.line_numbers = on;
        self
    }

    /// Sets where `bash` keeps full outputs.
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Resolves a path argument under this environment's policy.
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, ToolError> {
        self.policy.resolve(&self.cwd, input)
    }

    /// `path` relative to the working directory when inside it, else absolute; `/` separators.
    pub fn display_path(&self, path: &Path) -> String {
        let real_cwd = policy::real_path(&policy::normalize_lexically(&self.cwd))
            .unwrap_or_else(|_| self.cwd.clone());
        relative_display(&real_cwd, path)
    }
}

/// `path` relative to `base` when inside it (`.` for `base` itself), else absolute.
pub(crate) fn relative_display(base: &Path, path: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// A callback receiving partial results while a tool runs.
pub type UpdateFn = Arc<dyn Fn(ToolOutput) + Send + Sync>;

/// Per-call context: cancellation, where to stream partial results, and
/// the session the call runs in.
#[derive(Clone, Default)]
pub struct CallCtx {
    /// Cancelled when the call should stop (abort).
    pub cancel: CancellationToken,
    /// Receives partial results (only `bash` streams).
    pub on_update: Option<UpdateFn>,
    /// The session and model of the agent run making the call, which `bash`
    /// tells its commands (`None`: not called by a run, as for a `!` command
    /// typed by the user; the environment is then left as it is).
    pub session: Option<ShellSession>,
}

impl std::fmt::Debug for CallCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallCtx")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("streams", &self.on_update.is_some())
            .field("session", &self.session)
            .finish()
    }
}

impl CallCtx {
    /// A context with the given cancellation token and no update sink.
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        CallCtx {
            cancel,
            on_update: None,
            session: None,
        }
    }

    /// Fails with [`ToolError::Aborted`] when cancelled.
    pub fn check(&self) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            Err(ToolError::Aborted)
        } else {
            Ok(())
        }
    }

    pub(crate) fn update(&self, out: ToolOutput) {
        if let Some(f) = &self.on_update {
            f(out);
        }
    }
}

/// Runs the built-in tool `name` with JSON arguments.
pub async fn run_builtin(
    name: &str,
    env: &ToolEnv,
    args: Value,
    ctx: &CallCtx,
) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    match name {
        "read" => read::read(env, args::parse_args("read", args)?, ctx).await,
        "write" => write::write(env, args::parse_args("write", args)?, ctx).await,
        "edit" => edit::edit(env, edit::parse_edit_args(args)?, ctx).await,
        "bash" => bash::bash(env, args::parse_args("bash", args)?, ctx).await,
        "grep" => grep::grep(env, args::parse_args("grep", args)?, ctx).await,
        "find" => find::find(env, args::parse_args("find", args)?, ctx).await,
        "ls" => ls::ls(env, args::parse_args("ls", args)?, ctx).await,
        other => Err(ToolError::Failed(format!(
            "Unknown built-in tool '{}'. Available: {}.",
            makai_ai::quote::bounded(other),
            BUILTIN_TOOL_NAMES.join(", ")
        ))),
    }
}
