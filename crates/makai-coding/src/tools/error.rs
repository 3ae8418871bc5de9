//! The error type shared by the built-in tools.

use std::path::PathBuf;

use makai_agent::ToolOutput;
use makai_ai::quote::bounded;

/// Why a built-in tool could not do what it was asked.
///
/// The `Display` text is what the model sees as the tool's error result, so
/// every variant says what happened, to what, and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments did not match the tool's schema or were out of range.
    #[error("Invalid arguments for the {tool} tool: {message}")]
    InvalidArgs {
        /// The tool's name.
        tool: &'static str,
        /// What was wrong.
        message: String,
    },
    /// A path argument leaves the folders the tools may touch.
    #[error(
        "Access denied: '{}' resolves to {}, which is outside the working directory {cwd}{via_symlink}. \
         Use a path inside the working directory, or allow the folder in settings (allowedPaths).",
        bounded(.input), bounded(&.resolved.to_string_lossy())
    )]
    PathDenied {
        /// The path as the model wrote it.
        input: String,
        /// Where it really points.
        resolved: PathBuf,
        /// The working directory.
        cwd: PathBuf,
        /// `" (through a symbolic link)"` when a link carried it outside, else empty.
        via_symlink: &'static str,
    },
    /// The file or folder does not exist.
    #[error(
        "{what} not found: {}. Check the path (relative paths start at {cwd}); use ls or find to look around.",
        bounded(.path)
    )]
    NotFound {
        /// "File", "Directory" or "Path".
        what: &'static str,
        /// The path as the model wrote it.
        path: String,
        /// The working directory.
        cwd: PathBuf,
    },
    /// A filesystem operation failed.
    #[error("Could not {action} {}: {source}", bounded(.path))]
    Io {
        /// What was being done ("read", "write", "list", ...).
        action: &'static str,
        /// The path as the model wrote it.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The call was cancelled before it finished.
    #[error("Operation aborted")]
    Aborted,
    /// The tool ran but cannot produce a result; the message says why and what to do.
    #[error("{0}")]
    Failed(String),
    /// The tool ran and failed, and its output says how (a command's non-zero
    /// exit with what it printed): the error result the model sees.
    #[error("{}", .0.text_content())]
    Output(ToolOutput),
}

impl From<ToolError> for makai_agent::ToolError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::Output(out) => makai_agent::ToolError::Output(out),
            ToolError::Aborted => makai_agent::ToolError::Cancelled,
            other => makai_agent::ToolError::Failed(other.to_string()),
        }
    }
}

/// Applies `f` to the output a tool call produced, whether it succeeded or
/// failed with output.
pub(crate) fn with_output(
    result: Result<ToolOutput, ToolError>,
    f: impl FnOnce(&mut ToolOutput),
) -> Result<ToolOutput, ToolError> {
    match result {
        Ok(mut out) => {
            f(&mut out);
            Ok(out)
        }
        Err(ToolError::Output(mut out)) => {
            f(&mut out);
            Err(ToolError::Output(out))
        }
        Err(e) => Err(e),
    }
}

impl ToolError {
    /// An [`ToolError::InvalidArgs`] for `tool`.
    pub fn invalid(tool: &'static str, message: impl Into<String>) -> Self {
        ToolError::InvalidArgs {
            tool,
            message: message.into(),
        }
    }

    /// An [`ToolError::Io`] for `path`.
    pub fn io(action: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        ToolError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
