//! MCP tools of an [`AppSession`]: the servers start in the background (see
//! [`makai_mcp::McpManager`]); each run gets the tools of those ready by then.

use std::time::Duration;

use super::AppSession;

impl AppSession {
    /// The MCP servers of this session, if any are configured.
    pub fn mcp(&self) -> Option<&makai_mcp::McpManager> {
        self.inner.mcp.as_ref()
    }

    /// Sets the agent's tools for the next run: its own tools plus the tools
    /// of the MCP servers that are ready now. Called before every prompt. A
    /// model switched to mid-session whose entry says it cannot call tools
    /// gets none (unless `--tools` named them), as at start-up; switching
    /// back brings them back. Returns whether the run has any tools.
    pub fn refresh_tools(&self) -> bool {
        let (excluded, tools_named) = {
            let state = super::lock(&self.inner.state);
            (state.excluded_tools.clone(), state.tools_named)
        };
        if !tools_named && !self.model().can_call_tools() {
            self.inner.agent.set_tools(makai_agent::ToolSet::new([]));
            return false;
        }
        let mcp_tools: Vec<_> = match &self.inner.mcp {
            Some(mcp) => mcp
                .tools()
                .into_iter()
                .filter(|t| !super::model::tool_excluded(t.name(), &excluded))
                .collect(),
            None => Vec::new(),
        };
        let tools =
            makai_agent::ToolSet::new(self.inner.base_tools.iter().cloned().chain(mcp_tools));
        let any = !tools.is_empty();
        self.inner.agent.set_tools(tools);
        any
    }

    /// Whether `--tools` named the tools (offered even to a model said not
    /// to call tools).
    pub fn set_tools_named(&self, named: bool) {
        super::lock(&self.inner.state).tools_named = named;
    }

    /// Tools (by name or `*` pattern) kept out of every run, MCP tools
    /// included (`--exclude-tools`).
    pub fn set_excluded_tools(&self, patterns: Vec<String>) {
        super::lock(&self.inner.state).excluded_tools = patterns;
    }

    /// Waits until every MCP server has started or failed, at most `limit`
    /// (for one-shot runs, whose first prompt would otherwise go out before
    /// the servers are up). Returns at once without MCP servers.
    pub async fn wait_mcp_settled(&self, limit: Duration) {
        if let Some(mcp) = &self.inner.mcp {
            mcp.wait_settled(limit).await;
        }
    }

    /// Stops the MCP servers (and waits a few seconds at most for them to exit).
    pub async fn shutdown_mcp(&self) {
        if let Some(mcp) = &self.inner.mcp {
            mcp.shutdown().await;
        }
    }
}

/// Starts the MCP servers of the settings and `mcp.json` files (the
/// project's only when it is trusted; `makai_mcp::McpSources`) in the background, stdio
/// servers under `sandbox` (or their own entry's); `None`
/// when none is configured. Problems with the settings are said (`say`: on
/// stderr, and kept for a full-screen UI) and never stop the run.
pub(crate) fn start_servers(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
    sandbox: makai_sandbox::SandboxConfig,
    project_trusted: bool,
    said: &mut Vec<String>,
) -> Option<makai_mcp::McpManager> {
    // An untrusted project's files are not read at all.
    let pi_dir = makai_coding::resources::pi_agent_dir();
    let sources = makai_mcp::McpSources::standard(cwd, home, pi_dir.as_deref(), project_trusted);
    let loaded = match makai_mcp::load_mcp_sources(&sources, cwd) {
        Ok(l) => l,
        Err(e) => {
            super::warnings::say(said, format!("MCP servers not started: {e}"));
            return None;
        }
    };
    for w in &loaded.warnings {
        super::warnings::say(said, format!("MCP: {w}"));
    }
    if loaded.servers.is_empty() {
        return None;
    }
    let servers = loaded.servers.into_iter().map(|e| (e.name, e.config));
    let mut options = makai_mcp::McpOptions::new(cwd);
    options.sandbox = Some(sandbox);
    Some(makai_mcp::McpManager::start(servers, options))
}
