//! A scripted [`ProtocolClient`] for tests and examples: no network, exact control.
//!
//! Each model call takes the next [`ScriptedResponse`] (or asks a responder
//! function) and streams it with makai-ai's own [`MessageBuilder`], so the events
//! obey the same contract as a real provider's. Every request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;

use makai_ai::{
    AssistantMessageEvent, AssistantMessageEventStream, Context, MessageBuilder, Model, StopReason,
    StreamOptions, ToolChoice,
};

use makai_ai::ProtocolClient;

#[derive(Clone, Debug)]
enum Step {
    Text(String),
    Thinking(String),
    ToolCall(String, String, String),
}

#[derive(Clone, Debug)]
enum Ending {
    Finish(Option<StopReason>),
    Fail(String),
    Hang,
}

/// One scripted model response.
#[derive(Clone, Debug)]
pub struct ScriptedResponse {
    steps: Vec<Step>,
    ending: Ending,
    usage: (u64, u64),
    delay: Duration,
}

impl ScriptedResponse {
    fn new() -> Self {
        ScriptedResponse {
            steps: Vec::new(),
            ending: Ending::Finish(None),
            usage: (0, 0),
            delay: Duration::ZERO,
        }
    }

    /// A text answer, streamed one word (with its trailing space) per delta.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A response calling one tool.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        Self::new().with_tool_call(id, name, args)
    }

    /// A response calling one tool with this raw argument text (may be invalid JSON).
    pub fn raw_tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        raw_args: impl Into<String>,
    ) -> Self {
        Self::new().with_raw_tool_call(id, name, raw_args)
    }

    /// A failed call with this error message (stop reason `error`).
    pub fn error(message: impl Into<String>) -> Self {
        let mut r = Self::new();
        r.ending = Ending::Fail(message.into());
        r
    }

    /// A response that starts streaming and never ends until cancelled.
    pub fn hang() -> Self {
        let mut r = Self::new().with_text("working ");
        r.ending = Ending::Hang;
        r
    }

    /// Adds a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Text(text.into()));
        self
    }

    /// Adds a thinking block.
    pub fn with_thinking(mut self, text: impl Into<String>) -> Self {
        self.steps.push(Step::Thinking(text.into()));
        self
    }

    /// Adds a tool call (arguments streamed as two deltas).
    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
    ) -> Self {
        self.steps
            .push(Step::ToolCall(id.into(), name.into(), args.to_string()));
        self
    }

    /// Adds a tool call whose argument text is sent as is (may be invalid JSON).
    pub fn with_raw_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        raw_args: impl Into<String>,
    ) -> Self {
        self.steps
            .push(Step::ToolCall(id.into(), name.into(), raw_args.into()));
        self
    }

    /// Reports this usage (input and output tokens).
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = (input, output);
        self
    }

    /// Ends with this stop reason instead of the natural one.
    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.ending = Ending::Finish(Some(reason));
        self
    }

    /// Waits this long before each event.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// What one model call was asked.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The context sent.
    pub context: Context,
    /// The tool choice sent.
    pub tool_choice: Option<ToolChoice>,
    /// Whether an API key was set.
    pub had_api_key: bool,
}

type Responder = dyn Fn(&Context, usize) -> ScriptedResponse + Send + Sync;

/// A [`ProtocolClient`] answering from a script.
pub struct ScriptedClient {
    script: Mutex<VecDeque<ScriptedResponse>>,
    responder: Option<Box<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ScriptedClient {
    /// Answers calls with these responses, in order; further calls fail with an error.
    pub fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Arc<Self> {
        Arc::new(ScriptedClient {
            script: Mutex::new(responses.into_iter().collect()),
            responder: None,
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Answers each call with `f(context, call_index)`.
    pub fn from_fn(
        f: impl Fn(&Context, usize) -> ScriptedResponse + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(ScriptedClient {
            script: Mutex::new(VecDeque::new()),
            responder: Some(Box::new(f)),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        lock(&self.requests).len()
    }
}

#[async_trait]
impl ProtocolClient for ScriptedClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let index = {
            let mut reqs = lock(&self.requests);
            reqs.push(RecordedRequest {
                context: context.clone(),
                tool_choice: options.tool_choice.clone(),
                had_api_key: options.api_key.is_some(),
            });
            reqs.len() - 1
        };
        let response = match &self.responder {
            Some(f) => f(context, index),
            None => lock(&self.script).pop_front().unwrap_or_else(|| {
                ScriptedResponse::error(format!(
                    "the script has no response for call {}",
                    index + 1
                ))
            }),
        };
        let (tx, rx) = mpsc::channel(64);
        let cancel = options.cancel.clone();
        tokio::spawn(play(model.clone(), response, options, tx));
        AssistantMessageEventStream::from_channel(rx, cancel)
    }
}

async fn play(
    model: Model,
    r: ScriptedResponse,
    options: StreamOptions,
    tx: mpsc::Sender<Vec<AssistantMessageEvent>>,
) {
    let mut b = MessageBuilder::new(&model);
    let cancel = options.cancel;
    let mut out: Vec<AssistantMessageEvent> = Vec::new();
    // Sends pending events; false when the run is cancelled or the reader is gone.
    macro_rules! flush {
        () => {{
            b.take_events_into(&mut out);
            if !r.delay.is_zero() {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = tokio::time::sleep(r.delay) => {}
                }
            }
            if cancel.is_cancelled() {
                b.fail(StopReason::Aborted, "the request was aborted", &model);
                b.take_events_into(&mut out);
                // The consumer dropped the stream: nobody is left to read it.
                let _ = tx.send(std::mem::take(&mut out)).await;
                return;
            }
            if tx.send(std::mem::take(&mut out)).await.is_err() {
                return;
            }
        }};
    }
    if let Ending::Fail(message) = &r.ending {
        b.fail(StopReason::Error, message.clone(), &model);
        b.take_events_into(&mut out);
        // The consumer dropped the stream: nobody is left to read it.
        let _ = tx.send(out).await;
        return;
    }
    b.start();
    flush!();
    for step in &r.steps {
        match step {
            Step::Text(t) => {
                let i = b.start_text();
                for word in t.split_inclusive(' ') {
                    b.push_text(i, word);
                    flush!();
                }
                b.end_block(i);
            }
            Step::Thinking(t) => {
                let i = b.start_thinking();
                b.push_thinking(i, t);
                b.end_block(i);
            }
            Step::ToolCall(id, name, raw) => {
                let i = b.start_tool_call(id.clone(), name.clone());
                let mid = raw.len() / 2;
                let mid = (0..=mid)
                    .rev()
                    .find(|&m| raw.is_char_boundary(m))
                    .unwrap_or(0);
                b.push_tool_args(i, &raw[..mid]);
                b.push_tool_args(i, &raw[mid..]);
                b.end_block(i);
            }
        }
        flush!();
    }
    if matches!(r.ending, Ending::Hang) {
        cancel.cancelled().await;
        flush!();
        return;
    }
    let u = b.usage_mut();
    u.input = r.usage.0;
    u.output = r.usage.1;
    let reason = match r.ending {
        Ending::Finish(Some(reason)) => reason,
        _ if b.message().tool_calls().next().is_some() => StopReason::ToolUse,
        _ => StopReason::Stop,
    };
    b.finish(reason, &model);
    b.take_events_into(&mut out);
    // The consumer dropped the stream: nobody is left to read it.
    let _ = tx.send(out).await;
}
