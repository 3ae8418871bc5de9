//! Drives `makai --mode rpc` through every method of pi 1.5.2's own
//! `RpcClient` (the files `dist/modes/rpc/rpc-client.js` and `jsonl.js` of npm
//! `@earendil-works/pi-coding-agent@1.5.2`, fetched by
//! `scripts/setup-pi-rpc-client.sh`). pi 1.x clients wait for `agent_settled`
//! and read `data.disposition`; a makai that lacked either hangs this test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse, Usage};
use serde_json::json;

const DRIVER: &str = r#"import { RpcClient } from "CLIENT_PATH";
const c = new RpcClient({ cliPath: process.env.SHIM, cwd: process.env.WORK, args: JSON.parse(process.env.MAKAI_ARGS) });
const out = {};
const failure = async (f) => { try { await f(); return null; } catch (e) { return String(e.message); } };
const firstUpdate = () => new Promise((resolve) => {
  const off = c.onEvent((e) => { if (e.type === "message_update") { off(); resolve(); } });
});
await c.start();

// A whole run, waiting for agent_settled.
const events = await c.promptAndWait("hello from pi", undefined, 30000);
out.types = events.map((e) => e.type);
out.state = await c.getState();
out.roles = (await c.getMessages()).map((m) => m.role);
out.text = await c.getLastAssistantText();
out.stats = await c.getSessionStats();
out.models = (await c.getAvailableModels()).map((m) => m.id);
out.levels = await c.getAvailableThinkingLevels();
out.cycledLevel = await c.cycleThinkingLevel();
await c.setThinkingLevel("off");
out.cycledModel = await c.cycleModel();
out.setModel = await c.setModel(out.state.model.provider, out.state.model.id);
out.badModel = await failure(() => c.setModel("nope", "nope"));
await c.setSteeringMode("all");
await c.setFollowUpMode("all");
await c.setAutoCompaction(false);
await c.setAutoRetry(true);
await c.abortRetry();

// Queueing while a slow answer streams.
const second = c.collectEvents(30000);
// Queue only once the answer streams: a steer sent before the run took its
// first look at the queue would go out with the first request.
const streaming = firstUpdate();
out.started = await c.prompt("count slowly");
await streaming;
out.steered = await c.steer("dropped steer");
out.followed = await c.followUp("dropped follow-up");
out.cleared = await c.clearQueue();
out.busy = await failure(() => c.prompt("no streaming behaviour"));
out.queued = await c.prompt("steer via prompt", undefined, "steer");
const events2 = await second;
out.types2 = events2.map((e) => e.type);
out.settled2 = events2[events2.length - 1];

// Aborting a slow answer.
const third = c.collectEvents(30000);
const streaming3 = firstUpdate();
await c.prompt("another slow one");
await streaming3;
await c.abort();
const events3 = await third;
out.settled3 = events3[events3.length - 1];

out.bash = await c.bash("echo via-pi");
await c.abortBash();
out.compact = await c.compact("keep the counts");

const entries = await c.getEntries();
out.entryCount = entries.entries.length;
out.leafIsLast = entries.leafId === entries.entries[entries.entries.length - 1].id;
out.afterFirst = (await c.getEntries(entries.entries[0].id)).entries.length;
out.badSince = await failure(() => c.getEntries("no-such-entry"));
out.treeRoots = (await c.getTree()).tree.length;
out.forks = await c.getForkMessages();
await c.setSessionName("from pi 1.5.2");
out.name = (await c.getState()).sessionName;
out.commands = await c.getCommands();
const file = (await c.getState()).sessionFile;
out.html = await c.exportHtml(process.env.WORK + "/out.html");
out.fork = await c.fork(out.forks[0].entryId);
out.afterFork = (await c.getState()).messageCount;
out.switched = await c.switchSession(file);
out.afterSwitch = (await c.getState()).messageCount;
out.cloned = await c.clone();
out.cloneIsNew = (await c.getState()).sessionFile !== file;
out.fresh = await c.newSession();
out.afterNew = (await c.getState()).messageCount;
await c.stop();
console.log(JSON.stringify(out));
"#;

#[test]
fn pi_1_5_2_rpc_client_drives_every_method() {
    let Some(dir) = node::setup_dir(
        "setup-pi-rpc-client.sh",
        &["1.5.2"],
        "pi 1.5.2 RPC client test",
    ) else {
        return;
    };
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("Hello, pi client").usage(Usage::new(21, 4)))
            // Slow enough (about 10 s) that the queue commands land while it
            // streams, even on a loaded machine.
            .push(ScriptedResponse::text("count ".repeat(50)).delay(200))
            .push(ScriptedResponse::text("steered answer"))
            .push(ScriptedResponse::text("a b c d e f g h i j k l m n o p").delay(200))
            .push(ScriptedResponse::text("SUMMARY of the counts")),
    );
    let r = node::run_driver(&env, &mock, &dir.join("rpc-client.js"), DRIVER);

    let types: Vec<&str> = r["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"agent_start"), "{types:?}");
    assert_eq!(types.last(), Some(&"agent_settled"), "{types:?}");
    assert!(types.contains(&"agent_end") && types.contains(&"message_update"));
    assert_eq!(r["state"]["model"]["id"], "mock-model");
    assert_eq!(r["roles"], json!(["user", "assistant"]));
    assert_eq!(r["text"], "Hello, pi client");
    assert_eq!(r["stats"]["tokens"]["input"], 21);
    assert!(
        r["models"]
            .as_array()
            .unwrap()
            .contains(&json!("mock-model"))
    );
    assert!(r["levels"].as_array().unwrap().contains(&json!("off")));
    // The local model needs no key, so there is a model to cycle to; the
    // --base-url model stays selectable after cycling away from it.
    assert_eq!(r["cycledModel"]["isScoped"], false, "{}", r["cycledModel"]);
    assert_ne!(r["cycledModel"]["model"]["id"], "mock-model");
    assert_eq!(r["setModel"]["id"], "mock-model");
    assert!(
        r["badModel"]
            .as_str()
            .unwrap()
            .contains("Model not found: nope/nope")
    );

    assert_eq!(r["started"], "started");
    assert_eq!(r["steered"], "queued");
    assert_eq!(r["followed"], "queued");
    assert_eq!(
        r["cleared"],
        json!({"steering": ["dropped steer"], "followUp": ["dropped follow-up"]}),
        "{r:#}"
    );
    assert!(
        r["busy"].as_str().unwrap().contains("streamingBehavior"),
        "{}",
        r["busy"]
    );
    assert_eq!(r["queued"], "queued");
    let types2: Vec<&str> = r["types2"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        types2.iter().filter(|t| **t == "turn_start").count(),
        2,
        "the steering message got its own turn: {types2:?}"
    );
    assert_eq!(
        r["settled2"],
        json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(
        r["settled3"],
        json!({"type": "agent_settled", "aborted": true})
    );

    assert_eq!(r["bash"]["output"], "via-pi");
    assert_eq!(r["bash"]["exitCode"], 0);
    assert_eq!(r["compact"]["summary"], "SUMMARY of the counts");
    assert!(
        r["compact"]["firstKeptEntryId"].is_string(),
        "{}",
        r["compact"]
    );
    assert!(r["compact"]["estimatedTokensAfter"].is_u64());
    assert!(r["compact"]["tokensBefore"].is_u64());

    assert!(r["entryCount"].as_u64().unwrap() > 5);
    assert_eq!(r["leafIsLast"], true);
    assert_eq!(
        r["afterFirst"].as_u64().unwrap(),
        r["entryCount"].as_u64().unwrap() - 1
    );
    assert!(
        r["badSince"]
            .as_str()
            .unwrap()
            .contains("Entry not found: no-such-entry")
    );
    assert_eq!(r["treeRoots"], 1);
    assert_eq!(r["forks"][0]["text"], "hello from pi");
    assert_eq!(r["name"], "from pi 1.5.2");
    assert!(r["commands"].is_array());
    assert_eq!(
        r["html"]["path"],
        env.work().join("out.html").display().to_string()
    );
    assert_eq!(
        r["fork"],
        json!({"text": "hello from pi", "cancelled": false})
    );
    assert_eq!(r["afterFork"], 0);
    assert_eq!(r["switched"], json!({"cancelled": false}));
    assert!(r["afterSwitch"].as_u64().unwrap() > 0);
    assert_eq!(r["cloned"], json!({"cancelled": false}));
    assert_eq!(r["cloneIsNew"], true);
    assert_eq!(r["fresh"], json!({"cancelled": false}));
    assert_eq!(r["afterNew"], 0);

    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "one request per scripted answer");
    let steered = request_text(&requests[2]);
    assert!(steered.contains("steer via prompt"), "{steered}");
    assert!(
        !steered.contains("dropped steer") && !steered.contains("dropped follow-up"),
        "cleared messages never reach the model: {steered}"
    );
    assert!(request_text(&requests[4]).contains("keep the counts"));
}
