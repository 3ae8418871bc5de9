//! What a codemode script costs: a script that returns at once (the VM's
//! start and the globals), and one that makes 1,000 tool calls through a
//! host that answers at once (the round trip of one call between the
//! script's thread and the async side).
//!
//! ```sh
//! cargo run --release -p makai-codemode --example script_cost
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use makai_codemode::{CallableTool, Catalog, Host, RunEnv, Script, run};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Answers every call with its arguments.
struct Echo;

impl Host for Echo {
    fn call_tool(&self, _name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move { Ok(args) })
    }

    fn call_models(
        &self,
        _method: String,
        _args: Vec<Value>,
    ) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async { Ok(Value::Null) })
    }
}

async fn time(source: &str, runs: u32) -> Duration {
    let script = match Script::parse(source) {
        Ok(s) => s,
        Err(e) => panic!("the example's script does not parse: {e}"),
    };
    let catalog = Arc::new(Catalog::new(
        vec![CallableTool {
            name: "echo".into(),
            description: "Returns its arguments.".into(),
            parameters: json!({"type": "object"}),
            result_type: "unknown".into(),
            namespace: None,
            listed: true,
        }],
        Vec::new(),
    ));
    let started = Instant::now();
    for _ in 0..runs {
        let outcome = run(
            &script,
            RunEnv {
                host: Arc::new(Echo),
                catalog: catalog.clone(),
                store: Map::new(),
                cancel: CancellationToken::new(),
            },
        )
        .await;
        assert!(outcome.completed(), "{:?}", outcome.failure);
    }
    started.elapsed() / runs
}

#[tokio::main]
async fn main() {
    let empty = time("return 1;", 200).await;
    println!(
        "a script that returns at once: {:.0} µs",
        empty.as_secs_f64() * 1e6
    );
    let calls = 1_000;
    let many = time(
        &format!("let n = 0; for (let i = 0; i < {calls}; i++) n += (await tools.echo({{ i }})).i; return n;"),
        20,
    )
    .await;
    println!(
        "a script making {calls} sequential tool calls: {:.1} ms ({:.1} µs a call)",
        many.as_secs_f64() * 1e3,
        (many.saturating_sub(empty)).as_secs_f64() * 1e6 / f64::from(calls)
    );
    let parallel = time(
        &format!("const r = await Promise.all(Array.from({{ length: {calls} }}, (_, i) => tools.echo({{ i }}))); return r.length;"),
        20,
    )
    .await;
    println!(
        "a script making {calls} calls at once (Promise.all): {:.1} ms ({:.1} µs a call)",
        parallel.as_secs_f64() * 1e3,
        (parallel.saturating_sub(empty)).as_secs_f64() * 1e6 / f64::from(calls)
    );
}
