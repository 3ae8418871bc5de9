//! pi's `/bug` under tmux: the report is a zip archive in the working
//! directory holding `report.json` (version, system, model, settings),
//! `diagnostics.json` (the failed answers, the crashes recorded), and, as
//! the user chooses, `session.jsonl` (the current branch) or `summary.md`
//! (the model's account of the problem); no secret in any of them; the
//! session records it as a `pi.bug-report` entry. A failure makai may have
//! caused points at `/bug` once; a crash recorded is said at the next start,
//! once, and goes into the next report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Read;
use std::path::PathBuf;

use common::tmux::{Pane, tmux_available};
use common::{Env, Mock, request_text};
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// A secret in the environment (a `*_TOKEN`), pasted into a prompt.
const ENV_SECRET: &str = "svc-bug-report-secret-4242";
/// A secret only the settings hold, under a key that names a credential.
const SETTINGS_SECRET: &str = "pw-in-settings-777";

/// The archives in the working directory.
fn archives(env: &Env) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("makai-bug-report-")
        })
        .collect();
    found.sort();
    found
}

/// The files of an archive, by name.
fn files(archive: &PathBuf) -> std::collections::BTreeMap<String, String> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(archive).unwrap()).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        out.insert(f.name().unwrap().to_string(), text);
    }
    out
}

/// The one archive in the working directory: its path, and its files, which
/// are `names`.
fn the_report(env: &Env, names: &[&str]) -> (PathBuf, std::collections::BTreeMap<String, String>) {
    let found = archives(env);
    assert_eq!(found.len(), 1, "{found:?}");
    let files = files(&found[0]);
    assert_eq!(files.keys().collect::<Vec<_>>(), names);
    (found[0].clone(), files)
}

/// The session file's entries.
fn entries(env: &Env) -> Vec<Value> {
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_report_with_the_transcript_holds_the_failure_and_no_secret() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::new().with_status(400).with_body(format!(
                r#"{{"error":{{"message":"invalid field: {ENV_SECRET}"}}}}"#
            )))
            .push(ScriptedResponse::text("second answer")),
    );
    let env = Env::new();
    env.settings(json!({"corpProxyPassword": SETTINGS_SECRET, "quietStartup": true}));
    let pane = Pane::start_with(&env, &mock.args(), &[("MY_SERVICE_TOKEN", ENV_SECRET)]);
    pane.wait_text("Ask anything");
    pane.type_text(&format!("first question with {ENV_SECRET}"));
    pane.keys(&["Enter"]);
    // A request the provider could not read may be makai's: /bug is offered.
    pane.wait_text("/bug prepares a report");
    pane.type_text("second question");
    pane.keys(&["Enter"]);
    pane.wait_text("second answer");
    pane.type_text("/bug the first answer failed");
    pane.keys(&["Enter"]);
    pane.wait_text("What should the bug report include?");
    pane.keys(&["Enter"]);
    pane.wait_text("saved to");
    assert_eq!(pane.quit_with_ctrl_c(), 0);

    let (archive, files) = the_report(&env, &["diagnostics.json", "report.json", "session.jsonl"]);
    for (name, text) in &files {
        assert!(
            !text.contains(ENV_SECRET),
            "{name} holds the secret: {text}"
        );
        assert!(
            !text.contains(SETTINGS_SECRET),
            "{name} holds the secret: {text}"
        );
    }
    let report: Value = serde_json::from_str(&files["report.json"]).unwrap();
    let id = report["id"].as_str().unwrap();
    assert_eq!(
        archive.file_name().unwrap().to_string_lossy(),
        format!("makai-bug-report-{id}.zip")
    );
    assert_eq!(report["schemaVersion"], 1);
    assert_eq!(report["hint"], "the first answer failed");
    assert_eq!(report["session"]["included"], true);
    assert_eq!(report["session"]["summaryIncluded"], false);
    assert_eq!(report["session"]["messageCount"], 4);
    assert_eq!(report["model"]["id"], "mock-model");
    assert_eq!(report["model"]["api"], "openai-completions");
    assert_eq!(report["environment"]["platform"], std::env::consts::OS);
    assert_eq!(report["environment"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["settings"]["global"]["quietStartup"], true);
    assert_eq!(
        report["settings"]["global"]["corpProxyPassword"],
        "[redacted]"
    );

    let diagnostics: Value = serde_json::from_str(&files["diagnostics.json"]).unwrap();
    let session = entries(&env);
    assert_eq!(diagnostics["sessionId"], session[0]["id"]);
    assert_eq!(diagnostics["assistantMessageCount"], 2);
    let failed = diagnostics["assistant"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{diagnostics}");
    assert_eq!(failed[0]["stopReason"], "error");
    assert_eq!(
        failed[0]["errorMessage"],
        "HTTP 400 from custom: invalid field: [redacted]"
    );
    let failure = &failed[0]["diagnostics"][0];
    assert_eq!(failure["type"], "provider_error");
    assert_eq!(failure["error"]["code"], 400);
    assert_eq!(diagnostics["crashes"], json!([]));

    // The transcript is the branch as the session holds it, the secret the
    // prompt carried cut.
    let transcript: Vec<Value> = files["session.jsonl"]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(transcript[0], session[0]);
    let stored: Vec<&Value> = session.iter().filter(|e| e["type"] == "message").collect();
    let sent: Vec<&Value> = transcript
        .iter()
        .filter(|e| e["type"] == "message")
        .collect();
    assert_eq!(sent.len(), 4);
    assert_eq!(sent[3], stored[3]);
    assert!(stored[0].to_string().contains(ENV_SECRET));
    assert_eq!(
        sent[0]["message"]["content"][0]["text"],
        "first question with [redacted]"
    );

    // The session records the report.
    let recorded = session
        .iter()
        .find(|e| e["type"] == "custom" && e["customType"] == "pi.bug-report")
        .expect("a pi.bug-report entry");
    assert_eq!(recorded["data"]["id"], id);
    assert_eq!(recorded["data"]["delivery"], "zip");
    assert_eq!(recorded["data"]["sessionIncluded"], true);
    assert_eq!(
        recorded["data"]["path"],
        archive.display().to_string().as_str()
    );
}

#[test]
fn a_report_can_carry_the_models_summary_instead_of_the_transcript() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("the answer that went wrong"))
            .push(
                ScriptedResponse::new()
                    .with_status(400)
                    .with_body(r#"{"error":{"message":"the tool schema was rejected"}}"#),
            )
            .push(ScriptedResponse::text(
                "## What happened\nThe answer went wrong.",
            )),
    );
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("please list the files");
    pane.keys(&["Enter"]);
    pane.wait_text("the answer that went wrong");
    pane.type_text("and the hidden ones");
    pane.keys(&["Enter"]);
    pane.wait_text("the tool schema was rejected");
    pane.type_text("/bug");
    pane.keys(&["Enter"]);
    pane.wait_text("Describe the problem");
    pane.type_text("it listed nothing");
    pane.keys(&["Enter"]);
    pane.wait_text("What should the bug report include?");
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_text("saved to");
    assert_eq!(pane.quit_with_ctrl_c(), 0);

    let (_, files) = the_report(&env, &["diagnostics.json", "report.json", "summary.md"]);
    assert_eq!(
        files["summary.md"],
        "## What happened\nThe answer went wrong."
    );
    let report: Value = serde_json::from_str(&files["report.json"]).unwrap();
    assert_eq!(report["hint"], "it listed nothing");
    assert_eq!(report["session"]["included"], false);
    assert_eq!(report["session"]["summaryIncluded"], true);
    // The summary request carried the conversation, why its last turn
    // failed, and the description.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let asked = request_text(&requests[2]);
    assert!(asked.contains("please list the files"), "{asked}");
    assert!(asked.contains("the answer that went wrong"), "{asked}");
    assert!(
        asked.contains(
            "[assistant failed (error)] HTTP 400 from custom: the tool schema was rejected"
        ),
        "{asked}"
    );
    assert!(asked.contains("it listed nothing"), "{asked}");
    // Its cost counts in the session; the conversation is unchanged.
    let session = entries(&env);
    assert!(
        session
            .iter()
            .any(|e| e["type"] == "usage" && e["kind"] == "summary"),
        "{session:?}"
    );
    assert_eq!(session.iter().filter(|e| e["type"] == "message").count(), 4);
}

#[test]
fn a_crash_is_said_once_at_the_next_start_and_goes_into_the_next_report() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    let crash = json!([{
        "timestamp": "2026-11-29T10:00:00.000Z",
        "version": "0.1.0",
        "kind": "panic",
        "message": "index out of bounds (at crates/x.rs:1)",
        "stack": "0: main",
        "sessionFile": null,
        "cwd": "/work",
    }]);
    let crashes = env.home.path().join("crashes.json");
    std::fs::write(&crashes, crash.to_string()).unwrap();
    let mock = Mock::start(Scenario::new());
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("makai crashed at 2026-11-29T10:00:00.000Z: index out of bounds");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    // Said once.
    let pane = Pane::start(&env, &mock.args());
    let screen = pane.wait_text("Ask anything");
    assert!(!screen.contains("makai crashed"), "{screen}");
    pane.type_text("/bug it crashed");
    pane.keys(&["Enter"]);
    pane.wait_text("What should the bug report include?");
    pane.keys(&["Down", "Enter"]);
    pane.wait_text("It holds the crash recorded earlier.");
    assert_eq!(pane.quit_with_ctrl_c(), 0);

    let (_, files) = the_report(&env, &["diagnostics.json", "report.json"]);
    let diagnostics: Value = serde_json::from_str(&files["diagnostics.json"]).unwrap();
    assert_eq!(
        diagnostics["crashes"][0]["message"],
        "index out of bounds (at crates/x.rs:1)"
    );
    assert!(!crashes.exists(), "the crash file is removed once reported");
}
