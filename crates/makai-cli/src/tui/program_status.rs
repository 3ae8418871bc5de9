//! pi's program status reports: the Program Status Protocol (OSC 7501,
//! revision 0.2), so that terminals and agent dashboards show whether
//! makai is working, waiting for you, done, or failed.
//!
//! | State | When | Message |
//! |---|---|---|
//! | `working` | a run or a compaction goes | the session's name |
//! | `blocked` | an approval (`kind=permission`) or a `/login` (`kind=auth`) waits for you | the dialog's title |
//! | `done` | a run finished | the session's name |
//! | `error` | a run ended with an error | the error's first line |
//! | `idle` | makai started, or you stopped the run | |
//!
//! Reports never carry a prompt or the model's output. They are sent only
//! after the terminal answers the protocol's query ([`query_terminal`]), not
//! inside tmux or screen, which do not pass them on; `PI_PROGRAM_STATUS=1`
//! sends them without asking, `0` never ([`decide`]).

use std::io::Write;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use base64::Engine;

/// The query a supporting terminal answers with the same bytes.
const QUERY: &[u8] = b"\x1b]7501;?\x1b\\";
/// Primary device attributes: every terminal answers, so its answer coming
/// first means no support.
const DEVICE_ATTRIBUTES: &[u8] = b"\x1b[c";
/// How long the terminal may take to answer (pi waits as long for its colours).
const QUERY_TIMEOUT: Duration = Duration::from_millis(100);
/// The longest message, decoded (the protocol's limit).
const MAX_MESSAGE_BYTES: usize = 2048;

/// What the terminal is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Nothing going.
    Idle,
    /// A run or a compaction goes.
    Working(Option<String>),
    /// A dialog waits for the user: its kind (`permission`, `auth`) and title.
    Blocked(&'static str, String),
    /// The last run finished.
    Done(Option<String>),
    /// The last run failed.
    Error(String),
}

impl Status {
    /// The report's body: `state=...:app=makai`, then `kind` and `msg`
    /// (base64 of one line of at most 2 KiB, control characters as spaces).
    pub fn body(&self) -> String {
        let (state, kind, message) = match self {
            Status::Idle => ("idle", None, None),
            Status::Working(name) => ("working", None, name.as_deref()),
            Status::Blocked(kind, title) => ("blocked", Some(*kind), Some(title.as_str())),
            Status::Done(name) => ("done", None, name.as_deref()),
            Status::Error(message) => ("error", None, message.lines().next()),
        };
        let mut body = format!("state={state}:app=makai");
        if let Some(kind) = kind {
            body.push_str(":kind=");
            body.push_str(kind);
        }
        if let Some(message) = message.map(one_line).filter(|m| !m.is_empty()) {
            body.push_str(":msg=");
            body.push_str(&base64::engine::general_purpose::STANDARD.encode(message));
        }
        body
    }

    /// The whole sequence.
    pub fn sequence(&self) -> String {
        format!("\x1b]7501;{}\x1b\\", self.body())
    }
}

/// `text` as one line of at most [`MAX_MESSAGE_BYTES`], cut on a character.
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for c in text.trim().chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > MAX_MESSAGE_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// Whether to report, before asking the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Always (`PI_PROGRAM_STATUS=1`).
    Always,
    /// Never (`PI_PROGRAM_STATUS=0`, or inside tmux or screen).
    Never,
    /// When the terminal answers the query.
    Ask,
}

/// pi's rules (`var` reads the environment): `PI_PROGRAM_STATUS=1` always,
/// `0` never; else never inside tmux or screen (they do not pass reports
/// on), and elsewhere ask.
pub fn decide(var: impl Fn(&str) -> Option<String>) -> Decision {
    match var("PI_PROGRAM_STATUS").as_deref().map(str::trim) {
        Some("1") => return Decision::Always,
        Some("0") => return Decision::Never,
        _ => {}
    }
    let term = var("TERM").unwrap_or_default();
    let multiplexed = var("TMUX").is_some_and(|v| !v.is_empty())
        || var("STY").is_some_and(|v| !v.is_empty())
        || term.starts_with("screen")
        || term.starts_with("tmux");
    if multiplexed {
        Decision::Never
    } else {
        Decision::Ask
    }
}

/// What the terminal's answers so far say: `Some(true)` when it echoed the
/// query, `Some(false)` when its device attributes came first, `None` while
/// neither arrived.
pub fn answer(read: &[u8]) -> Option<bool> {
    let echoed = find(read, QUERY);
    let attributes = find(read, b"\x1b[?").and_then(|start| {
        read[start + 3..]
            .iter()
            .position(|b| *b == b'c')
            .map(|end| start + 3 + end)
    });
    match (echoed, attributes) {
        (Some(e), Some(a)) => Some(e < a),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        (None, None) => None,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Asks the terminal (in raw mode, before anything else reads the
/// keyboard) whether it takes reports: the query, then the device
/// attributes' request, then its answers read for at most 100 ms.
pub fn query_terminal() -> bool {
    let mut out = std::io::stdout();
    let asked = out
        .write_all(QUERY)
        .and_then(|()| out.write_all(DEVICE_ATTRIBUTES))
        .and_then(|()| out.flush());
    if asked.is_err() {
        return false;
    }
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let started = Instant::now();
    let mut read = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = QUERY_TIMEOUT.saturating_sub(started.elapsed());
        if left.is_zero() {
            return false;
        }
        let millis = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(millis)) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return false,
        }
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => read.extend_from_slice(&buf[..n]),
        }
        if let Some(supported) = answer(&read) {
            return supported;
        }
    }
}

/// The reports of one UI: each sent when the status changes.
#[derive(Debug)]
pub struct ProgramStatus {
    enabled: bool,
    sent: Option<Status>,
}

impl ProgramStatus {
    /// Reports when `enabled`; the first says `idle`.
    pub fn new(enabled: bool) -> ProgramStatus {
        let mut reports = ProgramStatus {
            enabled,
            sent: None,
        };
        reports.update(Status::Idle);
        reports
    }

    /// Sends `status` when it is not the one sent last.
    pub fn update(&mut self, status: Status) {
        if !self.enabled || self.sent.as_ref() == Some(&status) {
            return;
        }
        let mut out = std::io::stdout();
        // A terminal that cannot be written to has nowhere to show it.
        let _ = out
            .write_all(status.sequence().as_bytes())
            .and_then(|()| out.flush());
        self.sent = Some(status);
    }

    /// The UI ends: a run or a dialog it leaves is no longer waited for.
    pub fn finish(&mut self) {
        if matches!(self.sent, Some(Status::Working(_) | Status::Blocked(..))) {
            self.update(Status::Idle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tui::test_vars::vars as env;

    #[test]
    fn reports_say_the_state_and_base64_one_line_messages() {
        assert_eq!(
            Status::Idle.sequence(),
            "\x1b]7501;state=idle:app=makai\x1b\\"
        );
        assert_eq!(
            Status::Working(Some("fix the build".into())).body(),
            "state=working:app=makai:msg=Zml4IHRoZSBidWlsZA=="
        );
        assert_eq!(Status::Working(None).body(), "state=working:app=makai");
        assert_eq!(
            Status::Blocked("permission", "Run a command outside the sandbox?".into()).body(),
            "state=blocked:app=makai:kind=permission:msg=UnVuIGEgY29tbWFuZCBvdXRzaWRlIHRoZSBzYW5kYm94Pw=="
        );
        // An error says its first line only.
        assert_eq!(
            Status::Error("HTTP 400: bad request\nbody follows".into()).body(),
            "state=error:app=makai:msg=SFRUUCA0MDA6IGJhZCByZXF1ZXN0"
        );
        // Control characters never reach the terminal, even encoded.
        let decoded = |body: String| {
            let msg = body.split(":msg=").nth(1).unwrap().to_string();
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(msg)
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(
            decoded(Status::Done(Some("a\x1b[31mb\tc".into())).body()),
            "a [31mb c"
        );
        let long = "é".repeat(2000);
        assert_eq!(decoded(Status::Done(Some(long)).body()).len(), 2048);
    }

    #[test]
    fn the_variable_forces_and_multiplexers_are_not_asked() {
        assert_eq!(decide(env(&[])), Decision::Ask);
        assert_eq!(decide(env(&[("TERM", "xterm-ghostty")])), Decision::Ask);
        assert_eq!(decide(env(&[("TMUX", "/tmp/t,1,0")])), Decision::Never);
        assert_eq!(decide(env(&[("TERM", "screen-256color")])), Decision::Never);
        assert_eq!(decide(env(&[("STY", "1.pts-0")])), Decision::Never);
        assert_eq!(
            decide(env(&[("PI_PROGRAM_STATUS", "1"), ("TMUX", "x")])),
            Decision::Always
        );
        assert_eq!(decide(env(&[("PI_PROGRAM_STATUS", "0")])), Decision::Never);
        assert_eq!(decide(env(&[("PI_PROGRAM_STATUS", "auto")])), Decision::Ask);
    }

    #[test]
    fn the_terminal_supports_reports_when_it_echoes_the_query_before_its_attributes() {
        assert_eq!(answer(b""), None);
        assert_eq!(answer(b"\x1b]7501;?\x1b\\"), Some(true));
        assert_eq!(answer(b"\x1b]7501;?\x1b\\\x1b[?62;22c"), Some(true));
        assert_eq!(answer(b"\x1b[?1;2c"), Some(false));
        assert_eq!(answer(b"\x1b[?62;4"), None, "attributes not complete yet");
        assert_eq!(answer(b"\x1b[?62;4c\x1b]7501;?\x1b\\"), Some(false));
        // A key typed meanwhile changes nothing.
        assert_eq!(answer(b"x\x1b]7501;?\x1b\\"), Some(true));
    }
}
