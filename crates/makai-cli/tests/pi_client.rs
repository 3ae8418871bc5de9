//! Drives `makai --mode rpc` with pi's own RPC client (`RpcClient` from the npm
//! package `@mariozechner/pi-coding-agent`), installed by
//! `scripts/setup-pi-client.sh` into a cache folder. Skipped, saying why, when
//! node/npm or the package are not available.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse, Usage};
use serde_json::Value;

/// Installs (or finds) the client; `None` with the reason printed when unavailable.
fn pi_client_dir() -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-pi-client.sh");
    let out = match Command::new("bash")
        .arg(&script)
        .stderr(Stdio::piped())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "SKIPPED pi RPC client test: cannot run {}: {e}",
                script.display()
            );
            return None;
        }
    };
    if !out.status.success() {
        eprintln!(
            "SKIPPED pi RPC client test: the pi client could not be installed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let client =
        dir.join("node_modules/@mariozechner/pi-coding-agent/dist/modes/rpc/rpc-client.js");
    if !client.is_file() {
        eprintln!(
            "SKIPPED pi RPC client test: {} is missing",
            client.display()
        );
        return None;
    }
    Some(dir)
}

const SHIM: &str = r#"import { spawn } from "node:child_process";
const child = spawn(process.env.MAKAI_BIN, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code) => process.exit(code ?? 1));
"#;

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
    let Some(dir) = pi_client_dir() else { return };
    let env = Env::new();
    let mock = Mock::start(
        Scenario::new().push(ScriptedResponse::text("Hello, pi client").usage(Usage::new(21, 4))),
    );
    let scripts = tempfile::tempdir().unwrap();
    let shim = scripts.path().join("makai-shim.mjs");
    std::fs::write(&shim, SHIM).unwrap();
    let client =
        dir.join("node_modules/@mariozechner/pi-coding-agent/dist/modes/rpc/rpc-client.js");
    let driver = scripts.path().join("drive.mjs");
    std::fs::write(
        &driver,
        DRIVER.replace("CLIENT_PATH", &client.display().to_string()),
    )
    .unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .current_dir(env.work())
        .env("MAKAI_HOME", env.home.path())
        .env("MAKAI_BIN", env!("CARGO_BIN_EXE_makai"))
        .env("MAKAI_AUTO_TITLE", "0")
        .env("SHIM", &shim)
        .env("WORK", env.work())
        .env("MAKAI_ARGS", serde_json::to_string(&mock.args()).unwrap())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(out, Duration::from_secs(90));
    assert_eq!(
        out.status.code(),
        Some(0),
        "node driver failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let line = stdout(&out).lines().last().unwrap_or_default().to_string();
    let r: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
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
