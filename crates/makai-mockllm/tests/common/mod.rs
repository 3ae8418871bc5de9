//! Shared helpers for the integration tests: a small SSE line parser and
//! per-API reassemblers that turn a stream back into text / tool calls.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

/// One parsed SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("bad JSON in event {:?}: {e}", self.data))
    }
}

/// Parses an SSE body line by line (`\n` or `\r\n` line endings; events end
/// at a blank line; multi-line data joined with `\n`). Panics on a trailing
/// unterminated event, since every format must end its events properly.
pub fn parse_sse(body: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut name = None;
    let mut data: Vec<String> = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => panic!("unterminated line at end of SSE body: {rest:?}"),
        };
        rest = next;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if name.is_some() || !data.is_empty() {
                events.push(Event {
                    name: name.take(),
                    data: data.join("\n"),
                });
                data.clear();
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = Some(value.to_owned()),
            "data" => data.push(value.to_owned()),
            other => panic!("unexpected SSE field {other:?}"),
        }
    }
    assert!(
        name.is_none() && data.is_empty(),
        "SSE body ended inside an event"
    );
    events
}

/// What a stream reassembles to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Assembled {
    pub text: String,
    pub thinking: String,
    pub signature: Option<String>,
    /// `(id, name, arguments text)`.
    pub tool_calls: Vec<(String, String, String)>,
    pub stop: Option<String>,
    /// `(input, output)` as reported by the API.
    pub usage: Option<(u64, u64)>,
    pub terminated: bool,
    pub model: Option<String>,
}

pub fn assemble_chat(events: &[Event]) -> Assembled {
    let mut a = Assembled::default();
    for ev in events {
        assert!(ev.name.is_none(), "chat events are unnamed");
        if ev.data == "[DONE]" {
            a.terminated = true;
            continue;
        }
        let v = ev.json();
        assert_eq!(v["object"], "chat.completion.chunk");
        a.model = v["model"].as_str().map(str::to_owned);
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            assert_eq!(v["choices"], serde_json::json!([]));
            a.usage = Some((
                u["prompt_tokens"].as_u64().unwrap(),
                u["completion_tokens"].as_u64().unwrap(),
            ));
            continue;
        }
        let choice = &v["choices"][0];
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str() {
            a.text.push_str(t);
        }
        if let Some(t) = delta["reasoning_content"].as_str() {
            a.thinking.push_str(t);
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for call in calls {
                let index = call["index"].as_u64().unwrap() as usize;
                if let Some(id) = call["id"].as_str() {
                    assert_eq!(index, a.tool_calls.len());
                    assert_eq!(call["type"], "function");
                    a.tool_calls.push((
                        id.to_owned(),
                        call["function"]["name"].as_str().unwrap().to_owned(),
                        String::new(),
                    ));
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    a.tool_calls[index].2.push_str(args);
                }
            }
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            a.stop = Some(f.to_owned());
        }
    }
    a
}

pub fn assemble_anthropic(events: &[Event]) -> Assembled {
    let mut a = Assembled::default();
    let mut blocks: Vec<String> = Vec::new();
    for ev in events {
        let name = ev.name.as_deref().expect("anthropic events are named");
        let v = ev.json();
        assert_eq!(v["type"], name, "event name matches payload type");
        match name {
            "message_start" => {
                a.model = v["message"]["model"].as_str().map(str::to_owned);
                a.usage = Some((v["message"]["usage"]["input_tokens"].as_u64().unwrap(), 0));
            }
            "content_block_start" => {
                let index = v["index"].as_u64().unwrap() as usize;
                assert_eq!(index, blocks.len());
                let block = &v["content_block"];
                let ty = block["type"].as_str().unwrap().to_owned();
                if ty == "tool_use" {
                    assert_eq!(block["input"], serde_json::json!({}));
                    a.tool_calls.push((
                        block["id"].as_str().unwrap().to_owned(),
                        block["name"].as_str().unwrap().to_owned(),
                        String::new(),
                    ));
                }
                blocks.push(ty);
            }
            "content_block_delta" => {
                let index = v["index"].as_u64().unwrap() as usize;
                let d = &v["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => a.text.push_str(d["text"].as_str().unwrap()),
                    "thinking_delta" => a.thinking.push_str(d["thinking"].as_str().unwrap()),
                    "signature_delta" => {
                        a.signature = Some(d["signature"].as_str().unwrap().to_owned())
                    }
                    "input_json_delta" => {
                        assert_eq!(blocks[index], "tool_use");
                        a.tool_calls
                            .last_mut()
                            .unwrap()
                            .2
                            .push_str(d["partial_json"].as_str().unwrap());
                    }
                    other => panic!("unknown delta {other}"),
                }
            }
            "content_block_stop" | "ping" => {}
            "message_delta" => {
                a.stop = v["delta"]["stop_reason"].as_str().map(str::to_owned);
                if let Some((input, _)) = a.usage {
                    a.usage = Some((input, v["usage"]["output_tokens"].as_u64().unwrap()));
                }
            }
            "message_stop" => a.terminated = true,
            other => panic!("unexpected anthropic event {other}"),
        }
    }
    a
}

pub fn assemble_responses(events: &[Event]) -> Assembled {
    let mut a = Assembled::default();
    for (i, ev) in events.iter().enumerate() {
        let name = ev.name.as_deref().expect("responses events are named");
        let v = ev.json();
        assert_eq!(v["type"], name);
        assert_eq!(v["sequence_number"].as_u64(), Some(i as u64));
        match name {
            "response.created" | "response.in_progress" => {
                a.model = v["response"]["model"].as_str().map(str::to_owned);
            }
            "response.output_item.added" => {
                let item = &v["item"];
                if item["type"] == "function_call" {
                    assert!(item["id"].as_str().unwrap().starts_with("fc_"));
                    a.tool_calls.push((
                        item["call_id"].as_str().unwrap().to_owned(),
                        item["name"].as_str().unwrap().to_owned(),
                        String::new(),
                    ));
                }
            }
            "response.output_text.delta" => a.text.push_str(v["delta"].as_str().unwrap()),
            "response.reasoning_summary_text.delta" => {
                a.thinking.push_str(v["delta"].as_str().unwrap())
            }
            "response.function_call_arguments.delta" => a
                .tool_calls
                .last_mut()
                .unwrap()
                .2
                .push_str(v["delta"].as_str().unwrap()),
            "response.function_call_arguments.done" => {
                assert_eq!(
                    v["arguments"].as_str().unwrap(),
                    a.tool_calls.last().unwrap().2
                );
            }
            "response.output_item.done" => {
                if let Some(sig) = v["item"]["encrypted_content"].as_str() {
                    a.signature = Some(sig.to_owned());
                }
            }
            "response.completed" | "response.incomplete" => {
                let r = &v["response"];
                a.stop = r["status"].as_str().map(str::to_owned);
                a.usage = Some((
                    r["usage"]["input_tokens"].as_u64().unwrap(),
                    r["usage"]["output_tokens"].as_u64().unwrap(),
                ));
                a.terminated = true;
            }
            _ => {}
        }
    }
    a
}

pub fn assemble_gemini_chunks(chunks: &[Value]) -> Assembled {
    let mut a = Assembled::default();
    for v in chunks {
        a.model = v["modelVersion"].as_str().map(str::to_owned);
        let cand = &v["candidates"][0];
        assert_eq!(cand["content"]["role"], "model");
        for part in cand["content"]["parts"].as_array().unwrap() {
            if let Some(call) = part.get("functionCall") {
                a.tool_calls.push((
                    String::new(),
                    call["name"].as_str().unwrap().to_owned(),
                    call["args"].to_string(),
                ));
            } else if part["thought"] == true {
                a.thinking.push_str(part["text"].as_str().unwrap());
                if let Some(sig) = part["thoughtSignature"].as_str() {
                    a.signature = Some(sig.to_owned());
                }
            } else if let Some(t) = part["text"].as_str() {
                a.text.push_str(t);
            }
        }
        if let Some(f) = cand["finishReason"].as_str() {
            a.stop = Some(f.to_owned());
            a.terminated = true;
            let u = &v["usageMetadata"];
            a.usage = Some((
                u["promptTokenCount"].as_u64().unwrap(),
                u["candidatesTokenCount"].as_u64().unwrap(),
            ));
        }
    }
    a
}

pub fn assemble_gemini(events: &[Event]) -> Assembled {
    let chunks: Vec<Value> = events
        .iter()
        .map(|e| {
            assert!(e.name.is_none());
            e.json()
        })
        .collect();
    assemble_gemini_chunks(&chunks)
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(20))
        .build()
        .unwrap()
}

/// POSTs `body` and returns status, content type and the whole body text.
pub async fn post(url: &str, body: &Value) -> (u16, String, String) {
    let resp = client().post(url).json(body).send().await.unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ct, resp.text().await.unwrap())
}
