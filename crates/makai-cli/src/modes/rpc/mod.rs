//! RPC mode (`--mode rpc`): pi's JSONL protocol on stdin/stdout
//! (`docs/rpc.md`; the records are `makai_rpc`'s types).
//!
//! - Records arrive on stdin, one JSON object per line, split on `\n` only (a
//!   trailing `\r` is dropped), so U+2028/U+2029 inside strings are safe.
//! - Every command gets one `response`; a line that is not a command gets
//!   `command: "parse"`, a field of the wrong type a failure naming the field,
//!   an unknown command `Unknown command: NAME`; the process carries on.
//!   `extension_ui_response` records answer dialogs and get no response.
//! - Approval questions are dialogs ([`ui`]): `extension_ui_request` out,
//!   `extension_ui_response` in, no answer within the timeout = denied.
//! - Events are written as they happen, between responses. Every stdout line
//!   goes through one [`StdoutLines`] buffer, so lines never interleave; the
//!   events of a burst leave in one write, a lone event at once. stdout
//!   carries nothing else (diagnostics go to stderr).
//! - Shutdown: at stdin EOF the running work finishes, then the process exits
//!   0. SIGTERM, SIGHUP or Ctrl-C aborts the running work, flushes what was
//!   written and exits 143, 129 or 130; a second signal exits at once.

mod commands;
mod ui;

pub(crate) use commands::{Handler, Reply};

use std::sync::Arc;

use tokio::io::AsyncReadExt;

use makai_rpc::{Record, RpcResponse, SessionEvent};

use crate::app::{AppSession, OutEvent};
use crate::modes::stdout_lines::StdoutLines;
use crate::signals::StopSignals;

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

/// A reply whose response and side events are written as lines.
fn line_reply(writer: &Arc<StdoutLines>) -> Reply {
    let respond = writer.clone();
    let events = writer.clone();
    Reply::new(
        move |response: RpcResponse| respond.send(&response.to_json_line()),
        Arc::new(move |event: SessionEvent| events.send(&OutEvent::Session(event).to_json_line())),
    )
}

/// Which signal asked the process to stop.
#[derive(Clone, Copy, Debug)]
enum Stop {
    EndOfInput,
    Signal(i32),
}

/// Runs RPC mode until stdin closes or a signal arrives; returns the exit code.
pub async fn run(app: AppSession) -> i32 {
    let writer = Arc::new(StdoutLines::default());
    let forward = writer.clone();
    let flush = writer.clone();
    app.subscribe_batched(
        move |ev| forward.push(&ev.to_json_line()),
        move || {
            flush.flush();
        },
    );
    let handler = Handler::new(app.clone());
    let to_client = writer.clone();
    let dialogs = ui::Dialogs::new(Arc::new(move |event: SessionEvent| {
        to_client.send(&OutEvent::Session(event).to_json_line())
    }));
    app.approvals().set_prompter(Arc::new(dialogs.clone()));
    handler.attach_dialogs(dialogs.clone());
    let mut stdin = tokio::io::stdin();
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut signals = StopSignals::install();
    let mut signal = Box::pin(signals.next());
    let stop = loop {
        let n = tokio::select! {
            code = &mut signal => break Stop::Signal(code),
            read = stdin.read(&mut chunk) => match read {
                Ok(n) => n,
                Err(e) => {
                    eprintln!("makai: reading stdin failed: {e}; shutting down");
                    0
                }
            },
        };
        if n == 0 {
            // A last record without a newline still counts.
            if !buf.is_empty() {
                let mut last = std::mem::take(&mut buf);
                if last.last() == Some(&b'\r') {
                    last.pop();
                }
                handle_record(&handler, &writer, &last).await;
            }
            break Stop::EndOfInput;
        }
        buf.extend_from_slice(&chunk[..n]);
        for record in take_records(&mut buf) {
            handle_record(&handler, &writer, &record).await;
        }
    };
    drop(signal);
    // Nobody answers dialogs any more: open and later questions are denied.
    dialogs.close();
    // A second signal during shutdown exits at once.
    tokio::spawn(async move { std::process::exit(signals.next().await) });
    let code = match stop {
        Stop::EndOfInput => {
            handler.wait_background().await;
            app.agent().wait_for_idle().await;
            0
        }
        Stop::Signal(code) => {
            app.abort_bash();
            app.abort().await;
            handler.wait_background().await;
            code
        }
    };
    // Let the pump deliver the last events (agent_settled), then write what
    // is left (a closed stdout was said on stderr when it happened).
    app.wait_settled(std::time::Duration::from_secs(2)).await;
    writer.flush();
    drop(handler);
    drop(app);
    code
}

/// Reads and runs one record.
async fn handle_record(handler: &Handler, writer: &Arc<StdoutLines>, raw: &[u8]) {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let reply = line_reply(writer);
    match Record::parse(raw) {
        Ok(Record::Command(request)) => handler.handle(request, reply).await,
        Ok(Record::UiResponse(answer)) => handler.answer_dialog(answer),
        Err(e) => reply.respond(e.into()),
    }
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
}
