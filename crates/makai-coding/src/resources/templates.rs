//! Prompt templates (pi's `docs/prompt-templates.md`): Markdown files whose
//! name is a `/` command; `/name args` expands to the body with the arguments
//! substituted.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ResourceWarning, SourceInfo, frontmatter};

/// One prompt template.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptTemplate {
    /// The command name: the file name without `.md`.
    pub name: String,
    /// The frontmatter `description`, else the first non-empty body line
    /// (cut at 60 characters).
    pub description: String,
    /// The frontmatter `argument-hint` (`<required>`, `[optional]`).
    pub argument_hint: Option<String>,
    /// The body after the frontmatter.
    pub content: String,
    /// The file.
    pub file_path: PathBuf,
    /// Where it was found.
    pub source_info: SourceInfo,
}

#[derive(Default, Deserialize)]
struct Front {
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "argument-hint")]
    argument_hint: Option<String>,
}

/// Loads the direct `*.md` children of `dir` (a missing folder holds none).
pub(crate) fn load_dir(
    dir: &Path,
    scope: &str,
    warnings: &mut Vec<ResourceWarning>,
) -> Vec<PromptTemplate> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| load_file(&path, scope, warnings))
        .collect()
}

/// Loads one template file given by path.
pub(crate) fn load_path(
    path: &Path,
    scope: &str,
    warnings: &mut Vec<ResourceWarning>,
) -> Option<PromptTemplate> {
    load_file(path, scope, warnings)
}

fn load_file(
    path: &Path,
    scope: &str,
    warnings: &mut Vec<ResourceWarning>,
) -> Option<PromptTemplate> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(ResourceWarning::new(
                path,
                format!("prompt template skipped: cannot read it: {e}"),
            ));
            return None;
        }
    };
    let (front, body): (Front, String) = match frontmatter::parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => {
            warnings.push(ResourceWarning::new(
                path,
                format!("prompt template skipped: {e}"),
            ));
            return None;
        }
    };
    let name = path.file_stem()?.to_string_lossy().into_owned();
    let description = match front.description.filter(|d| !d.trim().is_empty()) {
        Some(d) => d,
        None => body
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|line| {
                let cut: String = line.chars().take(60).collect();
                if line.chars().count() > 60 {
                    format!("{cut}...")
                } else {
                    cut
                }
            })
            .unwrap_or_default(),
    };
    Some(PromptTemplate {
        name,
        description,
        argument_hint: front.argument_hint,
        content: body,
        file_path: path.to_path_buf(),
        source_info: SourceInfo::local(path, scope),
    })
}

/// Splits command arguments as pi does: whitespace (newlines included)
/// separates them; a quote opens quoting only at the start of an argument and
/// only when a matching quote follows; inside quotes a backslash before the
/// same quote character gives that quote, other backslashes stay; an empty
/// quoted argument (`""`) is an argument.
pub fn parse_args(input: &str) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            if started {
                args.push(std::mem::take(&mut current));
                started = false;
            }
            i += 1;
            continue;
        }
        if (c == '"' || c == '\'')
            && current.is_empty()
            && let Some(end) = closing_quote(&chars, i + 1, c)
        {
            let mut j = i + 1;
            while j < end {
                if chars[j] == '\\' && chars.get(j + 1) == Some(&c) {
                    current.push(c);
                    j += 2;
                } else {
                    current.push(chars[j]);
                    j += 1;
                }
            }
            started = true;
            i = end + 1;
            continue;
        }
        current.push(c);
        started = true;
        i += 1;
    }
    if started {
        args.push(current);
    }
    args
}

/// The index of the quote closing one opened before `from`, skipping `\q`.
fn closing_quote(chars: &[char], from: usize, quote: char) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '\\' && chars.get(j + 1) == Some(&quote) {
            j += 2;
            continue;
        }
        if chars[j] == quote {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// Substitutes pi's placeholders in one pass (argument values are never
/// substituted again): `$1`, `$@`, `$ARGUMENTS`, `${1:-default}`,
/// `${@:-default}`, `${@:N}`, `${@:N:L}`. A default applies when the value
/// is missing or empty; anything else after `$` stays as written.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(content.len() + all.len());
    let mut rest = content;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (value, used) = placeholder(tail, args, &all);
        match value {
            Some(v) => {
                out.push_str(&v);
                rest = &tail[used..];
            }
            None => {
                out.push('$');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The value of the placeholder at the start of `tail` (just after `$`) and
/// how many bytes of `tail` it used.
fn placeholder(tail: &str, args: &[String], all: &str) -> (Option<String>, usize) {
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let n: usize = tail[..digits].parse().unwrap_or(0);
        let v = n
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .cloned()
            .unwrap_or_default();
        return (Some(v), digits);
    }
    if tail.starts_with('@') {
        return (Some(all.to_string()), 1);
    }
    if tail.starts_with("ARGUMENTS") {
        return (Some(all.to_string()), "ARGUMENTS".len());
    }
    let Some(inner) = tail.strip_prefix('{') else {
        return (None, 0);
    };
    let Some(close) = inner.find('}') else {
        return (None, 0);
    };
    let body = &inner[..close];
    let used = close + 2;
    let with_default = |value: String, default: &str| {
        if value.is_empty() {
            default.to_string()
        } else {
            value
        }
    };
    if let Some((name, default)) = body.split_once(":-") {
        if name == "@" {
            return (Some(with_default(all.to_string(), default)), used);
        }
        if let Ok(n) = name.parse::<usize>() {
            let v = n
                .checked_sub(1)
                .and_then(|i| args.get(i))
                .cloned()
                .unwrap_or_default();
            return (Some(with_default(v, default)), used);
        }
        return (None, 0);
    }
    if let Some(slice) = body.strip_prefix("@:") {
        let mut nums = slice.splitn(2, ':').map(str::parse::<usize>);
        let Some(Ok(start)) = nums.next() else {
            return (None, 0);
        };
        let start = start.saturating_sub(1).min(args.len());
        let end = match nums.next() {
            None => args.len(),
            Some(Ok(len)) => (start + len).min(args.len()),
            Some(Err(_)) => return (None, 0),
        };
        return (Some(args[start..end].join(" ")), used);
    }
    (None, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments_follow_pi_quoting() {
        assert_eq!(parse_args(r#"a "b c" d"#), s(&["a", "b c", "d"]));
        assert_eq!(parse_args("doesn't work"), s(&["doesn't", "work"]));
        assert_eq!(parse_args(r#""open quote"#), s(&["\"open", "quote"]));
        assert_eq!(
            parse_args(r#""the \"fast\" path" x\y"#),
            s(&["the \"fast\" path", "x\\y"])
        );
        assert_eq!(parse_args(r#""" x '' y"#), s(&["", "x", "", "y"]));
        assert_eq!(parse_args("one\ntwo\tthree"), s(&["one", "two", "three"]));
        assert!(parse_args("   ").is_empty());
    }

    #[test]
    fn placeholders_substitute_once() {
        let a = s(&["x", "y", "z"]);
        assert_eq!(substitute_args("$1-$2-$3-$4.", &a), "x-y-z-.");
        assert_eq!(substitute_args("[$@] [$ARGUMENTS]", &a), "[x y z] [x y z]");
        assert_eq!(substitute_args("${@:2} | ${@:1:2}", &a), "y z | x y");
        assert_eq!(substitute_args("${4:-dflt} ${1:-no}", &a), "dflt x");
        assert_eq!(substitute_args("${@:-all}", &[]), "all");
        assert_eq!(substitute_args("cost $5 ${x} $", &a), "cost  ${x} $");
        // Values are not substituted again.
        assert_eq!(substitute_args("$1 $2", &s(&["$2", "b"])), "$2 b");
    }
}
