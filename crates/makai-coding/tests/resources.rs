//! Skills and prompt templates from makai's, pi's and the Agent Skills
//! folders (pi 1.5.2's docs/skills.md and docs/prompt-templates.md), on real
//! files in temporary folders.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use makai_coding::resources::{
    CommandSource, ExpansionKind, ResourceDirs, Resources, expand_input, list_commands,
};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dirs: ResourceDirs,
}

/// A home with makai's and pi's folders and a repository with project ones.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    let repo = root.join("repo");
    let cwd = repo.join("sub");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    write(
        &home.join(".makai/skills/makai-user/SKILL.md"),
        "---\nname: makai-user\ndescription: From makai's user folder.\n---\nUser instructions.\n",
    );
    write(
        &home.join(".pi/agent/skills/group/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: >\n  Extract text & tables from PDF files.\n  Use for <PDF> work.\n---\n\n# PDF tools\n\nRead `references/formats.md` first.\n",
    );
    write(
        &home.join(".pi/agent/skills/group/pdf-tools/references/formats.md"),
        "# not a skill\n",
    );
    write(
        &home.join(".agents/skills/hidden-one/SKILL.md"),
        "---\nname: hidden-one\ndescription: Only by command.\ndisable-model-invocation: true\n---\nSecret steps.\n",
    );
    write(
        &home.join(".pi/agent/skills/broken/SKILL.md"),
        "---\nname: broken\n---\nNo description.\n",
    );
    write(
        &home.join(".pi/agent/skills/README.md"),
        "# My skills\nJust notes, no frontmatter.\n",
    );
    write(
        &cwd.join(".pi/skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: A project copy that loses to the user one.\n---\nx\n",
    );
    write(
        &repo.join(".agents/skills/repo-skill/SKILL.md"),
        "---\nname: repo-skill\ndescription: Found at the repository root.\n---\nRepo steps.\n",
    );
    write(
        &root.join(".agents/skills/outside/SKILL.md"),
        "---\nname: outside\ndescription: Above the repository; never found.\n---\nx\n",
    );
    write(
        &home.join(".pi/agent/prompts/review.md"),
        "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nReview the staged changes. Focus on ${1:-correctness}.\n",
    );
    write(
        &home.join(".makai/prompts/fix.md"),
        "\n\nFix the failing tests in $1 and then $@ as one very long first line that goes on\n",
    );
    write(
        &cwd.join(".makai/prompts/review.md"),
        "---\ndescription: loses to the user template\n---\nproject review\n",
    );
    write(
        &cwd.join(".pi/prompts/bad.md"),
        "---\ndescription: [unclosed\n---\nbody\n",
    );
    Fixture {
        _tmp: tmp,
        dirs: ResourceDirs {
            cwd,
            makai_home: Some(home.join(".makai")),
            pi_agent_dir: Some(home.join(".pi/agent")),
            user_home: Some(home),
            project: true,
        },
    }
}

#[test]
fn skills_are_found_in_makai_pi_and_agent_skills_folders_first_one_wins() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    let names: Vec<&str> = r.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["makai-user", "pdf-tools", "hidden-one", "repo-skill"],
        "{:?}",
        r.warnings
    );
    let pdf = r.skill("pdf-tools").unwrap();
    assert!(
        pdf.file_path
            .ends_with(".pi/agent/skills/group/pdf-tools/SKILL.md")
    );
    assert_eq!(pdf.source_info.scope, "user");
    assert_eq!(r.skill("repo-skill").unwrap().source_info.scope, "project");
    assert!(r.skill("hidden-one").unwrap().disable_model_invocation);
    let warned = |needle: &str| r.warnings.iter().any(|w| w.to_string().contains(needle));
    assert!(warned("no description"), "{:?}", r.warnings);
    assert!(warned("already taken"), "{:?}", r.warnings);
    assert!(
        !r.warnings.iter().any(|w| w.path.ends_with("README.md")),
        "a README is not a broken skill: {:?}",
        r.warnings
    );
}

#[test]
fn system_prompt_lists_name_description_and_path_of_model_invocable_skills() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    let section = r.skills_prompt_section().unwrap();
    assert!(section.contains("<available_skills>"), "{section}");
    assert!(section.contains("<name>pdf-tools</name>"));
    assert!(
        section.contains(
            "<description>Extract text &amp; tables from PDF files. Use for &lt;PDF&gt; work.</description>"
        ),
        "{section}"
    );
    let path = r
        .skill("pdf-tools")
        .unwrap()
        .file_path
        .display()
        .to_string();
    assert!(section.contains(&format!("<location>{path}</location>")));
    assert!(!section.contains("hidden-one"), "disable-model-invocation");
    assert!(Resources::empty().skills_prompt_section().is_none());
}

#[test]
fn skill_command_loads_the_instructions_with_the_arguments_as_the_request() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    let skill = r.skill("pdf-tools").unwrap();
    let out = expand_input("/skill:pdf-tools extract report.pdf", &r);
    assert_eq!(out.kind, ExpansionKind::Skill("pdf-tools".into()));
    assert_eq!(
        out.text,
        format!(
            "<skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\n# PDF tools\n\nRead `references/formats.md` first.\n</skill>\n\nextract report.pdf",
            skill.file_path.display(),
            skill.base_dir.display()
        )
    );
    // Hidden from the model, still loadable by command.
    let hidden = expand_input("/skill:hidden-one", &r);
    assert!(
        hidden.text.ends_with("Secret steps.\n</skill>"),
        "{}",
        hidden.text
    );
    // Unknown skills and plain text pass through.
    for text in ["/skill:nope do it", "hello /skill:pdf-tools", "/unknown x"] {
        let out = expand_input(text, &r);
        assert_eq!((out.text.as_str(), out.kind), (text, ExpansionKind::Plain));
    }
}

#[test]
fn skill_whose_file_vanished_is_reported_and_the_text_kept() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    std::fs::remove_file(&r.skill("makai-user").unwrap().file_path).unwrap();
    let out = expand_input("/skill:makai-user go", &r);
    assert_eq!(out.text, "/skill:makai-user go");
    assert!(
        out.warning
            .unwrap()
            .contains("cannot read skill 'makai-user'")
    );
}

#[test]
fn templates_expand_with_arguments_defaults_and_descriptions() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    let names: Vec<&str> = r.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fix", "review"], "{:?}", r.warnings);
    let review = r.template("review").unwrap();
    assert_eq!(review.description, "Review staged git changes");
    assert_eq!(review.argument_hint.as_deref(), Some("[focus]"));
    assert_eq!(review.source_info.scope, "user");
    assert_eq!(
        r.template("fix").unwrap().description,
        "Fix the failing tests in $1 and then $@ as one very long fir..."
    );
    let out = expand_input("/review \"API compatibility\"", &r);
    assert_eq!(out.kind, ExpansionKind::Template("review".into()));
    assert_eq!(
        out.text,
        "Review the staged changes. Focus on API compatibility."
    );
    assert_eq!(
        expand_input("/review", &r).text,
        "Review the staged changes. Focus on correctness."
    );
    assert_eq!(
        expand_input("/fix src/a.rs doesn't matter", &r).text,
        "Fix the failing tests in src/a.rs and then src/a.rs doesn't matter as one very long first line that goes on"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.path.ends_with("bad.md") && w.message.contains("frontmatter")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn commands_are_listed_as_pi_get_commands_lists_them() {
    let f = fixture();
    let r = Resources::discover_in(&f.dirs);
    let commands = list_commands(&r);
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fix",
            "review",
            "skill:makai-user",
            "skill:pdf-tools",
            "skill:hidden-one",
            "skill:repo-skill"
        ]
    );
    assert_eq!(commands[1].source, CommandSource::Prompt);
    assert_eq!(commands[3].source, CommandSource::Skill);
    let json = serde_json::to_value(&commands[1]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "name": "review",
            "description": "Review staged git changes",
            "source": "prompt",
            "sourceInfo": {
                "path": r.template("review").unwrap().file_path.display().to_string(),
                "source": "local",
                "scope": "user",
                "origin": "top-level"
            }
        })
    );
}
