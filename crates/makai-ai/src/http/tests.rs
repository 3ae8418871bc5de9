//! The HTTP client's unit tests: the loopback and proxy helpers, and
//! requests to raw servers on loopback (connection reuse, connections closed
//! under a request).

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
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\ntunnel!")
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
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\ndirect")
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

/// A client with no proxies, whatever the environment says.
fn test_client() -> HttpClient {
    HttpClient::with_proxies(Duration::from_secs(5), Matcher::builder().build())
}

/// POSTs `{}` to `url`.
async fn post_empty(client: &HttpClient, url: &str) -> Result<HttpResponse, SendError> {
    client
        .post(url, &[("content-length", "2")], Bytes::from_static(b"{}"))
        .await
}

/// A keep-alive server that answers every request with a chunked "hello"
/// in one write; counts the connections it accepted.
async fn keep_alive_server() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    hang_up_server(usize::MAX, true).await
}

#[tokio::test]
async fn a_connection_is_reused_when_its_body_was_read_to_the_end() {
    let (addr, accepted) = keep_alive_server().await;
    let client = test_client();
    let url = format!("http://{addr}/v1/chat/completions");
    for _ in 0..3 {
        let response = post_empty(&client, &url).await.unwrap();
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
    let client = test_client();
    let url = format!("http://{addr}/v1/messages");
    for _ in 0..3 {
        let response = post_empty(&client, &url).await.unwrap();
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
    let client = test_client();
    let url = format!("http://{addr}/v1/messages");
    for _ in 0..2 {
        let response = post_empty(&client, &url).await.unwrap();
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
    use tokio::io::AsyncWriteExt;
    raw_server(move |mut socket| async move {
        let mut buf = Vec::new();
        let mut answered = 0;
        loop {
            if answered == answers && !read_last {
                socket.readable().await?;
                return Ok(());
            }
            if !next_request(&mut socket, &mut buf).await? || answered == answers {
                return Ok(());
            }
            answered += 1;
            socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                )
                .await?;
        }
    })
    .await
}

/// A raw HTTP/1.1 server on loopback: each connection it accepts is served
/// by `serve` on a task of its own. Returns its address and a count of the
/// connections.
async fn raw_server<F, Fut>(serve: F) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>)
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(serve(socket));
        }
    });
    (addr, accepted)
}

/// Reads until one whole request (a head and the 2-byte body "{}" of every
/// test request) is in `buf`, and removes it from there; false at the end of
/// the stream.
async fn next_request(
    socket: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n")
            && buf.len() >= end + 4 + 2
        {
            buf.drain(..end + 4 + 2);
            return Ok(true);
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(false);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Regression: a pooled connection the server closed as the next request
/// went out (its keep-alive timeout) failed that request, which the stream
/// then retried after its retry delay, telling the user of a retry.
#[tokio::test]
async fn a_pooled_connection_closed_under_the_request_is_replaced_at_once() {
    for read_last in [true, false] {
        let (addr, accepted) = hang_up_server(1, read_last).await;
        let client = test_client();
        let url = format!("http://{addr}/v1/chat/completions");
        for _ in 0..3 {
            let response = post_empty(&client, &url)
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
    let client = test_client();
    let url = format!("http://{addr}/v1/chat/completions");
    let error = post_empty(&client, &url).await.err().unwrap();
    assert!(matches!(error, SendError::Closed), "{error:?}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn proxy_credentials_are_not_shown() {
    let uri: Uri = "http://user:secret@proxy.local:3128".parse().unwrap();
    let shown = redact_userinfo(&uri);
    assert_eq!(shown, "http://proxy.local:3128");
}

/// A keep-alive server that answers each request with a `content-length`
/// body of `pieces` pieces (`piece-00;piece-01;...`), one write every `gap`;
/// counts the connections it accepted.
async fn drip_server(
    pieces: usize,
    gap: Duration,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    raw_server(move |socket| async move {
        socket.set_nodelay(true)?;
        drip(socket, pieces, gap).await
    })
    .await
}

/// [`drip_server`] over TLS, with the test certificate
/// ([`tls_test_client`] trusts it): each piece is a TLS record of its own.
async fn tls_drip_server(
    pieces: usize,
    gap: Duration,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject;
    let key = PrivateKeyDer::from_pem_file(format!("{TLS_FIXTURES}/key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(test_certificates(), key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    raw_server(move |socket| {
        let acceptor = acceptor.clone();
        async move {
            socket.set_nodelay(true)?;
            drip(acceptor.accept(socket).await?, pieces, gap).await
        }
    })
    .await
}

/// Serves [`drip_server`]'s answers on `socket` until it closes.
async fn drip(
    mut socket: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    pieces: usize,
    gap: Duration,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut buf = Vec::new();
    while next_request(&mut socket, &mut buf).await? {
        let body = drip_body(pieces);
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
        socket.write_all(head.as_bytes()).await?;
        socket.flush().await?;
        for piece in body.as_bytes().chunks(9) {
            tokio::time::sleep(gap).await;
            socket.write_all(piece).await?;
            socket.flush().await?;
        }
    }
    Ok(())
}

const TLS_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

/// The self-signed certificate of `tests/fixtures/tls` (127.0.0.1, localhost).
fn test_certificates() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter(format!("{TLS_FIXTURES}/cert.pem"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// [`test_client`] whose TLS trusts the test certificate.
fn tls_test_client() -> HttpClient {
    let client = test_client();
    let mut roots = rustls::RootCertStore::empty();
    for cert in test_certificates() {
        roots.add(cert).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(client.connector.clone());
    assert!(client.tls.set(Ok(https)).is_ok());
    client
}

fn drip_body(pieces: usize) -> String {
    (0..pieces).map(|i| format!("piece-{i:02};")).collect()
}

/// What [`read_counting`] saw of a body.
struct Counted {
    data: Vec<u8>,
    /// Reads that brought data (a `content-length` body is one run of data
    /// per read).
    reads: usize,
    /// The receive low-water mark was raised at some point.
    raised: bool,
    /// How many times the mark was changed before the body's end.
    mark_changes: usize,
}

/// Reads a body to its end, counting.
async fn read_counting(mut body: ResponseBody) -> Counted {
    let mut counted = Counted {
        data: Vec::new(),
        reads: 0,
        raised: false,
        mark_changes: 0,
    };
    while let Some(range) = body.next_data().await.unwrap() {
        counted.data.extend_from_slice(body.data(range));
        counted.reads += 1;
        counted.raised |= body.receive_low_water() > 1;
        counted.mark_changes = counted.mark_changes.max(body.receive_low_water_changes());
    }
    counted
}

#[tokio::test]
async fn paced_reads_take_a_fast_stream_in_few_reads_and_lose_nothing() {
    // 40 writes 2 ms apart (80 ms at least), read at most every 25 ms.
    let (addr, _) = drip_server(40, Duration::from_millis(2)).await;
    let client = test_client();
    let url = format!("http://{addr}/v1/chat/completions");
    let mut body = post_empty(&client, &url).await.unwrap().into_body();
    body.pace_reads(Duration::from_millis(25));
    let counted = read_counting(body).await;
    assert_eq!(String::from_utf8(counted.data).unwrap(), drip_body(40));
    assert_paced(counted.reads, counted.raised, counted.mark_changes);
}

/// Unpaced, each write is a read of its own: 40 (on an idle machine).
/// Paced: two reads to see that the stream is fast, then one per 25 ms,
/// plus a few for a server that falls behind. The mark is raised once and
/// stays up: each pause ends with a direct read of what arrived, not with
/// lowering the mark and raising it again (two more changes a pause). A
/// pause in which nothing arrived (a server descheduled that long) lowers it
/// until data comes: allowed once.
fn assert_paced(reads: usize, raised: bool, mark_changes: usize) {
    assert!(reads <= 15, "{reads} reads");
    assert!(raised, "the low-water mark was raised during the pauses");
    assert!(mark_changes <= 3, "the mark changed {mark_changes} times");
}

/// The same through TLS: rustls reads the TCP stream beneath, whose direct
/// read serves it as it serves a plain connection.
#[tokio::test]
async fn paced_reads_through_tls_take_a_fast_stream_in_few_reads_and_lose_nothing() {
    let (addr, _) = tls_drip_server(40, Duration::from_millis(2)).await;
    let client = tls_test_client();
    let url = format!("https://127.0.0.1:{}/v1/chat/completions", addr.port());
    let mut body = post_empty(&client, &url).await.unwrap().into_body();
    body.pace_reads(Duration::from_millis(25));
    let counted = read_counting(body).await;
    assert_eq!(String::from_utf8(counted.data).unwrap(), drip_body(40));
    assert_paced(counted.reads, counted.raised, counted.mark_changes);
}

/// Regression guard: a connection put back in the pool with its receive
/// low-water mark still raised would leave the next response on it unread
/// until kilobytes arrived (a short answer: never).
#[tokio::test]
async fn a_paced_connection_goes_back_to_the_pool_reading_as_data_arrives() {
    let (addr, accepted) = drip_server(40, Duration::from_millis(2)).await;
    let client = test_client();
    let url = format!("http://{addr}/v1/chat/completions");
    let mut body = post_empty(&client, &url).await.unwrap().into_body();
    body.pace_reads(Duration::from_millis(25));
    assert!(read_counting(body).await.raised);
    // The next request takes the pooled connection, unpaced: its answer
    // (head and 9-byte pieces) must arrive as it is written.
    let next = tokio::time::timeout(Duration::from_secs(10), async {
        let body = post_empty(&client, &url).await.unwrap().into_body();
        read_counting(body).await
    })
    .await
    .expect("the pooled connection answered");
    assert_eq!(String::from_utf8(next.data).unwrap(), drip_body(40));
    assert!(!next.raised, "an unpaced body never raises the mark");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one connection"
    );
}
