//! [`MockServer`]: the HTTP server on 127.0.0.1, its routes and shared state.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::llama_router::LlamaRouter;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthState, AwsRules, AzureRules, TokenEndpoint};
use crate::body::Plan;
use crate::chunking::{byte_chunks, event_chunks};
use crate::error::MockError;
use crate::record::{RecordedRequest, WireApi, gemini_target};
use crate::scenario::{Responder, Scenario};
use crate::script::ScriptedResponse;
use crate::wire::{self, Ctx};

/// The model name used when a request names none.
pub const DEFAULT_MODEL: &str = "mock-model";

/// Options for [`MockServer::start_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// Port on 127.0.0.1; 0 (the default) picks an ephemeral port.
    pub port: u16,
    /// Keep every request for [`MockServer::requests`] (default true). Turn
    /// off for long benchmark runs so memory stays flat.
    pub record_requests: bool,
    /// When the server is dropped (outside a panic), check every recorded
    /// request against [`crate::invariants`] and panic on a violation
    /// (default true): every test that uses the server checks them without
    /// asking. The standalone binary turns it off.
    pub check_invariants_on_drop: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            port: 0,
            record_requests: true,
            check_invariants_on_drop: true,
        }
    }
}

/// The script state: queue, responder and how many LLM requests were answered.
struct Script {
    queue: VecDeque<ScriptedResponse>,
    responder: Option<Responder>,
    served: usize,
}

struct Shared {
    script: Mutex<Script>,
    auth: Mutex<AuthState>,
    requests: Mutex<Vec<RecordedRequest>>,
    record: bool,
    seq: AtomicU64,
    /// TCP connections accepted.
    connections: AtomicU64,
    cancel: CancellationToken,
    /// See [`ServerOptions::check_invariants_on_drop`].
    check_on_drop: std::sync::atomic::AtomicBool,
    /// See [`MockServer::act_as_llama_router`].
    router: Mutex<Option<LlamaRouter>>,
}

/// Locks a mutex, ignoring poisoning (the data stays consistent: every
/// critical section is a single push / pop).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running scripted LLM server on `127.0.0.1`. Dropping it shuts it down
/// (open streams are aborted).
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockServer {
    /// Starts a server on an ephemeral port of 127.0.0.1. Must be called
    /// inside a Tokio runtime; the server runs on it until dropped.
    pub async fn start(scenario: Scenario) -> Result<Self, MockError> {
        Self::start_with(scenario, ServerOptions::default()).await
    }

    /// Starts a server with explicit [`ServerOptions`].
    pub async fn start_with(scenario: Scenario, options: ServerOptions) -> Result<Self, MockError> {
        let bind_err = |source| MockError::Bind {
            port: options.port,
            source,
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let cancel = CancellationToken::new();
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                queue: scenario.queue,
                responder: scenario.responder,
                served: 0,
            }),
            auth: Mutex::new(AuthState::default()),
            router: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            record: options.record_requests,
            seq: AtomicU64::new(1),
            connections: AtomicU64::new(0),
            cancel: cancel.clone(),
            check_on_drop: std::sync::atomic::AtomicBool::new(
                options.check_invariants_on_drop && options.record_requests,
            ),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let counted = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            // No Nagle delay: each event leaves when it is written, as a
            // provider's do (an event held back until the last one is
            // acknowledged would meet the client's delayed ACK).
            let listener = listener.tap_io(move |tcp| {
                counted.connections.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::debug!(error = %e, "mockllm: cannot set TCP_NODELAY");
                }
            });
            let serve = axum::serve(listener, app).with_graceful_shutdown(cancel.cancelled_owned());
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "mockllm: server stopped");
            }
        });
        tracing::debug!(%addr, "mockllm: listening");
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL OpenAI / Anthropic clients expect.
    pub fn base_url_v1(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// From now on answers as a llama.cpp server in router mode does:
    /// `GET /models` lists `models` (the router's entries: `id`, `status`,
    /// `architecture`, `meta`), `GET /props` says `models_autoload`
    /// (`None`: an older router without `/props`, answered 404), and
    /// `POST /models/load`, `/models/unload` and `/models` (a download)
    /// change the list (see `llama_router.rs`). Chat requests are scripted
    /// as ever.
    pub fn act_as_llama_router(&self, models: Value, autoload: Option<bool>) {
        *lock(&self.shared.router) = Some(LlamaRouter::new(models, autoload));
    }

    /// Every request received so far (all routes), in the order they were
    /// answered (for scripted requests: the order the script was consumed).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Checks every recorded request against [`crate::invariants`] and panics
    /// with the full list of violations if any request breaks them. For tests.
    #[allow(clippy::panic)]
    pub fn assert_request_invariants(&self) {
        let mut problems = Vec::new();
        for (i, request) in self.requests().iter().enumerate() {
            for p in crate::invariants::check_request(request) {
                problems.push(format!("request {i} ({}): {p}", request.path));
            }
        }
        if !problems.is_empty() {
            panic!(
                "recorded requests break the invariants:\n{}",
                problems.join("\n")
            );
        }
    }

    /// Skips the invariant check when this server is dropped (for tests that
    /// send requests breaking the invariants on purpose).
    pub fn skip_invariant_check(&self) {
        self.shared
            .check_on_drop
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Appends a response to the script at runtime.
    pub fn push(&self, response: ScriptedResponse) {
        lock(&self.shared.script).queue.push_back(response);
    }

    /// Replaces (or with `None` removes) the responder used when the queue is empty.
    pub fn set_responder(&self, responder: Option<Responder>) {
        lock(&self.shared.script).responder = responder;
    }

    /// How many queued responses have not been used yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).queue.len()
    }

    /// How many LLM requests got a scripted or responder answer.
    pub fn served(&self) -> usize {
        lock(&self.shared.script).served
    }

    /// How many TCP connections the server accepted (a client that reuses
    /// its connections makes one per concurrent stream).
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Requires SigV4-signed (or Bedrock-API-key) requests on the Bedrock routes.
    pub fn require_aws(&self, rules: AwsRules) {
        lock(&self.shared.auth).aws = Some(rules);
    }

    /// Marks an access key's credentials as expired (`ExpiredTokenException`).
    pub fn expire_aws_key(&self, access_key_id: &str) {
        if let Some(rules) = lock(&self.shared.auth).aws.as_mut() {
            rules.expired.push(access_key_id.to_string());
        }
    }

    /// Requires the `api-version` and key on the Azure OpenAI routes.
    pub fn require_azure(&self, rules: AzureRules) {
        lock(&self.shared.auth).azure = Some(rules);
    }

    /// Serves an OAuth2 token endpoint at [`MockServer::token_url`] and
    /// requires its tokens on the Vertex AI routes.
    pub fn serve_tokens(&self, config: TokenEndpoint) {
        lock(&self.shared.auth).google = Some(config);
    }

    /// Expires every access token issued so far.
    pub fn expire_tokens(&self) {
        lock(&self.shared.auth).expire_google_tokens();
    }

    /// How many access tokens the token endpoint issued.
    pub fn tokens_issued(&self) -> u64 {
        lock(&self.shared.auth).issued_count()
    }

    /// `http://127.0.0.1:PORT/token`, the token endpoint.
    pub fn token_url(&self) -> String {
        format!("http://{}/token", self.addr)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        self.task.abort();
        if self
            .shared
            .check_on_drop
            .load(std::sync::atomic::Ordering::Acquire)
            && !std::thread::panicking()
        {
            self.assert_request_invariants();
        }
    }
}

impl Shared {
    /// The next response: queue first, then the responder. `Err(served)` when exhausted.
    fn next_response(&self, req: &RecordedRequest) -> Result<ScriptedResponse, usize> {
        let responder = {
            let mut script = lock(&self.script);
            if let Some(resp) = script.queue.pop_front() {
                script.served += 1;
                return Ok(resp);
            }
            let Some(responder) = script.responder.clone() else {
                return Err(script.served);
            };
            script.served += 1;
            responder
        };
        Ok(responder(req))
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn record(parts: &axum::http::request::Parts, raw: &Bytes) -> RecordedRequest {
    RecordedRequest {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(raw).unwrap_or(Value::Null),
        raw_body: String::from_utf8_lossy(raw).into_owned(),
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let raw = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(raw) => raw,
        Err(e) => {
            let msg = format!("mockllm: cannot read request body: {e}");
            return json_response(
                StatusCode::BAD_REQUEST,
                &wire::http_error_body(None, 400, &msg),
            );
        }
    };
    let recorded = record(&parts, &raw);
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let response = route(&shared, &parts.method, &recorded, &host).await;
    if shared.record {
        lock(&shared.requests).push(recorded);
    }
    response
}

fn refusal_response(refusal: crate::auth::Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
    let mut response = json_response(status, &refusal.body);
    for (name, value) in refusal.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

async fn route(
    shared: &Shared,
    method: &Method,
    recorded: &RecordedRequest,
    host: &str,
) -> Response {
    let path = recorded.path.as_str();
    if method == Method::POST && (path == "/token" || path.ends_with("/oauth2/v2.0/token")) {
        let url = format!("http://{host}{path}");
        let (status, body) = lock(&shared.auth).token_endpoint(recorded, &url);
        return json_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            &body,
        );
    }
    if let Some(api) = WireApi::from_path(path) {
        if let Some(refusal) = lock(&shared.auth).check(recorded) {
            return refusal_response(refusal);
        }
        if method != Method::POST {
            let msg = format!("mockllm: {method} {path} is not supported; use POST");
            return json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &wire::http_error_body(Some(api), 405, &msg),
            );
        }
        return respond(shared, api, recorded).await;
    }
    if let Some(router) = lock(&shared.router).as_mut()
        && let Some((status, body)) = router.answer(method.as_str(), path, &recorded.body)
    {
        return json_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            &body,
        );
    }
    if method == Method::GET && matches!(path, "/v1/models" | "/models") {
        return json_response(
            StatusCode::OK,
            &json!({"object": "list", "data": [{
                "id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "makai-mockllm",
            }]}),
        );
    }
    let msg = format!("mockllm: no route for {method} {path}");
    json_response(
        StatusCode::NOT_FOUND,
        &wire::http_error_body(None, 404, &msg),
    )
}

async fn respond(shared: &Shared, api: WireApi, req: &RecordedRequest) -> Response {
    let resp = match shared.next_response(req) {
        Ok(resp) => resp,
        Err(served) => {
            let msg = format!("mockllm: script exhausted after {served} requests");
            tracing::warn!("{msg}");
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"error": {"message": msg}}),
            );
        }
    };
    let gemini = gemini_target(&req.path);
    let ctx = Ctx {
        model: req.model().unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        seq: shared.seq.fetch_add(1, Ordering::Relaxed),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        include_usage: req
            .body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true),
        gemini_sse: req.has_query_param("alt", "sse"),
    };
    let stream = gemini.map_or_else(|| req.wants_stream(), |t| t.stream);
    build(shared, api, resp, &ctx, stream)
        .await
        .unwrap_or_else(|error_response| error_response)
}

async fn build(
    shared: &Shared,
    api: WireApi,
    mut resp: ScriptedResponse,
    ctx: &Ctx,
    stream: bool,
) -> Result<Response, Response> {
    let scripted_headers = std::mem::take(&mut resp.headers);
    let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let sse = if api == WireApi::BedrockConverseStream {
        "application/vnd.amazon.eventstream"
    } else {
        "text/event-stream"
    };
    let (content_type, body) = if let Some(body) = resp.body_override.take() {
        let is_json = serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok();
        let ct = if is_json {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        (ct, Body::from(body))
    } else if !status.is_success() {
        let msg = format!("mockllm: scripted HTTP {}", status.as_u16());
        let body = wire::http_error_body(Some(api), status.as_u16(), &msg);
        ("application/json", Body::from(body.to_string()))
    } else if resp.replay_bytes.is_some() || resp.replay_file.is_some() {
        let bytes = match (resp.replay_bytes.take(), &resp.replay_file) {
            (Some(bytes), _) => Bytes::from(bytes),
            (None, Some(path)) => match tokio::fs::read(path).await {
                Ok(bytes) => Bytes::from(bytes),
                Err(e) => {
                    let msg = format!("mockllm: cannot read replay file {}: {e}", path.display());
                    return Err(json_response(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &json!({"error": {"message": msg}}),
                    ));
                }
            },
            (None, None) => Bytes::new(),
        };
        let events = if resp.split_events {
            event_chunks(bytes)
        } else {
            byte_chunks(bytes, resp.chunk_size)
        };
        (sse, plan(shared, api, events, &resp, ctx))
    } else if stream {
        let events = wire::render_stream(api, &resp, ctx);
        let ct = if api == WireApi::Gemini && !ctx.gemini_sse {
            "application/json"
        } else {
            sse
        };
        (ct, plan(shared, api, events, &resp, ctx))
    } else {
        let body = wire::render_complete(api, &resp, ctx);
        ("application/json", Body::from(body.to_string()))
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if api == WireApi::BedrockConverseStream && !status.is_success() {
        let error_type = wire::bedrock::error_type_for_status(status.as_u16());
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        )) {
            headers.insert(HeaderName::from_static("x-amzn-errortype"), v);
        }
    }
    if content_type == sse {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    for (name, value) in scripted_headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) else {
            tracing::warn!(%name, %value, "mockllm: skipping invalid scripted header");
            continue;
        };
        if name == CONTENT_TYPE {
            headers.insert(name, value);
        } else {
            headers.append(name, value);
        }
    }
    Ok(response)
}

fn plan(
    shared: &Shared,
    api: WireApi,
    events: Vec<Bytes>,
    resp: &ScriptedResponse,
    ctx: &Ctx,
) -> Body {
    Plan::new(
        events,
        resp,
        |n, kind| wire::stream_error_event(api, kind, ctx, n),
        shared.cancel.clone(),
    )
    .into_body()
}
