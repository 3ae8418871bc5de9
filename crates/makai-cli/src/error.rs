//! The errors that end a `makai` run, and their exit codes.

/// Exit code of a run that ended normally.
pub const EXIT_OK: i32 = 0;
/// Exit code of a run that failed or was aborted.
pub const EXIT_FAILED: i32 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;

/// Why `makai` stopped early. Every message says what happened and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line is wrong (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// No credentials for the model's provider, or no model at all (exit code 1).
    #[error("{0}")]
    NoKey(String),
    /// A configuration file or resource cannot be used (exit code 1).
    #[error("{0}")]
    Config(String),
    /// The run failed (exit code 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            _ => EXIT_FAILED,
        }
    }

    /// A configuration error with this message.
    pub fn config(message: impl Into<String>) -> Self {
        CliError::Config(message.into())
    }

    /// A run failure with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        CliError::Failed(message.into())
    }
}

impl From<makai_auth::AuthError> for CliError {
    fn from(e: makai_auth::AuthError) -> Self {
        match e {
            makai_auth::AuthError::Config(m) => CliError::Config(m),
            other => CliError::Failed(other.to_string()),
        }
    }
}
