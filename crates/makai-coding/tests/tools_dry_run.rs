//! Dry-run: `write`, `edit` and `bash` describe what they would do and change
//! nothing (the tree's hash is the same before and after); read-only tools run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use makai_coding::tools::{CallCtx, ToolEnv, run_builtin};
use serde_json::json;

/// Every path under `root` with its kind, mode and content.
fn snapshot(root: &Path) -> BTreeMap<String, (String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                out.insert(rel, ("dir".into(), mode, Vec::new()));
                stack.push(p);
            } else {
                out.insert(rel, ("file".into(), mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/app.py"), "print('hi')\nprint('bye')\n").unwrap();
    std::fs::write(root.join("README"), "readme\n").unwrap();
    let before = snapshot(root);
    let env = ToolEnv::new(root).with_dry_run(true);
    let ctx = CallCtx::default();

    let w = run_builtin(
        "write",
        &env,
        json!({"path": "new/dir/file.txt", "content": "12345"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(
        w.text_content(),
        "Dry run: would create new/dir/file.txt with 5 bytes, creating its parent folders. Nothing was written."
    );
    let w = run_builtin(
        "write",
        &env,
        json!({"path": "README", "content": "x"}),
        &ctx,
    )
    .await
    .unwrap();
    assert!(
        w.text_content()
            .contains("would overwrite README (currently 7 bytes) with 1 bytes"),
        "{}",
        w.text_content()
    );

    let e = run_builtin(
        "edit",
        &env,
        json!({"path": "src/app.py", "edits": [{"oldText": "print('bye')", "newText": "print('ciao')"}]}),
        &ctx,
    )
    .await
    .unwrap();
    let text = e.text_content();
    assert!(
        text.starts_with("Dry run: would apply 1 edit(s) to src/app.py."),
        "{text}"
    );
    assert!(text.contains("-print('bye')\n+print('ciao')"), "{text}");
    assert_eq!(e.details["dryRun"], json!(true));
    // A dry-run edit still validates: zero matches is still an error.
    let bad = run_builtin(
        "edit",
        &env,
        json!({"path": "src/app.py", "edits": [{"oldText": "nothing", "newText": "x"}]}),
        &ctx,
    )
    .await;
    assert!(bad.is_err());

    let b = run_builtin(
        "bash",
        &env,
        json!({"command": "touch made-by-bash && rm -rf src"}),
        &ctx,
    )
    .await
    .unwrap();
    let text = b.text_content();
    assert!(
        text.contains("Dry run: would run this command with `bash -c` in"),
        "{text}"
    );
    assert!(text.ends_with("touch made-by-bash && rm -rf src"), "{text}");

    // Read-only tools still work.
    let r = run_builtin("read", &env, json!({"path": "README"}), &ctx)
        .await
        .unwrap();
    assert!(r.text_content().contains("readme"));

    assert_eq!(snapshot(root), before, "the tree changed during dry-run");
}
