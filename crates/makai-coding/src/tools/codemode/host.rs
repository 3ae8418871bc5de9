//! The script's host: its tool calls made as nested calls of the `codemode`
//! call, each recorded for the UI (pi's `details.calls`), and `models.*`
//! answered from the model catalog.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};

use makai_agent::{ToolContext, ToolOutput, ToolSet};

use super::project::{Projection, project};

/// The models scripts list through `models` (makai's catalog holds chat
/// models only; classifier and image models are none).
#[async_trait]
pub trait ModelCatalog: Send + Sync {
    /// Every known model.
    fn models(&self) -> Vec<makai_ai::Model>;
    /// The models whose provider has a credential or needs none.
    async fn available(&self) -> Vec<makai_ai::Model>;
}

const ARGS_PREVIEW_CHARS: usize = 200;
const ERROR_PREVIEW_CHARS: usize = 500;

/// One nested call as the UI shows it (pi's `CodemodeNestedCall`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedRecord {
    /// `<codemode call id>/<n>` once known.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments as compact JSON, cut for display.
    pub args: String,
    /// `running`, `ok`, `error` or `cancelled`.
    pub status: &'static str,
    /// How long it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Its error text, cut for display.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max - 3).collect();
    s.push_str("...");
    s
}

/// What a failed script's result says of its calls.
pub fn call_summary(calls: &[NestedRecord]) -> String {
    if calls.is_empty() {
        return "No tool calls were made.".into();
    }
    let list: Vec<String> = calls
        .iter()
        .map(|c| format!("{} ({})", c.name, c.status))
        .collect();
    format!(
        "Tool calls made before the failure (they are not undone): {}",
        list.join(", ")
    )
}

pub(super) struct ScriptHost {
    ctx: ToolContext,
    /// Where a tool is looked up, in order: the declared tools, the hidden
    /// ones, the indirect ones.
    sets: [ToolSet; 3],
    models: Option<Arc<dyn ModelCatalog>>,
    records: Arc<Mutex<Vec<NestedRecord>>>,
}

fn lock(records: &Mutex<Vec<NestedRecord>>) -> MutexGuard<'_, Vec<NestedRecord>> {
    records.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends the calls so far as the `codemode` call's update: pi's
/// `details.calls`, and one line per call as its text for front ends that
/// show an update's text (`read {"path":"a.txt"} (ok, 3 ms)`).
fn publish(ctx: &ToolContext, records: &Mutex<Vec<NestedRecord>>) {
    let calls = lock(records).clone();
    let lines: Vec<String> = calls
        .iter()
        .map(|c| match c.duration_ms {
            Some(ms) => format!("{} {} ({}, {ms} ms)", c.name, c.args, c.status),
            None => format!("{} {} ({})", c.name, c.args, c.status),
        })
        .collect();
    ctx.update(ToolOutput {
        content: vec![makai_ai::UserContent::text(lines.join("\n"))],
        details: json!({ "calls": calls, "logs": [] }),
        usage: None,
        nested_calls: None,
    });
}

impl ScriptHost {
    pub(super) fn new(
        ctx: ToolContext,
        sets: [ToolSet; 3],
        models: Option<Arc<dyn ModelCatalog>>,
    ) -> Self {
        ScriptHost {
            ctx,
            sets,
            models,
            records: Arc::default(),
        }
    }

    /// The calls made, those still running marked cancelled (the script's
    /// end, a deadline or an abort cut them off).
    pub(super) fn finish(&self) -> Vec<NestedRecord> {
        let mut records = lock(&self.records);
        for r in records.iter_mut().filter(|r| r.status == "running") {
            r.status = "cancelled";
        }
        records.clone()
    }
}

impl makai_codemode::Host for ScriptHost {
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let set = self
            .sets
            .iter()
            .find(|s| s.get(&name).is_some())
            .unwrap_or(&self.sets[0])
            .clone();
        let ctx = self.ctx.clone();
        let records = self.records.clone();
        Box::pin(async move {
            let index = {
                let mut r = lock(&records);
                r.push(NestedRecord {
                    id: format!("{}/?", ctx.call_id()),
                    name: name.clone(),
                    args: cut(&args.to_string(), ARGS_PREVIEW_CHARS),
                    status: "running",
                    duration_ms: None,
                    error: None,
                });
                r.len() - 1
            };
            publish(&ctx, &records);
            let started = Instant::now();
            let call = ctx.call_tool(&set, &name, args).await;
            let elapsed = started.elapsed();
            let result = project(
                Projection::of(&name),
                &call.output,
                call.is_error,
                elapsed.as_secs_f64(),
            );
            {
                let mut r = lock(&records);
                if let Some(rec) = r.get_mut(index) {
                    rec.id = call.id;
                    rec.duration_ms = Some(elapsed.as_millis() as u64);
                    match &result {
                        Ok(_) => rec.status = "ok",
                        Err(e) => {
                            rec.status = if ctx.is_cancelled() {
                                "cancelled"
                            } else {
                                "error"
                            };
                            rec.error = Some(cut(e, ERROR_PREVIEW_CHARS));
                        }
                    }
                }
            }
            publish(&ctx, &records);
            result
        })
    }

    fn call_models(
        &self,
        method: String,
        args: Vec<Value>,
    ) -> BoxFuture<'static, Result<Value, String>> {
        let models = self.models.clone();
        Box::pin(async move { call_models(models, &method, &args).await })
    }
}

fn model_type(v: Option<&Value>) -> Result<&str, String> {
    match v.and_then(Value::as_str) {
        Some(t @ ("chat" | "image" | "classifier")) => Ok(t),
        other => Err(format!(
            "Unknown model type {}. Use \"chat\", \"image\", or \"classifier\".",
            other.map_or("undefined".into(), |t| format!("{t:?}"))
        )),
    }
}

/// A catalog entry for scripts, without `headers` (they can carry
/// credentials).
fn model_info(m: &makai_ai::Model) -> Value {
    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut v {
        o.remove("headers");
        o.insert("type".into(), Value::from("chat"));
    }
    v
}

async fn call_models(
    models: Option<Arc<dyn ModelCatalog>>,
    method: &str,
    args: &[Value],
) -> Result<Value, String> {
    let provider = |i: usize| args.get(i).and_then(Value::as_str);
    let Some(models) = models else {
        return Err("models is not available in this session".into());
    };
    let list = |all: Vec<makai_ai::Model>, kind: &str, provider: Option<&str>| -> Value {
        if kind != "chat" {
            return Value::Array(Vec::new());
        }
        Value::Array(
            all.iter()
                .filter(|m| provider.is_none_or(|p| m.provider == p))
                .map(model_info)
                .collect(),
        )
    };
    match method {
        "getModelsOfType" => {
            let kind = model_type(args.first())?;
            Ok(list(models.models(), kind, provider(1)))
        }
        "getAvailableOfType" => {
            let kind = model_type(args.first())?;
            Ok(list(models.available().await, kind, provider(1)))
        }
        "getModelOfType" => {
            let kind = model_type(args.first())?;
            let (Some(p), Some(id)) = (provider(1), provider(2)) else {
                return Err("models.getModelOfType() expects a type, a provider, and an id".into());
            };
            if kind != "chat" {
                return Ok(Value::Null);
            }
            Ok(models
                .models()
                .iter()
                .find(|m| m.provider == p && m.id == id)
                .map_or(Value::Null, model_info))
        }
        "classify" | "generateImages" => {
            let kind = if method == "classify" {
                "classifier"
            } else {
                "image"
            };
            let m = args.first();
            let name = match (
                m.and_then(|m| m.get("provider")).and_then(Value::as_str),
                m.and_then(|m| m.get("id")).and_then(Value::as_str),
            ) {
                (Some(p), Some(id)) => format!("{p}/{id}"),
                _ => {
                    return Err(format!(
                        "models.{method}() expects a model from models.getModelOfType() or models.getAvailableOfType()"
                    ));
                }
            };
            Err(format!(
                "Unknown {kind} model \"{name}\": makai's model catalog has no {kind} models"
            ))
        }
        other => Err(format!("models.{other} is not a function")),
    }
}
