//! Dialing the server, the `hello` handshake, the per-connection reader and
//! writer tasks, and the manager that reconnects after a drop.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_util::sync::CancellationToken;

use super::ClientError;
use super::state::Shared;
use crate::envelope::{Body, Envelope};
use crate::payload::{ErrorCode, Hello, Ping, Welcome};
use crate::transport::ndjson::NdjsonTransport;
use crate::transport::ws::ClientWs;
use crate::transport::{Frame, FrameReceiver, FrameSender, Incoming, Transport};

/// Where the server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `ws://host:port/path`
    Ws(String),
    /// `tcp://host:port`
    Tcp(String),
    /// `unix:///path`
    Unix(PathBuf),
}

impl Endpoint {
    pub fn parse(url: &str) -> Result<Endpoint, ClientError> {
        let bad = |why: &str| ClientError::InvalidUrl(format!("'{url}': {why}"));
        if let Some(rest) = url.strip_prefix("ws://") {
            if rest.is_empty() {
                return Err(bad("no host"));
            }
            return Ok(Endpoint::Ws(url.to_string()));
        }
        if url.starts_with("wss://") {
            return Err(bad(
                "TLS is not built in; reach the server through an SSH tunnel or a TLS proxy and use ws://",
            ));
        }
        if let Some(rest) = url.strip_prefix("tcp://") {
            let host = rest.trim_end_matches('/');
            if host.is_empty() {
                return Err(bad("no host:port"));
            }
            return Ok(Endpoint::Tcp(host.to_string()));
        }
        if let Some(path) = url.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(bad("no socket path"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        Err(bad(
            "expected ws://HOST:PORT/, tcp://HOST:PORT or unix:///PATH",
        ))
    }

    fn raw(&self) -> bool {
        !matches!(self, Endpoint::Ws(_))
    }
}

fn ws_error(url: &str, e: tungstenite::Error) -> ClientError {
    match e {
        tungstenite::Error::Http(resp) => {
            let status = resp.status();
            let body = resp
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(|m| m.as_str())
                        .map(String::from)
                })
                .unwrap_or(body);
            if status == 401 {
                ClientError::Unauthorized(message)
            } else {
                ClientError::Refused(format!("{url} answered HTTP {status}: {message}"))
            }
        }
        other => ClientError::Connect(format!("{url}: {other}")),
    }
}

async fn dial(shared: &Shared) -> Result<Box<dyn Transport>, ClientError> {
    let max = shared.config.max_message_bytes;
    match &shared.endpoint {
        Endpoint::Ws(url) => {
            let mut request = url
                .as_str()
                .into_client_request()
                .map_err(|e| ClientError::InvalidUrl(format!("'{url}': {e}")))?;
            let value = format!("Bearer {}", shared.token)
                .parse()
                .map_err(|_| ClientError::InvalidToken)?;
            request.headers_mut().insert("authorization", value);
            let config = tungstenite::protocol::WebSocketConfig::default()
                .max_message_size(Some(max))
                .max_frame_size(Some(max));
            let (socket, _) =
                tokio_tungstenite::connect_async_with_config(request, Some(config), true)
                    .await
                    .map_err(|e| ws_error(url, e))?;
            Ok(Box::new(ClientWs::new(socket, max)))
        }
        Endpoint::Tcp(addr) => {
            let sock = tokio::net::TcpStream::connect(addr.as_str())
                .await
                .map_err(|e| ClientError::Connect(format!("tcp://{addr}: {e}")))?;
            if let Err(e) = sock.set_nodelay(true) {
                // Only latency is at stake: small frames may wait for Nagle.
                tracing::debug!(error = %e, "TCP_NODELAY not set");
            }
            let (r, w) = sock.into_split();
            Ok(Box::new(NdjsonTransport::new(r, w, max)))
        }
        #[cfg(unix)]
        Endpoint::Unix(path) => {
            let sock = tokio::net::UnixStream::connect(path)
                .await
                .map_err(|e| ClientError::Connect(format!("unix://{}: {e}", path.display())))?;
            let (r, w) = sock.into_split();
            Ok(Box::new(NdjsonTransport::new(r, w, max)))
        }
        #[cfg(not(unix))]
        Endpoint::Unix(path) => Err(ClientError::Connect(format!(
            "unix://{}: Unix sockets are not available on this platform",
            path.display()
        ))),
    }
}

type Halves = (Box<dyn FrameSender>, Box<dyn FrameReceiver>, Welcome);

/// Dials and greets the server.
pub(crate) async fn connect_once(shared: &Shared) -> Result<Halves, ClientError> {
    let transport = tokio::time::timeout(shared.config.connect_timeout, dial(shared))
        .await
        .map_err(|_| {
            ClientError::Connect(format!(
                "no connection within {:?}",
                shared.config.connect_timeout
            ))
        })??;
    let (mut sender, mut receiver) = transport.split();
    let hello = Hello {
        token: shared.endpoint.raw().then(|| shared.token.clone()),
        session: shared.session(),
        client: Some(shared.config.client_name.clone()),
    };
    sender
        .send(Envelope::new(0, Body::Hello(hello)).to_frame())
        .await
        .map_err(|e| ClientError::Connect(e.to_string()))?;
    let reply = tokio::time::timeout(shared.config.connect_timeout, receiver.recv())
        .await
        .map_err(|_| ClientError::Connect("the server did not answer the hello".into()))?
        .map_err(|e| ClientError::Connect(e.to_string()))?;
    let Some(Incoming::Frame(frame)) = reply else {
        return Err(ClientError::Connect(
            "the server closed the connection during the hello".into(),
        ));
    };
    let env = Envelope::from_frame(frame.as_bytes())
        .map_err(|e| ClientError::Protocol(format!("bad reply to hello: {e}")))?;
    match env.body {
        Body::Welcome(w) => Ok((sender, receiver, w)),
        Body::Error(e) if e.code == ErrorCode::Unauthorized => {
            Err(ClientError::Unauthorized(e.message))
        }
        Body::Error(e) => Err(ClientError::Server {
            code: e.code,
            message: e.message,
        }),
        other => Err(ClientError::Protocol(format!(
            "expected welcome, got '{}'",
            other.kind().as_str()
        ))),
    }
}

/// Starts the reader and writer tasks of a greeted connection.
pub(crate) fn start(shared: &Arc<Shared>, halves: Halves) {
    let (sender, receiver, welcome) = halves;
    let (tx, rx) = mpsc::unbounded_channel();
    let kill = shared.shutdown.child_token();
    let generation = shared.install(tx, kill.clone(), &welcome);
    tokio::spawn(write_loop(Arc::clone(shared), sender, rx, kill.clone()));
    tokio::spawn(read_loop(Arc::clone(shared), receiver, kill, generation));
}

async fn write_loop(
    shared: Arc<Shared>,
    mut sender: Box<dyn FrameSender>,
    mut rx: mpsc::UnboundedReceiver<Frame>,
    kill: CancellationToken,
) {
    let mut batch = Vec::with_capacity(64);
    let keepalive = shared.config.keepalive;
    let mut nonce = 0u64;
    loop {
        let ping = async {
            match keepalive {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let first = tokio::select! {
            f = rx.recv() => f,
            _ = ping => {
                nonce += 1;
                Some(Envelope::new(0, Body::Ping(Ping { nonce })).to_frame())
            }
            _ = kill.cancelled() => break,
        };
        let Some(first) = first else { break };
        batch.push(first);
        while batch.len() < 256 {
            match rx.try_recv() {
                Ok(f) => batch.push(f),
                Err(_) => break,
            }
        }
        let result = tokio::select! {
            r = sender.send_frames(&batch) => r,
            _ = kill.cancelled() => break,
        };
        batch.clear();
        if result.is_err() {
            kill.cancel();
            break;
        }
    }
    if shared.shutdown.is_cancelled() {
        sender.close("client closed").await;
    }
}

async fn read_loop(
    shared: Arc<Shared>,
    mut receiver: Box<dyn FrameReceiver>,
    kill: CancellationToken,
    generation: u64,
) {
    // Without keepalive a silent connection is never declared dead by the client.
    let idle = shared.config.keepalive.map(|d| d * 3);
    loop {
        let next = async {
            match idle {
                Some(d) => tokio::time::timeout(d, receiver.recv())
                    .await
                    .unwrap_or(Ok(None)),
                None => receiver.recv().await,
            }
        };
        let incoming = tokio::select! {
            r = next => r,
            _ = kill.cancelled() => break,
        };
        match incoming {
            Ok(Some(Incoming::Frame(frame))) => match Envelope::from_frame(frame.as_bytes()) {
                Ok(env) => shared.dispatch(env),
                Err(e) => {
                    tracing::warn!(error = %e, "ignoring a malformed message from the server")
                }
            },
            Ok(Some(other)) => {
                tracing::warn!(?other, "ignoring an unreadable message from the server")
            }
            Ok(None) | Err(_) => break,
        }
    }
    kill.cancel();
    drop(receiver);
    shared.link_down(generation);
}

/// Reconnects whenever the connection is down and something needs it.
pub(crate) async fn manage(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            _ = shared.demand.notified() => {}
            _ = shared.shutdown.cancelled() => return,
        }
        if matches!(*shared.conn.borrow(), super::state::Conn::Up(_)) {
            continue;
        }
        let deadline = Instant::now() + shared.config.reconnect_timeout;
        let mut delay = Duration::from_millis(20);
        loop {
            if shared.shutdown.is_cancelled() {
                return;
            }
            match connect_once(&shared).await {
                Ok(halves) => {
                    start(&shared, halves);
                    shared
                        .reconnects
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    let fatal = matches!(e, ClientError::Unauthorized(_));
                    if fatal || Instant::now() + delay >= deadline {
                        let reason = format!(
                            "lost the connection to the makai server and could not reconnect within {:?}: {e}",
                            shared.config.reconnect_timeout
                        );
                        shared.fail_all(&reason);
                        break;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shared.shutdown.cancelled() => return,
                    }
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}
