//! What the conversation view shows: a list of items (user prompts, assistant
//! text and thinking blocks, tool calls with their results, notices), built
//! from the agent's events as they stream, or from a transcript after a
//! session switch.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use makai_agent::{AgentEvent, AgentMessage, ToolOutput};
use makai_ai::{AssistantContent, Message, StopReason, UserContent};

use super::images::{ImageMaker, InlineImage};
use super::summary::{Summary, SummaryKind};

/// How a notice is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Neutral information (command output).
    Info,
    /// Something the user should notice (abort, retry).
    Warning,
    /// A failure.
    Error,
}

/// Where a tool call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolState {
    /// The model is still writing the call.
    Streaming,
    /// The tool runs.
    Running,
    /// The tool finished.
    Done,
}

/// One tool call and its result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallView {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments (an object once known).
    pub args: Value,
    /// Argument text streamed so far (before the call is complete).
    pub partial_args: String,
    /// The result text (partial while running).
    pub result: Option<String>,
    /// True when the result is an error.
    pub is_error: bool,
    /// The change the call made, as a unified diff (`edit`'s `details.diff`).
    pub diff: Option<String>,
    /// Where the call is.
    pub state: ToolState,
}

/// What an item is.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    /// A user message.
    User(String),
    /// Assistant text (markdown).
    Text(String),
    /// Assistant reasoning.
    Thinking(String),
    /// A tool call.
    Tool(ToolCallView),
    /// A notice from makai itself.
    Notice(Level, String),
    /// A block shown collapsed: a skill's instructions, a compaction or a
    /// branch summary.
    Summary(Summary),
}

/// One item with its change counter (renderers cache by it).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The content.
    pub kind: ItemKind,
    /// Bumped on every change.
    pub rev: u64,
    /// A block of the assistant message still streaming (its text may
    /// still grow; markdown that waits for the whole message, such as
    /// Mermaid's `"final"` mode, waits).
    pub open: bool,
    /// Its images, drawn below it when the terminal can
    /// ([`Transcript::draw_images`]).
    pub images: Vec<Arc<InlineImage>>,
}

/// The assistant message being streamed.
#[derive(Debug, Default)]
struct Streaming {
    /// First item of the current attempt (a retry drops what follows).
    start: usize,
    /// Content index to item index.
    blocks: HashMap<usize, usize>,
}

/// The items of the conversation view.
#[derive(Debug, Default)]
pub struct Transcript {
    items: Vec<Item>,
    streaming: Option<Streaming>,
    tools: HashMap<String, usize>,
    next_rev: u64,
    /// Makes the items' images when the conversation draws them.
    maker: Option<ImageMaker>,
    /// Every image of the items, oldest first.
    images: Vec<Arc<InlineImage>>,
    /// Whether a failure has pointed at `/bug` already (once per run of the
    /// UI, as pi does per session).
    bug_hint_given: bool,
}

impl Transcript {
    /// The items, oldest first.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.items.clear();
        self.streaming = None;
        self.tools.clear();
        self.images.clear();
    }

    /// From now on the images of user messages and tool results are kept
    /// for drawing, made by `maker`.
    pub fn draw_images(&mut self, maker: ImageMaker) {
        self.maker = Some(maker);
    }

    /// Every image of the items, oldest first.
    pub fn images(&self) -> &[Arc<InlineImage>] {
        &self.images
    }

    /// The drawable images of `content` (none unless images are drawn).
    fn make_images(&mut self, content: &[UserContent]) -> Vec<Arc<InlineImage>> {
        let Some(maker) = self.maker.as_mut() else {
            return Vec::new();
        };
        let made: Vec<Arc<InlineImage>> = content
            .iter()
            .filter_map(|c| match c {
                UserContent::Image(i) => maker.make(&i.mime_type, &i.data),
                _ => None,
            })
            .collect();
        self.images.extend(made.iter().cloned());
        made
    }

    /// Appends a user message with its images; a skill invoked with
    /// `/skill:name` is a collapsed block, the text typed after it the
    /// message.
    fn push_user(&mut self, content: &[UserContent]) {
        let images = self.make_images(content);
        let text = user_text(content);
        let i = match makai_coding::resources::parse_invocation(&text) {
            Some(skill) => {
                let rest = skill.rest.map(str::to_string);
                let block = Summary::new(
                    SummaryKind::Skill {
                        name: skill.name.to_string(),
                    },
                    skill.content,
                );
                let block = self.push(ItemKind::Summary(block));
                match rest {
                    Some(rest) => self.push(ItemKind::User(rest)),
                    None => block,
                }
            }
            None => self.push(ItemKind::User(text)),
        };
        self.items[i].images = images;
    }

    /// Forgets what clicks chose for the collapsed blocks: they follow
    /// Ctrl+O again.
    pub fn unset_summary_choices(&mut self) {
        let rev = self.rev();
        for item in &mut self.items {
            if let ItemKind::Summary(s) = &mut item.kind
                && s.expanded.take().is_some()
            {
                item.rev = rev;
            }
        }
    }

    /// Expands item `i` when it is a collapsed block, or collapses it
    /// (`expand_all`: whether Ctrl+O has it expanded now); false for any
    /// other item.
    pub fn toggle_summary(&mut self, i: usize, expand_all: bool) -> bool {
        let mut toggled = false;
        self.edit(i, |k| {
            if let ItemKind::Summary(s) = k
                && s.toggles()
            {
                s.expanded = Some(!s.is_expanded(expand_all));
                toggled = true;
            }
        });
        toggled
    }

    /// Gives tool call `id`'s item the images of its result.
    fn tool_images(&mut self, id: &str, content: &[UserContent]) {
        if !content.iter().any(|c| matches!(c, UserContent::Image(_))) {
            return;
        }
        let images = self.make_images(content);
        let rev = self.rev();
        if let Some(item) = self.tools.get(id).and_then(|&i| self.items.get_mut(i)) {
            item.images = images;
            item.rev = rev;
        }
    }

    fn rev(&mut self) -> u64 {
        self.next_rev += 1;
        self.next_rev
    }

    /// Appends an item; returns its index.
    pub fn push(&mut self, kind: ItemKind) -> usize {
        let rev = self.rev();
        if let ItemKind::Tool(t) = &kind {
            self.tools.insert(t.id.clone(), self.items.len());
        }
        self.items.push(Item {
            kind,
            rev,
            open: false,
            images: Vec::new(),
        });
        self.items.len() - 1
    }

    /// Appends a notice.
    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.push(ItemKind::Notice(level, text.into()));
    }

    /// Replaces the text of notice `i` (nothing when it is not a notice).
    pub fn set_notice(&mut self, i: usize, text: impl Into<String>) {
        let text = text.into();
        self.edit(i, |k| {
            if let ItemKind::Notice(_, t) = k {
                *t = text;
            }
        });
    }

    fn edit(&mut self, i: usize, f: impl FnOnce(&mut ItemKind)) {
        let rev = self.rev();
        if let Some(item) = self.items.get_mut(i) {
            f(&mut item.kind);
            item.rev = rev;
        }
    }

    fn edit_tool(&mut self, id: &str, f: impl FnOnce(&mut ToolCallView)) {
        if let Some(&i) = self.tools.get(id) {
            self.edit(i, |k| {
                if let ItemKind::Tool(t) = k {
                    f(t);
                }
            });
        }
    }

    /// Replaces everything with the items of a transcript.
    pub fn rebuild(&mut self, messages: &[AgentMessage]) {
        self.clear();
        for m in messages {
            match m {
                AgentMessage::Llm(Message::User(u)) => self.push_user(&u.content),
                AgentMessage::Llm(Message::Assistant(a)) => {
                    for c in &a.content {
                        match c {
                            AssistantContent::Text(t) => self.push(ItemKind::Text(t.text.clone())),
                            AssistantContent::Thinking(t) => {
                                self.push(ItemKind::Thinking(t.thinking.clone()))
                            }
                            AssistantContent::ToolCall(tc) => {
                                self.push(ItemKind::Tool(ToolCallView {
                                    id: tc.id.clone(),
                                    name: tc.name.clone(),
                                    args: Value::Object(tc.arguments.clone()),
                                    partial_args: String::new(),
                                    result: None,
                                    is_error: false,
                                    diff: None,
                                    state: ToolState::Running,
                                }))
                            }
                            _ => continue,
                        };
                    }
                    self.end_notice(a.stop_reason, a.error_message.as_deref());
                }
                AgentMessage::Llm(Message::ToolResult(r)) => {
                    let text = makai_coding::tools::terminal_text::clean(&r.text_content());
                    let is_error = r.is_error;
                    let diff = diff_of(r.details.as_ref());
                    self.edit_tool(&r.tool_call_id, |t| {
                        t.result = Some(text);
                        t.is_error = is_error;
                        t.diff = diff;
                        t.state = ToolState::Done;
                    });
                    self.tool_images(&r.tool_call_id, &r.content);
                }
                AgentMessage::CompactionSummary(c) => {
                    self.push(ItemKind::Summary(Summary::new(
                        SummaryKind::Compaction {
                            tokens_before: c.tokens_before,
                        },
                        c.summary.clone(),
                    )));
                }
                // A `!` command reads back as it showed when it ran.
                AgentMessage::BashExecution(b) => {
                    self.notice(Level::Info, format!("$ {}", b.command));
                    let (level, body) =
                        super::bang::result_notice(&b.output, b.exit_code, b.cancelled);
                    self.notice(level, body);
                }
                // pi shows a custom message it is told to display under its
                // kind, and hides the others.
                AgentMessage::Custom(c) => {
                    if c.display {
                        let text = m.text();
                        self.push(ItemKind::Summary(Summary::new(
                            SummaryKind::Custom {
                                custom_type: c.custom_type.clone(),
                            },
                            text,
                        )));
                    }
                }
                AgentMessage::BranchSummary(b) => {
                    self.push(ItemKind::Summary(Summary::new(
                        SummaryKind::Branch,
                        b.summary.clone(),
                    )));
                }
                other => {
                    let text = other.text();
                    if !text.trim().is_empty() {
                        self.notice(Level::Info, format!("[{}] {}", other.role(), text.trim()));
                    }
                }
            }
        }
    }

    fn end_notice(&mut self, reason: StopReason, error: Option<&str>) {
        match reason {
            StopReason::Error => self.notice(
                Level::Error,
                format!("Error: {}", error.unwrap_or("the request failed")),
            ),
            StopReason::Aborted => self.notice(Level::Warning, "Aborted."),
            StopReason::Length => self.notice(
                Level::Warning,
                "The reply was cut off: the model reached its output token limit.",
            ),
            _ => {}
        }
    }

    /// Updates the items for an agent event.
    pub fn apply(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => match message.as_ref() {
                AgentMessage::Llm(Message::User(u)) => self.push_user(&u.content),
                AgentMessage::Llm(Message::Assistant(_)) => {
                    self.streaming = Some(Streaming {
                        start: self.items.len(),
                        blocks: HashMap::new(),
                    });
                }
                _ => {}
            },
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => self.stream_event(assistant_message_event),
            AgentEvent::MessageEnd { message } => {
                if let Some(a) = message.as_assistant() {
                    self.finish_blocks(a);
                    self.end_notice(a.stop_reason, a.error_message.as_deref());
                    if !self.bug_hint_given && crate::bug_report::suggests_report(a) {
                        self.bug_hint_given = true;
                        self.notice(
                            Level::Info,
                            "If this looks like a bug in makai, /bug prepares a report for its developers.",
                        );
                    }
                    self.streaming = None;
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                if !self.tools.contains_key(tool_call_id) {
                    self.push(ItemKind::Tool(ToolCallView {
                        id: tool_call_id.clone(),
                        name: tool_name.clone(),
                        args: Value::Null,
                        partial_args: String::new(),
                        result: None,
                        is_error: false,
                        diff: None,
                        state: ToolState::Running,
                    }));
                }
                let args = args.as_ref().clone();
                self.edit_tool(tool_call_id, |t| {
                    if args.is_object() {
                        t.args = args;
                    }
                    t.state = ToolState::Running;
                });
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                let text = output_text(partial_result);
                self.edit_tool(tool_call_id, |t| t.result = Some(text));
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                let text = output_text(result);
                let is_error = *is_error;
                let diff = diff_of(Some(&result.details));
                self.edit_tool(tool_call_id, |t| {
                    t.result = Some(text);
                    t.is_error = is_error;
                    t.diff = diff;
                    t.state = ToolState::Done;
                });
                self.tool_images(tool_call_id, &result.content);
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.notice(
                Level::Warning,
                format!(
                    "Retrying ({attempt}/{max_attempts}) in {:.1}s: {error_message}",
                    *delay_ms as f64 / 1000.0
                ),
            ),
            AgentEvent::AutoRetryEnd {
                success: false,
                final_error,
                ..
            } => self.notice(
                Level::Error,
                format!(
                    "Retries exhausted: {}",
                    final_error.as_deref().unwrap_or("unknown error")
                ),
            ),
            AgentEvent::CompactionEnd {
                result: Some(info), ..
            } => {
                self.notice(
                    Level::Info,
                    format!(
                        "Context compacted: about {} tokens before, {} after.",
                        info.tokens_before, info.estimated_tokens_after
                    ),
                );
                if !info.summary.trim().is_empty() {
                    self.push(ItemKind::Summary(Summary::new(
                        SummaryKind::Compaction {
                            tokens_before: info.tokens_before,
                        },
                        info.summary.clone(),
                    )));
                }
            }
            AgentEvent::CompactionEnd {
                error_message: Some(e),
                ..
            } => self.notice(Level::Error, format!("Compaction failed: {e}")),
            _ => {}
        }
    }
}

/// The text parts of a user message, with a note for images.
fn user_text(content: &[UserContent]) -> String {
    let mut text = String::new();
    let mut images = 0;
    for c in content {
        match c {
            UserContent::Text(t) => text.push_str(&t.text),
            _ => images += 1,
        }
    }
    if images > 0 {
        text.push_str(&format!("\n[{images} image(s) attached]"));
    }
    text
}

/// The unified diff a tool's details carry (`edit`'s `diff`, as pi's).
fn diff_of(details: Option<&Value>) -> Option<String> {
    details?
        .get("diff")?
        .as_str()
        .filter(|d| !d.trim().is_empty())
        .map(str::to_string)
}

/// A result's text as shown: what any tool returned (an MCP server's
/// output, a file read) cleaned of escape sequences and control characters,
/// which the terminal would otherwise run or show as text.
fn output_text(out: &ToolOutput) -> String {
    let text = makai_coding::tools::terminal_text::clean(&out.text_content());
    let images = out
        .content
        .iter()
        .filter(|c| !matches!(c, UserContent::Text(_)))
        .count();
    if images > 0 {
        format!("{text}\n[{images} image(s)]")
    } else {
        text
    }
}

#[path = "transcript_stream.rs"]
mod stream;

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
