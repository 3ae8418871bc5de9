//! Server states and the events reporting their changes.

use serde::Serialize;

/// Where a server is in its life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum ServerState {
    /// Switched off in the settings (`"enabled": false`); never started.
    Disabled,
    /// Starting: the process is launching or the handshake is under way.
    Starting,
    /// Connected; its tools are available.
    Ready,
    /// It stopped after having been ready and is being started again.
    Restarting {
        /// Which restart this is (1 for the first since it was last stable).
        attempt: u32,
        /// Why it stopped.
        reason: String,
    },
    /// It could not be started (or restarted); its tools are unavailable.
    Failed {
        /// What went wrong and, where possible, what to do.
        reason: String,
    },
    /// Shut down by makai.
    Stopped,
}

impl ServerState {
    /// True when its tools can be called.
    pub fn is_ready(&self) -> bool {
        matches!(self, ServerState::Ready)
    }

    /// True while start-up is still under way (not ready, not failed).
    pub fn is_pending(&self) -> bool {
        matches!(self, ServerState::Starting | ServerState::Restarting { .. })
    }

    /// A short word for listings: `starting`, `ready`, `restarting`, `failed`, ...
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Disabled => "disabled",
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerState::Restarting { attempt, reason } => {
                write!(f, "restarting (attempt {attempt}; it stopped: {reason})")
            }
            ServerState::Failed { reason } => write!(f, "failed: {reason}"),
            other => f.write_str(other.label()),
        }
    }
}

/// A snapshot of one server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The configured name.
    pub name: String,
    /// Its state.
    #[serde(flatten)]
    pub state: ServerState,
    /// The command line or URL.
    pub target: String,
    /// The agent-side names of its tools (empty unless ready).
    pub tools: Vec<String>,
    /// `name version` as the server reported it, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<String>,
}

/// Something that happened to a server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum McpEvent {
    /// Its state changed.
    #[serde(rename_all = "camelCase")]
    StateChanged {
        /// The server.
        server: String,
        /// The new state.
        state: ServerState,
    },
    /// Its tool list changed (it became ready, stopped, or sent `list_changed`).
    #[serde(rename_all = "camelCase")]
    ToolsChanged {
        /// The server.
        server: String,
        /// The agent-side names of its tools now.
        tools: Vec<String>,
    },
}

impl McpEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            McpEvent::StateChanged { server, .. } | McpEvent::ToolsChanged { server, .. } => server,
        }
    }
}
