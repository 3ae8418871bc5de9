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
//! - `switch_session` to a session another directory started runs it there,
//!   as pi does: the session is built afresh for that directory (tools,
//!   context files, project settings) and the previous one stops
//!   ([`Bound::move_to`]); one whose directory is gone is refused.
//! - Shutdown: at stdin EOF the running work finishes, then the process exits
//!   0. SIGTERM, SIGHUP or Ctrl-C aborts the running work, flushes what was
//!   written and exits 143, 129 or 130; a second signal exits at once.

mod commands;
mod ui;

pub(crate) use commands::{Handler, Reply};

use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::AsyncReadExt;

use makai_rpc::{Record, ResponseData, RpcCommand, RpcResponse, SessionEvent};

use crate::app::{AppSession, OutEvent};
use crate::error::CliError;
use crate::modes::stdout_lines::StdoutLines;
use crate::session_cwd::Reopen;
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

/// The session commands run on, bound to the client: its events go to the
/// client's stdout, its approval questions to the client's dialogs.
struct Bound {
    app: AppSession,
    handler: Handler,
}

impl Bound {
    fn new(app: AppSession, writer: &Arc<StdoutLines>, dialogs: &ui::Dialogs) -> Self {
        let forward = writer.clone();
        let flush = writer.clone();
        app.subscribe_batched(
            move |ev| forward.push(&ev.to_json_line()),
            move || {
                flush.flush();
            },
        );
        app.approvals().set_prompter(Arc::new(dialogs.clone()));
        let handler = Handler::new(app.clone());
        handler.attach_dialogs(dialogs.clone());
        Bound { app, handler }
    }

    /// `switch_session` to a session of another directory: pi rebuilds its
    /// runtime for the session's directory, so makai builds the session
    /// there (`reopen`) and carries on with it. The previous one stops once
    /// the new one is built (a session that cannot be built leaves the
    /// current one as it was): its run and bash command are aborted, their
    /// last events written, its MCP servers stopped. What the client set for
    /// its runs carries over ([`AppSession::carry_settings_from`]).
    ///
    /// Errors: the session's directory is gone (pi's `MissingSessionCwdError`:
    /// nobody can be asked whether to run it here), or building it failed.
    async fn move_to(
        &mut self,
        session: PathBuf,
        dir: PathBuf,
        writer: &Arc<StdoutLines>,
        dialogs: &ui::Dialogs,
        reopen: &Reopen,
    ) -> Result<(), CliError> {
        if !dir.is_dir() {
            return Err(crate::session_cwd::gone_error(&session, &dir));
        }
        let next = reopen(session, dir).await?;
        if let Err(e) = next.carry_settings_from(&self.app) {
            next.shutdown_mcp().await;
            return Err(e);
        }
        self.app.abort_bash();
        self.app.abort().await;
        self.handler.wait_background().await;
        self.app.wait_settled(SETTLE).await;
        self.app.shutdown_mcp().await;
        next.preconnect();
        *self = Bound::new(next, writer, dialogs);
        Ok(())
    }
}

/// How long the end of a session waits for its last events.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs RPC mode until stdin closes or a signal arrives; returns the exit
/// code. `reopen` builds the session a `switch_session` to another
/// directory's session moves to.
pub async fn run(app: AppSession, reopen: Reopen) -> i32 {
    let writer = Arc::new(StdoutLines::default());
    let to_client = writer.clone();
    let dialogs = ui::Dialogs::new(Arc::new(move |event: SessionEvent| {
        to_client.send(&OutEvent::Session(event).to_json_line())
    }));
    let mut bound = Bound::new(app, &writer, &dialogs);
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
        let records = if n == 0 {
            // A last record without a newline still counts.
            let mut last = std::mem::take(&mut buf);
            if last.last() == Some(&b'\r') {
                last.pop();
            }
            vec![last]
        } else {
            buf.extend_from_slice(&chunk[..n]);
            take_records(&mut buf)
        };
        for record in records {
            handle_record(&mut bound, &writer, &dialogs, &reopen, &record).await;
        }
        if n == 0 {
            break Stop::EndOfInput;
        }
    };
    drop(signal);
    // Nobody answers dialogs any more: open and later questions are denied.
    dialogs.close();
    // A second signal during shutdown exits at once.
    tokio::spawn(async move { std::process::exit(signals.next().await) });
    let Bound { app, handler } = bound;
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
    app.wait_settled(SETTLE).await;
    writer.flush();
    drop(handler);
    // The session the client ended on may not be the one it started with.
    app.shutdown_mcp().await;
    drop(app);
    code
}

/// Reads and runs one record.
async fn handle_record(
    bound: &mut Bound,
    writer: &Arc<StdoutLines>,
    dialogs: &ui::Dialogs,
    reopen: &Reopen,
    raw: &[u8],
) {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let reply = line_reply(writer);
    match Record::parse(raw) {
        Ok(Record::Command(request)) => {
            if let RpcCommand::SwitchSession(s) = &request.command {
                let path = PathBuf::from(&s.session_path);
                if let Some(dir) = crate::session_cwd::recorded_elsewhere(&path, bound.app.cwd()) {
                    let outcome = bound.move_to(path, dir, writer, dialogs, reopen).await;
                    let name = request.command.name();
                    return reply.respond(match outcome {
                        Ok(()) => RpcResponse::success(
                            request.id,
                            name,
                            Some(ResponseData::Cancelled { cancelled: false }),
                        ),
                        Err(e) => RpcResponse::failure(request.id, name, e.to_string()),
                    });
                }
            }
            bound.handler.handle(request, reply).await
        }
        Ok(Record::UiResponse(answer)) => bound.handler.answer_dialog(answer),
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
