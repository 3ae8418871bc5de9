//! Protocol overhead benchmark: run with
//! `cargo run --release -p makai-protocol --example protocol_bench`.
//!
//! A synthetic provider (no HTTP, no parsing) produces text-delta events on
//! the server, so the figures are the protocol's own cost:
//!
//! 1. Added latency per event: the provider emits one event, waits until the
//!    consumer got it, emits the next (so no event ever queues). The latency
//!    of each event from emission to the consumer is measured through the
//!    in-process client and through the server over WebSocket and TCP; the
//!    report gives the remote p50 / p99 minus the in-process p50 / p99.
//! 2. Throughput: many streams, each producing events as fast as it may,
//!    through the server to one client over one WebSocket connection. Events
//!    per second of wall time, and per second of CPU time of the whole process
//!    (server, client and synthetic provider together: one core's worth).
//!
//! Options: `--events N` (latency samples per transport, default 20000),
//! `--streams S --per-stream E` (throughput, default 200 x 5000).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::{Notify, mpsc};

use makai_ai::ProtocolClient;
use makai_ai::{
    AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Context, Model,
    StopReason, StreamOptions,
};
use makai_protocol::{RemoteProtocolClient, ServerConfig, generate_token, serve};

/// How the synthetic provider paces itself.
#[derive(Clone)]
enum Pace {
    /// Emit, then wait for the consumer's signal.
    LockStep {
        sent: Arc<Mutex<Vec<Instant>>>,
        received: Arc<Notify>,
    },
    /// As fast as the stream accepts, `batch` events per channel message.
    Flood { batch: usize },
}

#[derive(Clone)]
struct Synthetic {
    events: usize,
    pace: Pace,
}

fn delta(i: usize) -> AssistantMessageEvent {
    AssistantMessageEvent::TextDelta {
        content_index: 0,
        delta: format!(" tok{}", i % 1000).into(),
    }
}

fn done() -> AssistantMessageEvent {
    AssistantMessageEvent::Done {
        reason: StopReason::Stop,
        message: Box::new(AssistantMessage {
            api: "synthetic".into(),
            provider: "bench".into(),
            model: "synthetic".into(),
            ..Default::default()
        }),
    }
}

#[async_trait]
impl ProtocolClient for Synthetic {
    async fn stream(
        &self,
        _m: &Model,
        _c: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let (tx, rx) = mpsc::channel(64);
        let me = self.clone();
        tokio::spawn(async move {
            match me.pace {
                Pace::LockStep { sent, received } => {
                    for i in 0..me.events {
                        sent.lock().map(|mut s| s.push(Instant::now())).ok();
                        if tx.send(vec![delta(i)]).await.is_err() {
                            return;
                        }
                        received.notified().await;
                    }
                    let _ = tx.send(vec![done()]).await;
                }
                Pace::Flood { batch } => {
                    let mut i = 0;
                    while i < me.events {
                        let n = batch.min(me.events - i);
                        let chunk: Vec<_> = (i..i + n).map(delta).collect();
                        i += n;
                        if tx.send(chunk).await.is_err() {
                            return;
                        }
                    }
                    let _ = tx.send(vec![done()]).await;
                }
            }
        });
        AssistantMessageEventStream::from_channel(rx, options.cancel)
    }
}

fn model() -> Model {
    Model::custom(
        makai_ai::Api::OpenAiCompletions,
        "bench",
        "synthetic",
        "http://127.0.0.1:9/v1",
    )
}

/// Per-event latencies (µs) of one lock-step stream through `client`.
async fn lockstep_latencies(
    client: &dyn ProtocolClient,
    gen_sent: Arc<Mutex<Vec<Instant>>>,
    received: Arc<Notify>,
    n: usize,
) -> Vec<f64> {
    let mut stream = client
        .stream(&model(), &Context::default(), StreamOptions::default())
        .await;
    let mut recv_at = Vec::with_capacity(n);
    while let Some(ev) = stream.next().await {
        if matches!(ev, AssistantMessageEvent::TextDelta { .. }) {
            recv_at.push(Instant::now());
            received.notify_one();
        }
    }
    let sent = gen_sent.lock().map(|s| s.clone()).unwrap_or_default();
    sent.iter()
        .zip(&recv_at)
        .map(|(s, r)| r.duration_since(*s).as_secs_f64() * 1e6)
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx]
}

struct Lat {
    p50: f64,
    p99: f64,
    max: f64,
}

fn summarize(mut v: Vec<f64>) -> Lat {
    v.sort_by(|a, b| a.total_cmp(b));
    Lat {
        p50: percentile(&v, 0.50),
        p99: percentile(&v, 0.99),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// CPU time of the whole process so far (all threads), from /proc.
fn cpu_time() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn latency_run(samples: usize, token: &str) -> Result<(), Box<dyn std::error::Error>> {
    let sent = Arc::new(Mutex::new(Vec::with_capacity(samples)));
    let received = Arc::new(Notify::new());
    let synthetic = Synthetic {
        events: samples,
        pace: Pace::LockStep {
            sent: sent.clone(),
            received: received.clone(),
        },
    };
    let server =
        serve(ServerConfig::ephemeral(token).with_client(Arc::new(synthetic.clone()))).await?;
    let measure = |label: &'static str, client: Arc<dyn ProtocolClient>| {
        let (sent, received) = (sent.clone(), received.clone());
        async move {
            // Warm-up pass (connection, allocator, caches), then the measured pass.
            let mut all = Vec::new();
            for _ in 0..2 {
                sent.lock().map(|mut s| s.clear()).ok();
                all = lockstep_latencies(client.as_ref(), sent.clone(), received.clone(), samples)
                    .await;
            }
            (label, summarize(all))
        }
    };
    let local = measure("in-process", Arc::new(synthetic.clone())).await;
    let ws = RemoteProtocolClient::connect(&server.ws_url(), token).await?;
    let ws = measure("WebSocket", Arc::new(ws)).await;
    let tcp_url = server.tcp_url().ok_or("no TCP listener")?;
    let tcp = RemoteProtocolClient::connect(&tcp_url, token).await?;
    let tcp = measure("TCP (ndjson)", Arc::new(tcp)).await;
    println!("latency per event, emission -> consumer, {samples} lock-step samples (µs):");
    println!("  {:<14} {:>8} {:>8} {:>8}", "client", "p50", "p99", "max");
    for (label, l) in [&local, &ws, &tcp] {
        println!("  {label:<14} {:>8.1} {:>8.1} {:>8.1}", l.p50, l.p99, l.max);
    }
    for (label, l) in [&ws, &tcp] {
        println!(
            "  added by the protocol over {label}: p50 {:.1} µs, p99 {:.1} µs",
            l.p50 - local.1.p50,
            l.p99 - local.1.p99
        );
    }
    server.shutdown(Duration::from_secs(1)).await;
    Ok(())
}

async fn throughput_run(
    streams: usize,
    per_stream: usize,
    token: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let synthetic = Synthetic {
        events: per_stream,
        pace: Pace::Flood { batch: 16 },
    };
    let mut config = ServerConfig::ephemeral(token).with_client(Arc::new(synthetic));
    config.limits.send_window = arg("--window", config.limits.send_window);
    config.limits.replay_capacity = arg("--replay", config.limits.replay_capacity);
    let server = serve(config).await?;
    let client = RemoteProtocolClient::connect(&server.ws_url(), token).await?;
    let counted = Arc::new(AtomicUsize::new(0));
    // Warm-up.
    client
        .stream(&model(), &Context::default(), StreamOptions::default())
        .await
        .result()
        .await;
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(streams);
    for _ in 0..streams {
        let client = client.clone();
        let counted = counted.clone();
        tasks.push(tokio::spawn(async move {
            let mut s = client
                .stream(&model(), &Context::default(), StreamOptions::default())
                .await;
            let mut n = 0;
            while let Some(_ev) = s.next().await {
                n += 1;
            }
            counted.fetch_add(n, Ordering::Relaxed);
        }));
    }
    for t in tasks {
        t.await?;
    }
    let wall = t0.elapsed();
    let cpu = cpu_time().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
    let events = counted.load(Ordering::Relaxed);
    println!("throughput: {streams} streams x {per_stream} events over one WebSocket connection");
    println!(
        "  {events} events in {:.3} s wall: {:.0} events/s",
        wall.as_secs_f64(),
        events as f64 / wall.as_secs_f64()
    );
    if let Some(cpu) = cpu {
        println!(
            "  process CPU {:.3} s (server + client + provider): {:.0} events per CPU-second (per core)",
            cpu.as_secs_f64(),
            events as f64 / cpu.as_secs_f64()
        );
    }
    server.shutdown(Duration::from_secs(1)).await;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let token = generate_token()?;
        latency_run(arg("--events", 20_000), &token).await?;
        throughput_run(arg("--streams", 200), arg("--per-stream", 5_000), &token).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
