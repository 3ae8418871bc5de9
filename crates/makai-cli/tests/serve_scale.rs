//! Stateless `makai serve` instances sharing their sessions through a real
//! PostgreSQL (`--store postgres://...`), through the built binary: three
//! instances behind a round-robin TCP proxy the test runs, clients driven
//! against the scripted LLM server, one instance killed with SIGKILL mid-load
//! and restarted. Afterwards every session's entries in the database equal
//! what its client saw on its event stream (none lost, none repeated, no
//! fork), no prompt ran twice, and every interrupted session went on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use makai_coding::SessionStore;
use makai_mockllm::{Scenario, ScriptedResponse};
use makai_protocol::{ClientConfig, RemoteProtocolClient};
use makai_store_pg::testing::database_or_skip;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const ANSWER: &str = "the scripted model answers this question in several small pieces";

/// One `makai serve --store ...` process.
struct Instance {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Instance {
    /// An instance whose leases last `ttl` seconds.
    fn start(
        env: &Env,
        token_file: &Path,
        url: &str,
        extra: &[String],
        name: &str,
        ttl: &str,
    ) -> Instance {
        let mut child = env
            .cmd()
            .args([
                "serve",
                "--port",
                "0",
                "--lease-ttl",
                ttl,
                "--instance",
                name,
            ])
            .arg("--token-file")
            .arg(token_file)
            .arg("--store")
            .arg(url)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        let trace = std::env::var_os("MAKAI_SCALE_TRACE").is_some();
        let label = name.to_string();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if trace {
                    eprint!("[{label}] {}", String::from_utf8_lossy(&buf[..n]));
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("ws://")
            .and_then(|r| r.strip_suffix('/'))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "instance {name}: first stdout line is not the URL: {line:?}; stderr: {}",
                    stderr.lock().unwrap()
                )
            });
        // Keeps reading stdout so the process never blocks on it.
        std::thread::spawn(move || for _ in out.lines() {});
        Instance {
            child,
            addr,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A round-robin TCP proxy over the instances (a dead one is skipped).
struct Proxy {
    addr: SocketAddr,
    backends: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Proxy {
    async fn start(backends: Vec<SocketAddr>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let backends = Arc::new(Mutex::new(backends));
        let list = backends.clone();
        let next = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let list = list.lock().unwrap().clone();
                let first = next.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    for k in 0..list.len() {
                        let backend = list[(first + k) % list.len()];
                        if let Ok(mut outbound) = TcpStream::connect(backend).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Proxy { addr, backends }
    }

    fn replace(&self, old: SocketAddr, new: SocketAddr) {
        for b in self.backends.lock().unwrap().iter_mut() {
            if *b == old {
                *b = new;
            }
        }
    }

    fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }
}

/// What one client saw.
#[derive(Debug, Default)]
struct Seen {
    /// `entry_appended` entries, in order: (id, parentId).
    entries: Vec<(String, Option<String>)>,
    /// `agent_settled` and `run_interrupted` events so far.
    ends: u64,
    interrupted: u64,
    /// The last end was an interruption (the run did not finish).
    last_end_interrupted: bool,
    failed_queued: Vec<Value>,
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A command's response, sent again while the connection is being replaced.
async fn call(client: &RemoteProtocolClient, command: &Value) -> Value {
    for _ in 0..100 {
        match client.rpc(command).await {
            Ok(json) => return json.decode::<Value>().unwrap(),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    panic!("{command} got no response in 20 s");
}

async fn messages(client: &RemoteProtocolClient) -> Vec<Value> {
    let r = call(client, &json!({"type": "get_messages"})).await;
    assert_eq!(r["success"], true, "{r}");
    r["data"]["messages"].as_array().unwrap().clone()
}

/// The session ends with `text` answered.
fn answered(messages: &[Value], text: &str) -> bool {
    let n = messages.len();
    n >= 2
        && messages[n - 1]["role"] == "assistant"
        && text_of(&messages[n - 1]) == ANSWER
        && messages[n - 2]["role"] == "user"
        && text_of(&messages[n - 2]) == text
}

/// Waits until the client saw more than `before` run ends.
async fn wait_end(ends: &mut watch::Receiver<u64>, before: u64, what: &str) {
    tokio::time::timeout(Duration::from_secs(60), ends.wait_for(|n| *n > before))
        .await
        .unwrap_or_else(|_| panic!("{what}: no agent_settled / run_interrupted in 60 s"))
        .unwrap();
}

/// One client: `turns` prompts, each answered (an interrupted one continued).
/// Returns its session id and what it saw.
async fn drive(
    url: String,
    token: String,
    index: usize,
    turns: usize,
) -> (String, Arc<Mutex<Seen>>) {
    let config = ClientConfig {
        reconnect_timeout: Duration::from_secs(60),
        ..ClientConfig::default()
    };
    let client = RemoteProtocolClient::connect_with(&url, &token, config)
        .await
        .unwrap();
    let mut events = client.subscribe().await.unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (ends_tx, mut ends) = watch::channel(0u64);
    let sink = seen.clone();
    tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            let ev: Value = match ev {
                Ok(ev) => ev.decode().unwrap(),
                Err(e) => panic!("client {index}: the event stream failed: {e}"),
            };
            if std::env::var_os("MAKAI_SCALE_TRACE").is_some() {
                eprintln!(
                    "client {index}: {}",
                    &ev.to_string()[..ev.to_string().len().min(200)]
                );
            }
            let mut s = sink.lock().unwrap();
            match ev["type"].as_str().unwrap_or("") {
                "entry_appended" => s.entries.push((
                    ev["entry"]["id"].as_str().unwrap().to_string(),
                    ev["entry"]["parentId"].as_str().map(str::to_string),
                )),
                "agent_settled" => {
                    s.ends += 1;
                    // A run stopped by its instance (its lease lapsed) ends aborted.
                    s.last_end_interrupted = ev["aborted"] == true;
                    s.interrupted += u64::from(s.last_end_interrupted);
                }
                "run_interrupted" => {
                    s.ends += 1;
                    s.interrupted += 1;
                    s.last_end_interrupted = true;
                }
                "response" => s.failed_queued.push(ev),
                _ => {}
            }
            ends_tx.send_replace(s.ends);
        }
        panic!("client {index}: the event stream ended");
    });
    for turn in 0..turns {
        // Each attempt has its own text: a text stored twice is a prompt the
        // servers ran twice. Attempts after the first queue as follow-ups, in
        // case the one before is still running after all.
        let mut attempt = 0;
        'turn: loop {
            let text = format!("client {index} question {turn} attempt {attempt}");
            attempt += 1;
            let mut before = *ends.borrow();
            let prompt = if attempt == 1 {
                json!({"type": "prompt", "message": text})
            } else {
                json!({"type": "prompt", "message": text, "streamingBehavior": "followUp"})
            };
            match client.rpc(&prompt).await {
                Ok(r) => {
                    let r: Value = r.decode().unwrap();
                    assert_eq!(r["success"], true, "{text}: {r}");
                }
                // The connection went mid-command: it may still run (from
                // the inbox, once the dead instance's lease expired).
                Err(_) => {
                    let mut arrived = false;
                    for _ in 0..40 {
                        arrived = messages(&client)
                            .await
                            .iter()
                            .any(|m| m["role"] == "user" && text_of(m) == text);
                        if arrived {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    if !arrived {
                        continue 'turn;
                    }
                }
            }
            loop {
                wait_end(&mut ends, before, &text).await;
                before = *ends.borrow();
                if answered(&messages(&client).await, &text) {
                    break 'turn;
                }
                // Interrupted: the session goes on with the next prompt.
                if seen.lock().unwrap().last_end_interrupted {
                    continue 'turn;
                }
            }
        }
    }
    let state = call(&client, &json!({"type": "get_state"})).await;
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    (id, seen)
}

fn mock() -> Mock {
    Mock::start(
        Scenario::new().with_fallback(ScriptedResponse::text(ANSWER).chunk_size(4).delay(40)),
    )
}

#[test]
fn three_instances_survive_a_kill_9_under_load_with_no_entry_lost_repeated_or_forked() {
    let Some(url) = database_or_skip("three_instances_survive_a_kill_9") else {
        return;
    };
    let clients: usize = std::env::var("MAKAI_SCALE_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let env = Env::new();
    let mock = mock();
    let token_file: PathBuf = env.home.path().join("serve-token");
    let mut instances: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .map(|n| Instance::start(&env, &token_file, &url, &mock.args(), n, "3"))
        .collect();
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(async {
        let proxy = Proxy::start(instances.iter().map(|i| i.addr).collect()).await;
        let tasks: Vec<_> = (0..clients)
            .map(|i| tokio::spawn(drive(proxy.url(), token.clone(), i, 2)))
            .collect();
        // Mid-load, while it runs sessions: the first instance dies at once,
        // then comes back.
        let store = makai_store_pg::PgStore::connect(&url).unwrap();
        let mut running = 0;
        for _ in 0..600 {
            running = store.leases_of("a").await.unwrap().len();
            if running >= (clients / 10).max(1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(running > 0, "instance a never ran a session");
        let dead = instances[0].addr;
        instances[0].child.kill().unwrap();
        instances[0].child.wait().unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let back = Instance::start(&env, &token_file, &url, &mock.args(), "a2", "3");
        proxy.replace(dead, back.addr);
        instances[0] = back;
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap());
        }
        results
    });

    let store = makai_store_pg::PgStore::connect(&url).unwrap();
    let cwd = env.work().display().to_string();
    let mut interrupted = 0;
    for (id, seen) in &results {
        let seen = seen.lock().unwrap();
        interrupted += seen.interrupted;
        assert!(seen.failed_queued.is_empty(), "{:?}", seen.failed_queued);
        let stored = store.export(&cwd, id).unwrap();
        let ids: Vec<(String, Option<String>)> = stored
            .entries
            .iter()
            .map(|e| (e.id().to_string(), e.parent_id().map(str::to_string)))
            .collect();
        assert_eq!(
            ids, seen.entries,
            "session {id}: the stored entries differ from what its client saw"
        );
        for pair in ids.windows(2) {
            assert_eq!(
                pair[1].1.as_deref(),
                Some(pair[0].0.as_str()),
                "session {id} forked: {ids:?}"
            );
        }
        let mut prompts: Vec<String> = stored
            .lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
            .map(|e| text_of(&e["message"]))
            .collect();
        let n = prompts.len();
        prompts.sort();
        prompts.dedup();
        assert_eq!(prompts.len(), n, "session {id}: a prompt ran twice");
    }
    assert!(
        interrupted > 0,
        "the kill interrupted no run, so it tested nothing; stderr of the killed instance's successor:\n{}",
        instances[0].stderr()
    );
    mock.server.assert_request_invariants();
}

/// The next event of `kind` (up to 30 s), with the events before it.
async fn until(events: &mut makai_protocol::SessionEvents, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind} in 30 s; seen {seen:#?}"))
            .unwrap_or_else(|| panic!("the stream ended before {kind}"))
            .unwrap()
            .decode::<Value>()
            .unwrap();
        let done = next["type"] == kind;
        seen.push(next);
        if done {
            return seen;
        }
    }
}

fn entry_ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| e["entry"]["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_session_runs_on_one_instance_while_clients_of_another_see_it_live_and_queue_work_there() {
    let Some(url) = database_or_skip("a_session_runs_on_one_instance") else {
        return;
    };
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(
                ScriptedResponse::text("a long answer that streams slowly to the end")
                    .chunk_size(2)
                    .delay(300),
            )
            .with_fallback(ScriptedResponse::text(ANSWER)),
    );
    let token_file = env.home.path().join("serve-token");
    let a = Instance::start(&env, &token_file, &url, &mock.args(), "a", "60");
    let b = Instance::start(&env, &token_file, &url, &mock.args(), "b", "60");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    let store = makai_store_pg::PgStore::connect(&url).unwrap();
    let rt = runtime();
    let mut a = Some(a);
    rt.block_on(async {
        let on_a = RemoteProtocolClient::connect(&format!("ws://{}/", a.as_ref().unwrap().addr), &token)
            .await
            .unwrap();
        let on_b = RemoteProtocolClient::connect(&format!("ws://{}/", b.addr), &token)
            .await
            .unwrap();
        let state = call(&on_a, &json!({"type": "get_state"})).await;
        let id = state["data"]["sessionId"].as_str().unwrap().to_string();
        let r = call(&on_b, &json!({"type": "switch_session", "sessionPath": id})).await;
        assert_eq!(r["success"], true, "{r}");
        let mut events_a = on_a.subscribe().await.unwrap();
        let mut events_b = on_b.subscribe().await.unwrap();

        let r = call(&on_a, &json!({"type": "prompt", "message": "long question"})).await;
        assert_eq!(r["data"]["disposition"], "started", "{r}");
        // Live on b while a runs it.
        let seen_b = until(&mut events_b, "message_update").await;
        assert_eq!(store.lease_holder(&id).await.unwrap().as_deref(), Some("a"));
        let r = call(&on_b, &json!({"type": "set_thinking_level", "level": "low"})).await;
        assert_eq!(r["success"], false, "{r}");
        assert!(
            r["error"].as_str().unwrap().contains("running on makai instance a"),
            "{r}"
        );
        let r = call(
            &on_b,
            &json!({"type": "prompt", "message": "follow-up question", "streamingBehavior": "followUp"}),
        )
        .await;
        assert_eq!(r["data"]["disposition"], "queued", "{r}");
        let r = call(&on_b, &json!({"type": "prompt", "message": "no behavior given"})).await;
        assert_eq!(r["data"]["disposition"], "queued", "{r}");

        let all_a = until(&mut events_a, "agent_settled").await;
        let mut all_b = seen_b;
        all_b.extend(until(&mut events_b, "agent_settled").await);
        // The prompt without streamingBehavior failed where the session runs, as pi's does.
        let refused: Vec<&Value> = all_b.iter().filter(|e| e["type"] == "response").collect();
        assert_eq!(refused.len(), 1, "{refused:#?}");
        assert!(refused[0]["error"].as_str().unwrap().contains("already processing"));
        assert_eq!(entry_ids(&all_a), entry_ids(&all_b), "both clients saw the same entries");

        let messages = call(&on_b, &json!({"type": "get_messages"})).await;
        let texts: Vec<(String, String)> = messages["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].as_str().unwrap().to_string(), text_of(m)))
            .collect();
        assert_eq!(
            texts,
            [
                ("user".to_string(), "long question".to_string()),
                ("assistant".into(), "a long answer that streams slowly to the end".into()),
                ("user".into(), "follow-up question".into()),
                ("assistant".into(), ANSWER.into()),
            ]
        );

        // A graceful stop gives the lease back: b runs the next prompt at once.
        let mut stopping = a.take().unwrap();
        std::process::Command::new("kill")
            .args(["-TERM", &stopping.child.id().to_string()])
            .status()
            .unwrap();
        let status = stopping.child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{}", stopping.stderr());
        assert_eq!(store.lease_holder(&id).await.unwrap(), None);
        let r = call(&on_b, &json!({"type": "prompt", "message": "after a stopped"})).await;
        assert_eq!(r["data"]["disposition"], "started", "{r}");
        until(&mut events_b, "agent_settled").await;
        let last = call(&on_b, &json!({"type": "get_last_assistant_text"})).await;
        assert_eq!(last["data"]["text"], ANSWER);
    });
    mock.server.assert_request_invariants();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
