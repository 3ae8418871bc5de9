//! The crate's error type.

use std::path::PathBuf;

/// Errors from starting a server or loading a scenario.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// Binding or serving the socket failed.
    #[error("mockllm: cannot bind 127.0.0.1:{port}: {source}")]
    Bind {
        /// The requested port (0 = ephemeral).
        port: u16,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A scenario file could not be read.
    #[error("mockllm: cannot read scenario file {}: {source}", path.display())]
    ScenarioFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A scenario's JSON is invalid.
    #[error("mockllm: invalid scenario JSON: {0}")]
    ScenarioJson(#[source] serde_json::Error),
}
