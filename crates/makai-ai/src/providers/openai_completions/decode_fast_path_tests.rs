//! The decoder's fast paths (a chunk's envelope seen before, a run of plain
//! deltas) decode exactly as the full parse does.

use super::*;

fn sample_body() -> String {
    stream(&[
        delta(
            json!({"role": "assistant", "content": "", "reasoning_content": "Thinking ünïcödé 🦀"}),
        ),
        delta(json!({"content": "Answer: "})),
        delta(json!({"content": "42 ✓"})),
        tool_call_delta(0, Some("call_1"), Some("read"), "{\"pa"),
        tool_call_delta(0, None, None, "th\": \"ä.txt\"}"),
        tool_call_delta(1, Some("call_2"), Some("ls"), ""),
        finish("tool_calls"),
        usage_chunk(json!({"prompt_tokens": 20, "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 5}})),
    ])
}

fn normalised(mut m: AssistantMessage) -> AssistantMessage {
    m.timestamp = 0;
    m
}

proptest! {
    #[test]
    fn any_split_gives_the_same_message(cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6)) {
        let body = sample_body();
        let bytes = body.as_bytes();
        let (_, whole) = decode(&body);
        prop_assert_eq!(whole.stop_reason, StopReason::ToolUse);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut start = 0;
        for p in points {
            chunks.push(&bytes[start..p]);
            start = p;
        }
        chunks.push(&bytes[start..]);
        let (_, split) = crate::decode_body(&model(), chunks);
        prop_assert_eq!(normalised(split), normalised(whole));
    }
}

/// Decodes `chunks` as a stream (every fast path on) and with the general
/// `Value` path alone, asserts both give the same events and message, and
/// returns the message.
fn assert_fast_paths_agree(chunks: &[String]) -> AssistantMessage {
    let body: String = chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n";
    let (events, message) = decode(&body);

    let model = model();
    let mut general = Decoder::default();
    let mut out = MessageBuilder::new(&model);
    out.start();
    for c in chunks {
        let value: Value = serde_json::from_str(c).unwrap();
        general.on_chunk(&value, &mut out).unwrap();
    }
    general.finish(&mut out, &model).unwrap();
    let general_events: Vec<_> = out.drain_events().collect();
    let general_message = out.into_message();

    let untimed = |events: Vec<AssistantMessageEvent>| -> Vec<AssistantMessageEvent> {
        events
            .into_iter()
            .map(|mut e| {
                if let AssistantMessageEvent::Done { message, .. } = &mut e {
                    message.timestamp = 0;
                }
                e
            })
            .collect()
    };
    assert_eq!(untimed(events), untimed(general_events));
    let (mut a, mut b) = (message, general_message);
    (a.timestamp, b.timestamp) = (0, 0);
    assert_eq!(a, b);
    a
}

/// Chunks that repeat their envelope are decoded without it; the result must be
/// what the general path makes of every chunk in full.
#[test]
fn repeated_envelopes_decode_exactly_like_full_chunks() {
    let env = r#""id":"chatcmpl-9","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"fp""#;
    let chunks = [
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"content":"Hel"}},"finish_reason":null}}]}}"#),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"content":"lo \"quoted\"\n"}},"finish_reason":null}}]}}"#),
        // Another id mid-stream: the first one stays the response id.
        r#"{"id":"chatcmpl-other","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":" there"}}]}"#.to_string(),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"reasoning_content":"hm"}}}}]}}"#),
        // Usage before the choices: such an envelope is never skipped.
        format!(r#"{{{env},"usage":{{"prompt_tokens":11,"completion_tokens":1}},"choices":[{{"index":0,"delta":{{"content":"!"}}}}]}}"#),
        format!(r#"{{{env},"usage":{{"prompt_tokens":12,"completion_tokens":2}},"choices":[{{"index":0,"delta":{{"content":"?"}}}}]}}"#),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_1","function":{{"name":"read","arguments":"{{\"pa"}}}}]}}}}]}}"#),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":"th\":\"a\"}}"}}}}]}}}}]}}"#),
        format!(r#"{{{env},"choices":[{{"index":0,"delta":{{}},"finish_reason":"tool_calls"}}]}}"#),
        format!(r#"{{{env},"choices":[],"usage":{{"prompt_tokens":20,"completion_tokens":9}}}}"#),
    ];
    let a = assert_fast_paths_agree(&chunks);
    assert_eq!(a.response_id.as_deref(), Some("chatcmpl-9"));
    assert_eq!(a.usage.output, 9);
}

/// The chunks the delta template could mistake for a plain delta, in runs.
const TEMPLATE_CHUNKS: [&str; 12] = [
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"one "},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"two, wörds "},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"esc\"aped\n"},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":null},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"last"},"finish_reason":"stop"}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"think "},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"reasoning":"more "},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"both","reasoning":"x"},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"late usage"},"finish_reason":null,"usage":{"prompt_tokens":3,"completion_tokens":4}}]}"#,
    r#"{"id":"c","choices":[{"index":1,"delta":{"content":"choice one"}},{"index":0,"delta":{"content":"choice zero"}}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
];

/// Runs of chunks that differ only in their text are replayed from the last
/// one; every sequence of the chunks above (each repeated with other text) must
/// decode exactly as the general path decodes it.
#[test]
fn replayed_deltas_decode_exactly_like_full_chunks() {
    // JSON string bodies: plain, with escapes, empty.
    let texts = ["a", "b c", r"d\\e", r#"f\"g"#, "", r"h\u0041"];
    for (first, second) in [
        (0, 1),
        (6, 7),
        (0, 6),
        (1, 2),
        (3, 0),
        (10, 10),
        (0, 9),
        (8, 0),
        (0, 4),
    ] {
        let mut chunks = Vec::new();
        for &i in &[first, first, second, second, first] {
            for t in texts {
                chunks.push(
                    TEMPLATE_CHUNKS[i]
                        .replacen("one ", t, 1)
                        .replacen("think ", t, 1),
                );
            }
        }
        chunks.push(TEMPLATE_CHUNKS[5].to_string());
        assert_fast_paths_agree(&chunks);
    }
}

proptest! {
    #[test]
    fn any_sequence_of_template_chunks_decodes_like_full_chunks(
        picks in proptest::collection::vec((0..TEMPLATE_CHUNKS.len(), 0..4usize), 1..24)
    ) {
        let texts = ["x", "y z", r"\\", ""];
        let chunks: Vec<String> = picks
            .into_iter()
            .map(|(i, t)| TEMPLATE_CHUNKS[i].replacen("one ", texts[t], 1).replacen("more ", texts[t], 1))
            .chain([TEMPLATE_CHUNKS[5].to_string()])
            .collect();
        assert_fast_paths_agree(&chunks);
    }
}

/// The template is taken from chunks decoded in full and from chunks decoded
/// without their envelope, and recognises the next chunk of the same run.
#[test]
fn a_run_of_plain_deltas_is_recognised_by_the_template() {
    let model = model();
    let mut decoder = Decoder::default();
    let mut out = MessageBuilder::new(&model);
    out.start();
    let env = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"#;
    let chunk = |body: &str| format!("{env}{body}}}}}]}}");
    let feed = |decoder: &mut Decoder, out: &mut MessageBuilder, data: &str| {
        let event = SseEvent { event: "", data };
        decoder.on_event(event, out, &model).unwrap();
    };
    feed(&mut decoder, &mut out, &chunk(r#""content":"a""#));
    assert_eq!(
        decoder.template.matches(&chunk(r#""content":"bc""#)),
        Some((PlainDelta::Text, "bc"))
    );
    // A tool call forgets it; the next text chunk (decoded without its
    // envelope) sets it again.
    feed(
        &mut decoder,
        &mut out,
        &chunk(r#""tool_calls":[{"index":0,"id":"x","function":{"name":"ls"}}]"#),
    );
    assert_eq!(decoder.template.matches(&chunk(r#""content":"bc""#)), None);
    feed(&mut decoder, &mut out, &chunk(r#""reasoning":"hm""#));
    assert_eq!(
        decoder.template.matches(&chunk(r#""reasoning":"ok""#)),
        Some((PlainDelta::Thinking("reasoning"), "ok"))
    );
}
