//! `models.json` in pi's format, read from makai's home and pi's
//! `~/.pi/agent`, and base URLs written the way pi and each provider's SDK
//! write them, checked on the paths and headers the scripted server recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{RecordedRequest, Scenario, ScriptedResponse};
use serde_json::json;

fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn write_pi_models(env: &Env, text: &str) {
    std::fs::create_dir_all(env.pi_dir()).unwrap();
    std::fs::write(env.pi_dir().join("models.json"), text).unwrap();
}

#[test]
fn anthropic_base_url_without_v1_posts_to_v1_messages() {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("host only"))
            .push(ScriptedResponse::text("with v1")),
    );
    let env = Env::new();
    for base in [mock.server.url(), mock.v1()] {
        let argv = s(&[
            "--base-url",
            &base,
            "--api",
            "anthropic-messages",
            "--model",
            "claude-x",
            "--api-key",
            "k",
            "--no-session",
            "-p",
            "hi",
        ]);
        let out = env.run(&argv, "");
        assert_eq!(out.status.code(), Some(0), "{base}: {}", stderr(&out));
    }
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/messages", "/v1/messages"]);
}

#[test]
fn pi_models_json_custom_anthropic_gateway_with_env_key_and_command_header() {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("from the gateway")));
    let env = Env::new();
    // Written as a pi user writes it: comments, trailing commas, host without /v1.
    write_pi_models(
        &env,
        &format!(
            r#"{{
  // an Anthropic-compatible gateway
  "providers": {{
    "gw": {{
      "baseUrl": "{}",
      "api": "anthropic-messages",
      "apiKey": "${{GW_TOKEN}}",
      "headers": {{ "x-team": "!printf blue" }},
      "models": [
        {{ "id": "claude-gw", "name": "Gateway Claude", "reasoning": true,
           "input": ["text", "image"], "contextWindow": 200000, "maxTokens": 8192,
           "cost": {{ "input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75 }},
           "thinkingLevelMap": {{ "xhigh": null }}, "promptCache": {{ "short": 300 }}, }},
      ],
    }},
  }},
}}"#,
            mock.server.url()
        ),
    );
    let out = env
        .cmd()
        .env("GW_TOKEN", "gw-secret")
        .args(s(&["--model", "gw/claude-gw", "--no-session", "-p", "hi"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "from the gateway\n");
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(header(&reqs[0], "x-api-key"), Some("gw-secret"));
    assert_eq!(header(&reqs[0], "x-team"), Some("blue"));
    assert_eq!(reqs[0].body["model"], "claude-gw");
    assert!(
        !stderr(&out).contains("gw-secret"),
        "the key never reaches the output"
    );
}

#[test]
fn makai_models_json_wins_over_pi_and_keys_come_from_commands() {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("completions"))
            .push(ScriptedResponse::text("responses")),
    );
    let env = Env::new();
    write_pi_models(
        &env,
        &json!({"providers": {"local": {
            "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "shared", "contextWindow": 1111}]
        }}})
        .to_string(),
    );
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {
            "local": {
                "baseUrl": mock.v1(), "api": "openai-completions",
                "apiKey": "!printf key-from-command",
                "compat": {"maxTokensField": "max_tokens", "supportsUsageInStreaming": false},
                "models": [{"id": "shared", "contextWindow": 2222}]
            },
            "resp": {
                "baseUrl": mock.v1(), "api": "openai-responses", "apiKey": "RESP_KEY_VAR",
                "models": [{"id": "r1"}]
            }
        }})
        .to_string(),
    )
    .unwrap();
    let list = env.run(&s(&["--list-models", "shared"]), "");
    let text = stdout(&list);
    assert!(
        text.contains("local/shared") && text.contains("2222"),
        "{text}"
    );
    assert!(!text.contains("1111"), "makai's file wins: {text}");

    let out = env.run(
        &s(&["--model", "local/shared", "--no-session", "-p", "hi"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let out = env
        .cmd()
        .env("RESP_KEY_VAR", "resp-key")
        .args(s(&["--model", "resp/r1", "--no-session", "-p", "hi"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        header(&reqs[0], "authorization"),
        Some("Bearer key-from-command")
    );
    assert!(reqs[0].body.get("max_tokens").is_some(), "{}", reqs[0].body);
    assert!(
        reqs[0].body.get("stream_options").is_none(),
        "{}",
        reqs[0].body
    );
    assert_eq!(reqs[1].path, "/v1/responses");
    assert_eq!(header(&reqs[1], "authorization"), Some("Bearer resp-key"));
}

#[test]
fn builtin_provider_base_url_override_and_gemini_urls_reach_the_right_paths() {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("anthropic via proxy"))
            .push(ScriptedResponse::text("gemini host only"))
            .push(ScriptedResponse::text("gemini v1beta")),
    );
    let env = Env::new();
    write_pi_models(
        &env,
        &json!({"providers": {
            "anthropic": {"baseUrl": mock.server.url()},
            "gem": {"baseUrl": mock.server.url(), "api": "google-generative-ai", "apiKey": "g",
                    "models": [{"id": "gemini-x"}, {"id": "gemini-y", "baseUrl": format!("{}/v1beta", mock.server.url())}]}
        }})
        .to_string(),
    );
    let out = env
        .cmd()
        .env("ANTHROPIC_API_KEY", "a-key")
        .args(s(&[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--no-session",
            "-p",
            "hi",
        ]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    for model in ["gem/gemini-x", "gem/gemini-y"] {
        let out = env.run(&s(&["--model", model, "--no-session", "-p", "hi"]), "");
        assert_eq!(out.status.code(), Some(0), "{model}: {}", stderr(&out));
    }
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/v1/messages",
            "/v1beta/models/gemini-x:streamGenerateContent",
            "/v1beta/models/gemini-y:streamGenerateContent"
        ]
    );
}

#[test]
fn broken_pi_models_json_is_skipped_with_a_warning_and_makai_runs() {
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("still works")));
    let env = Env::new();
    write_pi_models(&env, "{ \"providers\": { oops ");
    let mut argv = mock.args();
    argv.extend(s(&["--no-session", "-p", "hi"]));
    let out = env.run(&argv, "");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("pi's models.json skipped"),
        "{}",
        stderr(&out)
    );
    // makai's own file, broken, is an error that names it.
    std::fs::write(env.home.path().join("models.json"), "{ nope").unwrap();
    let out = env.run(&argv, "");
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("models.json"), "{}", stderr(&out));
}

/// pi's #11394: `--model <provider>/<id>` failed for a provider whose id
/// holds a slash (a llama.cpp provider named after its URL, a team's
/// `models.json` provider); model ids with slashes (OpenRouter's) still
/// resolve.
#[test]
fn a_provider_or_model_id_with_slashes_is_found_by_provider_and_id() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("ok")));
    let env = Env::new();
    std::fs::write(
        env.home.path().join("models.json"),
        json!({"providers": {
            "team/gpu": {"baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
                         "models": [{"id": "coder"}, {"id": "org/coder-large"}]},
            "team": {"baseUrl": mock.v1(), "api": "openai-completions", "apiKey": "k",
                     "models": [{"id": "gpu/coder-small"}]},
        }})
        .to_string(),
    )
    .unwrap();
    for (spec, sent) in [
        ("team/gpu/coder", "coder"),
        ("team/gpu/org/coder-large", "org/coder-large"),
        ("team/gpu/coder-small", "gpu/coder-small"),
    ] {
        let out = env.run(&s(&["--model", spec, "--no-session", "-p", "hi"]), "");
        assert_eq!(out.status.code(), Some(0), "{spec}: {}", stderr(&out));
        let body = mock.requests().last().unwrap().body.clone();
        assert_eq!(body["model"], sent, "{spec}");
    }
}

/// pi 1.4: `--model <id>` that several providers offer chose the first in
/// the catalog; the one with a key is chosen, and with none an error names
/// them all.
#[test]
fn a_model_several_providers_offer_is_taken_from_the_one_with_a_key() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("from beta")));
    let env = Env::new();
    let providers = |beta_key: Option<&str>| {
        let mut beta = json!({"baseUrl": mock.v1(), "api": "openai-completions",
                              "models": [{"id": "shared-model"}]});
        if let Some(k) = beta_key {
            beta["apiKey"] = json!(k);
        }
        json!({"providers": {
            "alpha": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                      "models": [{"id": "shared-model"}]},
            "beta": beta,
        }})
        .to_string()
    };
    std::fs::write(env.home.path().join("models.json"), providers(Some("k"))).unwrap();
    let out = env.run(
        &s(&["--model", "shared-model", "--no-session", "-p", "hi"]),
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from beta\n");

    std::fs::write(env.home.path().join("models.json"), providers(None)).unwrap();
    let out = env.run(
        &s(&["--model", "shared-model", "--no-session", "-p", "hi"]),
        "",
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("offered by 2 providers")
            && err.contains("alpha/shared-model, beta/shared-model"),
        "{err}"
    );
}
