//! `/reload` reads the MCP servers' configuration again (pi: "run `/reload`
//! after adding, removing, or changing a server outside the session"): a
//! server added starts, one changed starts again with its new
//! configuration, one gone stops, one unchanged keeps running
//! ([`makai_mcp::McpManager::reload`]); the next prompt waits for the new
//! servers with `direct` tools as the first one does, and the system
//! prompt's section on the servers reached indirectly follows.

use makai_mcp::{Exposure, McpReload};

use super::{AppSession, lock};

/// What [`AppSession::reload_mcp`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpReloaded {
    /// The servers added, changed (started again) and removed.
    pub servers: McpReload,
    /// What the user should hear: a configuration that cannot be read
    /// (the servers running stay), servers whose tools this session
    /// cannot reach until makai starts again.
    pub warnings: Vec<String>,
}

impl AppSession {
    /// Reads the MCP servers' configuration again and starts, stops or
    /// restarts the servers that changed (see the module docs). Nothing
    /// happens when MCP is off for this session (`--no-mcp`, `--no-tools`,
    /// the extension disabled). A run going keeps the tools it has.
    pub fn reload_mcp(&self) -> McpReloaded {
        let shared = &self.inner;
        let Some(start) = &shared.mcp_start else {
            return McpReloaded::default();
        };
        let loaded = match super::mcp::read_servers(
            &shared.cwd,
            start.home.as_deref(),
            shared.trust.trusted,
        ) {
            Ok(loaded) => loaded,
            Err(e) => {
                return McpReloaded {
                    warnings: vec![format!("MCP servers not reloaded, those running stay: {e}")],
                    ..Default::default()
                };
            }
        };
        let mut warnings: Vec<String> = loaded
            .warnings
            .iter()
            .map(|w| format!("MCP: {w}"))
            .collect();
        let configured = loaded
            .servers
            .iter()
            .map(|e| (e.name.clone(), e.config.clone()));
        let servers = match self.mcp() {
            Some(manager) => manager.reload(configured),
            None if loaded.servers.is_empty() => McpReload::default(),
            None => {
                let added = loaded.servers.iter().map(|e| e.name.clone()).collect();
                let manager =
                    super::mcp::start_servers(loaded.clone(), &shared.cwd, start.sandbox.clone());
                *shared.mcp.write().unwrap_or_else(|e| e.into_inner()) = Some(manager);
                self.install_indirect_refresh();
                McpReload {
                    added,
                    ..Default::default()
                }
            }
        };
        if !servers.added.is_empty() || !servers.changed.is_empty() {
            // The next prompt waits for the new servers' `direct` tools.
            lock(&shared.state).direct_servers_waited = false;
        }
        // Tools of a new server that nothing in this session reaches.
        let reach = start.reach;
        for entry in loaded.servers.iter().filter(|e| {
            e.config.enabled
                && (servers.added.contains(&e.name) || servers.changed.contains(&e.name))
        }) {
            let c = &entry.config;
            let scripts = c.has_tools_exposed(Exposure::Codemode)
                || (reach.direct_demoted && c.has_tools_exposed(Exposure::Direct));
            let missing = match (
                scripts && !reach.codemode,
                c.has_tools_exposed(Exposure::Deferred) && !reach.tool_search,
            ) {
                (true, true) => "codemode and tool_search",
                (true, false) => "codemode",
                (false, true) => "tool_search",
                (false, false) => continue,
            };
            warnings.push(format!(
                "MCP: {}'s tools are reached through {missing}, which this session started without; they are offered when makai starts again",
                entry.name
            ));
        }
        let section = super::mcp::indirect_servers_section(&loaded, reach);
        let mut sources = lock(&shared.instruction_sources);
        if sources.mcp_section != section {
            sources.mcp_section = section;
            // The prompts with the new section (the files as last read:
            // `reload_instructions` reads them again).
            let files = sources.files.get().to_vec();
            let composed = sources.compose_with(files);
            drop(sources);
            *lock(&shared.system_prompts) = composed.prompts;
        }
        McpReloaded { servers, warnings }
    }
}
