//! RPC mode (`--mode rpc`): pi's JSONL protocol on stdin/stdout.
//!
//! - Commands arrive on stdin, one JSON object per line; records are split on
//!   `\n` only (a trailing `\r` is dropped), so U+2028/U+2029 inside strings are safe.
//! - Every command gets one `{"type":"response","id"?,"command","success","data"?,"error"?}`.
//!   A line that is not JSON gets `command: "parse"`; an unknown command gets
//!   `success: false` naming it; the process carries on.
//! - Events are written as they happen, between responses. Every stdout line
//!   goes through one writer task, so lines never interleave.
//! - The process stays up until stdin closes, then waits for the running work
//!   to finish and exits 0.

mod commands;

pub(crate) use commands::Handler;

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use crate::app::AppSession;

/// What the writer task receives.
#[derive(Debug)]
enum WriterMsg {
    Line(String),
    Close,
}

/// Where finished output goes.
#[derive(Clone)]
enum Sink {
    /// Lines to the stdout writer task.
    Writer(mpsc::UnboundedSender<WriterMsg>),
    /// Values to a callback (the protocol server's session routes them).
    Values(Arc<dyn Fn(Value) + Send + Sync>),
}

/// Sends responses and events: to the stdout writer task in RPC mode, or to a
/// callback when the dispatcher serves a remote session (`makai serve`).
#[derive(Clone)]
pub struct Output {
    sink: Sink,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.sink {
            Sink::Writer(_) => "writer",
            Sink::Values(_) => "callback",
        };
        f.debug_struct("Output").field("sink", &kind).finish()
    }
}

impl Output {
    /// Output handed to `f`, one JSON value at a time (must not block).
    pub fn from_callback(f: impl Fn(Value) + Send + Sync + 'static) -> Output {
        Output {
            sink: Sink::Values(Arc::new(f)),
        }
    }

    /// Queues one JSON value as a line.
    pub fn send(&self, v: &Value) {
        match &self.sink {
            Sink::Writer(tx) => {
                let _ = tx.send(WriterMsg::Line(v.to_string()));
            }
            Sink::Values(f) => f(v.clone()),
        }
    }

    /// Queues an already serialized line (no newline).
    pub fn send_line(&self, line: String) {
        match &self.sink {
            Sink::Writer(tx) => {
                let _ = tx.send(WriterMsg::Line(line));
            }
            Sink::Values(f) => {
                if let Ok(v) = serde_json::from_str(&line) {
                    f(v);
                }
            }
        }
    }

    /// Makes the writer flush and stop; later lines are dropped.
    fn close(&self) {
        if let Sink::Writer(tx) = &self.sink {
            let _ = tx.send(WriterMsg::Close);
        }
    }
}

/// A success response.
pub fn success(id: &Option<Value>, command: &str, data: Option<Value>) -> Value {
    let mut v = json!({"type": "response", "command": command, "success": true});
    if let Some(id) = id {
        v["id"] = id.clone();
    }
    if let Some(d) = data {
        v["data"] = d;
    }
    v
}

/// A failure response.
pub fn failure(id: &Option<Value>, command: &str, error: impl std::fmt::Display) -> Value {
    let mut v = json!({"type": "response", "command": command, "success": false,
        "error": error.to_string()});
    if let Some(id) = id {
        v["id"] = id.clone();
    }
    v
}

/// The writer: one task owns stdout; lines are flushed when the queue runs dry.
fn start_writer() -> (Output, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<WriterMsg>();
    let handle = tokio::task::spawn_blocking(move || {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
        while let Some(WriterMsg::Line(line)) = rx.blocking_recv() {
            if out.write_all(line.as_bytes()).is_err() || out.write_all(b"\n").is_err() {
                break;
            }
            if rx.is_empty() && out.flush().is_err() {
                break;
            }
        }
        let _ = out.flush();
    });
    (
        Output {
            sink: Sink::Writer(tx),
        },
        handle,
    )
}

/// Splits a byte buffer into complete `\n`-terminated records.
fn take_records(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(i) = buf.iter().position(|&b| b == b'\n') {
        let mut line: Vec<u8> = buf.drain(..=i).collect();
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        out.push(line);
    }
    out
}

/// Runs RPC mode until stdin closes; returns the exit code.
pub async fn run(app: AppSession) -> i32 {
    let (output, writer) = start_writer();
    let forward = output.clone();
    app.subscribe_with(move |ev| forward.send_line(ev.to_json_line()));
    let handler = commands::Handler::new(app.clone(), output.clone());
    let mut stdin = tokio::io::stdin();
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut chunk).await {
            Ok(0) | Err(_) => 0,
            Ok(n) => n,
        };
        if n == 0 {
            // A last record without a newline still counts.
            if !buf.is_empty() {
                let mut last = std::mem::take(&mut buf);
                if last.last() == Some(&b'\r') {
                    last.pop();
                }
                handler.handle_line(&last).await;
            }
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        for record in take_records(&mut buf) {
            handler.handle_line(&record).await;
        }
    }
    handler.wait_background().await;
    app.agent().wait_for_idle().await;
    // Let the pump deliver the last events, then close the stream.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    output.close();
    drop(handler);
    drop(app);
    let _ = writer.await;
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_on_lf_only() {
        let mut buf = "{\"a\":\"x\u{2028}y\"}\r\n{\"b\":1}\npartial"
            .as_bytes()
            .to_vec();
        let recs = take_records(&mut buf);
        assert_eq!(recs.len(), 2);
        assert_eq!(
            String::from_utf8(recs[0].clone()).unwrap(),
            "{\"a\":\"x\u{2028}y\"}"
        );
        assert_eq!(buf, b"partial");
    }

    #[test]
    fn responses_have_pi_envelope() {
        let id = Some(json!("r1"));
        assert_eq!(
            success(&id, "get_state", Some(json!({"x": 1}))),
            json!({"type": "response", "command": "get_state", "success": true, "id": "r1", "data": {"x": 1}})
        );
        assert_eq!(
            failure(&None, "parse", "bad"),
            json!({"type": "response", "command": "parse", "success": false, "error": "bad"})
        );
    }
}
