//! [`SandboxError`].

use crate::Policy;

/// Why a command cannot be confined as asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel cannot enforce the policy and no weaker sandbox was accepted.
    #[error(
        "the {policy} sandbox cannot be enforced on this system: {missing}. Commands are not run under a policy the kernel cannot enforce; choose full-access to run them without a sandbox, or accept the weaker sandbox (\"sandbox\": {{\"acceptWeaker\": true}} in the settings)"
    )]
    Unsupported {
        /// The policy asked for.
        policy: Policy,
        /// What is missing, joined by "; ".
        missing: String,
    },
    /// This operating system has no sandbox makai can use.
    #[error(
        "makai has no sandbox for this operating system; choose full-access to run commands without one"
    )]
    NoPlatformSandbox,
    /// An environment pattern is invalid.
    #[error("sandbox settings: {0}")]
    Config(String),
    /// Preparing the confinement of one command failed.
    #[error("cannot prepare the sandbox: {0}")]
    Prepare(String),
}
