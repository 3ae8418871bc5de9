//! [`AppSession`]: what every mode drives (pi's `AgentSession`).
//!
//! It joins a [`makai_agent::Agent`] with a session file: every message is
//! appended to the file as it ends (before any mode sees its `message_end`),
//! model and thinking changes are recorded, automatic compactions become
//! `compaction` entries. On top: model and thinking selection, queue modes,
//! manual compaction, auto-retry and auto-compaction switches, `bash` runs whose
//! output joins the context, session switching, forks, the entry tree, usage and
//! cost statistics and the HTML export.
//!
//! Modes read one ordered stream of [`OutEvent`]s from [`AppSession::subscribe`]:
//! the agent's events plus session-level ones (manual compaction, bash output).

pub mod approvals;
mod bash;
pub mod block_images;
mod budget;
pub mod cache_warming;
mod compact;
mod delivery;
mod events;
pub mod instructions;
mod mcp;
pub mod mcp_reload;
mod model;
pub mod open_session;
mod overview;
mod prompting;
mod queue;
mod resources;
mod sessions;
pub mod settings_reload;
pub mod setup;
pub mod stats;
mod tool_setup;
pub(crate) mod trust;
mod warnings;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use makai_agent::{Agent, ContextConfig};
use makai_ai::catalog::ModelRegistry;
use makai_ai::{ImageContent, RetryPolicy};
use makai_coding::session::SharedSession;
use makai_coding::{Resources, SessionStore, Settings};

use crate::error::CliError;
pub use bash::BashResult;
pub use events::OutEvent;
pub use instructions::{InstructionSources, SystemPrompts};
use makai_auth::KeyResolver;
pub use model::{model_matches, pinned_thinking};
pub use resources::ResourceOptions;
pub use stats::{ContextUsage, SessionStats};

/// Mutable session-level state (not the agent's).
#[derive(Debug, Default)]
pub(crate) struct AppState {
    auto_compaction: bool,
    auto_retry: bool,
    retrying: bool,
    compacting: bool,
    compaction_cancel: Option<makai_agent::CancellationToken>,
    bash_cancel: Option<makai_agent::CancellationToken>,
    pending_bash: Vec<makai_agent::AgentMessage>,
    persist_warned: bool,
    /// A database store failed mid-run and the run was stopped.
    store_failed: bool,
    /// `/scoped-models`: patterns limiting the Ctrl+P cycle (empty: every model).
    scoped_models: Vec<String>,
    /// `--exclude-tools` patterns, applied to the MCP tools of every run.
    excluded_tools: Vec<String>,
    /// `--tools` named the tools: offered whatever the model's entry says.
    tools_named: bool,
    /// The `mcp__` entries of a plain `--tools` list ([`mcp::McpSelection`]).
    mcp_selection: Option<Vec<String>>,
    /// The first prompt waited for the MCP servers with `direct` tools.
    direct_servers_waited: bool,
    /// Warnings not yet taken by a UI (`warnings.rs`).
    warnings: Vec<String>,
    /// A full-screen UI owns the terminal: warnings go to it, not to stderr
    /// (which would write over its screen).
    full_screen: bool,
}

pub(crate) struct Shared {
    agent: Agent,
    session: SharedSession,
    /// The catalog; a llama.cpp router's models change with `/llama`.
    registry: std::sync::RwLock<ModelRegistry>,
    keys: KeyResolver,
    /// The settings in force; replaced by `/reload` (`settings_reload.rs`).
    settings: std::sync::RwLock<Arc<Settings>>,
    /// What reading the settings again needs, and the flags that beat them.
    settings_source: settings_reload::SettingsSource,
    cwd: PathBuf,
    /// Where new sessions go; `None` keeps sessions in memory.
    store: Option<Arc<dyn SessionStore>>,
    /// The system prompts of the next runs; replaced by `/reload`.
    system_prompts: Mutex<SystemPrompts>,
    /// What they are composed of (`/reload` replaces the MCP servers' section).
    instruction_sources: Mutex<InstructionSources>,
    /// Skills and prompt templates (`/skill:name`, `/template`); replaced by `/reload`.
    resources: Mutex<Arc<Resources>>,
    /// Which resources are loaded and whether skills go into the system
    /// prompt; the settings' lists in it change with `/reload`.
    resource_options: Mutex<ResourceOptions>,
    subscribers: Mutex<Vec<delivery::Subscriber>>,
    state: Mutex<AppState>,
    /// The MCP servers whose ready tools join every run (`None`: none
    /// configured, or MCP is off); `/reload` reads them again.
    mcp: std::sync::RwLock<Option<makai_mcp::McpManager>>,
    /// How the MCP servers are started, read again and reached (`None`:
    /// MCP is off for this session).
    mcp_start: Option<mcp::McpStart>,
    /// The agent's own tools (the MCP tools are added to these before each
    /// run); `/reload` adds those newly added to `defaultTools`.
    base_tools: Mutex<makai_agent::ToolSet>,
    /// How `codemode` reaches the MCP tools the model is not offered.
    codemode: mcp::CodemodeReach,
    /// Runs started through [`AppSession::start_prompt`] (a run an abort's
    /// queued messages continue counts once).
    runs_started: std::sync::atomic::AtomicU64,
    /// Runs whose `agent_settled` went out; [`AppSession::wait_settled`]
    /// waits for it to reach `runs_started`.
    settled: tokio::sync::watch::Sender<u64>,
    /// The model the session started with.
    start_model: makai_ai::Model,
    /// The sandbox of user shell commands (RPC `bash`, the TUI's `!`).
    sandbox: makai_coding::tools::SandboxChoice,
    /// Approval rules, pre-approvals and the mode's prompt.
    approvals: Arc<approvals::Approvals>,
    /// Keeps the prompt cache entry of the last request warm.
    warmer: Arc<makai_coding::cache_warming::CacheWarmer>,
    /// The budget of the session tree (every model call goes through it).
    ledger: makai_agent::Ledger,
    /// The limits in force.
    limits: Mutex<makai_coding::Limits>,
    /// See [`AppParts::first_turn_policy`].
    first_turn_policy: bool,
    /// The working-directory overview last added to a run's system prompt.
    overview: Mutex<overview::OverviewCache>,
    /// This process's project trust decision.
    trust: makai_coding::trust::ProjectTrust,
    /// Told of each warning kept for a UI ([`AppSession::warned`]).
    warned: tokio::sync::Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The session every mode drives. Cheap to clone.
#[derive(Clone)]
pub struct AppSession {
    inner: Arc<Shared>,
}

impl std::fmt::Debug for AppSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppSession")
            .field("session", &self.session_id())
            .field("model", &self.model().id)
            .finish_non_exhaustive()
    }
}

/// Everything an [`AppSession`] is made of (see [`setup::build`]).
pub struct AppParts {
    /// The agent, with model, tools, system prompt and hooks set.
    pub agent: Agent,
    /// The session (its messages are loaded into the agent by [`AppSession::new`]).
    pub session: SharedSession,
    /// The model catalog.
    pub registry: ModelRegistry,
    /// Key resolution.
    pub keys: KeyResolver,
    /// Settings.
    pub settings: Settings,
    /// What reading the settings again (`/reload`) needs.
    pub settings_source: settings_reload::SettingsSource,
    /// The working directory.
    pub cwd: PathBuf,
    /// Where new sessions go (`None`: in memory).
    pub store: Option<Arc<dyn SessionStore>>,
    /// The system prompts of the session's runs.
    pub system_prompts: SystemPrompts,
    /// What they are composed of (composed again by `/reload`).
    pub instruction_sources: InstructionSources,
    /// Skills and prompt templates.
    pub resources: Resources,
    /// Which resources are loaded and whether skills go into the system prompt.
    pub resource_options: ResourceOptions,
    /// The MCP servers (started in the background) whose tools join each run.
    pub mcp: Option<makai_mcp::McpManager>,
    /// How the MCP servers are started and reached (`None`: MCP is off).
    pub mcp_start: Option<mcp::McpStart>,
    /// How `codemode` reaches the MCP tools the model is not offered.
    pub codemode: mcp::CodemodeReach,
    /// The sandbox of shell commands.
    pub sandbox: makai_coding::tools::SandboxChoice,
    /// The approvals (already installed as the agent's hooks).
    pub approvals: Arc<approvals::Approvals>,
    /// The cache warmer the agent's hooks hand each request to.
    pub warmer: Arc<makai_coding::cache_warming::CacheWarmer>,
    /// The ledger the agent's client reserves every request against.
    pub ledger: makai_agent::Ledger,
    /// The limits in force.
    pub limits: makai_coding::Limits,
    /// Force the first model call of each run to call the one tool
    /// [`makai_coding::first_turn::first_turn_tool`] picks for its prompt
    /// (the built-in local model with tools).
    pub first_turn_policy: bool,
    /// What building the session had to say (already said on stderr): a
    /// full-screen UI shows them too ([`AppSession::take_warnings`]).
    pub startup_warnings: Vec<String>,
    /// The project trust decision the session was built with.
    pub trust: makai_coding::trust::ProjectTrust,
}

impl AppSession {
    /// Wraps the parts and starts the event pump. Needs a Tokio runtime.
    pub fn new(parts: AppParts) -> Self {
        let state = AppState {
            auto_compaction: parts.settings.compaction.enabled,
            auto_retry: parts.settings.retry.enabled,
            warnings: parts.startup_warnings,
            ..Default::default()
        };
        let base_tools = parts.agent.tools();
        let start_model = parts.agent.model();
        let shared = Arc::new(Shared {
            agent: parts.agent,
            session: parts.session,
            registry: std::sync::RwLock::new(parts.registry),
            keys: parts.keys,
            settings: std::sync::RwLock::new(Arc::new(parts.settings)),
            settings_source: parts.settings_source,
            cwd: parts.cwd,
            store: parts.store,
            system_prompts: Mutex::new(parts.system_prompts),
            instruction_sources: Mutex::new(parts.instruction_sources),
            resources: Mutex::new(Arc::new(parts.resources)),
            resource_options: Mutex::new(parts.resource_options),
            subscribers: Mutex::new(Vec::new()),
            state: Mutex::new(state),
            mcp: std::sync::RwLock::new(parts.mcp),
            mcp_start: parts.mcp_start,
            base_tools: Mutex::new(base_tools),
            codemode: parts.codemode,
            runs_started: std::sync::atomic::AtomicU64::new(0),
            settled: tokio::sync::watch::Sender::new(0),
            start_model,
            first_turn_policy: parts.first_turn_policy,
            sandbox: parts.sandbox,
            approvals: parts.approvals,
            warmer: parts.warmer,
            ledger: parts.ledger,
            limits: Mutex::new(parts.limits),
            overview: Mutex::default(),
            trust: parts.trust,
            warned: tokio::sync::Notify::new(),
        });
        shared.restore_ledger();
        shared.report_refusals();
        let host: std::sync::Weak<dyn makai_coding::cache_warming::WarmingHost> =
            Arc::downgrade(&shared) as _;
        shared.warmer.set_host(host);
        let weak = Arc::downgrade(&shared);
        shared.approvals.set_recorder(move |data| {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            shared.record_entry(|s| s.append_custom(approvals::ENTRY_TYPE, Some(data)));
        });
        let app = AppSession { inner: shared };
        app.install_indirect_refresh();
        app.load_session_messages();
        app.configure_agent();
        events::start_pump(&app.inner);
        app
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner
    }

    /// The agent (for UIs that read its state directly).
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The session (for UIs that read the tree directly).
    pub fn session(&self) -> &SharedSession {
        &self.inner.session
    }

    /// The working directory.
    pub fn cwd(&self) -> &std::path::Path {
        &self.inner.cwd
    }

    /// The project trust decision this session was built with.
    pub fn project_trust(&self) -> &makai_coding::trust::ProjectTrust {
        &self.inner.trust
    }

    /// The settings in force (read again by [`AppSession::reload_settings`]).
    pub fn settings(&self) -> Arc<Settings> {
        self.inner.settings()
    }

    /// The approvals (modes set their prompt here).
    pub fn approvals(&self) -> &Arc<approvals::Approvals> {
        &self.inner.approvals
    }

    /// The sandbox of shell commands (or why none can be enforced).
    pub fn sandbox(&self) -> &makai_coding::tools::SandboxChoice {
        &self.inner.sandbox
    }

    /// Applies the auto-compaction and auto-retry switches to the agent.
    fn configure_agent(&self) {
        let (compaction, retry) = {
            let st = lock(&self.inner.state);
            (st.auto_compaction, st.auto_retry)
        };
        let model = self.model();
        let settings = self.settings();
        let c = &settings.compaction;
        let r = &settings.retry;
        let budget = model
            .context_window
            .saturating_sub(c.reserve_tokens)
            .max(1024);
        self.inner.agent.update_config(|cfg| {
            // pi's compaction: a summary, then the most recent turns within
            // `keepRecentTokens` (nothing kept before the summary). The same
            // settings serve manual compaction when automatic is off.
            cfg.context = Some(ContextConfig {
                automatic: compaction,
                budget_tokens: Some(budget),
                keep_first: 0,
                keep_recent_tokens: Some(c.keep_recent_tokens),
                summary_max_tokens: model.max_tokens.clamp(256, 4096),
                ..ContextConfig::default()
            });
            cfg.options.retry = if retry {
                let (max_retries, base_ms, max_ms) = r.policy();
                RetryPolicy {
                    max_retries,
                    initial_delay: std::time::Duration::from_millis(base_ms),
                    max_delay: std::time::Duration::from_millis(max_ms),
                }
            } else {
                RetryPolicy::none()
            };
        });
    }

    /// Replaces the agent's transcript with the session's context at its leaf.
    pub(crate) fn load_session_messages(&self) {
        let ctx = self.inner.session.lock().context();
        if let Err(e) = self.inner.agent.replace_messages(ctx.messages) {
            // Only refused while a run goes on; callers load between runs.
            tracing::warn!(error = %e, "session messages not loaded into a running agent");
        }
    }

    // ---- state ----

    /// Where the session's keys come from (for reports; never the keys).
    pub(crate) fn keys(&self) -> &KeyResolver {
        &self.inner.keys
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.inner.session.lock().id().to_string()
    }

    /// The session file (`None` in memory or in a database).
    pub fn session_file(&self) -> Option<PathBuf> {
        self.inner.session.lock().path().map(PathBuf::from)
    }

    /// Where the session is stored: its file, or the database and its id
    /// (`None` in memory). What `get_state` reports as `sessionFile`.
    pub fn session_location(&self) -> Option<String> {
        self.inner.session.lock().location()
    }

    /// The session store (`None` when sessions are kept in memory).
    pub fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.inner.store.as_ref()
    }

    /// The session's display name.
    pub fn session_name(&self) -> Option<String> {
        self.inner.session.lock().name().map(str::to_string)
    }

    /// Sets the session's display name.
    pub fn set_session_name(&self, name: &str) -> Result<(), CliError> {
        self.inner
            .session
            .lock()
            .set_name(name)
            .map_err(|e| CliError::failed(e.to_string()))?;
        self.inner.emit(OutEvent::Session(
            makai_rpc::SessionEvent::SessionInfoChanged {
                name: Some(name.to_string()),
            },
        ));
        Ok(())
    }

    /// pi's `get_state` data.
    pub fn state(&self) -> makai_rpc::RpcState {
        makai_rpc::RpcState {
            model: Some(self.model()),
            thinking_level: self.thinking_level(),
            is_streaming: self.is_streaming(),
            is_compacting: self.is_compacting(),
            steering_mode: self.inner.agent.steering_mode(),
            follow_up_mode: self.inner.agent.follow_up_mode(),
            session_file: self.session_location(),
            session_id: self.session_id(),
            session_name: self.session_name(),
            auto_compaction_enabled: self.auto_compaction(),
            message_count: self.inner.agent.message_count(),
            pending_message_count: self.pending_message_count(),
            limits: self.limits(),
            budget: self.budget(),
        }
    }

    /// The transcript.
    pub fn messages(&self) -> Vec<makai_agent::AgentMessage> {
        self.inner.agent.messages()
    }

    /// Runs `read` on the transcript without copying it (the agent's state
    /// is locked meanwhile: `read` must not call the session).
    pub fn with_messages<R>(&self, read: impl FnOnce(&[makai_agent::AgentMessage]) -> R) -> R {
        self.inner.agent.with_messages(read)
    }

    /// Where cache warming stands, in pi's words for `/session` (`Decision
    /// in 4m 30s (...)`, `Inactive (cache lifetime unavailable)`).
    pub fn cache_warming_status(&self) -> String {
        self.inner
            .warmer
            .status()
            .describe(std::time::Instant::now())
    }

    /// Text of the last assistant message (skipping empty aborted ones).
    pub fn last_assistant_text(&self) -> Option<String> {
        self.with_messages(|messages| {
            let last = messages.iter().rev().find_map(|m| {
                let a = m.as_assistant()?;
                (!(a.stop_reason == makai_ai::StopReason::Aborted && a.content.is_empty()))
                    .then_some(a)
            })?;
            let text = last.text();
            let t = text.trim();
            (!t.is_empty()).then(|| t.to_string())
        })
    }

    /// Runs `f` on the session, making sure the first model and thinking entries
    /// precede anything else. Errors are reported once on stderr.
    pub(crate) fn record<T>(
        &self,
        f: impl FnOnce(&mut makai_coding::Session) -> Result<T, makai_coding::session::SessionError>,
    ) {
        self.inner.record(f);
    }
}

impl Shared {
    /// Records a model or thinking change, unless nothing was written yet (the
    /// first write records the values then in force).
    fn record_change<T>(
        &self,
        f: impl FnOnce(&mut makai_coding::Session) -> Result<T, makai_coding::session::SessionError>,
    ) {
        if self.session_started() {
            self.record(f);
        }
    }

    fn session_started(&self) -> bool {
        self.session.lock().entries().iter().any(|e| {
            matches!(
                e,
                makai_coding::session::SessionEntry::Message(_)
                    | makai_coding::session::SessionEntry::ModelChange(_)
            )
        })
    }

    /// Appends the entry `f` writes (returning its id) as [`Shared::record`]
    /// does, and announces it to the clients (`entry_appended`); false when
    /// it failed.
    pub(crate) fn record_entry(
        &self,
        f: impl FnOnce(
            &mut makai_coding::Session,
        ) -> Result<String, makai_coding::session::SessionError>,
    ) -> bool {
        let mut entry = None;
        let recorded = self.record(|s| {
            let id = f(s)?;
            entry = s.get(&id).cloned();
            Ok(())
        });
        if let Some(entry) = entry {
            self.emit(OutEvent::Session(makai_rpc::SessionEvent::EntryAppended {
                entry: Box::new(entry),
            }));
        }
        recorded
    }

    /// Runs `f` on the session (after the first model and thinking entries);
    /// false when it failed (reported once on stderr).
    pub(crate) fn record<T>(
        &self,
        f: impl FnOnce(&mut makai_coding::Session) -> Result<T, makai_coding::session::SessionError>,
    ) -> bool {
        let needs_start = !self.session_started();
        let result = {
            let mut session = self.session.lock();
            let mut started = Ok(());
            if needs_start {
                let model = self.agent.model();
                started = session
                    .append_model_change(model.provider.clone(), model.id.clone())
                    .and_then(|_| session.append_thinking_level(self.agent.thinking_level()))
                    .map(|_| ());
            }
            started.and_then(|_| f(&mut session).map(|_| ()))
        };
        match result {
            Ok(()) => true,
            Err(e @ makai_coding::session::SessionError::Store(_)) => {
                // A database store that fails (gone, or the session's lease
                // lost to another instance) takes no more entries: the run
                // stops rather than going on unrecorded. What was stored
                // stays a consistent session to continue from.
                let mut st = lock(&self.state);
                st.store_failed = true;
                let first = !std::mem::replace(&mut st.persist_warned, true);
                drop(st);
                if first {
                    self.warn(format!(
                        "the run was stopped because the session could not be saved: {e}"
                    ));
                }
                self.agent.abort();
                false
            }
            Err(e) => {
                let first = !std::mem::replace(&mut lock(&self.state).persist_warned, true);
                if first {
                    self.warn(format!("could not write the session file: {e}"));
                }
                false
            }
        }
    }
}

fn user_message(text: String, images: Vec<ImageContent>) -> makai_agent::AgentMessage {
    let mut content = vec![makai_ai::UserContent::text(text)];
    content.extend(images.into_iter().map(makai_ai::UserContent::Image));
    makai_ai::UserMessage {
        content,
        timestamp: makai_ai::now_ms(),
    }
    .into()
}
