//! A llama.cpp server in router mode, as the script sets it up
//! ([`crate::MockServer::act_as_llama_router`]): its model list, and what
//! loading, unloading and downloading do to it. Each `GET /models` moves
//! work in progress one step on: a loading model is loaded at the next
//! list (or failed, for an entry with `"failsToLoad": true`; one with
//! `"neverLoads": true` stays loading until it is unloaded), a download
//! gets half of its bytes per list and ends as an unloaded model.

use serde_json::{Value, json};

/// The router's state.
#[derive(Clone, Debug)]
pub(crate) struct LlamaRouter {
    models: Vec<Value>,
    autoload: Option<bool>,
}

/// What the router answers: a status and a JSON body.
pub(crate) type Answer = (u16, Value);

/// Bytes a scripted download has.
const DOWNLOAD_BYTES: u64 = 4 * 1024 * 1024;

impl LlamaRouter {
    /// A router listing `models` (a JSON array of its entries) whose
    /// `/props` says `autoload` (`None`: no `/props`).
    pub(crate) fn new(models: Value, autoload: Option<bool>) -> Self {
        LlamaRouter {
            models: models.as_array().cloned().unwrap_or_default(),
            autoload,
        }
    }

    /// The answer to `method path` with `body`, or `None` for a request
    /// that is not the router's.
    pub(crate) fn answer(&mut self, method: &str, path: &str, body: &Value) -> Option<Answer> {
        let model = body.get("model").and_then(Value::as_str).unwrap_or("");
        Some(match (method, path) {
            ("GET", "/models") => {
                self.step();
                (200, json!({"object": "list", "data": self.models}))
            }
            ("GET", "/props") => match self.autoload {
                Some(on) => (200, json!({"models_autoload": on})),
                None => return None,
            },
            ("POST", "/models/load") => match self.entry(model) {
                Some(e) => {
                    e["status"] = json!({"value": "loading"});
                    (200, json!({"success": true}))
                }
                None => not_found(model),
            },
            ("POST", "/models/unload") => match self.entry(model) {
                Some(e) => {
                    e["status"] = json!({"value": "unloaded"});
                    (200, json!({"success": true}))
                }
                None => not_found(model),
            },
            ("POST", "/models") if !model.is_empty() => {
                self.models.retain(|m| m["id"] != model);
                self.models.push(json!({"id": model, "status": {
                    "value": "downloading",
                    "progress": {"model.gguf": {"done": 0, "total": DOWNLOAD_BYTES}},
                }}));
                (200, json!({"success": true}))
            }
            _ => return None,
        })
    }

    fn entry(&mut self, id: &str) -> Option<&mut Value> {
        self.models.iter_mut().find(|m| m["id"] == id)
    }

    /// Moves loads and downloads on one step.
    fn step(&mut self) {
        for m in &mut self.models {
            let fails = m["failsToLoad"] == true;
            let never = m["neverLoads"] == true;
            let status = &mut m["status"];
            match status["value"].as_str() {
                Some("loading") if never => {}
                Some("loading") if fails => {
                    *status = json!({"value": "unloaded", "failed": true, "exit_code": 1});
                }
                Some("loading") => *status = json!({"value": "loaded"}),
                Some("downloading") => {
                    let file = &mut status["progress"]["model.gguf"];
                    let done = file["done"].as_u64().unwrap_or(0) + DOWNLOAD_BYTES / 2;
                    if done >= DOWNLOAD_BYTES {
                        *status = json!({"value": "unloaded"});
                    } else {
                        file["done"] = json!(done);
                    }
                }
                _ => {}
            }
        }
    }
}

fn not_found(model: &str) -> Answer {
    (
        404,
        json!({"error": {"code": 404, "message": format!("model {model} not found"), "type": "not_found_error"}}),
    )
}
