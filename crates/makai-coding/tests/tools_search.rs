//! `grep`, `find` and `ls` over real folder trees.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_coding::tools::{CallCtx, ToolEnv, ToolOutput, run_builtin};
use serde_json::{Value, json};

async fn call(env: &ToolEnv, tool: &str, args: Value) -> ToolOutput {
    run_builtin(tool, env, args, &CallCtx::default())
        .await
        .unwrap()
}

fn tree() -> (tempfile::TempDir, ToolEnv) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files: &[(&str, &str)] = &[
        (".gitignore", "target/\n*.log\n"),
        (
            "src/main.rs",
            "fn main() {\n    println!(\"Hello\");\n    helper();\n}\n",
        ),
        (
            "src/lib.rs",
            "pub fn helper() {\n    // hello from lib\n}\n",
        ),
        ("src/nested/deep.rs", "const GREETING: &str = \"HELLO\";\n"),
        (
            "notes.md",
            "line one\nline two\nhello in markdown\nline four\nline five\n",
        ),
        ("target/debug/out.rs", "fn hello_generated() {}\n"),
        ("debug.log", "hello log\n"),
        (".hidden/secret.rs", "// hello hidden\n"),
        (".git/config", "hello git internals\n"),
    ];
    for (p, c) in files {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, c).unwrap();
    }
    let env = ToolEnv::new(root);
    (dir, env)
}

#[tokio::test]
async fn grep_respects_gitignore_and_skips_git() {
    let (_d, env) = tree();
    let out = call(
        &env,
        "grep",
        json!({"pattern": "hello", "ignoreCase": true}),
    )
    .await;
    let text = out.text_content();
    assert!(
        text.contains("src/lib.rs:2:     // hello from lib"),
        "{text}"
    );
    assert!(
        text.contains("src/main.rs:2:     println!(\"Hello\");"),
        "{text}"
    );
    assert!(text.contains("notes.md:3: hello in markdown"), "{text}");
    assert!(
        text.contains(".hidden/secret.rs:1:"),
        "hidden files are searched: {text}"
    );
    assert!(!text.contains("target/"), "ignored folder searched: {text}");
    assert!(!text.contains("debug.log"), "ignored file searched: {text}");
    assert!(!text.contains(".git/"), ".git searched: {text}");
    // Sorted by path.
    let paths: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
}

#[tokio::test]
async fn grep_case_glob_literal_and_path() {
    let (_d, env) = tree();
    let sensitive = call(&env, "grep", json!({"pattern": "hello"}))
        .await
        .text_content();
    assert!(
        !sensitive.contains("main.rs"),
        "case-sensitive by default: {sensitive}"
    );
    assert!(!sensitive.contains("deep.rs"));
    let globbed = call(
        &env,
        "grep",
        json!({"pattern": "hello", "ignoreCase": true, "glob": "*.rs"}),
    )
    .await
    .text_content();
    assert!(globbed.contains("src/nested/deep.rs:1:"), "{globbed}");
    assert!(!globbed.contains("notes.md"), "{globbed}");
    let literal = call(
        &env,
        "grep",
        json!({"pattern": "println!(\"", "literal": true}),
    )
    .await
    .text_content();
    assert!(literal.contains("src/main.rs:2:"), "{literal}");
    let in_dir = call(&env, "grep", json!({"pattern": "fn", "path": "src/nested"}))
        .await
        .text_content();
    assert_eq!(in_dir, "No matches found");
    let one_file = call(&env, "grep", json!({"pattern": "fn", "path": "src/lib.rs"}))
        .await
        .text_content();
    assert_eq!(one_file, "src/lib.rs:1: pub fn helper() {");
    let bad = run_builtin("grep", &env, json!({"pattern": "fn("}), &CallCtx::default())
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("literal: true"), "{bad}");
}

/// pi 1.5.1's fix: a glob is relative to `path`, and a leading `./` is
/// ignored rather than matching nothing.
#[tokio::test]
async fn grep_globs_are_relative_to_the_path_searched_and_a_leading_dot_slash_is_ignored() {
    let (_d, env) = tree();
    for glob in ["nested/*.rs", "./nested/*.rs", "nested/**"] {
        let text = call(
            &env,
            "grep",
            json!({"pattern": "HELLO", "path": "src", "glob": glob}),
        )
        .await
        .text_content();
        assert_eq!(
            text, "src/nested/deep.rs:1: const GREETING: &str = \"HELLO\";",
            "{glob}"
        );
    }
    let text = call(
        &env,
        "grep",
        json!({"pattern": "hello", "ignoreCase": true, "glob": "./src/*.rs"}),
    )
    .await
    .text_content();
    assert!(text.contains("src/lib.rs:2:"), "{text}");
    assert!(!text.contains("deep.rs"), "{text}");
    let text = call(&env, "grep", json!({"pattern": "hello", "glob": "./*.md"}))
        .await
        .text_content();
    assert_eq!(text, "notes.md:3: hello in markdown");
    // Also when `path` is a link to the folder.
    std::os::unix::fs::symlink(env.cwd.join("src"), env.cwd.join("link")).unwrap();
    let text = call(
        &env,
        "grep",
        json!({"pattern": "HELLO", "path": "link", "glob": "./nested/*.rs"}),
    )
    .await
    .text_content();
    assert!(
        text.ends_with("deep.rs:1: const GREETING: &str = \"HELLO\";"),
        "{text}"
    );
}

#[tokio::test]
async fn grep_context_lines() {
    let (_d, env) = tree();
    let text = call(&env, "grep", json!({"pattern": "hello in", "context": 1}))
        .await
        .text_content();
    assert_eq!(
        text,
        "notes.md-2- line two\nnotes.md:3: hello in markdown\nnotes.md-4- line four"
    );
}

#[tokio::test]
async fn grep_limit_notice_and_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..50).map(|i| format!("match {i}\n")).collect();
    std::fs::write(dir.path().join("many.txt"), body).unwrap();
    std::fs::write(
        dir.path().join("long.txt"),
        format!("match {}\n", "y".repeat(2000)),
    )
    .unwrap();
    let env = ToolEnv::new(dir.path());
    let out = call(
        &env,
        "grep",
        json!({"pattern": "match", "path": "many.txt", "limit": 10}),
    )
    .await;
    let text = out.text_content();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("many.txt:")).count(),
        10
    );
    assert!(
        text.ends_with("[10 matches limit reached. Use limit=20 for more, or refine the pattern]"),
        "{text}"
    );
    assert_eq!(out.details["matchLimitReached"], json!(10));
    let long = call(
        &env,
        "grep",
        json!({"pattern": "match", "path": "long.txt"}),
    )
    .await
    .text_content();
    assert!(long.contains("... [truncated]"), "{long}");
    assert!(
        long.contains("Some lines truncated to 500 characters"),
        "{long}"
    );
    assert!(long.len() < 700);
}

#[tokio::test]
async fn find_globs_sorted_with_gitignore() {
    let (_d, env) = tree();
    let text = call(&env, "find", json!({"pattern": "*.rs"}))
        .await
        .text_content();
    assert_eq!(
        text,
        ".hidden/secret.rs\nsrc/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs"
    );
    let nested = call(&env, "find", json!({"pattern": "src/**/*.rs"}))
        .await
        .text_content();
    assert_eq!(nested, "src/lib.rs\nsrc/main.rs\nsrc/nested/deep.rs");
    let dirs = call(&env, "find", json!({"pattern": "nested"}))
        .await
        .text_content();
    assert_eq!(dirs, "src/nested/");
    let none = call(&env, "find", json!({"pattern": "*.py"}))
        .await
        .text_content();
    assert_eq!(none, "No files found matching pattern");
    let sub = call(&env, "find", json!({"pattern": "*.rs", "path": "src"}))
        .await
        .text_content();
    assert_eq!(sub, "lib.rs\nmain.rs\nnested/deep.rs");
    // A leading `./` is the folder searched: the pattern is anchored there.
    let anchored = call(&env, "find", json!({"pattern": "./src/*.rs"}))
        .await
        .text_content();
    assert_eq!(anchored, "src/lib.rs\nsrc/main.rs");
    let anchored = call(
        &env,
        "find",
        json!({"pattern": "./nested/*.rs", "path": "src"}),
    )
    .await
    .text_content();
    assert_eq!(anchored, "nested/deep.rs");
}

#[tokio::test]
async fn find_limit_notice() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        std::fs::write(dir.path().join(format!("f{i:02}.txt")), "").unwrap();
    }
    let env = ToolEnv::new(dir.path());
    let out = call(&env, "find", json!({"pattern": "*.txt", "limit": 5})).await;
    let text = out.text_content();
    assert_eq!(
        text,
        "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n\n[5 results limit reached. Use limit=10 for more, or refine the pattern]"
    );
    assert_eq!(out.details["resultLimitReached"], json!(5));
}

#[tokio::test]
async fn ls_sorts_marks_folders_includes_dotfiles_and_limits() {
    let (_d, env) = tree();
    let text = call(&env, "ls", json!({})).await.text_content();
    assert_eq!(
        text,
        ".git/\n.gitignore\n.hidden/\ndebug.log\nnotes.md\nsrc/\ntarget/"
    );
    let dir = tempfile::tempdir().unwrap();
    for name in ["b", "A", "c", "D", "e"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    std::fs::create_dir(dir.path().join("Zdir")).unwrap();
    let env = ToolEnv::new(dir.path());
    let all = call(&env, "ls", json!({"path": "."})).await.text_content();
    assert_eq!(all, "A\nb\nc\nD\ne\nZdir/");
    let out = call(&env, "ls", json!({"limit": 3})).await;
    assert_eq!(
        out.text_content(),
        "A\nb\nc\n\n[3 entries limit reached (6 entries in total). Use limit=6 for more]"
    );
    let empty = tempfile::tempdir().unwrap();
    let text = call(&ToolEnv::new(empty.path()), "ls", json!({}))
        .await
        .text_content();
    assert_eq!(text, "(empty directory)");
    let err = run_builtin("ls", &env, json!({"path": "A"}), &CallCtx::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Not a directory: A"), "{err}");
}
