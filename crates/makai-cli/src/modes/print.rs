//! Print mode (`-p`, or any run whose stdout is not a terminal) and JSON mode
//! (`--mode json`): send the prompts one after another, then exit.
//!
//! Text (as pi's print mode): nothing is streamed; once every prompt has run,
//! the text blocks of the final assistant message go to stdout, each followed
//! by a newline, so narration written before tool calls is left out. A failed
//! or aborted run prints its reason on stderr instead. `--verbose` adds each
//! tool call, a usage line per turn and a session total on stderr. JSON: the
//! session header, then every event as one JSON line (pi's objects), each
//! prompt's last one being `agent_settled`.

use std::io::Write;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use makai_agent::{AgentEvent, AgentMessage, EndReason};
use makai_ai::{AssistantContent, ImageContent, StopReason};
use makai_rpc::SessionEvent;

use crate::app::stats::{total_usage, usage_line};
use crate::app::{AppSession, OutEvent};
use crate::error::{EXIT_FAILED, EXIT_OK};

/// One prompt of a print-mode run.
#[derive(Clone, Debug, Default)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// Attached images.
    pub images: Vec<ImageContent>,
}

/// Output format of [`run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Assistant text on stdout.
    Text {
        /// Tool calls and usage on stderr.
        verbose: bool,
    },
    /// Every event as a JSON line.
    Json,
}

/// Runs the prompts in order; returns the exit code.
pub async fn run(app: &AppSession, prompts: Vec<Prompt>, format: Format) -> i32 {
    let mut events = app.subscribe();
    let stdout = std::io::stdout();
    if format == Format::Json {
        let header = app.session().lock().header().clone();
        let line = match serde_json::to_string(&header) {
            Ok(line) => line,
            Err(e) => {
                eprintln!("makai: the session header could not be encoded: {e}");
                return EXIT_FAILED;
            }
        };
        let mut out = stdout.lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            eprintln!("makai: could not write to stdout: {e}");
            return EXIT_FAILED;
        }
    }
    if prompts.is_empty() {
        eprintln!("makai: nothing to send: give a message, pipe text on stdin, or attach @files");
        return crate::error::EXIT_USAGE;
    }
    let mut code = EXIT_OK;
    for prompt in prompts {
        if let Err(e) = app.prompt(prompt.text, prompt.images).await {
            eprintln!("makai: {e}");
            return EXIT_FAILED;
        }
        let ok = match format {
            Format::Json => drain_json(&mut events).await,
            Format::Text { verbose } => drain_text(&mut events, verbose).await,
        };
        if !ok {
            code = EXIT_FAILED;
            break;
        }
    }
    if let Format::Text { verbose } = format {
        let messages = app.messages();
        if code == EXIT_OK {
            write_final_text(&messages);
        }
        if verbose {
            eprintln!("{}", usage_line("session", &total_usage(&messages)));
        }
    }
    if app.store_failed() {
        // Said on stderr when it happened; the answer above was not saved.
        code = EXIT_FAILED;
    }
    code
}

/// Writes the text blocks of the transcript's last message, when it is a
/// successful assistant message, each followed by a newline (pi's output).
/// A stdout that cannot be written is said on stderr.
fn write_final_text(messages: &[AgentMessage]) {
    let Some(last) = messages.last().and_then(AgentMessage::as_assistant) else {
        return;
    };
    if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = last
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(t) => Some(t),
            _ => None,
        })
        .try_for_each(|t| {
            out.write_all(t.text.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
        })
        .and_then(|()| out.flush());
    if let Err(e) = written {
        eprintln!("makai: could not write the answer to stdout: {e}");
    }
}

/// True when the run ended normally.
fn run_succeeded(event: &AgentEvent) -> bool {
    let AgentEvent::AgentEnd {
        messages,
        end_reason,
    } = event
    else {
        return false;
    };
    let last_failed = messages
        .iter()
        .rev()
        .find_map(|m| m.as_assistant())
        .is_some_and(|a| matches!(a.stop_reason, StopReason::Error | StopReason::Aborted));
    end_reason.is_completed() && !last_failed
}

/// Why a run failed, for stderr.
fn failure_text(event: &AgentEvent) -> Option<String> {
    let AgentEvent::AgentEnd {
        messages,
        end_reason,
    } = event
    else {
        return None;
    };
    if let Some(a) = messages.iter().rev().find_map(|m| m.as_assistant()) {
        match a.stop_reason {
            StopReason::Error => {
                return Some(
                    a.error_message
                        .clone()
                        .unwrap_or_else(|| "the request failed".into()),
                );
            }
            StopReason::Aborted => return Some("the request was aborted".into()),
            _ => {}
        }
    }
    match end_reason {
        EndReason::Completed => None,
        other => Some(other.describe()),
    }
}

/// Writes every event of one prompt until `agent_settled`; true when its run
/// ended normally.
async fn drain_json(events: &mut UnboundedReceiver<OutEvent>) -> bool {
    let stdout = std::io::stdout();
    let mut succeeded = false;
    while let Some(ev) = events.recv().await {
        let line = ev.to_json_line();
        let mut out = stdout.lock();
        let written = out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"));
        if let Err(e) = written {
            eprintln!("makai: could not write to stdout: {e}");
            return false;
        }
        if let OutEvent::Agent(e @ AgentEvent::AgentEnd { .. }) = &ev {
            succeeded = run_succeeded(e);
        }
        let settled = matches!(ev, OutEvent::Session(SessionEvent::AgentSettled { .. }));
        if (settled || events.is_empty())
            && let Err(e) = out.flush()
        {
            eprintln!("makai: could not write to stdout: {e}");
            return false;
        }
        if settled {
            return succeeded;
        }
    }
    false
}

fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// Waits for the end of one run, reporting tool calls and usage on stderr
/// when `verbose`; true when the run ended normally.
async fn drain_text(events: &mut UnboundedReceiver<OutEvent>, verbose: bool) -> bool {
    let mut turn = 0u32;
    let mut succeeded = false;
    while let Some(ev) = events.recv().await {
        let ev = match ev {
            OutEvent::Agent(ev) => ev,
            OutEvent::Session(SessionEvent::AgentSettled { .. }) => return succeeded,
            OutEvent::Session(_) => continue,
        };
        match &ev {
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } if verbose => {
                eprintln!("→ {tool_name} {}", short(args, 200));
            }
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } if verbose => {
                let text = result.text_content();
                let first = text.lines().next().unwrap_or("");
                let status = if *is_error { "error" } else { "ok" };
                eprintln!(
                    "← {tool_name} {status}: {}",
                    short(&Value::String(first.into()), 160)
                );
            }
            AgentEvent::TurnEnd { message, .. } => {
                turn += 1;
                if verbose && let Some(a) = message.as_assistant() {
                    eprintln!("{}", usage_line(&format!("turn {turn}"), &a.usage));
                }
            }
            AgentEvent::AgentEnd { .. } => {
                if let Some(why) = failure_text(&ev) {
                    eprintln!("makai: {why}");
                }
                succeeded = run_succeeded(&ev);
            }
            _ => {}
        }
    }
    false
}
