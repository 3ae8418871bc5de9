//! Session store benchmark: the latency added per appended entry (p50 / p99)
//! and the entries per second a store sustains, for the JSONL files and
//! PostgreSQL, with 1 and 50 writers (each on its own session, as 50
//! concurrent agent runs are).
//!
//! ```text
//! eval "$(scripts/pg-test.sh start --durable)"
//! MAKAI_BENCH_PG="$MAKAI_TEST_PG" cargo run --release -p makai-store-pg --example store_bench [-- DIR]
//! ```
//!
//! Without `MAKAI_BENCH_PG` a throwaway server is started (`fsync=off`: its
//! synchronous figures then mean nothing). DIR (default: the temp folder)
//! holds the JSONL files. `ENTRIES` (default 4000) entries per configuration.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use makai_ai::UserMessage;
use makai_coding::session::{Durability, JsonlStore, SessionStore};
use makai_store_pg::PgStore;

/// One entry of about the size of an agent's message (500 bytes of text).
fn text(i: usize) -> String {
    format!(
        "Step {i}: the parser must accept trailing commas in lists and maps; {}",
        "keep the existing error messages and their positions. ".repeat(8)
    )
}

/// Appends `total` entries through `writers` threads, each on its own session;
/// returns every append's latency and the wall time.
fn run(
    store: Arc<dyn SessionStore>,
    durability: Durability,
    writers: usize,
    total: usize,
) -> (Vec<Duration>, Duration) {
    let per = total / writers;
    let barrier = Arc::new(Barrier::new(writers + 1));
    let handles: Vec<_> = (0..writers)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut session = store.create("/bench/project");
                session.set_durability(durability);
                // The first append stores the session; not an entry's cost.
                if let Err(e) = session.append_message(UserMessage::text("start")) {
                    panic!("cannot store a session: {e}");
                }
                barrier.wait();
                let mut times = Vec::with_capacity(per);
                for i in 0..per {
                    let t = Instant::now();
                    if let Err(e) = session.append_message(UserMessage::text(text(i))) {
                        panic!("append failed: {e}");
                    }
                    times.push(t.elapsed());
                }
                times
            })
        })
        .collect();
    // Taken before the writers are let go: they may run before this thread does.
    let start = Instant::now();
    barrier.wait();
    let mut all = Vec::with_capacity(total);
    for h in handles {
        match h.join() {
            Ok(times) => all.extend(times),
            Err(_) => panic!("a writer panicked"),
        }
    }
    (all, start.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let total: usize = std::env::var("ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let files = match tempfile::tempdir_in(&dir) {
        Ok(d) => d,
        Err(e) => panic!("cannot create a folder in {}: {e}", dir.display()),
    };
    let _server;
    let url = match std::env::var("MAKAI_BENCH_PG") {
        Ok(url) => url,
        Err(_) => {
            eprintln!("MAKAI_BENCH_PG is not set: starting a throwaway server (fsync off)");
            let server = match makai_store_pg::testing::TestServer::start_private() {
                Ok(s) => s,
                Err(e) => panic!("{e}"),
            };
            let url = match server.create_database() {
                Ok(u) => u,
                Err(e) => panic!("{e}"),
            };
            _server = server;
            url
        }
    };
    let pg: Arc<dyn SessionStore> = match PgStore::connect(&url) {
        Ok(s) => Arc::new(s),
        Err(e) => panic!("{e}"),
    };
    let jsonl: Arc<dyn SessionStore> = Arc::new(JsonlStore::new(files.path()));
    println!(
        "{:<34} {:>7} {:>10} {:>10} {:>12}",
        "store", "writers", "p50", "p99", "entries/s"
    );
    let configs: [(&str, &Arc<dyn SessionStore>, Durability); 4] = [
        ("jsonl, write only", &jsonl, Durability::Flush),
        ("jsonl, fsync", &jsonl, Durability::Fsync),
        ("postgres, asynchronous commit", &pg, Durability::Flush),
        ("postgres, synchronous commit", &pg, Durability::Fsync),
    ];
    for (name, store, durability) in configs {
        for writers in [1, 50] {
            let (mut times, wall) = run((*store).clone(), durability, writers, total);
            times.sort();
            println!(
                "{:<34} {:>7} {:>8.0}us {:>8.0}us {:>12.0}",
                name,
                writers,
                percentile(&times, 0.5).as_secs_f64() * 1e6,
                percentile(&times, 0.99).as_secs_f64() * 1e6,
                times.len() as f64 / wall.as_secs_f64()
            );
        }
    }
}
