//! A 2 MB path given to the read tool comes back to the model as a short
//! error that says how long the path was (issue 21, case 5), through the
//! built binary and the scripted server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

#[test]
fn a_two_megabyte_read_path_reaches_the_model_as_a_short_error() {
    let env = Env::new();
    let path = "a/".repeat(1 << 20);
    let arguments = json!({ "path": path }).to_string();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::new().with_tool_call("c1", "read", &arguments))
            .push(ScriptedResponse::text("done")),
    );
    let mut args = mock.args();
    args.extend(s(&["-p", "read it", "--tools", "read"]));
    let out = env.run(&args, "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result: {messages:?}"));
    let text = result["content"].to_string();
    assert!(
        text.len() < 2000,
        "the tool result has {} bytes",
        text.len()
    );
    assert!(text.contains("2097152 bytes long"), "{text}");
    mock.server.assert_request_invariants();
}
