//! Finding a grammar: by a code fence's language or a file's name.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

use syntect::parsing::{SyntaxReference, SyntaxSet};

/// bat's syntax set, loaded at first use (a few milliseconds).
pub(crate) fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(two_face::syntax::extra_newlines)
}

/// A language with a grammar.
#[derive(Clone, Copy, Debug)]
pub struct Language {
    pub(crate) syntax: &'static SyntaxReference,
}

impl PartialEq for Language {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.syntax, other.syntax)
    }
}

impl Eq for Language {}

impl Language {
    /// The language a code fence names (its info string's first word:
    /// `rust`, `TypeScript`, `py`, `sh`); `None` when no grammar knows it,
    /// or it is plain text.
    pub fn from_fence(info: &str) -> Option<Language> {
        let token = info.split_whitespace().next()?;
        // `{.rust}` and `rust,ignore` as in Pandoc and rustdoc.
        let token = token.trim_start_matches(['{', '.']).trim_end_matches('}');
        let token = token.split(',').next().unwrap_or(token);
        let token = match token.to_ascii_lowercase().as_str() {
            // Names fences use that the grammars list under another.
            "console" | "shell" | "zsh" | "shellsession" => "bash".to_string(),
            "jsonc" | "json5" => "json".to_string(),
            "golang" => "go".to_string(),
            "kt" | "kts" => "kotlin".to_string(),
            "typescriptreact" => "tsx".to_string(),
            other => other.to_string(),
        };
        Self::cached(&token, || syntaxes().find_syntax_by_token(&token))
    }

    /// The language of a file, by its extension or, without a known one,
    /// its whole name (`Makefile`, `Dockerfile`); `None` when no grammar
    /// knows it.
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, ext)| ext);
        Self::cached(&format!("/{name}"), || {
            let set = syntaxes();
            ext.and_then(|ext| set.find_syntax_by_extension(ext))
                .or_else(|| set.find_syntax_by_extension(name))
        })
    }

    /// The grammar's name (`Rust`, `Bourne Again Shell (bash)`).
    pub fn name(&self) -> &'static str {
        &self.syntax.name
    }

    /// The language `find` gives, remembered under `key` (the lookups
    /// compare every grammar's names and extensions, and a code block is
    /// looked up at each render while it streams).
    fn cached(
        key: &str,
        find: impl FnOnce() -> Option<&'static SyntaxReference>,
    ) -> Option<Language> {
        thread_local! {
            static FOUND: RefCell<HashMap<String, Option<Language>>> = RefCell::new(HashMap::new());
        }
        if let Some(found) = FOUND.with(|f| f.borrow().get(key).copied()) {
            return found;
        }
        let found = find()
            .filter(|s| s.name != "Plain Text")
            .map(|syntax| Language { syntax });
        FOUND.with(|f| {
            let mut f = f.borrow_mut();
            // Names are few in practice; a flood of odd ones is not kept.
            if f.len() < 1024 {
                f.insert(key.to_string(), found);
            }
        });
        found
    }
}
