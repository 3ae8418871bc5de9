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
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::Notify;

use makai_agent::{AgentEvent, AgentMessage, EndReason};
use makai_ai::{AssistantContent, ImageContent, StopReason};
use makai_rpc::SessionEvent;

use crate::app::stats::{total_usage, usage_line};
use crate::app::{AppSession, OutEvent};
use crate::error::{EXIT_FAILED, EXIT_OK};
use crate::modes::stdout_lines::StdoutLines;

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
    let out = Arc::new(StdoutLines::default());
    if format == Format::Json {
        let header = app.session().lock().header().clone();
        let line = match serde_json::to_string(&header) {
            Ok(line) => line,
            Err(e) => {
                eprintln!("makai: the session header could not be encoded: {e}");
                return EXIT_FAILED;
            }
        };
        // Buffered before the subscription: no event can come before it.
        out.push(&line);
    }
    let progress = Arc::new(Progress::new(format, out.clone()));
    let (on_event, on_flush) = (progress.clone(), progress.clone());
    app.subscribe_batched(move |ev| on_event.on_event(ev), move || on_flush.flush());
    if !out.flush() {
        return EXIT_FAILED;
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
        if !progress.settled().await {
            code = EXIT_FAILED;
            break;
        }
    }
    if let Format::Text { verbose } = format {
        app.with_messages(|messages| {
            // An answer cut off at the output limit is written as far as it
            // goes (the exit code and stderr say it is not whole).
            let cut_off = messages
                .last()
                .and_then(AgentMessage::as_assistant)
                .is_some_and(|a| a.stop_reason == StopReason::Length);
            if code == EXIT_OK || cut_off {
                write_final_text(messages);
            }
            if verbose {
                eprintln!("{}", usage_line("session", &total_usage(messages)));
            }
        });
    }
    if app.store_failed() {
        // Said on stderr when it happened; the answer above was not saved.
        code = EXIT_FAILED;
    }
    code
}

/// What the events of the running prompt said, kept by the subscriber (which
/// runs on the task that delivers the events, so a token event costs no
/// wake-up of this mode's own) until [`Progress::settled`] takes it.
struct Progress {
    format: Format,
    out: Arc<StdoutLines>,
    state: Mutex<ProgressState>,
    settled: Notify,
}

#[derive(Default)]
struct ProgressState {
    /// Turns of this process so far (`--verbose` numbers them).
    turn: u32,
    /// The last `agent_end` said the run ended normally.
    succeeded: bool,
    /// Set at `agent_settled` (or when stdout fails): whether the prompt
    /// succeeded.
    outcome: Option<bool>,
}

impl Progress {
    fn new(format: Format, out: Arc<StdoutLines>) -> Self {
        Progress {
            format,
            out,
            state: Mutex::new(ProgressState::default()),
            settled: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the running prompt's `agent_settled`; true when its run
    /// ended normally (and, in JSON mode, every event was written).
    async fn settled(&self) -> bool {
        loop {
            if let Some(outcome) = self.lock().outcome.take() {
                return outcome;
            }
            // A notification sent before this wait is kept for it.
            self.settled.notified().await;
        }
    }

    fn settle(&self, st: &mut ProgressState, outcome: bool) {
        st.outcome = Some(outcome);
        self.settled.notify_one();
    }

    /// One event: written as a JSON line, or (text) reported on stderr when
    /// `--verbose` asks for it.
    fn on_event(&self, ev: &OutEvent) {
        let mut st = self.lock();
        if let OutEvent::Agent(e @ AgentEvent::AgentEnd { .. }) = ev {
            st.succeeded = run_succeeded(e);
            if matches!(self.format, Format::Text { .. })
                && let Some(why) = failure_text(e)
            {
                eprintln!("makai: {why}");
            }
        }
        match self.format {
            Format::Json => self.out.push(&ev.to_json_line()),
            Format::Text { verbose } => {
                if let OutEvent::Agent(e) = ev {
                    report(e, verbose, &mut st.turn);
                }
            }
        }
        if let OutEvent::Session(SessionEvent::AgentSettled { .. }) = ev {
            let written = self.out.flush();
            let outcome = st.succeeded && written;
            self.settle(&mut st, outcome);
        }
    }

    /// The end of a burst of events: JSON lines are written.
    fn flush(&self) {
        if self.format == Format::Json && !self.out.flush() {
            // Said on stderr by the writer; the prompt has failed.
            let mut st = self.lock();
            self.settle(&mut st, false);
        }
    }
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
    // An answer cut off at the output limit is no success either: its
    // text is written, with a warning, and the exit code says so (pi's).
    let last_failed = messages
        .iter()
        .rev()
        .find_map(|m| m.as_assistant())
        .is_some_and(|a| {
            matches!(
                a.stop_reason,
                StopReason::Error | StopReason::Aborted | StopReason::Length
            )
        });
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
            StopReason::Length => {
                return Some(
                    "the answer was cut off: the model reached its output token limit".into(),
                );
            }
            _ => {}
        }
    }
    match end_reason {
        EndReason::Completed => None,
        other => Some(other.describe()),
    }
}

fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// Reports tool calls and each turn's usage on stderr when `verbose`.
fn report(ev: &AgentEvent, verbose: bool, turn: &mut u32) {
    match ev {
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
            *turn += 1;
            if verbose && let Some(a) = message.as_assistant() {
                eprintln!("{}", usage_line(&format!("turn {turn}"), &a.usage));
            }
        }
        _ => {}
    }
}
