//! The records a client sends: pi's RPC commands (`docs/rpc-commands.md`) and
//! its answers to extension UI requests (`docs/rpc-extension-ui.md`).
//!
//! [`Record::parse`] reads one line. A line that is not JSON, not an object or
//! has no string `type` is a parse failure (pi's `command: "parse"` response);
//! a known command whose fields do not fit is a failure of that command whose
//! text names the field (`invalid field 'customInstructions': invalid type:
//! integer `7`, expected a string`); an unknown `type` is `Unknown command:
//! NAME`, as pi answers. Fields pi does not define are ignored, as pi does.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use makai_agent::{QueueMode, SteeringBehavior};
use makai_ai::{ImageContent, ThinkingLevel};

/// What to do with a prompt sent while the agent is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamingBehavior {
    /// Queue it as a steering message.
    #[serde(rename = "steer")]
    Steer,
    /// Queue it as a follow-up message.
    #[serde(rename = "followUp")]
    FollowUp,
}

/// An image attached to a prompt: pi's `ImageContent`
/// (`{"type": "image", "data": base64, "mimeType": ...}`).
#[derive(Clone, Debug, PartialEq)]
pub struct ImagePart(pub ImageContent);

impl Serialize for ImagePart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        makai_ai::UserContent::Image(self.0.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for ImagePart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            #[serde(rename = "type")]
            kind: String,
            data: String,
            mime_type: String,
        }
        let raw = Raw::deserialize(d)?;
        if raw.kind != "image" {
            return Err(serde::de::Error::custom(format!(
                "expected an image part with \"type\": \"image\", got \"type\": \"{}\"",
                crate::quote(&raw.kind, 40)
            )));
        }
        Ok(ImagePart(ImageContent {
            data: raw.data,
            mime_type: raw.mime_type,
        }))
    }
}

/// `prompt`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCommand {
    /// The prompt text (skill commands and prompt templates are expanded).
    pub message: String,
    /// Attached images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<ImagePart>>,
    /// Required while the agent runs: queue as steering or follow-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// `steer` and `follow_up`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueCommand {
    /// The message text.
    pub message: String,
    /// Attached images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<ImagePart>>,
}

/// `new_session`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionCommand {
    /// The session this one continues from (recorded in its header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// `set_model`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModelCommand {
    /// The provider, e.g. `anthropic`.
    pub provider: String,
    /// The model id.
    pub model_id: String,
}

/// `set_thinking_level`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetThinkingLevelCommand {
    /// The level.
    pub level: ThinkingLevel,
}

/// `set_steering_mode`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSteeringModeCommand {
    /// How many queued steering messages each delivery point takes.
    pub mode: QueueMode,
    /// makai's extension: when steering interrupts tool calls
    /// (`interrupt-tools`, the default: calls not started yet are skipped;
    /// `after-tool-batch`: pi 1.x's delivery after the whole batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<SteeringBehavior>,
}

/// `set_follow_up_mode`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetFollowUpModeCommand {
    /// How many queued follow-up messages each delivery point takes.
    pub mode: QueueMode,
}

/// `compact`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactCommand {
    /// What the summary should focus on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
}

/// `set_auto_compaction` and `set_auto_retry`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnabledCommand {
    /// On or off.
    pub enabled: bool,
}

/// `bash`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashCommand {
    /// The command line.
    pub command: String,
    /// Store the run in the session but keep it out of the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
}

/// `export_html`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportHtmlCommand {
    /// Where to write the file (default: beside the session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_path: Option<String>,
}

/// `switch_session`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwitchSessionCommand {
    /// The session file to load.
    pub session_path: String,
}

/// `fork`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkCommand {
    /// The user message entry to fork from.
    pub entry_id: String,
}

/// `get_entries`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GetEntriesCommand {
    /// Only entries strictly after this entry id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// `set_session_name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetSessionNameCommand {
    /// The display name (trimmed; empty is refused).
    pub name: String,
}

/// One RPC command, by pi's name (`{"type": "prompt", ...}`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RpcCommand {
    /// Send a prompt (or queue it while running, per `streamingBehavior`).
    Prompt(PromptCommand),
    /// Queue a steering message.
    Steer(QueueCommand),
    /// Queue a follow-up message.
    FollowUp(QueueCommand),
    /// Abort the current operation and wait until idle.
    Abort,
    /// Remove the queued messages and return their text.
    ClearQueue,
    /// Start a fresh session.
    NewSession(NewSessionCommand),
    /// The session state.
    GetState,
    /// Every message of the transcript.
    GetMessages,
    /// Switch to a model.
    SetModel(SetModelCommand),
    /// Switch to the next available model.
    CycleModel,
    /// Every configured model.
    GetAvailableModels,
    /// Set the thinking level.
    SetThinkingLevel(SetThinkingLevelCommand),
    /// Switch to the next thinking level.
    CycleThinkingLevel,
    /// The thinking levels of the current model.
    GetAvailableThinkingLevels,
    /// Set how steering messages are delivered.
    SetSteeringMode(SetSteeringModeCommand),
    /// Set how follow-up messages are delivered.
    SetFollowUpMode(SetFollowUpModeCommand),
    /// Compact the context now.
    Compact(CompactCommand),
    /// Turn automatic compaction on or off.
    SetAutoCompaction(EnabledCommand),
    /// Turn automatic retries on or off.
    SetAutoRetry(EnabledCommand),
    /// Stop a retry in progress.
    AbortRetry,
    /// Run a shell command whose output joins the context.
    Bash(BashCommand),
    /// Abort the running shell command.
    AbortBash,
    /// Token, cost and context statistics.
    GetSessionStats,
    /// Export the session as HTML.
    ExportHtml(ExportHtmlCommand),
    /// Load another session file.
    SwitchSession(SwitchSessionCommand),
    /// Fork a new session from an earlier user message.
    Fork(ForkCommand),
    /// Copy the current branch into a new session.
    Clone,
    /// The user messages a fork can start from.
    GetForkMessages,
    /// Session entries in append order.
    GetEntries(GetEntriesCommand),
    /// The session as a tree of entries.
    GetTree,
    /// The text of the last assistant message.
    GetLastAssistantText,
    /// Name the session.
    SetSessionName(SetSessionNameCommand),
    /// The commands a prompt can invoke (templates, skills).
    GetCommands,
    /// makai: change the limits in force (`maxTurns`, `maxTime` per run;
    /// `maxTokens`, `maxCost` for the session tree); the fields given
    /// replace the current ones, the others stay. Raising a cap lets a
    /// session the budget stopped go on.
    SetLimits(makai_coding::Limits),
}

impl RpcCommand {
    /// The command's `type`, as its response's `command` repeats it.
    pub fn name(&self) -> &'static str {
        match self {
            RpcCommand::Prompt(_) => "prompt",
            RpcCommand::Steer(_) => "steer",
            RpcCommand::FollowUp(_) => "follow_up",
            RpcCommand::Abort => "abort",
            RpcCommand::ClearQueue => "clear_queue",
            RpcCommand::NewSession(_) => "new_session",
            RpcCommand::GetState => "get_state",
            RpcCommand::GetMessages => "get_messages",
            RpcCommand::SetModel(_) => "set_model",
            RpcCommand::CycleModel => "cycle_model",
            RpcCommand::GetAvailableModels => "get_available_models",
            RpcCommand::SetThinkingLevel(_) => "set_thinking_level",
            RpcCommand::CycleThinkingLevel => "cycle_thinking_level",
            RpcCommand::GetAvailableThinkingLevels => "get_available_thinking_levels",
            RpcCommand::SetSteeringMode(_) => "set_steering_mode",
            RpcCommand::SetFollowUpMode(_) => "set_follow_up_mode",
            RpcCommand::Compact(_) => "compact",
            RpcCommand::SetAutoCompaction(_) => "set_auto_compaction",
            RpcCommand::SetAutoRetry(_) => "set_auto_retry",
            RpcCommand::AbortRetry => "abort_retry",
            RpcCommand::Bash(_) => "bash",
            RpcCommand::AbortBash => "abort_bash",
            RpcCommand::GetSessionStats => "get_session_stats",
            RpcCommand::ExportHtml(_) => "export_html",
            RpcCommand::SwitchSession(_) => "switch_session",
            RpcCommand::Fork(_) => "fork",
            RpcCommand::Clone => "clone",
            RpcCommand::GetForkMessages => "get_fork_messages",
            RpcCommand::GetEntries(_) => "get_entries",
            RpcCommand::GetTree => "get_tree",
            RpcCommand::GetLastAssistantText => "get_last_assistant_text",
            RpcCommand::SetSessionName(_) => "set_session_name",
            RpcCommand::GetCommands => "get_commands",
            RpcCommand::SetLimits(_) => "set_limits",
        }
    }

    /// Every command name, in the order of pi's `rpc-commands.md`.
    pub const NAMES: [&'static str; 33] = [
        "prompt",
        "steer",
        "follow_up",
        "abort",
        "clear_queue",
        "new_session",
        "get_state",
        "get_messages",
        "set_model",
        "cycle_model",
        "get_available_models",
        "set_thinking_level",
        "cycle_thinking_level",
        "get_available_thinking_levels",
        "set_steering_mode",
        "set_follow_up_mode",
        "compact",
        "set_auto_compaction",
        "set_auto_retry",
        "abort_retry",
        "bash",
        "abort_bash",
        "get_session_stats",
        "export_html",
        "switch_session",
        "fork",
        "clone",
        "get_fork_messages",
        "get_entries",
        "get_tree",
        "get_last_assistant_text",
        "set_session_name",
        "get_commands",
    ];

    /// Reads the command named `kind` from the fields of its object (the
    /// `type` and `id` keys are ignored). `Ok(None)` for an unknown `kind`.
    pub fn from_fields(kind: &str, fields: Map<String, Value>) -> Result<Option<Self>, String> {
        Ok(Some(match kind {
            "prompt" => RpcCommand::Prompt(fields_of(fields)?),
            "steer" => RpcCommand::Steer(fields_of(fields)?),
            "follow_up" => RpcCommand::FollowUp(fields_of(fields)?),
            "abort" => RpcCommand::Abort,
            "clear_queue" => RpcCommand::ClearQueue,
            "new_session" => RpcCommand::NewSession(fields_of(fields)?),
            "get_state" => RpcCommand::GetState,
            "get_messages" => RpcCommand::GetMessages,
            "set_model" => RpcCommand::SetModel(fields_of(fields)?),
            "cycle_model" => RpcCommand::CycleModel,
            "get_available_models" => RpcCommand::GetAvailableModels,
            "set_thinking_level" => RpcCommand::SetThinkingLevel(fields_of(fields)?),
            "cycle_thinking_level" => RpcCommand::CycleThinkingLevel,
            "get_available_thinking_levels" => RpcCommand::GetAvailableThinkingLevels,
            "set_steering_mode" => RpcCommand::SetSteeringMode(fields_of(fields)?),
            "set_follow_up_mode" => RpcCommand::SetFollowUpMode(fields_of(fields)?),
            "compact" => RpcCommand::Compact(fields_of(fields)?),
            "set_auto_compaction" => RpcCommand::SetAutoCompaction(fields_of(fields)?),
            "set_auto_retry" => RpcCommand::SetAutoRetry(fields_of(fields)?),
            "abort_retry" => RpcCommand::AbortRetry,
            "bash" => RpcCommand::Bash(fields_of(fields)?),
            "abort_bash" => RpcCommand::AbortBash,
            "get_session_stats" => RpcCommand::GetSessionStats,
            "export_html" => RpcCommand::ExportHtml(fields_of(fields)?),
            "switch_session" => RpcCommand::SwitchSession(fields_of(fields)?),
            "fork" => RpcCommand::Fork(fields_of(fields)?),
            "clone" => RpcCommand::Clone,
            "get_fork_messages" => RpcCommand::GetForkMessages,
            "get_entries" => RpcCommand::GetEntries(fields_of(fields)?),
            "get_tree" => RpcCommand::GetTree,
            "get_last_assistant_text" => RpcCommand::GetLastAssistantText,
            "set_session_name" => RpcCommand::SetSessionName(fields_of(fields)?),
            "get_commands" => RpcCommand::GetCommands,
            "set_limits" => RpcCommand::SetLimits(fields_of(fields)?),
            _ => return Ok(None),
        }))
    }

    /// True for commands that start work (refused while a server drains).
    pub fn starts_work(&self) -> bool {
        matches!(
            self,
            RpcCommand::Prompt(_)
                | RpcCommand::Steer(_)
                | RpcCommand::FollowUp(_)
                | RpcCommand::Bash(_)
                | RpcCommand::Compact(_)
                | RpcCommand::Fork(_)
        )
    }
}

/// Reads a command's payload struct, naming the field that does not fit.
fn fields_of<T: DeserializeOwned>(mut fields: Map<String, Value>) -> Result<T, String> {
    fields.remove("type");
    fields.remove("id");
    fields_of_keeping_id(fields)
}

/// [`fields_of`] for records whose `id` is one of their fields.
fn fields_of_keeping_id<T: DeserializeOwned>(fields: Map<String, Value>) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(Value::Object(fields)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            inner
        } else {
            format!("invalid field '{path}': {inner}")
        }
    })
}

/// One command with its correlation id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcRequest {
    /// The client's id, repeated in the response (pi's ids are strings; any
    /// JSON value is echoed back unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The command.
    #[serde(flatten)]
    pub command: RpcCommand,
}

/// The client's answer to an `extension_ui_request` (a dialog).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtensionUiResponse {
    /// The id of the request it answers.
    pub id: String,
    /// The chosen option (`select`) or entered text (`input`, `editor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The answer to a `confirm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// True when the user dismissed the dialog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
}

/// A line the client sent that could not be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// The record's id, when it had one.
    pub id: Option<Value>,
    /// `parse` when the line was not a command at all, else the command's type.
    pub command: String,
    /// What was wrong, for the `error` field of the response.
    pub message: String,
}

/// One line from the client.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A command, answered by one response.
    Command(RpcRequest),
    /// An answer to an extension UI dialog (no response).
    UiResponse(ExtensionUiResponse),
}

impl Record {
    /// Reads one record (the line without its terminator).
    pub fn parse(line: &[u8]) -> Result<Record, RecordError> {
        let parse_failure = |message: String| RecordError {
            id: None,
            command: "parse".into(),
            message: format!("Failed to parse command: {message}"),
        };
        let text = std::str::from_utf8(line)
            .map_err(|e| parse_failure(format!("the line is not valid UTF-8: {e}")))?;
        let value: Value = serde_json::from_str(text).map_err(|e| parse_failure(e.to_string()))?;
        Record::from_value(value)
    }

    /// Reads one record from parsed JSON.
    pub fn from_value(value: Value) -> Result<Record, RecordError> {
        let Value::Object(fields) = value else {
            return Err(RecordError {
                id: None,
                command: "parse".into(),
                message: format!(
                    "Failed to parse command: a command is a JSON object with a string field \"type\", not {}",
                    kind_of(&value)
                ),
            });
        };
        let id = fields.get("id").filter(|v| !v.is_null()).cloned();
        let Some(kind) = fields
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return Err(RecordError {
                id,
                command: "parse".into(),
                message: "Failed to parse command: a command is a JSON object with a string field \"type\"".into(),
            });
        };
        if kind == "extension_ui_response" {
            // The id is the answer's own field (the dialog it answers), so it stays.
            let mut fields = fields;
            fields.remove("type");
            return fields_of_keeping_id(fields)
                .map(Record::UiResponse)
                .map_err(|message| RecordError {
                    id,
                    command: kind,
                    message,
                });
        }
        match RpcCommand::from_fields(&kind, fields) {
            Ok(Some(command)) => Ok(Record::Command(RpcRequest { id, command })),
            Ok(None) => Err(RecordError {
                id,
                message: format!("Unknown command: {}", crate::quote(&kind, 200)),
                command: kind,
            }),
            Err(message) => Err(RecordError {
                id,
                command: kind,
                message,
            }),
        }
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'de> Deserialize<'de> for RpcRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Record::from_value(Value::deserialize(d)?) {
            Ok(Record::Command(request)) => Ok(request),
            Ok(Record::UiResponse(_)) => Err(serde::de::Error::custom(
                "an extension_ui_response is not a command",
            )),
            Err(e) => Err(serde::de::Error::custom(e.message)),
        }
    }
}
