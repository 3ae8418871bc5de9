//! makai's SigV4 signer against AWS's published signing test suite (the CRT
//! suite as carried by smithy-rs; see `fixtures/SOURCES.md`): for every vector,
//! the `Authorization` header must be the one AWS lists.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use makai_ai::credentials::AwsCredentials;
use makai_ai::sigv4::{SigningScope, sign};

fn vectors() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sigv4");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// `METHOD PATH HTTP/1.1`, headers, blank line, body.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn parse(text: &str) -> Request {
    let (head, body) = match text.split_once("\n\n") {
        Some((h, b)) => (h, b.as_bytes().to_vec()),
        None => (text.trim_end_matches('\n'), Vec::new()),
    };
    let mut lines = head.lines();
    let first = lines.next().unwrap();
    let mut parts = first.splitn(2, ' ');
    let method = parts.next().unwrap().to_string();
    let path = parts
        .next()
        .unwrap()
        .rsplit_once(' ')
        .unwrap()
        .0
        .to_string();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    Request {
        method,
        path,
        headers,
        body,
    }
}

/// The path as a client sends it: spaces and non-ASCII percent-encoded.
fn encode_path(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if c == ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn every_published_vector_gets_the_published_authorization() {
    let all = vectors();
    assert!(all.len() >= 25, "expected the vectors, found {}", all.len());
    let mut problems = Vec::new();
    for dir in all {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let context: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("context.json")).unwrap())
                .unwrap();
        let request = parse(&std::fs::read_to_string(dir.join("request.txt")).unwrap());
        let signed =
            parse(&std::fs::read_to_string(dir.join("header-signed-request.txt")).unwrap());
        let want = signed
            .headers
            .iter()
            .find(|(k, _)| k == "Authorization")
            .map(|(_, v)| v.clone())
            .unwrap();
        let creds = &context["credentials"];
        let credentials = AwsCredentials {
            access_key_id: creds["access_key_id"].as_str().unwrap().to_string(),
            secret_access_key: creds["secret_access_key"].as_str().unwrap().into(),
            session_token: creds["token"].as_str().map(Into::into),
            expires: None,
        };
        let scope = SigningScope {
            region: context["region"].as_str().unwrap().to_string(),
            service: context["service"].as_str().unwrap().to_string(),
        };
        // 2015-08-30T12:36:00Z
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let host = request
            .headers
            .iter()
            .find(|(k, _)| k == "Host")
            .unwrap()
            .1
            .clone();
        let url = format!("https://{host}{}", encode_path(&request.path));
        match sign(
            &request.method,
            &url,
            &request.headers,
            &request.body,
            &credentials,
            &scope,
            time,
        ) {
            Ok(headers) => {
                let got = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                if got != want {
                    problems.push(format!("{name}:\n  want {want}\n  got  {got}"));
                }
                if let Some(token) = &credentials.session_token {
                    assert!(
                        headers
                            .iter()
                            .any(|(k, v)| k.eq_ignore_ascii_case("x-amz-security-token")
                                && v == token.expose()),
                        "{name}: no session token header"
                    );
                }
            }
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn signer_errors_and_debug_hold_no_secret() {
    let credentials = AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("session-token-very-secret".into()),
        expires: None,
    };
    let scope = SigningScope {
        region: "us-east-1".into(),
        service: "bedrock".into(),
    };
    let err = sign(
        "POST",
        "not a url",
        &[],
        b"",
        &credentials,
        &scope,
        SystemTime::now(),
    )
    .unwrap_err();
    assert!(
        !err.contains("wJalr") && !err.contains("session-token-very-secret"),
        "{err}"
    );
    let debug = format!("{credentials:?}");
    assert!(
        !debug.contains("wJalr") && !debug.contains("session-token-very-secret"),
        "{debug}"
    );
}
