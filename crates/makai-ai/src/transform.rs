//! Context hand-off: making a conversation produced by one model valid for another.
//!
//! Every provider's request builder runs [`prepare_messages`] first, so a
//! conversation can move between providers mid-session:
//! - thinking produced by a different provider or model becomes plain text (its
//!   signature is meaningless elsewhere); redacted thinking from elsewhere is dropped;
//! - tool-call ids are rewritten to the target API's allowed pattern and length, and
//!   the matching tool results follow;
//! - images are replaced by a note when the target model has no image input;
//! - assistant messages that failed or were aborted are dropped together with their
//!   tool calls (they are not valid turns for any API);
//! - tool calls left without a result get a synthetic error result, so the
//!   transcript always satisfies the "every call answered" rule.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::message::{AssistantContent, Message, TextContent, ToolResultMessage, UserContent};
use crate::model::Model;

/// The text of a synthetic result for a tool call that never got one.
pub const NO_RESULT_TEXT: &str =
    "No result provided: the tool call was interrupted before it completed.";

/// The note that replaces an image for a model without image input.
pub const IMAGE_OMITTED_TEXT: &str =
    "(image omitted: the current model does not accept image input)";

/// Rules of one API for tool-call ids.
#[derive(Clone, Copy, Debug)]
pub struct ToolCallIdRules {
    /// Longest id accepted.
    pub max_len: usize,
    /// Characters accepted besides ASCII letters and digits.
    pub extra_chars: &'static str,
}

impl ToolCallIdRules {
    /// Anthropic: `^[a-zA-Z0-9_-]+$`, at most 64 characters.
    pub const ANTHROPIC: ToolCallIdRules = ToolCallIdRules {
        max_len: 64,
        extra_chars: "_-",
    };
    /// OpenAI Chat Completions: at most 40 characters.
    pub const OPENAI: ToolCallIdRules = ToolCallIdRules {
        max_len: 40,
        extra_chars: "_-",
    };
    /// Lenient rules (Gemini, Responses): at most 64 characters.
    pub const LENIENT: ToolCallIdRules = ToolCallIdRules {
        max_len: 64,
        extra_chars: "_-.",
    };

    /// True when `id` already satisfies the rules.
    pub fn accepts(&self, id: &str) -> bool {
        !id.is_empty()
            && id.len() <= self.max_len
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || self.extra_chars.contains(c))
    }

    /// Rewrites `id` to satisfy the rules; distinct ids stay distinct (a hash suffix
    /// is added when the id had to be shortened).
    pub fn normalize(&self, id: &str) -> String {
        if self.accepts(id) {
            return id.to_string();
        }
        let mut clean: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || self.extra_chars.contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            clean.push_str("call");
        }
        let hash = format!("{:016x}", fnv1a(id.as_bytes()));
        if clean.len() > self.max_len || clean != id {
            let keep = self.max_len.saturating_sub(hash.len() + 1).min(clean.len());
            clean.truncate(keep);
            clean.push('_');
            clean.push_str(&hash);
            clean.truncate(self.max_len);
        }
        clean
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Prepares `messages` for `model` (see the module docs). Pure: never fails.
///
/// A message that needs no change is borrowed, not copied: a request for a
/// long session on the model that wrote it copies next to nothing.
pub fn prepare_messages<'a>(
    model: &Model,
    messages: &'a [Message],
    ids: ToolCallIdRules,
) -> Vec<Cow<'a, Message>> {
    let accepts_images = model.accepts_images();
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(messages.len());
    let mut id_map: HashMap<&'a str, String> = HashMap::new();
    let mut dropped_calls: HashSet<&'a str> = HashSet::new();
    // Calls of the last assistant message still waiting for results: the
    // id the target sees, and the tool's name.
    let mut pending: Vec<(Cow<'a, str>, &'a str)> = Vec::new();

    let flush_pending = |out: &mut Vec<Cow<'a, Message>>,
                         pending: &mut Vec<(Cow<'a, str>, &'a str)>| {
        for (id, name) in pending.drain(..) {
            out.push(Cow::Owned(Message::ToolResult(ToolResultMessage::text(
                id.into_owned(),
                name,
                NO_RESULT_TEXT,
                true,
            ))));
        }
    };

    for message in messages {
        match message {
            Message::User(u) => {
                flush_pending(&mut out, &mut pending);
                if !accepts_images && has_image(&u.content) {
                    let mut u = u.clone();
                    u.content = strip_images(u.content);
                    out.push(Cow::Owned(Message::User(u)));
                } else {
                    out.push(Cow::Borrowed(message));
                }
            }
            Message::Assistant(a) => {
                flush_pending(&mut out, &mut pending);
                if !a.stop_reason.is_answer() {
                    for c in a.tool_calls() {
                        dropped_calls.insert(&c.id);
                    }
                    continue;
                }
                let same_model = a.provider == model.provider
                    && a.api == model.api.as_str()
                    && a.model == model.id;
                let mut changed = false;
                for c in a.tool_calls() {
                    let id = normalized(&ids, &c.id);
                    if let Cow::Owned(new_id) = &id {
                        id_map.insert(&c.id, new_id.clone());
                        changed = true;
                    }
                    pending.push((id, &c.name));
                }
                if !same_model && a.content.iter().any(carries_model_state) {
                    changed = true;
                }
                if !changed {
                    out.push(Cow::Borrowed(message));
                    continue;
                }
                let mut a = a.clone();
                let mut content = Vec::with_capacity(a.content.len());
                for block in a.content.drain(..) {
                    match block {
                        AssistantContent::Thinking(t) if !same_model => {
                            if !t.redacted && !t.thinking.trim().is_empty() {
                                content.push(AssistantContent::Text(TextContent {
                                    text: t.thinking,
                                    text_signature: None,
                                }));
                            }
                        }
                        AssistantContent::Text(mut t) => {
                            if !same_model {
                                t.text_signature = None;
                            }
                            content.push(AssistantContent::Text(t));
                        }
                        AssistantContent::ToolCall(mut c) => {
                            if let Some(new_id) = id_map.get(c.id.as_str()) {
                                c.id = new_id.clone();
                            }
                            if !same_model {
                                c.thought_signature = None;
                            }
                            content.push(AssistantContent::ToolCall(c));
                        }
                        other => content.push(other),
                    }
                }
                a.content = content;
                out.push(Cow::Owned(Message::Assistant(a)));
            }
            Message::ToolResult(r) => {
                if dropped_calls.contains(r.tool_call_id.as_str()) {
                    continue;
                }
                let id: Cow<'a, str> = match id_map.get(r.tool_call_id.as_str()) {
                    Some(new_id) => Cow::Owned(new_id.clone()),
                    None => normalized(&ids, &r.tool_call_id),
                };
                let Some(pos) = pending.iter().position(|(p, _)| *p == id) else {
                    // A result answering no call of the preceding assistant message: the
                    // APIs reject it, so it is dropped.
                    tracing::debug!(tool_call_id = %id, "dropping tool result without a matching call");
                    continue;
                };
                pending.remove(pos);
                let strip = !accepts_images && has_image(&r.content);
                if matches!(id, Cow::Borrowed(_)) && !strip {
                    out.push(Cow::Borrowed(message));
                    continue;
                }
                let mut r = r.clone();
                r.tool_call_id = id.into_owned();
                if strip {
                    r.content = strip_images(r.content);
                }
                out.push(Cow::Owned(Message::ToolResult(r)));
            }
        }
    }
    flush_pending(&mut out, &mut pending);
    out
}

/// `id` under `rules`: borrowed when it already satisfies them.
fn normalized<'a>(rules: &ToolCallIdRules, id: &'a str) -> Cow<'a, str> {
    if rules.accepts(id) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(rules.normalize(id))
    }
}

/// True for a block that carries state only its own model can read back: a
/// thinking block, or a signature.
fn carries_model_state(block: &AssistantContent) -> bool {
    match block {
        AssistantContent::Thinking(_) => true,
        AssistantContent::Text(t) => t.text_signature.is_some(),
        AssistantContent::ToolCall(c) => c.thought_signature.is_some(),
    }
}

fn has_image(content: &[UserContent]) -> bool {
    content.iter().any(|c| matches!(c, UserContent::Image(_)))
}

fn strip_images(content: Vec<UserContent>) -> Vec<UserContent> {
    let mut out = Vec::with_capacity(content.len());
    let mut noted = false;
    for c in content {
        match c {
            UserContent::Image(_) => {
                if !noted {
                    out.push(UserContent::text(IMAGE_OMITTED_TEXT));
                    noted = true;
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::StopReason;
    use crate::message::{AssistantMessage, ThinkingContent, ToolCall, UserMessage};
    use crate::model::Api;

    fn assistant(provider: &str, content: Vec<AssistantContent>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: "openai-responses".into(),
            provider: provider.into(),
            model: "gpt".into(),
            stop_reason: StopReason::ToolUse,
            ..Default::default()
        })
    }

    #[test]
    fn tool_call_id_with_pipe_is_normalized_and_results_follow() {
        let target = Model::custom(Api::AnthropicMessages, "anthropic", "claude", "http://x");
        let long_id = "call_abc|fc_0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
        let messages = vec![
            Message::User(UserMessage::text("hi")),
            assistant(
                "openai",
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "plan".into(),
                        ..Default::default()
                    }),
                    AssistantContent::ToolCall(ToolCall::new(long_id, "read", Default::default())),
                ],
            ),
            Message::ToolResult(ToolResultMessage::text(long_id, "read", "ok", false)),
        ];
        let out = prepare_messages(&target, &messages, ToolCallIdRules::ANTHROPIC);
        let Message::Assistant(a) = &*out[1] else {
            panic!()
        };
        assert!(matches!(&a.content[0], AssistantContent::Text(t) if t.text == "plan"));
        let id = &a.tool_calls().next().unwrap().id;
        assert!(ToolCallIdRules::ANTHROPIC.accepts(id), "{id}");
        let Message::ToolResult(r) = &*out[2] else {
            panic!()
        };
        assert_eq!(&r.tool_call_id, id);
    }

    #[test]
    fn orphaned_calls_get_synthetic_results_and_failed_turns_are_dropped() {
        let target = Model::custom(Api::OpenAiCompletions, "openai", "gpt", "http://x");
        let mut failed = AssistantMessage {
            stop_reason: StopReason::Error,
            ..Default::default()
        };
        failed
            .content
            .push(AssistantContent::ToolCall(ToolCall::new(
                "x",
                "bash",
                Default::default(),
            )));
        let messages = vec![
            Message::User(UserMessage::text("hi")),
            assistant(
                "openai",
                vec![AssistantContent::ToolCall(ToolCall::new(
                    "c1",
                    "read",
                    Default::default(),
                ))],
            ),
            Message::User(UserMessage::text("next")),
            Message::Assistant(failed),
            Message::ToolResult(ToolResultMessage::text("x", "bash", "late", false)),
        ];
        let out = prepare_messages(&target, &messages, ToolCallIdRules::OPENAI);
        let roles: Vec<_> = out.iter().map(|m| m.role()).collect();
        assert_eq!(roles, ["user", "assistant", "toolResult", "user"]);
        let Message::ToolResult(r) = &*out[2] else {
            panic!()
        };
        assert!(r.is_error);
        assert_eq!(r.text_content(), NO_RESULT_TEXT);
    }

    #[test]
    fn a_deferred_or_pending_answer_is_not_sent_to_the_model() {
        let target = Model::custom(Api::OpenAiCompletions, "openai", "gpt", "http://x");
        for reason in [StopReason::Deferred, StopReason::Pending] {
            let unfinished = AssistantMessage {
                stop_reason: reason,
                ..Default::default()
            };
            let messages = vec![
                Message::User(UserMessage::text("hi")),
                Message::Assistant(unfinished),
                Message::User(UserMessage::text("still there?")),
            ];
            let out = prepare_messages(&target, &messages, ToolCallIdRules::OPENAI);
            let roles: Vec<_> = out.iter().map(|m| m.role()).collect();
            assert_eq!(roles, ["user", "user"], "{reason:?}");
        }
    }

    #[test]
    fn images_are_replaced_for_text_only_models() {
        let target = Model::custom(Api::OpenAiCompletions, "local", "m", "http://x");
        let mut u = UserMessage::text("look");
        u.content.push(UserContent::image("AAAA", "image/png"));
        let messages = [Message::User(u)];
        let out = prepare_messages(&target, &messages, ToolCallIdRules::OPENAI);
        let Message::User(u) = &*out[0] else { panic!() };
        assert_eq!(u.content[1], UserContent::text(IMAGE_OMITTED_TEXT));
    }

    #[test]
    fn messages_that_need_no_change_are_borrowed_not_copied() {
        let target = Model::custom(Api::OpenAiResponses, "openai", "gpt", "http://x");
        let messages = vec![
            Message::User(UserMessage::text("hi")),
            assistant(
                "openai",
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "plan".into(),
                        ..Default::default()
                    }),
                    AssistantContent::ToolCall(ToolCall::new("c1", "read", Default::default())),
                ],
            ),
            Message::ToolResult(ToolResultMessage::text("c1", "read", "ok", false)),
            // Another provider's thinking must become text: that message is copied.
            assistant(
                "anthropic",
                vec![AssistantContent::Thinking(ThinkingContent {
                    thinking: "theirs".into(),
                    ..Default::default()
                })],
            ),
        ];
        let out = prepare_messages(&target, &messages, ToolCallIdRules::LENIENT);
        let borrowed: Vec<bool> = out.iter().map(|m| matches!(m, Cow::Borrowed(_))).collect();
        assert_eq!(borrowed, [true, true, true, false]);
        let Message::Assistant(theirs) = &*out[3] else {
            panic!()
        };
        assert!(matches!(&theirs.content[0], AssistantContent::Text(t) if t.text == "theirs"));
    }
}
