//! [`McpManager`]: all configured servers, started in the background.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use makai_agent::Tool;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::exposure::Exposure;
use crate::load::{LoadedMcpConfig, McpConfigError, load_mcp_config};
use crate::resources::{ResourceTool, resource_exposure, resource_tools};
use crate::servers::ServerList;
use crate::status::{McpEvent, ServerState, ServerStatus};
use crate::supervisor::{McpOptions, ServerShared, supervise};

/// How many events a slow subscriber may fall behind before it misses some.
const EVENT_CAPACITY: usize = 256;

/// What a server is for: pi's `describeNamespace()` of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerDescription {
    /// Its name.
    pub name: String,
    /// Its configured `description`.
    pub description: Option<String>,
    /// The `instructions` it gave when it connected.
    pub instructions: Option<String>,
}

/// What [`McpManager::reload`] changed (server names, in configuration
/// order; a server gone is in `removed`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpReload {
    /// Servers newly configured (started when enabled).
    pub added: Vec<String>,
    /// Servers whose configuration changed (started again with it).
    pub changed: Vec<String>,
    /// Servers no longer configured (stopped).
    pub removed: Vec<String>,
}

impl McpReload {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// The MCP servers of a session.
///
/// [`McpManager::start`] returns at once: each enabled server starts on its
/// own task, so a slow or broken server never delays the user. [`tools`]
/// returns the tools of the servers that are ready *now*; call it when
/// building each run's tool set. State changes are logged (`tracing`) and
/// sent to [`subscribe`]rs.
///
/// Dropping the manager (every clone) stops all servers.
///
/// [`tools`]: McpManager::tools
/// [`subscribe`]: McpManager::subscribe
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Arc<ServerList>,
    events: broadcast::Sender<McpEvent>,
    stop: CancellationToken,
    options: Arc<McpOptions>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// `list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`.
    resource_tools: Vec<Arc<ResourceTool>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.status()).finish()
    }
}

impl McpManager {
    /// Starts every enabled server in the background and returns at once.
    /// Call it inside a Tokio runtime (outside one, every server is marked failed).
    pub fn start(
        servers: impl IntoIterator<Item = (String, McpServerConfig)>,
        options: McpOptions,
    ) -> Self {
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let stop = CancellationToken::new();
        let shared: Vec<Arc<ServerShared>> = servers
            .into_iter()
            .map(|(name, config)| {
                ServerShared::new(name, config, events.clone(), stop.child_token())
            })
            .collect();
        let options = Arc::new(options);
        let servers = Arc::new(ServerList::new(shared.clone()));
        let manager = McpManager {
            inner: Arc::new(Inner {
                resource_tools: resource_tools(&servers),
                servers,
                events,
                stop,
                options,
                tasks: Mutex::new(Vec::new()),
            }),
        };
        for s in shared {
            if s.config.enabled {
                manager.spawn(s);
            }
        }
        manager
    }

    /// Puts `servers` in place of the servers configured (pi's `/reload`
    /// after the configuration changed): a server whose configuration is
    /// unchanged keeps running as it is; one added starts, one whose
    /// configuration changed starts again with the new one, one gone
    /// stops. Returns what changed.
    pub fn reload(
        &self,
        servers: impl IntoIterator<Item = (String, McpServerConfig)>,
    ) -> McpReload {
        let old = self.inner.servers.snapshot();
        let mut out = McpReload::default();
        let mut next: Vec<Arc<ServerShared>> = Vec::new();
        let mut to_start = Vec::new();
        for (name, config) in servers {
            let before = old.iter().find(|s| s.name == name);
            if let Some(s) = before.filter(|s| s.config == config) {
                next.push(s.clone());
                continue;
            }
            match before {
                Some(_) => out.changed.push(name.clone()),
                None => out.added.push(name.clone()),
            }
            let s = ServerShared::new(
                name,
                config,
                self.inner.events.clone(),
                self.inner.stop.child_token(),
            );
            if s.config.enabled {
                to_start.push(s.clone());
            }
            next.push(s);
        }
        for s in &old {
            if !next.iter().any(|n| Arc::ptr_eq(n, s)) {
                s.stop.cancel();
                if !out.changed.contains(&s.name) {
                    out.removed.push(s.name.clone());
                }
            }
        }
        self.inner.servers.replace(next);
        for s in to_start {
            self.spawn(s);
        }
        out
    }

    /// Loads the servers from the settings files (see [`load_mcp_config`])
    /// and starts them. The loaded config comes back too, for its warnings.
    pub fn from_settings(
        cwd: &Path,
        home: Option<&Path>,
        options: McpOptions,
    ) -> Result<(Self, LoadedMcpConfig), McpConfigError> {
        let loaded = load_mcp_config(cwd, home)?;
        let manager = McpManager::start(
            loaded
                .servers
                .iter()
                .map(|e| (e.name.clone(), e.config.clone())),
            options,
        );
        Ok((manager, loaded))
    }

    fn spawn(&self, server: Arc<ServerShared>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            server.set_state(ServerState::Failed {
                reason: "makai started its MCP servers outside an async runtime (a bug in the caller); they cannot run".into(),
            });
            return;
        };
        server.set_state(ServerState::Starting);
        let task = runtime.spawn(supervise(server, self.inner.options.clone()));
        let mut tasks = self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// The reachable tools of every server that is ready now (`hidden`
    /// ones left out), as agent tools named `mcp__<server>__<tool>`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools_with_exposure()
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    /// [`McpManager::tools`] with how the model reaches each
    /// ([`crate::exposure`]). While a ready server offers resources, the
    /// resource tools ([`crate::resources`]) come last, with the widest
    /// exposure of such servers.
    pub fn tools_with_exposure(&self) -> Vec<(Arc<dyn Tool>, Exposure)> {
        let servers = self.inner.servers.snapshot();
        let mut tools: Vec<(Arc<dyn Tool>, Exposure)> = servers
            .iter()
            .filter(|s| s.state().is_ready())
            .flat_map(|s| s.tools())
            .filter(|t| t.exposure() != Exposure::Hidden)
            .map(|t| {
                let e = t.exposure();
                (t as Arc<dyn Tool>, e)
            })
            .collect();
        if let Some(e) = resource_exposure(&servers) {
            tools.extend(
                self.inner
                    .resource_tools
                    .iter()
                    .map(|t| (t.clone() as Arc<dyn Tool>, e)),
            );
        }
        tools
    }

    /// Every configured server's name, `description` and `instructions`
    /// (once connected), in configuration order.
    pub fn descriptions(&self) -> Vec<ServerDescription> {
        self.inner
            .servers
            .snapshot()
            .iter()
            .map(|s| ServerDescription {
                name: s.name.clone(),
                description: s.config.description.clone(),
                instructions: s.instructions(),
            })
            .collect()
    }

    /// A snapshot of every configured server, in configuration order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.inner
            .servers
            .snapshot()
            .iter()
            .map(|s| s.status())
            .collect()
    }

    /// The state of server `name`, if configured.
    pub fn state(&self, name: &str) -> Option<ServerState> {
        self.server(name).map(|s| s.state())
    }

    /// Receives every later state and tool-list change.
    pub fn subscribe(&self) -> broadcast::Receiver<McpEvent> {
        self.inner.events.subscribe()
    }

    fn server(&self, name: &str) -> Option<Arc<ServerShared>> {
        self.inner.servers.find(name)
    }

    /// Waits until no server is starting or restarting any more (each is
    /// ready, failed, disabled or stopped), or `timeout` passes. Returns true
    /// when all settled in time.
    pub async fn wait_settled(&self, timeout: Duration) -> bool {
        self.wait_settled_where(timeout, |_| true).await
    }

    /// [`McpManager::wait_settled`] for the servers whose configuration
    /// `which` picks (pi's first prompt waits for those with `direct` tools).
    pub async fn wait_settled_where(
        &self,
        timeout: Duration,
        which: impl Fn(&McpServerConfig) -> bool,
    ) -> bool {
        let all = async {
            let servers = self.inner.servers.snapshot();
            for s in servers.iter().filter(|s| which(&s.config)) {
                let mut rx = s.watch_state();
                // Fails only when the server is gone: then it is settled too.
                let _ = rx.wait_for(|st| !st.is_pending()).await;
            }
        };
        tokio::time::timeout(timeout, all).await.is_ok()
    }

    /// Waits until server `name` is ready. `Err` holds its state when it
    /// settled otherwise (failed, disabled, ...) or when `timeout` passed.
    pub async fn wait_ready(&self, name: &str, timeout: Duration) -> Result<(), ServerState> {
        let Some(s) = self.server(name) else {
            return Err(ServerState::Failed {
                reason: format!("no MCP server named '{name}' is configured"),
            });
        };
        let mut rx = s.watch_state();
        let wait = rx.wait_for(|st| !st.is_pending());
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(st)) if st.is_ready() => Ok(()),
            Ok(Ok(st)) => Err(st.clone()),
            Ok(Err(_)) | Err(_) => Err(s.state()),
        }
    }

    /// Starts a failed or stopped server again. Returns false when there is
    /// no such server, it is disabled, or it is already starting or running.
    pub fn retry(&self, name: &str) -> bool {
        let Some(s) = self.server(name) else {
            return false;
        };
        match s.state() {
            ServerState::Failed { .. } | ServerState::Stopped if !s.stop.is_cancelled() => {
                self.spawn(s);
                true
            }
            _ => false,
        }
    }

    /// Stops every server and waits (a few seconds at most) for them to exit.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let tasks: Vec<_> = {
            let mut t = self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner());
            t.drain(..).collect()
        };
        for t in tasks {
            match tokio::time::timeout(Duration::from_secs(8), t).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "an MCP server task failed while stopping")
                }
                Err(_) => tracing::warn!("an MCP server task did not stop within 8 s; left behind"),
            }
        }
    }
}
