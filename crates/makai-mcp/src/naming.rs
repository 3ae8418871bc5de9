//! Agent-side tool names: `<server>__<tool>`, sanitized to what every LLM
//! provider accepts (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! Characters outside that set become `_`. A name longer than 64 characters is
//! cut and ends with `_` and 8 hex digits of a hash of the unsanitized name, so
//! two long names that share a prefix stay distinct. [`assign_names`] also
//! resolves collisions between tools whose sanitized names coincide.

use std::collections::HashSet;

/// Longest tool name every provider accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// Separator between the server and the tool name.
pub const SEPARATOR: &str = "__";

/// The agent-side name of `tool` on `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let raw = format!("{server}{SEPARATOR}{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_TOOL_NAME {
        clean
    } else {
        with_hash(&clean[..MAX_TOOL_NAME - 9], &raw)
    }
}

/// `prefix` + `_` + 8 hex digits of a hash of `full`.
fn with_hash(prefix: &str, full: &str) -> String {
    format!("{prefix}_{:08x}", fnv1a(full.as_bytes()) as u32)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Names for every tool of `server`, in order, all distinct: a tool whose
/// sanitized name is already taken gets a hash suffix (or a counter, if even
/// that collides).
pub fn assign_names<'a>(server: &str, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for tool in tools {
        let mut name = tool_name(server, tool);
        if taken.contains(&name) {
            let keep = name.len().min(MAX_TOOL_NAME - 9);
            name = with_hash(&name[..keep], &format!("{server}{SEPARATOR}{tool}"));
            let mut n = 2;
            while taken.contains(&name) {
                let suffix = format!("_{n}");
                let keep = name.len().min(MAX_TOOL_NAME - suffix.len());
                name = format!("{}{suffix}", &name[..keep]);
                n += 1;
            }
        }
        taken.insert(name.clone());
        out.push(name);
    }
    out
}

/// True when `name` is acceptable to every provider.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_bounds_names() {
        assert_eq!(tool_name("fs", "read_file"), "fs__read_file");
        assert_eq!(
            tool_name("my server", "get.thing/ü"),
            "my_server__get_thing__"
        );
        let long = "x".repeat(100);
        let a = tool_name("srv", &long);
        let b = tool_name("srv", &format!("{long}y"));
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert_ne!(a, b);
        assert!(is_valid_tool_name(&a) && is_valid_tool_name(&b));
    }

    #[test]
    fn collisions_get_distinct_names() {
        let names = assign_names("s", ["a.b", "a_b", "a/b", "c"]);
        assert_eq!(names[0], "s__a_b");
        assert_eq!(names[3], "s__c");
        let set: HashSet<&String> = names.iter().collect();
        assert_eq!(set.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| is_valid_tool_name(n)), "{names:?}");
    }
}
