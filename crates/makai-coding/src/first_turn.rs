//! The first-turn tool policy for small models: which one tool the first
//! model call of a run must call, so that a model too small to decide on its
//! own still looks before it answers.
//!
//! The 0.5B local model calls a tool reliably only when the request names it
//! (`tool_choice`), and the schemas of every tool would fill most of its
//! 4,096-token window. So the first call of a run names one tool, and only
//! that tool's schema is sent with it (makai-ai sends a named choice to a
//! local server as `"required"` with that tool alone): `read` when the prompt
//! names a file of the working directory, else `ls`. Later calls of the run
//! are free again.

use std::path::{Component, Path};

use crate::overview::is_secret_name;

/// The tool the first call of a run on `prompt` must call, among
/// `tools` (the run's tool names): `read` when the prompt names an existing
/// file inside `cwd` (not as `@path`, which is inlined already, and not a
/// secret such as `.env`), else `ls`; `None` when neither is available.
pub fn first_turn_tool(prompt: &str, cwd: &Path, tools: &[&str]) -> Option<&'static str> {
    let has = |name: &str| tools.contains(&name);
    if has("read") && names_a_file(prompt, cwd) {
        return Some("read");
    }
    has("ls").then_some("ls")
}

/// True when a word of `prompt` is the relative path of a file inside `cwd`.
fn names_a_file(prompt: &str, cwd: &Path) -> bool {
    prompt.split_whitespace().any(|word| {
        if word.starts_with('@') {
            return false;
        }
        let quote = |c: char| matches!(c, '`' | '\'' | '"' | '(' | ')' | '[' | ']' | '<' | '>');
        let word = word
            .trim_start_matches(quote)
            .trim_end_matches(|c: char| quote(c) || matches!(c, '?' | '.' | ',' | ':' | ';' | '!'));
        is_file_inside(word, cwd)
    })
}

fn is_file_inside(word: &str, cwd: &Path) -> bool {
    let path = Path::new(word);
    if word.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return false;
    }
    let secret = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_none_or(is_secret_name);
    !secret && cwd.join(path).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_file_is_read_otherwise_the_folder_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("src")).unwrap();
        std::fs::write(d.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(d.join("Cargo.toml"), "[package]").unwrap();
        std::fs::write(d.join(".env"), "KEY=x").unwrap();
        let both = ["read", "ls"];
        assert_eq!(
            first_turn_tool("What does src/main.rs do?", d, &both),
            Some("read")
        );
        assert_eq!(
            first_turn_tool("Explain `Cargo.toml`.", d, &both),
            Some("read")
        );
        assert_eq!(
            first_turn_tool("What does this repository do?", d, &both),
            Some("ls")
        );
        // A folder, a missing file, a path leaving the folder, a secret, an @path: ls.
        for p in [
            "What is in src?",
            "Read nothing.rs",
            "Read ../x.rs",
            "Show .env",
            "Explain @Cargo.toml",
        ] {
            assert_eq!(first_turn_tool(p, d, &both), Some("ls"), "{p}");
        }
        assert_eq!(
            first_turn_tool("Explain Cargo.toml", d, &["read"]),
            Some("read")
        );
        assert_eq!(first_turn_tool("What is here?", d, &["read"]), None);
        assert_eq!(first_turn_tool("Explain Cargo.toml", d, &["bash"]), None);
    }
}
