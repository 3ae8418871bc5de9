//! Error texts quote the model's input bounded: a few hundred characters and
//! the length, never a 2 MB argument sent back whole (issue 21, case 5).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_ai::quote::QUOTE_CHARS;
use makai_coding::tools::{CallCtx, ToolEnv, run_builtin};
use serde_json::{Value, json};

/// The longest error text a tool may give for one oversized argument.
const MAX_ERROR: usize = 3 * QUOTE_CHARS + 600;

fn setup() -> (tempfile::TempDir, ToolEnv) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "hello\nworld\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let env = ToolEnv::new(dir.path());
    (dir, env)
}

async fn error_of(env: &ToolEnv, tool: &str, args: Value) -> String {
    match run_builtin(tool, env, args.clone(), &CallCtx::default()).await {
        Ok(out) => panic!(
            "{tool} succeeded on {}: {}",
            args.to_string().chars().take(200).collect::<String>(),
            out.text_content()
        ),
        Err(e) => e.to_string(),
    }
}

fn assert_bounded(what: &str, text: &str, input: &str) {
    assert!(
        text.chars().count() <= MAX_ERROR,
        "{what}: the error has {} characters: {}…",
        text.chars().count(),
        text.chars().take(400).collect::<String>()
    );
    // Where the input is quoted, its length is said.
    let head: String = input.chars().take(60).collect();
    if text.contains(&head) {
        assert!(
            text.contains(" characters in all)")
                || text.contains(&format!("{} bytes long", input.len())),
            "{what}: the input is quoted without its length: {text}"
        );
    }
}

#[tokio::test]
async fn read_of_a_two_megabyte_path_is_not_echoed_whole() {
    let (_dir, env) = setup();
    let path = "a/".repeat(1 << 20);
    let text = error_of(&env, "read", json!({ "path": path })).await;
    assert_bounded("read path", &text, &path);
    assert!(text.contains("2097152 bytes long"), "{text}");
}

#[tokio::test]
async fn every_tool_bounds_an_oversized_argument_in_its_error() {
    let (_dir, env) = setup();
    let huge = "q".repeat(2 << 20);
    let under_limit = format!("../{}", "d".repeat(3000));
    let cases: Vec<(&str, Value, &str)> = vec![
        ("read", json!({ "path": huge }), huge.as_str()),
        ("read", json!({ "path": under_limit }), under_limit.as_str()),
        (
            "read",
            json!({ "path": "f.txt", "offset": huge }),
            huge.as_str(),
        ),
        (
            "read",
            json!({ "path": "f.txt", "limit": [huge] }),
            huge.as_str(),
        ),
        ("read", json!({ "path": [huge] }), huge.as_str()),
        (
            "write",
            json!({ "path": huge, "content": "x" }),
            huge.as_str(),
        ),
        (
            "write",
            json!({ "path": under_limit, "content": "x" }),
            under_limit.as_str(),
        ),
        (
            "edit",
            json!({ "path": huge, "oldText": "a", "newText": "b" }),
            huge.as_str(),
        ),
        (
            "edit",
            json!({ "path": "f.txt", "edits": huge }),
            huge.as_str(),
        ),
        (
            "edit",
            json!({ "path": "f.txt", "oldText": huge, "newText": "b" }),
            huge.as_str(),
        ),
        ("ls", json!({ "path": huge }), huge.as_str()),
        ("ls", json!({ "path": "sub", "limit": huge }), huge.as_str()),
        (
            "grep",
            json!({ "pattern": format!("({huge}") }),
            huge.as_str(),
        ),
        (
            "grep",
            json!({ "pattern": "x", "path": huge }),
            huge.as_str(),
        ),
        (
            "grep",
            json!({ "pattern": "x", "glob": format!("[{huge}") }),
            huge.as_str(),
        ),
        (
            "grep",
            json!({ "pattern": "x", "ignoreCase": huge }),
            huge.as_str(),
        ),
        (
            "find",
            json!({ "pattern": format!("[{huge}") }),
            huge.as_str(),
        ),
        (
            "find",
            json!({ "pattern": "*", "path": huge }),
            huge.as_str(),
        ),
        (
            "bash",
            json!({ "command": "true", "timeout": huge }),
            huge.as_str(),
        ),
        (&huge, json!({}), huge.as_str()),
    ];
    for (tool, args, input) in cases {
        let json = args.to_string();
        let what = format!(
            "{} {}",
            &tool[..tool.len().min(8)],
            &json[..json.len().min(40)]
        );
        let text = error_of(&env, tool, args).await;
        assert_bounded(&what, &text, input);
    }
}

#[tokio::test]
async fn an_edit_hint_shows_a_few_lines_however_long_the_old_text() {
    let (dir, env) = setup();
    let body: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("long.txt"), &body).unwrap();
    // The first line matches, the rest does not: 0 matches, with a hint.
    let old = format!("line 7\n{}", "nope\n".repeat(4000));
    let text = error_of(
        &env,
        "edit",
        json!({ "path": "long.txt", "oldText": old, "newText": "x" }),
    )
    .await;
    assert!(
        text.contains("appears (ignoring whitespace) at line 8"),
        "{text}"
    );
    assert!(
        text.lines().count() <= 16,
        "{} lines: {text}",
        text.lines().count()
    );
}
