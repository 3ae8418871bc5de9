//! makai-rpc: the wire types of pi's RPC and JSON modes, shared by makai's RPC
//! mode, `makai serve` and the tests.
//!
//! - [`Record`] / [`RpcCommand`]: what a client sends (`docs/rpc-commands.md`,
//!   `docs/rpc-extension-ui.md`), read with errors that name the field.
//! - [`RpcResponse`] / [`ResponseData`]: the answer to each command.
//! - [`EventRecord`]: the agent's events in pi's JSON shape ([`JsonEvent`])
//!   and the session-level events ([`SessionEvent`]: `agent_settled`,
//!   `bash_execution_update`, `extension_ui_request`...).
//!
//! Plain serde data: nothing here runs a command.
//!
//! ```
//! use makai_rpc::{Record, RpcCommand};
//!
//! let Ok(Record::Command(request)) = Record::parse(br#"{"id":"1","type":"compact"}"#) else {
//!     panic!("a compact command");
//! };
//! assert!(matches!(request.command, RpcCommand::Compact(_)));
//! let error = Record::parse(br#"{"type":"compact","customInstructions":7}"#).unwrap_err();
//! assert!(error.message.contains("customInstructions"));
//! ```

mod command;
mod event;
mod response;

pub use command::{
    BashCommand, CompactCommand, EnabledCommand, ExportHtmlCommand, ExtensionUiResponse,
    ForkCommand, GetEntriesCommand, ImagePart, NewSessionCommand, PromptCommand, QueueCommand,
    Record, RecordError, RpcCommand, RpcRequest, SetFollowUpModeCommand, SetModelCommand,
    SetSessionNameCommand, SetSteeringModeCommand, SetThinkingLevelCommand, StreamingBehavior,
    SwitchSessionCommand,
};
pub use event::{EventRecord, ExtensionUiRequest, JsonEvent, SessionEvent};
pub use response::{
    BashResult, ContextUsage, ForkMessage, InputDisposition, ResponseData, RpcResponse, RpcState,
    SessionStats, TokenTotals, TreeNode,
};

/// `text` for an error message: whole when short, else its first `max`
/// characters and its length.
pub(crate) fn quote(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}
