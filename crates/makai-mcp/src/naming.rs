//! Agent-side tool names, as pi's: `mcp__<server>__<tool>`, where the tool's
//! name has every character other than ASCII letters, digits and `_` replaced
//! by `_` (server names are already limited to letters, digits, `-` and `_`,
//! see [`crate::validate_server_name`]).
//!
//! Every provider accepts `^[a-zA-Z0-9_-]{1,64}$`: a name longer than 64
//! characters is cut and ends with `_` and 8 hex digits of a hash of the
//! server's and the tool's own names, so two long names that share a prefix
//! stay distinct. [`assign_names`] gives every tool of a server whose names
//! then coincide such a hash suffix (pi: "all get a hash suffix").

use std::collections::{HashMap, HashSet};

/// Longest tool name every provider accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// What every MCP tool's name starts with (pi's `mcp__`).
pub const PREFIX: &str = "mcp__";

/// Separator between the server and the tool name.
pub const SEPARATOR: &str = "__";

/// What the names of `server`'s tools start with: `mcp__<server>__`.
pub fn server_prefix(server: &str) -> String {
    format!("{PREFIX}{server}{SEPARATOR}")
}

/// Whether `name` is an MCP tool's agent-side name (starts with `mcp__`).
pub fn is_mcp_tool_name(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The agent-side name of `tool` on `server`, before collisions are resolved
/// (see [`assign_names`]).
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean_tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean_server: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = format!("{}{clean_tool}", server_prefix(&clean_server));
    if clean.len() <= MAX_TOOL_NAME {
        clean
    } else {
        with_hash(&clean, server, tool)
    }
}

/// `name` cut to leave room for `_` + 8 hex digits of a hash of the server's
/// and the tool's own names, then that suffix.
fn with_hash(name: &str, server: &str, tool: &str) -> String {
    let keep = name.len().min(MAX_TOOL_NAME - 9);
    let hash = fnv1a(format!("{server}{SEPARATOR}{tool}").as_bytes()) as u32;
    format!("{}_{hash:08x}", &name[..keep])
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Names for every tool of `server`, in order, all distinct: tools whose
/// names coincide once sanitized all get a hash suffix (and a counter, if
/// even those collide).
pub fn assign_names<'a>(server: &str, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let tools: Vec<&str> = tools.into_iter().collect();
    let plain: Vec<String> = tools.iter().map(|t| tool_name(server, t)).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &plain {
        *count.entry(name.as_str()).or_default() += 1;
    }
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(tools.len());
    for (tool, name) in tools.iter().zip(&plain) {
        let mut name = if count.get(name.as_str()).copied().unwrap_or(0) > 1 {
            with_hash(name, server, tool)
        } else {
            name.clone()
        };
        let base = name.clone();
        let mut n = 2;
        while taken.contains(&name) {
            let suffix = format!("_{n}");
            let keep = base.len().min(MAX_TOOL_NAME - suffix.len());
            name = format!("{}{suffix}", &base[..keep]);
            n += 1;
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
    fn names_are_pis_mcp_server_tool_form() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(
            tool_name("dev-radius", "get-sum"),
            "mcp__dev-radius__get_sum"
        );
        assert_eq!(tool_name("srv", "get.thing/ü"), "mcp__srv__get_thing__");
        assert!(is_mcp_tool_name("mcp__fs__read_file") && !is_mcp_tool_name("read"));
        let long = "x".repeat(100);
        let a = tool_name("srv", &long);
        let b = tool_name("srv", &format!("{long}y"));
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert_ne!(a, b);
        assert!(is_valid_tool_name(&a) && is_valid_tool_name(&b));
    }

    #[test]
    fn colliding_names_all_get_a_hash_suffix() {
        let names = assign_names("s", ["a.b", "a_b", "a/b", "c"]);
        assert_eq!(names[3], "mcp__s__c");
        assert!(
            names[..3]
                .iter()
                .all(|n| n.starts_with("mcp__s__a_b_") && n.len() == "mcp__s__a_b_".len() + 8),
            "{names:?}"
        );
        let set: HashSet<&String> = names.iter().collect();
        assert_eq!(set.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| is_valid_tool_name(n)), "{names:?}");
    }
}
