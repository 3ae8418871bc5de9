//! `makai mcp serve`: makai's tools for other MCP clients.

use std::sync::Arc;

use makai_agent::{Tool, ToolSet};
use makai_coding::tools::{ToolEnv, builtin_tools};

use crate::sdk::server::{ToolsServer, serve_stdio};

/// Failure to serve.
#[derive(Debug, thiserror::Error)]
#[error("makai mcp serve: {0}")]
pub struct ServeError(String);

/// Serves makai's built-in tools (`read`, `write`, `edit`, `bash`, `grep`,
/// `find`, `ls`) over this process's standard input and output until the
/// client disconnects. The tools run in `env`: confined to its working
/// directory and allowed paths, and only describing changes when `env.dry_run`
/// is set. Nothing else may write to standard output meanwhile (log to stderr).
pub async fn serve_builtin_tools_stdio(env: ToolEnv) -> Result<(), ServeError> {
    let cwd = env.cwd.clone();
    serve_tools_stdio(builtin_tools(env), cwd).await
}

/// Serves any agent tools over standard input and output (see
/// [`serve_builtin_tools_stdio`]); `cwd` is the working directory their calls
/// see. Read-only tools are announced with `readOnlyHint: true`.
pub async fn serve_tools_stdio(
    tools: Vec<Arc<dyn Tool>>,
    cwd: std::path::PathBuf,
) -> Result<(), ServeError> {
    let server = ToolsServer::new(ToolSet::new(tools), cwd, "makai");
    serve_stdio(server).await.map_err(ServeError)
}
