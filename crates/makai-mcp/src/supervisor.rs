//! One server's life: start in the background, follow its tool list, restart
//! it with backoff when it dies, report every change (event + log).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::naming::assign_names;
use crate::sdk::RemoteTool;
use crate::sdk::client::Connection;
use crate::status::{McpEvent, ServerState, ServerStatus};
use crate::tool::McpTool;

/// Looks a variable up in makai's environment (replaceable for tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How servers are run and restarted.
#[derive(Clone)]
pub struct McpOptions {
    /// Working directory of stdio servers without their own `cwd`.
    pub workdir: PathBuf,
    /// Wait before the first restart; doubled for each further one.
    pub restart_backoff: Duration,
    /// Longest wait between restarts.
    pub max_backoff: Duration,
    /// Restarts in a row after which a server is given up (marked failed).
    pub max_restarts: u32,
    /// A server that stayed ready this long has its restart count reset.
    pub stable_after: Duration,
    /// Where `${VAR}` references and the safe environment set are read from.
    pub parent_env: EnvLookup,
    /// The sandbox stdio servers run in (a server's `sandbox` entry changes
    /// it for that server); `None`: no sandbox unless a server asks for one.
    pub sandbox: Option<makai_sandbox::SandboxConfig>,
}

impl std::fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOptions")
            .field("workdir", &self.workdir)
            .field("restart_backoff", &self.restart_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_restarts", &self.max_restarts)
            .field("stable_after", &self.stable_after)
            .finish_non_exhaustive()
    }
}

impl McpOptions {
    /// Defaults: restarts after 0.5 s, 1 s, 2 s, ... up to 30 s, at most 5 in a
    /// row; the environment is makai's own.
    pub fn new(workdir: impl Into<PathBuf>) -> Self {
        McpOptions {
            workdir: workdir.into(),
            restart_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_restarts: 5,
            stable_after: Duration::from_secs(60),
            parent_env: Arc::new(crate::env::process_env),
            sandbox: None,
        }
    }

    /// The wait before restart number `n` (1-based).
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
        self.restart_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// State shared between a server's supervisor task, its tools and the manager.
pub(crate) struct ServerShared {
    pub(crate) name: String,
    pub(crate) config: McpServerConfig,
    state: watch::Sender<ServerState>,
    conn: Mutex<Option<Arc<Connection>>>,
    tools: Mutex<Vec<Arc<McpTool>>>,
    server_info: Mutex<Option<String>>,
    instructions: Mutex<Option<String>>,
    events: broadcast::Sender<McpEvent>,
    list_changed: Arc<Notify>,
    pub(crate) stop: CancellationToken,
    myself: Weak<ServerShared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ServerShared {
    pub(crate) fn new(
        name: String,
        config: McpServerConfig,
        events: broadcast::Sender<McpEvent>,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let initial = if config.enabled {
            ServerState::Starting
        } else {
            ServerState::Disabled
        };
        Arc::new_cyclic(|me| ServerShared {
            name,
            config,
            state: watch::Sender::new(initial),
            conn: Mutex::new(None),
            tools: Mutex::new(Vec::new()),
            server_info: Mutex::new(None),
            instructions: Mutex::new(None),
            events,
            list_changed: Arc::new(Notify::new()),
            stop,
            myself: me.clone(),
        })
    }

    pub(crate) fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    pub(crate) fn watch_state(&self) -> watch::Receiver<ServerState> {
        self.state.subscribe()
    }

    /// The server's `instructions`, once connected (if it gave any).
    pub(crate) fn instructions(&self) -> Option<String> {
        lock(&self.instructions).clone()
    }

    pub(crate) fn tools(&self) -> Vec<Arc<McpTool>> {
        lock(&self.tools).clone()
    }

    pub(crate) fn status(&self) -> ServerStatus {
        ServerStatus {
            name: self.name.clone(),
            state: self.state(),
            target: self.config.target(),
            tools: self
                .tools()
                .iter()
                .map(|t| makai_agent::Tool::name(&**t).to_string())
                .collect(),
            server_info: lock(&self.server_info).clone(),
        }
    }

    /// The live connection, or the state explaining why there is none.
    pub(crate) fn connection(&self) -> Result<Arc<Connection>, ServerState> {
        match (&*lock(&self.conn), self.state()) {
            (Some(c), ServerState::Ready) if !c.is_closed() => Ok(c.clone()),
            (Some(c), ServerState::Ready) => Err(ServerState::Restarting {
                attempt: 1,
                reason: c.close_reason(),
            }),
            (_, state) => Err(state),
        }
    }

    pub(crate) fn set_state(&self, state: ServerState) {
        if *self.state.borrow() == state {
            return;
        }
        match &state {
            ServerState::Failed { reason } => {
                tracing::warn!(server = %self.name, "MCP server failed: {reason}")
            }
            ServerState::Restarting { attempt, reason } => {
                tracing::warn!(server = %self.name, attempt, "MCP server stopped ({reason}); restarting")
            }
            other => tracing::info!(server = %self.name, state = other.label(), "MCP server state"),
        }
        self.state.send_replace(state.clone());
        // A broadcast with no receiver left: nobody is listening for changes.
        let _ = self.events.send(McpEvent::StateChanged {
            server: self.name.clone(),
            state,
        });
    }

    fn set_tools(&self, remote: Vec<RemoteTool>) {
        let names = assign_names(&self.name, remote.iter().map(|t| t.name.as_str()));
        let timeout = self.config.call_timeout();
        let tools: Vec<Arc<McpTool>> = remote
            .into_iter()
            .zip(names.iter().cloned())
            .map(|(r, n)| {
                let exposure = self.config.exposure_of(&r.name);
                Arc::new(McpTool::new(
                    n,
                    &self.name,
                    r,
                    timeout,
                    self.myself.clone(),
                    exposure,
                ))
            })
            .collect();
        *lock(&self.tools) = tools;
        tracing::debug!(server = %self.name, tools = ?names, "MCP server tools");
        // A broadcast with no receiver left: nobody is listening for changes.
        let _ = self.events.send(McpEvent::ToolsChanged {
            server: self.name.clone(),
            tools: names,
        });
    }

    fn install(&self, conn: Arc<Connection>, tools: Vec<RemoteTool>) {
        *lock(&self.server_info) = conn.server_info.clone();
        *lock(&self.instructions) = conn.instructions.clone();
        *lock(&self.conn) = Some(conn);
        self.set_tools(tools);
        self.set_state(ServerState::Ready);
    }

    fn uninstall(&self) -> Option<Arc<Connection>> {
        let conn = lock(&self.conn).take();
        let had_tools = !lock(&self.tools).is_empty();
        lock(&self.tools).clear();
        if had_tools {
            // A broadcast with no receiver left: nobody is listening for changes.
            let _ = self.events.send(McpEvent::ToolsChanged {
                server: self.name.clone(),
                tools: Vec::new(),
            });
        }
        conn
    }
}

/// Runs one server until it is stopped or given up.
pub(crate) async fn supervise(shared: Arc<ServerShared>, opts: Arc<McpOptions>) {
    let stop = shared.stop.clone();
    let mut restarts: u32 = 0;
    let mut ever_ready = false;
    let limit = shared.config.start_timeout();
    loop {
        let attempt = async {
            let conn = Connection::connect(
                &shared.name,
                &shared.config,
                &opts.workdir,
                &*opts.parent_env,
                opts.sandbox.as_ref(),
                shared.list_changed.clone(),
            )
            .await?;
            let tools = conn.list_tools(limit).await?;
            Ok::<_, String>((conn, tools))
        };
        let result = tokio::select! {
            r = attempt => r,
            _ = stop.cancelled() => break,
        };
        let reason = match result {
            Ok((conn, tools)) => {
                let conn = Arc::new(conn);
                shared.install(conn.clone(), tools);
                ever_ready = true;
                let ready_at = Instant::now();
                let reason = loop {
                    tokio::select! {
                        _ = conn.closed() => break conn.settled_close_reason().await,
                        _ = shared.list_changed.notified() => match conn.list_tools(limit).await {
                            Ok(tools) => shared.set_tools(tools),
                            Err(e) => tracing::warn!(server = %shared.name, "cannot refresh the MCP server's tools after list_changed: {e}"),
                        },
                        _ = stop.cancelled() => {
                            shared.uninstall();
                            conn.shutdown().await;
                            shared.set_state(ServerState::Stopped);
                            return;
                        }
                    }
                };
                shared.uninstall();
                if ready_at.elapsed() >= opts.stable_after {
                    restarts = 0;
                }
                reason
            }
            Err(reason) if !ever_ready => {
                shared.set_state(ServerState::Failed { reason });
                return;
            }
            Err(reason) => reason,
        };
        restarts += 1;
        if restarts > opts.max_restarts {
            shared.set_state(ServerState::Failed {
                reason: format!(
                    "{reason}; gave up after {} restarts in a row",
                    opts.max_restarts
                ),
            });
            return;
        }
        shared.set_state(ServerState::Restarting {
            attempt: restarts,
            reason,
        });
        tokio::select! {
            _ = tokio::time::sleep(opts.backoff(restarts)) => {}
            _ = stop.cancelled() => break,
        }
    }
    shared.uninstall();
    shared.set_state(ServerState::Stopped);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let o = McpOptions::new("/");
        assert_eq!(o.backoff(1), Duration::from_millis(500));
        assert_eq!(o.backoff(2), Duration::from_secs(1));
        assert_eq!(o.backoff(4), Duration::from_secs(4));
        assert_eq!(o.backoff(40), Duration::from_secs(30));
    }
}
