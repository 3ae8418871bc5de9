//! The tools of a session being built ([`super::setup::build_with`]): the
//! agent spec's built-in tools as the settings (`defaultTools`) and the
//! flags (`--tools`, `--exclude-tools`, `--no-builtin-tools`) choose them,
//! the `task` tool, and `codemode` and `tool_search` as chosen or as the
//! MCP servers' tools need them (pi's `autoEnableCodemode`).

use std::path::Path;
use std::sync::Arc;

use makai_agent::Tool;
use makai_ai::catalog::ModelRegistry;
use makai_auth::KeyResolver;
use makai_coding::agent_spec::AgentSpec;
use makai_coding::context_files::SharedContextFiles;
use makai_coding::extensions::BuiltinExtensions;
use makai_coding::session::SharedSession;
use makai_coding::tools::SandboxChoice;
use makai_coding::tools::codemode::{CODEMODE_TOOL_NAME, CodemodeParts, with_codemode};
use makai_coding::tools::tool_search::{TOOL_SEARCH_TOOL_NAME, ToolSearchTool};
use makai_coding::tools::{PathPolicy, ToolEnv, tools_by_names};
use makai_coding::{AgentCatalog, Settings};

use crate::cli::Args;
use crate::error::CliError;

/// What the tools are chosen from.
pub(super) struct ToolInputs<'a> {
    pub args: &'a Args,
    pub settings: &'a Settings,
    pub cwd: &'a Path,
    pub sandbox: &'a SandboxChoice,
    pub approvals: &'a Arc<super::approvals::Approvals>,
    pub session: &'a SharedSession,
    pub spec: &'a AgentSpec,
    pub extensions: &'a BuiltinExtensions,
    pub catalog: &'a AgentCatalog,
    pub registry: &'a ModelRegistry,
    pub files: &'a SharedContextFiles,
    pub keys: &'a KeyResolver,
    /// The MCP servers configured (none when MCP is off).
    pub mcp_config: Option<&'a makai_mcp::LoadedMcpConfig>,
    /// A plain `--tools` list declares no MCP tool: the `direct` ones are
    /// reached from scripts too.
    pub direct_demoted: bool,
}

/// The session's tools, and the environment its built-in tools run in
/// (kept: `/reload` builds the tools newly added to `defaultTools` in it);
/// `reach` learns the tools standing by for the MCP servers' tools, `said`
/// what the user is told.
pub(super) fn session_tools(
    inputs: ToolInputs<'_>,
    codemode_reach: &mut super::mcp::CodemodeReach,
    said: &mut Vec<String>,
) -> Result<(Vec<Arc<dyn Tool>>, ToolEnv), CliError> {
    let ToolInputs {
        args,
        settings,
        cwd,
        sandbox,
        approvals,
        session,
        spec,
        extensions,
        catalog,
        registry,
        files,
        keys,
        mcp_config,
        direct_demoted,
    } = inputs;
    let mut policy = PathPolicy::confined();
    for root in &settings.allowed_paths {
        policy = policy.with_allowed_root(root.clone());
    }
    let mut env = ToolEnv::new(cwd.to_path_buf())
        .with_policy(policy)
        .with_sandbox(sandbox.clone())
        .with_escalation(makai_coding::approvals::Escalation {
            approver: approvals.clone(),
            settings: settings.approvals.clone(),
        });
    env.fit_images = settings.images.auto_resize;
    // `bash` tells its commands the session's file as it is when each
    // starts (pi's PI_SESSION_FILE; the session changes with /new,
    // /resume): the current one's, or a sub-agent's (its file sits
    // beside the parent's).
    let current = session.clone();
    env = env.with_session_file(makai_coding::tools::SessionFile::new(move |id| {
        let (own, own_id) = {
            let s = current.lock();
            (s.path().map(Path::to_path_buf)?, s.id().to_string())
        };
        let file = match id {
            Some(id) if id != own_id => makai_coding::JsonlStore::flat(own.parent()?)
                .find("", id)
                .ok()?,
            _ => own,
        };
        std::path::absolute(file).ok()
    }));
    let mut names = spec.tools.clone();
    // pi's defaultTools choose the default agent's tools; a spec of its own lists them.
    if args.agent.is_none()
        && settings.default_agent.is_none()
        && let Some(list) = &settings.default_tools
    {
        names = makai_coding::tools::select_tools(&names, list);
        names = checked_tools(names, "the defaultTools setting", CliError::Config)?;
    }
    if let Some(list) = &args.tools {
        // `mcp__` entries select MCP tools (see `McpSelection`).
        let entries: Vec<String> = makai_coding::tools::selection::parse_list(list)
            .into_iter()
            .filter(|e| !super::mcp::McpSelection::is_mcp_entry(e))
            .collect();
        names = makai_coding::tools::select_tools(&names, &entries);
        names = checked_tools(names, &format!("--tools {list}"), CliError::Usage)?;
    }
    if args.no_builtin_tools {
        names.clear();
    }
    let excluded = excluded_tools(args);
    names.retain(|n| !super::model::tool_excluded(n, &excluded));
    // A tool of a built-in extension that is off is not there: named
    // by --tools it is an error, by the settings it is left out.
    for (tool, extension) in [
        (CODEMODE_TOOL_NAME, "codemode"),
        (TOOL_SEARCH_TOOL_NAME, "tool-search"),
    ] {
        if extensions.enabled(extension) || !names.iter().any(|n| n == tool) {
            continue;
        }
        let why = format!(
            "{tool} is off: its built-in extension is disabled (\"extensions\": [\"-builtin:{extension}\"] or --no-extensions; -e builtin:{extension} turns it on)"
        );
        if args.tools.as_deref().is_some_and(|l| {
            l.split(',')
                .any(|e| e.trim().trim_start_matches('+') == tool)
        }) {
            return Err(CliError::Usage(format!("--tools: {why}")));
        }
        super::warnings::say(said, format!("defaultTools: {why}"));
        names.retain(|n| n != tool);
    }
    let task = names.iter().any(|n| n == makai_coding::subagent::TASK_TOOL);
    let codemode = names.iter().any(|n| n == CODEMODE_TOOL_NAME);
    let tool_search = names.iter().any(|n| n == TOOL_SEARCH_TOOL_NAME);
    names.retain(|n| {
        n != makai_coding::subagent::TASK_TOOL
            && n != CODEMODE_TOOL_NAME
            && n != TOOL_SEARCH_TOOL_NAME
    });
    let mut tools = if names.is_empty() {
        Vec::new()
    } else {
        tools_by_names(env.clone(), &names.join(","))
            .map_err(|e| CliError::Usage(format!("--tools {}: {e}", names.join(","))))?
    };
    if task {
        tools.push(super::budget::task_tool(super::budget::TaskParts {
            catalog: catalog.clone(),
            registry,
            session,
            cwd,
            context_files: files,
            settings: settings.subagents,
            spec: spec.subagents,
        }));
    }
    let parts = CodemodeParts {
        settings: settings.codemode.clone(),
        store: Some(Arc::new(session.clone())),
        models: Some(Arc::new(super::model::CatalogModels {
            models: registry.models().to_vec(),
            keys: keys.clone(),
        })),
        indirect: codemode_reach.indirect.clone(),
    };
    // pi turns `codemode` on for servers with `codemode` tools (and
    // `direct` ones a `--tools` list does not declare), `tool_search`
    // for servers with `deferred` tools.
    let servers_with = |exposure: makai_mcp::Exposure| {
        mcp_config.as_ref().is_some_and(|c| {
            c.servers.iter().any(|s| {
                s.config.enabled
                    && (s.config.has_tools_exposed(exposure)
                        || (exposure == makai_mcp::Exposure::Codemode
                            && direct_demoted
                            && s.config.has_tools_exposed(makai_mcp::Exposure::Direct)))
            })
        })
    };
    let for_servers = servers_with(makai_mcp::Exposure::Codemode);
    let search_tool = ToolSearchTool::new(codemode_reach.indirect.clone()).into_arc();
    if tool_search {
        tools.push(search_tool);
    } else if servers_with(makai_mcp::Exposure::Deferred) && extensions.enabled("tool-search") {
        codemode_reach.search_standby = Some(search_tool);
    }
    let auto_codemode = mcp_config
        .as_ref()
        .is_some_and(|c| c.auto_enables_codemode());
    if codemode {
        tools = with_codemode(tools, parts);
    } else if for_servers && auto_codemode && extensions.enabled("codemode") {
        // The same tool, standing by until a server's indirect tools
        // are ready ("on" mode: the chosen tools stay declared).
        let mut parts = parts;
        parts.settings.mode = makai_coding::tools::codemode::CodemodeMode::On;
        codemode_reach.standby = with_codemode(tools.clone(), parts).pop();
    }
    // Either reaches the tools that are not declared (pi warns once when
    // neither is on).
    let reached = codemode
        || tool_search
        || codemode_reach.standby.is_some()
        || codemode_reach.search_standby.is_some();
    if (for_servers || servers_with(makai_mcp::Exposure::Deferred)) && !reached {
        let mut why = Vec::new();
        if !auto_codemode {
            why.push("autoEnableCodemode: false");
        }
        if !extensions.enabled("codemode") || !extensions.enabled("tool-search") {
            why.push("a built-in extension is disabled");
        }
        super::warnings::say(
            said,
            format!(
                "MCP: some servers' tools are reached only through codemode or tool_search, and neither is on ({}): the model cannot call them; give them \"exposure\": \"direct\" or add codemode or tool_search to the tools",
                if why.is_empty() {
                    "not chosen".to_string()
                } else {
                    why.join(", ")
                }
            ),
        );
    }
    Ok((tools, env))
}

/// How the command line chose the tools at start: what `/reload` needs to
/// enable the tools newly added to `defaultTools` as pi does (a plain
/// `--tools` list, `--no-tools`, `--no-builtin-tools` or an agent spec
/// fixes them; `--tools` of `+name`/`-name` entries applies to the
/// reloaded setting too; `--exclude-tools` still excludes).
#[derive(Clone, Debug, Default)]
pub struct ToolsAtStart {
    /// The setting does not choose the tools.
    pub fixed: bool,
    /// `--tools`' `+name` and `-name` entries.
    pub changes: Vec<String>,
    /// `--exclude-tools`' patterns.
    pub excluded: Vec<String>,
}

impl ToolsAtStart {
    /// How `args` chose the tools.
    pub(super) fn of(args: &Args, settings: &Settings) -> Self {
        let entries: Vec<String> = args
            .tools
            .as_deref()
            .map(makai_coding::tools::selection::parse_list)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| !super::mcp::McpSelection::is_mcp_entry(e))
            .collect();
        let plain = entries
            .iter()
            .any(|e| !e.starts_with('+') && !e.starts_with('-'));
        ToolsAtStart {
            fixed: plain
                || args.no_tools
                || args.no_builtin_tools
                || args.agent.is_some()
                || settings.default_agent.is_some(),
            changes: if plain { Vec::new() } else { entries },
            excluded: excluded_tools(args),
        }
    }

    /// The tools a `defaultTools` setting of `list` selects from the
    /// agent's `spec_tools`, with the command line's changes.
    fn select(&self, spec_tools: &[String], list: Option<&[String]>) -> Vec<String> {
        let mut names = match list {
            Some(list) => makai_coding::tools::select_tools(spec_tools, list),
            None => spec_tools.to_vec(),
        };
        if !self.changes.is_empty() {
            names = makai_coding::tools::select_tools(&names, &self.changes);
        }
        names.retain(|n| !super::model::tool_excluded(n, &self.excluded));
        names
    }

    /// The tools `/reload` enables (pi's rule): those the new `defaultTools`
    /// selects and the old one did not. Tools removed from the setting stay.
    pub(super) fn newly_added(
        &self,
        spec_tools: &[String],
        old: Option<&[String]>,
        new: Option<&[String]>,
    ) -> Vec<String> {
        if self.fixed {
            return Vec::new();
        }
        let before = self.select(spec_tools, old);
        self.select(spec_tools, new)
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect()
    }
}

/// The built-in tools among `names`, built in `env`; the others (`task`,
/// `codemode`, `tool_search`, which the session was built with or without,
/// and unknown names) are returned with why each waits.
pub(super) fn build_added(env: &ToolEnv, names: &[String]) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let (built_in, other): (Vec<&String>, Vec<&String>) = names
        .iter()
        .partition(|n| makai_coding::tools::BUILTIN_TOOL_NAMES.contains(&n.as_str()));
    let mut waiting: Vec<String> = other
        .into_iter()
        .map(
            |n| match checked_tools(vec![n.clone()], "defaultTools", CliError::Config) {
                Ok(_) => format!("defaultTools: {n} is enabled when makai starts again"),
                Err(e) => e.to_string(),
            },
        )
        .collect();
    let names: Vec<&str> = built_in.iter().map(|n| n.as_str()).collect();
    let tools = if names.is_empty() {
        Vec::new()
    } else {
        match tools_by_names(env.clone(), &names.join(",")) {
            Ok(tools) => tools,
            Err(e) => {
                waiting.push(format!("defaultTools: {e}"));
                Vec::new()
            }
        }
    };
    (tools, waiting)
}

/// The `--exclude-tools` patterns.
pub(super) fn excluded_tools(args: &Args) -> Vec<String> {
    args.exclude_tools
        .iter()
        .flat_map(|list| makai_coding::tools::selection::parse_list(list))
        .collect()
}

/// `names` when every one is a built-in tool; else the error `make` builds,
/// naming `source`.
fn checked_tools(
    names: Vec<String>,
    source: &str,
    make: fn(String) -> CliError,
) -> Result<Vec<String>, CliError> {
    match names.iter().find(|n| {
        !makai_coding::tools::BUILTIN_TOOL_NAMES.contains(&n.as_str())
            && n.as_str() != makai_coding::subagent::TASK_TOOL
            && n.as_str() != CODEMODE_TOOL_NAME
            && n.as_str() != TOOL_SEARCH_TOOL_NAME
    }) {
        Some(bad) => Err(make(format!(
            "{source}: unknown tool '{}'; the built-in tools are: {}, {}, {CODEMODE_TOOL_NAME}, {TOOL_SEARCH_TOOL_NAME}",
            makai_ai::quote::bounded(bad),
            makai_coding::tools::BUILTIN_TOOL_NAMES.join(", "),
            makai_coding::subagent::TASK_TOOL
        ))),
        None => Ok(names),
    }
}
