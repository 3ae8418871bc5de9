//! `makai auth login openai-codex|github-copilot` against fake authorization
//! and token servers on 127.0.0.1, and the stored logins used (and refreshed
//! when expired) on real requests to the scripted server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

/// A fake auth server for both logins; records every request body.
struct Fake {
    rt: tokio::runtime::Runtime,
    base: String,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

/// A Codex access token for `account` (a JWT; the signature is not checked by makai).
fn codex_jwt(account: &str, n: u32) -> String {
    let b = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.sig{n}",
        b(json!({"alg": "RS256", "typ": "JWT"})),
        b(json!({"https://api.openai.com/auth": {"chatgpt_account_id": account}, "n": n}))
    )
}

fn form(body: &str) -> std::collections::HashMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect()
}

impl Fake {
    fn start() -> Fake {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let polls = Arc::new(Mutex::new(0u32));
        let log = seen.clone();
        let codex_token = {
            let log = log.clone();
            move |body: String| {
                let log = log.clone();
                async move {
                    log.lock()
                        .unwrap()
                        .push(("codex-token".into(), body.clone()));
                    let f = form(&body);
                    let n = match (
                        f.get("grant_type").map(String::as_str),
                        f.get("code"),
                        f.get("refresh_token"),
                    ) {
                        (Some("authorization_code"), Some(c), _) if c == "codex-code" => 1,
                        (Some("refresh_token"), _, Some(r)) if r == "codex-refresh-1" => 2,
                        _ => {
                            return (
                                axum::http::StatusCode::BAD_REQUEST,
                                axum::Json(json!({"error": "invalid_grant"})),
                            );
                        }
                    };
                    (
                        axum::http::StatusCode::OK,
                        axum::Json(
                            json!({"access_token": codex_jwt("acct-777", n), "refresh_token": format!("codex-refresh-{n}"), "id_token": "x", "expires_in": 3600}),
                        ),
                    )
                }
            }
        };
        let device = {
            let log = log.clone();
            move |body: String| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(("device".into(), body));
                    axum::Json(
                        json!({"device_code": "dev-123", "user_code": "WXYZ-1234", "verification_uri": "https://github.com/login/device", "interval": 0, "expires_in": 60}),
                    )
                }
            }
        };
        let access = {
            let log = log.clone();
            let polls = polls.clone();
            move |body: String| {
                let log = log.clone();
                let polls = polls.clone();
                async move {
                    log.lock().unwrap().push(("poll".into(), body));
                    let mut n = polls.lock().unwrap();
                    *n += 1;
                    if *n == 1 {
                        axum::Json(json!({"error": "authorization_pending"}))
                    } else {
                        axum::Json(
                            json!({"access_token": "gho_github_token_1", "token_type": "bearer"}),
                        )
                    }
                }
            }
        };
        let exchange = {
            let log = log.clone();
            move |headers: axum::http::HeaderMap| {
                let log = log.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    log.lock().unwrap().push(("exchange".into(), auth.clone()));
                    if auth != "Bearer gho_github_token_1" {
                        return (
                            axum::http::StatusCode::UNAUTHORIZED,
                            axum::Json(json!({"message": "Bad credentials"})),
                        );
                    }
                    let count = log
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|(k, _)| k == "exchange")
                        .count();
                    let expires = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_secs()
                        + 1800;
                    (
                        axum::http::StatusCode::OK,
                        axum::Json(
                            json!({"token": format!("tid=t{count};exp={expires};proxy-ep=proxy.individual.githubcopilot.com;8kp=1:copilot-secret-{count}"), "expires_at": expires, "refresh_in": 1500, "endpoints": {"api": "https://api.individual.githubcopilot.com"}}),
                        ),
                    )
                }
            }
        };
        let app = axum::Router::new()
            .route("/oauth/token", axum::routing::post(codex_token))
            .route("/login/device/code", axum::routing::post(device))
            .route("/login/oauth/access_token", axum::routing::post(access))
            .route("/copilot_internal/v2/token", axum::routing::get(exchange));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Fake { rt, base, seen }
    }

    fn env(&self, cmd: &mut std::process::Command) {
        cmd.env("MAKAI_CODEX_AUTH_URL", &self.base)
            .env("MAKAI_CODEX_CALLBACK_PORT", "0")
            .env("MAKAI_CODEX_CLIENT_ID", "codex-test-client")
            .env("MAKAI_GITHUB_URL", &self.base)
            .env("MAKAI_GITHUB_API_URL", &self.base);
    }

    fn seen(&self, kind: &str) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

fn auth_json(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.home.path().join("auth.json")).unwrap())
        .unwrap()
}

fn spawn_login(
    env: &Env,
    fake: &Fake,
    provider: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut cmd = env.cmd();
    fake.env(&mut cmd);
    let mut child = cmd
        .args(["auth", "login", provider])
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
    (child, rx)
}

#[test]
fn chatgpt_login_through_the_local_callback() {
    let env = Env::new();
    let fake = Fake::start();
    let (child, rx) = spawn_login(&env, &fake, "openai-codex");
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("login printed no URL");
        if let Some(i) = line.find("http://127.0.0.1") {
            break line[i..].trim().to_string();
        }
    };
    let q: std::collections::HashMap<String, String> = url::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert!(url.contains("/oauth/authorize?"), "{url}");
    assert_eq!(q["client_id"], "codex-test-client");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["codex_cli_simplified_flow"], "true");
    assert_eq!(q["scope"], "openid profile email offline_access");
    let redirect = q["redirect_uri"].clone();
    assert!(
        redirect.starts_with("http://localhost:") && redirect.ends_with("/auth/callback"),
        "{redirect}"
    );
    let port = url::Url::parse(&redirect).unwrap().port().unwrap();
    let page = fake
        .rt
        .block_on(async {
            reqwest::get(format!(
                "http://127.0.0.1:{port}/auth/callback?code=codex-code&state={}",
                q["state"]
            ))
            .await
            .unwrap()
            .text()
            .await
        })
        .unwrap();
    assert!(page.contains("Login complete"), "{page}");
    let out = wait_output(child, Duration::from_secs(20));
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    let exchange = form(&fake.seen("codex-token")[0]);
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(exchange["redirect_uri"], redirect);
    assert_eq!(exchange["client_id"], "codex-test-client");
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        <sha2::Sha256 as sha2::Digest>::digest(exchange["code_verifier"].as_bytes()),
    );
    assert_eq!(challenge, q["code_challenge"]);
    let stored = auth_json(&env);
    assert_eq!(stored["openai-codex"]["type"], "oauth");
    assert_eq!(stored["openai-codex"]["accountId"], "acct-777");
    assert_eq!(stored["openai-codex"]["refresh"], "codex-refresh-1");
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
        !printed.contains("codex-refresh-1") && !printed.contains(&codex_jwt("acct-777", 1)),
        "secret printed"
    );
}

#[test]
fn an_expired_chatgpt_login_is_refreshed_before_the_request() {
    let env = Env::new();
    let fake = Fake::start();
    std::fs::write(
        env.home.path().join("auth.json"),
        json!({"openai-codex": {"type": "oauth", "refresh": "codex-refresh-1", "access": codex_jwt("acct-777", 1), "expires": 0, "accountId": "acct-777"}}).to_string(),
    )
    .unwrap();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("hello from codex")));
    let mut cmd = env.cmd();
    fake.env(&mut cmd);
    let child = cmd
        .args([
            "-p",
            "--base-url",
            &format!("{}/backend-api", mock.server.url()),
            "--api",
            "openai-codex-responses",
            "--provider",
            "openai-codex",
            "--model",
            "gpt-5.3-codex",
            "hi",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello from codex\n");
    let req = &mock.requests()[0];
    assert_eq!(req.path, "/backend-api/codex/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {}", codex_jwt("acct-777", 2)).as_str())
    );
    assert_eq!(req.header("chatgpt-account-id"), Some("acct-777"));
    let stored = auth_json(&env);
    assert_eq!(stored["openai-codex"]["refresh"], "codex-refresh-2");
    assert!(stored["openai-codex"]["expires"].as_i64().unwrap() > 0);
}

#[test]
fn copilot_device_login_then_requests_with_the_exchanged_token() {
    let env = Env::new();
    let fake = Fake::start();
    let (child, rx) = spawn_login(&env, &fake, "github-copilot");
    let out = wait_output(child, Duration::from_secs(30));
    let printed: Vec<String> = rx.try_iter().collect();
    assert_eq!(out.status.code(), Some(0), "{printed:?}");
    assert!(
        printed.iter().any(|l| l.contains("WXYZ-1234")),
        "the user code is shown: {printed:?}"
    );
    assert!(
        printed
            .iter()
            .any(|l| l.contains("https://github.com/login/device"))
    );
    let device = form(&fake.seen("device")[0]);
    assert_eq!(device["client_id"], "Iv1.b507a08c87ecfe98");
    let polls = fake.seen("poll");
    assert_eq!(polls.len(), 2, "pending, then the token");
    assert_eq!(
        form(&polls[1])["grant_type"],
        "urn:ietf:params:oauth:grant-type:device_code"
    );
    let stored = auth_json(&env);
    let c = &stored["github-copilot"];
    assert_eq!(c["type"], "oauth");
    assert_eq!(c["refresh"], "gho_github_token_1");
    assert!(c["access"].as_str().unwrap().starts_with("tid=t1;"));
    assert!(
        !printed.join("\n").contains("gho_github_token_1")
            && !printed.join("\n").contains("copilot-secret"),
        "secret printed"
    );

    // A request with the stored login: the Copilot token as a bearer token.
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::text("copilot says hi"))
            .push(ScriptedResponse::text("again")),
    );
    let run = |env: &Env| {
        let mut cmd = env.cmd();
        fake.env(&mut cmd);
        let child = cmd
            .args([
                "-p",
                "--base-url",
                &mock.server.url(),
                "--api",
                "openai-completions",
                "--provider",
                "github-copilot",
                "--model",
                "gpt-5-mini",
                "hi",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_output(child, Duration::from_secs(30))
    };
    let out = run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "copilot says hi\n");
    let req = &mock.requests()[0];
    assert!(
        req.header("authorization")
            .unwrap()
            .starts_with("Bearer tid=t1;")
    );
    assert_eq!(req.header("openai-intent"), Some("conversation-edits"));
    assert_eq!(req.header("x-initiator"), Some("user"));

    // Expired: exchanged again with the stored GitHub token before the request.
    let mut stored = auth_json(&env);
    stored["github-copilot"]["expires"] = json!(0);
    std::fs::write(env.home.path().join("auth.json"), stored.to_string()).unwrap();
    let out = run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        mock.requests()[1]
            .header("authorization")
            .unwrap()
            .starts_with("Bearer tid=t2;")
    );
    assert!(
        auth_json(&env)["github-copilot"]["access"]
            .as_str()
            .unwrap()
            .starts_with("tid=t2;")
    );
}

#[test]
fn copilot_github_token_from_the_environment_is_exchanged() {
    let env = Env::new();
    let fake = Fake::start();
    let mock = Mock::start(Scenario::new().push(ScriptedResponse::text("via env")));
    let mut cmd = env.cmd();
    fake.env(&mut cmd);
    let child = cmd
        .env("COPILOT_GITHUB_TOKEN", "gho_github_token_1")
        .args([
            "-p",
            "--base-url",
            &mock.server.url(),
            "--api",
            "anthropic-messages",
            "--provider",
            "github-copilot",
            "--model",
            "claude-sonnet-4.5",
            "hi",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let req = &mock.requests()[0];
    assert!(
        req.header("authorization")
            .unwrap()
            .starts_with("Bearer tid=t1;")
    );
    assert!(req.header("x-api-key").is_none());
    assert_eq!(fake.seen("exchange"), ["Bearer gho_github_token_1"]);
    assert!(
        !env.home.path().join("auth.json").exists(),
        "an environment token is not stored"
    );

    // A GitHub token without Copilot access: a clear error, no secret.
    let mut cmd = env.cmd();
    fake.env(&mut cmd);
    let child = cmd
        .env("COPILOT_GITHUB_TOKEN", "gho_revoked_token")
        .args([
            "-p",
            "--base-url",
            &mock.server.url(),
            "--api",
            "openai-completions",
            "--provider",
            "github-copilot",
            "--model",
            "gpt-5-mini",
            "hi",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, Duration::from_secs(30));
    assert_ne!(out.status.code(), Some(0));
    let e = stderr(&out);
    assert!(
        e.contains("HTTP 401") && e.contains("makai auth login github-copilot"),
        "{e}"
    );
    assert!(!e.contains("gho_revoked_token"), "{e}");
}
