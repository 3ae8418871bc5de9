//! Typed errors of the agent layer.

/// What went wrong when starting or managing a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A run is in progress.
    #[error(
        "the agent is already running: queue the message with steer() or follow_up(), stop the run with abort(), or wait_for_idle() first"
    )]
    AlreadyRunning,
    /// `continue` was called on an empty transcript.
    #[error("cannot continue: the transcript has no messages; start with a prompt")]
    NoMessages,
    /// `continue` was called on a transcript ending with an assistant message and
    /// no queued message to deliver.
    #[error(
        "cannot continue from an assistant message: add a user message (prompt) or queue one with steer() or follow_up() first"
    )]
    CannotContinueFromAssistant,
    /// The loop task ended abnormally (a bug: please report it).
    #[error("the agent loop task failed: {0}")]
    LoopFailed(String),
    /// A subscriber thread could not be started.
    #[error("could not start a subscriber thread: {0}")]
    Subscribe(#[from] std::io::Error),
    /// [`crate::Agent::compact`] failed or was aborted; the transcript is unchanged.
    #[error("{0}; the transcript was left unchanged")]
    Compaction(#[from] crate::compaction::CompactionError),
}
