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

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub(crate) use body::ResponseBody;
use conn::{Conn, Io, Pool};

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
        let io: Box<dyn Io> = if uri.scheme_str() == Some("http") {
            Box::new(
                call(self.connector.clone(), uri.clone())
                    .await?
                    .into_inner(),
            )
        } else {
            Box::new(TokioIo::new(call(self.tls()?, uri.clone()).await?))
        };
        Ok(Conn::new(io))
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
    type Response = TokioIo<TcpStream>;
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
            None => Box::pin(async move { direct.call(dst).await.map_err(BoxError::from) }),
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
                    tunnel.call(target).await.map_err(|e| {
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
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in ["localhost", "127.0.0.1", "[::1]", "127.1.2.3"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["example.com", "10.0.0.1", "[2001:db8::1]"] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn tunnel_targets_get_the_scheme_default_port() {
        let http: Uri = "http://example.com/v1/chat".parse().unwrap();
        assert_eq!(with_explicit_port(&http).port_u16(), Some(80));
        let https: Uri = "https://example.com/v1".parse().unwrap();
        assert_eq!(with_explicit_port(&https).port_u16(), Some(443));
        let explicit: Uri = "http://example.com:8080/".parse().unwrap();
        assert_eq!(with_explicit_port(&explicit).port_u16(), Some(8080));
    }

    /// A one-connection HTTP proxy that accepts a `CONNECT`, then answers the
    /// tunnelled request itself. Returns its address and the `CONNECT` line.
    async fn tunnel_proxy() -> (
        std::net::SocketAddr,
        tokio::task::JoinHandle<std::io::Result<String>>,
    ) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (socket, _) = listener.accept().await?;
            let mut socket = BufReader::new(socket);
            let mut connect = String::new();
            socket.read_line(&mut connect).await?;
            let mut line = String::new();
            while socket.read_line(&mut line).await? > 2 {
                line.clear();
            }
            socket
                .get_mut()
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            // The tunnelled request: its head, then a fixed answer.
            let mut request_line = String::new();
            socket.read_line(&mut request_line).await?;
            loop {
                line.clear();
                if socket.read_line(&mut line).await? <= 2 {
                    break;
                }
            }
            socket
                .get_mut()
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\ntunnel!",
                )
                .await?;
            Ok(format!(
                "{} / {}",
                connect.trim_end(),
                request_line.trim_end()
            ))
        });
        (addr, task)
    }

    #[tokio::test]
    async fn requests_go_through_the_proxy_with_a_connect_tunnel() {
        let (addr, proxy) = tunnel_proxy().await;
        let matcher = Matcher::builder().all(format!("http://{addr}")).build();
        let client = HttpClient::with_proxies(Duration::from_secs(5), matcher);
        let response = client
            .post(
                "http://llm.invalid/v1/chat/completions",
                &[],
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap();
        assert_eq!(&body[..], b"tunnel!");
        let seen = proxy.await.unwrap().unwrap();
        assert_eq!(
            seen,
            "CONNECT llm.invalid:80 HTTP/1.1 / POST /v1/chat/completions HTTP/1.1"
        );
    }

    #[tokio::test]
    async fn loopback_targets_bypass_the_proxy() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        // The proxy address refuses connections: a request that used it would fail.
        let unused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dead_proxy = unused.local_addr().unwrap();
        drop(unused);
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = server.local_addr().unwrap();
        tokio::spawn(async move {
            let (socket, _) = server.accept().await?;
            let mut socket = BufReader::new(socket);
            let mut line = String::new();
            while socket.read_line(&mut line).await? > 2 {
                line.clear();
            }
            socket
                .get_mut()
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\ndirect",
                )
                .await?;
            std::io::Result::Ok(())
        });
        let matcher = Matcher::builder()
            .all(format!("http://{dead_proxy}"))
            .build();
        let client = HttpClient::with_proxies(Duration::from_secs(5), matcher);
        let url = format!("http://127.0.0.1:{}/x", server_addr.port());
        let response = client.post(&url, &[], Bytes::new()).await.unwrap();
        let body = response.into_body().collect().await.unwrap();
        assert_eq!(&body[..], b"direct");
    }

    #[tokio::test]
    async fn a_proxy_that_refuses_is_a_clear_error() {
        let unused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dead_proxy = unused.local_addr().unwrap();
        drop(unused);
        let matcher = Matcher::builder()
            .all(format!("http://{dead_proxy}"))
            .build();
        let client = HttpClient::with_proxies(Duration::from_secs(5), matcher);
        let err = client
            .post("https://api.example.invalid/v1/messages", &[], Bytes::new())
            .await
            .unwrap_err();
        let text = crate::stream::error_chain(&err);
        assert!(
            text.contains(&format!("through proxy http://{dead_proxy}")),
            "{text}"
        );
    }

    /// A keep-alive server that answers every request with a chunked "hello"
    /// in one write; counts the connections it accepted.
    async fn keep_alive_server() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        hang_up_server(usize::MAX, true).await
    }

    #[tokio::test]
    async fn a_connection_is_reused_when_its_body_was_read_to_the_end() {
        let (addr, accepted) = keep_alive_server().await;
        let client = HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build());
        let url = format!("http://{addr}/v1/chat/completions");
        for _ in 0..3 {
            let response = client
                .post(&url, &[("content-length", "2")], Bytes::from_static(b"{}"))
                .await
                .unwrap();
            let body = response.into_body().collect().await.unwrap();
            assert_eq!(&body[..], b"hello");
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A decoder stops at the last event and drops the body before its end
    /// was read: the connection is kept, and its end read when it is taken.
    #[tokio::test]
    async fn a_connection_is_reused_when_its_body_is_dropped_after_the_last_event() {
        let (addr, accepted) = keep_alive_server().await;
        let client = HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build());
        let url = format!("http://{addr}/v1/messages");
        for _ in 0..3 {
            let response = client
                .post(&url, &[("content-length", "2")], Bytes::from_static(b"{}"))
                .await
                .unwrap();
            let mut body = response.into_body();
            assert_eq!(body.chunk().await.unwrap(), Some(&b"hello"[..]));
            body.complete();
            drop(body);
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A stream dropped before its last event (cancelled, failed) closes its
    /// connection, so the provider stops generating; the next request connects
    /// anew.
    #[tokio::test]
    async fn a_body_dropped_before_it_is_complete_closes_its_connection() {
        let (addr, accepted) = keep_alive_server().await;
        let client = HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build());
        let url = format!("http://{addr}/v1/messages");
        for _ in 0..2 {
            let response = client
                .post(&url, &[("content-length", "2")], Bytes::from_static(b"{}"))
                .await
                .unwrap();
            let mut body = response.into_body();
            assert_eq!(body.chunk().await.unwrap(), Some(&b"hello"[..]));
            drop(body);
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// A keep-alive server that answers `answers` requests on each connection
    /// with a chunked "hello", then hangs up on the next one as it arrives:
    /// after reading it (the client reads the end of the stream), or with it
    /// unread (the kernel resets the connection). Counts the connections.
    async fn hang_up_server(
        answers: usize,
        read_last: bool,
    ) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let mut answered = 0;
                    loop {
                        if answered == answers && !read_last {
                            socket.readable().await?;
                            return std::io::Result::Ok(());
                        }
                        let n = socket.read(&mut chunk).await?;
                        if n == 0 {
                            return Ok(());
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        // Each request is a head and a 2-byte body ("{}").
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            if buf.len() < end + 4 + 2 {
                                break;
                            }
                            buf.drain(..end + 4 + 2);
                            if answered == answers {
                                return Ok(());
                            }
                            answered += 1;
                            socket
                                .write_all(
                                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                                )
                                .await?;
                        }
                    }
                });
            }
        });
        (addr, accepted)
    }

    /// Regression: a pooled connection the server closed as the next request
    /// went out (its keep-alive timeout) failed that request, which the stream
    /// then retried after its retry delay, telling the user of a retry.
    #[tokio::test]
    async fn a_pooled_connection_closed_under_the_request_is_replaced_at_once() {
        for read_last in [true, false] {
            let (addr, accepted) = hang_up_server(1, read_last).await;
            let client =
                HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build());
            let url = format!("http://{addr}/v1/chat/completions");
            for _ in 0..3 {
                let response = client
                    .post(&url, &[("content-length", "2")], Bytes::from_static(b"{}"))
                    .await
                    .unwrap_or_else(|e| panic!("read_last={read_last}: {e}"));
                let body = response.into_body().collect().await.unwrap();
                assert_eq!(&body[..], b"hello");
            }
            // Each connection answered one request and hung up on the next.
            assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
        }
    }

    /// A new connection that fails under its request is not tried again here:
    /// the server may be down, and the stream's retries (with their delay and
    /// their event) deal with that.
    #[tokio::test]
    async fn a_new_connection_closed_under_the_request_is_an_error() {
        let (addr, accepted) = hang_up_server(0, true).await;
        let client = HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build());
        let url = format!("http://{addr}/v1/chat/completions");
        let error = client
            .post(&url, &[("content-length", "2")], Bytes::from_static(b"{}"))
            .await
            .err()
            .unwrap();
        assert!(matches!(error, SendError::Closed), "{error:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn proxy_credentials_are_not_shown() {
        let uri: Uri = "http://user:secret@proxy.local:3128".parse().unwrap();
        let shown = redact_userinfo(&uri);
        assert_eq!(shown, "http://proxy.local:3128");
    }
}
