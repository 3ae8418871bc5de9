//! The floor under the agent-loop benchmark's streaming figures: what reading
//! the same streams costs a client that does nothing with them.
//!
//! ```text
//! makai-mockllm --port 18181 --no-record --bench-tokens 200 --bench-tool-rounds 5 --bench-stream &
//! MOCK_URL=http://127.0.0.1:18181/v1 READER=blocking /usr/bin/time -f "%U %S" \
//!     target/release-lto/examples/read_floor
//! ```
//!
//! Sends `RUNS` x 6 (the loop bench's responses: `RUNS` runs, 5 tool rounds)
//! streaming requests of `API` (`openai-completions`, the default, or
//! `anthropic-messages`), `CONCURRENCY` connections at a time, each request
//! after the previous one on its keep-alive connection, and reads each
//! response to its end, counting the bytes and the SSE events and parsing
//! nothing. `READER=tokio` (the default) reads through Tokio's current-thread
//! runtime, as an async client does (a read that finds nothing waits in
//! `epoll_wait`); `READER=blocking` reads with blocking `read` calls, a thread
//! per connection. The CPU time of this process over the token events is the
//! part of the per-event cost that no client on this machine and kernel
//! avoids: the kernel's work per received segment, the wake-up, the copy.
//!
//! Prints one line: `peer=floor reader=... responses=... events=... reads=...
//! bytes=... verified=ok` (verified: every response ended with its last chunk).

use std::io::{Read, Write};
use std::process::ExitCode;

/// The request every response answers (the bench script's first round), and
/// its path under the base URL.
fn body_and_path(api: &str) -> Result<(&'static str, &'static str), String> {
    match api {
        "openai-completions" => Ok((
            r#"{"model":"m","messages":[{"role":"user","content":"Run the benchmark script."}],"stream":true}"#,
            "chat/completions",
        )),
        "anthropic-messages" => Ok((
            r#"{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"Run the benchmark script."}],"stream":true}"#,
            "messages",
        )),
        other => Err(format!(
            "API={other:?}: use openai-completions or anthropic-messages"
        )),
    }
}

/// What reading saw.
#[derive(Default, Clone, Copy)]
struct Counts {
    events: u64,
    reads: u64,
    bytes: u64,
}

/// The state of one response being read: its head, then its body, chunked
/// (streamed: up to the last chunk) or of a stated length (replayed).
struct Response {
    head: Vec<u8>,
    head_done: bool,
    /// Body bytes still to come, when the head gave a `content-length`.
    remaining: Option<usize>,
    /// The body's last bytes (enough to see the last chunk).
    tail: Vec<u8>,
    /// The last byte seen was a newline (an SSE event ends at a blank line).
    newline: bool,
}

impl Response {
    fn new() -> Self {
        Response {
            head: Vec::new(),
            head_done: false,
            remaining: None,
            tail: Vec::new(),
            newline: false,
        }
    }

    /// Takes one read's bytes; true once the response ended. Counts the SSE
    /// events whose blank line arrived in these bytes.
    fn feed(&mut self, bytes: &[u8], counts: &mut Counts) -> bool {
        if !self.head_done {
            self.head.extend_from_slice(bytes);
            let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else {
                return false;
            };
            self.head_done = true;
            let body = self.head.split_off(end + 4);
            self.remaining = content_length(&self.head);
            return self.feed_body(&body, counts);
        }
        self.feed_body(bytes, counts)
    }

    fn feed_body(&mut self, bytes: &[u8], counts: &mut Counts) -> bool {
        // Each event is its own chunk, so its blank line is never split by
        // the chunk framing's CRLFs. `memchr` finds the newlines as any SSE
        // client's line splitter does; a loop over every byte cost this
        // client 1,300 instructions per event, more than Tokio's share.
        for i in memchr::memchr_iter(b'\n', bytes) {
            let after_newline = match i.checked_sub(1) {
                Some(before) => bytes[before] == b'\n',
                None => self.newline,
            };
            if after_newline {
                counts.events += 1;
            }
        }
        if let Some(&last) = bytes.last() {
            self.newline = last == b'\n';
        }
        if let Some(remaining) = &mut self.remaining {
            *remaining = remaining.saturating_sub(bytes.len());
            return *remaining == 0;
        }
        self.tail.extend_from_slice(bytes);
        let keep = self.tail.len().saturating_sub(7);
        self.tail.drain(..keep);
        self.tail.ends_with(b"\r\n0\r\n\r\n")
    }
}

/// The `content-length` of a response head, if it has one.
fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.events += other.events;
        self.reads += other.reads;
        self.bytes += other.bytes;
    }
}

/// Where to send what.
struct Target {
    host: String,
    request: Vec<u8>,
}

impl Target {
    fn new(host: &str, path: &str, body: &str) -> Self {
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\nx-api-key: floor\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        Target {
            host: host.to_string(),
            request,
        }
    }
}

/// `responses` requests on one connection, read with blocking reads.
fn blocking(target: &Target, responses: usize) -> Result<Counts, String> {
    let mut socket =
        std::net::TcpStream::connect(&target.host).map_err(|e| format!("connect: {e}"))?;
    socket
        .set_nodelay(true)
        .map_err(|e| format!("nodelay: {e}"))?;
    let mut counts = Counts::default();
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..responses {
        socket
            .write_all(&target.request)
            .map_err(|e| format!("write: {e}"))?;
        let mut response = Response::new();
        loop {
            let n = socket.read(&mut buf).map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            counts.reads += 1;
            counts.bytes += n as u64;
            if response.feed(&buf[..n], &mut counts) {
                break;
            }
        }
    }
    Ok(counts)
}

/// `responses` requests on one connection, read through Tokio.
async fn tokio_connection(target: &Target, responses: usize) -> Result<Counts, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(&target.host)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    socket
        .set_nodelay(true)
        .map_err(|e| format!("nodelay: {e}"))?;
    let mut counts = Counts::default();
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..responses {
        socket
            .write_all(&target.request)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut response = Response::new();
        loop {
            let n = socket
                .read(&mut buf)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            counts.reads += 1;
            counts.bytes += n as u64;
            if response.feed(&buf[..n], &mut counts) {
                break;
            }
        }
    }
    Ok(counts)
}

/// The responses split over `concurrency` connections: `(connection, its share)`.
fn shares(responses: usize, concurrency: usize) -> Vec<usize> {
    (0..concurrency)
        .map(|i| responses / concurrency + usize::from(i < responses % concurrency))
        .filter(|n| *n > 0)
        .collect()
}

fn run(
    reader: &str,
    target: Target,
    responses: usize,
    concurrency: usize,
) -> Result<Counts, String> {
    let target = std::sync::Arc::new(target);
    let mut total = Counts::default();
    match reader {
        "blocking" => {
            let threads: Vec<_> = shares(responses, concurrency)
                .into_iter()
                .map(|n| {
                    let target = target.clone();
                    std::thread::spawn(move || blocking(&target, n))
                })
                .collect();
            for t in threads {
                total.add(
                    t.join()
                        .map_err(|_| "a reader thread panicked".to_string())??,
                );
            }
        }
        "tokio" => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("runtime: {e}"))?;
            total = runtime.block_on(async {
                let tasks: Vec<_> = shares(responses, concurrency)
                    .into_iter()
                    .map(|n| {
                        let target = target.clone();
                        tokio::spawn(async move { tokio_connection(&target, n).await })
                    })
                    .collect();
                let mut total = Counts::default();
                for t in tasks {
                    total.add(
                        t.await
                            .map_err(|e| format!("a reader task failed: {e}"))??,
                    );
                }
                Ok::<_, String>(total)
            })?;
        }
        other => return Err(format!("READER={other:?}: use tokio or blocking")),
    }
    Ok(total)
}

fn env_num(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

fn main() -> ExitCode {
    match floor() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("read_floor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn floor() -> Result<String, String> {
    let url = std::env::var("MOCK_URL").unwrap_or_else(|_| "http://127.0.0.1:18181/v1".into());
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("MOCK_URL={url:?}: expected http://HOST:PORT/v1"))?;
    let (host, base) = rest.split_once('/').unwrap_or((rest, ""));
    let api = std::env::var("API").unwrap_or_else(|_| "openai-completions".into());
    let (body, endpoint) = body_and_path(api.trim())?;
    let base = base.trim_end_matches('/');
    let path = if base.is_empty() {
        format!("/{endpoint}")
    } else {
        format!("/{base}/{endpoint}")
    };
    let responses = env_num("RUNS", 200)? * 6;
    let concurrency = env_num("CONCURRENCY", 1)?.max(1);
    let reader = std::env::var("READER").unwrap_or_else(|_| "tokio".into());
    let c = run(
        &reader,
        Target::new(host, &path, body),
        responses,
        concurrency,
    )?;
    Ok(format!(
        "peer=floor api={api} reader={reader} responses={responses} concurrency={concurrency} \
         events={} reads={} bytes={} verified=ok",
        c.events, c.reads, c.bytes
    ))
}
