//! The protocol server behind `makai serve`.
//!
//! [`serve`] binds a WebSocket listener (and optionally newline-delimited JSON
//! over TCP or a Unix socket), authenticates every connection with the bearer
//! token, runs `stream_request`s on its inner [`ProtocolClient`] and routes
//! agent-session messages to its [`SessionHandler`].

mod conn;
mod guard;
mod listen;
mod produce;
mod state;
mod stream;
mod writer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use makai_ai::{InProcessClient, ProtocolClient};

use crate::session::{ServedSession, SessionHandler};

pub use state::ServerStats;

/// The default WebSocket port of `makai serve`.
pub const DEFAULT_PORT: u16 = 7878;

/// Limits the server enforces. `Default` gives production values.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest accepted frame in bytes. Bigger frames are refused with a
    /// `message_too_large` error and skipped; the connection stays usable (on
    /// WebSocket up to 4× this size, beyond which the socket is closed).
    pub max_message_bytes: usize,
    /// Authenticated connections allowed at once per token.
    pub max_connections_per_token: usize,
    /// Open streams (model calls and subscriptions) per session.
    pub max_streams_per_session: usize,
    /// Unacknowledged messages kept per stream for `resume`; the producer waits beyond it.
    pub replay_capacity: usize,
    /// Messages sent on a stream beyond the client's last `ack`.
    pub send_window: usize,
    /// Control frames (errors, pongs, RPC responses) queued per connection.
    pub control_queue: usize,
    /// RPC commands run at once per connection.
    pub max_concurrent_rpc: usize,
    /// How long a stream waits for its client to reconnect and resume before it is cancelled.
    pub detach_timeout: Duration,
    /// How long a new connection may take to send its `hello`.
    pub hello_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 16 * 1024 * 1024,
            max_connections_per_token: 64,
            max_streams_per_session: 4096,
            replay_capacity: 1024,
            send_window: 256,
            control_queue: 256,
            max_concurrent_rpc: 32,
            detach_timeout: Duration::from_secs(60),
            hello_timeout: Duration::from_secs(10),
        }
    }
}

/// Server configuration.
#[derive(Clone)]
pub struct ServerConfig {
    /// WebSocket listener address (default `127.0.0.1:7878`; port 0 picks a free port).
    pub bind: SocketAddr,
    /// Optional newline-delimited JSON listener on TCP.
    pub tcp_bind: Option<SocketAddr>,
    /// Optional newline-delimited JSON listener on a Unix socket.
    pub unix_socket: Option<PathBuf>,
    /// The bearer token every connection must present.
    pub token: String,
    /// Limits.
    pub limits: Limits,
    /// Runs the model calls ([`InProcessClient`] by default).
    pub client: Arc<dyn ProtocolClient>,
    /// The agent session served over `rpc_command` / `subscribe`, if any
    /// (set with [`ServerConfig::with_session`]).
    pub(crate) session: Option<Arc<dyn ServedSession>>,
    /// Base URLs (besides each provider's built-in endpoint) the server may send
    /// its own provider credentials to. A request for a model whose provider has
    /// a server-side key and whose base URL is neither is refused, so a client
    /// cannot redirect the server's keys to another host.
    pub trusted_base_urls: Vec<String>,
    /// Allow binding to non-loopback addresses (the protocol has no TLS: put
    /// it behind an SSH tunnel or a TLS proxy instead).
    pub allow_non_loopback: bool,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("tcp_bind", &self.tcp_bind)
            .field("unix_socket", &self.unix_socket)
            .field("token", &"<redacted>")
            .field("limits", &self.limits)
            .field("session", &self.session.is_some())
            .field("trusted_base_urls", &self.trusted_base_urls)
            .field("allow_non_loopback", &self.allow_non_loopback)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// WebSocket on `127.0.0.1:7878`, the in-process client, no agent session.
    pub fn new(token: impl Into<String>) -> Self {
        ServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            tcp_bind: None,
            unix_socket: None,
            token: token.into(),
            limits: Limits::default(),
            client: Arc::new(InProcessClient::new()),
            session: None,
            trusted_base_urls: Vec::new(),
            allow_non_loopback: false,
        }
    }

    /// For tests: WebSocket and newline-delimited TCP on free ports of 127.0.0.1.
    pub fn ephemeral(token: impl Into<String>) -> Self {
        let mut c = ServerConfig::new(token);
        c.bind = SocketAddr::from(([127, 0, 0, 1], 0));
        c.tcp_bind = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
        c
    }

    /// Uses `client` for model calls.
    pub fn with_client(mut self, client: Arc<dyn ProtocolClient>) -> Self {
        self.client = client;
        self
    }

    /// Serves `session` over `rpc_command` / `subscribe`.
    pub fn with_session<H: SessionHandler>(mut self, session: Arc<H>) -> Self {
        self.session = Some(session);
        self
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding a listener failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A non-loopback address without `allow_non_loopback`.
    #[error(
        "refusing to listen on {0}: it is not a loopback address and the protocol has no TLS; use 127.0.0.1 with an SSH tunnel, or set allow_non_loopback"
    )]
    NotLoopback(SocketAddr),
    /// The token is too short to be a secret.
    #[error(
        "the server token is shorter than 16 characters; use ServeToken::load_or_create or generate_token"
    )]
    WeakToken,
    /// The Unix socket path is in use by a live server.
    #[error("the Unix socket {0} is in use by a running server; stop it or choose another path")]
    SocketInUse(PathBuf),
}

/// What graceful shutdown did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Model calls still running when the grace period ended (they got a `shutdown` end).
    pub cut_short: usize,
}

/// A running server. Dropping it stops everything at once; call
/// [`ProtocolServer::shutdown`] for a graceful stop.
pub struct ProtocolServer {
    shared: Arc<state::Shared>,
    addr: SocketAddr,
    tcp_addr: Option<SocketAddr>,
    unix_path: Option<PathBuf>,
}

impl std::fmt::Debug for ProtocolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtocolServer")
            .field("addr", &self.addr)
            .field("tcp_addr", &self.tcp_addr)
            .field("unix_path", &self.unix_path)
            .finish_non_exhaustive()
    }
}

/// Starts the server. Must be called inside a Tokio runtime.
pub async fn serve(config: ServerConfig) -> Result<ProtocolServer, ServeError> {
    if config.token.len() < 16 {
        return Err(ServeError::WeakToken);
    }
    for addr in std::iter::once(config.bind).chain(config.tcp_bind) {
        if !addr.ip().is_loopback() && !config.allow_non_loopback {
            return Err(ServeError::NotLoopback(addr));
        }
    }
    let shared = Arc::new(state::Shared::new(&config));
    let addr = listen::start_ws(&shared, config.bind).await?;
    let tcp_addr = match config.tcp_bind {
        Some(a) => Some(listen::start_tcp(&shared, a).await?),
        None => None,
    };
    let unix_path = match &config.unix_socket {
        Some(p) => Some(listen::start_unix(&shared, p).await?),
        None => None,
    };
    tracing::info!(%addr, ?tcp_addr, ?unix_path, "makai protocol server listening");
    Ok(ProtocolServer {
        shared,
        addr,
        tcp_addr,
        unix_path,
    })
}

impl ProtocolServer {
    /// The WebSocket listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT/`, for [`crate::RemoteProtocolClient::connect`].
    pub fn ws_url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    /// `tcp://127.0.0.1:PORT` when the TCP listener is on.
    pub fn tcp_url(&self) -> Option<String> {
        self.tcp_addr.map(|a| format!("tcp://{a}"))
    }

    /// The TCP listener's address, when on.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// `unix:///path` when the Unix listener is on.
    pub fn unix_url(&self) -> Option<String> {
        self.unix_path
            .as_ref()
            .map(|p| format!("unix://{}", p.display()))
    }

    /// Counters and gauges.
    pub fn stats(&self) -> ServerStats {
        self.shared.stats()
    }

    /// Test hook: drops every connection's socket at once, without a close
    /// handshake (streams stay, waiting to be resumed).
    #[doc(hidden)]
    pub fn kill_connections(&self) {
        self.shared.kill_connections();
    }

    /// Graceful shutdown: stops accepting connections and new work, lets
    /// running model calls finish for up to `grace`, then ends the rest (and
    /// every agent-event subscription) with a `stream_end` of reason
    /// `shutdown`, delivers what is pending, closes the connections and calls
    /// the session handler's `shutdown`.
    pub async fn shutdown(self, grace: Duration) -> ShutdownReport {
        let report = self.shared.shutdown(grace).await;
        if let Some(p) = &self.unix_path
            && let Err(e) = std::fs::remove_file(p)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %p.display(), error = %e, "the Unix socket file was not removed");
        }
        report
    }
}

impl Drop for ProtocolServer {
    fn drop(&mut self) {
        self.shared.abort();
    }
}
