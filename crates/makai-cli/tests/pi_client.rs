//! Drives `makai --mode rpc` with pi 0.73.1's own RPC client (`RpcClient` from
//! the npm package `@mariozechner/pi-coding-agent`), installed by
//! `scripts/setup-pi-client.sh` into a cache folder. Outside CI it is skipped,
//! saying why, when node/npm or the package are not available; in CI that is
//! a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse, Usage};

const DRIVER: &str = r#"import { RpcClient } from "CLIENT_PATH";
const client = new RpcClient({ cliPath: process.env.SHIM, cwd: process.env.WORK, args: JSON.parse(process.env.MAKAI_ARGS) });
await client.start();
const events = await client.promptAndWait("hello from pi", undefined, 30000);
const state = await client.getState();
const text = await client.getLastAssistantText();
const stats = await client.getSessionStats();
const models = await client.getAvailableModels();
await client.setThinkingLevel("off");
const bash = await client.bash("echo via-pi");
const forks = await client.getForkMessages();
const messages = await client.getMessages();
const renamed = await client.setSessionName("from pi");
const state2 = await client.getState();
let failure = null;
try { await client.setModel("nope", "nope"); } catch (e) { failure = String(e.message); }
await client.stop();
console.log(JSON.stringify({ types: events.map((e) => e.type), state, text, stats, models: models.length,
  bash, forks, roles: messages.map((m) => m.role), name: state2.sessionName, failure }));
"#;

#[test]
fn pi_rpc_client_drives_makai() {
    let Some(dir) = node::setup_dir("setup-pi-client.sh", &[], "pi 0.73.1 RPC client test") else {
        return;
    };
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new().push(ScriptedResponse::text("Hello, pi client").usage(Usage::new(21, 4))),
    );
    let client =
        dir.join("node_modules/@mariozechner/pi-coding-agent/dist/modes/rpc/rpc-client.js");
    let r = node::run_driver(&env, &mock, &client, DRIVER);
    let types: Vec<&str> = r["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"agent_start"), "{types:?}");
    assert_eq!(types.last(), Some(&"agent_end"), "{types:?}");
    assert!(types.contains(&"message_update"));
    assert_eq!(r["text"], "Hello, pi client");
    assert_eq!(r["state"]["model"]["id"], "mock-model");
    assert_eq!(r["state"]["messageCount"], 2);
    assert_eq!(r["stats"]["tokens"]["input"], 21);
    assert!(r["models"].as_u64().unwrap() >= 1);
    assert_eq!(r["bash"]["output"], "via-pi");
    assert_eq!(r["bash"]["exitCode"], 0);
    assert_eq!(r["forks"][0]["text"], "hello from pi");
    assert_eq!(
        r["roles"],
        serde_json::json!(["user", "assistant", "bashExecution"])
    );
    assert_eq!(r["name"], "from pi");
    assert!(
        r["failure"].as_str().unwrap().contains("Model not found"),
        "{}",
        r["failure"]
    );
}
