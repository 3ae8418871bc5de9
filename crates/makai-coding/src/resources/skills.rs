//! Skills in the Agent Skills format (pi's `docs/skills.md`): a folder with a
//! `SKILL.md` whose frontmatter has `name`, `description` and optionally
//! `disable-model-invocation`. The system prompt lists name, description and
//! path; `/skill:name args` puts the instructions into the user message.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ResourceWarning, SourceInfo, frontmatter};

/// Longest skill name the specification allows.
const MAX_NAME_LENGTH: usize = 64;
/// Longest description the specification allows.
const MAX_DESCRIPTION_LENGTH: usize = 1024;
/// How deep discovery descends below a skills folder.
const MAX_DEPTH: usize = 8;

/// One skill.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    /// Its name (frontmatter `name`, else the folder name).
    pub name: String,
    /// When the model should use it.
    pub description: String,
    /// The `SKILL.md` (or standalone Markdown) file.
    pub file_path: PathBuf,
    /// The folder relative references resolve against.
    pub base_dir: PathBuf,
    /// Left out of the system prompt; only `/skill:name` loads it.
    pub disable_model_invocation: bool,
    /// Where it was found.
    pub source_info: SourceInfo,
}

#[derive(Default, Deserialize)]
struct Front {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "disable-model-invocation")]
    disable_model_invocation: bool,
}

/// Loads the skills under `dir`: a folder holding `SKILL.md` is one skill (not
/// searched further); otherwise Markdown files directly in `dir` that declare
/// a description are skills, and sub-folders are searched (hidden folders and
/// `node_modules` skipped).
pub(crate) fn load_dir(dir: &Path, scope: &str, warnings: &mut Vec<ResourceWarning>) -> Vec<Skill> {
    let mut out = Vec::new();
    walk(dir, scope, true, 0, warnings, &mut out);
    out
}

/// Loads one skill file given by path (a `SKILL.md` or a Markdown file with a
/// description); its problems are reported.
pub(crate) fn load_path(
    path: &Path,
    scope: &str,
    warnings: &mut Vec<ResourceWarning>,
) -> Option<Skill> {
    load_file(path, scope, true, warnings)
}

fn walk(
    dir: &Path,
    scope: &str,
    root: bool,
    depth: usize,
    warnings: &mut Vec<ResourceWarning>,
    out: &mut Vec<Skill>,
) {
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        if let Some(skill) = load_file(&skill_md, scope, true, warnings) {
            out.push(skill);
        }
        return;
    }
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = read.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            if depth < MAX_DEPTH {
                walk(&path, scope, false, depth + 1, warnings, out);
            }
        } else if root
            && name.ends_with(".md")
            && path.is_file()
            && let Some(skill) = load_file(&path, scope, false, warnings)
        {
            out.push(skill);
        }
    }
}

/// Reads one skill file. `declared`: a `SKILL.md`, whose problems are
/// reported; a standalone Markdown file without a description is skipped
/// silently (a README is not a broken skill).
fn load_file(
    path: &Path,
    scope: &str,
    declared: bool,
    warnings: &mut Vec<ResourceWarning>,
) -> Option<Skill> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(ResourceWarning::new(
                path,
                format!("skill skipped: cannot read it: {e}"),
            ));
            return None;
        }
    };
    let front: Front = match frontmatter::parse::<Front>(&text) {
        Ok((front, _)) => front,
        Err(e) => {
            if declared {
                warnings.push(ResourceWarning::new(path, format!("skill skipped: {e}")));
            }
            return None;
        }
    };
    let base_dir = path.parent()?.to_path_buf();
    let description = front.description.map(|d| d.trim().to_string());
    let Some(description) = description.filter(|d| !d.is_empty()) else {
        if declared {
            warnings.push(ResourceWarning::new(
                path,
                "skill skipped: its frontmatter has no description (the model needs one to \
                 know when to use it)",
            ));
        }
        return None;
    };
    if description.chars().count() > MAX_DESCRIPTION_LENGTH {
        warnings.push(ResourceWarning::new(
            path,
            format!("description exceeds {MAX_DESCRIPTION_LENGTH} characters"),
        ));
    }
    let name = match front.name.filter(|n| !n.trim().is_empty()) {
        Some(n) => n,
        None if declared => base_dir.file_name()?.to_string_lossy().into_owned(),
        None => path.file_stem()?.to_string_lossy().into_owned(),
    };
    for problem in name_problems(&name) {
        warnings.push(ResourceWarning::new(path, problem));
    }
    Some(Skill {
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
        disable_model_invocation: front.disable_model_invocation,
        source_info: SourceInfo::local(path, scope),
    })
}

/// What the Agent Skills specification says about a name (warnings only).
fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.chars().count() > MAX_NAME_LENGTH {
        out.push(format!("name exceeds {MAX_NAME_LENGTH} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push("name contains invalid characters (lowercase a-z, 0-9 and hyphens only)".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        out.push("name must not contain consecutive hyphens".into());
    }
    out
}

/// The system-prompt section listing the skills the model may load itself
/// (pi's and the Agent Skills integration format); `None` when there are none.
pub(crate) fn prompt_section(skills: &[Skill]) -> Option<String> {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return None;
    }
    let mut lines = vec![
        "The following skills provide specialized instructions for specific tasks.".to_string(),
        "Use the read tool to load a skill's file when the task matches its description."
            .to_string(),
        "When a skill file references a relative path, resolve it against the skill directory \
         (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands."
            .to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for s in visible {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.file_path.display().to_string())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    Some(lines.join("\n"))
}

/// A skill invocation as pi writes it into the user's message:
/// `<skill name="N" location="L">` line, the instructions, `</skill>`,
/// then, after a blank line, what the user typed after the name.
#[derive(Debug, PartialEq, Eq)]
pub struct SkillInvocation<'a> {
    /// The skill's name.
    pub name: &'a str,
    /// Its instructions.
    pub content: &'a str,
    /// The user's text after it, if any.
    pub rest: Option<&'a str>,
}

/// The skill invocation `text` is made of, as [`expand`] writes it (pi's
/// anchored `parseSkillBlock`); `None` for any other text.
pub fn parse_invocation(text: &str) -> Option<SkillInvocation<'_>> {
    let after_name = text.strip_prefix("<skill name=\"")?;
    let (name, after) = after_name.split_once('"')?;
    let after = after.strip_prefix(" location=\"")?;
    let (location, after) = after.split_once('"')?;
    let body = after.strip_prefix(">\n")?;
    if name.is_empty() || location.is_empty() || name.contains('\n') || location.contains('\n') {
        return None;
    }
    // The first closing line ends the instructions (pi's lazy match); the
    // text must end there or go on after a blank line.
    let mut search = 0;
    loop {
        let at = search + body[search..].find("\n</skill>")?;
        let tail = &body[at + "\n</skill>".len()..];
        if tail.is_empty() {
            return Some(SkillInvocation {
                name,
                content: &body[..at],
                rest: None,
            });
        }
        if let Some(rest) = tail.strip_prefix("\n\n")
            && !rest.is_empty()
        {
            let rest = rest.trim();
            return Some(SkillInvocation {
                name,
                content: &body[..at],
                rest: (!rest.is_empty()).then_some(rest),
            });
        }
        search = at + 1;
    }
}

/// `/skill:name args` as pi expands it: the instructions in a `<skill>` block,
/// then the arguments as the user's request. Errors name the unreadable file.
pub(crate) fn expand(skill: &Skill, args: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(&skill.file_path).map_err(|e| {
        format!(
            "cannot read skill '{}' at {}: {e}",
            skill.name,
            skill.file_path.display()
        )
    })?;
    let body = frontmatter::split(&text).body.trim().to_string();
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{body}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display()
    );
    let args = args.trim();
    Ok(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_invocation_is_pi_s_block_and_what_follows_it() {
        let message = "<skill name=\"review\" location=\"/s/review/SKILL.md\">\nReferences are relative to /s/review.\n\nCheck it.\n</skill>\n\nthe diff please";
        assert_eq!(
            parse_invocation(message),
            Some(SkillInvocation {
                name: "review",
                content: "References are relative to /s/review.\n\nCheck it.",
                rest: Some("the diff please"),
            })
        );
        let alone = "<skill name=\"a\" location=\"/x\">\nbody\n</skill>";
        assert_eq!(
            parse_invocation(alone),
            Some(SkillInvocation {
                name: "a",
                content: "body",
                rest: None,
            })
        );
        // The instructions may quote a closing tag mid-line.
        let quoted = "<skill name=\"a\" location=\"/x\">\nwrite </skill> here\n</skill>";
        assert_eq!(
            parse_invocation(quoted).unwrap().content,
            "write </skill> here"
        );
        for not in [
            "please <skill name=\"a\" location=\"/x\">\nbody\n</skill>",
            "<skill name=\"a\">\nbody\n</skill>",
            "<skill name=\"a\" location=\"/x\">\nbody\n</skill> trailing",
            "<skill name=\"a\" location=\"/x\">\nunclosed",
        ] {
            assert_eq!(parse_invocation(not), None, "{not}");
        }
    }
}
