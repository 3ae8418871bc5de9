//! The context the model sees at a leaf of the session tree, as pi 1.x builds
//! it (`docs/session-format.md`, "Context Building"):
//!
//! 1. the entries on the path from the root to the leaf;
//! 2. with a compaction on the path (the latest one wins): its system
//!    checkpoint, the summary, the non-system entries from `firstKeptEntryId`
//!    up to the compaction (none for a retain-none compaction), then the
//!    entries after it;
//! 3. the latest `context_edit` of each target on the path omits that entry's
//!    message or replaces its content; the entries themselves never change;
//! 4. `message`, `custom_message` and `branch_summary` entries become
//!    messages; `usage`, `custom`, `label`, `session_info`, `context_edit`
//!    and unknown entries do not.

use std::borrow::Cow;
use std::collections::HashMap;

use makai_agent::{AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage};
use makai_ai::{Message, ThinkingLevel, Timestamp};

use super::context_edit::ContentReplacement;
use super::entry::{CompactionEntry, SessionEntry};
use super::tree::SessionTree;

/// A model named by provider and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
}

/// What the model sees at a leaf, plus the settings in force there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionContext {
    /// The messages, root to leaf, with compaction and context edits applied.
    pub messages: Vec<AgentMessage>,
    /// For each message, the id of the entry it came from (a compaction entry for
    /// its summary and retained messages). Use these ids as `firstKeptEntryId`.
    pub entry_ids: Vec<String>,
    /// The thinking level in force (`off` when never set).
    pub thinking_level: String,
    /// The model in force: the last model change or assistant message on the path.
    pub model: Option<ModelRef>,
}

impl SessionContext {
    /// The messages as the model receives them (see [`AgentMessage::to_llm`]).
    pub fn llm_messages(&self) -> Vec<Message> {
        self.messages
            .iter()
            .filter_map(AgentMessage::to_llm)
            .collect()
    }

    /// The thinking level parsed, or `None` when the stored name is unknown.
    pub fn thinking(&self) -> Option<ThinkingLevel> {
        self.thinking_level.parse().ok()
    }
}

/// What moving the leaf to another entry leaves behind ([`SessionTree::branch_left`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BranchLeft {
    /// The leaf left (`"root"` for none).
    pub from_id: String,
    /// The messages of the entries left, oldest first, as the model saw
    /// them: context edits on the path applied, failed and aborted answers
    /// left out (pi's summaries read the same).
    pub messages: Vec<AgentMessage>,
    /// The file lists (read, modified) of the branch summaries among them
    /// that makai or pi wrote (`details.readFiles`, `details.modifiedFiles`).
    pub carried_files: Vec<(Vec<String>, Vec<String>)>,
}

/// The strings of `details[key]`.
fn strings(details: Option<&serde_json::Value>, key: &str) -> Vec<String> {
    crate::settings::strings_of(details.and_then(|d| d.get(key)))
}

impl SessionTree {
    /// What moving the leaf to `target` (`None`: before the first entry)
    /// leaves behind: the entries of the current path after the deepest one
    /// `target`'s path shares with it (pi's branch summarization collects
    /// the same), as messages.
    pub fn branch_left(&self, target: Option<&str>) -> BranchLeft {
        let from = self.leaf_id().map(str::to_string);
        let current = from
            .as_deref()
            .map(|id| self.path_to(id))
            .unwrap_or_default();
        let destination = target.map(|id| self.path_to(id)).unwrap_or_default();
        let shared = current
            .iter()
            .zip(&destination)
            .take_while(|(a, b)| a.id() == b.id())
            .count();
        let mut left = BranchLeft {
            from_id: from.unwrap_or_else(|| "root".to_string()),
            ..Default::default()
        };
        // The latest edit of an entry on the path wins, as in the context.
        let mut edits: HashMap<&str, Option<&ContentReplacement>> = HashMap::new();
        for entry in &current {
            if let SessionEntry::ContextEdit(e) = entry {
                edits.insert(&e.target_id, e.replacement.as_ref());
            }
        }
        let mut items = Vec::new();
        for entry in &current[shared..] {
            if let SessionEntry::BranchSummary(b) = entry
                && b.from_hook != Some(true)
            {
                left.carried_files.push((
                    strings(b.details.as_ref(), "readFiles"),
                    strings(b.details.as_ref(), "modifiedFiles"),
                ));
            }
            push_context_message(&mut items, entry, edits.get(entry.id()).copied(), false);
        }
        left.messages = items
            .into_iter()
            .filter(|(m, _)| m.as_assistant().is_none_or(|a| a.stop_reason.is_answer()))
            .map(|(m, _)| m.into_owned())
            .collect();
        left
    }

    /// The messages the agent sees at the current leaf, as LLM messages.
    pub fn path_to_leaf(&self) -> Vec<Message> {
        match self.leaf_id() {
            Some(id) => self
                .context_parts(id)
                .items
                .iter()
                .filter_map(|(m, _)| m.to_llm())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The context at the current leaf.
    pub fn context(&self) -> SessionContext {
        match self.leaf_id() {
            Some(id) => self.context_at(id),
            None => SessionContext {
                thinking_level: "off".into(),
                ..Default::default()
            },
        }
    }

    /// The context at any entry (see the module docs for the rules).
    pub fn context_at(&self, leaf_id: &str) -> SessionContext {
        let parts = self.context_parts(leaf_id);
        let mut ctx = SessionContext {
            messages: Vec::with_capacity(parts.items.len()),
            entry_ids: Vec::with_capacity(parts.items.len()),
            thinking_level: parts.thinking_level,
            model: parts.model,
        };
        for (m, id) in parts.items {
            ctx.messages.push(m.into_owned());
            ctx.entry_ids.push(id.to_string());
        }
        ctx
    }

    /// The context as borrowed messages (synthesised and edited ones owned).
    fn context_parts(&self, leaf_id: &str) -> ContextParts<'_> {
        let path = self.path_to(leaf_id);
        let mut parts = ContextParts {
            items: Vec::with_capacity(path.len()),
            thinking_level: "off".into(),
            model: None,
        };
        let mut compaction: Option<(usize, &CompactionEntry)> = None;
        let mut edits: HashMap<&str, Option<&ContentReplacement>> = HashMap::new();
        for (i, entry) in path.iter().enumerate() {
            match entry {
                SessionEntry::ThinkingLevelChange(t) => {
                    parts.thinking_level = t.thinking_level.clone()
                }
                SessionEntry::ModelChange(m) => {
                    parts.model = Some(ModelRef {
                        provider: m.provider.clone(),
                        model_id: m.model_id.clone(),
                    })
                }
                SessionEntry::Message(m) => {
                    if let Some(a) = m.message.as_assistant() {
                        parts.model = Some(ModelRef {
                            provider: a.provider.clone(),
                            model_id: a.model.clone(),
                        });
                    }
                }
                SessionEntry::Compaction(c) => compaction = Some((i, c)),
                SessionEntry::ContextEdit(e) => {
                    edits.insert(&e.target_id, e.replacement.as_ref());
                }
                _ => {}
            }
        }
        let edited = |entry: &'_ SessionEntry| edits.get(entry.id()).copied();
        let Some((at, c)) = compaction else {
            for entry in &path {
                push_context_message(&mut parts.items, entry, edited(entry), true);
            }
            return parts;
        };
        if let Some(system) = &c.system_message {
            parts.items.push((Cow::Borrowed(system), &c.id));
        }
        if let Some(head) = &c.retained_head {
            for m in head {
                parts.items.push((Cow::Borrowed(m), &c.id));
            }
        }
        parts.items.push((
            Cow::Owned(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: iso_to_ms(&c.timestamp),
            })),
            &c.id,
        ));
        if let Some(tail) = &c.retained_tail {
            for m in tail {
                parts.items.push((Cow::Borrowed(m), &c.id));
            }
        } else if !c.retains_none()
            && let Some(first_kept) = &c.first_kept_entry_id
            && let Some(start) = path[..at].iter().position(|e| e.id() == first_kept)
        {
            // System messages before the boundary are folded into the checkpoint.
            for entry in &path[start..at] {
                push_context_message(&mut parts.items, entry, edited(entry), false);
            }
        }
        for entry in &path[at + 1..] {
            push_context_message(&mut parts.items, entry, edited(entry), true);
        }
        parts
    }
}

struct ContextParts<'a> {
    items: Vec<(Cow<'a, AgentMessage>, &'a str)>,
    thinking_level: String,
    model: Option<ModelRef>,
}

/// Pushes the message an entry contributes, with its context edit applied
/// (`Some(None)`: omitted). `keep_system: false` skips `role: "system"` messages.
fn push_context_message<'a>(
    items: &mut Vec<(Cow<'a, AgentMessage>, &'a str)>,
    entry: &'a SessionEntry,
    edit: Option<Option<&ContentReplacement>>,
    keep_system: bool,
) {
    let message = match entry {
        SessionEntry::Message(m) => {
            if !keep_system && m.message.role() == "system" {
                return;
            }
            Cow::Borrowed(&m.message)
        }
        SessionEntry::CustomMessage(c) => Cow::Owned(AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: iso_to_ms(&c.timestamp),
        })),
        SessionEntry::BranchSummary(b) if !b.summary.is_empty() => {
            Cow::Owned(AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: Some(b.from_id.clone()),
                timestamp: iso_to_ms(&b.timestamp),
            }))
        }
        _ => return,
    };
    let message = match edit {
        None => message,
        Some(None) => return,
        Some(Some(replacement)) => Cow::Owned(replace_content(message.into_owned(), replacement)),
    };
    items.push((message, entry.id()));
}

/// The message with its content replaced; roles without replaceable content
/// (summaries, shell runs, unknown roles) are returned unchanged.
fn replace_content(mut message: AgentMessage, replacement: &ContentReplacement) -> AgentMessage {
    match &mut message {
        AgentMessage::Llm(Message::User(u)) => u.content = replacement.user_parts(),
        AgentMessage::Llm(Message::Assistant(a)) => a.content = replacement.assistant_parts(),
        AgentMessage::Llm(Message::ToolResult(r)) => r.content = replacement.user_parts(),
        AgentMessage::Custom(c) => c.content = replacement.message_content(),
        _ => {}
    }
    message
}

/// Parses an ISO 8601 timestamp to Unix ms (0 when unreadable).
pub(crate) fn iso_to_ms(iso: &str) -> Timestamp {
    chrono::DateTime::parse_from_rfc3339(iso)
        .map(|t| t.timestamp_millis())
        .unwrap_or(0)
}
