//! Confinement: traversal, absolute paths and symbolic links that leave the
//! working directory are refused by every path-taking tool unless allowed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;

use makai_coding::tools::{CallCtx, PathPolicy, ToolEnv, ToolError, run_builtin};
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    outside: std::path::PathBuf,
    cwd: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
    std::fs::write(cwd.join("src/ok.txt"), "fine\n").unwrap();
    Fixture {
        _dir: dir,
        outside,
        cwd,
    }
}

async fn call(env: &ToolEnv, tool: &str, args: Value) -> Result<String, ToolError> {
    run_builtin(tool, env, args, &CallCtx::default())
        .await
        .map(|o| o.text_content())
}

fn assert_denied(r: Result<String, ToolError>, what: &str) {
    match r {
        Err(e @ ToolError::PathDenied { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("outside the working directory"),
                "{what}: {msg}"
            );
            assert!(msg.contains("allowedPaths"), "{what}: {msg}");
        }
        other => panic!("{what}: expected PathDenied, got {other:?}"),
    }
}

#[tokio::test]
async fn traversal_is_refused_for_every_tool() {
    let f = fixture();
    let env = ToolEnv::new(&f.cwd);
    assert_denied(
        call(&env, "read", json!({"path": "../outside/secret.txt"})).await,
        "read",
    );
    assert_denied(
        call(
            &env,
            "write",
            json!({"path": "../outside/new.txt", "content": "x"}),
        )
        .await,
        "write",
    );
    assert_denied(
        call(
            &env,
            "edit",
            json!({"path": "src/../../outside/secret.txt", "edits": [{"oldText": "top", "newText": "bottom"}]}),
        )
        .await,
        "edit",
    );
    assert_denied(
        call(&env, "grep", json!({"pattern": "secret", "path": ".."})).await,
        "grep",
    );
    assert_denied(
        call(&env, "find", json!({"pattern": "*", "path": "../outside"})).await,
        "find",
    );
    assert_denied(call(&env, "ls", json!({"path": ".."})).await, "ls");
    assert!(!f.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "top secret\n"
    );
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_inside_are_fine() {
    let f = fixture();
    let env = ToolEnv::new(&f.cwd);
    let abs_out = f.outside.join("secret.txt");
    assert_denied(
        call(&env, "read", json!({"path": abs_out})).await,
        "abs read",
    );
    assert_denied(
        call(&env, "read", json!({"path": "/etc/passwd"})).await,
        "/etc/passwd",
    );
    let abs_in = f.cwd.join("src/ok.txt");
    let text = call(&env, "read", json!({"path": abs_in})).await.unwrap();
    assert!(text.contains("fine"), "{text}");
}

#[tokio::test]
async fn symlink_escapes_are_refused() {
    let f = fixture();
    symlink(&f.outside, f.cwd.join("escape_dir")).unwrap();
    symlink(f.outside.join("secret.txt"), f.cwd.join("escape_file")).unwrap();
    // A dangling link: writing through it would create a file outside.
    symlink(f.outside.join("planted.txt"), f.cwd.join("dangling")).unwrap();
    // A link to a folder inside is fine.
    symlink(f.cwd.join("src"), f.cwd.join("src_link")).unwrap();
    let env = ToolEnv::new(&f.cwd);

    let r = call(&env, "read", json!({"path": "escape_file"})).await;
    assert!(
        matches!(&r, Err(e) if e.to_string().contains("symbolic link")),
        "{r:?}"
    );
    assert_denied(
        call(&env, "read", json!({"path": "escape_dir/secret.txt"})).await,
        "dir link",
    );
    assert_denied(
        call(&env, "ls", json!({"path": "escape_dir"})).await,
        "ls link",
    );
    assert_denied(
        call(
            &env,
            "write",
            json!({"path": "dangling", "content": "planted"}),
        )
        .await,
        "dangling",
    );
    assert!(!f.outside.join("planted.txt").exists());
    assert_denied(
        call(
            &env,
            "write",
            json!({"path": "escape_dir/x.txt", "content": "x"}),
        )
        .await,
        "write via dir link",
    );
    assert!(!f.outside.join("x.txt").exists());

    let ok = call(&env, "read", json!({"path": "src_link/ok.txt"}))
        .await
        .unwrap();
    assert!(ok.contains("fine"));
}

#[tokio::test]
async fn allowed_roots_and_allow_all_open_the_gate() {
    let f = fixture();
    let env =
        ToolEnv::new(&f.cwd).with_policy(PathPolicy::confined().with_allowed_root(&f.outside));
    let text = call(&env, "read", json!({"path": "../outside/secret.txt"}))
        .await
        .unwrap();
    assert!(text.contains("top secret"));
    // Other places stay closed.
    assert_denied(
        call(&env, "read", json!({"path": "/etc/hostname"})).await,
        "not allowed",
    );

    let env = ToolEnv::new(&f.cwd).with_policy(PathPolicy::allow_all());
    let text = call(&env, "read", json!({"path": f.outside.join("secret.txt")}))
        .await
        .unwrap();
    assert!(text.contains("top secret"));
}

#[tokio::test]
async fn tilde_expands_only_where_allowed() {
    let Some(home) = dirs::home_dir() else { return };
    let f = fixture();
    let confined = ToolEnv::new(&f.cwd);
    // The home folder is not inside this temporary working directory.
    if !f.cwd.starts_with(&home) {
        assert_denied(
            call(&confined, "ls", json!({"path": "~"})).await,
            "tilde confined",
        );
    }
    let open = ToolEnv::new(&f.cwd).with_policy(PathPolicy::allow_all());
    let listed = call(&open, "ls", json!({"path": "~"})).await;
    assert!(listed.is_ok(), "{listed:?}");
    // `~name` is not a home reference: it stays a relative name.
    let r = call(&confined, "read", json!({"path": "~nobody/file"})).await;
    assert!(matches!(r, Err(ToolError::NotFound { .. })), "{r:?}");
}
