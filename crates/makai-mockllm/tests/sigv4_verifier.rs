//! The scripted server's own SigV4 verifier against AWS's published signing
//! test suite (the vectors in makai-ai's fixture folder): every signed request
//! verifies, and any change to it is refused with AWS's error type.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use makai_mockllm::RecordedRequest;
use makai_mockllm::sigv4::{AwsKey, verify};

fn signed_requests() -> Vec<(String, RecordedRequest, AwsKey)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../makai-ai/tests/fixtures/sigv4");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let context: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("context.json")).unwrap())
                .unwrap();
        let text = std::fs::read_to_string(dir.join("header-signed-request.txt")).unwrap();
        let (head, body) = text
            .split_once("\n\n")
            .map_or((text.as_str(), ""), |(h, b)| (h, b));
        let mut lines = head.lines();
        let first = lines.next().unwrap();
        let (method, rest) = first.split_once(' ').unwrap();
        let target = rest.rsplit_once(' ').unwrap().0;
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.to_string(), None),
        };
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.to_ascii_lowercase(), v.to_string())
            })
            .collect();
        let creds = &context["credentials"];
        let mut key = AwsKey::new(
            creds["access_key_id"].as_str().unwrap(),
            creds["secret_access_key"].as_str().unwrap(),
        );
        if let Some(t) = creds["token"].as_str() {
            key = key.with_session_token(t);
        }
        let request = RecordedRequest {
            method: method.to_string(),
            path,
            query,
            headers,
            body: serde_json::Value::Null,
            raw_body: body.to_string(),
        };
        out.push((name, request, key));
    }
    out
}

#[test]
fn every_published_signed_request_verifies() {
    let all = signed_requests();
    assert!(all.len() >= 25);
    let failures: Vec<String> = all
        .iter()
        .filter_map(|(name, req, key)| {
            verify(
                req,
                std::slice::from_ref(key),
                &[],
                "us-east-1",
                "service",
                None,
            )
            .err()
            .map(|e| format!("{name}: {e:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tampering_is_refused_with_aws_error_types() {
    let (_, req, key) = signed_requests()
        .into_iter()
        .find(|(n, _, _)| n == "post-vanilla-query")
        .unwrap();
    let keys = [key.clone()];
    let mut body = req.clone();
    body.raw_body.push('x');
    assert_eq!(
        verify(&body, &keys, &[], "us-east-1", "service", None)
            .unwrap_err()
            .error_type,
        "InvalidSignatureException"
    );
    let mut query = req.clone();
    query.query = Some("Param1=value2".into());
    assert_eq!(
        verify(&query, &keys, &[], "us-east-1", "service", None)
            .unwrap_err()
            .error_type,
        "InvalidSignatureException"
    );
    let wrong_secret = [AwsKey::new(key.access_key_id.clone(), "not-the-secret")];
    assert_eq!(
        verify(&req, &wrong_secret, &[], "us-east-1", "service", None)
            .unwrap_err()
            .error_type,
        "InvalidSignatureException"
    );
    assert_eq!(
        verify(&req, &keys, &[], "eu-west-1", "service", None)
            .unwrap_err()
            .error_type,
        "InvalidSignatureException"
    );
    assert_eq!(
        verify(&req, &[], &[], "us-east-1", "service", None)
            .unwrap_err()
            .error_type,
        "UnrecognizedClientException"
    );
    let expired = verify(
        &req,
        &keys,
        std::slice::from_ref(&key.access_key_id),
        "us-east-1",
        "service",
        None,
    )
    .unwrap_err();
    assert_eq!(expired.error_type, "ExpiredTokenException");
    // Signed in 2015: far outside the 15-minute window of today.
    let stale = verify(
        &req,
        &keys,
        &[],
        "us-east-1",
        "service",
        Some(std::time::SystemTime::now()),
    )
    .unwrap_err();
    assert!(stale.message.contains("15 minutes"), "{stale:?}");
}
