//! Test helpers for anything that produces [`AssistantMessageEvent`](crate::AssistantMessageEvent) streams
//! (a provider, a [`crate::ProtocolClient`] of your own): the order contract
//! of the event's doc comment, checked event by event.
//!
//! These helpers panic on a violation: they are meant for tests.

use std::collections::HashMap;

use crate::{AssistantContent, AssistantMessageEvent as E, StopReason};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    ToolCall,
}

/// Panics, naming the event, when `events` break the contract: one `start`
/// per attempt before any block, blocks opened, filled and closed in order
/// with increasing `content_index`, `retry` voiding the attempt, exactly one
/// terminal event and it is last; on `done`, the final message holds one part
/// of the right kind per closed block.
pub fn assert_stream_contract(events: &[E]) {
    let outline: Vec<String> = events.iter().map(label).collect();
    let fail =
        |i: usize, what: &str| panic!("event {i} ({}): {what}; stream: {outline:?}", outline[i]);
    let mut started = false;
    let mut open: HashMap<usize, Kind> = HashMap::new();
    let mut closed: Vec<(usize, Kind)> = Vec::new();
    let mut terminal = None;
    let mut last_opened: Option<usize> = None;
    for (i, e) in events.iter().enumerate() {
        if terminal.is_some() {
            fail(i, "an event after the terminal one");
        }
        let mut block = |index: usize, kind: Kind, phase: u8| match phase {
            0 => {
                if !started {
                    fail(i, "a block opened before start");
                }
                if last_opened.is_some_and(|last| index <= last) {
                    fail(i, "content indexes must grow as blocks open");
                }
                last_opened = Some(index);
                open.insert(index, kind);
            }
            1 => {
                if open.get(&index) != Some(&kind) {
                    fail(i, "a delta for a block that is not open");
                }
            }
            _ => match open.remove(&index) {
                Some(k) if k == kind => closed.push((index, kind)),
                _ => fail(i, "an end for a block that is not open"),
            },
        };
        match e {
            E::Start => {
                if started {
                    fail(i, "a second start without a retry");
                }
                started = true;
            }
            E::TextStart { content_index } => block(*content_index, Kind::Text, 0),
            E::TextDelta { content_index, .. } => block(*content_index, Kind::Text, 1),
            E::TextEnd { content_index, .. } => block(*content_index, Kind::Text, 2),
            E::ThinkingStart { content_index } => block(*content_index, Kind::Thinking, 0),
            E::ThinkingDelta { content_index, .. } => block(*content_index, Kind::Thinking, 1),
            E::ThinkingEnd { content_index, .. } => block(*content_index, Kind::Thinking, 2),
            E::ToolcallStart { content_index, .. } => block(*content_index, Kind::ToolCall, 0),
            E::ToolcallDelta { content_index, .. } => block(*content_index, Kind::ToolCall, 1),
            E::ToolcallEnd { content_index, .. } => block(*content_index, Kind::ToolCall, 2),
            E::Retry { .. } => {
                started = false;
                open.clear();
                closed.clear();
                last_opened = None;
            }
            E::Done { reason, message } => {
                terminal = Some(i);
                if !open.is_empty() {
                    fail(i, "done while blocks are still open");
                }
                if matches!(reason, StopReason::Error | StopReason::Aborted) {
                    fail(i, "done with a failure reason");
                }
                let kinds: Vec<Kind> = message
                    .content
                    .iter()
                    .map(|c| match c {
                        AssistantContent::Text(_) => Kind::Text,
                        AssistantContent::Thinking(_) => Kind::Thinking,
                        _ => Kind::ToolCall,
                    })
                    .collect();
                let streamed: Vec<Kind> = closed.iter().map(|(_, k)| *k).collect();
                if kinds != streamed {
                    fail(
                        i,
                        "the final message's parts differ from the streamed blocks",
                    );
                }
            }
            E::Error { reason, error } => {
                terminal = Some(i);
                if !matches!(reason, StopReason::Error | StopReason::Aborted) {
                    fail(i, "error with a success reason");
                }
                if error.error_message.as_deref().is_none_or(str::is_empty) {
                    fail(i, "an error without a message");
                }
            }
        }
    }
    if terminal.is_none() {
        panic!("the stream has no terminal event: {outline:?}");
    }
}

fn label(e: &E) -> String {
    let json = serde_json::to_value(e).unwrap_or_default();
    let kind = json["type"].as_str().unwrap_or("?").to_string();
    match json.get("contentIndex") {
        Some(i) => format!("{kind}[{i}]"),
        None => kind,
    }
}

/// Reads `stream` to its end, checks the contract, and returns the events
/// with the final message (the terminal event's).
pub async fn collect(
    mut stream: crate::AssistantMessageEventStream,
) -> (Vec<E>, crate::AssistantMessage) {
    use futures::StreamExt;
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e);
    }
    assert_stream_contract(&events);
    let message = match events.last() {
        Some(E::Done { message, .. }) => (**message).clone(),
        Some(E::Error { error, .. }) => (**error).clone(),
        _ => panic!("the stream has no terminal event (checked above)"),
    };
    (events, message)
}

/// [`collect`], returning the final message only (what `.result()` returns,
/// with the contract checked on the way).
pub async fn finish(stream: crate::AssistantMessageEventStream) -> crate::AssistantMessage {
    collect(stream).await.1
}

/// The server of makai's own real-model tests (`scripts/real-model.sh`), as
/// the environment names it: `MAKAI_REAL_MODEL_URL` (`http://127.0.0.1:PORT`,
/// without `/v1`), `MAKAI_REAL_MODEL_NAME` (the model id, when known) and
/// `MAKAI_REAL_MODEL_RUNTIME` (the server program).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealModelServer {
    /// The server's base URL, without `/v1` or a trailing slash.
    pub url: String,
    /// The model id, when `MAKAI_REAL_MODEL_NAME` gives it.
    pub name: Option<String>,
    /// The server program (`llama-cpp-python`, or llama.cpp's own server).
    pub runtime: Option<String>,
}

impl RealModelServer {
    /// The server the environment names; `None` when `MAKAI_REAL_MODEL_URL`
    /// is unset or empty (the real-model tests then say so and do nothing).
    pub fn from_env() -> Option<Self> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let url = var("MAKAI_REAL_MODEL_URL")?;
        Some(RealModelServer {
            url: url.trim_end_matches('/').to_string(),
            name: var("MAKAI_REAL_MODEL_NAME"),
            runtime: var("MAKAI_REAL_MODEL_RUNTIME"),
        })
    }

    /// [`RealModelServer::from_env`] for the real-model test `test`; when
    /// the environment names no server, says on stderr that `test` is
    /// skipped and how to run it (the test then passes without doing
    /// anything: `scripts/ci-real-model.sh` sets the variables in CI).
    pub fn for_test(test: &str) -> Option<Self> {
        let server = Self::from_env();
        if server.is_none() {
            // Written to the process's stderr, which the test harness does
            // not capture (`eprintln!` it would), so the skip is seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "note: skipping real-model test `{test}`: MAKAI_REAL_MODEL_URL is unset \
                 (run scripts/ci-real-model.sh, or `scripts/real-model.sh start` and \
                 `eval \"$(scripts/real-model.sh env)\"`)"
            );
        }
        server
    }

    /// The model `id` on this server, described as the server needs it:
    /// llama-cpp-python's server forces a tool call only for a named
    /// `tool_choice`, llama.cpp's own only for `"required"` (makai's default
    /// for a local URL).
    pub fn model(&self, id: impl Into<String>) -> crate::Model {
        let mut model = crate::Model::custom(
            crate::Api::OpenAiCompletions,
            "local",
            id,
            format!("{}/v1", self.url),
        );
        if self.runtime.as_deref() == Some("llama-cpp-python") {
            model.compat = Some(crate::CompatFlags {
                supports_named_tool_choice: Some(true),
                ..crate::CompatFlags::default()
            });
        }
        model
    }
}

#[cfg(test)]
mod real_model_server_tests {
    use super::RealModelServer;

    #[test]
    fn llama_cpp_python_gets_the_named_tool_choice_and_llama_cpp_the_default() {
        let mut server = RealModelServer {
            url: "http://127.0.0.1:9".into(),
            name: None,
            runtime: Some("llama-cpp-python".into()),
        };
        let m = server.model("qwen");
        assert_eq!(m.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(m.id, "qwen");
        assert_eq!(
            m.compat.and_then(|c| c.supports_named_tool_choice),
            Some(true)
        );
        server.runtime = Some("llama-cpp-server".into());
        assert_eq!(server.model("qwen").compat, None);
    }
}
