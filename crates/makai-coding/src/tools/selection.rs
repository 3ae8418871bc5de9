//! pi's tool selection lists (the `defaultTools` setting and `--tools`):
//! plain names form the selection, then `+name` adds and `-name` removes, in
//! order; a list made only of `+name`/`-name` entries changes the selection
//! it is applied to instead of replacing it.

/// True when every entry of `list` is `+name` or `-name` (an empty list is
/// not: it selects nothing).
pub fn only_changes(list: &[String]) -> bool {
    !list.is_empty()
        && list
            .iter()
            .all(|e| e.trim().starts_with('+') || e.trim().starts_with('-'))
}

/// The selection `list` makes on top of `base` (see the module docs); names
/// keep their first position and appear once.
pub fn select_tools(base: &[String], list: &[String]) -> Vec<String> {
    let mut out: Vec<String> = if only_changes(list) {
        base.to_vec()
    } else {
        list.iter()
            .map(|e| e.trim())
            .filter(|e| !e.starts_with('+') && !e.starts_with('-') && !e.is_empty())
            .map(str::to_string)
            .collect()
    };
    for entry in list.iter().map(|e| e.trim()) {
        if let Some(name) = entry.strip_prefix('+') {
            out.push(name.trim().to_string());
        } else if let Some(name) = entry.strip_prefix('-') {
            out.retain(|n| n != name.trim());
        }
    }
    let mut seen = Vec::new();
    out.retain(|n| {
        let first = !seen.contains(n);
        seen.push(n.clone());
        first
    });
    out
}

/// A comma-separated list (`--tools read,+grep`) as entries.
pub fn parse_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_names_replace_and_changes_apply_in_order() {
        let base = v(&["read", "bash", "edit", "write"]);
        assert_eq!(
            select_tools(&base, &v(&["+grep"])),
            v(&["read", "bash", "edit", "write", "grep"])
        );
        assert_eq!(
            select_tools(&base, &v(&["-bash", "+ls", "+grep"])),
            v(&["read", "edit", "write", "ls", "grep"])
        );
        assert_eq!(select_tools(&base, &v(&["read", "ls"])), v(&["read", "ls"]));
        // In one list the plain names form the selection wherever they stand.
        assert_eq!(
            select_tools(&base, &v(&["+grep", "read", "-read"])),
            v(&["grep"])
        );
        assert!(
            select_tools(&base, &[]).is_empty(),
            "an empty list selects nothing"
        );
        assert_eq!(select_tools(&base, &v(&["+read", "+read"])), base);
        assert_eq!(parse_list(" read, +grep ,"), v(&["read", "+grep"]));
    }
}
