//! The QuickJS side: one script on its own thread. The thread runs the
//! script's jobs until its promise settles; while host calls are pending it
//! sleeps on the channel their results come back on. A script waiting on
//! nothing the host can settle fails at once (there are no timers).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc as std_mpsc;

use rquickjs::{Context, Ctx, Exception, Function, Object, Runtime};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::catalog::Catalog;
use crate::image::ScriptImage;
use crate::output::{ConsoleLine, Failure, Item, StoreWrites};

/// A script's VM memory.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;
/// Characters of text and base64 image data a script may output.
pub const MAX_OUTPUT_CHARS: usize = 16_777_216;
/// `text()`, `image()` and `console` calls a script may make.
pub const MAX_OUTPUT_CALLS: usize = 100_000;
/// Characters of one stored value's JSON.
pub const MAX_STORE_VALUE_CHARS: usize = 262_144;
/// Characters of all stored values' JSON.
pub const MAX_STORE_CHARS: usize = 1_048_576;

const PRELUDE: &str = include_str!("prelude.js");

/// Why the host stopped a script.
pub(crate) const RUNNING: u8 = 0;
pub(crate) const TIMED_OUT: u8 = 1;
pub(crate) const ABORTED: u8 = 2;

/// What the script asks of the host.
#[derive(Debug)]
pub(crate) struct HostRequest {
    pub id: u64,
    pub kind: RequestKind,
}

/// A tool call or a `models` call.
#[derive(Debug)]
pub(crate) enum RequestKind {
    Tool { name: String, args: Value },
    Models { method: String, args: Vec<Value> },
}

/// What the host sends the script's thread.
#[derive(Debug)]
pub(crate) enum ToEngine {
    /// A host call settled: its value as JSON, or its error text.
    Settled {
        id: u64,
        result: Result<Value, String>,
    },
    /// Stop now (the flag says why).
    Stop,
}

/// What the script's thread produces.
#[derive(Debug, Default)]
pub(crate) struct EngineResult {
    pub items: Vec<Item>,
    pub console: Vec<ConsoleLine>,
    pub failure: Option<Failure>,
    pub store_writes: StoreWrites,
}

struct State {
    catalog: Arc<Catalog>,
    requests: mpsc::UnboundedSender<HostRequest>,
    next_id: u64,
    pending: usize,
    items: Vec<Item>,
    console: Vec<ConsoleLine>,
    output_chars: usize,
    output_calls: usize,
    /// A limit passed: the script fails whatever it catches.
    fatal: Option<String>,
    store: Map<String, Value>,
    writes: StoreWrites,
    done: Option<Result<(), String>>,
}

impl State {
    fn count_output(&mut self, chars: usize) -> Result<(), String> {
        self.output_calls += 1;
        self.output_chars = self.output_chars.saturating_add(chars);
        let problem = if self.output_calls > MAX_OUTPUT_CALLS {
            Some(format!(
                "the script made more than {MAX_OUTPUT_CALLS} text(), image() and console calls; write large data to a file with a tool instead"
            ))
        } else if self.output_chars > MAX_OUTPUT_CHARS {
            Some(format!(
                "the script's output passed {MAX_OUTPUT_CHARS} characters; write large data to a file with a tool instead"
            ))
        } else {
            None
        };
        match problem {
            Some(p) => {
                self.fatal.get_or_insert(p.clone());
                Err(p)
            }
            None => Ok(()),
        }
    }

    fn store_chars(&self) -> usize {
        self.store.values().map(|v| v.to_string().len()).sum()
    }
}

type Shared = Rc<RefCell<State>>;

fn throw(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_message(ctx, message)
}

/// Everything the thread needs.
pub(crate) struct EngineInput {
    pub code: String,
    pub catalog: Arc<Catalog>,
    pub store: Map<String, Value>,
    pub requests: mpsc::UnboundedSender<HostRequest>,
    pub replies: std_mpsc::Receiver<ToEngine>,
    pub stop: Arc<AtomicU8>,
}

fn stop_failure(stop: &AtomicU8) -> Option<Failure> {
    match stop.load(Ordering::Relaxed) {
        TIMED_OUT => Some(Failure::Timeout),
        ABORTED => Some(Failure::Aborted),
        _ => None,
    }
}

/// Runs one script to its end on this thread.
pub(crate) fn run_script(input: EngineInput) -> EngineResult {
    let EngineInput {
        code,
        catalog,
        store,
        requests,
        replies,
        stop,
    } = input;
    let state: Shared = Rc::new(RefCell::new(State {
        catalog,
        requests,
        next_id: 0,
        pending: 0,
        items: Vec::new(),
        console: Vec::new(),
        output_chars: 0,
        output_calls: 0,
        fatal: None,
        store,
        writes: StoreWrites::default(),
        done: None,
    }));
    let failure = drive(&code, &state, &replies, &stop).err();
    let mut st = state.borrow_mut();
    EngineResult {
        items: std::mem::take(&mut st.items),
        console: std::mem::take(&mut st.console),
        failure,
        store_writes: std::mem::take(&mut st.writes),
    }
}

fn drive(
    code: &str,
    state: &Shared,
    replies: &std_mpsc::Receiver<ToEngine>,
    stop: &Arc<AtomicU8>,
) -> Result<(), Failure> {
    let rt = Runtime::new().map_err(|e| Failure::Sandbox(e.to_string()))?;
    rt.set_memory_limit(MEMORY_LIMIT);
    rt.set_max_stack_size(4 * 1024 * 1024);
    let flag = stop.clone();
    rt.set_interrupt_handler(Some(Box::new(move || {
        flag.load(Ordering::Relaxed) != RUNNING
    })));
    let ctx = Context::full(&rt).map_err(|e| Failure::Sandbox(e.to_string()))?;
    ctx.with(|ctx| -> Result<(), Failure> {
        install_host(&ctx, state).map_err(|e| Failure::Sandbox(e.to_string()))?;
        if let Err(e) = ctx.eval::<(), _>(PRELUDE) {
            return Err(Failure::Sandbox(exception_text(&ctx, e)));
        }
        let wrapped = format!("__run(async function () {{\n{code}\n}});");
        if let Err(e) = ctx.eval::<(), _>(wrapped) {
            return Err(
                stop_failure(stop).unwrap_or_else(|| Failure::Script(exception_text(&ctx, e)))
            );
        }
        Ok(())
    })?;
    loop {
        // Run every job the script has queued.
        loop {
            match rt.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => {
                    if let Some(f) = stop_failure(stop) {
                        return Err(f);
                    }
                }
            }
        }
        if let Some(f) = stop_failure(stop) {
            return Err(f);
        }
        {
            let st = state.borrow();
            if let Some(problem) = &st.fatal {
                return Err(Failure::Limit(problem.clone()));
            }
            match &st.done {
                Some(Ok(())) => return Ok(()),
                Some(Err(text)) => return Err(Failure::Script(text.clone())),
                None => {}
            }
            if st.pending == 0 {
                return Err(Failure::Script(
                    "the script waits on a promise that can never settle: no tool call is pending, and there are no timers".into(),
                ));
            }
        }
        match replies.recv() {
            Ok(ToEngine::Settled { id, result }) => {
                state.borrow_mut().pending -= 1;
                ctx.with(|ctx| -> Result<(), Failure> {
                    let settle: Function = ctx
                        .globals()
                        .get("__settle")
                        .map_err(|e| Failure::Sandbox(e.to_string()))?;
                    let (ok, text) = match result {
                        Ok(Value::Null) => (true, None),
                        Ok(v) => (true, Some(v.to_string())),
                        Err(e) => (false, Some(e)),
                    };
                    if let Err(e) = settle.call::<_, ()>((id as f64, ok, text)) {
                        if let Some(f) = stop_failure(stop) {
                            return Err(f);
                        }
                        return Err(Failure::Sandbox(exception_text(&ctx, e)));
                    }
                    Ok(())
                })?;
            }
            Ok(ToEngine::Stop) | Err(_) => {
                return Err(stop_failure(stop).unwrap_or(Failure::Aborted));
            }
        }
    }
}

/// The text of the exception `e` stands for.
fn exception_text(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    if !matches!(e, rquickjs::Error::Exception) {
        return e.to_string();
    }
    let thrown = ctx.catch();
    if let Some(exc) = thrown.as_exception() {
        let message = exc.message().unwrap_or_default();
        let name: String = exc
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".into());
        let head = format!("{name}: {message}");
        return match exc.stack() {
            Some(stack) if !stack.trim().is_empty() => format!("{head}\n{}", stack.trim_end()),
            _ => head,
        };
    }
    match ctx.json_stringify(thrown) {
        Ok(Some(s)) => format!("Uncaught {}", s.to_string().unwrap_or_default()),
        _ => "Uncaught exception".into(),
    }
}

fn install_host<'js>(ctx: &Ctx<'js>, state: &Shared) -> rquickjs::Result<()> {
    let host = Object::new(ctx.clone())?;

    let st = state.clone();
    host.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  kind: String,
                  name: String,
                  json: String|
                  -> rquickjs::Result<f64> {
                let mut s = st.borrow_mut();
                let args: Value = serde_json::from_str(&json)
                    .map_err(|e| throw(&ctx, &format!("arguments are not JSON: {e}")))?;
                let kind = if kind == "tool" {
                    RequestKind::Tool { name, args }
                } else {
                    let args = match args {
                        Value::Array(a) => a,
                        other => vec![other],
                    };
                    RequestKind::Models { method: name, args }
                };
                s.next_id += 1;
                let id = s.next_id;
                if s.requests.send(HostRequest { id, kind }).is_err() {
                    return Err(throw(&ctx, "the host is gone"));
                }
                s.pending += 1;
                Ok(id as f64)
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "resolve",
        Function::new(ctx.clone(), move |name: String| -> Option<String> {
            st.borrow().catalog.resolve(&name).map(|t| t.name.clone())
        })?,
    )?;

    let st = state.clone();
    host.set(
        "names",
        Function::new(ctx.clone(), move || -> String {
            let names: Vec<String> = st
                .borrow()
                .catalog
                .tools()
                .iter()
                .map(|t| crate::declare::js_name(&t.name))
                .collect();
            Value::from(names).to_string()
        })?,
    )?;

    let st = state.clone();
    host.set(
        "text",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, text: String| -> rquickjs::Result<()> {
                let mut s = st.borrow_mut();
                s.count_output(text.len()).map_err(|p| throw(&ctx, &p))?;
                s.items.push(Item::Text(text));
                Ok(())
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "image",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, json: String| -> rquickjs::Result<()> {
                let value: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
                let image = ScriptImage::from_value(&value).map_err(|e| throw(&ctx, &e))?;
                let mut s = st.borrow_mut();
                s.count_output(image.data.len())
                    .map_err(|p| throw(&ctx, &p))?;
                s.items.push(Item::Image(image));
                Ok(())
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "console",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, level: String, line: String| -> rquickjs::Result<()> {
                let mut s = st.borrow_mut();
                s.count_output(line.len()).map_err(|p| throw(&ctx, &p))?;
                s.console.push(ConsoleLine { level, line });
                Ok(())
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "store",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, key: String, json: Option<String>| -> rquickjs::Result<()> {
                let mut s = st.borrow_mut();
                match json {
                    None => {
                        s.store.remove(&key);
                        s.writes.set.remove(&key);
                        if !s.writes.delete.contains(&key) {
                            s.writes.delete.push(key);
                        }
                    }
                    Some(json) => {
                        if json.len() > MAX_STORE_VALUE_CHARS {
                            return Err(throw(
                                &ctx,
                                &format!(
                                    "store(): the value of {key:?} has {} characters of JSON, more than {MAX_STORE_VALUE_CHARS}",
                                    json.len()
                                ),
                            ));
                        }
                        let value: Value = serde_json::from_str(&json)
                            .map_err(|e| throw(&ctx, &format!("store(): {e}")))?;
                        let before = s.store.insert(key.clone(), value.clone());
                        if s.store_chars() > MAX_STORE_CHARS {
                            match before {
                                Some(b) => s.store.insert(key.clone(), b),
                                None => s.store.remove(&key),
                            };
                            return Err(throw(
                                &ctx,
                                &format!(
                                    "store(): all stored values together would pass {MAX_STORE_CHARS} characters of JSON; delete some with store(key, undefined)"
                                ),
                            ));
                        }
                        s.writes.delete.retain(|k| k != &key);
                        s.writes.set.insert(key, value);
                    }
                }
                Ok(())
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "load",
        Function::new(ctx.clone(), move |key: String| -> Option<String> {
            st.borrow().store.get(&key).map(Value::to_string)
        })?,
    )?;

    let st = state.clone();
    host.set(
        "allTools",
        Function::new(ctx.clone(), move || -> String {
            serde_json::to_string(&st.borrow().catalog.summaries()).unwrap_or_else(|_| "[]".into())
        })?,
    )?;

    let st = state.clone();
    host.set(
        "search",
        Function::new(
            ctx.clone(),
            move |query: String, limit: f64, namespace: Option<String>| -> String {
                let limit = if limit.is_finite() && limit >= 1.0 {
                    limit.min(1000.0) as usize
                } else {
                    8
                };
                let s = st.borrow();
                serde_json::to_string(&s.catalog.search(&query, limit, namespace.as_deref()))
                    .unwrap_or_else(|_| "[]".into())
            },
        )?,
    )?;

    let st = state.clone();
    host.set(
        "describe",
        Function::new(ctx.clone(), move |name: String| -> Option<String> {
            st.borrow().catalog.describe(&name).map(|v| v.to_string())
        })?,
    )?;

    let st = state.clone();
    host.set(
        "describeNamespace",
        Function::new(ctx.clone(), move |name: String| -> Option<String> {
            st.borrow()
                .catalog
                .describe_namespace(&name)
                .map(|v| v.to_string())
        })?,
    )?;

    let st = state.clone();
    host.set(
        "done",
        Function::new(ctx.clone(), move |ok: bool, error: Option<String>| {
            let mut s = st.borrow_mut();
            if s.done.is_none() {
                s.done = Some(if ok {
                    Ok(())
                } else {
                    Err(error.unwrap_or_else(|| "the script failed".into()))
                });
            }
        })?,
    )?;

    ctx.globals().set("__host", host)?;
    Ok(())
}
