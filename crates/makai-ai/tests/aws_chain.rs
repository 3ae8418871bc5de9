//! makai's AWS credential chain on the AWS SDK's own test cases (smithy-rs's
//! `default-credential-provider-chain` data, see `fixtures/SOURCES.md`): each
//! case's environment and files are laid out in a temporary folder, its
//! recorded HTTP answers (STS, the SSO portal, the container endpoint) are
//! replayed by a loopback server, and the chain must yield the case's
//! credentials or fail where the case fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use makai_ai::EnvOverrides;
use makai_ai::credentials::{Env, aws};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aws-credential-chain")
}

/// Copies `from` into `to`, rewriting absolute paths in the files (`= /x`) to `to/x`.
fn copy_tree(from: &Path, to: &Path, root: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target, root);
        } else {
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(
                &target,
                text.replace("= /", &format!("= {}/", root.display())),
            )
            .unwrap();
        }
    }
}

/// The recorded responses, in order: (status, body).
fn responses(traffic: &Value) -> Vec<(u16, String)> {
    let mut out: Vec<(u16, String)> = Vec::new();
    for event in traffic["events"].as_array().unwrap() {
        let action = &event["action"];
        if let Some(status) = action
            .pointer("/Response/response/Ok/status")
            .and_then(Value::as_u64)
        {
            out.push((status as u16, String::new()));
        }
        if action.pointer("/Data/direction").and_then(Value::as_str) == Some("Response")
            && let Some(last) = out.last_mut()
        {
            last.1.push_str(
                action
                    .pointer("/Data/data/Utf8")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
    }
    out
}

/// The recorded request URIs, in order.
fn request_uris(traffic: &Value) -> Vec<String> {
    traffic["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            e.pointer("/action/Request/request/uri")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// Answers each connection with the next recorded response.
async fn replay(responses: Vec<(u16, String)>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for (status, body) in responses {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 65536];
            let mut read = 0;
            // Read the head and a body of content-length bytes.
            loop {
                let n = socket.read(&mut buf[read..]).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                read += n;
                let text = String::from_utf8_lossy(&buf[..read]).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if read >= end + 4 + len {
                        break;
                    }
                }
            }
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    format!("http://{addr}")
}

const CHAIN_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_SSO",
];

#[tokio::test]
async fn the_aws_sdk_credential_chain_cases() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 13, "{}", cases.len());
    let mut problems = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        if case.join("fs").exists() {
            copy_tree(&case.join("fs"), root, root);
        }
        let mut env = EnvOverrides::default();
        for var in CHAIN_VARS {
            env.set(*var, "");
        }
        let vars: Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("env.json")).unwrap()).unwrap();
        for (k, v) in vars.as_object().unwrap() {
            let v = v.as_str().unwrap();
            let v = if v.starts_with('/') {
                format!("{}{v}", root.display())
            } else {
                v.to_string()
            };
            env.set(k.clone(), v);
        }
        if vars.get("HOME").is_none() {
            env.set("HOME", root.join("no-home").display().to_string());
        }
        let traffic: Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("http-traffic.json")).unwrap())
                .unwrap();
        let uris = request_uris(&traffic);
        if !uris.is_empty() {
            let base = replay(responses(&traffic)).await;
            for uri in &uris {
                if uri.contains("//sts.") {
                    env.set("AWS_ENDPOINT_URL_STS", format!("{base}/"));
                } else if uri.contains("//portal.sso") {
                    env.set("AWS_ENDPOINT_URL_SSO", base.clone());
                } else if let Some(path) = uri.strip_prefix("http://169.254.170.2") {
                    env.set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "");
                    env.set(
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                        format!("{base}{path}"),
                    );
                }
            }
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("test-case.json")).unwrap())
                .unwrap();
        let got = aws::credentials(&Env::with(&env.0), true).await;
        match (&expected["result"]["Ok"], got) {
            (Value::Object(want), Ok(Some(c))) => {
                let same = want["access_key_id"] == c.access_key_id
                    && want["secret_access_key"] == c.secret_access_key.expose()
                    && want.get("session_token").and_then(Value::as_str)
                        == c.session_token.as_ref().map(|t| t.expose());
                if !same {
                    problems.push(format!("{name}: got {c:?}, expected {want:?}"));
                }
            }
            (Value::Object(_), other) => {
                problems.push(format!("{name}: expected credentials, got {other:?}"))
            }
            (_, Ok(Some(c))) => problems.push(format!("{name}: expected an error, got {c:?}")),
            (_, Ok(None)) => problems.push(format!(
                "{name}: expected an error, the chain found nothing"
            )),
            (_, Err(e)) => {
                if let Some(file) = expected["result"]["ErrorContains"]
                    .as_str()
                    .and_then(|t| t.rsplit('/').next())
                    .filter(|f| f.contains(".json"))
                    && !e.contains(file.split('`').next().unwrap_or(file))
                {
                    problems.push(format!("{name}: the error should name {file}: {e}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
