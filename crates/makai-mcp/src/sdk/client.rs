//! One client connection to an MCP server, over a child process's stdio or
//! streamable HTTP.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{
    CallFailure, ProgressUpdate, RemoteTool, call_params, progress_key, remote_tool, to_wire,
};
use crate::config::{McpServerConfig, ServerTransport};
use crate::env::{child_env, command_value, expand_home};
use crate::load::expand_vars;
use makai_sandbox::{Policy, SandboxConfig};

mod http;
mod stderr;

use http::{http_transport, warn_missing};
use stderr::{settle, spawn_stderr_reader, with_tail};

/// The sandbox of a stdio server: the settings' (`base`) with the server's own
/// changes; `None` when neither asks for one. A sandbox the kernel cannot
/// enforce keeps the server from starting, with the reason.
fn confine(
    config: &McpServerConfig,
    base: Option<&SandboxConfig>,
    dir: &Path,
) -> Result<Option<makai_sandbox::Confinement>, String> {
    let effective = match (base, &config.sandbox) {
        (None, None) => return Ok(None),
        (Some(b), None) => b.clone(),
        (b, Some(own)) => own.apply(
            &b.cloned()
                .unwrap_or_else(|| SandboxConfig::new(Policy::default())),
        ),
    };
    let not_started = |e: makai_sandbox::SandboxError| format!("it was not started: {e}");
    let sandbox = makai_sandbox::Sandbox::new(effective).map_err(not_started)?;
    sandbox.confine(dir).map(Some).map_err(not_started)
}

/// What to add to a start-up failure of a confined server: the sandbox may
/// be why (package caches outside the workspace, downloads on first start).
fn sandbox_hint(confinement: Option<&makai_sandbox::Confinement>) -> String {
    match confinement {
        Some(c) if c.is_confined() => format!(
            " (it runs in the {} sandbox; if it needs to write outside the working directory or use the network, give its entry \"sandbox\": {{\"network\": true, \"writableRoots\": [...]}}, see docs/sandbox.md)",
            c.policy()
        ),
        _ => String::new(),
    }
}

/// Receives progress notifications of one call.
pub(crate) type ProgressFn = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

type ProgressRoutes = Arc<Mutex<HashMap<String, ProgressFn>>>;

/// What the client tells servers and how it reacts to their notifications.
#[derive(Clone)]
struct Handler {
    server: Arc<str>,
    list_changed: Arc<Notify>,
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "MCP server's tool list changed");
        self.list_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = lock(&self.progress)
            .get(&progress_key(&params.progress_token))
            .cloned();
        if let Some(f) = route {
            f(ProgressUpdate {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("makai", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live connection. Dropping it closes the connection (and stops a child).
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    /// Cancelled once the connection has ended, for whatever reason.
    closed: CancellationToken,
    /// Cancelling it closes the connection.
    stop: CancellationToken,
    progress: ProgressRoutes,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Cancelled once the child's standard error reached its end (at once for HTTP).
    stderr_done: CancellationToken,
    /// `name version` of the server, when it said.
    pub(crate) server_info: Option<String>,
    /// How to use the server, when it said (its `instructions`).
    pub(crate) instructions: Option<String>,
    /// Whether the server offers resources (its `resources` capability).
    pub(crate) has_resources: bool,
    /// The sandbox of a stdio server (owns its private temporary directory).
    _confinement: Option<makai_sandbox::Confinement>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Connection {
    /// Starts (stdio) or reaches (HTTP) the server and completes the MCP
    /// handshake within the config's start-up timeout. `list_changed` is
    /// notified on each `notifications/tools/list_changed`.
    pub(crate) async fn connect(
        name: &str,
        config: &McpServerConfig,
        workdir: &Path,
        parent_env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
        sandbox: Option<&SandboxConfig>,
        list_changed: Arc<Notify>,
    ) -> Result<Connection, String> {
        let handler = Handler {
            server: Arc::from(name),
            list_changed,
            progress: Arc::default(),
        };
        let progress = handler.progress.clone();
        let stderr_tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let stderr_done = CancellationToken::new();
        let limit = config.start_timeout();
        let mut confinement = None;
        let running = match &config.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (mut child, missing) = child_env(env, parent_env);
                warn_missing(name, &missing);
                for (key, raw) in env {
                    if let Some(value) = command_value(raw).await {
                        let value = value.map_err(|e| format!("env {key}: {e}"))?;
                        child.insert(key.clone(), value);
                    }
                }
                let env = child;
                let expand = |s: &str| expand_home(&expand_vars(s, parent_env).0, parent_env);
                let cwd = cwd
                    .as_deref()
                    .map(|d| PathBuf::from(expand_home(&d.to_string_lossy(), parent_env)));
                let dir = cwd.as_deref().unwrap_or(workdir);
                if !dir.is_dir() {
                    return Err(format!(
                        "its working directory {} does not exist; fix \"cwd\" in its settings",
                        dir.display()
                    ));
                }
                confinement = confine(config, sandbox, dir)?;
                let mut cmd = match &confinement {
                    Some(c) => c.command(expand(command)),
                    None => tokio::process::Command::new(expand(command)),
                };
                cmd.args(args.iter().map(|a| expand(a)))
                    .env_clear()
                    .envs(&env)
                    .current_dir(dir)
                    .kill_on_drop(true);
                if let Some(tmp) = confinement.as_ref().and_then(|c| c.temp_dir()) {
                    cmd.env("TMPDIR", tmp);
                }
                #[allow(unused_mut)]
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                #[cfg(unix)]
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        format!(
                            "cannot start `{}`: {e}; check that the command is installed and on PATH (the server sees PATH={})",
                            config.target(),
                            env.get("PATH").map(String::as_str).unwrap_or("(unset)")
                        )
                    })?;
                match stderr {
                    Some(stderr) => {
                        spawn_stderr_reader(name, stderr, stderr_tail.clone(), stderr_done.clone())
                    }
                    None => stderr_done.cancel(),
                }
                with_limit(limit, handler.serve(transport)).await
            }
            ServerTransport::Http { url, headers } => {
                stderr_done.cancel();
                let mut from_commands = std::collections::BTreeMap::new();
                for (key, raw) in headers {
                    if let Some(value) = command_value(raw).await {
                        let value = value.map_err(|e| format!("header {key}: {e}"))?;
                        from_commands.insert(key.clone(), value);
                    }
                }
                let transport = http_transport(name, url, headers, &from_commands, parent_env)?;
                with_limit(limit, handler.serve(transport)).await
            }
        };
        let running: RunningService<RoleClient, Handler> = match running {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                settle(&stderr_done).await;
                return Err(with_tail(
                    format!(
                        "the MCP handshake failed: {}{}",
                        tidy_error(&e.to_string()),
                        sandbox_hint(confinement.as_ref())
                    ),
                    &stderr_tail,
                ));
            }
            None => {
                settle(&stderr_done).await;
                return Err(with_tail(
                    format!(
                        "it did not finish starting within {}s (raise \"startupTimeout\" in its settings if it is just slow){}",
                        limit.as_secs_f64(),
                        sandbox_hint(confinement.as_ref())
                    ),
                    &stderr_tail,
                ));
            }
        };
        let peer = running.peer().clone();
        let server_info = peer.peer_info().and_then(|info| {
            info.server_info
                .as_ref()
                .map(|i| format!("{} {}", i.name, i.version))
        });
        let instructions = peer
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .filter(|i| !i.trim().is_empty());
        let has_resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let closed = CancellationToken::new();
        let stop = CancellationToken::new();
        {
            let closed = closed.clone();
            let stop = stop.clone();
            let service_ct = running.cancellation_token();
            tokio::spawn(async move {
                let waiting = running.waiting();
                tokio::pin!(waiting);
                tokio::select! {
                    _ = &mut waiting => {}
                    _ = stop.cancelled() => {
                        service_ct.cancel();
                        // Stopping: a service that does not end in 5 s is left to the runtime.
                        let _ = tokio::time::timeout(Duration::from_secs(5), waiting).await;
                    }
                }
                closed.cancel();
            });
        }
        Ok(Connection {
            peer,
            closed,
            stop,
            progress,
            stderr_tail,
            stderr_done,
            server_info,
            instructions,
            has_resources,
            _confinement: confinement,
        })
    }

    /// Resolves once the connection has ended.
    pub(crate) async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// True once the connection has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.is_transport_closed()
    }

    /// Why the connection ended, as far as known (the child's last stderr lines).
    pub(crate) fn close_reason(&self) -> String {
        with_tail("the server closed the connection".into(), &self.stderr_tail)
    }

    /// [`Connection::close_reason`], after giving the child's last error output
    /// a moment to arrive.
    pub(crate) async fn settled_close_reason(&self) -> String {
        settle(&self.stderr_done).await;
        self.close_reason()
    }

    /// Closes the connection and waits (briefly) until it has ended.
    pub(crate) async fn shutdown(&self) {
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(6), self.closed.cancelled()).await;
    }

    /// All tools of the server (every page).
    pub(crate) async fn list_tools(&self, limit: Duration) -> Result<Vec<RemoteTool>, String> {
        match tokio::time::timeout(limit, self.peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools.iter().map(remote_tool).collect()),
            Ok(Err(e)) => Err(format!("tools/list failed: {e}")),
            Err(_) => Err(format!(
                "tools/list got no answer within {}s",
                limit.as_secs_f64()
            )),
        }
    }

    /// One page of the server's resources (`resources/list`), in MCP wire
    /// JSON (`{resources, nextCursor?}`).
    pub(crate) async fn list_resources(
        &self,
        cursor: Option<String>,
        limit: Duration,
    ) -> Result<Value, CallFailure> {
        let params = Some(PaginatedRequestParams::default().with_cursor(cursor));
        self.bounded(limit, self.peer.list_resources(params)).await
    }

    /// One page of the server's resource templates
    /// (`resources/templates/list`), in MCP wire JSON
    /// (`{resourceTemplates, nextCursor?}`).
    pub(crate) async fn list_resource_templates(
        &self,
        cursor: Option<String>,
        limit: Duration,
    ) -> Result<Value, CallFailure> {
        let params = Some(PaginatedRequestParams::default().with_cursor(cursor));
        self.bounded(limit, self.peer.list_resource_templates(params))
            .await
    }

    /// Reads resource `uri` (`resources/read`), in MCP wire JSON
    /// (`{contents}`).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        limit: Duration,
    ) -> Result<Value, CallFailure> {
        self.bounded(
            limit,
            self.peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
    }

    /// A request's answer as wire JSON, within `limit`.
    async fn bounded<T: serde::Serialize>(
        &self,
        limit: Duration,
        request: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<Value, CallFailure> {
        if self.is_closed() {
            return Err(CallFailure::Closed(self.close_reason()));
        }
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(answer)) => Ok(to_wire(&answer)),
            Ok(Err(e)) => Err(self.failure(e)),
            Err(_) => Err(CallFailure::TimedOut(limit)),
        }
    }

    /// Calls tool `name` and returns the result in MCP wire JSON. Cancelling
    /// `cancel` or passing `timeout` sends `notifications/cancelled` to the
    /// server, as does dropping the returned future.
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Value,
        cancel: &CancellationToken,
        timeout: Duration,
        on_progress: Option<ProgressFn>,
    ) -> Result<Value, CallFailure> {
        if self.is_closed() {
            return Err(CallFailure::Closed(self.close_reason()));
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(call_params(name, args)));
        let handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.failure(e))?;
        let key = progress_key(&handle.progress_token);
        let mut guard = InFlight {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            progress: self.progress.clone(),
            key: key.clone(),
        };
        if let Some(f) = on_progress {
            lock(&self.progress).insert(key, f);
        }
        let response = handle.await_response();
        tokio::pin!(response);
        tokio::select! {
            r = &mut response => {
                guard.id = None;
                match r {
                    Ok(ServerResult::CallToolResult(result)) => Ok(to_wire(&result)),
                    // Anything else (an empty result, say) is read as a result without content.
                    Ok(other) => Ok(to_wire(&other)),
                    Err(e) => Err(self.failure(e)),
                }
            }
            _ = cancel.cancelled() => {
                guard.cancel("the user aborted the run").await;
                Err(CallFailure::Cancelled)
            }
            _ = tokio::time::sleep(timeout) => {
                guard.cancel(&format!("timed out after {}s", timeout.as_secs_f64())).await;
                Err(CallFailure::TimedOut(timeout))
            }
        }
    }

    fn failure(&self, e: ServiceError) -> CallFailure {
        match e {
            ServiceError::McpError(data) => CallFailure::Protocol(data.message.to_string()),
            ServiceError::TransportClosed => CallFailure::Closed(self.close_reason()),
            ServiceError::TransportSend(e) => CallFailure::Closed(tidy_error(&e.to_string())),
            ServiceError::Cancelled { .. } => CallFailure::Cancelled,
            other => CallFailure::Protocol(other.to_string()),
        }
    }
}

/// An in-flight request: sends `notifications/cancelled` unless it finished,
/// and unregisters its progress route.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    progress: ProgressRoutes,
    key: String,
}

impl InFlight {
    async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            // A cancellation notice is best effort: the server may be gone already.
            let _ = self
                .peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(id),
                    Some(reason.to_string()),
                ))
                .await;
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.progress).remove(&self.key);
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    // A cancellation notice is best effort: the server may be gone already.
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(
                            Some(id),
                            Some("the call was abandoned".into()),
                        ))
                        .await;
                });
            }
        }
    }
}

async fn with_limit<F: std::future::Future>(limit: Duration, f: F) -> Option<F::Output> {
    tokio::time::timeout(limit, f).await.ok()
}

/// Drops the SDK's internal type names from an error text and adds a hint
/// for authorization failures.
fn tidy_error(text: &str) -> String {
    let mut out = match text.rfind("] error: ") {
        Some(i) => text[i + "] error: ".len()..].to_string(),
        None => text.to_string(),
    };
    if out.starts_with("connection closed") {
        out = format!("the server closed the connection during it (it probably exited); {out}");
    }
    if out.contains("HTTP 401") || out.contains("HTTP 403") {
        out.push_str(" (check the server's \"headers\", for example its Authorization token)");
    }
    out
}
