//! The provider layer's HTTP client: HTTP/1.1 connections over rustls, each
//! read and written by the request that uses it ([`conn`], [`body`]), in a
//! pool of our own.
//!
//! Why not reqwest (which the rest of the workspace uses for one-off requests),
//! hyper-util's pooled client or hyper's `client::conn`: each hands every read
//! of a streamed response from the connection to the body over a channel,
//! splitting a shared buffer per read, and the first two run each connection
//! as a task of its own, woken per read (on the multi-thread runtime, a
//! wake-up of another worker per token event). Measured, hyper's read path
//! was 40% of the CPU makai spends in user space per streamed token event
//! after the earlier changes (BENCHMARKS.md). Here the request reads its own
//! socket into one buffer, and the body's framing (length, chunked, until
//! close) is decoded in place; what is HTTP in that is parsed by `httparse`,
//! hyper's own parser (response heads, chunk sizes). The pool is small: idle
//! connections by scheme and authority, checked when taken. A connection's
//! read buffer is [`MAX_READ_BUFFER`], which also bounds a response head.
//!
//! HTTP/1.1 only, as Node's `fetch` (pi's client) speaks to the same providers:
//! one connection per concurrent stream. TLS through rustls with the platform's
//! certificate verifier (the OS trust store); proxies from `HTTPS_PROXY` /
//! `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` (and the system settings where the
//! OS has them), reached with an HTTP `CONNECT` tunnel. Loopback hosts never go
//! through a proxy.

mod body;
mod conn;
mod low_water;
mod pacing;
mod tcp;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;

pub(crate) use body::{BodyError, ResponseBody};
use conn::{Conn, Io, Pool};
use low_water::Socket;
use tcp::Tcp;

/// The largest read buffer a connection keeps (also the largest response head).
pub(crate) const MAX_READ_BUFFER: usize = 8 * 1024;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A pooled HTTPS/HTTP client for model requests. Plain-HTTP URLs (a local model
/// server) never set up TLS: the certificate store is loaded on the first
/// `https://` request.
#[derive(Clone)]
pub(crate) struct HttpClient {
    connector: ProxyConnector,
    tls: Arc<OnceLock<Result<HttpsConnector<ProxyConnector>, String>>>,
    pool: Arc<Pool>,
}

/// A response whose body is read from its connection by the caller (see
/// [`body`]).
pub(crate) type HttpResponse = http::Response<ResponseBody>;

/// Why a request could not be sent (the server never answered).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// The URL, a header name or a header value is not valid HTTP.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Connecting or the TLS handshake failed.
    #[error("cannot connect")]
    Connect(#[source] BoxError),
    /// Writing the request or reading the response head failed.
    #[error("the request failed")]
    Io(#[source] std::io::Error),
    /// The server closed the connection before a whole response head.
    #[error("the server closed the connection before answering")]
    Closed,
    /// The response head is not valid HTTP/1.1.
    #[error("{0}")]
    Head(String),
    /// The response head does not fit the client's read buffer.
    #[error(
        "the response head is too large: over {} bytes or {} lines",
        MAX_READ_BUFFER,
        128
    )]
    HeadTooLarge,
    /// The TLS settings could not be built (no usable certificate store).
    #[error("TLS is unavailable: {0}")]
    Tls(String),
}

impl SendError {
    /// Whether the connection failed under the request: a write or read
    /// error, or the server closing it before a whole head.
    fn is_hang_up(&self) -> bool {
        matches!(self, SendError::Io(_) | SendError::Closed)
    }

    /// Whether sending again cannot help: the request is invalid, TLS cannot be
    /// set up, or the server's response head is larger than the client accepts
    /// (the same server will send the same head again).
    pub(crate) fn is_permanent(&self) -> bool {
        match self {
            SendError::Invalid(_) | SendError::Tls(_) | SendError::HeadTooLarge => true,
            SendError::Connect(_) | SendError::Io(_) | SendError::Closed | SendError::Head(_) => {
                false
            }
        }
    }
}

impl HttpClient {
    /// A client whose connection attempts give up after `connect_timeout`, with
    /// the proxies of the environment and system.
    pub(crate) fn new(connect_timeout: Duration) -> Self {
        Self::with_proxies(connect_timeout, Matcher::from_system())
    }

    /// A client that picks proxies with `matcher`.
    fn with_proxies(connect_timeout: Duration, matcher: Matcher) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect_timeout));
        let connector = ProxyConnector {
            direct: http,
            matcher: Arc::new(matcher),
        };
        HttpClient {
            connector,
            tls: Arc::new(OnceLock::new()),
            pool: Arc::new(Pool::new(POOL_IDLE)),
        }
    }

    /// The HTTPS connector, built on first use.
    fn tls(&self) -> Result<HttpsConnector<ProxyConnector>, SendError> {
        let built = self.tls.get_or_init(|| {
            Ok(hyper_rustls::HttpsConnectorBuilder::new()
                .try_with_platform_verifier()
                .map_err(|e| e.to_string())?
                .https_or_http()
                .enable_http1()
                .wrap_connector(self.connector.clone()))
        });
        built.clone().map_err(SendError::Tls)
    }

    /// A new connection to `uri`'s server.
    async fn connect(&self, uri: &Uri) -> Result<Conn, SendError> {
        tracing::debug!(
            scheme = uri.scheme_str(),
            host = uri.host(),
            port = uri.port_u16(),
            "opening a model connection"
        );
        let (io, socket): (Box<dyn Io>, Socket) = if uri.scheme_str() == Some("http") {
            let tcp = call(self.connector.clone(), uri.clone()).await?;
            let socket = tcp.socket();
            (Box::new(TokioIo::new(tcp)), socket)
        } else {
            let stream = call(self.tls()?, uri.clone()).await?;
            let socket = match &stream {
                MaybeHttpsStream::Http(tcp) => tcp.socket(),
                MaybeHttpsStream::Https(tls) => tls.inner().get_ref().0.inner().socket(),
            };
            (Box::new(TokioIo::new(stream)), socket)
        };
        Ok(Conn::new(io, socket))
    }

    /// Opens a connection to `url`'s server and keeps it in the pool for the
    /// next request there, unless one is idle already. Sends nothing.
    pub(crate) async fn preconnect(&self, url: &str) -> Result<(), SendError> {
        let Destination { uri, key, .. } = Destination::of(url)?;
        if self.pool.has_idle(&key) {
            return Ok(());
        }
        let conn = self.connect(&uri).await?;
        self.pool.checkin(key, conn);
        Ok(())
    }

    /// Sends a POST of `body` to `url` with `headers`.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<HttpResponse, SendError> {
        let Destination {
            uri,
            host_header,
            key,
        } = Destination::of(url)?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let request = encode_request(path, &host_header, headers, &body)?;
        let (conn, head) = match self.pool.checkout(&key) {
            Some(mut pooled) => match exchange(&mut pooled, &request).await {
                Ok(head) => (pooled, head),
                // The server closed the idle connection as the request went
                // out (its keep-alive timeout): it never saw the request, so
                // it is sent again at once on a new connection, as browsers
                // and Go's client do, not after the stream's retry delay.
                // A server that sent any byte of an answer is not asked again.
                Err(e) if e.is_hang_up() && pooled.unread().is_empty() => {
                    tracing::debug!(
                        server = %key,
                        "a pooled model connection was closed as the request went out; sending it on a new one"
                    );
                    let mut fresh = self.connect(&uri).await?;
                    let head = exchange(&mut fresh, &request).await?;
                    (fresh, head)
                }
                Err(e) => return Err(e),
            },
            None => {
                let mut fresh = self.connect(&uri).await?;
                let head = exchange(&mut fresh, &request).await?;
                (fresh, head)
            }
        };
        drop(request);
        let body = ResponseBody::new(conn, head.transfer, head.keep_alive, self.pool.clone(), key);
        let mut response = http::Response::new(body);
        *response.status_mut() = head.status;
        *response.headers_mut() = head.headers;
        Ok(response)
    }
}

/// Where a request goes: its URI, its `host` header and its pool key
/// (`scheme://authority`).
struct Destination {
    uri: Uri,
    host_header: String,
    key: String,
}

impl Destination {
    /// Checks that `url` is an absolute `http://` or `https://` URL.
    fn of(url: &str) -> Result<Self, SendError> {
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| SendError::Invalid(e.to_string()))?;
        let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return Err(SendError::Invalid(format!(
                "{url} is not an absolute http:// or https:// URL"
            )));
        };
        if scheme != "http" && scheme != "https" {
            return Err(SendError::Invalid(format!(
                "{scheme}:// is not supported: use http:// or https://"
            )));
        }
        let host_header = match uri.port_u16() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let key = format!("{scheme}://{host_header}");
        Ok(Destination {
            uri,
            host_header,
            key,
        })
    }
}

/// Writes `request` on `conn` and reads the response head.
async fn exchange(conn: &mut Conn, request: &[u8]) -> Result<conn::Head, SendError> {
    conn.send(request).await.map_err(SendError::Io)?;
    conn.read_head().await
}

/// A POST's bytes: request line, `host`, the caller's headers (checked as
/// HTTP; the framing headers are the client's own), `content-length`, body.
fn encode_request(
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<u8>, SendError> {
    let mut out = Vec::with_capacity(
        64 + path.len()
            + host.len()
            + headers
                .iter()
                .map(|(k, v)| k.len() + v.len() + 4)
                .sum::<usize>()
            + body.len(),
    );
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| SendError::Invalid(format!("{name:?} is not a valid header name")))?;
        // The value is never shown: it may be a key.
        http::HeaderValue::from_str(value).map_err(|_| {
            SendError::Invalid(format!("the value of header {name} is not valid HTTP"))
        })?;
        if [
            http::header::HOST,
            http::header::CONTENT_LENGTH,
            http::header::TRANSFER_ENCODING,
            http::header::CONNECTION,
        ]
        .contains(&name)
        {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// Calls a connector once it is ready.
async fn call<S>(mut connector: S, uri: Uri) -> Result<S::Response, SendError>
where
    S: tower_service::Service<Uri>,
    S::Error: Into<BoxError>,
{
    std::future::poll_fn(|cx| connector.poll_ready(cx))
        .await
        .map_err(|e| SendError::Connect(e.into()))?;
    connector
        .call(uri)
        .await
        .map_err(|e| SendError::Connect(e.into()))
}

/// How many connect timeouts get a process-wide client of their own.
const SHARED_CLIENTS: usize = 8;

/// The process-wide client for `connect_timeout`, so that requests with the
/// same timeout share one pool and load the TLS settings once. A program uses
/// one or two timeouts; past [`SHARED_CLIENTS`] of them, each request gets a
/// client of its own.
pub(crate) fn shared(connect_timeout: Duration) -> HttpClient {
    static CLIENTS: Mutex<Vec<(Duration, HttpClient)>> = Mutex::new(Vec::new());
    let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, client)) = clients.iter().find(|(t, _)| *t == connect_timeout) {
        return client.clone();
    }
    let client = HttpClient::new(connect_timeout);
    if clients.len() < SHARED_CLIENTS {
        clients.push((connect_timeout, client.clone()));
    }
    client
}

/// Connects directly, or through a `CONNECT` tunnel when a proxy applies.
#[derive(Clone)]
struct ProxyConnector {
    direct: HttpConnector,
    matcher: Arc<Matcher>,
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `dst` with its port spelled out (the tunnel would otherwise assume 443).
fn with_explicit_port(dst: &Uri) -> Uri {
    if dst.port().is_some() {
        return dst.clone();
    }
    let port = if dst.scheme_str() == Some("http") {
        80
    } else {
        443
    };
    let (Some(scheme), Some(host)) = (dst.scheme_str(), dst.host()) else {
        return dst.clone();
    };
    format!("{scheme}://{host}:{port}/")
        .parse()
        .unwrap_or_else(|_| dst.clone())
}

impl tower_service::Service<Uri> for ProxyConnector {
    type Response = Tcp;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let intercept = match dst.host() {
            Some(host) if !is_loopback(host) => self.matcher.intercept(&dst),
            _ => None,
        };
        let mut direct = self.direct.clone();
        match intercept {
            None => {
                Box::pin(
                    async move { direct.call(dst).await.map(Tcp::new).map_err(BoxError::from) },
                )
            }
            Some(proxy) => {
                let proxy_uri = proxy.uri().clone();
                if !matches!(proxy_uri.scheme_str(), None | Some("http")) {
                    let scheme = proxy_uri.scheme_str().unwrap_or_default().to_string();
                    return Box::pin(async move {
                        Err(BoxError::from(format!(
                            "proxy {} uses {scheme}://, which makai cannot reach: use an http:// proxy",
                            redact_userinfo(&proxy_uri)
                        )))
                    });
                }
                let mut tunnel = Tunnel::new(proxy_uri.clone(), direct);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                let target = with_explicit_port(&dst);
                Box::pin(async move {
                    tunnel.call(target).await.map(Tcp::new).map_err(|e| {
                        BoxError::from(format!(
                            "through proxy {}: {}",
                            redact_userinfo(&proxy_uri),
                            crate::stream::error_chain(&e)
                        ))
                    })
                })
            }
        }
    }
}

/// The proxy address without any `user:password@`.
fn redact_userinfo(uri: &Uri) -> String {
    match (uri.scheme_str(), uri.host()) {
        (Some(scheme), Some(host)) => match uri.port_u16() {
            Some(port) => format!("{scheme}://{host}:{port}"),
            None => format!("{scheme}://{host}"),
        },
        _ => "(unparsable proxy address)".to_string(),
    }
}

#[cfg(test)]
mod tests;
