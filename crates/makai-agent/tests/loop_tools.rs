//! Fault isolation of tools, argument checks and the tool hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use makai_agent::makai_ai::{Message, StopReason, UserContent};
use makai_agent::testing::{ScriptedClient, ScriptedResponse};
use makai_agent::{
    AgentHooks, AgentMessage, CancellationToken, CustomMessage, EndReason, InputDecision,
    ToolCallDecision, ToolCallInfo, ToolContext, ToolOutput, ToolResultOverride, TypedTool,
    agent_loop,
};
use serde_json::json;

async fn run_one_call(
    tools: Vec<Arc<dyn makai_agent::Tool>>,
    call: ScriptedResponse,
) -> (
    Vec<(String, String, bool)>,
    Arc<ScriptedClient>,
    makai_agent::RunOutcome,
) {
    let client = ScriptedClient::new([call, ScriptedResponse::text("carry on")]);
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(tools),
        config(client.clone()),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    (tool_result_texts(&events), client, outcome)
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_run_goes_on() {
    let boom = TypedTool::new("boom", "Panics.", |_a: EchoArgs, _ctx| async move {
        if true {
            panic!("kaboom at line 1");
        }
        Ok(ToolOutput::text("unreachable"))
    })
    .into_arc();
    let (results, client, outcome) = run_one_call(
        vec![boom, echo_tool()],
        ScriptedResponse::tool_call("a", "boom", json!({"text": ""})).with_tool_call(
            "b",
            "echo",
            json!({"text": "still here"}),
        ),
    )
    .await;
    assert!(results[0].2);
    assert!(
        results[0].1.contains("crashed") && results[0].1.contains("kaboom at line 1"),
        "{results:?}"
    );
    assert_eq!(results[1], ("b".into(), "still here".into(), false));
    assert_eq!(client.calls(), 2);
    assert_eq!(outcome.end_reason, EndReason::Completed);
}

#[tokio::test]
async fn unknown_tool_lists_the_available_tools() {
    let (results, _, _) = run_one_call(
        vec![echo_tool()],
        ScriptedResponse::tool_call("a", "nope", json!({})),
    )
    .await;
    assert_eq!(
        results,
        [(
            "a".into(),
            "Tool 'nope' not found. Available tools: echo.".into(),
            true
        )]
    );
}

#[tokio::test]
async fn invalid_arguments_name_each_problem_and_the_tool_does_not_run() {
    let ran = Arc::new(Mutex::new(false));
    let r = ran.clone();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        path: String,
        count: u32,
    }
    let tool = TypedTool::new("read", "Reads.", move |_a: Args, _ctx| {
        let r = r.clone();
        async move {
            *r.lock().unwrap() = true;
            Ok(ToolOutput::text("x"))
        }
    })
    .into_arc();
    let (results, _, _) = run_one_call(
        vec![tool],
        ScriptedResponse::tool_call("a", "read", json!({"count": "many"})),
    )
    .await;
    let text = &results[0].1;
    assert!(results[0].2);
    assert!(
        text.starts_with("Invalid arguments for tool 'read':"),
        "{text}"
    );
    assert!(text.contains("\"path\" is a required property"), "{text}");
    assert!(text.contains("/count"), "{text}");
    assert!(!*ran.lock().unwrap());
}

#[tokio::test]
async fn truncated_arguments_are_never_executed() {
    let (results, _, _) = run_one_call(
        vec![echo_tool()],
        ScriptedResponse::raw_tool_call("a", "echo", "{\"text\": \"unterminated"),
    )
    .await;
    assert!(results[0].2);
    assert!(results[0].1.contains("was not executed"), "{results:?}");
}

#[tokio::test]
async fn calls_of_a_length_limited_response_are_failed() {
    let (results, _, _) = run_one_call(
        vec![echo_tool()],
        ScriptedResponse::tool_call("a", "echo", json!({"text": "x"}))
            .with_stop_reason(StopReason::Length),
    )
    .await;
    assert!(
        results[0].2 && results[0].1.contains("output token limit"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_tool_error_and_a_timeout_are_error_results() {
    let failing_tool = TypedTool::new("fail", "Fails.", |_a: EchoArgs, _ctx| async move {
        failing("disk full: /tmp")
    })
    .into_arc();
    let slow = TypedTool::new("slow", "Slow.", |_a: EchoArgs, _ctx| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(ToolOutput::text("late"))
    })
    .timeout(Duration::from_millis(100))
    .into_arc();
    let (results, _, _) = run_one_call(
        vec![failing_tool, slow],
        ScriptedResponse::tool_call("a", "fail", json!({"text": ""})).with_tool_call(
            "b",
            "slow",
            json!({"text": ""}),
        ),
    )
    .await;
    assert_eq!(results[0], ("a".into(), "disk full: /tmp".into(), true));
    assert!(
        results[1].2 && results[1].1.contains("timed out after 0.1 s"),
        "{results:?}"
    );
}

pub(crate) struct Approvals {
    pub(crate) after_calls: Mutex<u32>,
}

#[async_trait]
impl AgentHooks for Approvals {
    async fn before_tool_call(&self, call: &ToolCallInfo<'_>) -> ToolCallDecision {
        if call.args["text"] == "rm -rf" {
            ToolCallDecision::Block("The user denied this call.".into())
        } else {
            ToolCallDecision::Allow
        }
    }
    async fn after_tool_call(
        &self,
        _call: &ToolCallInfo<'_>,
        result: &ToolOutput,
        _is_error: bool,
    ) -> Option<ToolResultOverride> {
        *self.after_calls.lock().unwrap() += 1;
        Some(ToolResultOverride {
            content: Some(vec![UserContent::text(format!(
                "[redacted] {}",
                result.text_content().len()
            ))]),
            details: Some(json!({"rewritten": true})),
            is_error: None,
        })
    }
}

#[tokio::test]
async fn before_tool_call_blocks_and_after_tool_call_rewrites() {
    let hooks = Arc::new(Approvals {
        after_calls: Mutex::new(0),
    });
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "echo", json!({"text": "rm -rf"})).with_tool_call(
            "b",
            "echo",
            json!({"text": "secret"}),
        ),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client.clone());
    cfg.hooks = hooks.clone();
    let (events, outcome) = agent_loop(
        vec!["go".into()],
        context(vec![echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    let results = tool_result_texts(&events);
    assert_eq!(
        results[0],
        ("a".into(), "The user denied this call.".into(), true)
    );
    assert_eq!(results[1], ("b".into(), "[redacted] 6".into(), false));
    assert_eq!(*hooks.after_calls.lock().unwrap(), 1);
    assert_eq!(
        outcome.messages[3].as_tool_result().unwrap().details,
        Some(json!({"rewritten": true}))
    );
}

struct Filter;

#[async_trait]
impl AgentHooks for Filter {
    async fn filter_input(&self, message: &AgentMessage) -> InputDecision {
        let text = message.text();
        if text.contains("forbidden") {
            InputDecision::Reject("that topic is not allowed".into())
        } else if text.contains("sk-123") {
            InputDecision::Replace(Box::new(AgentMessage::user(
                text.replace("sk-123", "[key]"),
            )))
        } else {
            InputDecision::Accept
        }
    }
}

#[tokio::test]
async fn input_filters_reject_or_rewrite_user_messages() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let mut cfg = config(client.clone());
    cfg.hooks = Arc::new(Filter);
    let (events, outcome) = agent_loop(
        vec!["forbidden thing".into()],
        context(vec![]),
        cfg.clone(),
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert_eq!(
        outcome.end_reason,
        EndReason::InputRejected {
            reason: "that topic is not allowed".into()
        }
    );
    assert_eq!(outline(&events), ["agent_start", "agent_end"]);
    assert_eq!(client.calls(), 0);

    let outcome = agent_loop(
        vec!["my key is sk-123".into()],
        context(vec![]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    assert_eq!(outcome.messages[0].text(), "my key is [key]");
    let Message::User(u) = &client.requests()[0].context.messages[0] else {
        panic!()
    };
    assert_eq!(AgentMessage::from(u.clone()).text(), "my key is [key]");
}

/// A tool named `probe` that hands its context to `record` and answers "ok".
fn probe_tool(record: impl Fn(&ToolContext) + Send + Sync + 'static) -> Arc<dyn makai_agent::Tool> {
    let record = Arc::new(record);
    TypedTool::new(
        "probe",
        "Looks around.",
        move |_a: EchoArgs, ctx: ToolContext| {
            let record = record.clone();
            async move {
                record(&ctx);
                Ok(ToolOutput::text("ok"))
            }
        },
    )
    .into_arc()
}

#[tokio::test]
async fn tools_get_cwd_session_and_a_snapshot() {
    let seen = Arc::new(Mutex::new(
        None::<(String, Option<String>, usize, Vec<String>)>,
    ));
    let s = seen.clone();
    let probe = probe_tool(move |ctx| {
        let snap = ctx.snapshot().unwrap();
        *s.lock().unwrap() = Some((
            ctx.cwd().display().to_string(),
            ctx.session_id().map(str::to_string),
            snap.messages.len(),
            snap.tools.names().iter().map(|n| n.to_string()).collect(),
        ));
    });
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "probe", json!({"text": ""})),
        ScriptedResponse::text("ok"),
    ]);
    let mut cfg = config(client);
    cfg.cwd = "/tmp/work".into();
    cfg.options.session_id = Some("sess-1".into());
    agent_loop(
        vec!["go".into()],
        context(vec![probe]),
        cfg,
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let (cwd, session, n, tools) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(cwd, "/tmp/work");
    assert_eq!(session.as_deref(), Some("sess-1"));
    assert_eq!(
        n, 2,
        "the snapshot holds the prompt and the assistant message"
    );
    assert_eq!(tools, ["probe"]);
}

/// Regression: every tool batch cloned the whole transcript for the tools'
/// snapshot. The snapshot now shares the run's transcript: two batches in a
/// row, the first one's snapshot let go, see the same allocation growing.
#[tokio::test]
async fn tool_batches_share_the_transcript_instead_of_copying_it() {
    let seen = Arc::new(Mutex::new(Vec::<(usize, usize)>::new()));
    let s = seen.clone();
    let probe = probe_tool(move |ctx| {
        let snap = ctx.snapshot().unwrap();
        let at = Arc::as_ptr(&snap.messages) as usize;
        s.lock().unwrap().push((at, snap.messages.len()));
    });
    let client = ScriptedClient::new([
        ScriptedResponse::tool_call("a", "probe", json!({"text": ""})),
        ScriptedResponse::tool_call("b", "probe", json!({"text": ""})),
        ScriptedResponse::text("done"),
    ]);
    agent_loop(
        vec!["go".into()],
        context(vec![probe]),
        config(client),
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].1, 2, "the prompt and the first call");
    assert_eq!(seen[1].1, 4, "then the first result and the second call");
    assert_eq!(seen[0].0, seen[1].0, "one transcript, not a copy per batch");
}

#[tokio::test]
async fn custom_messages_reach_the_model_through_convert_to_llm() {
    let client = ScriptedClient::new([ScriptedResponse::text("ok")]);
    let ctx = context(vec![]).with_messages(vec![CustomMessage::text("note", "remember X").into()]);
    agent_loop(
        vec!["go".into()],
        ctx,
        config(client.clone()),
        CancellationToken::new(),
    )
    .join()
    .await
    .unwrap();
    let sent = &client.requests()[0].context.messages;
    assert_eq!(sent.len(), 2);
    let Message::User(u) = &sent[0] else { panic!() };
    assert_eq!(AgentMessage::from(u.clone()).text(), "remember X");
}

/// Seed 003: under dry run every tool that is not read-only is described, not
/// run; read-only tools run as usual.
#[tokio::test]
async fn dry_run_describes_mutating_tools_and_runs_read_only_ones() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let mutating = TypedTool::new(
        "delete_all",
        "Deletes.",
        move |_: serde_json::Value, _ctx| {
            let flag = flag.clone();
            async move {
                flag.store(true, Ordering::SeqCst);
                Ok(ToolOutput::text("deleted"))
            }
        },
    )
    .into_arc();
    let client =
        ScriptedClient::new([
            ScriptedResponse::tool_call("a", "delete_all", json!({"everything": true}))
                .with_tool_call("b", "echo", json!({"text": "read me"})),
            ScriptedResponse::text("ok"),
        ]);
    let mut cfg = config(client);
    cfg.dry_run = true;
    let (events, _) = agent_loop(
        vec!["go".into()],
        context(vec![mutating, echo_tool()]),
        cfg,
        CancellationToken::new(),
    )
    .collect()
    .await
    .unwrap();
    assert_contract(&events);
    assert!(!ran.load(Ordering::SeqCst), "the mutating tool never ran");
    let results = tool_result_texts(&events);
    assert!(
        results[0]
            .1
            .starts_with("Dry run: the 'delete_all' tool would have been called with"),
        "{results:?}"
    );
    assert!(!results[0].2, "a dry run is not an error");
    assert_eq!(results[1], ("b".into(), "read me".into(), false));
}

/// A model that sends megabytes where a short value belongs gets an error it
/// can read, not its own megabytes back: every echo of its input is bounded.
#[tokio::test]
async fn a_2mb_argument_or_tool_name_is_not_echoed_back_whole() {
    let huge = "p".repeat(2 * 1024 * 1024);
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        count: u32,
    }
    let tool = || {
        TypedTool::new("read", "Reads.", |_a: Args, _ctx| async move {
            Ok(ToolOutput::text("x"))
        })
        .into_arc()
    };
    let limit = 2_000;
    let (wrong_type, _, _) = run_one_call(
        vec![tool()],
        ScriptedResponse::tool_call("a", "read", json!({"count": huge})),
    )
    .await;
    let (unknown, _, _) = run_one_call(
        vec![tool()],
        ScriptedResponse::tool_call("a", &huge, json!({})),
    )
    .await;
    let (broken, _, _) = run_one_call(
        vec![tool()],
        ScriptedResponse::raw_tool_call("a", "read", format!("{{\"count\": \"{huge}")),
    )
    .await;
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Many {
        a: u32,
        b: u32,
        c: u32,
        d: u32,
        e: u32,
        f: u32,
        g: u32,
        h: u32,
        i: u32,
        j: u32,
        k: u32,
        l: u32,
    }
    let strict = TypedTool::new("strict", "Strict.", |_a: Many, _ctx| async move {
        Ok(ToolOutput::text("x"))
    })
    .into_arc();
    let (many_problems, _, _) = run_one_call(
        vec![strict],
        ScriptedResponse::tool_call("a", "strict", json!({})),
    )
    .await;
    for (case, results) in [
        ("wrong type", &wrong_type),
        ("unknown tool", &unknown),
        ("broken JSON", &broken),
        ("many problems", &many_problems),
    ] {
        let (_, text, is_error) = &results[0];
        assert!(is_error, "{case}: {text}");
        assert!(text.len() < limit, "{case}: {} bytes", text.len());
    }
    assert!(
        wrong_type[0].1.contains("characters in all"),
        "{:?}",
        wrong_type[0].1
    );
    assert!(
        unknown[0].1.contains("Available tools: read"),
        "{:?}",
        unknown[0].1
    );
    assert!(
        many_problems[0].1.contains("and 2 more problems"),
        "{:?}",
        many_problems[0].1
    );
}
