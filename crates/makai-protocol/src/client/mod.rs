//! [`RemoteProtocolClient`]: the agent's [`ProtocolClient`] over the wire.
//!
//! One connection carries any number of streams. A dropped connection is
//! re-established in the background and every open stream resumes where it
//! was (exactly once, in order); dropping or cancelling a returned stream
//! cancels the request on the server.

mod forward;
mod link;
mod state;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use makai_ai::ProtocolClient;
use makai_ai::{
    AssistantMessageEventStream, Context, MessageAccumulator, Model, StopReason, StreamOptions,
};

use crate::envelope::{Body, Envelope, PROTOCOL_VERSION};
use crate::payload::{ErrorCode, Json, PreconnectRequest, WireLimits, WireOptions};
use crate::transport::Frame;

pub use state::ClientStats;

/// Client settings. `Default` gives sensible values.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// How long to keep trying to reconnect after a drop before failing the open streams.
    pub reconnect_timeout: Duration,
    /// Timeout of one connection attempt (dial and hello).
    pub connect_timeout: Duration,
    /// Interval of `ping`s; a connection silent for three intervals is considered dead. `None` disables both.
    pub keepalive: Option<Duration>,
    /// Largest message accepted from the server.
    pub max_message_bytes: usize,
    /// Name sent in `hello`, for the server's logs.
    pub client_name: String,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            reconnect_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            keepalive: Some(Duration::from_secs(15)),
            max_message_bytes: 64 * 1024 * 1024,
            client_name: format!("makai-protocol/{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// Client failures.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL is not `ws://`, `tcp://` or `unix://`.
    #[error("invalid server URL {0}")]
    InvalidUrl(String),
    /// The token cannot be sent in an HTTP header.
    #[error("the token contains characters that cannot be sent in an HTTP header")]
    InvalidToken,
    /// The server refused the token.
    #[error("the makai server refused the token: {0}")]
    Unauthorized(String),
    /// The server refused the connection for another reason (HTTP status).
    #[error("the makai server refused the connection: {0}")]
    Refused(String),
    /// Connecting failed.
    #[error("cannot connect to the makai server: {0}")]
    Connect(String),
    /// The server broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server answered with an error message.
    #[error("the makai server reported {code:?}: {message}")]
    Server {
        /// The error code.
        code: ErrorCode,
        /// The server's explanation.
        message: String,
    },
    /// The connection was lost (and, for streams, could not be resumed).
    #[error("{0}")]
    ConnectionLost(String),
    /// A command could not be encoded as JSON.
    #[error("{0}")]
    Encode(String),
    /// A subscription ended abnormally (server shutdown, lost stream).
    #[error("the event stream ended: {0}")]
    StreamEnded(String),
    /// The client was closed.
    #[error("the client was closed")]
    Closed,
}

struct Inner {
    shared: Arc<state::Shared>,
    _stop: DropGuard,
}

/// A [`ProtocolClient`] talking to a makai protocol server.
///
/// Cheap to clone (clones share the connection). The connection closes when
/// the last clone and the last stream it returned are dropped.
#[derive(Clone)]
pub struct RemoteProtocolClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteProtocolClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteProtocolClient")
            .field("endpoint", &self.inner.shared.endpoint)
            .finish_non_exhaustive()
    }
}

impl RemoteProtocolClient {
    /// Connects to `url` (`ws://127.0.0.1:7878/`, `tcp://HOST:PORT` or
    /// `unix:///path`) with the server's bearer token.
    pub async fn connect(url: &str, token: &str) -> Result<Self, ClientError> {
        Self::connect_with(url, token, ClientConfig::default()).await
    }

    /// [`RemoteProtocolClient::connect`] with explicit settings.
    pub async fn connect_with(
        url: &str,
        token: &str,
        config: ClientConfig,
    ) -> Result<Self, ClientError> {
        let endpoint = link::Endpoint::parse(url)?;
        let shared = state::shared(endpoint, token.to_string(), config);
        let halves = link::connect_once(&shared).await?;
        link::start(&shared, halves);
        tokio::spawn(link::manage(Arc::clone(&shared)));
        let stop = shared.shutdown.clone().drop_guard();
        Ok(RemoteProtocolClient {
            inner: Arc::new(Inner {
                shared,
                _stop: stop,
            }),
        })
    }

    /// The session id the server gave this client.
    pub fn session(&self) -> Option<String> {
        self.inner.shared.session()
    }

    /// The server's limits, from its `welcome`.
    pub fn server_limits(&self) -> Option<WireLimits> {
        self.inner.shared.limits()
    }

    /// Counters: duplicates dropped, gaps seen, reconnects.
    pub fn stats(&self) -> ClientStats {
        self.inner.shared.stats()
    }

    /// Test hook: drops the socket at once, without a close handshake; the
    /// client reconnects and resumes its streams.
    #[doc(hidden)]
    pub fn kill_connection(&self) {
        self.inner.shared.kill_link();
    }

    async fn wait_connected(&self) -> Result<(), ClientError> {
        let shared = &self.inner.shared;
        let mut rx = shared.conn.subscribe();
        if matches!(*rx.borrow_and_update(), state::Conn::Up(_)) {
            return Ok(());
        }
        shared.demand.notify_one();
        let limit = shared.config.reconnect_timeout + shared.config.connect_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            tokio::select! {
                r = rx.changed() => r.map_err(|_| ClientError::Closed)?,
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(ClientError::ConnectionLost(format!(
                        "no connection to the makai server within {limit:?}"
                    )));
                }
            }
            match &*rx.borrow_and_update() {
                state::Conn::Up(_) => return Ok(()),
                state::Conn::Failed(reason) => {
                    return Err(ClientError::ConnectionLost(reason.clone()));
                }
                state::Conn::Down => {}
            }
        }
    }

    /// Sends one agent-session command (for `makai serve`: an RPC-mode command
    /// object) and returns its response as JSON text (decode it with
    /// [`Json::decode`]).
    pub async fn rpc<C: Serialize + ?Sized>(&self, command: &C) -> Result<Json, ClientError> {
        let shared = &self.inner.shared;
        let id = shared.next_id();
        let command = Json::encode(command)
            .map_err(|e| ClientError::Encode(format!("cannot encode the command: {e}")))?;
        let frame = Envelope::new(id, Body::RpcCommand(command)).to_frame();
        let (reply_tx, reply_rx) = oneshot::channel();
        let mut reply_tx = Some(reply_tx);
        for _ in 0..2 {
            let Some(tx) = reply_tx.take() else { break };
            match shared.start_rpc(id, frame.clone(), tx) {
                Ok(()) => break,
                Err(tx) => {
                    reply_tx = Some(tx);
                    self.wait_connected().await?;
                }
            }
        }
        if reply_tx.is_some() {
            return Err(ClientError::ConnectionLost(
                "the connection dropped before the command could be sent".into(),
            ));
        }
        match reply_rx.await {
            Ok(r) => r,
            Err(_) => {
                shared.drop_rpc(id);
                Err(ClientError::Closed)
            }
        }
    }

    /// Subscribes to the agent session's events (each an `agent_event`'s JSON text).
    /// Dropping the returned stream ends the subscription.
    pub async fn subscribe(&self) -> Result<SessionEvents, ClientError> {
        let shared = &self.inner.shared;
        let id = shared.next_id();
        let frame = Envelope::new(id, Body::Subscribe).to_frame();
        let rx = shared
            .open(id, frame)
            .map_err(ClientError::ConnectionLost)?;
        let (tx, events) = mpsc::channel(256);
        let cancel = CancellationToken::new();
        tokio::spawn(forward::forward_session(
            Arc::clone(&self.inner),
            Arc::clone(shared),
            id,
            rx,
            tx,
            cancel.clone(),
        ));
        Ok(SessionEvents {
            rx: events,
            _guard: cancel.drop_guard(),
        })
    }
}

/// A stream of agent-session events; ends with an `Err` when it ended
/// abnormally (server shutdown, lost connection). Dropping it unsubscribes.
pub struct SessionEvents {
    rx: mpsc::Receiver<Result<Json, ClientError>>,
    _guard: DropGuard,
}

impl Stream for SessionEvents {
    type Item = Result<Json, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// `stream_request` payload by reference (no copy of the context).
#[derive(Serialize)]
struct RequestRef<'a> {
    model: &'a Model,
    context: &'a Context,
    options: WireOptions,
}

fn request_frame(
    id: u64,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Frame, String> {
    let payload = RequestRef {
        model,
        context,
        options: WireOptions::from(options),
    };
    let payload =
        serde_json::to_string(&payload).map_err(|e| format!("cannot encode the request: {e}"))?;
    Ok(Frame::from_string(format!(
        r#"{{"v":{PROTOCOL_VERSION},"stream":{id},"type":"stream_request","payload":{payload}}}"#
    )))
}

#[async_trait]
impl ProtocolClient for RemoteProtocolClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let shared = &self.inner.shared;
        // The server uses its own credentials; `options.api_key` and `headers` stay here.
        let cancel = options.cancel.child_token();
        let (tx, rx) = mpsc::channel(forward::CONSUMER_QUEUE);
        let id = shared.next_id();
        let opened = request_frame(id, model, context, &options).and_then(|f| shared.open(id, f));
        match opened {
            Ok(deliveries) => {
                tokio::spawn(forward::forward_provider(
                    Arc::clone(&self.inner),
                    Arc::clone(shared),
                    id,
                    model.clone(),
                    deliveries,
                    tx,
                    cancel.clone(),
                ));
            }
            Err(message) => {
                let acc = MessageAccumulator::new(model.api.as_str(), &model.provider, &model.id);
                let events = forward::failure_event(&acc, false, StopReason::Error, message);
                // A receiver that stopped waiting needs no answer.
                let _ = tx.try_send(events);
            }
        }
        AssistantMessageEventStream::from_channel(rx, cancel)
    }

    /// Asks the server to open the connection `model`'s next call will take
    /// (`preconnect`), so that call skips the TCP and TLS handshakes with
    /// the provider. Sent if connected, not answered, never retried.
    async fn preconnect(&self, model: &Model, options: &StreamOptions) {
        let request = PreconnectRequest {
            model: model.clone(),
            options: WireOptions::from(options),
        };
        let frame = Envelope::new(0, Body::Preconnect(Box::new(request))).to_frame();
        self.inner.shared.send_once(frame);
    }
}
