//! Tests of [`super`] (`config.rs`).

use super::*;
use serde_json::json;

#[test]
fn parses_both_shapes_and_round_trips() {
    let s = McpServerConfig::from_json(
        "a",
        &json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v", "N": 3},
                "cwd": "/tmp", "timeout": 1.5, "startupTimeout": 10, "autoApprove": []}),
    )
    .unwrap();
    assert_eq!(s.call_timeout(), Duration::from_millis(1500));
    assert_eq!(s.start_timeout(), Duration::from_secs(10));
    assert_eq!(s.target(), "npx -y pkg");
    let again = McpServerConfig::from_json("a", &s.to_json()).unwrap();
    assert_eq!(again, s);
    for sb in [
        json!("read-only"),
        json!({"policy": "full-access", "network": true, "writableRoots": ["/w"]}),
    ] {
        let c = McpServerConfig::from_json("s", &json!({"command": "x", "sandbox": sb})).unwrap();
        assert_eq!(c.to_json()["sandbox"], sb);
    }
    let h = McpServerConfig::from_json(
        "b",
        &json!({"type": "http", "url": "https://x.invalid/mcp", "headers": {"Authorization": "Bearer t"}, "disabled": true}),
    )
    .unwrap();
    assert!(!h.enabled);
    assert_eq!(
        h.to_json(),
        json!({"url": "https://x.invalid/mcp", "headers": {"Authorization": "Bearer t"}, "enabled": false})
    );
}

#[test]
fn bad_entries_say_what_to_do() {
    for (v, needle) in [
        (json!({}), "neither"),
        (json!({"command": "x", "url": "http://y"}), "both"),
        (json!({"url": "http://y", "type": "sse"}), "streamable HTTP"),
        (json!({"url": "ftp://y"}), "not an http"),
        (json!({"command": "x", "args": "a b"}), "array of strings"),
        (json!({"command": "x", "timeout": -1}), "positive"),
        (json!({"command": "x", "enabled": "yes"}), "true or false"),
        (
            json!({"command": "x", "sandbox": "open"}),
            "workspace-write",
        ),
        (
            json!({"command": "x", "sandbox": {"network": 1}}),
            "true or false",
        ),
        (json!("npx"), "not a JSON object"),
    ] {
        let e = McpServerConfig::from_json("s", &v).unwrap_err();
        assert!(e.to_string().contains(needle), "{v}: {e}");
        assert!(e.to_string().starts_with("MCP server 's'"), "{e}");
    }
}
