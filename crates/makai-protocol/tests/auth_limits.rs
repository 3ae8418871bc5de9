//! Authentication, connection limits, malformed and oversized messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use makai_ai::ProtocolClient;
use makai_ai::{Api, AssistantMessageEvent, StopReason};
use makai_mockllm::ScriptedResponse;
use makai_protocol::payload::Ping;
use makai_protocol::{
    Body, ClientError, Envelope, ErrorCode, RemoteProtocolClient, ServeError, ServerConfig, serve,
};
use tokio_tungstenite::tungstenite;

fn error_of(env: &Envelope) -> (u64, ErrorCode, String) {
    match &env.body {
        Body::Error(e) => (env.stream, e.code, e.message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

async fn ping_pong(raw: &mut Raw, nonce: u64) {
    raw.send(Envelope::new(0, Body::Ping(Ping { nonce }))).await;
    let env = raw.recv().await.expect("the connection is still open");
    assert_eq!(env.body, Body::Pong(Ping { nonce }));
}

#[tokio::test]
async fn wrong_token_is_rejected_before_any_work() {
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    // WebSocket with a wrong Authorization header: HTTP 401, no upgrade.
    let err = Raw::ws(&server.ws_url(), Some("mk_wrong-token-0123456789"))
        .await
        .err()
        .unwrap();
    let tungstenite::Error::Http(resp) = err else {
        panic!("{err:?}")
    };
    assert_eq!(resp.status(), 401);
    let body = String::from_utf8(resp.body().clone().unwrap_or_default()).unwrap();
    assert!(body.contains("wrong token"), "{body}");
    // Raw TCP with a wrong token in hello: an error frame, then the connection closes.
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    let reply = raw.hello(Some("mk_wrong-token-0123456789")).await;
    let (_, code, msg) = error_of(&reply);
    assert_eq!(code, ErrorCode::Unauthorized);
    assert!(msg.contains("wrong token"), "{msg}");
    assert!(raw.recv().await.is_none(), "closed after the refusal");
    // No token at all, on a WebSocket without the header.
    let mut raw = Raw::ws(&server.ws_url(), None).await.unwrap();
    let (_, code, msg) = error_of(&raw.hello(None).await);
    assert_eq!(code, ErrorCode::Unauthorized);
    assert!(msg.contains("Authorization: Bearer"), "{msg}");
    assert!(raw.recv().await.is_none());
    let stats = server.stats();
    assert_eq!(
        (
            stats.auth_failures,
            stats.connections,
            stats.streams_started
        ),
        (3, 0, 0)
    );
    // The client API reports it as such, on both transports.
    for url in [server.ws_url(), server.tcp_url().unwrap()] {
        let err = RemoteProtocolClient::connect(&url, "mk_wrong-token-0123456789")
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::Unauthorized(_)),
            "{url}: {err:?}"
        );
    }
}

#[tokio::test]
async fn token_in_hello_works_on_websocket_too() {
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let mut raw = Raw::ws(&server.ws_url(), None).await.unwrap();
    let reply = raw.hello(Some(TOKEN)).await;
    assert!(matches!(reply.body, Body::Welcome(_)), "{reply:?}");
    ping_pong(&mut raw, 1).await;
}

#[tokio::test]
async fn connections_per_token_are_limited() {
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.limits.max_connections_per_token = 2;
    let server = start(config).await;
    let a = client(&server.ws_url()).await;
    let _b = client(&server.tcp_url().unwrap()).await;
    let err = RemoteProtocolClient::connect(&server.ws_url(), TOKEN)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Refused(m) if m.contains("429")),
        "{err:?}"
    );
    let err = RemoteProtocolClient::connect(&server.tcp_url().unwrap(), TOKEN)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ClientError::Server {
                code: ErrorCode::TooManyConnections,
                ..
            }
        ),
        "{err:?}"
    );
    drop(a);
    eventually("a slot freed", || server.stats().connections == 1).await;
    client(&server.ws_url()).await;
}

#[tokio::test]
async fn malformed_envelopes_get_an_error_and_the_connection_stays_usable() {
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let mut tcp = Raw::tcp(server.tcp_addr().unwrap()).await;
    tcp.hello(Some(TOKEN)).await;
    let mut ws = Raw::ws(&server.ws_url(), Some(TOKEN)).await.unwrap();
    ws.hello(None).await;
    for raw in [&mut tcp, &mut ws] {
        raw.send_text("this is not json").await;
        let (stream, code, msg) = error_of(&raw.recv().await.unwrap());
        assert_eq!((stream, code), (0, ErrorCode::MalformedEnvelope));
        assert!(msg.contains("still open"), "{msg}");
        raw.send_text(r#"{"v":1,"stream":5,"type":"warp"}"#).await;
        let (stream, code, msg) = error_of(&raw.recv().await.unwrap());
        assert_eq!((stream, code), (5, ErrorCode::MalformedEnvelope));
        assert!(msg.contains("warp"), "{msg}");
        raw.send_text(r#"{"v":1,"stream":6,"type":"resume","payload":{"lastSeq":"x"}}"#)
            .await;
        let (stream, code, _) = error_of(&raw.recv().await.unwrap());
        assert_eq!((stream, code), (6, ErrorCode::MalformedEnvelope));
        raw.send_text(r#"{"v":1,"stream":7,"type":"event","payload":{"type":"start"}}"#)
            .await;
        let (stream, code, _) = error_of(&raw.recv().await.unwrap());
        assert_eq!((stream, code), (7, ErrorCode::UnexpectedType));
        ping_pong(raw, 42).await;
    }
    assert_eq!(server.stats().bad_frames, 6);
}

#[tokio::test]
async fn oversized_messages_are_refused_and_the_connection_stays_usable() {
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.limits.max_message_bytes = 4096;
    let server = start(config).await;
    let big = format!(
        r#"{{"v":1,"type":"rpc_command","payload":"{}"}}"#,
        "x".repeat(10_000)
    );
    let mut tcp = Raw::tcp(server.tcp_addr().unwrap()).await;
    tcp.hello(Some(TOKEN)).await;
    let mut ws = Raw::ws(&server.ws_url(), Some(TOKEN)).await.unwrap();
    ws.hello(None).await;
    for raw in [&mut tcp, &mut ws] {
        raw.send_text(&big).await;
        let (_, code, msg) = error_of(&raw.recv().await.unwrap());
        assert_eq!(code, ErrorCode::MessageTooLarge);
        assert!(msg.contains("at most 4096 bytes"), "{msg}");
        ping_pong(raw, 7).await;
    }
    // Far beyond the limit, newline-delimited JSON still skips without buffering.
    tcp.send_text(&"y".repeat(1 << 20)).await;
    let (_, code, _) = error_of(&tcp.recv().await.unwrap());
    assert_eq!(code, ErrorCode::MessageTooLarge);
    ping_pong(&mut tcp, 8).await;
}

/// The client checks the server's announced limit before sending a request.
#[tokio::test]
async fn client_refuses_requests_over_the_server_limit() {
    let llm = mock(vec![ScriptedResponse::text("never")]).await;
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.limits.max_message_bytes = 4096;
    let server = start(config).await;
    let remote = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let events = collect(
        remote
            .stream(&m, &context(&"z".repeat(10_000)), options())
            .await,
    )
    .await;
    assert_eq!(kinds(&events), ["start", "error"]);
    let AssistantMessageEvent::Error { reason, error } = &events[1] else {
        unreachable!()
    };
    assert_eq!(*reason, StopReason::Error);
    let msg = error.error_message.clone().unwrap();
    assert!(msg.contains("at most 4096 bytes"), "{msg}");
    assert_eq!(server.stats().streams_started, 0);
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn unsupported_version_and_missing_hello_close_the_connection() {
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.limits.hello_timeout = Duration::from_millis(200);
    let server = start(config).await;
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    raw.send_text(r#"{"v":2,"type":"hello","payload":{}}"#)
        .await;
    let (_, code, msg) = error_of(&raw.recv().await.unwrap());
    assert_eq!(code, ErrorCode::UnsupportedVersion);
    assert!(msg.contains("version 1"), "{msg}");
    assert!(raw.recv().await.is_none());
    // A first frame that is not a hello.
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    raw.send(Envelope::new(0, Body::Ping(Ping::default())))
        .await;
    let (_, code, _) = error_of(&raw.recv().await.unwrap());
    assert_eq!(code, ErrorCode::HelloRequired);
    assert!(raw.recv().await.is_none());
    // Silence.
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    let (_, code, _) = error_of(&raw.recv().await.unwrap());
    assert_eq!(code, ErrorCode::HelloRequired);
    assert!(raw.recv().await.is_none());
    // After the handshake, a newer version is refused and the connection ends.
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    raw.hello(Some(TOKEN)).await;
    raw.send_text(r#"{"v":2,"type":"ping"}"#).await;
    let (_, code, _) = error_of(&raw.recv().await.unwrap());
    assert_eq!(code, ErrorCode::UnsupportedVersion);
    assert!(raw.recv().await.is_none());
}

#[tokio::test]
async fn unsafe_server_configurations_are_refused() {
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.bind = "0.0.0.0:0".parse().unwrap();
    let err = serve(config).await.unwrap_err();
    assert!(matches!(err, ServeError::NotLoopback(_)), "{err}");
    assert!(err.to_string().contains("SSH tunnel"));
    let err = serve(ServerConfig::ephemeral("short")).await.unwrap_err();
    assert!(matches!(err, ServeError::WeakToken), "{err}");
}
