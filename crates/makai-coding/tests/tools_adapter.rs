//! The built-in tools seen through the agent layer's `Tool` trait.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_agent::{ToolContext, ToolError, ToolSet};
use makai_coding::tools::{BUILTIN_TOOL_NAMES, ToolEnv, builtin_tools, tools_by_names};
use serde_json::json;

#[test]
fn names_flags_and_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtin_tools(ToolEnv::new(dir.path()));
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, BUILTIN_TOOL_NAMES);
    for t in &tools {
        let ro = matches!(t.name(), "read" | "grep" | "find" | "ls");
        assert_eq!(t.read_only(), ro, "{}", t.name());
        let schema = t.parameters();
        assert_eq!(schema["type"], "object", "{}", t.name());
        assert!(schema.get("$schema").is_none());
        assert!(!t.description().is_empty());
    }
    let read = &tools[0];
    let p = read.parameters();
    assert_eq!(p["required"], json!(["path"]));
    assert_eq!(p["properties"]["offset"]["type"], "integer");
    let grep = tools.iter().find(|t| t.name() == "grep").unwrap();
    let gp = grep.parameters();
    for key in [
        "pattern",
        "path",
        "glob",
        "ignoreCase",
        "literal",
        "context",
        "limit",
    ] {
        assert!(gp["properties"].get(key).is_some(), "grep lacks {key}");
    }
    assert_eq!(gp["properties"]["ignoreCase"]["type"], "boolean");
    let edit = tools.iter().find(|t| t.name() == "edit").unwrap();
    let ep = edit.parameters();
    assert_eq!(ep["properties"]["edits"]["type"], "array");
    let item = &ep["properties"]["edits"]["items"];
    assert!(
        item["properties"].get("oldText").is_some()
            && item["properties"].get("replaceAll").is_some()
    );
    // The set accepts them all (schemas compile).
    let set = ToolSet::new(tools.clone());
    assert_eq!(set.names().len(), 7);
    assert!(
        set.validate("read", &json!({"path": "a", "offset": 3}))
            .is_ok()
    );
    assert!(
        set.validate("read", &json!({"offset": 3})).is_err(),
        "path is required"
    );
    assert!(
        set.validate(
            "edit",
            &json!({"path": "a", "oldText": "x", "newText": "y"})
        )
        .is_ok()
    );
    assert!(
        set.validate(
            "edit",
            &json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
        )
        .is_ok()
    );
    assert!(
        set.validate("bash", &json!({"command": "ls", "timeout": 1.5}))
            .is_ok()
    );
    assert!(
        set.validate(
            "grep",
            &json!({"pattern": "x", "ignoreCase": true, "limit": 5})
        )
        .is_ok()
    );
}

#[test]
fn selecting_by_names() {
    let dir = tempfile::tempdir().unwrap();
    let some = tools_by_names(ToolEnv::new(dir.path()), "read, grep,find ls,read").unwrap();
    let names: Vec<&str> = some.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["read", "grep", "find", "ls"]);
    let err = match tools_by_names(ToolEnv::new(dir.path()), "read,rm") {
        Ok(_) => panic!("rm is not a built-in tool"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("Unknown tool 'rm'")
            && err.contains("read, write, edit, bash, grep, find, ls"),
        "{err}"
    );
}

#[tokio::test]
async fn execute_maps_results_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let tools = builtin_tools(ToolEnv::new(dir.path()));
    let get = |n: &str| tools.iter().find(|t| t.name() == n).unwrap().clone();

    let ctx = ToolContext::detached("c1", dir.path());
    let out = get("read")
        .execute("c1", json!({"path": "a.txt"}), ctx.clone())
        .await
        .unwrap();
    assert!(out.text_content().contains("alpha"));

    let err = get("read")
        .execute("c2", json!({"path": "../x"}), ctx.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::Failed(ref m) if m.contains("Access denied")),
        "{err:?}"
    );

    // A failing command is an error result that still carries its output and details.
    let err = get("bash")
        .execute("c3", json!({"command": "echo oops; exit 2"}), ctx.clone())
        .await
        .unwrap_err();
    match err {
        ToolError::Output(o) => {
            assert_eq!(o.text_content(), "oops\n\nCommand exited with code 2");
            assert_eq!(o.details["exitCode"], json!(2));
        }
        other => panic!("expected an output error, got {other:?}"),
    }

    // Top-level oldText/newText works through the adapter.
    get("edit")
        .execute(
            "c4",
            json!({"path": "a.txt", "oldText": "alpha", "newText": "beta"}),
            ctx.clone(),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "beta\n"
    );

    // An empty cwd in the environment means "the run's working directory".
    let tools = builtin_tools(ToolEnv::new(""));
    let ls = tools.iter().find(|t| t.name() == "ls").unwrap();
    let out = ls
        .execute("c5", json!({}), ToolContext::detached("c5", dir.path()))
        .await
        .unwrap();
    assert_eq!(out.text_content(), "a.txt");

    // Cancellation maps to Cancelled.
    let ctx = ToolContext::detached("c6", dir.path());
    ctx.cancel_token().cancel();
    let err = get("bash")
        .execute("c6", json!({"command": "sleep 5"}), ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Cancelled), "{err:?}");
}
