//! The interactive UI when its terminal goes away without the SIGHUP a
//! terminal's session gets (a pseudo-terminal's owner gone, a wrapper that
//! keeps the signal): makai ends, as a SIGHUP would end it, with what was
//! said saved.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common;

use common::pty::SpeakingTerminal;
use common::{Env, Mock};
use makai_mockllm::{Scenario, ScriptedResponse};

/// Regression: the keyboard's reader read end-of-file over and over and the
/// UI waited for keys for ever, one core busy.
#[test]
fn a_terminal_that_closes_ends_the_ui_with_the_conversation_saved() {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("acknowledged")));
    let env = Env::new();
    let mut term = SpeakingTerminal::start(&env, &mock.args());
    term.wait_for("/ for commands");
    term.type_text("hello there\r");
    term.wait_for("acknowledged");
    term.hang_up();
    assert_eq!(
        term.wait_exit(Duration::from_secs(20)),
        Some(129),
        "makai did not end when its terminal closed"
    );
    let stderr = std::fs::read_to_string(env.home.path().join("stderr.txt")).unwrap();
    assert!(stderr.contains("the terminal closed"), "{stderr}");
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read_to_string(&files[0]).unwrap();
    assert!(saved.contains("hello there"), "{saved}");
    assert!(saved.contains("acknowledged"), "{saved}");
}
