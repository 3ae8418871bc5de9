//! A `SessionHandler` whose sessions two servers share (what `makai serve
//! --store postgres://...` does through PostgreSQL; here an in-memory log):
//! a client that loses one server says `hello` to the other with its id,
//! keeps it, and resumes its subscription at the next sequence number, none
//! lost or repeated; ids and streams the handler does not know are refused
//! as before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use futures::StreamExt;
use futures::stream::BoxStream;
use makai_protocol::payload::{Hello, Resume};
use makai_protocol::{Body, Envelope, ErrorCode, Refusal, ServerConfig, SessionHandler};
use serde_json::{Value, json};
use tokio::sync::watch;

/// What the servers share: one event log, the clients and where each of
/// their subscriptions started.
#[derive(Default)]
struct Log {
    events: Mutex<Vec<Value>>,
    subscriptions: Mutex<HashMap<(String, u64), usize>>,
    clients: Mutex<HashSet<String>>,
    len: Mutex<Option<watch::Sender<usize>>>,
}

impl Log {
    fn push(&self, event: Value) {
        let n = {
            let mut events = self.events.lock().unwrap();
            events.push(event);
            events.len()
        };
        if let Some(tx) = &*self.len.lock().unwrap() {
            tx.send_replace(n);
        }
    }

    fn follow(self: &Arc<Self>, after: usize) -> BoxStream<'static, Value> {
        let rx = self
            .len
            .lock()
            .unwrap()
            .get_or_insert_with(|| watch::channel(0).0)
            .subscribe();
        let log = self.clone();
        futures::stream::unfold((log, after, rx), |(log, pos, mut rx)| async move {
            loop {
                let next = log.events.lock().unwrap().get(pos).cloned();
                if let Some(ev) = next {
                    return Some((ev, (log, pos + 1, rx)));
                }
                rx.changed().await.ok()?;
            }
        })
        .boxed()
    }
}

struct Shared(Arc<Log>);

#[async_trait]
impl SessionHandler for Shared {
    type Command = Value;
    type Response = Value;
    type Event = Value;

    fn parse_command(&self, payload: &str) -> Result<Value, Value> {
        serde_json::from_str(payload).map_err(|e| json!({"error": e.to_string()}))
    }

    async fn handle_command(&self, _: Value) -> Value {
        json!({"error": "no client"})
    }

    async fn handle_command_from(&self, client: &str, _: Value) -> Value {
        json!({"client": client})
    }

    fn subscribe(&self) -> BoxStream<'static, Value> {
        futures::stream::empty().boxed()
    }

    async fn subscribe_from(
        &self,
        client: &str,
        stream: u64,
    ) -> Result<BoxStream<'static, Value>, Refusal> {
        let start = self.0.events.lock().unwrap().len();
        self.0.clients.lock().unwrap().insert(client.to_string());
        self.0
            .subscriptions
            .lock()
            .unwrap()
            .insert((client.to_string(), stream), start);
        Ok(self.0.follow(start))
    }

    async fn knows_client(&self, client: &str) -> bool {
        self.0.clients.lock().unwrap().contains(client)
    }

    async fn resume_subscription(
        &self,
        client: &str,
        stream: u64,
        last_seq: u64,
    ) -> Option<Result<BoxStream<'static, Value>, Refusal>> {
        let start = *self
            .0
            .subscriptions
            .lock()
            .unwrap()
            .get(&(client.to_string(), stream))?;
        Some(Ok(self.0.follow(start + last_seq as usize)))
    }
}

async fn next_event(raw: &mut Raw) -> (u64, Value) {
    loop {
        let env = raw.recv().await.expect("the connection is open");
        if let Body::AgentEvent(json) = &env.body {
            return (env.seq, json.decode().unwrap());
        }
    }
}

async fn hello(raw: &mut Raw, session: Option<&str>) -> (String, bool) {
    let hello = Hello {
        token: Some(TOKEN.into()),
        session: session.map(String::from),
        ..Default::default()
    };
    raw.send(Envelope::new(0, Body::Hello(hello))).await;
    match raw.recv().await.unwrap().body {
        Body::Welcome(w) => (w.session, w.resumed),
        other => panic!("not a welcome: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_resumes_its_subscription_on_another_server_of_the_same_store() {
    let log = Arc::new(Log::default());
    log.push(json!({"n": 0})); // before the subscription: not part of it
    let one =
        start(ServerConfig::ephemeral(TOKEN).with_session(Arc::new(Shared(log.clone())))).await;
    let two =
        start(ServerConfig::ephemeral(TOKEN).with_session(Arc::new(Shared(log.clone())))).await;

    let mut first = Raw::ws(&one.ws_url(), Some(TOKEN)).await.unwrap();
    let (id, resumed) = hello(&mut first, None).await;
    assert!(!resumed);
    first.send(Envelope::new(1, Body::Subscribe)).await;
    eventually("the subscription is recorded", || {
        !log.subscriptions.lock().unwrap().is_empty()
    })
    .await;
    for n in 1..=5 {
        log.push(json!({"n": n}));
    }
    for n in 1..=3u64 {
        assert_eq!(next_event(&mut first).await, (n, json!({"n": n})));
    }
    drop(first); // the first server is lost to this client

    let mut second = Raw::ws(&two.ws_url(), Some(TOKEN)).await.unwrap();
    assert_eq!(hello(&mut second, Some(&id)).await, (id.clone(), true));
    second
        .send(Envelope::new(1, Body::Resume(Resume { last_seq: 3 })))
        .await;
    assert_eq!(next_event(&mut second).await, (4, json!({"n": 4})));
    assert_eq!(next_event(&mut second).await, (5, json!({"n": 5})));
    log.push(json!({"n": 6}));
    assert_eq!(next_event(&mut second).await, (6, json!({"n": 6})));

    // Commands name the same client on either server.
    second
        .send(Envelope::new(
            2,
            Body::RpcCommand(makai_protocol::Json::encode(&json!({})).unwrap()),
        ))
        .await;
    loop {
        let env = second.recv().await.unwrap();
        if let Body::RpcResponse(r) = env.body {
            assert_eq!(r.decode::<Value>().unwrap(), json!({"client": id}));
            break;
        }
    }

    // A stream neither server nor the handler knows is refused as before.
    second
        .send(Envelope::new(9, Body::Resume(Resume { last_seq: 2 })))
        .await;
    loop {
        let env = second.recv().await.unwrap();
        if let Body::Error(e) = env.body {
            assert_eq!((env.stream, e.code), (9, ErrorCode::UnknownStream));
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_the_shared_store_does_not_know_gets_a_new_session() {
    let log = Arc::new(Log::default());
    let server = start(ServerConfig::ephemeral(TOKEN).with_session(Arc::new(Shared(log)))).await;
    let mut raw = Raw::ws(&server.ws_url(), Some(TOKEN)).await.unwrap();
    let (id, resumed) = hello(&mut raw, Some("made-up-client-id")).await;
    assert!(!resumed);
    assert_ne!(id, "made-up-client-id");
}
