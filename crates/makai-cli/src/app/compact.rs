//! Manual compaction (`compact`, `/compact`): older messages are summarised by
//! the current model and replaced by a `compaction` entry; recent turns stay.
//! Emits `compaction_start` / `compaction_end` with reason `manual`.

use serde_json::{Value, json};

use makai_agent::{AgentMessage, CancellationToken, estimate_message_tokens, estimate_tokens};
use makai_ai::{
    AssistantContent, Context, Message, StopReason, StreamOptions, UserContent, UserMessage,
};
use makai_coding::session::{AgentMessage as StoredMessage, CompactionRecord};

use super::convert::from_stored;
use super::{AppSession, lock};
use crate::error::CliError;

const SUMMARY_SYSTEM: &str = "You write concise, factual summaries of a coding assistant's working session so that the work can continue from the summary alone.";
const SUMMARY_REQUEST: &str = "Summarize the conversation above. Keep: the user's goals and constraints, decisions made, files and commands involved, results that still matter, and what is left to do. Use short bullet points.";
const TOOL_TEXT_LIMIT: usize = 2000;

/// Renders messages as plain text for the summarizer.
fn transcript(messages: &[StoredMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        let Some(llm) = m.to_llm() else { continue };
        match llm {
            Message::User(u) => {
                out.push_str("[user]\n");
                for c in &u.content {
                    match c {
                        UserContent::Text(t) => out.push_str(&t.text),
                        _ => out.push_str("(image)"),
                    }
                }
            }
            Message::Assistant(a) => {
                out.push_str("[assistant]\n");
                for c in &a.content {
                    match c {
                        AssistantContent::Text(t) => out.push_str(&t.text),
                        AssistantContent::ToolCall(tc) => out.push_str(&format!(
                            "(calls tool {} with {})",
                            tc.name,
                            Value::Object(tc.arguments.clone())
                        )),
                        _ => {}
                    }
                }
            }
            Message::ToolResult(r) => {
                let text = r.text_content();
                let cut: String = text.chars().take(TOOL_TEXT_LIMIT).collect();
                out.push_str(&format!("[tool result: {}]\n{cut}", r.tool_name));
                if cut.len() < text.len() {
                    out.push_str("\n(...truncated)");
                }
            }
            _ => continue,
        }
        out.push_str("\n\n");
    }
    out
}

/// Index of the first message kept: recent messages within `keep_tokens`,
/// starting at a user message, never the first message.
fn cut_point(messages: &[AgentMessage], keep_tokens: u64) -> Option<usize> {
    let mut kept = 0u64;
    let mut cut = messages.len();
    while cut > 1 {
        let t = estimate_message_tokens(&messages[cut - 1]);
        if kept + t > keep_tokens {
            break;
        }
        kept += t;
        cut -= 1;
    }
    // Start the kept part at a user message (a turn boundary).
    let forward = (cut..messages.len()).find(|&i| messages[i].role() == "user");
    let backward = (1..messages.len())
        .rev()
        .find(|&i| messages[i].role() == "user");
    match forward.or(backward) {
        Some(i) if i > 0 => Some(i),
        _ => None,
    }
}

impl AppSession {
    /// Compacts the session now (aborting a running turn first). Returns pi's
    /// `CompactionResult` JSON.
    pub async fn compact(&self, custom_instructions: Option<&str>) -> Result<Value, CliError> {
        if self.is_streaming() {
            self.abort().await;
        }
        let cancel = CancellationToken::new();
        {
            let mut st = lock(&self.shared().state);
            st.compacting = true;
            st.compaction_cancel = Some(cancel.clone());
        }
        self.emit(json!({"type": "compaction_start", "reason": "manual"}));
        let outcome = self.compact_inner(custom_instructions, &cancel).await;
        {
            let mut st = lock(&self.shared().state);
            st.compacting = false;
            st.compaction_cancel = None;
        }
        match &outcome {
            Ok(result) => self.emit(json!({"type": "compaction_end", "reason": "manual",
                "result": result, "aborted": false, "willRetry": false})),
            Err(e) => {
                let aborted = cancel.is_cancelled();
                let mut ev = json!({"type": "compaction_end", "reason": "manual",
                    "result": null, "aborted": aborted, "willRetry": false});
                if !aborted {
                    ev["errorMessage"] = Value::String(e.to_string());
                }
                self.emit(ev);
            }
        }
        outcome
    }

    async fn compact_inner(
        &self,
        custom_instructions: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Value, CliError> {
        let (ctx, last_is_compaction) = {
            let s = self.session().lock();
            let last = matches!(
                s.leaf(),
                Some(makai_coding::session::SessionEntry::Compaction(_))
            );
            (s.context(), last)
        };
        if last_is_compaction {
            return Err(CliError::failed("Already compacted"));
        }
        let messages: Vec<AgentMessage> = ctx.messages.iter().filter_map(from_stored).collect();
        if messages.len() != ctx.messages.len() || messages.len() < 2 {
            return Err(CliError::failed("Nothing to compact (session too small)"));
        }
        let keep = self.settings().compaction.keep_recent_tokens;
        let cut = cut_point(&messages, keep)
            .ok_or_else(|| CliError::failed("Nothing to compact (session too small)"))?;
        let first_kept_entry_id = ctx
            .entry_ids
            .get(cut)
            .cloned()
            .ok_or_else(|| CliError::failed("Nothing to compact (session too small)"))?;
        let tokens_before = estimate_tokens(&messages);

        let mut request = format!(
            "<conversation>\n{}</conversation>\n\n{SUMMARY_REQUEST}",
            transcript(&ctx.messages[..cut])
        );
        if let Some(extra) = custom_instructions.filter(|s| !s.trim().is_empty()) {
            request.push_str(&format!("\n\nAdditional instructions: {extra}"));
        }
        let model = self.model();
        let api_key = self
            .shared()
            .keys
            .resolve(&model.provider)
            .await?
            .map(|(k, _)| k);
        let options = StreamOptions {
            api_key,
            // A child token: the stream cancels its token when it ends.
            cancel: cancel.child_token(),
            max_tokens: Some(model.max_tokens.clamp(256, 4096)),
            ..Default::default()
        };
        let context = Context {
            system_prompt: Some(SUMMARY_SYSTEM.to_string()),
            messages: vec![Message::User(UserMessage::text(request))],
            ..Default::default()
        };
        let reply = makai_ai::complete(&model, &context, options).await;
        if cancel.is_cancelled() || reply.stop_reason == StopReason::Aborted {
            return Err(CliError::failed("Compaction cancelled"));
        }
        if reply.stop_reason == StopReason::Error {
            return Err(CliError::failed(format!(
                "the summary request failed: {}",
                reply.error_message.as_deref().unwrap_or("unknown error")
            )));
        }
        let summary = reply.text().trim().to_string();
        if summary.is_empty() {
            return Err(CliError::failed("the model returned an empty summary"));
        }
        let record = CompactionRecord {
            summary: summary.clone(),
            first_kept_entry_id: first_kept_entry_id.clone(),
            tokens_before,
            tokens_after: None,
            usage: Some(reply.usage),
            details: None,
            retained_head: None,
        };
        self.session()
            .lock()
            .append_compaction(record)
            .map_err(|e| CliError::failed(e.to_string()))?;
        self.load_session_messages();
        let after = estimate_tokens(&self.messages());
        Ok(json!({
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
            "estimatedTokensAfter": after,
            "usage": reply.usage,
            "details": {},
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_starts_at_a_user_message_and_keeps_the_tail() {
        let a: AgentMessage = makai_ai::AssistantMessage::default().into();
        let msgs = vec![
            AgentMessage::user("x".repeat(4000)),
            a.clone(),
            AgentMessage::user("second"),
            a.clone(),
        ];
        assert_eq!(cut_point(&msgs, 100), Some(2));
        // Everything fits: still summarise up to the last user turn.
        assert_eq!(cut_point(&msgs, 1_000_000), Some(2));
        assert_eq!(cut_point(&msgs[..2], 10), None);
    }
}
