//! pi's tool exposure: how the model reaches an MCP server's tools.
//!
//! - `codemode` (the default; `codemode-deferred` is the same): callable
//!   from `codemode` scripts only, neither declared to the model nor listed
//!   in the `codemode` description;
//! - `deferred`: not declared; makai reaches these from `codemode` scripts
//!   as well (pi's `tool_search`, which would declare them on demand, is not
//!   in makai);
//! - `direct`: declared to the model like a built-in tool, and callable from
//!   scripts;
//! - `hidden`: unreachable.
//!
//! A server's `exposure` applies to all its tools; `toolExposure` overrides
//! it per tool: exact tool names first, then patterns (`*` matches any
//! characters) in their order, the first match winning.

use serde_json::{Map, Value};

/// How the model reaches a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exposure {
    /// Callable from scripts only.
    #[default]
    Codemode,
    /// Declared on demand in pi; callable from scripts in makai.
    Deferred,
    /// Declared to the model.
    Direct,
    /// Unreachable.
    Hidden,
}

impl Exposure {
    /// The name as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Direct => "direct",
            Exposure::Hidden => "hidden",
        }
    }

    /// True when scripts reach the tool but the model is not offered it.
    pub fn is_indirect(self) -> bool {
        matches!(self, Exposure::Codemode | Exposure::Deferred)
    }
}

impl std::str::FromStr for Exposure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "codemode" | "codemode-deferred" => Ok(Exposure::Codemode),
            "deferred" => Ok(Exposure::Deferred),
            "direct" => Ok(Exposure::Direct),
            "hidden" => Ok(Exposure::Hidden),
            other => Err(format!(
                "unknown exposure {other:?}; use \"codemode\", \"deferred\", \"direct\" or \"hidden\""
            )),
        }
    }
}

/// A server's `toolExposure`: overrides per tool name or pattern, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolExposure(Vec<(String, Exposure)>);

impl ToolExposure {
    /// True when no tool is overridden.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The exposures the overrides set.
    pub fn exposures(&self) -> impl Iterator<Item = Exposure> + '_ {
        self.0.iter().map(|(_, e)| *e)
    }

    /// The override for `tool`, if any: an exact name wins over patterns,
    /// the first matching pattern over later ones.
    pub fn of(&self, tool: &str) -> Option<Exposure> {
        self.0
            .iter()
            .find(|(k, _)| !k.contains('*') && k == tool)
            .or_else(|| {
                self.0
                    .iter()
                    .find(|(k, _)| k.contains('*') && matches(k, tool))
            })
            .map(|(_, e)| *e)
    }

    pub(crate) fn from_json(v: &Value) -> Result<Self, String> {
        let Value::Object(m) = v else {
            return Err("\"toolExposure\" must be an object of tool names or patterns".into());
        };
        m.iter()
            .map(|(k, v)| match v {
                Value::String(s) => s
                    .parse()
                    .map(|e| (k.clone(), e))
                    .map_err(|e| format!("\"toolExposure.{k}\": {e}")),
                _ => Err(format!("\"toolExposure.{k}\" must be a string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ToolExposure)
    }

    pub(crate) fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(k, e)| (k.clone(), Value::from(e.as_str())))
                .collect::<Map<_, _>>(),
        )
    }
}

/// `*` matches any characters (none included).
fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_names_win_then_the_first_pattern() {
        let t = ToolExposure::from_json(&json!({
            "get_*": "codemode",
            "search_code": "direct",
            "*_issue*": "hidden",
            "delete_*": "hidden"
        }))
        .unwrap();
        assert_eq!(t.of("search_code"), Some(Exposure::Direct));
        assert_eq!(t.of("get_issue"), Some(Exposure::Codemode));
        assert_eq!(t.of("close_issue_now"), Some(Exposure::Hidden));
        assert_eq!(t.of("delete_repo"), Some(Exposure::Hidden));
        assert_eq!(t.of("list"), None);
        assert!(ToolExposure::from_json(&json!({"x": "public"})).is_err());
        assert_eq!("codemode-deferred".parse(), Ok(Exposure::Codemode));
    }
}
