//! Dropped connections, resume, the replay window, and the client's
//! sequence checks (gaps and duplicates).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use makai_ai::ProtocolClient;
use makai_ai::{Api, AssistantMessageEvent};
use makai_mockllm::ScriptedResponse;
use makai_protocol::payload::{Ack, Resume, StreamRequest, WireOptions};
use makai_protocol::{Body, Envelope, ErrorCode, ServerConfig};

fn long_answer(words: usize, delay_ms: u64) -> ScriptedResponse {
    let text: Vec<String> = (0..words).map(|i| format!("w{i}")).collect();
    ScriptedResponse::text(text.join(" "))
        .chunk_size(3)
        .delay(delay_ms)
}

/// The client's socket dies three times mid-stream; the consumer still sees
/// exactly the events the provider produced on the server: none lost, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_drop_mid_stream_loses_and_duplicates_nothing() {
    let llm = mock(vec![long_answer(400, 1), long_answer(300, 1)]).await;
    let tap = TapClient::default();
    let server = start(ServerConfig::ephemeral(TOKEN).with_client(Arc::new(tap.clone()))).await;
    let remote = client(&server.ws_url()).await;
    let m = model(&llm, Api::OpenAiCompletions);
    let mut a = remote.stream(&m, &context("a"), options()).await;
    let mut b = remote.stream(&m, &context("b"), options()).await;
    let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
    for kill_after in [40, 120, 250] {
        while got_a.len() < kill_after {
            got_a.push(a.next().await.expect("stream a goes on"));
            if let Some(ev) = b.next().await {
                got_b.push(ev);
            }
        }
        remote.kill_connection();
    }
    got_a.extend(
        tokio::time::timeout(WAIT, a.collect::<Vec<_>>())
            .await
            .unwrap(),
    );
    got_b.extend(
        tokio::time::timeout(WAIT, b.collect::<Vec<_>>())
            .await
            .unwrap(),
    );
    // The order of the two calls on the server is not fixed: match by content.
    let (first, second) = (tap.events(0), tap.events(1));
    let (want_a, want_b) = if first.len() == got_a.len() {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(got_a, want_a);
    assert_eq!(got_b, want_b);
    assert!(matches!(
        got_a.last(),
        Some(AssistantMessageEvent::Done { .. })
    ));
    let stats = remote.stats();
    assert!(stats.reconnects >= 3, "{stats:?}");
    assert!(stats.resumed_streams >= 3, "{stats:?}");
    assert_eq!(
        stats.duplicates, 0,
        "the server replays only what was not received"
    );
    eventually("streams forgotten", || server.stats().streams == 0).await;
}

/// The server drops every connection mid-stream; the client reconnects and resumes.
#[tokio::test]
async fn server_side_drop_mid_stream_resumes() {
    let llm = mock(vec![long_answer(300, 1)]).await;
    let tap = TapClient::default();
    let server = start(ServerConfig::ephemeral(TOKEN).with_client(Arc::new(tap.clone()))).await;
    let remote = client(&server.tcp_url().unwrap()).await;
    let m = model(&llm, Api::AnthropicMessages);
    let mut s = remote.stream(&m, &context("a"), options()).await;
    let mut got = Vec::new();
    while got.len() < 50 {
        got.push(s.next().await.unwrap());
    }
    server.kill_connections();
    got.extend(
        tokio::time::timeout(WAIT, s.collect::<Vec<_>>())
            .await
            .unwrap(),
    );
    assert_eq!(got, tap.events(0));
    assert!(remote.stats().reconnects >= 1);
}

fn request(llm_url: String, text: &str) -> Body {
    Body::StreamRequest(Box::new(StreamRequest {
        model: model_for(llm_url, Api::OpenAiCompletions),
        context: context(text),
        options: WireOptions::default(),
    }))
}

/// A raw client that acknowledged messages cannot resume before them: the
/// server says clearly that the gap is too old. Resuming at the ack works.
#[tokio::test]
async fn resume_before_the_replay_window_is_refused_clearly() {
    let llm = mock(vec![long_answer(200, 2)]).await;
    let server = start(ServerConfig::ephemeral(TOKEN)).await;
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    let Body::Welcome(welcome) = raw.hello(Some(TOKEN)).await.body else {
        panic!("no welcome")
    };
    raw.send(Envelope::new(9, request(llm.base_url_v1(), "x")))
        .await;
    let mut last = 0;
    while last < 10 {
        let env = raw.recv().await.unwrap();
        assert_eq!(env.stream, 9);
        assert_eq!(env.seq, last + 1, "in order, no holes");
        last = env.seq;
    }
    raw.send(Envelope::new(9, Body::Ack(Ack { seq: 8 }))).await;
    drop(raw);
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    let hello = makai_protocol::payload::Hello {
        token: Some(TOKEN.into()),
        session: Some(welcome.session.clone()),
        client: None,
    };
    raw.send(Envelope::new(0, Body::Hello(hello))).await;
    let Body::Welcome(w) = raw.recv().await.unwrap().body else {
        panic!("no welcome")
    };
    assert!(w.resumed && w.session == welcome.session);
    raw.send(Envelope::new(9, Body::Resume(Resume { last_seq: 3 })))
        .await;
    let env = raw.recv().await.unwrap();
    let Body::Error(e) = env.body else {
        panic!("expected an error, got {env:?}")
    };
    assert_eq!((env.stream, e.code), (9, ErrorCode::ResumeGapTooOld));
    assert!(
        e.message.contains("messages 4..8 are gone"),
        "{}",
        e.message
    );
    // Resuming right after the ack replays 9, 10, ... in order.
    raw.send(Envelope::new(9, Body::Resume(Resume { last_seq: 8 })))
        .await;
    for want in 9..30 {
        assert_eq!(raw.recv().await.unwrap().seq, want);
    }
    // An unknown stream cannot be resumed.
    raw.send(Envelope::new(77, Body::Resume(Resume { last_seq: 0 })))
        .await;
    loop {
        let env = raw.recv().await.unwrap();
        if env.stream == 77 {
            let Body::Error(e) = env.body else {
                panic!("{env:?}")
            };
            assert_eq!(e.code, ErrorCode::UnknownStream);
            break;
        }
    }
}

/// A stream whose client never comes back is cancelled after the detach
/// timeout, which stops the provider request (its HTTP connection closes).
#[tokio::test]
async fn abandoned_stream_expires_and_stops_the_provider_request() {
    // About 30 s of answer if nobody stops it.
    let llm = mock(vec![long_answer(2000, 5)]).await;
    let proxy = Proxy::start(llm.addr()).await;
    let mut config = ServerConfig::ephemeral(TOKEN);
    config.limits.detach_timeout = Duration::from_millis(200);
    let server = start(config).await;
    let mut raw = Raw::tcp(server.tcp_addr().unwrap()).await;
    raw.hello(Some(TOKEN)).await;
    raw.send(Envelope::new(1, request(proxy.base_url_v1(), "x")))
        .await;
    raw.recv().await.unwrap();
    let started = std::time::Instant::now();
    drop(raw);
    eventually("the stream expired", || server.stats().streams_expired == 1).await;
    eventually("the provider connection closed", || {
        proxy.open.load(std::sync::atomic::Ordering::SeqCst) == 0
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(proxy.opened.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(server.stats().streams, 0);
}

/// A hand-written server that sends a duplicate and skips a message: the
/// client drops the duplicate, asks to resume at the hole and delivers every
/// event exactly once, in order.
#[tokio::test]
async fn client_drops_duplicates_and_resumes_at_gaps() {
    use makai_protocol::payload::{EndReason, StreamEnd, Welcome, WireLimits};
    use makai_protocol::transport::Transport;
    use makai_protocol::transport::ndjson::NdjsonTransport;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let (r, w) = sock.into_split();
        let t: Box<dyn Transport> = Box::new(NdjsonTransport::new(r, w, 1 << 20));
        let (mut tx, rx) = t.split();
        let mut raw = Raw {
            sender: tx,
            receiver: rx,
        };
        let hello = raw.recv().await.unwrap();
        assert!(matches!(hello.body, Body::Hello(_)));
        let welcome = Welcome {
            session: "s".into(),
            resumed: false,
            server: "fake".into(),
            limits: WireLimits {
                max_message_bytes: 1 << 20,
                replay_capacity: 16,
                send_window: 16,
            },
        };
        raw.send(Envelope::new(0, Body::Welcome(welcome))).await;
        let req = raw.recv().await.unwrap();
        let id = req.stream;
        let events = [
            AssistantMessageEvent::Start,
            AssistantMessageEvent::TextStart { content_index: 0 },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "a".into(),
            },
            AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "b".into(),
            },
            AssistantMessageEvent::TextEnd {
                content_index: 0,
                content: "ab".into(),
            },
        ];
        let ev = |seq: u64| {
            Envelope::sequenced(
                id,
                seq,
                Body::Event(Box::new(events[seq as usize - 1].clone())),
            )
        };
        raw.send(ev(1)).await;
        raw.send(ev(2)).await;
        raw.send(ev(2)).await; // duplicate
        raw.send(ev(4)).await; // hole at 3
        let resume = raw.recv().await.unwrap();
        assert_eq!(
            (resume.stream, resume.body.clone()),
            (id, Body::Resume(Resume { last_seq: 2 }))
        );
        raw.send(ev(3)).await;
        raw.send(ev(4)).await;
        raw.send(ev(5)).await;
        raw.send(Envelope::sequenced(
            id,
            6,
            Body::StreamEnd(StreamEnd {
                reason: EndReason::Failed,
                message: Some("fake server gave up".into()),
            }),
        ))
        .await;
        tx = raw.sender;
        // Keep the socket open until the client acknowledges the end.
        let mut rx = raw.receiver;
        while let Ok(Some(_)) = rx.recv().await {}
        drop(tx);
    });
    let remote = client(&format!("tcp://{addr}")).await;
    let m = model_for("http://127.0.0.1:9/v1".into(), Api::OpenAiCompletions);
    let got = collect(remote.stream(&m, &context("x"), options()).await).await;
    let k = kinds(&got);
    assert_eq!(
        k,
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "error"
        ]
    );
    let AssistantMessageEvent::Error { error, .. } = got.last().unwrap() else {
        unreachable!()
    };
    // The synthesized error keeps the text received so far and says why.
    assert_eq!(error.text(), "ab");
    assert_eq!(error.error_message.as_deref(), Some("fake server gave up"));
    let stats = remote.stats();
    assert_eq!((stats.duplicates, stats.gaps), (1, 1), "{stats:?}");
    drop(remote);
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
}
