//! What the session has to tell the user outside its events (what building
//! it found, a session file that cannot be written, a sub-agent's spending
//! that cannot be counted):
//! said on stderr, and kept for a full-screen UI, which owns the terminal
//! and shows them itself (stderr would be hidden behind it, or written over
//! its screen).

use super::{AppSession, Shared, lock};

impl Shared {
    /// Tells the user `text`: on stderr unless a full-screen UI owns the
    /// terminal, and kept until a UI takes it
    /// ([`AppSession::take_warnings`]).
    pub(crate) fn warn(&self, text: String) {
        let mut state = lock(&self.state);
        if !state.full_screen {
            eprintln!("makai: {text}");
        }
        // A mode without a UI never takes them: keep the newest few.
        if state.warnings.len() >= KEPT_WARNINGS {
            state.warnings.remove(0);
        }
        state.warnings.push(text);
        drop(state);
        self.warned.notify_one();
    }
}

/// How many untaken warnings are kept.
const KEPT_WARNINGS: usize = 32;

impl AppSession {
    /// Tells the user `text`: on stderr unless a full-screen UI owns the
    /// terminal, and kept until a UI takes it.
    pub fn warn(&self, text: String) {
        self.inner.warn(text);
    }

    /// The warnings not yet shown (oldest first), each handed out once: a
    /// full-screen UI shows what it takes. Those said before the UI started
    /// were also said on stderr, which the UI then hid.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.inner.state).warnings)
    }

    /// Returns once a warning is kept for a UI (at once if one was since the
    /// last wait): a UI waits for warnings instead of looking for them now
    /// and then. Those kept before the session was built are not announced:
    /// take them at start.
    pub async fn warned(&self) {
        self.inner.warned.notified().await;
    }

    /// Says whether a full-screen UI owns the terminal; while it does,
    /// warnings are left to it instead of stderr.
    pub fn set_full_screen(&self, on: bool) {
        lock(&self.inner.state).full_screen = on;
    }
}

/// Says `text` on stderr and keeps it in `said`: what building a session
/// finds before there is a session to keep it (it becomes
/// [`super::AppParts::startup_warnings`]).
pub(crate) fn say(said: &mut Vec<String>, text: String) {
    eprintln!("makai: {text}");
    said.push(text);
}

/// Like [`say`], but says `text` on stderr once per process: a server
/// (`makai serve`) builds a session per client from the same settings, and
/// the same finding need not fill its log. Every session still keeps it.
pub(crate) fn say_once(said: &mut Vec<String>, text: String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let first = {
        let mut seen = SAID
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = !seen.contains(&text);
        if first {
            seen.push(text.clone());
        }
        first
    };
    if first {
        eprintln!("makai: {text}");
    }
    said.push(text);
}
