//! The boundary with the MCP SDK (`rmcp`): every use of its types lives under
//! this module, so an SDK upgrade touches nothing else.
//!
//! Data crosses the boundary in the MCP specification's JSON shape (the SDK's
//! types are serialized, then read by [`crate::content`]), or as makai's own
//! types defined here ([`RemoteTool`], [`ProgressUpdate`], [`CallFailure`]).

pub(crate) mod client;
pub(crate) mod server;

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, Tool as SdkTool};
use serde_json::Value;

/// A tool as a server lists it, in makai's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    /// The name the server knows it by.
    pub name: String,
    /// A human-readable title, when the server gives one.
    pub title: Option<String>,
    /// What it does (empty when the server gives no description).
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// True when the server marks it `readOnlyHint: true`.
    pub read_only: bool,
}

/// A progress notification for a running call.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening, when the server says.
    pub message: Option<String>,
}

/// Why a call produced no result.
#[derive(Clone, Debug, PartialEq)]
pub enum CallFailure {
    /// The caller cancelled it (the server was sent `notifications/cancelled`).
    Cancelled,
    /// It took longer than allowed (the server was sent `notifications/cancelled`).
    TimedOut(Duration),
    /// The connection ended before the answer came (the server exited or the
    /// HTTP session broke); the text says what is known.
    Closed(String),
    /// The server answered with a protocol error.
    Protocol(String),
}

/// Reads the SDK's tool description.
pub(crate) fn remote_tool(t: &SdkTool) -> RemoteTool {
    let annotations = t.annotations.as_ref();
    let mut schema = Value::Object((*t.input_schema).clone());
    if let Value::Object(obj) = &mut schema {
        // Some servers leave out `"type": "object"`, which providers require.
        if !obj.contains_key("type") {
            obj.insert("type".into(), Value::from("object"));
        }
        // The dialect marker means nothing to providers and some reject it.
        obj.remove("$schema");
    }
    RemoteTool {
        name: t.name.to_string(),
        title: t
            .title
            .clone()
            .or_else(|| annotations.and_then(|a| a.title.clone())),
        description: t.description.as_deref().unwrap_or("").to_string(),
        input_schema: schema,
        read_only: annotations.and_then(|a| a.read_only_hint) == Some(true),
    }
}

/// Builds the SDK's `tools/call` parameters. Arguments that are not a JSON
/// object are sent as an empty object (the agent validates them as an object
/// schema before this point).
pub(crate) fn call_params(name: &str, args: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_string());
    match args {
        Value::Object(map) => params.with_arguments(map),
        _ => params.with_arguments(serde_json::Map::new()),
    }
}

/// A stable text key for a progress token.
pub(crate) fn progress_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => format!("n:{n}"),
        NumberOrString::String(s) => format!("s:{s}"),
    }
}

/// Serializes an SDK value to the MCP wire JSON (null when it cannot be).
pub(crate) fn to_wire<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
