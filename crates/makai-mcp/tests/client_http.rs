//! The client over streamable HTTP, against the test server's cases served
//! in-process on 127.0.0.1 behind a bearer-token check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

#[path = "../src/bin/makai-mcp-testserver/cases.rs"]
#[allow(dead_code)]
mod cases;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{Request, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use common::*;
use makai_mcp::{McpManager, McpServerConfig, ServerState};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "secret-token-123";

struct HttpServer {
    url: String,
    seen_auth: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start_http() -> HttpServer {
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop.child_token();
    let service = StreamableHttpService::new(
        || Ok(cases::Cases::new(None)),
        LocalSessionManager::default().into(),
        config,
    );
    let seen_auth: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = seen_auth.clone();
    let check = move |req: Request<axum::body::Body>, next: Next| {
        let seen = seen.clone();
        async move {
            let auth = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            seen.lock().unwrap().push(auth.clone());
            if auth != format!("Bearer {TOKEN}") {
                return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
            }
            let resp: Response = next.run(req).await;
            resp
        }
    };
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(check));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let s = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { s.cancelled().await })
            .await;
    });
    HttpServer {
        url: format!("http://{addr}/mcp"),
        seen_auth,
        stop,
    }
}

#[tokio::test]
async fn http_server_with_bearer_header() {
    let server = start_http().await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = fast_options(dir.path());
    opts.parent_env = Arc::new(|k: &str| (k == "MCP_TOKEN").then(|| TOKEN.to_string()));
    let cfg =
        McpServerConfig::http(&server.url).with_header("Authorization", "Bearer ${MCP_TOKEN}");
    let m = McpManager::start([("web".to_string(), cfg)], opts);
    m.wait_ready("web", Duration::from_secs(20)).await.unwrap();
    let echo = tool(&m, "mcp__web__echo");
    assert!(echo.read_only());
    assert_eq!(
        call(&echo, json!({"text": "over http"}))
            .await
            .unwrap()
            .text_content(),
        "echo: over http"
    );
    let img = call(&tool(&m, "mcp__web__image"), json!({})).await.unwrap();
    assert_eq!(img.content.len(), 2);
    let err = call(&tool(&m, "mcp__web__fail"), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the operation failed on purpose");
    let seen = server.seen_auth.lock().unwrap().clone();
    assert!(
        !seen.is_empty() && seen.iter().all(|a| a == &format!("Bearer {TOKEN}")),
        "{seen:?}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn http_server_rejecting_the_token_is_reported_failed() {
    let server = start_http().await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = McpServerConfig::http(&server.url)
        .with_header("Authorization", "Bearer wrong")
        .with_startup_timeout(Duration::from_secs(10));
    let m = McpManager::start([("web".to_string(), cfg)], fast_options(dir.path()));
    let st = wait_state(&m, "web", 20, |s| matches!(s, ServerState::Failed { .. })).await;
    let text = st.to_string();
    assert!(
        text.contains("handshake failed: unexpected server response: HTTP 401"),
        "{text}"
    );
    assert!(text.contains("check the server's \"headers\""), "{text}");
    assert!(
        !text.contains("WorkerTransport"),
        "no SDK internals: {text}"
    );
    assert!(m.tools().is_empty());
}
