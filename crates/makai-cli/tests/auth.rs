//! `makai auth`: the OAuth (PKCE) login against a fake OAuth server on
//! 127.0.0.1, the pasted-code path, status, refresh of an expired token on a
//! real request, and logout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};
use sha2::Digest;

/// A fake OAuth token endpoint; records every token request.
struct FakeOAuth {
    rt: tokio::runtime::Runtime,
    base: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl FakeOAuth {
    fn start() -> FakeOAuth {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let log = seen.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(body.clone());
                    let ok = match body["grant_type"].as_str() {
                        Some("authorization_code") => body["code"] == "the-code",
                        Some("refresh_token") => body["refresh_token"] == "refresh-1",
                        _ => false,
                    };
                    if !ok {
                        return (
                            axum::http::StatusCode::BAD_REQUEST,
                            axum::Json(json!({"error": "invalid_grant"})),
                        );
                    }
                    let n = if body["grant_type"] == "refresh_token" {
                        2
                    } else {
                        1
                    };
                    (
                        axum::http::StatusCode::OK,
                        axum::Json(json!({"access_token": format!("sk-ant-oat-access-{n}"),
                            "refresh_token": format!("refresh-{n}"), "expires_in": 3600})),
                    )
                }
            }),
        );
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeOAuth { rt, base, seen }
    }

    fn env(&self, cmd: &mut std::process::Command) {
        cmd.env(
            "MAKAI_OAUTH_AUTHORIZE_URL",
            format!("{}/authorize", self.base),
        )
        .env("MAKAI_OAUTH_TOKEN_URL", format!("{}/token", self.base))
        .env("MAKAI_OAUTH_CALLBACK_PORT", "0")
        .env("MAKAI_OAUTH_CLIENT_ID", "test-client");
    }
}

fn query(url: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

/// Starts `makai auth login`; returns the child and the authorize URL it printed.
fn start_login(
    env: &Env,
    oauth: &FakeOAuth,
) -> (
    std::process::Child,
    String,
    std::sync::mpsc::Receiver<String>,
) {
    let mut cmd = env.cmd();
    oauth.env(&mut cmd);
    let mut child = cmd
        .args(["auth", "login", "anthropic"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("login printed no URL");
        if let Some(i) = line.find("http://127.0.0.1") {
            break line[i..].trim().to_string();
        }
    };
    (child, url, rx)
}

fn challenge_of(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

fn auth_json(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home.path().join("auth.json")).unwrap())
        .unwrap()
}

#[test]
fn login_through_the_local_callback_then_status_and_logout() {
    let env = Env::new();
    let oauth = FakeOAuth::start();
    let (child, url, rx) = start_login(&env, &oauth);
    let q = query(&url);
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["client_id"], "test-client");
    assert_eq!(q["response_type"], "code");
    let redirect = q["redirect_uri"].clone();
    assert!(redirect.starts_with("http://localhost:") && redirect.ends_with("/callback"));

    // The "browser" comes back with the code; a wrong state is refused first.
    let client = reqwest::Client::new();
    let port = url::Url::parse(&redirect).unwrap().port().unwrap();
    let base = format!("http://127.0.0.1:{port}/callback");
    let bad = oauth
        .rt
        .block_on(
            client
                .get(format!("{base}?code=the-code&state=forged"))
                .send(),
        )
        .unwrap();
    assert!(
        oauth
            .rt
            .block_on(bad.text())
            .unwrap()
            .contains("does not match")
    );
    let good = oauth
        .rt
        .block_on(
            client
                .get(format!("{base}?code=the-code&state={}", q["state"]))
                .send(),
        )
        .unwrap();
    assert!(
        oauth
            .rt
            .block_on(good.text())
            .unwrap()
            .contains("Login complete")
    );

    let out = wait_output(child, Duration::from_secs(20));
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    let seen = oauth.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let exchange = &seen[0];
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(exchange["redirect_uri"], redirect.as_str());
    assert_eq!(
        challenge_of(exchange["code_verifier"].as_str().unwrap()),
        q["code_challenge"]
    );

    let stored = auth_json(&env);
    assert_eq!(stored["anthropic"]["type"], "oauth");
    assert_eq!(stored["anthropic"]["access"], "sk-ant-oat-access-1");
    assert_eq!(stored["anthropic"]["refresh"], "refresh-1");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.home.path().join("auth.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let printed = format!("{}{}", stdout(&out), rest.join("\n"));
    assert!(
        !printed.contains("sk-ant-oat-access-1") && !printed.contains("refresh-1"),
        "secret printed"
    );

    let status = env.run(&s(&["auth", "status"]), "");
    assert_eq!(status.status.code(), Some(0));
    assert!(
        stdout(&status).contains("anthropic: OAuth login"),
        "{}",
        stdout(&status)
    );
    assert!(!stdout(&status).contains("sk-ant"), "secret printed");

    let out = env.run(&s(&["auth", "logout", "anthropic"]), "");
    assert_eq!(out.status.code(), Some(0));
    assert!(auth_json(&env).get("anthropic").is_none());
    let out = env.run(&s(&["auth", "login", "openai"]), "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("OPENAI_API_KEY"));
}

#[test]
fn login_with_a_pasted_code() {
    let env = Env::new();
    let oauth = FakeOAuth::start();
    let (mut child, url, _rx) = start_login(&env, &oauth);
    let state = query(&url)["state"].clone();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "the-code#{state}").unwrap();
    drop(stdin);
    let out = wait_output(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        auth_json(&env)["anthropic"]["access"],
        "sk-ant-oat-access-1"
    );
}

#[test]
fn an_expired_token_is_refreshed_before_the_request() {
    let env = Env::new();
    let oauth = FakeOAuth::start();
    std::fs::write(
        env.home.path().join("auth.json"),
        json!({"anthropic": {"type": "oauth", "refresh": "refresh-1", "access": "sk-ant-oat-old", "expires": 0}})
            .to_string(),
    )
    .unwrap();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("hello subscriber")));
    let mut cmd = env.cmd();
    oauth.env(&mut cmd);
    let child = cmd
        .args([
            "-p",
            "--base-url",
            &mock.v1(),
            "--api",
            "anthropic-messages",
            "--provider",
            "anthropic",
            "--model",
            "claude-test",
            "hi",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello subscriber\n");
    let req = &mock.requests()[0];
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-ant-oat-access-2")
    );
    assert!(req.header("x-api-key").is_none());
    assert!(
        req.body["system"].to_string().contains("Claude Code"),
        "identity line for subscriptions"
    );
    let stored = auth_json(&env);
    assert_eq!(stored["anthropic"]["access"], "sk-ant-oat-access-2");
    assert!(stored["anthropic"]["expires"].as_i64().unwrap() > 0);
}

/// `/login anthropic` in the interactive UI: the same sign-in without a
/// shell. Ctrl+X copies the sign-in URL (OSC 52 into a tmux buffer), a
/// pasted wrong code fails with a message, a second `/login` then completes
/// through the browser's callback; Esc cancels a third one.
#[test]
fn login_inside_the_tui_copies_the_url_and_takes_a_pasted_code_or_the_callback() {
    use common::tmux::{Pane, WAIT, tmux_available};
    if !tmux_available() {
        return;
    }
    let env = Env::new();
    let oauth = FakeOAuth::start();
    let mock = Mock::start(Scenario::new());
    let authorize = format!("{}/authorize", oauth.base);
    let token = format!("{}/token", oauth.base);
    let pane = Pane::start_with(
        &env,
        &mock.args(),
        &[
            ("MAKAI_OAUTH_AUTHORIZE_URL", authorize.as_str()),
            ("MAKAI_OAUTH_TOKEN_URL", token.as_str()),
            ("MAKAI_OAUTH_CALLBACK_PORT", "0"),
            ("MAKAI_OAUTH_CLIENT_ID", "test-client"),
        ],
    );
    pane.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    pane.wait_text("Ask anything");
    let copied_url = || {
        pane.keys(&["C-x"]);
        let start = std::time::Instant::now();
        loop {
            let out = pane.tmux(&["show-buffer"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if text.starts_with(&authorize) {
                return text;
            }
            assert!(start.elapsed() < WAIT, "no URL copied: {text:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // A wrong code pasted into the editor: the exchange is refused.
    pane.type_text("/login anthropic");
    pane.keys(&["Enter"]);
    pane.wait_text("Claude Pro/Max account");
    let url = copied_url();
    assert_eq!(query(&url)["client_id"], "test-client");
    pane.type_text("not-the-code");
    pane.keys(&["Enter"]);
    pane.wait_text("Login to anthropic failed");
    assert!(!env.home.path().join("auth.json").exists());

    // Again, and the browser comes back with the right code.
    pane.type_text("/login anthropic");
    pane.keys(&["Enter"]);
    let first_state = query(&url)["state"].clone();
    let url = loop {
        // Until the new login shows its URL, Ctrl+X copies the first one again.
        let url = copied_url();
        if query(&url)["state"] != first_state {
            break url;
        }
    };
    let q = query(&url);
    let redirect = q["redirect_uri"].clone();
    let port = url::Url::parse(&redirect).unwrap().port().unwrap();
    let reply = oauth
        .rt
        .block_on(async {
            reqwest::get(format!(
                "http://127.0.0.1:{port}/callback?code=the-code&state={}",
                q["state"]
            ))
            .await?
            .text()
            .await
        })
        .unwrap();
    assert!(reply.contains("Login complete"), "{reply}");
    pane.wait_text("Logged in to anthropic.");
    assert_eq!(
        auth_json(&env)["anthropic"]["access"],
        "sk-ant-oat-access-1"
    );
    let screen = pane.screen();
    assert!(!screen.contains("sk-ant-oat"), "secret shown:\n{screen}");

    // Esc cancels a waiting login; the editor is a prompt editor again.
    pane.type_text("/login openai-codex");
    pane.keys(&["Enter"]);
    pane.wait_text("ChatGPT Plus/Pro account");
    pane.keys(&["Escape"]);
    pane.wait_text("Login to openai-codex cancelled.");
    assert!(auth_json(&env).get("openai-codex").is_none());
    assert_eq!(mock.requests().len(), 0, "nothing went to the model");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn auth_login_with_api_key_stores_a_piped_key_and_a_provider_without_sign_in_asks_for_one() {
    let env = Env::new();
    let login = |args: &[&str], input: &str| {
        let mut argv = s(&["auth", "login"]);
        argv.extend(args.iter().map(|a| a.to_string()));
        env.run(&argv, input)
    };
    let out = login(&["openai", "--api-key"], "sk-piped-0123456789\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("API key for openai saved to"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("sk-piped") && !stdout(&out).contains("sk-piped"));
    assert_eq!(auth_json(&env)["openai"]["key"], "sk-piped-0123456789");
    // pi 1.5: a provider without an account sign-in asks for its key.
    let out = login(&["groq"], "gsk-0123456789\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(auth_json(&env)["groq"]["key"], "gsk-0123456789");
    // Nothing given: nothing saved.
    let out = login(&["mistral", "--api-key"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(auth_json(&env).get("mistral").is_none());
    // --no-browser is for sign-ins.
    let out = login(&["anthropic", "--api-key", "--no-browser"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--no-browser is not allowed with --api-key"));
    let out = env.run(&s(&["auth", "--help"]), "");
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("makai auth login [PROVIDER] [--api-key] [--no-browser]"));
}

#[test]
fn auth_login_reads_a_key_typed_on_the_terminal_without_showing_it() {
    if !common::tmux::tmux_available() {
        return;
    }
    let env = Env::new();
    let pane = common::tmux::Pane::start(&env, &s(&["auth", "login", "openai", "--api-key"]));
    // The prompt goes to stderr (a file here); wait for the terminal to take input.
    std::thread::sleep(std::time::Duration::from_millis(500));
    pane.type_text("sk-typed-secret-0123");
    pane.keys(&["Enter"]);
    assert_eq!(pane.wait_exit_status("makai auth login"), 0);
    let screen = pane.screen();
    assert!(
        !screen.contains("sk-typed-secret"),
        "the key was echoed:\n{screen}"
    );
    assert_eq!(auth_json(&env)["openai"]["key"], "sk-typed-secret-0123");
}

#[test]
fn ctrl_c_while_typing_a_key_saves_nothing_and_gives_the_terminal_its_echo_back() {
    if !common::tmux::tmux_available() {
        return;
    }
    let env = Env::new();
    let pane =
        common::tmux::Pane::start_in_shell(&env, &s(&["auth", "login", "openai", "--api-key"]));
    std::thread::sleep(std::time::Duration::from_millis(500));
    pane.type_text("sk-half-typed");
    pane.keys(&["C-c"]);
    assert_eq!(pane.wait_exit_status("stop on Ctrl+C"), 1);
    assert!(!env.home.path().join("auth.json").exists());
    let stderr = std::fs::read_to_string(env.home.path().join("stderr.txt")).unwrap();
    assert!(stderr.contains("cancelled; nothing was saved"), "{stderr}");
    // The terminal has its echo back (what `stty` sees when the shell runs
    // a command: the state makai left).
    let out = env.home.path().join("stty.txt");
    pane.type_text(&format!(
        "stty -a | tr ' ;' '\\n\\n' | grep -x -e echo -e -echo > {}",
        common::tmux::quote(&out.display().to_string())
    ));
    pane.keys(&["Enter"]);
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&out).map_or(true, |t| t.trim().is_empty())
        && start.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "echo");
}
