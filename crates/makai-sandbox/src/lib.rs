//! Confines the processes makai starts (the `bash` tool, user shell commands,
//! stdio MCP servers) with the kernel, so a model, or a prompt injected into
//! what it reads, cannot read secrets, write outside the workspace, reach the
//! network or outlive its call.
//!
//! The API is small:
//!
//! - [`SandboxConfig`]: a [`Policy`] (`read-only`, `workspace-write`,
//!   `full-access`) plus writable roots, network, denied paths and denied
//!   environment variables.
//! - [`Sandbox::new`] checks the config against the kernel once and refuses a
//!   policy the kernel cannot enforce ([`SandboxError::Unsupported`]) unless a
//!   weaker sandbox was accepted, which is then reported
//!   ([`Sandbox::weaker`]). Never a silent downgrade.
//! - [`Sandbox::confine`] prepares one child; [`Confinement::command`] gives the
//!   `tokio::process::Command` that runs under it.
//!
//! On Linux the rules are Landlock (file system; signals and abstract Unix
//! sockets from ABI 6) and seccomp (network sockets when the network is off,
//! `ptrace`, leaving the process group, io_uring and the like), with
//! `PR_SET_NO_NEW_PRIVS`, all applied in the child between fork and exec,
//! never to makai itself. On macOS the child runs under Seatbelt
//! (`sandbox-exec`). What each policy enforces and the known limits are in
//! `docs/sandbox.md`.

mod env;
mod error;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
mod policy;
mod sandbox;
mod scrub;
mod support;

pub use env::EnvFilter;
pub use error::SandboxError;
pub use policy::{DEFAULT_DENY_ENV, Policy, SandboxConfig};
pub use sandbox::{Confinement, Sandbox, probe};
pub use scrub::hide_own_environment;
pub use support::KernelSupport;

/// The lowest Landlock ABI that enforces every file right of the policies
/// (truncating files is only controlled from ABI 3, Linux 6.2).
pub const MIN_LANDLOCK_ABI: u8 = 3;

/// Hardens makai itself against its confined children: on Linux the process
/// is marked not dumpable, so its `/proc/PID` files (the environment with
/// provider keys among them) belong to root and a child running as the same
/// non-root user cannot open them. Not a sandbox of makai: it only changes
/// who may inspect it (no core dumps; debuggers need root). Does nothing elsewhere.
pub fn protect_self() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not mark makai not dumpable"
        );
    }
}
