//! pi's process markers: variables every process makai starts inherits, so
//! tools can tell they run under a coding agent (pi's
//! docs/environment-variables.md, "Process Marker").
//!
//! `AI_AGENT` is the generic marker and names the agent: `makai`.
//! `PI_CODING_AGENT=true` is pi's own; makai sets it too, so scripts and
//! skills written for pi see they run inside a pi-compatible agent.

/// The generic marker's variable.
pub const AI_AGENT_VAR: &str = "AI_AGENT";
/// The generic marker's value: the agent that launched the process.
pub const AI_AGENT: &str = "makai";
/// pi's marker variable (its value is `true`).
pub const PI_CODING_AGENT_VAR: &str = "PI_CODING_AGENT";

/// Sets both markers in makai's own environment, which its children inherit.
///
/// # Safety
///
/// No other thread may exist (see [`std::env::set_var`]).
pub unsafe fn set() {
    // SAFETY: the caller guarantees makai is still single-threaded.
    unsafe {
        std::env::set_var(AI_AGENT_VAR, AI_AGENT);
        std::env::set_var(PI_CODING_AGENT_VAR, "true");
    }
}
