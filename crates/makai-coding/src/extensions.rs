//! pi's built-in extensions, as makai has them: `builtin:mcp` (MCP
//! servers), `builtin:codemode` (the `codemode` tool),
//! `builtin:tool-search` (the `tool_search` tool) and `builtin:llama.cpp`
//! (the models of a llama.cpp router, `makai_ai::catalog::llama_cpp`). They are on by default;
//! the `extensions` setting turns one off with `-builtin:<name>` and on again
//! with `+builtin:<name>` (a later entry wins, the project's after the
//! user's), `--no-extensions` turns them all off, and `-e builtin:<name>`
//! turns one on whatever the rest say.
//!
//! makai runs no TypeScript extensions: other entries of the setting are
//! reported ([`BuiltinExtensions::unsupported`]) and `-e <path>` is refused.

/// The built-in extensions makai has.
pub const BUILTIN_EXTENSIONS: [&str; 4] = ["mcp", "codemode", "tool-search", "llama.cpp"];

/// Which built-in extensions are on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuiltinExtensions {
    disabled: Vec<String>,
    unsupported: Vec<String>,
}

impl BuiltinExtensions {
    /// The extensions in force given the `extensions` setting (user entries
    /// first), `--no-extensions` and the `-e` values. `Err` names an `-e`
    /// value makai cannot load.
    pub fn resolve(
        setting: &[String],
        no_extensions: bool,
        explicit: &[String],
    ) -> Result<BuiltinExtensions, String> {
        let mut out = BuiltinExtensions::default();
        if no_extensions {
            out.disabled = BUILTIN_EXTENSIONS.iter().map(|s| s.to_string()).collect();
        }
        for entry in setting.iter().map(|e| e.trim()) {
            let (on, rest) = match entry.strip_prefix('-') {
                Some(rest) => (false, rest),
                None => (true, entry.strip_prefix('+').unwrap_or(entry)),
            };
            match rest.strip_prefix("builtin:") {
                Some(name) if BUILTIN_EXTENSIONS.contains(&name) => {
                    if !no_extensions {
                        out.set(name, on);
                    }
                }
                _ => out.unsupported.push(entry.to_string()),
            }
        }
        for value in explicit.iter().map(|e| e.trim()) {
            match value.strip_prefix("builtin:") {
                Some(name) if BUILTIN_EXTENSIONS.contains(&name) => out.set(name, true),
                _ => {
                    return Err(format!(
                        "-e {value}: makai does not run pi's TypeScript extensions; its built-in ones are {}",
                        BUILTIN_EXTENSIONS
                            .iter()
                            .map(|n| format!("builtin:{n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }

    fn set(&mut self, name: &str, on: bool) {
        self.disabled.retain(|n| n != name);
        if !on {
            self.disabled.push(name.to_string());
        }
    }

    /// Whether built-in extension `name` (one of [`BUILTIN_EXTENSIONS`]) is on.
    pub fn enabled(&self, name: &str) -> bool {
        !self.disabled.iter().any(|n| n == name)
    }

    /// Entries of the `extensions` setting makai cannot load (pi's
    /// TypeScript extensions, unknown built-ins).
    pub fn unsupported(&self) -> &[String] {
        &self.unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn settings_flags_and_explicit_entries_decide_as_in_pi() {
        let all = BuiltinExtensions::resolve(&[], false, &[]).unwrap();
        assert!(BUILTIN_EXTENSIONS.iter().all(|n| all.enabled(n)));
        // The project's entry (later) wins over the user's.
        let set = BuiltinExtensions::resolve(
            &v(&[
                "-builtin:mcp",
                "-builtin:codemode",
                "+builtin:mcp",
                "./ext.ts",
                "-builtin:llama.cpp",
            ]),
            false,
            &[],
        )
        .unwrap();
        assert!(set.enabled("mcp") && !set.enabled("codemode") && set.enabled("tool-search"));
        assert!(!set.enabled("llama.cpp"));
        assert_eq!(set.unsupported(), ["./ext.ts"]);
        // --no-extensions turns them all off; -e turns one back on.
        let none =
            BuiltinExtensions::resolve(&v(&["+builtin:codemode"]), true, &v(&["builtin:mcp"]))
                .unwrap();
        assert!(none.enabled("mcp") && !none.enabled("codemode") && !none.enabled("tool-search"));
        let err = BuiltinExtensions::resolve(&[], false, &v(&["./review.ts"])).unwrap_err();
        assert!(
            err.contains("builtin:mcp, builtin:codemode, builtin:tool-search"),
            "{err}"
        );
    }
}
