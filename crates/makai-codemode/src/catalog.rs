//! What a script can call and find: the tools with their TypeScript
//! declarations, grouped by namespace, and the BM25 ranking of
//! `searchTools()`.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::declare::{function_declaration, js_name};
use crate::search_text::{tool_words, words};

/// One tool a script can call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallableTool {
    /// Its name, as the model and the session know it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema.
    pub parameters: Value,
    /// The TypeScript type its call resolves to (`string` for plain text).
    pub result_type: String,
    /// Its namespace (an MCP server, say); `None` for the built-in tools.
    pub namespace: Option<String>,
    /// Listed in the tool's description (`false`: found through
    /// `searchTools()` and the like only, as MCP tools are).
    pub listed: bool,
}

/// A namespace: an MCP server, say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Namespace {
    /// Its name.
    pub name: String,
    /// What it offers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How to use it (an MCP server's instructions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Every tool a script can call, and their namespaces.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    tools: Vec<CallableTool>,
    namespaces: Vec<Namespace>,
    by_js_name: HashMap<String, usize>,
}

/// A tool as `ALL_TOOLS` and `searchTools()` give it.
#[derive(Clone, Debug, Serialize)]
pub struct ToolSummary<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its description's first paragraph.
    pub description: &'a str,
}

impl Catalog {
    /// A catalog of these tools and namespaces.
    pub fn new(tools: Vec<CallableTool>, namespaces: Vec<Namespace>) -> Self {
        let mut by_js_name = HashMap::new();
        for (i, t) in tools.iter().enumerate() {
            by_js_name.entry(t.name.clone()).or_insert(i);
            by_js_name.entry(js_name(&t.name)).or_insert(i);
        }
        Catalog {
            tools,
            namespaces,
            by_js_name,
        }
    }

    /// The tools.
    pub fn tools(&self) -> &[CallableTool] {
        &self.tools
    }

    /// The tool a script names, by its name or its identifier form.
    pub fn resolve(&self, name: &str) -> Option<&CallableTool> {
        self.by_js_name.get(name).map(|&i| &self.tools[i])
    }

    /// `ALL_TOOLS`.
    pub fn summaries(&self) -> Vec<ToolSummary<'_>> {
        self.tools
            .iter()
            .map(|t| ToolSummary {
                name: &t.name,
                description: first_paragraph(&t.description),
            })
            .collect()
    }

    /// `describeTool(name)`: the description and the declaration.
    pub fn describe(&self, name: &str) -> Option<Value> {
        let t = self.resolve(name)?;
        Some(serde_json::json!({
            "name": t.name,
            "description": t.description,
            "declaration": function_declaration(t),
        }))
    }

    /// `describeNamespace(name)`: `name` as written, in its identifier form,
    /// or either with `mcp__` before it.
    pub fn describe_namespace(&self, name: &str) -> Option<Value> {
        let key = namespace_key(name);
        let ns = self
            .namespaces
            .iter()
            .find(|n| namespace_key(&n.name) == key)?;
        let tools: Vec<ToolSummary<'_>> = self
            .tools
            .iter()
            .filter(|t| t.namespace.as_deref() == Some(ns.name.as_str()))
            .map(|t| ToolSummary {
                name: &t.name,
                description: first_paragraph(&t.description),
            })
            .collect();
        let mut v = serde_json::to_value(ns).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert(
                "tools".into(),
                serde_json::to_value(tools).unwrap_or(Value::Null),
            );
        }
        Some(v)
    }

    /// `searchTools(query, {limit, namespace})`: BM25 over each tool's name
    /// (its parts count twice), its description, its arguments' property
    /// names and descriptions ([`crate::search_text`]) and its namespace's
    /// description (pi ranks an MCP server's tools by the server's too).
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        namespace: Option<&str>,
    ) -> Vec<ToolSummary<'_>> {
        let wanted = namespace.map(namespace_key);
        let docs: Vec<(usize, Vec<String>)> = self
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                wanted
                    .as_ref()
                    .is_none_or(|w| t.namespace.as_deref().map(namespace_key).as_ref() == Some(w))
            })
            .map(|(i, t)| {
                let mut doc = tool_words(t);
                if let Some(d) = self.namespace_description(t) {
                    doc.extend(words(d));
                }
                (i, doc)
            })
            .collect();
        let terms = words(query);
        if docs.is_empty() || terms.is_empty() {
            return Vec::new();
        }
        let n = docs.len() as f64;
        let avg = docs.iter().map(|(_, w)| w.len() as f64).sum::<f64>() / n;
        let (k1, b) = (1.2, 0.75);
        let mut scored: Vec<(f64, usize)> = docs
            .iter()
            .map(|(i, doc)| {
                let len = doc.len() as f64;
                let score: f64 = terms
                    .iter()
                    .map(|term| {
                        let df = docs.iter().filter(|(_, d)| d.contains(term)).count() as f64;
                        let tf = doc.iter().filter(|w| *w == term).count() as f64;
                        if tf == 0.0 {
                            return 0.0;
                        }
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg.max(1.0)))
                    })
                    .sum();
                (score, *i)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| ToolSummary {
                name: &self.tools[i].name,
                description: first_paragraph(&self.tools[i].description),
            })
            .collect()
    }

    /// The description of `tool`'s namespace, if it has one.
    fn namespace_description(&self, tool: &CallableTool) -> Option<&str> {
        let key = namespace_key(tool.namespace.as_deref()?);
        self.namespaces
            .iter()
            .find(|n| namespace_key(&n.name) == key)?
            .description
            .as_deref()
    }

    /// The namespaces.
    pub fn namespaces(&self) -> &[Namespace] {
        &self.namespaces
    }
}

/// A namespace's name compared: without `mcp__`, in identifier form
/// (`mcp__dev-radius`, `dev_radius` and `dev-radius` are one).
fn namespace_key(name: &str) -> String {
    js_name(name.strip_prefix("mcp__").unwrap_or(name))
}

/// A description's first paragraph.
pub fn first_paragraph(text: &str) -> &str {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(i, _)| text[i..].starts_with("\n\n") || text[i..].starts_with("\n \n"))
        .map_or(text.len(), |(i, _)| i);
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, namespace: Option<&str>) -> CallableTool {
        CallableTool {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object"}),
            result_type: "string".into(),
            namespace: namespace.map(Into::into),
            listed: true,
        }
    }

    #[test]
    fn search_ranks_by_name_and_description() {
        let c = Catalog::new(
            vec![
                tool("read", "Read the contents of a file.", None),
                tool("bash", "Run a shell command.", None),
                tool(
                    "mcp__gh__search_issues",
                    "Search issues of a repository.",
                    Some("gh"),
                ),
            ],
            vec![],
        );
        let hits = c.search("search issues", 8, None);
        assert_eq!(hits[0].name, "mcp__gh__search_issues");
        assert_eq!(hits.len(), 1);
        assert_eq!(c.search("file", 8, None)[0].name, "read");
        assert!(c.search("file", 8, Some("gh")).is_empty());
        assert_eq!(c.search("issues", 8, Some("mcp__gh")).len(), 1);
        assert_eq!(
            c.resolve("mcp__gh__search_issues").unwrap().name,
            "mcp__gh__search_issues"
        );
    }

    #[test]
    fn a_servers_description_ranks_its_tools() {
        let c = Catalog::new(
            vec![
                tool("mcp__db__query", "Run a query.", Some("db")),
                tool("mcp__web__query", "Run a query.", Some("web")),
            ],
            vec![Namespace {
                name: "web".into(),
                description: Some("Searches the public web".into()),
                instructions: None,
            }],
        );
        let hits = c.search("web search query", 8, None);
        assert_eq!(hits[0].name, "mcp__web__query");
        assert_eq!(c.search("public", 8, None).len(), 1);
    }

    #[test]
    fn first_paragraph_stops_at_a_blank_line() {
        assert_eq!(first_paragraph("One.\nTwo.\n\nThree."), "One.\nTwo.");
    }
}
