//! Shared helpers: servers on loopback, a tapping inner client, raw protocol
//! connections and a TCP proxy that sees when the server drops a provider request.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;

use makai_ai::{
    Api, AssistantMessageEvent, AssistantMessageEventStream, Context, Model, RetryPolicy,
    StreamOptions, UserMessage,
};
use makai_ai::{InProcessClient, ProtocolClient};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};
use makai_protocol::transport::ndjson::NdjsonTransport;
use makai_protocol::transport::ws::ClientWs;
use makai_protocol::transport::{Frame, FrameReceiver, FrameSender, Incoming, Transport};
use makai_protocol::{
    Body, ClientConfig, Envelope, ProtocolServer, RemoteProtocolClient, ServerConfig, serve,
};

pub const TOKEN: &str = "mk_test-token-0123456789abcdef";
pub const WAIT: Duration = Duration::from_secs(30);

pub async fn mock(responses: Vec<ScriptedResponse>) -> MockServer {
    MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts")
}

pub fn model_for(base_url: String, api: Api) -> Model {
    Model::custom(api, "mock", "mock-model", base_url)
}

pub fn model(server: &MockServer, api: Api) -> Model {
    model_for(server.base_url_v1(), api)
}

pub fn context(text: &str) -> Context {
    Context {
        messages: vec![UserMessage::text(text).into()],
        ..Default::default()
    }
}

pub fn options() -> StreamOptions {
    StreamOptions {
        retry: RetryPolicy::none(),
        ..Default::default()
    }
}

pub async fn start(config: ServerConfig) -> ProtocolServer {
    serve(config).await.expect("server starts")
}

pub fn quiet_client_config() -> ClientConfig {
    ClientConfig {
        reconnect_timeout: Duration::from_secs(10),
        ..ClientConfig::default()
    }
}

pub async fn client(url: &str) -> RemoteProtocolClient {
    RemoteProtocolClient::connect_with(url, TOKEN, quiet_client_config())
        .await
        .expect("client connects")
}

/// Every event of a stream, checked against the stream contract
/// (`makai_ai::testing`): what crossed the wire obeys it as the in-process
/// stream does.
pub async fn collect(stream: AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
    let events = tokio::time::timeout(WAIT, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ended in time");
    makai_ai::testing::assert_stream_contract(&events);
    events
}

/// The rest of a stream whose first events the test already read (so the
/// contract cannot be checked on it alone).
pub async fn collect_tail(stream: AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
    tokio::time::timeout(WAIT, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ended in time")
}

/// Wraps the in-process client and records, per call, every event it yields
/// on the server side (and whether the call was cancelled there).
type CallLog = Arc<Mutex<Vec<AssistantMessageEvent>>>;

#[derive(Clone, Default)]
pub struct TapClient {
    pub calls: Arc<Mutex<Vec<CallLog>>>,
    pub finished: Arc<AtomicUsize>,
}

impl TapClient {
    pub fn events(&self, call: usize) -> Vec<AssistantMessageEvent> {
        self.calls.lock().unwrap()[call].lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait]
impl ProtocolClient for TapClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let cancel = options.cancel.clone();
        let mut inner = InProcessClient::new().stream(model, context, options).await;
        let log = Arc::new(Mutex::new(Vec::new()));
        self.calls.lock().unwrap().push(log.clone());
        let finished = self.finished.clone();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            while let Some(ev) = inner.next().await {
                log.lock().unwrap().push(ev.clone());
                if tx.send(vec![ev]).await.is_err() {
                    break;
                }
            }
            finished.fetch_add(1, Ordering::SeqCst);
        });
        AssistantMessageEventStream::from_channel(rx, cancel)
    }
}

/// A raw protocol connection for hand-written frames.
pub struct Raw {
    pub sender: Box<dyn FrameSender>,
    pub receiver: Box<dyn FrameReceiver>,
}

impl Raw {
    pub async fn tcp(addr: std::net::SocketAddr) -> Raw {
        let sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (r, w) = sock.into_split();
        let t: Box<dyn Transport> = Box::new(NdjsonTransport::new(r, w, 64 << 20));
        let (sender, receiver) = t.split();
        Raw { sender, receiver }
    }

    /// A WebSocket connection, with the token in the upgrade's header when given.
    pub async fn ws(
        url: &str,
        token: Option<&str>,
    ) -> Result<Raw, tokio_tungstenite::tungstenite::Error> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = url.into_client_request().unwrap();
        if let Some(t) = token {
            req.headers_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        let (socket, _) = tokio_tungstenite::connect_async(req).await?;
        let t: Box<dyn Transport> = Box::new(ClientWs::new(socket, 64 << 20));
        let (sender, receiver) = t.split();
        Ok(Raw { sender, receiver })
    }

    pub async fn send_text(&mut self, text: &str) {
        self.sender
            .send(Frame::from_string(text.to_string()))
            .await
            .unwrap();
    }

    pub async fn send(&mut self, env: Envelope) {
        self.sender.send(env.to_frame()).await.unwrap();
    }

    /// The next envelope, or None when the connection closed.
    pub async fn recv(&mut self) -> Option<Envelope> {
        let next = tokio::time::timeout(WAIT, self.receiver.recv())
            .await
            .expect("a frame in time");
        match next {
            Ok(Some(Incoming::Frame(f))) => Some(Envelope::from_frame(f.as_bytes()).unwrap()),
            Ok(Some(other)) => panic!("unexpected {other:?}"),
            Ok(None) | Err(_) => None,
        }
    }

    /// Sends `hello` (with the token) and returns the welcome's session id.
    pub async fn hello(&mut self, token: Option<&str>) -> Envelope {
        let hello = makai_protocol::payload::Hello {
            token: token.map(String::from),
            ..Default::default()
        };
        self.send(Envelope::new(0, Body::Hello(hello))).await;
        self.recv().await.expect("a reply to hello")
    }
}

/// A TCP proxy in front of the mock LLM; counts open upstream connections.
pub struct Proxy {
    pub addr: std::net::SocketAddr,
    pub open: Arc<AtomicUsize>,
    pub opened: Arc<AtomicUsize>,
}

impl Proxy {
    pub async fn start(target: std::net::SocketAddr) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicUsize::new(0));
        let opened = Arc::new(AtomicUsize::new(0));
        let (o, n) = (open.clone(), opened.clone());
        tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                let (o, n) = (o.clone(), n.clone());
                o.fetch_add(1, Ordering::SeqCst);
                n.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    if let Ok(mut up) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Proxy { addr, open, opened }
    }

    pub fn base_url_v1(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// Waits until `f` holds (polling), panicking after `WAIT`.
pub async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The wire names of the events, in order.
pub fn kinds(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The text deltas of `events`, joined.
pub fn streamed_text(events: &[AssistantMessageEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}
