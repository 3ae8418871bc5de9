//! [`ToolSet`]: the tools of a run, their definitions and argument validation.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use makai_ai::ToolDefinition;

use super::Tool;

struct Entry {
    tool: Arc<dyn Tool>,
    validator: OnceLock<Option<jsonschema::Validator>>,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    definitions: Vec<ToolDefinition>,
}

/// The tools of a run. Cheap to clone; schemas are compiled once, on first use.
///
/// A later tool with the same name as an earlier one replaces it.
#[derive(Clone, Default)]
pub struct ToolSet {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolSet {
    /// A set of these tools.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for tool in tools {
            let entry = Entry {
                tool,
                validator: OnceLock::new(),
            };
            if let Some(pos) = entries
                .iter()
                .position(|e| e.tool.name() == entry.tool.name())
            {
                entries[pos] = entry;
            } else {
                entries.push(entry);
            }
        }
        let definitions = entries
            .iter()
            .map(|e| ToolDefinition {
                name: e.tool.name().to_string(),
                description: e.tool.description().to_string(),
                parameters: e.tool.parameters().clone(),
            })
            .collect();
        ToolSet {
            inner: Arc::new(Inner {
                entries,
                definitions,
            }),
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.inner
            .entries
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| &e.tool)
    }

    /// The tool names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.inner.entries.iter().map(|e| e.tool.name()).collect()
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.inner.entries.iter().map(|e| &e.tool)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    /// The definitions sent to the model.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.inner.definitions
    }

    /// Checks `args` against the schema of tool `name`. `Err` lists every problem,
    /// each naming where in the arguments it is. A schema that cannot be compiled
    /// is not enforced (a warning is logged once).
    pub fn validate(&self, name: &str, args: &Value) -> Result<(), Vec<String>> {
        let Some(entry) = self.inner.entries.iter().find(|e| e.tool.name() == name) else {
            return Err(vec![format!(
                "no tool named '{}'",
                makai_ai::quote::bounded(name)
            )]);
        };
        let validator = entry.validator.get_or_init(|| {
            match jsonschema::validator_for(entry.tool.parameters()) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!(tool = name, error = %e, "the tool's parameter schema does not compile; its arguments are not validated");
                    None
                }
            }
        });
        let Some(validator) = validator else {
            return Ok(());
        };
        let problems: Vec<String> = validator
            .iter_errors(args)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    format!("(arguments): {e}")
                } else {
                    format!("{path}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

impl FromIterator<Arc<dyn Tool>> for ToolSet {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Tool>>>(iter: I) -> Self {
        ToolSet::new(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolContext, ToolError, ToolOutput};
    use async_trait::async_trait;
    use serde_json::json;

    struct Schema(crate::tool::ToolSpec);

    #[async_trait]
    impl Tool for Schema {
        fn spec(&self) -> &crate::tool::ToolSpec {
            &self.0
        }
        async fn execute(
            &self,
            _: &str,
            _: Value,
            _: ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::default())
        }
    }

    fn set() -> ToolSet {
        ToolSet::new([Arc::new(Schema(crate::tool::ToolSpec::new(
            "read",
            "d",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
                   "required": ["path"], "additionalProperties": false}),
        ))) as Arc<dyn Tool>])
    }

    #[test]
    fn validation_names_every_problem() {
        let errs = set()
            .validate("read", &json!({"n": "x", "extra": 1}))
            .unwrap_err();
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs.iter().any(|e| e.contains("path")), "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("/n")), "{errs:?}");
        assert!(errs.iter().any(|e| e.contains("extra")), "{errs:?}");
        assert!(set().validate("read", &json!({"path": "a"})).is_ok());
    }

    #[test]
    fn later_tool_replaces_same_name() {
        let s = ToolSet::new([
            Arc::new(Schema(crate::tool::ToolSpec::new("a", "d", json!({})))) as Arc<dyn Tool>,
            Arc::new(Schema(crate::tool::ToolSpec::new(
                "a",
                "d",
                json!({"type": "object"}),
            ))),
        ]);
        assert_eq!(s.len(), 1);
        assert_eq!(s.definitions()[0].parameters, json!({"type": "object"}));
    }

    #[test]
    fn uncompilable_schema_is_not_enforced() {
        let s = ToolSet::new([Arc::new(Schema(crate::tool::ToolSpec::new(
            "x",
            "d",
            json!({"type": 12}),
        ))) as Arc<dyn Tool>]);
        assert!(s.validate("x", &json!({})).is_ok());
    }
}
