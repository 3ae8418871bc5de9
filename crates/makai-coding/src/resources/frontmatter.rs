//! YAML frontmatter of Markdown resources (skills, prompt templates), read as
//! pi reads it: a file starting with `---`, the YAML up to the next line
//! starting with `---`, then the body. Line endings are normalised and the
//! body is trimmed (pi trims it only after a frontmatter block).

use serde::de::DeserializeOwned;

/// A Markdown file split into its frontmatter and body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Split<'a> {
    /// The YAML between the `---` lines; `None` when the file has none.
    pub yaml: Option<String>,
    /// The body after the frontmatter, trimmed; the whole text without one.
    pub body: std::borrow::Cow<'a, str>,
}

/// Splits `content` into frontmatter and body.
pub(crate) fn split<'a>(content: &'a str) -> Split<'a> {
    let normalized: std::borrow::Cow<'_, str> = if content.contains('\r') {
        content.replace("\r\n", "\n").replace('\r', "\n").into()
    } else {
        content.into()
    };
    let whole = |text: std::borrow::Cow<'a, str>| Split {
        yaml: None,
        body: match text {
            std::borrow::Cow::Borrowed(b) => b.trim().into(),
            std::borrow::Cow::Owned(o) => o.trim().to_string().into(),
        },
    };
    if !normalized.starts_with("---") {
        return whole(normalized);
    }
    let Some(end) = normalized[3..].find("\n---").map(|i| i + 3) else {
        return whole(normalized);
    };
    let yaml = normalized.get(4..end).unwrap_or_default().to_string();
    let body = normalized
        .get(end + 4..)
        .unwrap_or_default()
        .trim()
        .to_string();
    Split {
        yaml: Some(yaml),
        body: body.into(),
    }
}

/// Parses the frontmatter of `content` into `T` (its default when there is
/// none or it is empty). Errors name the YAML problem.
pub(crate) fn parse<T: DeserializeOwned + Default>(content: &str) -> Result<(T, String), String> {
    let parts = split(content);
    let body = parts.body.into_owned();
    match parts.yaml {
        Some(yaml) if !yaml.trim().is_empty() => serde_yaml_ng::from_str::<T>(&yaml)
            .map(|front| (front, body))
            .map_err(|e| format!("invalid frontmatter: {e}")),
        _ => Ok((T::default(), body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_yaml_and_trims_the_body() {
        let s = split("---\nname: a\n---\n\n  Body text\n");
        assert_eq!(s.yaml.as_deref(), Some("name: a"));
        assert_eq!(s.body, "Body text");
        let none = split("\nno frontmatter\n---\n");
        assert_eq!(none.yaml, None);
        assert_eq!(none.body, "no frontmatter\n---");
        let crlf = split("---\r\nname: b\r\n---\r\nx\r\n");
        assert_eq!(crlf.yaml.as_deref(), Some("name: b"));
        assert_eq!(crlf.body, "x");
        let open = split("---\nname: c\nno end");
        assert_eq!(open.yaml, None, "an unclosed block is body text");
    }
}
