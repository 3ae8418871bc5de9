//! The bounded record of the calls a tool made to other tools (pi's
//! `NestedToolCalls`), kept on the calling tool's result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The calls one tool made to other tools; their results only reached the
/// calling tool. Never sent to a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCalls {
    /// The calls, in the order they were made.
    #[serde(default)]
    pub calls: Vec<NestedToolCall>,
    /// False when the record lost anything (too many calls, arguments too long).
    #[serde(default)]
    pub complete: bool,
}

/// One nested call: what was called with what, and how it ended (never its result).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedToolCall {
    /// The call's id.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments, when they were small enough to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// The arguments' size in bytes, when they were left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    /// How it ended.
    pub status: NestedCallStatus,
    /// How long it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What went wrong, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a nested call ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NestedCallStatus {
    /// It returned a result.
    #[default]
    Ok,
    /// It failed.
    Error,
    /// It had not finished when the calling tool ended.
    Unfinished,
}
