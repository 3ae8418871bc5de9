//! Listeners: WebSocket (axum), newline-delimited JSON on TCP and on a Unix socket.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;

use super::ServeError;
use super::conn::serve_connection;
use super::state::Shared;
use crate::payload::ErrorCode;
use crate::transport::ndjson::NdjsonTransport;
use crate::transport::ws::ServerWs;

fn json_error(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": message}});
    let mut resp = (status, axum::Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    resp
}

async fn ws_handler(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Authenticate before anything else, from the header when there is one.
    let permit = match headers.get(header::AUTHORIZATION) {
        None => None,
        Some(value) => {
            let token = value
                .to_str()
                .ok()
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .map(str::trim);
            match shared.authenticate(token) {
                Ok(p) => Some(p),
                Err((code, msg)) => {
                    let status = if code == ErrorCode::Unauthorized {
                        StatusCode::UNAUTHORIZED
                    } else {
                        StatusCode::TOO_MANY_REQUESTS
                    };
                    return json_error(status, code, &msg);
                }
            }
        }
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(rejection) => {
            let msg = format!(
                "this endpoint speaks the makai protocol over WebSocket only ({rejection}); connect with a WebSocket client"
            );
            return json_error(StatusCode::BAD_REQUEST, ErrorCode::UnexpectedType, &msg);
        }
    };
    let max = shared.limits.max_message_bytes;
    // Frames up to 4x the limit are read and refused politely; beyond that the socket closes.
    let hard = max.saturating_mul(4).max(64 * 1024);
    let tracker = shared.tracker.clone();
    upgrade
        .max_message_size(hard)
        .max_frame_size(hard)
        // tungstenite's default (128 KiB, allocated per connection) is most of
        // an idle attached session's memory; a larger message grows it.
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| {
            tracker.track_future(serve_connection(
                shared,
                Box::new(ServerWs::new(socket, max)),
                permit,
            ))
        })
}

/// The read buffer of a WebSocket connection: one client message fits in most
/// cases; the buffer grows for a larger one.
const READ_BUFFER: usize = 8 * 1024;

fn bind_err(addr: impl ToString) -> impl FnOnce(std::io::Error) -> ServeError {
    move |source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    }
}

/// Starts the WebSocket listener; returns the bound address.
pub(crate) async fn start_ws(
    shared: &Arc<Shared>,
    addr: SocketAddr,
) -> Result<SocketAddr, ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(bind_err(addr))?;
    let bound = listener.local_addr().map_err(bind_err(addr))?;
    let app = Router::new()
        .route("/", get(ws_handler))
        .with_state(Arc::clone(shared));
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            // Only latency is at stake: small frames may wait for Nagle.
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
    });
    let stop = shared.stop_accept.clone();
    shared.tracker.spawn(async move {
        let serve = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
        if let Err(e) = serve.await {
            tracing::warn!(error = %e, "WebSocket listener stopped");
        }
    });
    Ok(bound)
}

/// Starts the newline-delimited JSON listener on TCP.
pub(crate) async fn start_tcp(
    shared: &Arc<Shared>,
    addr: SocketAddr,
) -> Result<SocketAddr, ServeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(bind_err(addr))?;
    let bound = listener.local_addr().map_err(bind_err(addr))?;
    let shared2 = Arc::clone(shared);
    shared.tracker.spawn(async move {
        let shared = shared2;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shared.stop_accept.cancelled() => break,
            };
            match accepted {
                Ok((sock, _)) => {
                    if let Err(e) = sock.set_nodelay(true) {
                        // Only latency is at stake: small frames may wait for Nagle.
                        tracing::debug!(error = %e, "TCP_NODELAY not set");
                    }
                    let (r, w) = sock.into_split();
                    let t = NdjsonTransport::new(r, w, shared.limits.max_message_bytes);
                    shared
                        .tracker
                        .spawn(serve_connection(Arc::clone(&shared), Box::new(t), None));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "TCP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok(bound)
}

/// Starts the newline-delimited JSON listener on a Unix socket.
#[cfg(unix)]
pub(crate) async fn start_unix(shared: &Arc<Shared>, path: &Path) -> Result<PathBuf, ServeError> {
    if path.exists() {
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            return Err(ServeError::SocketInUse(path.to_path_buf()));
        }
        // A stale socket from a server that died. If it cannot be removed,
        // the bind below fails and says so.
        let _ = std::fs::remove_file(path);
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(bind_err(path.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        // Only the owner may connect; a socket others could reach is refused.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(bind_err(path.display()))?;
    }
    let shared2 = Arc::clone(shared);
    shared.tracker.spawn(async move {
        let shared = shared2;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shared.stop_accept.cancelled() => break,
            };
            match accepted {
                Ok((sock, _)) => {
                    let (r, w) = sock.into_split();
                    let t = NdjsonTransport::new(r, w, shared.limits.max_message_bytes);
                    shared
                        .tracker
                        .spawn(serve_connection(Arc::clone(&shared), Box::new(t), None));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Unix socket accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok(path.to_path_buf())
}

/// Unix sockets are not available on this platform.
#[cfg(not(unix))]
pub(crate) async fn start_unix(_shared: &Arc<Shared>, path: &Path) -> Result<PathBuf, ServeError> {
    Err(ServeError::Bind {
        addr: path.display().to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "Unix sockets are not available on this platform",
        ),
    })
}
