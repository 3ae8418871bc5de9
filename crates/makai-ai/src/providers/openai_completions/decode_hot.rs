//! The hot path: chunks decoded into borrowed structs instead of a `Value` tree.
//!
//! A long answer is thousands of chunks, nearly all alike (one choice whose
//! delta holds a few characters of text, reasoning or tool arguments), and
//! building a `serde_json::Value` for each (a map, an allocated key and value
//! per field) cost more than everything else in the decoder. These structs borrow
//! the strings from the event data and skip the fields makai does not read; the
//! rare fields (`error`, `usage`, a legacy `function_call`) stay `Value`s, boxed
//! so that the structs stay small (moving large structs around was measurable).
//!
//! The structs are strict about types: a chunk with a field of an unexpected
//! type (content as typed parts, arguments as an object, a numeric id, a
//! duplicated key) fails to parse here and is decoded by the general `Value`
//! path instead, which tolerates all of that. Both paths share the decoder's
//! methods, so they agree on every chunk both can read.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::{Decoder, REASONING_FIELDS, apply_usage, error_fault};
use crate::builder::MessageBuilder;
use crate::error::Fault;

/// A string borrowed from the event data when it has no escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// The text of an optional string field, `None` when empty (as the general path reads it).
fn non_empty<'s>(t: &'s Option<Text<'_>>) -> Option<&'s str> {
    t.as_ref().map(|t| t.0.as_ref()).filter(|s| !s.is_empty())
}

/// A `chat.completion.chunk`.
#[derive(Deserialize)]
pub(super) struct HotChunk<'a> {
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    model: Option<Text<'a>>,
    #[serde(default, borrow)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<Box<Value>>,
    #[serde(default)]
    x_groq: Option<Box<Value>>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

/// The first choice with index 0 (the only one makai reads), taken from the
/// array without collecting it: one allocation less per chunk.
struct FirstChoice<'a>(Option<HotChoice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Choices<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Choices<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut first = None;
                while let Some(choice) = seq.next_element::<HotChoice<'a>>()? {
                    if first.is_none() && choice.index.unwrap_or(0) == 0 {
                        first = Some(choice);
                    }
                }
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_seq(Choices(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct HotChoice<'a> {
    #[serde(default)]
    index: Option<u64>,
    /// Boxed: moving a delta-sized struct through every layer of the parse
    /// cost more than the allocation.
    #[serde(default, borrow)]
    delta: Option<Box<HotDelta<'a>>>,
    #[serde(default, borrow)]
    finish_reason: Option<Text<'a>>,
    #[serde(default)]
    usage: Option<Box<Value>>,
}

/// A delta; the three reasoning fields are `REASONING_FIELDS`, in its order.
#[derive(Deserialize)]
struct HotDelta<'a> {
    #[serde(default, borrow)]
    reasoning_content: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning_text: Option<Text<'a>>,
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    refusal: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<HotToolCall<'a>>>,
    #[serde(default)]
    function_call: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct HotToolCall<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    function: Option<HotFunction<'a>>,
}

#[derive(Deserialize)]
struct HotFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Text<'a>>,
}

impl HotChunk<'_> {
    /// Whether the chunk has members the decoder reads besides `id` and `choices`.
    pub(super) fn reads_beyond_choices(&self) -> bool {
        self.usage.is_some() || self.x_groq.is_some() || self.error.is_some()
    }

    /// The one string the chunk appends, when appending it is all the chunk does
    /// (besides an id already taken): a delta with text or reasoning and nothing
    /// else, no finish reason, no usage.
    fn plain_delta(&self) -> Option<(PlainDelta, &str)> {
        if self.reads_beyond_choices() {
            return None;
        }
        let choice = self.choices.as_ref()?.0.as_ref()?;
        if choice.finish_reason.is_some() || choice.usage.is_some() {
            return None;
        }
        let d = choice.delta.as_deref()?;
        if d.refusal.is_some() || d.tool_calls.is_some() || d.function_call.is_some() {
            return None;
        }
        let fields = [
            (PlainDelta::Text, &d.content),
            (
                PlainDelta::Thinking(REASONING_FIELDS[0]),
                &d.reasoning_content,
            ),
            (PlainDelta::Thinking(REASONING_FIELDS[1]), &d.reasoning),
            (PlainDelta::Thinking(REASONING_FIELDS[2]), &d.reasoning_text),
        ];
        let mut present = fields
            .into_iter()
            .filter_map(|(kind, t)| Some((kind, t.as_ref()?)));
        let (kind, text) = present.next()?;
        match (&text.0, present.next()) {
            (Cow::Borrowed(s), None) => Some((kind, s)),
            _ => None,
        }
    }
}

/// What a chunk that only appends one string appends to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PlainDelta {
    /// Answer text (`content`).
    Text,
    /// Reasoning, in the named field.
    Thinking(&'static str),
}

impl Decoder {
    /// Decodes one chunk; the same steps, in the same order, as `on_chunk`.
    pub(super) fn on_hot_chunk(
        &mut self,
        chunk: &HotChunk<'_>,
        out: &mut MessageBuilder,
    ) -> Result<(), Fault> {
        if let Some(err) = chunk.error.as_deref().filter(|e| !e.is_null()) {
            return Err(error_fault(err));
        }
        self.on_response_id(non_empty(&chunk.id), out);
        if let Some(model) = non_empty(&chunk.model) {
            out.set_response_model(model);
        }
        let choice = chunk.choices.as_ref().and_then(|c| c.0.as_ref());
        let usage = [
            chunk.usage.as_deref(),
            chunk.x_groq.as_deref().and_then(|g| g.get("usage")),
            choice.and_then(|c| c.usage.as_deref()),
        ]
        .into_iter()
        .flatten()
        .find(|u| u.is_object());
        if let Some(u) = usage {
            apply_usage(u, out);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(delta) = &choice.delta {
            self.on_hot_delta(delta, out);
        }
        if let Some(reason) = &choice.finish_reason {
            self.on_finish_reason(&reason.0, out);
        }
        Ok(())
    }

    /// Remembers `chunk` (parsed from `parsed`, which is `data` or `data` without
    /// its envelope) as the template for the next ones, or forgets the template
    /// when the chunk did more than append a string.
    pub(super) fn remember_template(&mut self, data: &str, parsed: &str, chunk: &HotChunk<'_>) {
        match chunk.plain_delta() {
            Some((kind, text)) => self.template.remember(data, parsed, text, kind),
            None => self.template.forget(),
        }
    }

    /// Applies a chunk the template recognised: what `on_hot_delta` does for a
    /// delta holding only `text` in the field `delta` names.
    pub(super) fn replay(&mut self, delta: PlainDelta, text: &str, out: &mut MessageBuilder) {
        match delta {
            PlainDelta::Text => self.push_text(text, out),
            PlainDelta::Thinking(field) => self.push_thinking(field, text, out),
        }
    }

    fn on_hot_delta(&mut self, delta: &HotDelta<'_>, out: &mut MessageBuilder) {
        let reasoning = [
            ("reasoning_content", &delta.reasoning_content),
            ("reasoning", &delta.reasoning),
            ("reasoning_text", &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, text)| non_empty(text).map(|t| (field, t)));
        if let Some((field, text)) = reasoning {
            self.push_thinking(field, text, out);
        }
        if let Some(text) = &delta.content {
            self.push_text(&text.0, out);
        }
        if let Some(r) = &delta.refusal {
            self.refusal.push_str(&r.0);
        }
        match delta.tool_calls.as_deref() {
            Some(calls) if !calls.is_empty() => {
                self.saw_tool_calls = true;
                for call in calls {
                    let function = call.function.as_ref();
                    let name = function.and_then(|f| non_empty(&f.name));
                    let block = self.tool_call_block(call.index, non_empty(&call.id), name, out);
                    if let Some(args) = function.and_then(|f| f.arguments.as_ref()) {
                        out.push_tool_args(block, &args.0);
                    }
                }
            }
            _ => {
                if !self.saw_tool_calls
                    && let Some(f) = delta.function_call.as_deref().filter(|f| f.is_object())
                {
                    self.on_legacy_call(f, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_fields_match_the_request_side_list() {
        let delta: HotDelta<'_> = serde_json::from_str(
            r#"{"reasoning_content":"a","reasoning":"b","reasoning_text":"c"}"#,
        )
        .unwrap();
        let read = [
            &delta.reasoning_content,
            &delta.reasoning,
            &delta.reasoning_text,
        ]
        .map(|t| non_empty(t).unwrap_or(""));
        assert_eq!(read, ["a", "b", "c"]);
        assert_eq!(
            REASONING_FIELDS,
            ["reasoning_content", "reasoning", "reasoning_text"]
        );
    }

    #[test]
    fn unusual_shapes_do_not_parse_here_and_take_the_general_path() {
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}]}"#,
            r#"{"id":7,"choices":[]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
        ] {
            assert!(
                serde_json::from_str::<HotChunk<'_>>(chunk).is_err(),
                "{chunk}"
            );
        }
    }

    /// Decodes `chunks` with the hot path (where they parse) and with the general
    /// path only; both must build the same message with the same events.
    #[test]
    fn hot_and_general_paths_agree() {
        let chunks = [
            r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":null}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning":" ok"}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hé\"llo"}}]}"#,
            r#"{"id":"c1","choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"content":" there"}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"refusal":"no"}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"read","arguments":"\"a.txt\"}"}},{"index":1,"id":"call_b","function":{"name":"ls","arguments":null}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_c","function":{"name":"x"}}]}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[],"function_call":{"name":"legacy","arguments":"{}"}}}]}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":""}],"x_groq":{"usage":{"prompt_tokens":9,"completion_tokens":2}}}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls","usage":{"prompt_tokens":12,"completion_tokens":3}}]}"#,
            r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":5}}}"#,
        ];
        let model = crate::model::Model::custom(
            crate::model::Api::OpenAiCompletions,
            "local",
            "m",
            "http://127.0.0.1:8080/v1",
        );
        let mut hot = Decoder::default();
        let mut hot_out = MessageBuilder::new(&model);
        let mut general = Decoder::default();
        let mut general_out = MessageBuilder::new(&model);
        for chunk in chunks {
            let parsed: HotChunk<'_> = serde_json::from_str(chunk).unwrap();
            hot.on_hot_chunk(&parsed, &mut hot_out).unwrap();
            let value: Value = serde_json::from_str(chunk).unwrap();
            general.on_chunk(&value, &mut general_out).unwrap();
        }
        hot.finish(&mut hot_out, &model).unwrap();
        general.finish(&mut general_out, &model).unwrap();
        // The two final messages were made a moment apart: their
        // timestamps are not compared.
        let unstamped = |mut e: crate::AssistantMessageEvent| {
            if let crate::AssistantMessageEvent::Done { message, .. } = &mut e {
                message.timestamp = 0;
            }
            e
        };
        let hot_events: Vec<_> = hot_out.drain_events().map(unstamped).collect();
        let general_events: Vec<_> = general_out.drain_events().map(unstamped).collect();
        assert_eq!(hot_events, general_events);
        let (mut a, mut b) = (hot_out.into_message(), general_out.into_message());
        (a.timestamp, b.timestamp) = (0, 0);
        assert_eq!(a, b);
        assert_eq!(a.tool_calls().count(), 3);
        assert_eq!(hot.refusal, "no");
        assert_eq!(a.usage.cache_read, 5);
    }

    #[test]
    fn plain_text_chunks_borrow_their_text() {
        let chunk: HotChunk<'_> = serde_json::from_str(
            r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
        )
        .unwrap();
        let delta = chunk
            .choices
            .as_ref()
            .unwrap()
            .0
            .as_ref()
            .unwrap()
            .delta
            .as_ref()
            .unwrap();
        assert!(matches!(
            delta.content.as_ref().unwrap().0,
            Cow::Borrowed("hi")
        ));
    }
}
