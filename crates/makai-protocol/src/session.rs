//! Agent sessions over the protocol: the [`SessionHandler`] the server routes
//! `rpc_command` and `subscribe` messages to.
//!
//! The CLI implements it with its RPC-mode dispatcher: commands and responses
//! are the RPC mode's JSON objects (`{"type": "prompt", ...}` →
//! `{"type": "response", ...}`), events are the agent's JSON events.

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;

/// One agent session served to remote clients.
///
/// Every connection of the server shares the one handler. Implementations
/// must not block: a slow subscriber slows only its own subscription stream
/// (the server stops polling it), so a handler that fans events out should
/// use bounded queues per subscriber and drop or coalesce for laggards.
#[async_trait]
pub trait SessionHandler: Send + Sync + 'static {
    /// Runs one command and returns its response. Never fails outside the
    /// response: errors are responses too (`{"success": false, "error": ...}`).
    async fn handle_command(&self, command: Value) -> Value;

    /// A new subscription to the session's events, from now on. The server
    /// forwards each item as an `agent_event`; the subscription ends when the
    /// stream ends or the client cancels it.
    fn subscribe(&self) -> BoxStream<'static, Value>;

    /// Called once during graceful shutdown, after in-flight streams ended and
    /// before the server returns: persist anything pending (no session entry may be lost).
    async fn shutdown(&self) {}
}
