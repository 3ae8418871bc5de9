//! pi's `codemode` tool through the built binary: a script's calls run as
//! nested calls with approvals, only its output reaches the model, `store()`
//! survives a resume as `codemode-store` entries, and `codemode.mode: only`
//! hides the other tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{RecordedRequest, Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// The text of the last tool result a request carries.
fn last_tool_result(r: &RecordedRequest) -> String {
    let messages = r.body["messages"].as_array().expect("chat messages");
    let m = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// Runs `makai -p go` (with `extra`) against a model that calls `codemode`
/// once with `code`, then answers; returns the requests and the script's
/// result as the model read it.
fn one_script(env: &Env, code: &str, extra: &[&str]) -> (Vec<RecordedRequest>, String) {
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call("c1", code))
            .push(ScriptedResponse::text("done")),
    );
    let mut args = extra.to_vec();
    args.extend(["-p", "go"]);
    run_ok(env, &mock, &args);
    let reqs = mock.requests();
    let result = last_tool_result(&reqs[1]);
    (reqs, result)
}

fn offered(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn store_entries(env: &Env) -> Vec<Value> {
    let mut out = Vec::new();
    for f in env.session_files() {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "custom" && v["customType"] == "codemode-store" {
                out.push(v["data"].clone());
            }
        }
    }
    out
}

#[test]
fn a_script_calls_tools_in_parallel_and_only_its_output_reaches_the_model() {
    let env = Env::new();
    std::fs::write(env.work().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.work().join("b.txt"), "beta\n").unwrap();
    env.settings(json!({"defaultTools": ["+codemode"]}));
    let code = r#"
const [a, b] = await Promise.all([tools.read({ path: "a.txt" }), tools.read({ path: "b.txt" })]);
const run = await tools.bash({ command: "printf 'out\n'; exit 3" });
console.log("read", a.length + b.length, "characters");
let missing;
try { await tools.read({ path: "nope.txt" }); } catch (e) { missing = e.message.split("\n")[0]; }
return { first: a.includes("alpha"), second: b.includes("beta"), code: run.exit_code, output: run.output, missing };
"#;
    let (reqs, result) = one_script(&env, code, &[]);
    let tools = offered(&reqs[0]);
    assert_eq!(
        tools.last().map(String::as_str),
        Some("codemode"),
        "{tools:?}"
    );
    let codemode = reqs[0].body["tools"][tools.len() - 1]["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        codemode.contains("tools.bash(args): Promise<BashResult>"),
        "{codemode}"
    );
    assert!(
        request_text(&reqs[0]).contains("Use codemode to batch or chain"),
        "the system prompt gains pi's guideline"
    );
    assert!(
        result.starts_with("Script completed (wall time "),
        "{result}"
    );
    let value_start = result.find('{').unwrap();
    let value_end = result.find("\n<console_output>").unwrap();
    let value: Value = serde_json::from_str(&result[value_start..value_end]).unwrap();
    assert_eq!(value["first"], true, "{result}");
    assert_eq!(value["second"], true);
    assert_eq!(value["code"], 3, "a non-zero exit resolves: {result}");
    assert_eq!(value["output"], "out");
    assert!(
        value["missing"].as_str().unwrap().contains("nope.txt"),
        "{result}"
    );
    assert!(result.contains("<console_output>\nread "), "{result}");
    // The nested results themselves never reach the model.
    assert!(
        !request_text(&reqs[1]).contains("1\talpha"),
        "{}",
        request_text(&reqs[1])
    );
    // The session keeps the script's calls on its result (pi's `nestedCalls`).
    let result_entry = env
        .session_files()
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .find(|v| v["message"]["role"] == "toolResult")
        .unwrap();
    let nested = &result_entry["message"]["nestedCalls"];
    assert_eq!(nested["complete"], true, "{nested}");
    let calls: Vec<(String, String, String)> = nested["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let target = c["arguments"]["path"]
                .as_str()
                .or(c["arguments"]["command"].as_str())
                .unwrap_or_default();
            (
                c["name"].as_str().unwrap().to_string(),
                target.to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = |n: &str, t: &str, st: &str| (n.to_string(), t.to_string(), st.to_string());
    assert_eq!(
        calls,
        [
            expected("read", "a.txt", "ok"),
            expected("read", "b.txt", "ok"),
            expected("bash", "printf 'out\n'; exit 3", "error"),
            expected("read", "nope.txt", "error"),
        ],
        "{nested}"
    );
    assert!(
        nested["calls"][3]["error"]
            .as_str()
            .unwrap()
            .contains("nope.txt")
    );
}

#[test]
fn a_scripts_write_needs_the_same_approval_as_a_direct_one() {
    let env = Env::new();
    env.settings(json!({
        "defaultTools": ["+codemode"],
        "approvals": {"tools": {"write": "ask"}}
    }));
    let code = r#"
try {
  await tools.write({ path: "x.txt", content: "nope" });
  return "written";
} catch (e) {
  return "refused: " + e.message;
}
"#;
    let (_, result) = one_script(&env, code, &[]);
    assert!(
        result.contains("refused: The user did not approve running write"),
        "{result}"
    );
    assert!(
        !env.work().join("x.txt").exists(),
        "print mode denied the nested write"
    );
}

#[test]
fn stored_values_survive_a_resume_on_their_branch() {
    let env = Env::new();
    env.settings(json!({"defaultTools": ["+codemode"]}));
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call("c1", "store('cursor', 41); store('gone', true); return 'saved';"))
            .push(codemode_call("c2", "store('cursor', load('cursor') + 1); store('gone', undefined); return [load('cursor'), load('gone')];"))
            .push(ScriptedResponse::text("done")),
    );
    run_ok(&env, &mock, &["-p", "go"]);
    let second = last_tool_result(&mock.requests()[2]);
    assert!(second.contains("42") && second.contains("null"), "{second}");
    let entries = store_entries(&env);
    assert_eq!(
        entries,
        [
            json!({"set": {"cursor": 41, "gone": true}, "delete": []}),
            json!({"set": {"cursor": 42}, "delete": ["gone"]})
        ]
    );

    // A failed script keeps nothing.
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call(
                "c3",
                "store('cursor', 0); throw new Error('stop');",
            ))
            .push(codemode_call("c4", "return load('cursor');"))
            .push(ScriptedResponse::text("done")),
    );
    run_ok(&env, &mock, &["-c", "-p", "again"]);
    let failed = last_tool_result(&mock.requests()[1]);
    assert!(failed.starts_with("Script failed"), "{failed}");
    assert!(failed.contains("Script error: Error: stop"), "{failed}");
    assert!(failed.contains("No tool calls were made."), "{failed}");
    let resumed = last_tool_result(&mock.requests()[2]);
    assert!(
        resumed.ends_with("\n42"),
        "the resumed session reads its store: {resumed}"
    );
    assert_eq!(store_entries(&env).len(), 2);
}

#[test]
fn only_mode_hides_the_other_tools_behind_codemode() {
    let env = Env::new();
    std::fs::write(env.work().join("a.txt"), "alpha\n").unwrap();
    env.settings(json!({"codemode": {"mode": "only"}}));
    let (reqs, result) = one_script(
        &env,
        "const hits = await searchTools('file contents'); return [(await tools.read({ path: 'a.txt' })).includes('alpha'), ALL_TOOLS.map((t) => t.name).join(',')];",
        &["--tools", "+codemode"],
    );
    assert_eq!(offered(&reqs[0]), ["codemode"]);
    let description = reqs[0].body["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(description.contains("read(args: {"), "{description}");
    assert!(result.contains("true"), "{result}");
    assert!(
        result.contains("read,write,edit,bash,grep,find,ls,task"),
        "{result}"
    );
}

#[test]
fn a_bad_options_line_fails_the_call_before_the_script_runs() {
    let env = Env::new();
    env.settings(json!({"defaultTools": ["+codemode"]}));
    let (_, result) = one_script(
        &env,
        "await tools.bash({ command: 'touch ran' });\n// @options: {\"timeout_ms\": 10}",
        &[],
    );
    assert!(
        result.contains("options line must be the script's first line"),
        "{result}"
    );
    assert!(!env.work().join("ran").exists());
}

#[test]
fn the_ui_shows_the_script_its_running_calls_and_its_output() {
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    env.settings(json!({"defaultTools": ["+codemode"]}));
    let code = "const run = await tools.bash({ command: 'sleep 2; echo slept' });\nreturn 'bash said ' + run.output;";
    let mock = Mock::start(
        Scenario::new()
            .push(codemode_call("c1", code))
            .push(ScriptedResponse::text("All done.")),
    );
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("run it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("(running)");
    assert!(
        screen.contains("● codemode const run = await tools.bash"),
        "the script's first line:\n{screen}"
    );
    assert!(
        screen.contains(r#"bash {"command":"sleep 2; echo slept"} (running)"#),
        "the nested call while it runs:\n{screen}"
    );
    let screen = pane.wait_text("All done.");
    assert!(screen.contains("Script completed"), "{screen}");
    assert!(screen.contains("bash said slept"), "{screen}");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
