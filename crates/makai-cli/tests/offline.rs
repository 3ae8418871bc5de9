//! `--offline` (and `MAKAI_OFFLINE`, pi's `PI_OFFLINE`): makai opens no
//! connection of its own accord, and installs no local model, while what the
//! user asks for still goes out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// Accepts one connection within `limit`, or says none came.
fn accepted_within(listener: &TcpListener, limit: Duration) -> bool {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if listener.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// RPC mode against a port that only counts connections.
fn rpc_against(env: &Env, listener: &TcpListener, extra: &[&str], vars: &[(&str, &str)]) -> Rpc {
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let mut args = s(&[
        "--base-url",
        &base,
        "--api",
        "openai-completions",
        "--model",
        "m",
    ]);
    args.extend(extra.iter().map(|a| a.to_string()));
    Rpc::start_with(env, &args, vars)
}

#[test]
fn offline_opens_no_connection_before_the_user_sends_a_prompt() {
    let env = Env::new();

    // Without it, RPC mode connects at start-up, ahead of the first prompt.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let rpc = rpc_against(&env, &listener, &[], &[]);
    assert!(
        accepted_within(&listener, Duration::from_secs(20)),
        "no connection ahead of the first prompt without --offline"
    );
    rpc.finish();

    for (extra, vars) in [
        (&["--offline"][..], &[][..]),
        (&[][..], &[("MAKAI_OFFLINE", "1")][..]),
        (&[][..], &[("PI_OFFLINE", "true")][..]),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut rpc = rpc_against(&env, &listener, extra, vars);
        // The session is up once it answers.
        let state = rpc.ok(json!({"type": "get_state"}));
        assert_eq!(state["model"]["id"], "m", "{state}");
        assert!(
            !accepted_within(&listener, Duration::from_millis(1500)),
            "a connection was opened offline ({extra:?} {vars:?})"
        );
        // What the user asks for still goes out.
        rpc.send(json!({"type": "prompt", "message": "hi"}));
        assert!(
            accepted_within(&listener, Duration::from_secs(20)),
            "the prompt's request did not go out offline ({extra:?} {vars:?})"
        );
        drop(rpc);
    }

    // A variable saying no is not offline.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let rpc = rpc_against(&env, &listener, &[], &[("PI_OFFLINE", "0")]);
    assert!(accepted_within(&listener, Duration::from_secs(20)));
    rpc.finish();
}

#[test]
fn offline_without_a_key_does_not_install_the_local_model_and_says_why() {
    let env = Env::new();
    let cache = tempfile::tempdir().unwrap();
    let child = env
        .cmd()
        .args(["--offline", "-p", "hi"])
        .env("MAKAI_AUTO_LOCAL", "1")
        .env("MAKAI_LOCAL_MODEL_DIR", cache.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(child, Duration::from_secs(120));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("offline: it is used if it is installed")
            && err.contains("nothing is downloaded"),
        "{err}"
    );
    assert!(
        err.contains("is not installed in")
            && err.contains("offline (--offline, MAKAI_OFFLINE or PI_OFFLINE)"),
        "{err}"
    );
    // The message for a run without a key follows.
    assert!(err.contains("makai --help"), "{err}");
    assert!(
        !cache.path().join("venv").exists(),
        "a virtualenv was made offline"
    );
    let models = std::fs::read_dir(cache.path().join("models"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(models, 0, "something was put in the model folder offline");
}
