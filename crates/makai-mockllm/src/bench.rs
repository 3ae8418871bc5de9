//! [`bench_responder`]: the standard agent-loop script used by throughput
//! benchmarks, with pre-rendered SSE for the Chat Completions and Anthropic
//! streaming paths, replayed in one write or streamed an event per write
//! ([`BenchPacing`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::record::{RecordedRequest, WireApi};
use crate::scenario::Responder;
use crate::script::{Item, ScriptedResponse, StopKind, Usage};

/// The name of the tool the bench script calls.
pub const BENCH_TOOL: &str = "echo";

/// The standard agent-loop responder.
///
/// The round `r` is the number of tool results in the request (Chat: messages
/// with role `tool`; Anthropic: `tool_result` blocks; Responses:
/// `function_call_output` items; Gemini: `functionResponse` parts). Every
/// response streams `tokens` text deltas `w0 `, `w1 `, … `w<tokens-1> ` (one
/// event each). Rounds `0..tool_rounds` then call tool [`BENCH_TOOL`] with
/// arguments `{"text":"echo-<r>"}` and id `call_<r>` (finish reason
/// tool_calls). In round `tool_rounds` the last token is `[final]` instead of
/// `w<tokens-1> ` if every earlier tool result `i` contains `echo-<i>`, else
/// `[bad-tool-result]`; finish reason stop. OpenAI streams always end with a
/// usage chunk and `[DONE]`. Input usage is `raw_body.len() / 4` tokens,
/// output is one per text token.
///
/// The Chat Completions and Anthropic streams are sent as `pacing` says; the
/// other APIs' streams one event per write.
pub fn bench_responder(tokens: usize, tool_rounds: usize, pacing: BenchPacing) -> Responder {
    bench_responder_in_paragraphs(tokens, tool_rounds, pacing, 0)
}

/// [`bench_responder`] whose answers are paragraphs of `paragraph_words`
/// tokens, as a model writes: the last token of each paragraph is
/// `w<i>\n\n` instead of `w<i> ` (0: one paragraph). For what a renderer
/// of the answer does with it (the full-screen UI).
pub fn bench_responder_in_paragraphs(
    tokens: usize,
    tool_rounds: usize,
    pacing: BenchPacing,
    paragraph_words: usize,
) -> Responder {
    let ends_paragraph =
        |i: usize| paragraph_words > 0 && i % paragraph_words == paragraph_words - 1;
    let bench = Arc::new(Bench {
        tokens: (0..tokens)
            .map(|i| {
                if ends_paragraph(i) {
                    format!("w{i}\n\n")
                } else {
                    format!("w{i} ")
                }
            })
            .collect(),
        tool_rounds,
        pacing,
    });
    Arc::new(move |req: &RecordedRequest| bench.respond(req))
}

/// How the bench script's pre-rendered streams are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchPacing {
    /// The whole response in one write: the client reads it in a few large
    /// reads (the cost of decoding alone).
    Replay,
    /// Each SSE event its own write, as a provider streaming token by token
    /// sends them; events `delay` apart (zero: as fast as they are written).
    Stream {
        /// Time between two events.
        delay: Duration,
    },
}

struct Bench {
    tokens: Vec<String>,
    tool_rounds: usize,
    pacing: BenchPacing,
}

/// One round's content.
struct Turn<'a> {
    texts: Vec<&'a str>,
    /// `(call id, raw JSON arguments)`.
    tool: Option<(String, String)>,
    usage: Usage,
}

impl Bench {
    fn respond(&self, req: &RecordedRequest) -> ScriptedResponse {
        let api = req.wire_api();
        let results = tool_results(api, &req.body);
        let round = results.len();
        let mut texts: Vec<&str> = self.tokens.iter().map(String::as_str).collect();
        let tool = if round < self.tool_rounds {
            Some((
                format!("call_{round}"),
                format!(r#"{{"text":"echo-{round}"}}"#),
            ))
        } else {
            let ok = results
                .iter()
                .enumerate()
                .all(|(i, text)| text.contains(&format!("echo-{i}")));
            texts.pop();
            texts.push(if ok { "[final]" } else { "[bad-tool-result]" });
            None
        };
        let usage = Usage::new((req.raw_body.len() / 4) as u64, texts.len() as u64);
        let turn = Turn { texts, tool, usage };
        let model = req
            .model()
            .unwrap_or_else(|| crate::server::DEFAULT_MODEL.to_owned());
        let rendered = match api {
            Some(WireApi::ChatCompletions) if req.wants_stream() => render_chat(&turn, &model),
            Some(WireApi::AnthropicMessages) if req.wants_stream() => {
                render_anthropic(&turn, &model)
            }
            _ => return self.paced(generic(turn)),
        };
        self.paced(ScriptedResponse::replay(rendered))
    }

    /// `resp` written as [`Self::pacing`] says (a generic response is always
    /// one event per write).
    fn paced(&self, resp: ScriptedResponse) -> ScriptedResponse {
        match self.pacing {
            BenchPacing::Replay => resp,
            BenchPacing::Stream { delay } if delay.is_zero() => resp.split_events(),
            BenchPacing::Stream { delay } => resp.split_events().delay_each(delay),
        }
    }
}

/// The turn as a plain scripted response (Responses, Gemini, non-stream).
fn generic(turn: Turn<'_>) -> ScriptedResponse {
    let mut resp = ScriptedResponse::text(turn.texts.concat()).usage(turn.usage);
    if let Some((id, args)) = turn.tool {
        resp = resp.with_item(Item::tool_call(id, BENCH_TOOL, args));
    } else {
        resp = resp.stop(StopKind::Stop);
    }
    resp
}

/// The text of each tool result in the request, in order.
fn tool_results(api: Option<WireApi>, body: &Value) -> Vec<String> {
    let arr = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    match api {
        Some(WireApi::ChatCompletions) => arr(body.get("messages"))
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            .map(|m| content_text(m.get("content")))
            .collect(),
        Some(WireApi::AnthropicMessages) => arr(body.get("messages"))
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .flat_map(|m| arr(m.get("content")))
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|b| content_text(b.get("content")))
            .collect(),
        Some(WireApi::Responses) => arr(body.get("input"))
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("function_call_output"))
            .map(|i| content_text(i.get("output")))
            .collect(),
        Some(WireApi::Gemini) => arr(body.get("contents"))
            .iter()
            .flat_map(|c| arr(c.get("parts")))
            .filter_map(|p| p.get("functionResponse").map(Value::to_string))
            .collect(),
        Some(WireApi::BedrockConverseStream) => arr(body.get("messages"))
            .iter()
            .flat_map(|m| arr(m.get("content")))
            .filter_map(|b| b.get("toolResult").map(|r| content_text(r.get("content"))))
            .collect(),
        None => Vec::new(),
    }
}

/// A content value as text: a string, or the `text` fields of a block array.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// A JSON string literal (quotes included).
fn quoted(s: &str) -> String {
    Value::from(s).to_string()
}

fn render_chat(turn: &Turn<'_>, model: &str) -> Vec<u8> {
    let prefix = format!(
        r#"data: {{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":{},"choices":[{{"index":0,"delta":"#,
        quoted(model)
    );
    const NO_FINISH: &str = ",\"finish_reason\":null}]}\n\n";
    let token_len: usize = turn.texts.iter().map(|t| t.len()).sum();
    let mut out =
        String::with_capacity((prefix.len() + 40) * (turn.texts.len() + 6) + token_len + 256);
    out.push_str(&prefix);
    out.push_str(r#"{"role":"assistant","content":""}"#);
    out.push_str(NO_FINISH);
    for text in &turn.texts {
        out.push_str(&prefix);
        out.push_str(r#"{"content":"#);
        out.push_str(&quoted(text));
        out.push('}');
        out.push_str(NO_FINISH);
    }
    let finish = if let Some((id, args)) = &turn.tool {
        out.push_str(&prefix);
        out.push_str(&format!(
            r#"{{"tool_calls":[{{"index":0,"id":{},"type":"function","function":{{"name":"{BENCH_TOOL}","arguments":""}}}}]}}"#,
            quoted(id)
        ));
        out.push_str(NO_FINISH);
        out.push_str(&prefix);
        out.push_str(&format!(
            r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
            quoted(args)
        ));
        out.push_str(NO_FINISH);
        "tool_calls"
    } else {
        "stop"
    };
    out.push_str(&prefix);
    out.push_str(&format!("{{}},\"finish_reason\":\"{finish}\"}}]}}\n\n"));
    let u = turn.usage;
    out.push_str(&format!(
        r#"data: {{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":{},"choices":[],"usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":0}}}}}}"#,
        quoted(model),
        u.input,
        u.output,
        u.input + u.output
    ));
    out.push_str("\n\ndata: [DONE]\n\n");
    out.into_bytes()
}

fn render_anthropic(turn: &Turn<'_>, model: &str) -> Vec<u8> {
    const DELTA: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":";
    let token_len: usize = turn.texts.iter().map(|t| t.len()).sum();
    let mut out = String::with_capacity((DELTA.len() + 4) * turn.texts.len() + token_len + 1500);
    let u = turn.usage;
    out.push_str(&format!(
        r#"event: message_start
data: {{"type":"message_start","message":{{"id":"msg_bench","type":"message","role":"assistant","model":{},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}}}}

event: content_block_start
data: {{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":""}}}}

event: ping
data: {{"type":"ping"}}

"#,
        quoted(model),
        u.input
    ));
    for text in &turn.texts {
        out.push_str(DELTA);
        out.push_str(&quoted(text));
        out.push_str("}}\n\n");
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    let stop = if let Some((id, args)) = &turn.tool {
        out.push_str(&format!(
            r#"event: content_block_start
data: {{"type":"content_block_start","index":1,"content_block":{{"type":"tool_use","id":{},"name":"{BENCH_TOOL}","input":{{}}}}}}

event: content_block_delta
data: {{"type":"content_block_delta","index":1,"delta":{{"type":"input_json_delta","partial_json":{}}}}}

event: content_block_stop
data: {{"type":"content_block_stop","index":1}}

"#,
            quoted(id),
            quoted(args)
        ));
        "tool_use"
    } else {
        "end_turn"
    };
    out.push_str(&format!(
        r#"event: message_delta
data: {{"type":"message_delta","delta":{{"stop_reason":"{stop}","stop_sequence":null}},"usage":{{"output_tokens":{}}}}}

event: message_stop
data: {{"type":"message_stop"}}

"#,
        u.output
    ));
    out.into_bytes()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            query: None,
            headers: vec![],
            raw_body: body.to_string(),
            body,
        }
    }

    /// Parses `data:` payloads of an SSE body (ignoring `[DONE]`), dropping
    /// ids and timestamps so two renderers can be compared.
    fn payloads(bytes: &[u8]) -> Vec<Value> {
        let text = std::str::from_utf8(bytes).unwrap();
        text.split("\n\n")
            .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter(|d| *d != "[DONE]")
            .map(|d| {
                let mut v: Value = serde_json::from_str(d).unwrap();
                for key in ["id", "created"] {
                    v.as_object_mut().unwrap().remove(key);
                }
                if let Some(m) = v.get_mut("message").and_then(Value::as_object_mut) {
                    m.remove("id");
                }
                v
            })
            .collect()
    }

    fn generic_events(api: WireApi, resp: &ScriptedResponse) -> Vec<u8> {
        let ctx = crate::wire::Ctx {
            model: "m".into(),
            seq: 1,
            created: 5,
            include_usage: true,
            gemini_sse: true,
        };
        crate::wire::render_stream(api, resp, &ctx).concat()
    }

    #[test]
    fn prerendered_streams_match_generic_renderers() {
        let bench = Bench {
            tokens: (0..3).map(|i| format!("w{i} ")).collect(),
            tool_rounds: 1,
            pacing: BenchPacing::Replay,
        };
        for (api, path) in [
            (WireApi::ChatCompletions, "/v1/chat/completions"),
            (WireApi::AnthropicMessages, "/v1/messages"),
        ] {
            let request = req(path, json!({"model": "m", "stream": true, "messages": []}));
            let fast = bench.respond(&request);
            let fast_bytes = fast.replay_bytes.clone().unwrap();
            // The generic renderer of the same turn must agree event for event.
            let mut non_stream = request.clone();
            non_stream.body["stream"] = json!(false);
            let slow = bench.respond(&non_stream);
            assert!(slow.replay_bytes.is_none());
            let slow_bytes = generic_events(api, &slow.chunk_size(0));
            let is_token = |v: &Value| {
                let t = v
                    .pointer("/choices/0/delta/content")
                    .or(v.pointer("/delta/text"));
                matches!(t, Some(Value::String(s)) if s.starts_with('w'))
            };
            let token_text = |v: &Value| {
                v.pointer("/choices/0/delta/content")
                    .or(v.pointer("/delta/text"))
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned()
            };
            let mut fast_payloads = payloads(&fast_bytes);
            let fast_tokens: Vec<String> = fast_payloads
                .iter()
                .filter(|v| is_token(v))
                .map(token_text)
                .collect();
            assert_eq!(fast_tokens, ["w0 ", "w1 ", "w2 "], "{path}");
            fast_payloads.retain(|v| !is_token(v));
            // The generic path (chunk_size 0) sends the text in one delta.
            let mut slow_payloads = payloads(&slow_bytes);
            slow_payloads.retain(|v| !is_token(v));
            assert_eq!(fast_payloads, slow_payloads, "{path}");
        }
    }

    #[test]
    fn rounds_and_verdicts() {
        let bench = Bench {
            tokens: vec!["w0 ".into(), "w1 ".into()],
            tool_rounds: 2,
            pacing: BenchPacing::Replay,
        };
        let chat = |tool_texts: &[&str]| {
            let mut messages = vec![json!({"role": "user", "content": "go"})];
            for t in tool_texts {
                messages.push(json!({"role": "tool", "tool_call_id": "x", "content": t}));
            }
            bench.respond(&req(
                "/v1/chat/completions",
                json!({"model": "m", "messages": messages}),
            ))
        };
        let r0 = chat(&[]);
        assert_eq!(r0.items[0], Item::text("w0 w1 "));
        assert_eq!(
            r0.items[1],
            Item::tool_call("call_0", "echo", r#"{"text":"echo-0"}"#)
        );
        let r2 = chat(&["echo-0", "got echo-1"]);
        assert_eq!(r2.items, vec![Item::text("w0 [final]")]);
        assert_eq!(r2.effective_stop(), StopKind::Stop);
        let bad = chat(&["echo-0", "nope"]);
        assert_eq!(bad.items, vec![Item::text("w0 [bad-tool-result]")]);

        let anthropic = bench.respond(&req(
            "/v1/messages",
            json!({"model": "m", "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0",
                  "content": [{"type": "text", "text": "echo-0"}]}]}
            ]}),
        ));
        assert_eq!(
            anthropic.items[1],
            Item::tool_call("call_1", "echo", r#"{"text":"echo-1"}"#)
        );
    }
}
