//! Building an [`AppSession`] from the command line: settings, agent spec,
//! context files, model, key, tools, session file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use makai_agent::{
    Agent, AgentLoopConfig, BudgetedClient, InProcessClient, Ledger, ProtocolClient, ToolSet,
};
use makai_ai::quote::bounded;
use makai_ai::{ThinkingBudgets, ThinkingLevel};
use makai_coding::agent_spec::{DEFAULT_AGENT, today};
use makai_coding::session::{SessionError, SharedSession, repair_session_file};
use makai_coding::system_files::SystemFiles;
use makai_coding::tools::codemode::{CODEMODE_TOOL_NAME, CodemodeParts, with_codemode};
use makai_coding::tools::tool_search::{TOOL_SEARCH_TOOL_NAME, ToolSearchTool};
use makai_coding::tools::{PathPolicy, ToolEnv, tools_by_names};
use makai_coding::trust::TrustSource;
use makai_coding::{
    AgentCatalog, JsonlStore, Session, SessionStore, Settings, build_system_prompt,
    discover_context_files,
};

use super::{AppParts, AppSession, ResourceOptions};
use crate::cli::Args;
use crate::error::CliError;
use crate::models::{self, ModelRequest};
use makai_auth::KeyResolver;

/// The working directory of a run: `--cwd` or the current directory.
pub fn working_dir(args: &Args) -> Result<PathBuf, CliError> {
    let dir = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::config(format!("cannot read the current directory: {e}")))?,
    };
    Ok(std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// Text given inline or, when it names an existing file, that file's content.
fn text_or_file(value: &str, cwd: &Path, flag: &str) -> Result<String, CliError> {
    let p = cwd.join(value);
    if value.len() < 4096 && !value.contains('\n') && p.is_file() {
        return std::fs::read_to_string(&p)
            .map_err(|e| CliError::Usage(format!("{flag} {}: cannot read it: {e}", p.display())));
    }
    Ok(value.to_string())
}

/// Why a session could not be opened: a usage error, or the session layer's error.
enum OpenFailure {
    Cli(CliError),
    Session(SessionError),
}

impl From<CliError> for OpenFailure {
    fn from(e: CliError) -> Self {
        OpenFailure::Cli(e)
    }
}

impl From<SessionError> for OpenFailure {
    fn from(e: SessionError) -> Self {
        OpenFailure::Session(e)
    }
}

/// Opens or creates the session the flags ask for. A damaged session file is
/// refused (exit 1, the message names the lines and the repair), or repaired
/// first with `--repair`.
fn open_session(args: &Args, store: &dyn SessionStore, cwd: &str) -> Result<Session, CliError> {
    let fail = |e: SessionError| CliError::config(e.to_string());
    match try_open_session(args, store, cwd) {
        Ok(s) => Ok(s),
        Err(OpenFailure::Cli(e)) => Err(e),
        Err(OpenFailure::Session(SessionError::Damaged { path, .. })) if args.repair => {
            let report = repair_session_file(&path, cwd).map_err(fail)?;
            eprintln!("makai: {report}");
            Session::open(&path).map_err(fail)
        }
        Err(OpenFailure::Session(e)) => Err(fail(e)),
    }
}

fn try_open_session(
    args: &Args,
    store: &dyn SessionStore,
    cwd: &str,
) -> Result<Session, OpenFailure> {
    if args.no_session {
        return Ok(Session::in_memory(cwd));
    }
    if let Some(query) = &args.session {
        let looks_like_path = query.contains('/') || query.ends_with(".jsonl");
        if looks_like_path {
            // A new path or an empty file starts a session there; a directory
            // or a device is refused (`Session::open_or_create`).
            return Session::open_or_create(query, cwd).map_err(|e| match e {
                SessionError::NotASession { .. } => OpenFailure::Cli(CliError::Usage(format!(
                    "--session {}: {e}",
                    bounded(query)
                ))),
                other => OpenFailure::Session(other),
            });
        }
        return store.open(cwd, query).map_err(|e| match e {
            SessionError::NotFound { .. } | SessionError::Ambiguous { .. } => OpenFailure::Cli(
                CliError::Usage(format!("--session {}: {e}", bounded(query))),
            ),
            other => OpenFailure::Session(other),
        });
    }
    if let Some(query) = &args.fork {
        return fork_session(args, store, cwd, query);
    }
    if let Some(id) = &args.session_id {
        return session_by_id(store, cwd, id);
    }
    if args.continue_ {
        return Ok(store.continue_or_create(cwd)?);
    }
    if args.resume {
        // `lib::run` turns `--resume` into the session chosen before the
        // session is built, so that one of another directory runs there.
        return Err(OpenFailure::Cli(CliError::failed(
            "--resume reached the session's opening unchosen (crate::resume::choose runs first); this is a makai bug, please report it",
        )));
    }
    Ok(store.create(cwd))
}

/// `--fork PATH|ID`: the session's current branch copied into a new session
/// of `cwd` (its id from `--session-id` when given), `parentSession` naming
/// the source.
fn fork_session(
    args: &Args,
    store: &dyn SessionStore,
    cwd: &str,
    query: &str,
) -> Result<Session, OpenFailure> {
    let usage = |e: SessionError| {
        OpenFailure::Cli(CliError::Usage(format!("--fork {}: {e}", bounded(query))))
    };
    let source = if std::path::Path::new(query).is_file() {
        Session::open(query)?
    } else {
        store.open(cwd, query).map_err(|e| match e {
            SessionError::NotFound { .. } | SessionError::Ambiguous { .. } => usage(e),
            other => OpenFailure::Session(other),
        })?
    };
    let Some(leaf) = source.leaf_id().map(str::to_string) else {
        return Err(OpenFailure::Cli(CliError::Usage(format!(
            "--fork {}: session {} has no entries to fork",
            bounded(query),
            source.id()
        ))));
    };
    let id = args
        .session_id
        .clone()
        .unwrap_or_else(makai_coding::session::new_session_id);
    if store.list_all()?.iter().any(|s| s.id == id) {
        return Err(OpenFailure::Cli(CliError::Usage(format!(
            "--session-id {id}: a session with this id exists already; fork without --session-id, \
             or choose another id"
        ))));
    }
    let header = makai_coding::session::SessionHeader::new(id, cwd);
    Ok(source.fork_into(&leaf, header, store)?)
}

/// `--session-id ID`: the session of `cwd` with exactly this id, or a new one
/// with it. An id another directory's session has is refused.
fn session_by_id(store: &dyn SessionStore, cwd: &str, id: &str) -> Result<Session, OpenFailure> {
    let all = store.list_all()?;
    match all.iter().find(|s| s.id == id) {
        Some(found) if found.cwd == cwd => Ok(store.open(cwd, id)?),
        Some(found) => Err(OpenFailure::Cli(CliError::Usage(format!(
            "--session-id {id}: the session with this id belongs to {}; open it with --session {id}, \
             or fork it here with --fork {id}",
            found.cwd
        )))),
        None => Ok(store.create_with(makai_coding::session::SessionHeader::new(id, cwd))),
    }
}

/// The session store the flags and settings name: `--store` (or the `store`
/// setting) when it is a database URL, else the JSONL files (`--session-dir`,
/// `MAKAI_SESSION_DIR`, the `sessionDir` setting, `~/.makai/sessions`).
pub fn choose_store(
    args: &Args,
    settings: &Settings,
    home: Option<&Path>,
) -> Result<Arc<dyn SessionStore>, CliError> {
    if let Some(store) = crate::store::open(args.store.as_deref(), settings.store.as_deref())? {
        return Ok(store);
    }
    let files = JsonlStore::resolve(
        args.session_dir.as_deref(),
        makai_coding::session::session_dir_from_env(),
        settings.session_dir.as_deref(),
        home,
    )
    .map_err(|e| CliError::config(e.to_string()))?;
    Ok(Arc::new(files))
}

/// pi's `PI_CACHE_RETENTION`: `long` asks providers to keep prompt caches
/// longer where they can (Anthropic's hour, OpenAI's 24 hours or 30
/// minutes), `none` asks for no caching; anything else, or unset, is the
/// default short retention.
fn cache_retention_from_env() -> makai_ai::CacheRetention {
    match std::env::var("PI_CACHE_RETENTION")
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        Ok("long") => makai_ai::CacheRetention::Long,
        Ok("none") => makai_ai::CacheRetention::None,
        _ => makai_ai::CacheRetention::Short,
    }
}

/// Wraps the session's one client: every model call of the session (runs,
/// compactions, titles) goes through the returned one (a counter, a budget,
/// a remote client...).
pub type ClientLayer = Box<dyn FnOnce(Arc<dyn ProtocolClient>) -> Arc<dyn ProtocolClient> + Send>;

/// What [`build_with`] may change besides the arguments.
#[derive(Default)]
pub struct BuildOptions {
    /// makai's home folder (settings, sessions, auth.json) instead of
    /// `MAKAI_HOME` / `~/.makai`.
    pub home: Option<PathBuf>,
    /// A layer around the in-process client.
    pub client_layer: Option<ClientLayer>,
    /// The session store to use instead of the one the flags and settings
    /// name (a server shares one database pool across its sessions).
    pub store: Option<Arc<dyn SessionStore>>,
    /// The session to serve instead of the one the flags name.
    pub session: Option<Session>,
}

impl std::fmt::Debug for BuildOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildOptions")
            .field("home", &self.home)
            .field("client_layer", &self.client_layer.is_some())
            .field("store", &self.store)
            .field("session", &self.session.as_ref().map(Session::id))
            .finish()
    }
}

/// Builds the session for a run.
pub async fn build(args: &Args) -> Result<AppSession, CliError> {
    build_with(args, BuildOptions::default()).await
}

/// Builds the session for a run with [`BuildOptions`].
pub async fn build_with(args: &Args, options: BuildOptions) -> Result<AppSession, CliError> {
    let cwd = working_dir(args)?;
    let cwd_str = cwd.display().to_string();
    let home = options.home.or_else(makai_coding::makai_home);
    // What building the session has to say: on stderr now, and to a
    // full-screen UI once it starts (which hides stderr).
    let mut said: Vec<String> = Vec::new();
    // Project trust decides whether the project's own configuration loads;
    // `defaultProjectTrust` comes from the user settings alone.
    let user_only = super::trust::settings_for(&cwd, home.as_deref(), false)?;
    let trust = super::trust::decide(args, &cwd, home.as_deref(), &user_only.settings)?;
    if !trust.trusted && matches!(trust.source, TrustSource::Setting(_)) {
        super::warnings::say_once(
            &mut said,
            format!(
                "{}: its settings, MCP servers, skills, prompt templates, agent specs and SYSTEM.md files were not loaded; \
                 pass -a (--approve) to trust it for this run, or save a decision with /trust",
                trust.describe()
            ),
        );
    } else if args.verbose {
        super::warnings::say(&mut said, trust.describe());
    }
    let loaded = if trust.trusted {
        super::trust::settings_for(&cwd, home.as_deref(), true)?
    } else {
        user_only
    };
    if args.verbose {
        for w in &loaded.warnings {
            super::warnings::say(&mut said, format!("settings: {w}"));
        }
    }
    let settings = loaded.settings;
    // pi's built-in extensions: MCP, codemode, tool_search, llama.cpp.
    let extensions = makai_coding::extensions::BuiltinExtensions::resolve(
        &settings.extensions,
        args.no_extensions,
        &args.extension,
    )
    .map_err(CliError::Usage)?;
    if !extensions.unsupported().is_empty() {
        super::warnings::say(
            &mut said,
            format!(
                "settings: \"extensions\" entries makai does not load (it runs no TypeScript extensions; its built-in ones are {}): {}",
                makai_coding::extensions::BUILTIN_EXTENSIONS
                    .map(|n| format!("builtin:{n}"))
                    .join(", "),
                extensions.unsupported().join(", ")
            ),
        );
    }
    let mut registry = models::load_registry(home.as_deref())?;
    if extensions.enabled("llama.cpp")
        && let Some(warning) = models::add_llama_cpp_models(&mut registry, home.as_deref()).await
    {
        super::warnings::say(&mut said, warning);
    }

    let catalog = AgentCatalog::load_trusted(&cwd, home.as_deref(), trust.trusted);
    let agent_name = args
        .agent
        .clone()
        .or_else(|| settings.default_agent.clone())
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let mut spec = catalog
        .require(&agent_name)
        .map_err(|e| {
            if args.agent.is_some() {
                CliError::Usage(format!("--agent {agent_name}: {e}"))
            } else {
                CliError::config(e.to_string())
            }
        })?
        .clone();

    let store = match options.store {
        Some(store) => Some(store),
        None if args.no_session => None,
        None => Some(choose_store(args, &settings, home.as_deref())?),
    };
    let session = match (options.session, &store) {
        (Some(session), _) => session,
        (None, Some(store)) => open_session(args, store.as_ref(), &cwd_str)?,
        (None, None) => Session::in_memory(cwd_str.clone()),
    };
    if let Some(location) = session.location() {
        // What loading skipped or kept with a remark (a torn last line, say).
        for w in session.warnings() {
            super::warnings::say(&mut said, format!("session {location}: {w}"));
        }
    }
    let ctx = session.context();

    let probe_keys = KeyResolver::new(home.clone(), None, None)
        .with_configured_keys(registry.provider_keys().clone());
    // The scope: `--models`, else the `enabledModels` setting, which chooses
    // the model of a new session only (pi's order: a session's own model
    // comes before the setting's scope).
    let scope = model_scope(args, &settings);
    let scoped_start = match (&args.model, &args.models, &scope) {
        (None, Some(list), _) => first_scoped_model(&registry, &probe_keys, list).await,
        (None, None, Some(list)) if ctx.messages.is_empty() && ctx.model.is_none() => {
            first_scoped_model(&registry, &probe_keys, list).await
        }
        _ => None,
    };
    let request = ModelRequest {
        model: args.model.clone().or(scoped_start),
        provider: args.provider.clone(),
        endpoint: args.base_url.clone().zip(args.api),
        local_runtime: args.local_runtime,
        session_model: ctx
            .model
            .as_ref()
            .map(|m| (m.provider.clone(), m.model_id.clone())),
        spec_model: spec.model.clone(),
        settings_model: (
            settings.default_provider.clone(),
            settings.default_model.clone(),
        ),
    };
    let chosen = models::choose(&request, &registry, &probe_keys).await?;
    let model = chosen.model;
    let keys = KeyResolver::new(
        home.clone(),
        Some(model.provider.clone()),
        args.api_key.clone(),
    )
    .with_configured_keys(registry.provider_keys().clone());

    let session_thinking = (!ctx.messages.is_empty()).then(|| ctx.thinking()).flatten();
    let thinking = args
        .thinking
        .or(chosen.thinking)
        .or(session_thinking)
        .or(spec.thinking)
        .or_else(|| {
            settings
                .model_thinking_levels
                .get(&format!("{}/{}", model.provider, model.id))
                .copied()
        })
        .or(settings.default_thinking_level)
        .unwrap_or(ThinkingLevel::Off);
    let thinking = model.clamp_thinking(thinking);

    let limits = super::budget::limits_for(&settings.limits, &spec.limits, args)?;
    if let Some(note) = super::budget::unpriced_note(&model, &limits) {
        super::warnings::say(&mut said, note.to_string());
    }
    let session = SharedSession::new(session);
    let sandbox = crate::sandboxing::choose(&settings, args.sandbox, args.verbose);
    let approvals = Arc::new(super::approvals::Approvals::new(
        settings.approvals.clone(),
        super::approvals::PreApproved::parse(&args.pre_approve),
    ));
    let files = if args.no_context_files {
        Vec::new()
    } else {
        discover_context_files(&cwd, home.as_deref())
    };
    // Tools are off for the whole session only with --no-tools. A model whose
    // entry says it cannot call tools gets none in its runs (and the
    // working-directory overview) unless --tools names some; a model switched
    // to later gets them (`AppSession::refresh_tools`).
    let tools_off = args.no_tools;
    let start_without_tools = tools_off || (args.tools.is_none() && !model.can_call_tools());
    // (The local model said why already: `local::apply`.)
    if start_without_tools && !tools_off && args.local_runtime.is_none() {
        super::warnings::say(
            &mut said,
            format!(
                "{}/{} cannot call tools (its model entry says supportsTools: false), \
                 so tools are off; pass --tools read,ls,... to offer some anyway",
                model.provider, model.id
            ),
        );
    }
    // The MCP servers are read now (they start once the agent is built):
    // whether `codemode` is needed for them shapes the tools and the prompt.
    let mcp_config = if tools_off || args.no_mcp || !extensions.enabled("mcp") {
        None
    } else {
        super::mcp::load_servers(&cwd, home.as_deref(), trust.trusted, &mut said)
    };
    let mut codemode_reach = super::mcp::CodemodeReach::default();
    let selection = args.tools.as_deref().map(|list| {
        super::mcp::McpSelection::of(&makai_coding::tools::selection::parse_list(list))
    });
    // A plain `--tools` list without `mcp__` entries declares no MCP tool:
    // the `direct` ones are then reached from scripts too.
    let direct_demoted = selection
        .as_ref()
        .is_some_and(|s| s.declared.as_ref().is_some_and(Vec::is_empty));
    let tools = if tools_off {
        Vec::new()
    } else {
        let mut policy = PathPolicy::confined();
        for root in &settings.allowed_paths {
            policy = policy.with_allowed_root(root.clone());
        }
        let mut env = ToolEnv::new(cwd.clone())
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
            super::warnings::say(&mut said, format!("defaultTools: {why}"));
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
            tools_by_names(env, &names.join(","))
                .map_err(|e| CliError::Usage(format!("--tools {}: {e}", names.join(","))))?
        };
        if task {
            tools.push(super::budget::task_tool(super::budget::TaskParts {
                catalog: catalog.clone(),
                registry: &registry,
                session: &session,
                cwd: &cwd,
                context_files: &files,
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
                &mut said,
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
        tools
    };

    // SYSTEM.md and APPEND_SYSTEM.md shape the default agent's prompt; an
    // agent chosen by name keeps its own.
    let default_agent = args.agent.is_none() && settings.default_agent.is_none();
    let system_files = if default_agent {
        let users = [home.clone(), makai_coding::resources::pi_agent_dir()];
        let users: Vec<&Path> = users.iter().flatten().map(PathBuf::as_path).collect();
        SystemFiles::discover(&cwd, trust.trusted, &users)
    } else {
        SystemFiles::default()
    };
    for w in &system_files.warnings {
        super::warnings::say(&mut said, w.clone());
    }
    if let Some(file) = &system_files.system {
        spec.system_prompt = file.text.clone();
    }
    if let Some(sp) = &args.system_prompt {
        spec.system_prompt = text_or_file(sp, &cwd, "--system-prompt")?;
    }
    // The built-in prompt describes tools; a run offered none gets the
    // tool-less one (`AppSession::prepare_run`).
    let spec_without_tools = spec.clone().without_tools();
    let resource_options = ResourceOptions {
        skills: !args.no_skills,
        templates: !args.no_prompt_templates,
        skills_in_prompt: !tools_off,
        skill_paths: absolute(&cwd, &args.skill),
        template_paths: absolute(&cwd, &args.prompt_template),
        project: trust.trusted,
    };
    let resources = resource_options.discover(&cwd);
    if args.verbose {
        for w in &resources.warnings {
            super::warnings::say(&mut said, format!("resources: {w}"));
        }
    }
    let mut system_prompt = build_system_prompt(&spec, &files, &cwd, today());
    let codemode_on =
        tools.iter().any(|t| t.name() == CODEMODE_TOOL_NAME) || codemode_reach.standby.is_some();
    let search_on = tools.iter().any(|t| t.name() == TOOL_SEARCH_TOOL_NAME)
        || codemode_reach.search_standby.is_some();
    if codemode_on {
        system_prompt.push_str("\n\n");
        system_prompt.push_str(makai_coding::tools::codemode::PROMPT_GUIDELINE);
    }
    if let Some(section) = mcp_config.as_ref().and_then(|c| {
        super::mcp::indirect_servers_section(
            c,
            super::mcp::IndirectReach {
                codemode: codemode_on,
                tool_search: search_on,
                direct_demoted,
            },
        )
    }) {
        system_prompt.push_str("\n\n");
        system_prompt.push_str(&section);
    }
    let mut system_prompt_without_tools =
        build_system_prompt(&spec_without_tools, &files, &cwd, today());
    let appended = system_files.append.iter().map(|f| Ok(f.text.clone()));
    let flags = args
        .append_system_prompt
        .iter()
        .map(|extra| text_or_file(extra, &cwd, "--append-system-prompt"));
    for extra in appended.chain(flags) {
        let extra = extra?;
        for prompt in [&mut system_prompt, &mut system_prompt_without_tools] {
            prompt.push_str("\n\n");
            prompt.push_str(&extra);
        }
    }
    // Whether the first model's runs get tools: its start-up system prompt,
    // and for the local model the turn limit and the first-turn tool call.
    // (Each run's prompt is decided again by `AppSession::prepare_run`, with
    // the working-directory overview when it gets no tools.)
    let start_with_tools = !start_without_tools && !tools.is_empty();

    let mut budgets = ThinkingBudgets::default();
    if let Some(b) = &settings.thinking_budgets {
        budgets.minimal = b.minimal.unwrap_or(budgets.minimal);
        budgets.low = b.low.unwrap_or(budgets.low);
        budgets.medium = b.medium.unwrap_or(budgets.medium);
        budgets.high = b.high.unwrap_or(budgets.high);
    }
    // Every model call of the session (runs, compaction, titles) goes through
    // this client, which resolves the key once per request.
    let mut client: Arc<dyn ProtocolClient> =
        Arc::new(InProcessClient::with_keys(Arc::new(keys.clone())));
    if let Some(layer) = options.client_layer {
        client = layer(client);
    }
    if settings.images.block_images {
        client = Arc::new(super::block_images::BlockImagesClient::new(client));
    }
    // The budget of the session tree, checked before each request.
    let ledger = Ledger::new(limits.budget());
    let client: Arc<dyn ProtocolClient> = Arc::new(BudgetedClient::new(client, ledger.clone()));
    // Refreshes go through the session's client: the budget counts them.
    let warmer = makai_coding::cache_warming::CacheWarmer::new(client.clone());
    let mut builder = AgentLoopConfig::builder(model.clone(), client)
        .cwd(cwd.clone())
        .partial_snapshots(false)
        .thinking(thinking)
        .thinking_budgets(budgets)
        .session_id(session.lock().id().to_string())
        .cache_retention(cache_retention_from_env())
        .steering(args.steering.unwrap_or(settings.steering_delivery))
        // Dry run is the agent's: every tool that is not read-only (built-in,
        // MCP, sub-agent) only says what it would do.
        .dry_run(args.dry_run)
        .hooks(Arc::new(super::cache_warming::SessionHooks {
            approvals: super::approvals::ApprovalHooks(approvals.clone()),
            warmer: warmer.clone(),
        }));
    if model.provider == makai_local::PROVIDER {
        builder = builder.temperature(makai_local::TEMPERATURE);
    }
    let mut config = builder.build();
    config.options.read_interval = settings.stream_read_interval();
    config.options.idle_timeout = settings.http_idle_timeout();
    config.options.merge_deltas = settings.stream_merge_deltas.unwrap_or(true);
    config.limits = limits.execution();
    if model.provider == makai_local::PROVIDER && start_with_tools {
        // A turn limit of the user's own wins.
        if config.limits.max_turns.is_none() {
            config.limits.max_turns = Some(makai_local::MAX_TURNS);
        }
    }
    let agent = Agent::new(config)
        .with_system_prompt(if start_with_tools {
            system_prompt.clone()
        } else {
            system_prompt_without_tools.clone()
        })
        .with_tools(ToolSet::new(tools));
    agent.set_steering_mode(settings.steering_mode);
    agent.set_follow_up_mode(settings.follow_up_mode);

    // MCP servers start in the background; their tools join the runs once ready.
    let mcp = mcp_config.map(|loaded| {
        super::mcp::start_servers(
            loaded,
            &cwd,
            crate::sandboxing::config(&settings, args.sandbox),
        )
    });
    let app = AppSession::new(AppParts {
        agent,
        session,
        registry,
        keys,
        settings,
        cwd,
        store,
        system_prompt,
        system_prompt_without_tools,
        resources,
        resource_options,
        mcp,
        codemode: codemode_reach,
        sandbox,
        approvals,
        warmer,
        ledger,
        limits,
        first_turn_policy: model.provider == makai_local::PROVIDER && start_with_tools,
        trust,
        startup_warnings: said,
    });
    if let Some(name) = &args.name {
        app.set_session_name(name)?;
    }
    let mut excluded = excluded_tools(args);
    if let Some(selection) = &selection {
        excluded.extend(selection.removed.iter().cloned());
    }
    app.set_excluded_tools(excluded);
    app.set_tools_named(args.tools.is_some());
    app.set_mcp_selection(selection.and_then(|s| s.declared));
    if let Some(list) = &scope {
        // Patterns keep their `:level` pins, applied when Ctrl+P reaches them.
        app.set_scoped_models(makai_coding::tools::selection::parse_list(list));
    }
    Ok(app)
}

/// The model scope of a run: `--models`, else the `enabledModels` setting
/// (joined as `--models` would be written), else none.
fn model_scope(args: &Args, settings: &Settings) -> Option<String> {
    args.models.clone().or_else(|| {
        settings
            .enabled_models
            .as_ref()
            .filter(|list| !list.is_empty())
            .map(|list| list.join(","))
    })
}

/// The first model `--models` names that is usable (no key needed, or one
/// configured), as `provider/id[:thinking]`, patterns taken in order; `None`
/// when none is, so the usual choice applies.
async fn first_scoped_model(
    registry: &makai_ai::catalog::ModelRegistry,
    keys: &KeyResolver,
    list: &str,
) -> Option<String> {
    for pattern in makai_coding::tools::selection::parse_list(list) {
        let (pattern, thinking) = models::split_thinking(&pattern);
        for m in registry.models() {
            if !super::model::model_matches(m, &pattern) {
                continue;
            }
            let usable = !makai_ai::credentials::needs_credential(m)
                || makai_ai::credentials::ambient_configured(
                    m,
                    &makai_ai::credentials::Env::process(),
                )
                || keys.source(&m.provider).await.ok().flatten().is_some();
            if usable {
                let suffix = thinking
                    .map(|t| format!(":{}", t.as_str()))
                    .unwrap_or_default();
                return Some(format!("{}/{}{suffix}", m.provider, m.id));
            }
        }
    }
    None
}

/// The `--exclude-tools` patterns.
fn excluded_tools(args: &Args) -> Vec<String> {
    args.exclude_tools
        .iter()
        .flat_map(|list| makai_coding::tools::selection::parse_list(list))
        .collect()
}

/// `paths`, relative ones taken from `cwd`.
fn absolute(cwd: &std::path::Path, paths: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    paths.iter().map(|p| cwd.join(p)).collect()
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
