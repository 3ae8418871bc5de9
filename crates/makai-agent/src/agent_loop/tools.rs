//! Executing the tool calls of one assistant message.
//!
//! Calls start in call order. Sequential runs one at a time; parallel runs every
//! call through a read/write gate (read-only calls together, a mutating call alone);
//! batched(n) runs groups of n that way, one group after another. Each call runs
//! as its own task: errors, panics and timeouts become error results. Steering is
//! checked each time a call completes; calls not yet started are then skipped.
//! Results join the transcript in call order as soon as all earlier calls are done.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::task::{AbortHandle, JoinError};

use makai_ai::quote::{bound_echoes, bounded};
use makai_ai::{AssistantMessage, ToolCall, ToolResultMessage, UserContent, now_ms};

use super::run::Run;
use crate::config::{LoopAction, SteeringBehavior, ToolExecution};
use crate::event::{AgentEvent, EndReason};
use crate::hooks::{ToolCallDecision, ToolCallInfo};
use crate::message::AgentMessage;
use crate::tool::{AgentSnapshot, Tool, ToolContext, ToolError, ToolOutput, UpdateGate};

/// How many schema problems an invalid-arguments error lists; the rest are
/// counted.
const MAX_PROBLEMS_SHOWN: usize = 10;

/// The result of a call skipped because a steering message arrived.
pub const SKIPPED_TOOL_TEXT: &str = "Skipped due to queued user message.";

/// What a tool batch produced.
#[derive(Default)]
pub(super) struct BatchOutcome {
    /// One result per call, in call order.
    pub results: Vec<ToolResultMessage>,
    /// Steering messages found while the batch ran.
    pub steering: Option<Vec<AgentMessage>>,
    /// Set when the run must end after this turn.
    pub stop: Option<EndReason>,
    /// Tools the calls declared for the next model call.
    pub declared: Vec<Arc<dyn Tool>>,
}

enum Slot {
    Pending,
    Running,
    Done(Arc<ToolOutput>, bool),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Halt {
    Steering,
    Loop,
    Cancelled,
}

type Finished = (usize, Result<Result<ToolOutput, ToolError>, JoinError>);

struct Batch<'r> {
    run: &'r mut Run,
    assistant: &'r AssistantMessage,
    calls: Vec<&'r ToolCall>,
    args: Vec<Arc<Value>>,
    read_only: Vec<bool>,
    slots: Vec<Slot>,
    gates: Vec<Option<UpdateGate>>,
    warn: Vec<Option<u32>>,
    emitted: usize,
    halt: Option<Halt>,
    out: BatchOutcome,
    snapshot: Option<Arc<AgentSnapshot>>,
    cwd: Arc<PathBuf>,
    running: usize,
    running_mutating: usize,
    aborts: Vec<(usize, AbortHandle)>,
    /// When each call's tool started executing (`None`: it never ran).
    started: Vec<Option<Instant>>,
    /// Tools the calls declare for the next model call.
    declared: crate::tool::Declared,
}

enum Prepared {
    Immediate(ToolOutput),
    Spawn(Arc<dyn Tool>),
}

fn error_text(text: impl Into<String>) -> ToolOutput {
    ToolOutput::text(text)
}

fn panic_message(e: JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".into()),
        Err(e) => e.to_string(),
    }
}

impl Batch<'_> {
    fn start_event(&self, i: usize) {
        self.run.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: self.calls[i].id.clone(),
            tool_name: self.calls[i].name.clone(),
            args: self.args[i].clone(),
        });
    }

    /// Records a finished call and emits its end event.
    fn finish(&mut self, i: usize, output: ToolOutput, is_error: bool) {
        if let Some(gate) = self.gates[i].take() {
            gate.close();
        }
        let output = Arc::new(output);
        self.run.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: self.calls[i].id.clone(),
            tool_name: self.calls[i].name.clone(),
            result: output.clone(),
            is_error,
            duration_ms: self.started[i].map(|t| t.elapsed().as_millis() as u64),
        });
        self.slots[i] = Slot::Done(output, is_error);
    }

    /// Adds the results of every finished call not preceded by an unfinished one.
    fn emit_ready(&mut self) {
        while let Some(Slot::Done(output, is_error)) = self.slots.get(self.emitted) {
            let call = self.calls[self.emitted];
            let result = ToolResultMessage {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: output.content.clone(),
                details: (!output.details.is_null()).then(|| output.details.clone()),
                usage: output.usage.clone(),
                nested_calls: output.nested_calls.clone(),
                is_error: *is_error,
                timestamp: now_ms(),
            };
            self.emitted += 1;
            self.run.add_message(result.clone().into());
            self.out.results.push(result);
        }
    }

    fn skip(&mut self, i: usize, halt: Halt) {
        let text = match halt {
            Halt::Steering => SKIPPED_TOOL_TEXT,
            Halt::Loop => {
                "Skipped: the run is stopping because the same tool call was repeated (loop detection)."
            }
            Halt::Cancelled if self.run.wall_expired() => {
                "Not executed: the run reached its wall-time limit."
            }
            Halt::Cancelled => "Not executed: the run was aborted.",
        };
        self.start_event(i);
        self.finish(i, error_text(text), true);
    }

    /// Polls steering after a call completed (interrupting mode only).
    async fn check_steering(&mut self) {
        if self.run.cfg.steering != SteeringBehavior::InterruptTools || self.halt.is_some() {
            return;
        }
        let msgs = self.run.poll_steering().await;
        if !msgs.is_empty() {
            self.out.steering = Some(msgs);
            self.halt = Some(Halt::Steering);
        }
    }

    async fn prepare(&mut self, i: usize) -> Prepared {
        self.start_event(i);
        let call = self.calls[i];
        let cfg = self.run.cfg.clone();
        if let Some(ld) = cfg.loop_detection {
            let repeats = self.run.loop_tracker.observe(&call.name, &self.args[i]);
            if repeats >= ld.threshold {
                match ld.action {
                    LoopAction::Stop => {
                        self.halt = Some(Halt::Loop);
                        self.out.stop = Some(EndReason::LoopDetected {
                            tool_name: call.name.clone(),
                            repeats,
                        });
                        return Prepared::Immediate(error_text(format!(
                            "Not executed: '{}' was called {repeats} times in a row with the same arguments, so the run is stopped to avoid a loop.",
                            bounded(&call.name)
                        )));
                    }
                    LoopAction::Warn => self.warn[i] = Some(repeats),
                }
            }
        }
        if let Some(problem) = &call.arguments_error {
            let raw = call.raw_arguments.as_deref().unwrap_or("");
            return Prepared::Immediate(error_text(format!(
                "Tool call '{}' was not executed: its arguments were not valid ({}). Received: {}. Call the tool again with complete, valid JSON arguments.",
                bounded(&call.name),
                bound_echoes(problem, raw),
                bounded(raw)
            )));
        }
        let tools = &self.run.ctx.tools;
        let Some(tool) = tools.get(&call.name).cloned() else {
            let available = if tools.is_empty() {
                "none".to_string()
            } else {
                tools.names().join(", ")
            };
            return Prepared::Immediate(error_text(format!(
                "Tool '{}' not found. Available tools: {available}.",
                bounded(&call.name)
            )));
        };
        if let Err(problems) = tools.validate(&call.name, &self.args[i]) {
            let mut text = format!("Invalid arguments for tool '{}':", call.name);
            let count = problems.len();
            for p in problems.iter().take(MAX_PROBLEMS_SHOWN) {
                text.push_str("\n- ");
                text.push_str(&bounded(p).to_string());
            }
            if count > MAX_PROBLEMS_SHOWN {
                text.push_str(&format!(
                    "\n- … and {} more problems",
                    count - MAX_PROBLEMS_SHOWN
                ));
            }
            text.push_str("\nCall the tool again with arguments that match its parameter schema.");
            return Prepared::Immediate(error_text(text));
        }
        let info = ToolCallInfo {
            assistant_message: self.assistant,
            tool_call: call,
            args: &self.args[i],
        };
        if let ToolCallDecision::Block(reason) = self.run.hooks.before_tool_call(&info).await {
            let reason = if reason.trim().is_empty() {
                format!("Tool call '{}' was blocked.", call.name)
            } else {
                reason
            };
            return Prepared::Immediate(error_text(reason));
        }
        Prepared::Spawn(tool)
    }

    fn spawn(&mut self, i: usize, tool: Arc<dyn Tool>) -> BoxFuture<'static, Finished> {
        let snapshot = self
            .snapshot
            .clone()
            .unwrap_or_else(|| Arc::new(snapshot_of(self.run)));
        let call = &self.calls[i];
        let (ctx, gate) = ToolContext::for_call(
            &call.id,
            &call.name,
            self.args[i].clone(),
            self.run.cancel.clone(),
            self.cwd.clone(),
            self.run.cfg.options.session_id.as_deref().map(Arc::from),
            snapshot,
            self.run.sink.clone(),
            self.run.hooks.clone(),
        );
        let ctx = ctx.with_declared(self.declared.clone());
        self.gates[i] = Some(gate);
        self.started[i] = Some(Instant::now());
        let args = (*self.args[i]).clone();
        // Dry run: a tool that is not read-only only says what it would do.
        let dry_run = self.run.cfg.dry_run && !tool.read_only();
        let handle = tokio::spawn(crate::tool::run_call(
            tool,
            call.id.clone(),
            args,
            ctx,
            dry_run,
        ));
        self.aborts.push((i, handle.abort_handle()));
        self.slots[i] = Slot::Running;
        self.running += 1;
        if !self.read_only[i] {
            self.running_mutating += 1;
        }
        Box::pin(async move { (i, handle.await) })
    }

    /// Turns a task's outcome into the call's result (hooks and notes applied).
    async fn settle(
        &mut self,
        i: usize,
        outcome: Result<Result<ToolOutput, ToolError>, JoinError>,
    ) -> (ToolOutput, bool) {
        self.running -= 1;
        if !self.read_only[i] {
            self.running_mutating -= 1;
        }
        let name = &self.calls[i].name;
        let (mut output, mut is_error) = match outcome {
            Ok(Ok(o)) => (o, false),
            Ok(Err(e)) => (e.into_output(), true),
            Err(e) if e.is_panic() => (
                error_text(format!(
                    "Tool '{name}' crashed: {}. Other tool calls were not affected; try different arguments or another approach.",
                    panic_message(e)
                )),
                true,
            ),
            Err(_) => (
                error_text("Not executed to the end: the run was aborted."),
                true,
            ),
        };
        if let Some(repeats) = self.warn[i] {
            output.content.push(UserContent::text(format!(
                "Warning: this is call number {repeats} in a row of '{name}' with the same arguments. Repeating it will not change the result; try a different approach."
            )));
        }
        let info = ToolCallInfo {
            assistant_message: self.assistant,
            tool_call: self.calls[i],
            args: &self.args[i],
        };
        if let Some(o) = self
            .run
            .hooks
            .after_tool_call(&info, &output, is_error)
            .await
        {
            o.apply(&mut output, &mut is_error);
        }
        (output, is_error)
    }

    /// Gives every still-running call an error result (tools that ignored cancellation).
    fn abandon_running(&mut self, grace: Duration) {
        for (i, handle) in std::mem::take(&mut self.aborts) {
            if matches!(self.slots[i], Slot::Running) {
                handle.abort();
                self.finish(
                    i,
                    error_text(format!(
                        "The tool did not stop within {:.1} s after the run was cancelled and was abandoned.",
                        grace.as_secs_f64()
                    )),
                    true,
                );
            }
        }
        self.running = 0;
        self.running_mutating = 0;
    }
}

fn snapshot_of(run: &Run) -> AgentSnapshot {
    AgentSnapshot {
        system_prompt: run.ctx.system_prompt.clone(),
        model: run.cfg.model.clone(),
        thinking_level: run.cfg.options.thinking,
        messages: run.transcript.clone(),
        tools: run.ctx.tools.clone(),
        config: run.cfg.clone(),
    }
}

/// Runs every tool call of `assistant` (already the last message of the transcript).
pub(super) async fn execute_batch(run: &mut Run, assistant: &AssistantMessage) -> BatchOutcome {
    let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
    let n = calls.len();
    let group = match run.cfg.tool_execution {
        ToolExecution::Sequential => 1,
        ToolExecution::Parallel => n.max(1),
        ToolExecution::Batched(k) => k.max(1),
    };
    let read_only = calls
        .iter()
        .map(|c| run.ctx.tools.get(&c.name).is_none_or(|t| t.read_only()))
        .collect();
    let snapshot = calls
        .iter()
        .any(|c| run.ctx.tools.get(&c.name).is_some())
        .then(|| Arc::new(snapshot_of(run)));
    let grace = run.cfg.tool_abort_grace;
    let cancel = run.cancel.clone();
    let mut b = Batch {
        cwd: Arc::new(run.cfg.cwd.clone()),
        args: calls
            .iter()
            .map(|c| Arc::new(Value::Object(c.arguments.clone())))
            .collect(),
        read_only,
        slots: (0..n).map(|_| Slot::Pending).collect(),
        gates: (0..n).map(|_| None).collect(),
        warn: vec![None; n],
        calls,
        run,
        assistant,
        emitted: 0,
        halt: None,
        out: BatchOutcome::default(),
        snapshot,
        running: 0,
        running_mutating: 0,
        aborts: Vec::new(),
        started: vec![None; n],
        declared: Default::default(),
    };
    let mut running: FuturesUnordered<BoxFuture<'static, Finished>> = FuturesUnordered::new();
    let deadline = tokio::time::sleep(Duration::from_secs(60 * 60 * 24 * 365));
    tokio::pin!(deadline);
    let mut cancel_seen = false;
    let mut next = 0;
    loop {
        while next < n {
            if b.halt.is_none() && cancel.is_cancelled() {
                b.halt = Some(Halt::Cancelled);
            }
            if let Some(halt) = b.halt {
                b.skip(next, halt);
                b.emit_ready();
                next += 1;
                continue;
            }
            let new_group = next % group == 0;
            if b.running > 0 && (new_group || !b.read_only[next] || b.running_mutating > 0) {
                break;
            }
            match b.prepare(next).await {
                Prepared::Immediate(output) => {
                    b.finish(next, output, true);
                    b.emit_ready();
                    b.check_steering().await;
                }
                Prepared::Spawn(tool) => running.push(b.spawn(next, tool)),
            }
            next += 1;
            b.emit_ready();
        }
        if next >= n {
            // Every call has its context: the batch lets go of the snapshot,
            // so that adding a result does not copy the transcript it shares
            // with the run once the calls holding it have finished.
            b.snapshot = None;
        }
        b.emit_ready();
        if b.running == 0 {
            if next >= n {
                break;
            }
            continue;
        }
        tokio::select! {
            Some((i, outcome)) = running.next() => {
                let (output, is_error) = b.settle(i, outcome).await;
                b.finish(i, output, is_error);
                b.emit_ready();
                b.check_steering().await;
            }
            _ = cancel.cancelled(), if !cancel_seen => {
                cancel_seen = true;
                deadline.as_mut().reset(tokio::time::Instant::now() + grace);
                if b.halt.is_none() {
                    b.halt = Some(Halt::Cancelled);
                }
            }
            _ = &mut deadline, if cancel_seen => {
                b.abandon_running(grace);
                running = FuturesUnordered::new();
            }
        }
    }
    // A call abandoned after an abort may still hold the list: what was
    // declared so far is taken.
    b.out.declared = std::mem::take(&mut *b.declared.lock().unwrap_or_else(|e| e.into_inner()));
    b.out
}

/// Fails every call of a message cut off by the output token limit (their
/// arguments may be truncated), without running any.
pub(super) fn fail_truncated_calls(run: &mut Run, assistant: &AssistantMessage) -> BatchOutcome {
    let mut out = BatchOutcome::default();
    for call in assistant.tool_calls() {
        run.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Arc::new(Value::Object(call.arguments.clone())),
        });
        let output = Arc::new(error_text(format!(
            "Tool call '{}' was not executed: the response hit the output token limit, so its arguments may be cut off. Call the tool again with complete arguments.",
            call.name
        )));
        run.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: output.clone(),
            is_error: true,
            duration_ms: None,
        });
        let result = ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content.clone(),
            details: None,
            usage: None,
            nested_calls: None,
            is_error: true,
            timestamp: now_ms(),
        };
        run.add_message(result.clone().into());
        out.results.push(result);
    }
    out
}
