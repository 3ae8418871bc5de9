//! What a provider boundary or the runtime recorded about how a response
//! went (pi's `AssistantMessageDiagnostic`), kept on the assistant message.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// One diagnostic record on an assistant message: a failure's details, a
/// retry, an overflow. Sessions keep it; it is never sent to a model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageDiagnostic {
    /// What kind of record this is (`provider_error`, `retry`…).
    #[serde(rename = "type")]
    pub kind: String,
    /// When it was recorded, in milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: super::Timestamp,
    /// The error it describes, when it describes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DiagnosticError>,
    /// Further structured details (status, request id…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

impl AssistantMessageDiagnostic {
    /// The kind of a retried attempt's record.
    pub const RETRY: &'static str = "retry";
    /// The kind of the record of the failure that ended a request.
    pub const PROVIDER_ERROR: &'static str = "provider_error";

    /// The HTTP status its error carries as its code, if any.
    pub fn http_status(&self) -> Option<u16> {
        match self.error.as_ref()?.code.as_ref()? {
            DiagnosticCode::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            DiagnosticCode::Text(_) => None,
        }
    }

    /// Whether the failure it records could succeed when tried again
    /// (`details.retryable`).
    pub fn retryable(&self) -> bool {
        self.details
            .as_ref()
            .and_then(|d| d.get("retryable"))
            .and_then(Value::as_bool)
            == Some(true)
    }
}

/// The error of a diagnostic (pi's `DiagnosticErrorInfo`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticError {
    /// The error's class name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Where it was raised, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// A status or error code, as text or a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<DiagnosticCode>,
}

/// An error code: pi records either a string (`ECONNRESET`) or a number (`429`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DiagnosticCode {
    /// A numeric code such as an HTTP status.
    Number(Number),
    /// A textual code.
    Text(String),
}
