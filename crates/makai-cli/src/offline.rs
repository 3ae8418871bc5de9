//! Offline runs (pi's `--offline` and `PI_OFFLINE`): makai starts no network
//! activity of its own. What the user asks for still goes out (prompts, the
//! MCP servers they configured); what makai would do unasked does not:
//!
//! - no connection is opened ahead of the first request
//!   ([`crate::app::AppSession::preconnect`]);
//! - the built-in local model is not installed: without a key an installed one
//!   is started, a missing one is an error that says so (also with `--local`).
//!
//! makai has no catalog refresh or update check to turn off.

use std::sync::atomic::{AtomicBool, Ordering};

/// makai's own variable; `PI_OFFLINE` is read as well.
pub const OFFLINE_ENV: &str = makai_local::OFFLINE_ENV;
/// pi's variable.
pub const PI_OFFLINE_ENV: &str = "PI_OFFLINE";

static FLAG: AtomicBool = AtomicBool::new(false);

/// Records `--offline` for the process (false leaves it as it was).
pub fn set_flag(offline: bool) {
    if offline {
        FLAG.store(true, Ordering::Relaxed);
    }
}

/// True when this run is offline: `--offline`, or `MAKAI_OFFLINE` /
/// `PI_OFFLINE` set to anything but empty, `0`, `false`, `no` or `off`.
pub fn is_offline() -> bool {
    FLAG.load(Ordering::Relaxed)
        || [OFFLINE_ENV, PI_OFFLINE_ENV]
            .iter()
            .any(|name| std::env::var(name).is_ok_and(|v| says_yes(&v)))
}

/// How a variable turns a switch on (the local-model script reads them alike).
fn says_yes(value: &str) -> bool {
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "0" | "false" | "no" | "off"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_on_unless_empty_or_a_no() {
        for v in ["1", "true", "yes", "on", "ON"] {
            assert!(says_yes(v), "{v}");
        }
        for v in ["", " ", "0", "false", "No", "off"] {
            assert!(!says_yes(v), "{v:?}");
        }
    }
}
