//! Work a coding task needs still works under `workspace-write`.

mod common;

use common::{run, sandbox, workspace};
use makai_sandbox::Policy;

#[tokio::test]
async fn toolchains_files_pipes_and_subshells_work() {
    let ws = workspace();
    let sb = sandbox(Policy::WorkspaceWrite);
    for (script, expect) in [
        ("cargo --version", "cargo "),
        ("python3 -c 'print(6 * 7)'", "42"),
        ("echo hello > f.txt && cat f.txt", "hello"),
        (
            "mkdir -p d/e && echo x > d/e/g && mv d/e/g d/h && ls d",
            "h",
        ),
        ("printf 'b\\na\\n' | sort | head -1", "a"),
        ("(cd d && echo sub $(echo shell))", "sub shell"),
        ("echo tmp > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"", "tmp"),
        ("ls /usr/bin >/dev/null && echo listed", "listed"),
    ] {
        let ran = run(&sb, &ws.cwd, script).await;
        assert_eq!(ran.code, Some(0), "{script}: {}", ran.output);
        assert!(ran.output.contains(expect), "{script}: {}", ran.output);
    }
    let ran = run(
        &sb,
        &ws.cwd,
        "git init -q . && git add f.txt && git -c user.name=t -c user.email=t@t commit -qm one && git status --short && echo ok",
    )
    .await;
    assert_eq!(ran.code, Some(0), "git: {}", ran.output);
}

#[tokio::test]
async fn full_access_is_not_confined() {
    let ws = workspace();
    let sb = sandbox(Policy::FullAccess);
    let out = ws.outside.display().to_string();
    let ran = run(&sb, &ws.cwd, &format!("echo x > {out}/free && echo done")).await;
    assert_eq!(ran.code, Some(0), "{}", ran.output);
    assert!(ws.outside.join("free").exists());
    assert!(!sb.confine(&ws.cwd).unwrap().is_confined());
}

#[test]
fn this_kernel_enforces_every_policy() {
    let support = makai_sandbox::probe();
    assert!(
        support.landlock_abi >= Some(makai_sandbox::MIN_LANDLOCK_ABI),
        "{support}"
    );
    assert!(support.seccomp, "{support}");
    let sb = sandbox(Policy::WorkspaceWrite);
    assert!(sb.weaker().is_empty());
    assert!(
        sb.describe().starts_with("workspace-write (Landlock ABI"),
        "{}",
        sb.describe()
    );
}
