//! The `response` record and the typed `data` of each command's success
//! (`docs/rpc-commands.md`).

use serde::{Serialize, Serializer};
use serde_json::Value;

use makai_agent::{AgentMessage, CompactionInfo, QueueMode};
use makai_ai::{Model, ThinkingLevel};
use makai_coding::CommandInfo;
use makai_coding::session::SessionEntry;

use crate::command::RecordError;

/// What happened to a submitted prompt, steer or follow-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputDisposition {
    /// A run started for it.
    Started,
    /// It was queued into the running run.
    Queued,
    /// It was consumed without starting a run.
    Handled,
}

/// `get_state`'s data.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcState {
    /// The selected model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// The thinking level.
    pub thinking_level: ThinkingLevel,
    /// True while a run goes on.
    pub is_streaming: bool,
    /// True while a compaction goes on.
    pub is_compacting: bool,
    /// Steering queue delivery.
    pub steering_mode: QueueMode,
    /// Follow-up queue delivery.
    pub follow_up_mode: QueueMode,
    /// The session file (`null` for an in-memory session).
    pub session_file: Option<String>,
    /// The session id.
    pub session_id: String,
    /// The display name, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// Whether automatic compaction is on.
    pub auto_compaction_enabled: bool,
    /// Messages in the transcript.
    pub message_count: usize,
    /// Queued steering plus follow-up messages.
    pub pending_message_count: usize,
    /// makai: the limits in force (`maxTurns` and `maxTime` per run,
    /// `maxTokens` and `maxCost` for the session tree).
    pub limits: makai_coding::Limits,
    /// makai: the session tree's budget (spent, reserved, caps).
    pub budget: makai_agent::LedgerReport,
}

/// Tokens used, by kind (`get_session_stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    /// Uncached input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// All of the above.
    pub total: u64,
}

/// How full the context window is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// Estimated context tokens (`None` right after a compaction, until the next response).
    pub tokens: Option<u64>,
    /// The model's context window.
    pub context_window: u64,
    /// `tokens` as a percentage of the window.
    pub percent: Option<f64>,
}

/// pi's `SessionStats` (`get_session_stats`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// The session file.
    pub session_file: Option<String>,
    /// The session id.
    pub session_id: String,
    /// User messages in the transcript.
    pub user_messages: usize,
    /// Assistant messages.
    pub assistant_messages: usize,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// All messages.
    pub total_messages: usize,
    /// Tokens over every assistant message and summary call.
    pub tokens: TokenTotals,
    /// Cost in dollars.
    pub cost: f64,
    /// The context window's use (absent without a context window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
    /// makai: sub-agents this session started (their usage is in
    /// `tokens` and `cost`, reported by their `task` results).
    pub subagents: usize,
    /// makai: the session tree's budget (caps, spent, reserved).
    pub budget: makai_agent::LedgerReport,
}

/// pi's `BashResult` (`bash`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashResult {
    /// The (possibly truncated) output.
    pub output: String,
    /// The exit code (`None` when killed or cancelled).
    pub exit_code: Option<i64>,
    /// True when the run was cancelled.
    pub cancelled: bool,
    /// True when the output was truncated.
    pub truncated: bool,
    /// Where the full output is, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// A user message a fork can start from (`get_fork_messages`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkMessage {
    /// The entry id to pass to `fork`.
    pub entry_id: String,
    /// The message text.
    pub text: String,
}

/// One node of `get_tree`: an entry, its children, its label.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeNode {
    /// The entry.
    pub entry: SessionEntry,
    /// Entries whose parent it is, oldest first.
    pub children: Vec<TreeNode>,
    /// Its label, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The `data` of a successful response.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResponseData {
    /// `data: null` (`cycle_model` with one model, `cycle_thinking_level`
    /// without reasoning).
    Null(()),
    /// `prompt`, `steer`, `follow_up`.
    Disposition {
        /// What happened to the input.
        disposition: InputDisposition,
    },
    /// `clear_queue`: the removed messages' text.
    Queue {
        /// Steering messages.
        steering: Vec<String>,
        /// Follow-up messages.
        #[serde(rename = "followUp")]
        follow_up: Vec<String>,
    },
    /// `new_session`, `switch_session`, `clone`.
    Cancelled {
        /// Always false: makai has no extensions that cancel.
        cancelled: bool,
    },
    /// `fork`.
    Fork {
        /// The text of the message forked from.
        text: String,
        /// Always false.
        cancelled: bool,
    },
    /// `get_state`.
    State(Box<RpcState>),
    /// `get_messages`.
    Messages {
        /// The transcript.
        messages: Vec<AgentMessage>,
    },
    /// `set_model`.
    Model(Box<Model>),
    /// `cycle_model`.
    CycledModel {
        /// The model now selected.
        model: Box<Model>,
        /// Its thinking level.
        #[serde(rename = "thinkingLevel")]
        thinking_level: ThinkingLevel,
        /// Whether the cycle is over a scoped list.
        #[serde(rename = "isScoped")]
        is_scoped: bool,
    },
    /// `get_available_models`.
    Models {
        /// Every configured model.
        models: Vec<Model>,
    },
    /// `cycle_thinking_level`.
    Level {
        /// The level now selected.
        level: ThinkingLevel,
    },
    /// `get_available_thinking_levels`.
    Levels {
        /// The levels the model supports.
        levels: Vec<ThinkingLevel>,
    },
    /// `compact` (pi's `CompactionResult`).
    Compaction(Box<CompactionInfo>),
    /// `bash`.
    Bash(BashResult),
    /// `get_session_stats`.
    Stats(Box<SessionStats>),
    /// `export_html`.
    Path {
        /// The file written.
        path: String,
    },
    /// `get_fork_messages`.
    ForkMessages {
        /// The user messages, oldest first.
        messages: Vec<ForkMessage>,
    },
    /// `get_entries`.
    Entries {
        /// Entries in append order.
        entries: Vec<SessionEntry>,
        /// The current leaf.
        #[serde(rename = "leafId")]
        leaf_id: Option<String>,
    },
    /// `get_tree`.
    Tree {
        /// The roots.
        tree: Vec<TreeNode>,
        /// The current leaf.
        #[serde(rename = "leafId")]
        leaf_id: Option<String>,
    },
    /// `get_last_assistant_text`.
    Text {
        /// The text, `null` when there is none.
        text: Option<String>,
    },
    /// `get_commands`.
    Commands {
        /// Templates and skills.
        commands: Vec<CommandInfo>,
    },
}

/// pi's `{"type": "response", "id"?, "command", "success", "data"?, "error"?}`.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcResponse {
    /// The command's id, when it had one.
    pub id: Option<Value>,
    /// The command's `type` (`parse` for a line that was not a command).
    pub command: String,
    /// `Ok(data)` for success (`None`: no `data` field), `Err(text)` for failure.
    pub outcome: Result<Option<ResponseData>, String>,
}

impl RpcResponse {
    /// A success.
    pub fn success(
        id: Option<Value>,
        command: impl Into<String>,
        data: Option<ResponseData>,
    ) -> Self {
        RpcResponse {
            id,
            command: command.into(),
            outcome: Ok(data),
        }
    }

    /// A failure saying `error`.
    pub fn failure(
        id: Option<Value>,
        command: impl Into<String>,
        error: impl Into<String>,
    ) -> Self {
        RpcResponse {
            id,
            command: command.into(),
            outcome: Err(error.into()),
        }
    }

    /// True for a success.
    pub fn is_success(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The record as one JSON line (without the newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            // Only a non-string map key could fail here; say so instead of panicking.
            format!(
                "{{\"type\":\"response\",\"command\":{},\"success\":false,\"error\":{}}}",
                Value::String(self.command.clone()),
                Value::String(format!("the response could not be encoded: {e}"))
            )
        })
    }
}

impl From<RecordError> for RpcResponse {
    fn from(e: RecordError) -> Self {
        RpcResponse::failure(e.id, e.command, e.message)
    }
}

impl Serialize for RpcResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        map.serialize_entry("command", &self.command)?;
        match &self.outcome {
            Ok(data) => {
                map.serialize_entry("success", &true)?;
                if let Some(data) = data {
                    map.serialize_entry("data", data)?;
                }
            }
            Err(error) => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}
