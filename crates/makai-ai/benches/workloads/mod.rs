//! Synthetic response bodies in each API's real wire format, shared by the
//! `decode` criterion bench and the `decode_throughput` example.
//!
//! Envelopes follow the recorded transcripts in the wire fixtures (field order,
//! ids, `obfuscation`, per-chunk `usageMetadata`, the Responses API repeating the
//! whole text or arguments in its `*.done` and `response.completed` events), so
//! the bytes per event match what a real server sends.

use std::fmt::Write as _;

mod anthropic;
mod chat;
mod gemini;
mod responses;

use makai_ai::{
    Api, AssistantContent, AssistantMessage, AssistantMessageEvent, Model, StopReason, decode_body,
};

/// Text deltas in a text workload.
pub const TEXT_DELTAS: usize = 10_000;
/// Argument deltas in a tool-call workload.
pub const ARG_DELTAS: usize = 2_000;
/// Approximate size of the `content` argument of the tool-call workloads.
pub const CONTENT_BYTES: usize = 1 << 20;
/// Network-sized chunks the body is delivered in.
pub const CHUNK_BYTES: usize = 16 * 1024;

/// What a workload's decoded message must contain.
#[derive(Clone, Debug)]
pub enum Expect {
    /// One text block with this text, `stop`.
    Text(String),
    /// One `write` tool call whose `content` argument is this text, `toolUse`.
    WriteCall(String),
}

/// One response body to decode.
pub struct Workload {
    /// `api/workload`, for reports.
    pub name: String,
    /// The wire API the body speaks.
    pub api: Api,
    /// The whole SSE body.
    pub body: Vec<u8>,
    /// SSE events in the body (`data:` blocks, envelope included).
    pub events: u64,
    /// Delta events in the body (text or argument deltas).
    #[allow(dead_code)] // read by the example, not by the criterion bench
    pub deltas: u64,
    /// What decoding must produce.
    pub expect: Expect,
}

impl Workload {
    /// The body split into network-sized chunks.
    pub fn chunks(&self) -> Vec<&[u8]> {
        self.body.chunks(CHUNK_BYTES).collect()
    }

    /// A model speaking this workload's API.
    pub fn model(&self) -> Model {
        Model::custom(self.api, "bench", "bench-model", "http://127.0.0.1:9")
    }

    /// Decodes the body once and checks the result, so a benchmark never measures
    /// a decoder that failed early.
    pub fn verify(&self) -> Result<(), String> {
        let model = self.model();
        let (events, message) = decode_body(&model, self.chunks());
        check(&self.expect, &events, &message).map_err(|e| format!("{}: {e}", self.name))
    }
}

fn check(
    expect: &Expect,
    events: &[AssistantMessageEvent],
    message: &AssistantMessage,
) -> Result<(), String> {
    if let Some(e) = &message.error_message {
        return Err(format!("decoding failed: {e}"));
    }
    match expect {
        Expect::Text(text) => {
            if message.stop_reason != StopReason::Stop {
                return Err(format!("stop reason {:?}", message.stop_reason));
            }
            if message.text() != *text {
                return Err(format!(
                    "text of {} bytes, expected {}",
                    message.text().len(),
                    text.len()
                ));
            }
            let deltas = events
                .iter()
                .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
                .count();
            if deltas < TEXT_DELTAS {
                return Err(format!(
                    "{deltas} text_delta events, expected {TEXT_DELTAS}"
                ));
            }
        }
        Expect::WriteCall(content) => {
            if message.stop_reason != StopReason::ToolUse {
                return Err(format!("stop reason {:?}", message.stop_reason));
            }
            let call = message.content.iter().find_map(|c| match c {
                AssistantContent::ToolCall(call) => Some(call),
                _ => None,
            });
            let Some(call) = call else {
                return Err("no tool call".to_string());
            };
            if let Some(e) = &call.arguments_error {
                return Err(format!("tool call arguments error: {e}"));
            }
            let got = call.arguments.get("content").and_then(|v| v.as_str());
            if got != Some(content.as_str()) {
                return Err(format!(
                    "content argument of {:?} bytes, expected {}",
                    got.map(str::len),
                    content.len()
                ));
            }
        }
    }
    Ok(())
}

/// Every workload: text and tool-call streams for each API, plus Gemini's whole
/// (unstreamed) function call.
pub fn all() -> Vec<Workload> {
    vec![
        anthropic::anthropic_text(),
        chat::chat_text(),
        anthropic::anthropic_prose(),
        chat::chat_prose(),
        responses::responses_text(),
        gemini::gemini_text(),
        anthropic::anthropic_tool(),
        chat::chat_tool(),
        responses::responses_tool(),
        gemini::gemini_tool_partial(),
        gemini::gemini_tool_whole(),
    ]
}

/// Builds an SSE body, counting events.
#[derive(Default)]
struct Body {
    out: String,
    events: u64,
}

impl Body {
    fn event(&mut self, name: &str, data: &str) {
        // Writing into a String cannot fail.
        let _ = write!(self.out, "event: {name}\ndata: {data}\n\n");
        self.events += 1;
    }

    fn data(&mut self, data: &str) {
        let _ = write!(self.out, "data: {data}\n\n");
        self.events += 1;
    }
}

/// `s` as a JSON string literal (quotes included).
fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The text deltas `w0 `, `w1 `, …
fn words() -> Vec<String> {
    (0..TEXT_DELTAS).map(|i| format!("w{i} ")).collect()
}

/// Text deltas as prose streams them: one in four has a character JSON must
/// escape (a line break, a quote), so it cannot be replayed from the chunk before.
fn prose_words() -> Vec<String> {
    (0..TEXT_DELTAS)
        .map(|i| match i % 8 {
            3 => format!("\"w{i}\" "),
            7 => format!("w{i}\n"),
            _ => format!("w{i} "),
        })
        .collect()
}

/// About [`CONTENT_BYTES`] of source-like text with quotes, braces and newlines.
fn file_content() -> String {
    let mut s = String::with_capacity(CONTENT_BYTES + 128);
    let mut i = 0;
    while s.len() < CONTENT_BYTES {
        let _ = writeln!(
            s,
            "fn example_{i:05}() {{ let value = \"item {i}\"; println!(\"{{value}}\\t{{}}\", {i}); }}"
        );
        i += 1;
    }
    s
}

/// The `write` call's argument JSON text.
fn write_args(content: &str) -> String {
    format!(
        "{{\"path\":\"src/generated/big_file.rs\",\"content\":{}}}",
        json_str(content)
    )
}

/// `s` split into `n` pieces of (nearly) equal length at char boundaries.
fn pieces(s: &str, n: usize) -> Vec<&str> {
    let size = s.len().div_ceil(n).max(1);
    let mut out = Vec::with_capacity(n);
    let mut rest = s;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (head, tail) = rest.split_at(cut);
        out.push(head);
        rest = tail;
    }
    out
}

fn finish(name: &str, api: Api, body: Body, deltas: usize, expect: Expect) -> Workload {
    Workload {
        name: name.to_string(),
        api,
        events: body.events,
        body: body.out.into_bytes(),
        deltas: deltas as u64,
        expect,
    }
}
