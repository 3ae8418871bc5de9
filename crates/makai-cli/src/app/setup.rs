//! Building an [`AppSession`] from the command line: settings, agent spec,
//! context files, model, key, tools, session file.

use std::path::PathBuf;
use std::sync::Arc;

use makai_agent::{
    Agent, AgentLoopConfig, BudgetedClient, InProcessClient, Ledger, ProtocolClient, ToolSet,
};
use makai_ai::ThinkingLevel;
use makai_coding::agent_spec::DEFAULT_AGENT;
use makai_coding::session::SharedSession;
use makai_coding::tools::codemode::CODEMODE_TOOL_NAME;
use makai_coding::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use makai_coding::trust::TrustSource;
use makai_coding::{AgentCatalog, Session, SessionStore, Settings};

use super::instructions::FlagText;
use super::{AppParts, AppSession, InstructionSources, ResourceOptions};
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
    let spec = catalog
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
        None => Some(super::open_session::choose_store(
            args,
            &settings,
            home.as_deref(),
        )?),
    };
    let session = match (options.session, &store) {
        (Some(session), _) => session,
        (None, Some(store)) => super::open_session::open_session(args, store.as_ref(), &cwd_str)?,
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
    // The instructions' sources: the system prompts are composed once the
    // tools, which add sections of their own, are known.
    let mut instruction_sources = InstructionSources {
        spec: spec.clone(),
        system_prompt_flag: None,
        appended: Vec::new(),
        tool_sections: Vec::new(),
        mcp_section: None,
        cwd: cwd.clone(),
        home: home.clone(),
        context_files: !args.no_context_files,
        // SYSTEM.md and APPEND_SYSTEM.md shape the default agent's prompt;
        // an agent chosen by name keeps its own.
        system_files: args.agent.is_none() && settings.default_agent.is_none(),
        trusted: trust.trusted,
        files: Default::default(),
    };
    let files = instruction_sources.context_files();
    instruction_sources.files.replace(files.clone());
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
    let mcp_on = !(tools_off || args.no_mcp || !extensions.enabled("mcp"));
    let mcp_config = if !mcp_on {
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
    let (tools, tool_env) = if tools_off {
        (Vec::new(), None)
    } else {
        let (tools, env) = super::tool_setup::session_tools(
            super::tool_setup::ToolInputs {
                args,
                settings: &settings,
                cwd: &cwd,
                sandbox: &sandbox,
                approvals: &approvals,
                session: &session,
                spec: &spec,
                extensions: &extensions,
                catalog: &catalog,
                registry: &registry,
                files: &instruction_sources.files,
                keys: &keys,
                mcp_config: mcp_config.as_ref(),
                direct_demoted,
            },
            &mut codemode_reach,
            &mut said,
        )?;
        (tools, Some(env))
    };

    if let Some(sp) = &args.system_prompt {
        instruction_sources.system_prompt_flag =
            Some(FlagText::resolve(sp, &cwd, "--system-prompt")?);
    }
    for extra in &args.append_system_prompt {
        instruction_sources.appended.push(FlagText::resolve(
            extra,
            &cwd,
            "--append-system-prompt",
        )?);
    }
    let resource_options = ResourceOptions {
        skills: !args.no_skills,
        templates: !args.no_prompt_templates,
        skills_in_prompt: !tools_off,
        skill_paths: absolute(&cwd, &args.skill),
        template_paths: absolute(&cwd, &args.prompt_template),
        skill_entries: setting_list(&settings, "skills"),
        template_entries: setting_list(&settings, "prompts"),
        project: trust.trusted,
    };
    let resources = resource_options.discover(&cwd);
    if args.verbose {
        for w in &resources.warnings {
            super::warnings::say(&mut said, format!("resources: {w}"));
        }
    }
    let codemode_on =
        tools.iter().any(|t| t.name() == CODEMODE_TOOL_NAME) || codemode_reach.standby.is_some();
    let search_on = tools.iter().any(|t| t.name() == TOOL_SEARCH_TOOL_NAME)
        || codemode_reach.search_standby.is_some();
    if codemode_on {
        instruction_sources
            .tool_sections
            .push(makai_coding::tools::codemode::PROMPT_GUIDELINE.to_string());
    }
    let reach = super::mcp::IndirectReach {
        codemode: codemode_on,
        tool_search: search_on,
        direct_demoted,
    };
    if let Some(section) = mcp_config
        .as_ref()
        .and_then(|c| super::mcp::indirect_servers_section(c, reach))
    {
        instruction_sources.mcp_section = Some(section);
    }
    let composed = instruction_sources.compose_with(files);
    for w in &composed.warnings {
        super::warnings::say(&mut said, w.clone());
    }
    let system_prompts = composed.prompts;
    // Whether the first model's runs get tools: its start-up system prompt,
    // and for the local model the turn limit and the first-turn tool call.
    // (Each run's prompt is decided again by `AppSession::prepare_run`, with
    // the working-directory overview when it gets no tools.)
    let start_with_tools = !start_without_tools && !tools.is_empty();

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
        .session_id(session.lock().id().to_string())
        .cache_retention(cache_retention_from_env())
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
    // Thinking budgets, steering delivery, the stream's reading (`/reload`
    // applies them again).
    let settings_source = super::settings_reload::SettingsSource {
        home: home.clone(),
        steering_flag: args.steering,
        tools: super::tool_setup::ToolsAtStart::of(args, &settings),
        tool_env,
    };
    super::settings_reload::apply_to_config(&mut config, &settings, &settings_source);
    config.limits = limits.execution();
    if model.provider == makai_local::PROVIDER && start_with_tools {
        // A turn limit of the user's own wins.
        if config.limits.max_turns.is_none() {
            config.limits.max_turns = Some(makai_local::MAX_TURNS);
        }
    }
    let agent = Agent::new(config)
        .with_system_prompt(if start_with_tools {
            system_prompts.with_tools.clone()
        } else {
            system_prompts.without_tools.clone()
        })
        .with_tools(ToolSet::new(tools));
    agent.set_steering_mode(settings.steering_mode);
    agent.set_follow_up_mode(settings.follow_up_mode);

    // MCP servers start in the background; their tools join the runs once ready.
    let mcp_start = mcp_on.then(|| super::mcp::McpStart {
        home: home.clone(),
        sandbox: crate::sandboxing::config(&settings, args.sandbox),
        reach,
    });
    let mcp = mcp_config
        .zip(mcp_start.as_ref())
        .map(|(loaded, start)| super::mcp::start_servers(loaded, &cwd, start.sandbox.clone()));
    let app = AppSession::new(AppParts {
        agent,
        session,
        registry,
        keys,
        settings,
        settings_source,
        cwd,
        store,
        system_prompts,
        instruction_sources,
        resources,
        resource_options,
        mcp,
        mcp_start,
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
    let mut excluded = super::tool_setup::excluded_tools(args);
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

/// `paths`, relative ones taken from `cwd`.
fn absolute(cwd: &std::path::Path, paths: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    paths.iter().map(|p| cwd.join(p)).collect()
}

/// The strings of the settings' list `key` (pi's resource arrays; paths
/// already resolved by the settings loader).
pub(super) fn setting_list(settings: &Settings, key: &str) -> Vec<String> {
    makai_coding::settings::strings_of(settings.extra.get(key))
}
