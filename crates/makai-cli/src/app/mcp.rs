//! MCP tools of an [`AppSession`]: the servers start in the background (see
//! [`makai_mcp::McpManager`]); each run gets the tools of those ready by then:
//! the `direct` ones declared, the others reached through `codemode`
//! ([`makai_mcp::exposure`]).

use std::sync::Arc;
use std::time::Duration;

use makai_agent::Tool;
use makai_coding::tools::codemode::{CODEMODE_TOOL_NAME, IndirectTools, Namespace};
use makai_coding::tools::tool_search::TOOL_SEARCH_TOOL_NAME;

use super::AppSession;

impl AppSession {
    /// The MCP servers of this session, if any are configured.
    pub fn mcp(&self) -> Option<makai_mcp::McpManager> {
        self.inner
            .mcp
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the agent's tools for the next run: its own tools plus the
    /// `direct` tools of the MCP servers that are ready now and those
    /// `tool_search` loaded on this branch (the others are reached through
    /// `codemode` and `tool_search`, added for them when the tools chosen
    /// lack them). Called before every prompt. A
    /// model switched to mid-session whose entry says it cannot call tools
    /// gets none (unless `--tools` named them), as at start-up; switching
    /// back brings them back. Returns whether the run has any tools.
    pub fn refresh_tools(&self) -> bool {
        let tools_named = super::lock(&self.inner.state).tools_named;
        if !tools_named && !self.model().can_call_tools() {
            self.inner.agent.set_tools(makai_agent::ToolSet::new([]));
            return false;
        }
        let (direct, indirect) = self.mcp_tools();
        let reach = &self.inner.codemode;
        let base = super::lock(&self.inner.base_tools).clone();
        // The tools standing by for the configured servers are offered
        // whether or not those servers are connected yet (a script waits for
        // them), so the declarations do not change when they connect.
        let standing_by = |name: &str, tool: &Option<Arc<dyn Tool>>| {
            base.get(name).is_none().then(|| tool.clone()).flatten()
        };
        let standby = standing_by(CODEMODE_TOOL_NAME, &reach.standby);
        let search_standby = standing_by(TOOL_SEARCH_TOOL_NAME, &reach.search_standby);
        // Tools `tool_search` loaded on this branch stay declared.
        let loaded = self.inner.agent.declared_tool_changes();
        let loaded: Vec<Arc<dyn Tool>> = indirect
            .iter()
            .filter(|(t, _)| loaded.iter().any(|n| n == t.name()))
            .map(|(t, _)| t.clone())
            .collect();
        self.set_indirect(indirect);
        let tools = makai_agent::ToolSet::new(
            base.iter()
                .cloned()
                .chain(direct.into_iter().map(|(t, _)| t))
                .chain(standby)
                .chain(search_standby)
                .chain(loaded),
        );
        let any = !tools.is_empty();
        self.inner.agent.set_tools(tools);
        any
    }

    /// The MCP tools of the servers ready now, with `--exclude-tools` and
    /// `--tools` applied: the declared ones, and those reached through
    /// `codemode` and `tool_search`, each with its exposure.
    fn mcp_tools(&self) -> (Vec<ExposedTool>, Vec<ExposedTool>) {
        let (excluded, selection) = {
            let state = super::lock(&self.inner.state);
            (state.excluded_tools.clone(), state.mcp_selection.clone())
        };
        match self.mcp() {
            Some(mcp) => mcp
                .tools_with_exposure()
                .into_iter()
                .filter(|(t, _)| !mcp_tool_matches(t.name(), &excluded))
                .filter_map(|(t, e)| {
                    let e = match &selection {
                        Some(patterns) => McpSelection::exposure(patterns, t.name(), e)?,
                        None => e,
                    };
                    Some((t, e))
                })
                .partition(|(_, e)| !e.is_indirect()),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// Hands the tools that are not declared to `codemode` and
    /// `tool_search`, with the servers as namespaces.
    fn set_indirect(&self, indirect: Vec<ExposedTool>) {
        let namespaces = self.mcp().map_or_else(Vec::new, |mcp| {
            mcp.descriptions()
                .into_iter()
                .map(|d| Namespace {
                    // pi: the configured description, else the first line
                    // of the server's instructions.
                    description: d.description.or_else(|| {
                        d.instructions
                            .as_deref()
                            .and_then(|i| i.lines().next())
                            .map(str::to_string)
                    }),
                    instructions: d.instructions,
                    name: d.name,
                })
                .collect()
        });
        self.inner
            .codemode
            .indirect
            .set(indirect.into_iter().map(|(t, _)| t).collect(), namespaces);
    }

    /// Lets `codemode` and `tool_search` wait (up to [`INDIRECT_WAIT`]) for
    /// MCP servers still connecting, then see their tools (as pi's do).
    pub(crate) fn install_indirect_refresh(&self) {
        if self.mcp().is_none() {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        self.inner.codemode.indirect.set_refresh(Arc::new(move || {
            let weak = weak.clone();
            Box::pin(async move {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let app = AppSession { inner };
                if let Some(mcp) = app.mcp() {
                    mcp.wait_settled(INDIRECT_WAIT).await;
                }
                let (_, indirect) = app.mcp_tools();
                app.set_indirect(indirect);
            })
        }));
    }

    /// Before the session's first prompt, waits (up to [`DIRECT_WAIT`]) for
    /// the MCP servers with `direct` tools still connecting: those must be
    /// declared in its request (as pi's first prompt does). At once when all
    /// have settled, and for every later prompt.
    pub(crate) async fn wait_direct_servers(&self) {
        let first = !std::mem::replace(
            &mut super::lock(&self.inner.state).direct_servers_waited,
            true,
        );
        if let Some(mcp) = self.mcp().filter(|_| first) {
            mcp.wait_settled_where(DIRECT_WAIT, |c| {
                c.has_tools_exposed(makai_mcp::Exposure::Direct)
            })
            .await;
        }
    }

    /// Whether `--tools` named the tools (offered even to a model said not
    /// to call tools).
    pub fn set_tools_named(&self, named: bool) {
        super::lock(&self.inner.state).tools_named = named;
    }

    /// The `mcp__` entries of a plain `--tools` list (see
    /// [`McpSelection::declared`]); `None` leaves the MCP tools' exposure as
    /// configured.
    pub fn set_mcp_selection(&self, patterns: Option<Vec<String>>) {
        super::lock(&self.inner.state).mcp_selection = patterns;
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
        if let Some(mcp) = self.mcp() {
            mcp.wait_settled(limit).await;
        }
    }

    /// Stops the MCP servers (and waits a few seconds at most for them to exit).
    pub async fn shutdown_mcp(&self) {
        if let Some(mcp) = self.mcp() {
            mcp.shutdown().await;
        }
    }
}

/// An MCP tool with how the model reaches it.
type ExposedTool = (Arc<dyn Tool>, makai_mcp::Exposure);

/// How long a prompt waits for MCP servers with `direct` tools (pi's 10 s).
const DIRECT_WAIT: Duration = Duration::from_secs(10);

/// How long `codemode` and `tool_search` wait for MCP servers still
/// connecting.
const INDIRECT_WAIT: Duration = Duration::from_secs(10);

/// What `--tools` says of the MCP tools, as in pi: a list of plain names
/// declares no MCP tool that none of its entries names or matches (such a
/// tool stays reachable from `codemode` scripts), and once an entry starts
/// with `mcp__` the MCP tools no entry matches are left out altogether
/// (`--tools read,codemode,'mcp__radius__*'` keeps only `radius`'s). In a
/// list of `+name`/`-name` changes, `-mcp__<server>__<tool>` leaves that tool
/// out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpSelection {
    /// For a plain list, its `mcp__` entries (names or `*` patterns).
    pub declared: Option<Vec<String>>,
    /// The MCP tools a change list removes.
    pub removed: Vec<String>,
}

impl McpSelection {
    /// Whether a `--tools` entry is about MCP tools (`mcp__…`, `+mcp__…`,
    /// `-mcp__…`).
    pub fn is_mcp_entry(entry: &str) -> bool {
        makai_mcp::naming::is_mcp_tool_name(entry.trim().trim_start_matches(['+', '-']))
    }

    /// The selection the `--tools` entries `list` make.
    pub fn of(list: &[String]) -> McpSelection {
        let mcp = |e: &&String| Self::is_mcp_entry(e);
        if makai_coding::tools::selection::only_changes(list) {
            McpSelection {
                declared: None,
                removed: list
                    .iter()
                    .filter(mcp)
                    .filter_map(|e| e.trim().strip_prefix('-'))
                    .map(str::to_string)
                    .collect(),
            }
        } else {
            McpSelection {
                declared: Some(
                    list.iter()
                        .filter(mcp)
                        .map(|e| e.trim().to_string())
                        .collect(),
                ),
                removed: Vec::new(),
            }
        }
    }

    /// How the MCP tool `name`, of configured exposure `exposure`, is
    /// reached under the plain list's `mcp__` entries `patterns`: `None`
    /// when it is left out.
    pub fn exposure(
        patterns: &[String],
        name: &str,
        exposure: makai_mcp::Exposure,
    ) -> Option<makai_mcp::Exposure> {
        if mcp_tool_matches(name, patterns) {
            Some(exposure)
        } else if !patterns.is_empty() {
            None
        } else if exposure == makai_mcp::Exposure::Direct {
            Some(makai_mcp::Exposure::Codemode)
        } else {
            Some(exposure)
        }
    }
}

/// Whether the MCP tool `name` matches one of `patterns` (names or `*`
/// patterns). The resource tools count as MCP tools, as in pi: `mcp__*`
/// matches them too.
fn mcp_tool_matches(name: &str, patterns: &[String]) -> bool {
    super::model::tool_excluded(name, patterns)
        || (makai_mcp::resources::RESOURCE_TOOL_NAMES.contains(&name)
            && super::model::tool_excluded(
                &format!("{}{name}", makai_mcp::naming::PREFIX),
                patterns,
            ))
}

/// How `codemode` and `tool_search` reach the MCP tools the model is not
/// offered.
#[derive(Clone, Default)]
pub struct CodemodeReach {
    /// The tools not declared to the model, updated with each run's tools.
    pub indirect: IndirectTools,
    /// A `codemode` tool added to the runs when servers with tools of
    /// `codemode` exposure are configured and the tools chosen have none
    /// (pi's `autoEnableCodemode`).
    pub standby: Option<Arc<dyn Tool>>,
    /// A `tool_search` tool added to the runs when servers with tools of
    /// `deferred` exposure are configured and the tools chosen have none
    /// (as pi does).
    pub search_standby: Option<Arc<dyn Tool>>,
}

/// What reaches the MCP tools that are not declared, for the system
/// prompt's `<mcp_servers>` section.
#[derive(Clone, Copy, Debug, Default)]
pub struct IndirectReach {
    /// `codemode` is (or may be) among the tools.
    pub codemode: bool,
    /// `tool_search` is (or may be) among the tools.
    pub tool_search: bool,
    /// `--tools` declares none of the `direct` tools either.
    pub direct_demoted: bool,
}

/// The system prompt's section on the MCP servers whose tools are not
/// declared (pi's `mcp_servers` section): each with how its tools are
/// reached and its `description`; `None` when there are none, or nothing
/// reaches them.
pub(crate) fn indirect_servers_section(
    loaded: &makai_mcp::LoadedMcpConfig,
    reach: IndirectReach,
) -> Option<String> {
    use makai_mcp::Exposure;
    let lines: Vec<String> = loaded
        .servers
        .iter()
        .filter(|s| s.config.enabled)
        .filter_map(|s| {
            let c = &s.config;
            let scripts = c.has_tools_exposed(Exposure::Codemode)
                || (reach.direct_demoted && c.has_tools_exposed(Exposure::Direct));
            let deferred = c.has_tools_exposed(Exposure::Deferred);
            let how = match (
                reach.codemode && (scripts || deferred),
                reach.tool_search && deferred,
            ) {
                (true, true) => "codemode, tool_search",
                (true, false) => "codemode",
                (false, true) => "tool_search",
                (false, false) => return None,
            };
            Some(match &c.description {
                Some(d) => format!(
                    "- {} ({how}): {}",
                    s.name,
                    d.lines().next().unwrap_or_default()
                ),
                None => format!("- {} ({how})", s.name),
            })
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut how = Vec::new();
    if reach.codemode {
        how.push("call them from codemode scripts as tools.mcp__<server>__<tool>(args) (a '-' in a name is '_' there), and find them with searchTools(), describeTool() or describeNamespace(\"mcp__<server>\")");
    }
    if reach.tool_search {
        how.push("load those marked tool_search with tool_search, then call them directly");
    }
    Some(format!(
        "<mcp_servers>\nThe tools of these MCP servers are not declared to you: {}.\n{}\n</mcp_servers>",
        how.join("; "),
        lines.join("\n")
    ))
}

/// Reads the MCP servers of the settings and `mcp.json` files (the
/// project's only when it is trusted; `makai_mcp::McpSources`); `None` when
/// none is configured. Problems with the settings are said (`say`: on
/// stderr, and kept for a full-screen UI) and never stop the run.
pub(crate) fn load_servers(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
    project_trusted: bool,
    said: &mut Vec<String>,
) -> Option<makai_mcp::LoadedMcpConfig> {
    let loaded = match read_servers(cwd, home, project_trusted) {
        Ok(l) => l,
        Err(e) => {
            super::warnings::say(said, format!("MCP servers not started: {e}"));
            return None;
        }
    };
    for w in &loaded.warnings {
        super::warnings::say(said, format!("MCP: {w}"));
    }
    (!loaded.servers.is_empty()).then_some(loaded)
}

/// The MCP servers of the settings and `mcp.json` files (the project's
/// only when it is trusted: an untrusted project's files are not read).
pub(crate) fn read_servers(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
    project_trusted: bool,
) -> Result<makai_mcp::LoadedMcpConfig, makai_mcp::McpConfigError> {
    let pi_dir = makai_coding::resources::pi_agent_dir();
    let sources = makai_mcp::McpSources::standard(cwd, home, pi_dir.as_deref(), project_trusted);
    makai_mcp::load_mcp_sources(&sources, cwd)
}

/// How a session starts its MCP servers, reads them again (`/reload`) and
/// reaches the tools it does not declare.
#[derive(Clone, Debug)]
pub struct McpStart {
    /// makai's home folder (the user's `mcp.json` and settings).
    pub home: Option<std::path::PathBuf>,
    /// The sandbox of stdio servers without one of their own.
    pub sandbox: makai_sandbox::SandboxConfig,
    /// What reaches the tools that are not declared.
    pub reach: IndirectReach,
}

/// Starts the servers `loaded` in the background, stdio servers under
/// `sandbox` (or their own entry's).
pub(crate) fn start_servers(
    loaded: makai_mcp::LoadedMcpConfig,
    cwd: &std::path::Path,
    sandbox: makai_sandbox::SandboxConfig,
) -> makai_mcp::McpManager {
    let servers = loaded.servers.into_iter().map(|e| (e.name, e.config));
    let mut options = makai_mcp::McpOptions::new(cwd);
    options.sandbox = Some(sandbox);
    makai_mcp::McpManager::start(servers, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_mcp::Exposure;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tools_lists_select_mcp_tools_as_in_pi() {
        // A plain list without `mcp__` entries declares none of them.
        let plain = McpSelection::of(&v(&["read", "codemode"]));
        let patterns = plain.declared.clone().unwrap();
        assert_eq!(
            McpSelection::exposure(&patterns, "mcp__a__x", Exposure::Direct),
            Some(Exposure::Codemode)
        );
        assert_eq!(
            McpSelection::exposure(&patterns, "mcp__a__x", Exposure::Deferred),
            Some(Exposure::Deferred)
        );
        // `mcp__` entries keep what they match, and only that.
        let named = McpSelection::of(&v(&["read", "mcp__radius__*"]));
        let patterns = named.declared.unwrap();
        assert_eq!(
            McpSelection::exposure(&patterns, "mcp__radius__q", Exposure::Direct),
            Some(Exposure::Direct)
        );
        assert_eq!(
            McpSelection::exposure(&patterns, "mcp__other__q", Exposure::Direct),
            None
        );
        assert_eq!(
            McpSelection::exposure(&patterns, "read_mcp_resource", Exposure::Direct),
            None,
            "the resource tools count as MCP tools"
        );
        // A change list only removes, by exact name.
        let changes = McpSelection::of(&v(&["+codemode", "-mcp__a__x", "-write"]));
        assert_eq!(changes.declared, None);
        assert_eq!(changes.removed, v(&["mcp__a__x"]));
        // `mcp__*` reaches the resource tools too.
        assert!(mcp_tool_matches("list_mcp_resources", &v(&["mcp__*"])));
        assert!(!mcp_tool_matches("list_mcp_resources", &v(&["mcp__a__*"])));
    }
}
