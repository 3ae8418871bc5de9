//! The provider layer's HTTP client: hyper-util's pooled client over rustls.
//!
//! Why not reqwest (which the rest of the workspace uses for one-off requests):
//! a model stream is read as it is produced, and hyper's adaptive read buffer
//! doubles every time one socket read fills it, up to 400 KiB per connection.
//! When a response arrives faster than the agent handles it (a burst, or many
//! concurrent streams on a busy machine) every pooled connection keeps a buffer of
//! 64-128 KiB. reqwest does not expose the cap; hyper-util's builder does
//! (`http1_max_buf_size`), which keeps each connection at [`MAX_READ_BUFFER`].
//!
//! Everything else follows reqwest's defaults: TLS through rustls with the
//! platform's certificate verifier (the OS trust store), HTTP/2 when the server
//! offers it by ALPN, proxies from `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` /
//! `NO_PROXY` (and the system settings where the OS has them), reached with an
//! HTTP `CONNECT` tunnel. Loopback hosts never go through a proxy.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

/// The largest read buffer a connection keeps (also the largest response head).
pub(crate) const MAX_READ_BUFFER: usize = 8 * 1024;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(90);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

type PlainClient = Client<ProxyConnector, Full<Bytes>>;
type TlsClient = Client<HttpsConnector<ProxyConnector>, Full<Bytes>>;

/// A pooled HTTPS/HTTP client for model requests. Plain-HTTP URLs (a local model
/// server) never set up TLS: the certificate store is loaded on the first
/// `https://` request.
#[derive(Clone)]
pub(crate) struct HttpClient {
    plain: PlainClient,
    connector: ProxyConnector,
    tls: Arc<OnceLock<Result<TlsClient, String>>>,
}

fn client_builder() -> hyper_util::client::legacy::Builder {
    let mut builder = Client::builder(TokioExecutor::new());
    builder
        .pool_idle_timeout(POOL_IDLE)
        .pool_timer(TokioTimer::new())
        .http1_max_buf_size(MAX_READ_BUFFER);
    builder
}

/// A response whose body is read frame by frame.
pub(crate) type HttpResponse = http::Response<hyper::body::Incoming>;

/// Why a request could not be sent (the server never answered).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// The URL, a header name or a header value is not valid HTTP.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Connecting, the TLS handshake or sending failed.
    #[error(transparent)]
    Client(#[from] hyper_util::client::legacy::Error),
    /// The TLS settings could not be built (no usable certificate store).
    #[error("TLS is unavailable: {0}")]
    Tls(String),
}

impl SendError {
    /// Whether sending again cannot help: the request is invalid, TLS cannot be
    /// set up, or the server's response head is larger than the client accepts
    /// (the same server will send the same head again).
    pub(crate) fn is_permanent(&self) -> bool {
        match self {
            SendError::Invalid(_) | SendError::Tls(_) => true,
            SendError::Client(e) => {
                let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
                while let Some(err) = source {
                    // (`is_parse_too_large` needs hyper's server feature.)
                    if err
                        .downcast_ref::<hyper::Error>()
                        .is_some_and(|e| e.is_parse() && e.to_string().contains("too large"))
                    {
                        return true;
                    }
                    source = err.source();
                }
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
            plain: client_builder().build(connector.clone()),
            connector,
            tls: Arc::new(OnceLock::new()),
        }
    }

    /// The HTTPS client, built on first use.
    fn tls(&self) -> Result<&TlsClient, SendError> {
        let built = self.tls.get_or_init(|| {
            let https = hyper_rustls::HttpsConnectorBuilder::new()
                .try_with_platform_verifier()
                .map_err(|e| e.to_string())?
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(self.connector.clone());
            Ok(client_builder().build(https))
        });
        built.as_ref().map_err(|e| SendError::Tls(e.clone()))
    }

    /// Sends a POST of `body` to `url` with `headers`.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<HttpResponse, SendError> {
        let mut req = http::Request::post(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| SendError::Invalid(e.to_string()))?;
        if req.uri().scheme_str() == Some("http") {
            Ok(self.plain.request(req).await?)
        } else {
            Ok(self.tls()?.request(req).await?)
        }
    }
}

/// The process-wide client with the default connect timeout.
pub(crate) fn shared(default_connect_timeout: Duration) -> HttpClient {
    static CLIENT: OnceLock<HttpClient> = OnceLock::new();
    CLIENT
        .get_or_init(|| HttpClient::new(default_connect_timeout))
        .clone()
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
    use http_body_util::BodyExt;

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
        let body = response.into_body().collect().await.unwrap().to_bytes();
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
        let body = response.into_body().collect().await.unwrap().to_bytes();
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

    #[test]
    fn proxy_credentials_are_not_shown() {
        let uri: Uri = "http://user:secret@proxy.local:3128".parse().unwrap();
        let shown = redact_userinfo(&uri);
        assert_eq!(shown, "http://proxy.local:3128");
    }
}
