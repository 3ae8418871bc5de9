//! [`TypedTool`]: a tool whose arguments are a Rust type; the schema is derived with schemars.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The JSON Schema of `T` as a tool parameter schema: subschemas inlined (no
/// `$ref`s, which several providers reject) and no `$schema` key.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    value
}

type RunFn<T> =
    dyn Fn(T, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool built from a function of a deserialized argument type.
///
/// ```
/// use makai_agent::{TypedTool, ToolOutput};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
/// let tool = TypedTool::new("echo", "Returns its text.", |args: Echo, _ctx| async move {
///     Ok(ToolOutput::text(args.text))
/// }).read_only(true);
/// ```
pub struct TypedTool<T> {
    spec: ToolSpec,
    timeout: Option<Duration>,
    run: Arc<RunFn<T>>,
    _args: PhantomData<fn(T)>,
}

impl<T> TypedTool<T>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// A tool named `name` that runs `f` with the deserialized arguments.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(T, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        TypedTool {
            spec: ToolSpec::new(name, description, schema_for::<T>()),
            timeout: None,
            run: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
            _args: PhantomData,
        }
    }

    /// Sets the UI label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.spec.label = label.into();
        self
    }

    /// Marks the tool read-only (it may run alongside other read-only calls).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.spec.read_only = read_only;
        self
    }

    /// Sets a timeout for each call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Wraps the tool for a [`super::ToolSet`].
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

#[async_trait]
impl<T> Tool for TypedTool<T>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    async fn execute(
        &self,
        _call_id: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let typed: T =
            serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        (self.run)(typed, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The path.
        path: String,
        mode: Mode,
        limit: Option<u32>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn schema_is_inlined_and_has_no_meta_keys() {
        let s = schema_for::<Args>();
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert!(!s.to_string().contains("$ref"), "{s}");
        assert_eq!(s["properties"]["path"]["description"], "The path.");
        let required = s["required"].as_array().unwrap();
        assert!(required.contains(&json!("path")) && !required.contains(&json!("limit")));
    }

    #[tokio::test]
    async fn execute_hands_the_typed_arguments() {
        let tool = TypedTool::new("t", "d", |a: Args, ctx: ToolContext| async move {
            Ok(ToolOutput::text(format!("{}:{}", a.path, ctx.call_id())))
        });
        let out = tool
            .execute(
                "c1",
                json!({"path": "x", "mode": "fast"}),
                ToolContext::detached("c1", "."),
            )
            .await
            .unwrap();
        assert_eq!(out.text_content(), "x:c1");
        let err = tool
            .execute("c2", json!({"path": 1}), ToolContext::detached("c2", "."))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
    }
}
