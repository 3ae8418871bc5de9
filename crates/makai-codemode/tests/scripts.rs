//! Scripts run through the public API with a host of test tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use makai_codemode::{
    CallableTool, Catalog, Failure, Host, Item, Namespace, Outcome, RunEnv, Script, run,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct TestHost {
    calls: AtomicUsize,
    slow_dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Host for TestHost {
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let dropped = self.slow_dropped.clone();
        Box::pin(async move {
            match name.as_str() {
                "echo" => Ok(args),
                "upper" => Ok(Value::String(
                    args["text"].as_str().unwrap_or("").to_uppercase(),
                )),
                "fail" => Err("the tool failed: no such file".into()),
                "slow" => {
                    let _guard = SetOnDrop(dropped);
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(Value::Null)
                }
                other => Err(format!("unknown tool {other}")),
            }
        })
    }

    fn call_models(
        &self,
        method: String,
        args: Vec<Value>,
    ) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            match method.as_str() {
                "getModelsOfType" => Ok(json!([{"provider": "p", "id": "m", "type": args[0]}])),
                _ => Ok(Value::Null),
            }
        })
    }
}

fn tool(name: &str, description: &str, namespace: Option<&str>) -> CallableTool {
    CallableTool {
        name: name.into(),
        description: description.into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        result_type: "string".into(),
        namespace: namespace.map(Into::into),
        listed: namespace.is_none(),
    }
}

fn catalog() -> Arc<Catalog> {
    Arc::new(Catalog::new(
        vec![
            tool("echo", "Returns its arguments.", None),
            tool("upper", "Upper-cases a text.", None),
            tool("fail", "Always fails.", None),
            tool("slow", "Takes thirty seconds.", None),
            tool(
                "mcp__dev-radius__search",
                "Search the radius index for documents.",
                Some("dev-radius"),
            ),
        ],
        vec![Namespace {
            name: "dev-radius".into(),
            description: Some("Radius docs".into()),
            instructions: None,
        }],
    ))
}

async fn run_with(
    source: &str,
    host: Arc<TestHost>,
    store: Map<String, Value>,
    cancel: CancellationToken,
) -> Outcome {
    let script = Script::parse(source).expect("script parses");
    run(
        &script,
        RunEnv {
            host,
            catalog: catalog(),
            store,
            cancel,
        },
    )
    .await
}

async fn run_script(source: &str) -> Outcome {
    run_with(
        source,
        Arc::new(TestHost::default()),
        Map::new(),
        CancellationToken::new(),
    )
    .await
}

fn texts(o: &Outcome) -> Vec<String> {
    o.items
        .iter()
        .filter_map(|i| match i {
            Item::Text(t) => Some(t.clone()),
            Item::Image(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn tools_run_in_parallel_and_only_the_output_is_kept() {
    let o = run_script(
        r#"
        const words = ["a", "b", "c"];
        const up = await Promise.all(words.map((text) => tools.upper({ text })));
        console.log("upper-cased", up.length);
        text("first");
        const e = await tools.echo({ n: 1, nested: { ok: true } });
        return { up, e };
        "#,
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    let t = texts(&o);
    assert_eq!(t[0], "first");
    let value: Value = serde_json::from_str(&t[1]).unwrap();
    assert_eq!(
        value,
        json!({"up": ["A", "B", "C"], "e": {"n": 1, "nested": {"ok": true}}})
    );
    assert_eq!(o.console[0].line, "upper-cased 3");
}

#[tokio::test]
async fn a_failing_call_rejects_with_its_error_text_and_can_be_caught() {
    let o = run_script(
        r#"
        try { await tools.fail({}); } catch (e) { text(`caught: ${e.message}`); }
        const r = await Promise.allSettled([tools.fail({}), tools.echo({ x: 1 })]);
        return r.map((x) => x.status);
        "#,
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    assert_eq!(texts(&o)[0], "caught: the tool failed: no such file");
    assert!(texts(&o)[1].contains("rejected") && texts(&o)[1].contains("fulfilled"));

    let o = run_script("await tools.echo({});\nthrow new TypeError('bad input');").await;
    match o.failure {
        Some(Failure::Script(text)) => assert!(text.starts_with("TypeError: bad input"), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_script_waiting_on_nothing_fails_at_once() {
    let o = run_script("await new Promise(() => {});").await;
    match o.failure {
        Some(Failure::Script(text)) => assert!(text.contains("never settle"), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_deadline_stops_a_busy_loop() {
    let o = run_script("// @options: {\"timeout_ms\": 300}\nwhile (true) {}").await;
    assert_eq!(o.failure, Some(Failure::Timeout));
    assert!(o.wall_time < Duration::from_secs(10));
}

#[tokio::test]
async fn abort_stops_the_script_and_cancels_its_calls() {
    let host = Arc::new(TestHost::default());
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let o = run_with("await tools.slow({});", host.clone(), Map::new(), cancel).await;
    assert_eq!(o.failure, Some(Failure::Aborted));
    assert!(
        host.slow_dropped.load(Ordering::SeqCst),
        "the running call was cancelled"
    );
}

#[tokio::test]
async fn calls_still_running_when_the_script_returns_are_cancelled() {
    let host = Arc::new(TestHost::default());
    let o = run_with(
        "tools.slow({}); await tools.echo({}); return 'done';",
        host.clone(),
        Map::new(),
        CancellationToken::new(),
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    assert!(host.slow_dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn store_reads_earlier_values_and_reports_its_writes() {
    let mut store = Map::new();
    store.insert("cursor".into(), json!(41));
    store.insert("old".into(), json!("x"));
    let o = run_with(
        "store('cursor', load('cursor') + 1); store('old', undefined); store('list', [1, 2]); return [load('cursor'), load('old'), load('missing')];",
        Arc::new(TestHost::default()),
        store,
        CancellationToken::new(),
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    assert_eq!(
        serde_json::from_str::<Value>(&texts(&o)[0]).unwrap(),
        json!([42, null, null])
    );
    assert_eq!(o.store_writes.set.get("cursor"), Some(&json!(42)));
    assert_eq!(o.store_writes.set.get("list"), Some(&json!([1, 2])));
    assert_eq!(o.store_writes.delete, vec!["old".to_string()]);

    let big = format!("store('k', '{}')", "x".repeat(300_000));
    let o = run_script(&big).await;
    assert!(
        matches!(o.failure, Some(Failure::Script(ref t)) if t.contains("262144")),
        "{:?}",
        o.failure
    );
}

#[tokio::test]
async fn exit_ends_the_script_successfully() {
    let o = run_script("text('before'); exit(); text('after');").await;
    assert!(o.completed(), "{:?}", o.failure);
    assert_eq!(texts(&o), vec!["before"]);
}

#[tokio::test]
async fn tools_are_found_by_search_description_and_identifier() {
    let o = run_script(
        r#"
        const hits = await searchTools("radius documents");
        const d = await describeTool("mcp__dev-radius__search");
        const ns = await describeNamespace("dev-radius");
        const same = tools.mcp__dev_radius__search !== undefined && tools["mcp__dev-radius__search"] !== undefined;
        return {
            first: hits[0].name,
            all: ALL_TOOLS.length,
            declared: d.declaration.includes("mcp__dev_radius__search(args"),
            nsTools: ns.tools.map((t) => t.name),
            same,
            missing: tools.nope === undefined,
            models: (await models.getModelsOfType("classifier"))[0].type,
        };
        "#,
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    let v: Value = serde_json::from_str(&texts(&o)[0]).unwrap();
    assert_eq!(
        v,
        json!({
            "first": "mcp__dev-radius__search",
            "all": 5,
            "declared": true,
            "nsTools": ["mcp__dev-radius__search"],
            "same": true,
            "missing": true,
            "models": "classifier"
        })
    );
}

#[tokio::test]
async fn output_limits_fail_the_script_even_when_caught() {
    let o = run_script(
        "try { for (let i = 0; i < 100001; i++) console.log(i); } catch (e) {} return 'survived';",
    )
    .await;
    assert!(
        matches!(o.failure, Some(Failure::Limit(ref t)) if t.contains("100000")),
        "{:?}",
        o.failure
    );
}

#[tokio::test]
async fn a_syntax_error_fails_before_anything_runs() {
    let host = Arc::new(TestHost::default());
    let o = run_with(
        "tools.echo({});\nlet = ;",
        host.clone(),
        Map::new(),
        CancellationToken::new(),
    )
    .await;
    assert!(
        matches!(o.failure, Some(Failure::Script(ref t)) if t.starts_with("SyntaxError")),
        "{:?}",
        o.failure
    );
    assert_eq!(host.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn running_out_of_memory_is_an_error_the_script_sees() {
    let o = run_script(
        "const keep = []; try { while (true) keep.push(new Array(1e6).fill(7)); } catch (e) { keep.length = 0; return String(e); }",
    )
    .await;
    assert!(o.completed(), "{:?}", o.failure);
    assert!(texts(&o)[0].contains("out of memory"), "{:?}", texts(&o));
}

#[tokio::test]
async fn a_dropped_run_interrupts_its_script_and_frees_its_worker() {
    // Far more dropped busy scripts than workers: each must end, or the
    // last run would wait for a worker for a minute and fail.
    for _ in 0..(makai_codemode::max_workers() + 2) {
        let script = Script::parse("while (true) {}").unwrap();
        let run = run(
            &script,
            RunEnv {
                host: Arc::new(TestHost::default()),
                catalog: catalog(),
                store: Map::new(),
                cancel: CancellationToken::new(),
            },
        );
        // Stop waiting after the script started.
        let _ = tokio::time::timeout(Duration::from_millis(100), run).await;
    }
    let o = tokio::time::timeout(Duration::from_secs(20), run_script("return 'free';"))
        .await
        .expect("a worker is free again");
    assert!(o.completed(), "{:?}", o.failure);
}
