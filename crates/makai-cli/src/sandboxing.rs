//! Choosing the sandbox of a run: `--sandbox` over the settings' `sandbox`
//! section, checked against the kernel once. Whatever happens is said once on
//! standard error: a refusal (every command is then refused with it), a
//! weaker sandbox accepted by the settings, or (with `--verbose`) the policy in force.

use std::sync::Arc;

use makai_coding::Settings;
use makai_coding::tools::SandboxChoice;
use makai_sandbox::{Policy, Sandbox, SandboxConfig};

/// The sandbox config of this run: `--sandbox` over the settings, with the
/// built-in denied paths of the user's and makai's home folders.
pub fn config(settings: &Settings, flag: Option<Policy>) -> SandboxConfig {
    settings.sandbox.config(
        flag,
        dirs::home_dir().as_deref(),
        makai_coding::makai_home().as_deref(),
    )
}

/// The sandbox for commands and MCP servers of this run.
pub fn choose(settings: &Settings, flag: Option<Policy>, verbose: bool) -> SandboxChoice {
    match Sandbox::new(config(settings, flag)) {
        Ok(sb) => {
            if sb.policy() != Policy::FullAccess {
                makai_sandbox::protect_self();
            }
            if !sb.weaker().is_empty() {
                eprintln!(
                    "makai: warning: sandbox {} (accepted by \"acceptWeaker\" in the settings)",
                    sb.describe()
                );
            } else if verbose {
                eprintln!("makai: sandbox: {}", sb.describe());
            }
            Ok(Arc::new(sb))
        }
        Err(e) => {
            eprintln!("makai: {e}");
            Err(Arc::new(e))
        }
    }
}

/// One line for status displays: the policy in force, or why commands are refused.
pub fn describe(choice: &SandboxChoice) -> String {
    match choice {
        Ok(sb) => format!("sandbox: {}", sb.describe()),
        Err(e) => format!("sandbox: commands refused: {e}"),
    }
}
