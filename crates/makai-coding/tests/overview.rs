//! The working-directory overview for models without tools: real folders,
//! real files and a real `git` repository in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use makai_coding::overview::{
    BYTES_PER_TOKEN, OverviewOptions, overview_budget, workspace_overview,
};

fn opts(budget_tokens: u64) -> OverviewOptions {
    OverviewOptions {
        budget_tokens,
        tools: false,
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_overview_has_the_readme_top_the_entries_and_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "# demo\n\nA Rust agent runtime.\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
    let o = workspace_overview(dir.path(), opts(1024)).await.unwrap();
    assert!(
        o.starts_with("# Overview of the working directory\n"),
        "{o}"
    );
    assert!(o.contains("you have not read any other file"), "{o}");
    assert!(o.contains("You cannot run tools in this session"), "{o}");
    assert!(
        o.contains("## README.md\n\n# demo\n\nA Rust agent runtime.\n"),
        "{o}"
    );
    assert!(
        o.contains("## Top-level entries (3)\n\nCargo.toml  README.md  src/\n"),
        "{o}"
    );
    // Not a git repository: no git section.
    assert!(!o.contains("## Git"), "{o}");

    let with_tools = workspace_overview(
        dir.path(),
        OverviewOptions {
            budget_tokens: 1024,
            tools: true,
        },
    )
    .await
    .unwrap();
    assert!(!with_tools.contains("cannot run tools"), "{with_tools}");
}

#[tokio::test]
async fn the_overview_stays_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let readme: String = (0..5000)
        .map(|i| format!("line {i} of a long readme\n"))
        .collect();
    std::fs::write(dir.path().join("README.md"), &readme).unwrap();
    for i in 0..200 {
        std::fs::write(
            dir.path().join(format!("file-with-a-long-name-{i:03}.txt")),
            "x",
        )
        .unwrap();
    }
    for budget in [160u64, 200, 300, 1024, 2048] {
        let o = workspace_overview(dir.path(), opts(budget)).await.unwrap();
        let max = (budget * BYTES_PER_TOKEN) as usize;
        assert!(o.len() <= max, "budget {budget}: {} bytes > {max}", o.len());
    }
    let o = workspace_overview(dir.path(), opts(1024)).await.unwrap();
    // The README is cut at a line and says how much of it is shown.
    assert!(o.contains("## README.md (first "), "{o}");
    assert!(o.contains(&format!("of {} bytes)", readme.len())), "{o}");
    // ... and ends with a whole line.
    assert!(
        o.contains(" of a long readme\n\n## Top-level entries"),
        "{o}"
    );
    assert!(o.contains("## Top-level entries (201)"), "{o}");
    assert!(o.contains("(and 121 more)"), "{o}");
    // Below the smallest useful budget there is no overview.
    assert_eq!(workspace_overview(dir.path(), opts(100)).await, None);
}

#[tokio::test]
async fn secrets_are_never_in_the_overview() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "API_KEY=sk-do-not-leak-0123456789";
    std::fs::write(dir.path().join(".env"), secret).unwrap();
    std::fs::write(dir.path().join("prod.env"), secret).unwrap();
    std::fs::write(dir.path().join("server.pem"), secret).unwrap();
    std::fs::write(dir.path().join("id_rsa"), secret).unwrap();
    // A README that is a link to the secret is not read either.
    std::os::unix::fs::symlink(dir.path().join(".env"), dir.path().join("README.md")).unwrap();
    // Nor one that leaves the working directory.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), secret).unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes.txt"), dir.path().join("README"))
        .unwrap();
    std::fs::write(dir.path().join("lib.rs"), "fn main() {}\n").unwrap();
    let o = workspace_overview(dir.path(), opts(2048)).await.unwrap();
    assert!(!o.contains("sk-do-not-leak"), "{o}");
    assert!(!o.contains("## README"), "{o}");
    for name in [".env", "prod.env", "server.pem", "id_rsa"] {
        assert!(!o.contains(name), "{name} listed: {o}");
    }
    assert!(o.contains("lib.rs"), "{o}");
}

#[tokio::test]
async fn a_binary_readme_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        b"\x89PNG\r\n\x1a\n\0\0\0binary",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.txt"), "The text one.\n").unwrap();
    let o = workspace_overview(dir.path(), opts(1024)).await.unwrap();
    assert!(!o.contains("PNG"), "{o}");
    // The next README candidate is used instead.
    assert!(o.contains("## README.txt\n\nThe text one.\n"), "{o}");
}

#[tokio::test]
async fn ignored_and_hidden_entries_are_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let o = workspace_overview(dir.path(), opts(1024)).await.unwrap();
    assert!(o.contains("## Top-level entries (1)\n\nsrc/\n"), "{o}");
}

#[tokio::test]
async fn the_git_section_names_the_branch_and_summarises_the_status() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "trunk"]);
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "one\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "two\n").unwrap();
    git(dir.path(), &["add", "b.txt"]);
    std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
    let o = workspace_overview(dir.path(), opts(1024)).await.unwrap();
    assert!(
        o.contains("## Git\n\nBranch trunk; 1 staged, 1 modified, 1 untracked: "),
        "{o}"
    );
    for p in ["a.txt", "b.txt", "new.txt"] {
        assert!(o.contains(p), "{p}: {o}");
    }

    let clean = tempfile::tempdir().unwrap();
    git(clean.path(), &["init", "-q", "-b", "main"]);
    let o = workspace_overview(clean.path(), opts(1024)).await.unwrap();
    assert!(
        o.contains("## Git\n\nBranch main (no commits yet); the working tree is clean.\n"),
        "{o}"
    );
}

#[test]
fn the_budget_leaves_room_for_the_prompt_and_the_answer() {
    // The built-in local model: 4,096 tokens, ~800 of system prompt, 1,024 for the answer.
    assert_eq!(overview_budget(4096, 800, 1024), 1024);
    // A long system prompt leaves less.
    assert_eq!(overview_budget(4096, 2500, 1024), 4096 - 2500 - 1024 - 256);
    // Nothing left: nothing.
    assert_eq!(overview_budget(4096, 4000, 1024), 0);
    // A large window is capped: it stays an overview.
    assert_eq!(overview_budget(200_000, 3000, 16_384), 2048);
}
