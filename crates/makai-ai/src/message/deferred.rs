//! A response the provider finishes later (pi's `DeferredHandle`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What is needed to fetch a deferred response: the assistant message whose
/// `stopReason` is `deferred` carries it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeferredHandle {
    /// The provider holding the response.
    pub provider: String,
    /// The model that answers it.
    pub model_id: String,
    /// The wire API to fetch it with.
    pub api: String,
    /// The provider's id for it.
    pub id: String,
    /// When the provider drops it, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// How long to wait before asking for it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_after_ms: Option<u64>,
    /// Provider data needed to fetch it, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}
