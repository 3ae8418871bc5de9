//! pi's built-in `llama.cpp` provider through the binary: the models of a
//! llama.cpp router (`LLAMA_BASE_URL`) are listed and run, against the
//! scripted server acting as the router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Output;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// A router's list: one model of each kind the rules tell apart.
fn router_list() -> serde_json::Value {
    json!([
        {"id": "qwen3-8b-Q4_K_M", "status": {"value": "loaded", "args": ["-c", "32768"]},
         "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"]},
         "meta": {"n_ctx": 32768, "n_ctx_train": 40960}},
        {"id": "gemma-3-4b", "status": {"value": "sleeping"}},
        {"id": "cold-model", "status": {"value": "unloaded"}},
        {"id": "broken-model", "status": {"value": "unloaded", "failed": true, "exit_code": 1}},
        {"id": "julia-1", "status": {"value": "loaded"},
         "architecture": {"output_modalities": ["decisions"]}}
    ])
}

/// The server's root, as a user sets `LLAMA_BASE_URL` (pi also takes `/v1`).
fn server_url(mock: &Mock) -> String {
    mock.v1().trim_end_matches("/v1").to_string()
}

fn run_with(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Output {
    env.run_with_vars(args, vars)
}

/// The `llama.cpp` models `--list-models` printed, in its order.
fn listed(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.strip_prefix("llama.cpp/"))
        .map(str::to_string)
        .collect()
}

fn authorization(r: &makai_mockllm::RecordedRequest) -> Option<&str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.as_str())
}

#[test]
fn a_routers_loaded_and_sleeping_models_are_listed_and_run_with_its_key() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Hello from llama.")));
    mock.server.act_as_llama_router(router_list(), Some(false));
    let url = format!("{}/v1/", server_url(&mock));
    let vars = [
        ("LLAMA_BASE_URL", url.as_str()),
        ("LLAMA_API_KEY", "router-secret"),
    ];

    let out = run_with(&env, &["--list-models", "llama"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        listed(&out),
        ["qwen3-8b-Q4_K_M", "gemma-3-4b"],
        "{}",
        stdout(&out)
    );
    let line = stdout(&out)
        .lines()
        .find(|l| l.contains("qwen3-8b-Q4_K_M"))
        .unwrap()
        .to_string();
    // The context the router reports, and images from its modalities.
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(columns[1..5], ["32768", "32768", "no", "yes"], "{line}");
    let asked = mock.requests();
    let paths: Vec<&str> = asked.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/models", "/props"]);
    assert!(
        asked
            .iter()
            .all(|r| authorization(r) == Some("Bearer router-secret")),
        "{asked:?}"
    );

    let out = run_with(
        &env,
        &[
            "--model",
            "llama.cpp/qwen3-8b-Q4_K_M",
            "--no-session",
            "-p",
            "hi",
        ],
        &vars,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Hello from llama."),
        "{}",
        stdout(&out)
    );
    let chat = mock
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("a chat request");
    assert_eq!(chat.body["model"], "qwen3-8b-Q4_K_M");
    assert_eq!(authorization(&chat), Some("Bearer router-secret"));
    // pi's compat for the router: `max_tokens`, no `store`, usage streamed.
    assert!(chat.body.get("max_tokens").is_some(), "{}", chat.body);
    assert!(chat.body.get("max_completion_tokens").is_none());
    assert!(chat.body.get("store").is_none(), "{}", chat.body);
    assert_eq!(chat.body["stream_options"]["include_usage"], true);
    assert!(!stderr(&out).contains("router-secret"), "{}", stderr(&out));
}

#[test]
fn without_a_key_or_a_model_named_the_routers_first_model_answers() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Local answer.")));
    mock.server.act_as_llama_router(router_list(), Some(false));
    let url = server_url(&mock);
    let out = run_with(
        &env,
        &["--no-session", "-p", "hi"],
        &[("LLAMA_BASE_URL", url.as_str())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Local answer."), "{}", stdout(&out));
    let chat = mock
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("a chat request");
    assert_eq!(chat.body["model"], "qwen3-8b-Q4_K_M");
}

#[test]
fn with_autoload_the_routers_unloaded_models_are_listed_too() {
    let env = Env::new();
    let mock = Mock::start(Scenario::new());
    mock.server.act_as_llama_router(router_list(), Some(true));
    let url = server_url(&mock);
    let out = run_with(
        &env,
        &["--list-models", "llama"],
        &[("LLAMA_BASE_URL", url.as_str())],
    );
    assert_eq!(
        listed(&out),
        ["qwen3-8b-Q4_K_M", "gemma-3-4b", "cold-model"],
        "{}",
        stderr(&out)
    );
    // Without LLAMA_API_KEY no key is sent.
    assert_eq!(mock.requests().len(), 2);
    assert!(mock.requests().iter().all(|r| authorization(r).is_none()));
}

#[test]
fn a_key_stored_with_login_asks_the_router_and_its_models() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("auth.json"),
        json!({"llama.cpp": {"type": "api_key", "key": "stored-secret"}}).to_string(),
    )
    .unwrap();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("Keyed.")));
    mock.server.act_as_llama_router(router_list(), Some(false));
    let url = server_url(&mock);
    // auth.json's key comes before LLAMA_API_KEY, as for every provider.
    let out = run_with(
        &env,
        &[
            "--model",
            "llama.cpp/gemma-3-4b",
            "--no-session",
            "-p",
            "hi",
        ],
        &[
            ("LLAMA_BASE_URL", url.as_str()),
            ("LLAMA_API_KEY", "env-secret"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "the list, /props and the answer");
    assert!(
        requests
            .iter()
            .all(|r| authorization(r) == Some("Bearer stored-secret")),
        "{requests:?}"
    );
}

#[test]
fn a_router_that_cannot_be_asked_is_a_warning_and_the_rest_still_runs() {
    let env = Env::new();
    // Nothing listens on this port once the listener is dropped.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("http://127.0.0.1:{port}");
    let out = run_with(
        &env,
        &["--list-models", "claude-opus-5-5"],
        &[("LLAMA_BASE_URL", gone.as_str())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("claude-opus-5-5"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("llama.cpp server at {gone} cannot be reached"))
            && stderr(&out).contains("its models are not listed"),
        "{}",
        stderr(&out)
    );

    // A server that is not a router says so.
    let plain = Mock::start(Scenario::new());
    let url = server_url(&plain);
    let out = run_with(
        &env,
        &["--list-models", "llama"],
        &[("LLAMA_BASE_URL", url.as_str())],
    );
    assert!(listed(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not running in router mode"),
        "{}",
        stderr(&out)
    );

    // A bad URL is named.
    let out = run_with(
        &env,
        &["--list-models", "llama"],
        &[("LLAMA_BASE_URL", "localhost:9931")],
    );
    assert!(
        stderr(&out).contains("\"localhost:9931\" is not an http or https URL"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_builtin_extension_turned_off_asks_no_router() {
    let env = Env::new();
    env.settings(json!({"extensions": ["-builtin:llama.cpp"]}));
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("plain")));
    mock.server.act_as_llama_router(router_list(), Some(false));
    let url = server_url(&mock);
    let vars = [("LLAMA_BASE_URL", url.as_str())];
    let out = run_with(&env, &["--list-models", "llama"], &vars);
    assert!(listed(&out).is_empty(), "{}", stdout(&out));
    let args = mock.args();
    let argv = print_run(&args);
    let out = run_with(&env, &argv, &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        mock.requests()
            .iter()
            .all(|r| r.path != "/models" && r.path != "/props"),
        "{:?}",
        mock.requests().iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    // The same run with it on asks the router once, at start-up.
    env.settings(json!({}));
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("plain")));
    mock.server.act_as_llama_router(router_list(), Some(false));
    let url = server_url(&mock);
    let args = mock.args();
    let out = run_with(&env, &print_run(&args), &[("LLAMA_BASE_URL", url.as_str())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        mock.requests()
            .iter()
            .filter(|r| r.path == "/models")
            .count(),
        1
    );
}

/// A print run of the scripted server's own model (`mock.args()`).
fn print_run(args: &[String]) -> Vec<&str> {
    let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
    argv.extend(["--no-session", "-p", "hi"]);
    argv
}
