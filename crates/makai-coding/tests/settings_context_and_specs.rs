//! Context-file discovery, agent spec loading and precedence, and the system
//! prompt they build.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use makai_coding::agent_spec::{
    AgentCatalog, AgentSpecError, DEFAULT_AGENT, DEFAULT_TOOLS, SpecSource, build_system_prompt,
    default_spec,
};
use makai_coding::context_files::{ContextScope, context_section, discover_context_files};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// outer/AGENTS.md (above the repo, must be ignored)
/// outer/repo/.git/, outer/repo/CLAUDE.md, outer/repo/a/AGENTS.md + CLAUDE.md,
/// outer/repo/a/b (cwd, no file), home/AGENTS.md
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let outer = tmp.path().join("outer");
    let repo = outer.join("repo");
    let cwd = repo.join("a/b");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    write(&outer.join("AGENTS.md"), "outside the repository");
    write(&repo.join("CLAUDE.md"), "repo rules");
    write(&repo.join("a/AGENTS.md"), "a rules");
    write(&repo.join("a/CLAUDE.md"), "shadowed by AGENTS.md");
    write(&home.join("AGENTS.md"), "global rules");
    (tmp, repo, cwd, home)
}

#[test]
fn context_files_are_found_from_repo_root_to_cwd_plus_global() {
    let (_t, repo, cwd, home) = layout();
    let files = discover_context_files(&cwd, Some(&home));
    let got: Vec<(PathBuf, &str, ContextScope)> = files
        .iter()
        .map(|f| (f.path.clone(), f.content.as_str(), f.scope))
        .collect();
    assert_eq!(
        got,
        [
            (home.join("AGENTS.md"), "global rules", ContextScope::Global),
            (repo.join("CLAUDE.md"), "repo rules", ContextScope::Project),
            (repo.join("a/AGENTS.md"), "a rules", ContextScope::Project),
        ]
    );
}

#[test]
fn without_git_the_walk_goes_up_to_the_filesystem_root() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("x/y");
    std::fs::create_dir_all(&cwd).unwrap();
    write(&tmp.path().join("AGENTS.md"), "top");
    write(&cwd.join("AGENTS.md"), "bottom");
    let files = discover_context_files(&cwd, None);
    let mine: Vec<&str> = files
        .iter()
        .filter(|f| f.path.starts_with(tmp.path()))
        .map(|f| f.content.as_str())
        .collect();
    assert_eq!(mine, ["top", "bottom"]);
}

#[test]
fn context_section_is_delimited_and_ordered() {
    let (_t, repo, cwd, home) = layout();
    let files = discover_context_files(&cwd, Some(&home));
    let s = context_section(&files).unwrap();
    assert!(s.starts_with("# Project context\n"));
    assert!(s.trim_end().ends_with("# End of project context"));
    let g = s.find("global rules").unwrap();
    let r = s.find("repo rules").unwrap();
    let a = s.find("a rules").unwrap();
    assert!(g < r && r < a);
    assert!(s.contains(&format!(
        "## {}\n\nrepo rules",
        repo.join("CLAUDE.md").display()
    )));
    assert!(context_section(&[]).is_none());
}

#[test]
fn huge_context_files_are_cut_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
    write(&tmp.path().join("AGENTS.md"), &"x".repeat(200_000));
    let files = discover_context_files(tmp.path(), None);
    assert_eq!(files.len(), 1);
    assert!(files[0].content.len() < 70_000);
    assert!(files[0].content.contains("200000 bytes"));
}

#[test]
fn builtin_coder_is_the_default_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = AgentCatalog::load(tmp.path(), None);
    let coder = cat.require(DEFAULT_AGENT).unwrap();
    assert_eq!(coder.source, SpecSource::Builtin);
    assert_eq!(coder.tools[..7], DEFAULT_TOOLS);
    assert_eq!(
        coder.tools[7..],
        ["task"],
        "the coder may hand work to sub-agents"
    );
    assert!(coder.system_prompt.contains("## edit"));
    assert_eq!(coder, &default_spec().unwrap());
    assert!(cat.problems.is_empty());
}

#[test]
fn project_specs_win_over_user_specs_which_win_over_builtin() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    let home = tmp.path().join("home");
    write(
        &home.join("agents/reviewer.toml"),
        "description = \"user reviewer\"\nsystem_prompt = \"Review as the user likes.\"\ntools = [\"read\", \"grep\"]\nthinking = \"high\"\n",
    );
    write(
        &home.join("agents/coder.toml"),
        "name = \"coder\"\nsystem_prompt_file = \"prompts/coder.md\"\nmodel = \"openai/gpt-4o\"\n",
    );
    write(
        &home.join("agents/prompts/coder.md"),
        "User's own coder prompt.",
    );
    write(
        &cwd.join(".makai/agents/review.toml"),
        "name = \"reviewer\"\ndescription = \"project reviewer\"\nsystem_prompt_file = \"review.md\"\ntools = []\n",
    );
    write(
        &cwd.join(".makai/agents/review.md"),
        "Review per project rules.",
    );

    let cat = AgentCatalog::load(&cwd, Some(&home));
    assert!(cat.problems.is_empty(), "{:?}", cat.problems);
    let reviewer = cat.get("reviewer").unwrap();
    assert_eq!(reviewer.source, SpecSource::Project);
    assert_eq!(reviewer.description, "project reviewer");
    assert_eq!(reviewer.system_prompt, "Review per project rules.");
    assert!(
        reviewer.tools.is_empty(),
        "an explicit empty list means no tools"
    );
    let coder = cat.get("coder").unwrap();
    assert_eq!(coder.source, SpecSource::User);
    assert_eq!(coder.system_prompt, "User's own coder prompt.");
    assert_eq!(coder.model.as_deref(), Some("openai/gpt-4o"));
    assert_eq!(
        coder.tools, DEFAULT_TOOLS,
        "no tools key: all built-in tools"
    );
    let names: Vec<&str> = cat.specs().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["coder", "reviewer", "worker"]);

    let err = cat.require("ghost").unwrap_err();
    assert!(matches!(err, AgentSpecError::NotFound { .. }));
    assert!(err.to_string().contains("coder, reviewer"), "{err}");
}

#[test]
fn bad_specs_are_reported_and_the_rest_still_load() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    let dir = cwd.join(".makai/agents");
    write(&dir.join("good.toml"), "system_prompt = \"ok\"\n");
    write(&dir.join("noprompt.toml"), "description = \"x\"\n");
    write(
        &dir.join("typo.toml"),
        "system_prompt = \"ok\"\ntool = [\"read\"]\n",
    );
    write(
        &dir.join("badname.toml"),
        "name = \"has space\"\nsystem_prompt = \"ok\"\n",
    );
    write(
        &dir.join("dup.toml"),
        "system_prompt = \"ok\"\ntools = [\"read\", \"read\"]\n",
    );
    write(
        &dir.join("missingfile.toml"),
        "system_prompt_file = \"nope.md\"\n",
    );
    write(&dir.join("broken.toml"), "system_prompt = \n");
    let cat = AgentCatalog::load(&cwd, None);
    assert!(cat.get("good").is_some());
    assert_eq!(cat.problems.len(), 6, "{:#?}", cat.problems);
    let all = cat.problems.join("\n");
    for needle in [
        "noprompt.toml",
        "tool",
        "has space",
        "twice",
        "nope.md",
        "broken.toml",
    ] {
        assert!(all.contains(needle), "no problem mentions {needle}: {all}");
    }
}

#[test]
fn project_spec_prompt_files_must_stay_inside_the_project_makai_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    write(&tmp.path().join("secret.txt"), "PRIVATE KEY");
    write(
        &cwd.join(".makai/agents/coder.toml"),
        "system_prompt_file = \"../../../secret.txt\"\n",
    );
    let cat = AgentCatalog::load(&cwd, None);
    // The malicious override is refused; the built-in coder stays.
    assert_eq!(cat.get("coder").unwrap().source, SpecSource::Builtin);
    assert_eq!(cat.problems.len(), 1);
    assert!(cat.problems[0].contains("outside"), "{}", cat.problems[0]);
}

#[test]
fn system_prompt_is_spec_then_context_then_environment() {
    let (_t, _repo, cwd, home) = layout();
    let spec = default_spec().unwrap();
    let files = discover_context_files(&cwd, Some(&home));
    let date = chrono::NaiveDate::from_ymd_opt(2025, 3, 14).unwrap();
    let p = build_system_prompt(&spec, &files, &cwd, date);
    assert!(p.starts_with(spec.system_prompt.trim_end()));
    let ctx = p.find("# Project context").unwrap();
    let env = p.find("# Environment").unwrap();
    assert!(ctx < env);
    assert!(p.contains("Current date: 2025-03-14"));
    assert!(p.contains(&format!("Working directory: {}", cwd.display())));
    // Without context files there is no empty section.
    let bare = build_system_prompt(&spec, &[], &cwd, date);
    assert!(!bare.contains("# Project context"));
}
