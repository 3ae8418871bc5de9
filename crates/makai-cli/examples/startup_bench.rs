//! Startup benchmark of the `makai` binary.
//!
//! Measures (a) `makai --version` wall time and (b) the time from spawning
//! `makai -p` to the first request reaching a scripted server on 127.0.0.1
//! (target: under 20 ms with a release build).
//!
//! ```text
//! cargo build --release -p makai-cli
//! cargo run --release -p makai-cli --example startup_bench -- [RUNS]
//! ```
//!
//! The binary is `$MAKAI_BIN`, else `target/release/makai`, else `target/debug/makai`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use makai_mockllm::{MockServer, Responder, Scenario, ScriptedResponse};

fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MAKAI_BIN") {
        return Some(PathBuf::from(p));
    }
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("makai"))
        .find(|p| p.is_file())
}

fn stats(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = v[v.len() / 2];
    let p90 = v[(v.len() * 9 / 10).min(v.len() - 1)];
    println!(
        "{label:<32} min {:>7.2} ms   median {:>7.2} ms   p90 {:>7.2} ms   ({} runs)",
        ms(v[0]),
        ms(median),
        ms(p90),
        v.len()
    );
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    let Some(bin) = binary() else {
        eprintln!(
            "no makai binary found: build it (cargo build --release -p makai-cli) or set MAKAI_BIN"
        );
        std::process::exit(1);
    };
    println!("binary: {}", bin.display());
    let home = match tempfile::tempdir() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("cannot create a temp dir: {e}");
            std::process::exit(1);
        }
    };

    let mut version = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let ok = Command::new(&bin)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("makai --version failed");
            std::process::exit(1);
        }
        version.push(t.elapsed());
    }
    stats("makai --version", version);

    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            std::process::exit(1);
        }
    };
    // The responder stamps the moment the request arrives.
    let arrived: Arc<Mutex<Option<Instant>>> = Arc::default();
    let stamp = arrived.clone();
    let responder: Responder = Arc::new(move |_req| {
        stamp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Instant::now);
        ScriptedResponse::text("ok")
    });
    let server = match rt.block_on(MockServer::start(Scenario::from_responder(responder))) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the scripted server: {e}");
            std::process::exit(1);
        }
    };
    let mut first_request = Vec::new();
    let mut total = Vec::new();
    for _ in 0..runs {
        *arrived.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let t = Instant::now();
        let status = Command::new(&bin)
            .args(["-p", "--no-session", "--no-tools", "--base-url"])
            .arg(server.base_url_v1())
            .args(["--api", "openai-completions", "--model", "mock-model", "hi"])
            .env("MAKAI_HOME", home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status();
        let done = t.elapsed();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("makai -p against the scripted server failed");
            std::process::exit(1);
        }
        if let Some(at) = *arrived.lock().unwrap_or_else(|e| e.into_inner()) {
            first_request.push(at.duration_since(t));
        }
        total.push(done);
    }
    stats("spawn -> first request", first_request);
    stats("spawn -> exit (whole run)", total);
}
