//! `Agent::summarize_branch`: the summary of a branch being left, and
//! `Agent::summarize` (a summary a prompt asks for), through the in-process
//! client over real HTTP to the scripted server; the transcript stays as it
//! was.

use std::time::Duration;

use makai_agent::makai_ai::StopReason;
use makai_agent::makai_ai::{AssistantContent, AssistantMessage, TextContent, ToolCall};
use makai_agent::{
    Agent, AgentError, AgentMessage, CancellationToken, CompactionError, SummaryPrompt,
};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse as Mock};

async fn agent(responses: Vec<Mock>) -> (MockServer, Agent) {
    let server = MockServer::start(Scenario::new().extend(responses))
        .await
        .expect("mock server starts");
    let agent =
        Agent::new(crate::common::http_config(&server)).with_system_prompt("You are a test.");
    agent
        .replace_messages(vec![AgentMessage::user("the current branch")])
        .unwrap();
    (server, agent)
}

/// The branch left: a question, then calls that read one file and edit another.
fn branch() -> Vec<AgentMessage> {
    let call = |id: &str, name: &str, path: &str| {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), serde_json::json!(path));
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            ..Default::default()
        })
    };
    vec![
        AgentMessage::user("try the parser rewrite"),
        AssistantMessage {
            content: vec![
                AssistantContent::Text(TextContent {
                    text: "Reading the parser.".into(),
                    text_signature: None,
                }),
                call("c1", "read", "src/parse.rs"),
                call("c2", "edit", "src/lex.rs"),
            ],
            ..Default::default()
        }
        .into(),
    ]
}

#[tokio::test]
async fn a_branch_summary_is_the_model_s_text_with_the_files_after_it() {
    let (server, agent) = agent(vec![Mock::text("## Goal\nRewrite the parser.")]).await;
    let before = agent.messages();
    let carried = [(vec!["docs/notes.md".to_string()], vec![])];
    let summary = agent
        .summarize_branch(
            &branch(),
            &carried,
            Some("focus on the lexer"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        summary.summary,
        "## Goal\nRewrite the parser.\n\n## Read files\n\n- docs/notes.md\n- src/parse.rs\n\n## Modified files\n\n- src/lex.rs"
    );
    assert_eq!(summary.read_files, ["docs/notes.md", "src/parse.rs"]);
    assert_eq!(summary.modified_files, ["src/lex.rs"]);
    assert!(summary.usage.output > 0, "{:?}", summary.usage);
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("## Constraints & Preferences"), "{body}");
    assert!(body.contains("try the parser rewrite"), "{body}");
    assert!(body.contains("focus on the lexer"), "{body}");
    assert_eq!(agent.messages(), before, "the transcript is untouched");
    server.assert_request_invariants();
}

#[tokio::test]
async fn a_failed_or_cancelled_branch_summary_is_an_error_and_the_agent_stays_usable() {
    let (server, agent) = agent(vec![Mock::new().with_status(500)]).await;
    match agent
        .summarize_branch(&branch(), &[], None, CancellationToken::new())
        .await
    {
        Err(AgentError::Compaction(CompactionError::Failed(m))) => {
            assert!(m.contains("500"), "{m}")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    server.push(Mock::text("never finishes").stall_after(1));
    let cancel = CancellationToken::new();
    let task = {
        let agent = agent.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { agent.summarize_branch(&branch(), &[], None, cancel).await })
    };
    while server.requests().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("cancelling ends the call")
        .unwrap();
    assert!(matches!(
        result,
        Err(AgentError::Compaction(CompactionError::Aborted))
    ));
    // Nothing to summarize is refused without a call.
    assert!(matches!(
        agent
            .summarize_branch(&[], &[], None, CancellationToken::new())
            .await,
        Err(AgentError::Compaction(CompactionError::Failed(_)))
    ));
    assert_eq!(server.requests().len(), 2);
    server.push(Mock::text("fine"));
    agent.prompt("hello").await.unwrap();
}

/// A conversation with a turn that failed after writing half an answer.
fn with_a_failed_turn() -> Vec<AgentMessage> {
    let answer = |text: &str| {
        vec![AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })]
    };
    vec![
        AgentMessage::user("first question"),
        AssistantMessage {
            content: answer("half an answer"),
            stop_reason: StopReason::Error,
            error_message: Some("HTTP 400: the tool schema was rejected".into()),
            ..Default::default()
        }
        .into(),
        AgentMessage::user("second question"),
        AssistantMessage {
            content: answer("a whole answer"),
            ..Default::default()
        }
        .into(),
    ]
}

/// The text of the summary request's user message.
fn asked(server: &MockServer, n: usize) -> String {
    server.requests()[n].body["messages"].to_string()
}

#[tokio::test]
async fn a_summary_shows_why_turns_failed_only_when_its_prompt_asks() {
    let (server, agent) = agent(vec![Mock::text("first"), Mock::text("second")]).await;
    let prompt = |failures| SummaryPrompt {
        system: "You summarize.",
        request: "Say what went wrong.",
        failures,
    };
    let (text, usage) = agent
        .summarize(
            &with_a_failed_turn(),
            prompt(true),
            Some("it broke"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(text, "first");
    assert!(usage.output > 0);
    let shown = asked(&server, 0);
    assert!(
        shown.contains("[assistant failed (error)] HTTP 400: the tool schema was rejected"),
        "{shown}"
    );
    assert!(
        shown.contains("it broke") && shown.contains("a whole answer"),
        "{shown}"
    );
    assert!(!shown.contains("half an answer"), "{shown}");
    // A summary of work leaves the failed turn out, as requests do.
    agent
        .summarize(
            &with_a_failed_turn(),
            prompt(false),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let shown = asked(&server, 1);
    assert!(
        !shown.contains("rejected") && !shown.contains("half an answer"),
        "{shown}"
    );
    assert!(shown.contains("second question"), "{shown}");
    assert_eq!(agent.messages().len(), 1);
}

#[test]
fn files_a_tool_s_nested_calls_read_or_changed_are_listed_too() {
    use makai_agent::makai_ai::{
        NestedCallStatus, NestedToolCall, NestedToolCalls, ToolResultMessage,
    };
    let nested = |name: &str, path: Option<&str>| NestedToolCall {
        id: format!("c9/{name}"),
        name: name.into(),
        arguments: path.map(|p| {
            let mut a = serde_json::Map::new();
            a.insert("path".into(), serde_json::json!(p));
            a
        }),
        arguments_bytes: path.is_none().then_some(40_000),
        status: NestedCallStatus::Ok,
        duration_ms: Some(1),
        error: None,
    };
    let mut result = ToolResultMessage::text("c9", "codemode", "done", false);
    result.nested_calls = Some(Box::new(NestedToolCalls {
        calls: vec![
            nested("read", Some("src/ast.rs")),
            nested("write", Some("src/parse.rs")),
            // Arguments too long to keep: no path to list.
            nested("edit", None),
        ],
        complete: false,
    }));
    let mut messages = branch();
    messages.push(AgentMessage::Llm(result.into()));
    let (read, modified) = makai_agent::branch_files(&messages, &[]);
    assert_eq!(read, ["src/ast.rs"], "src/parse.rs was changed later");
    assert_eq!(modified, ["src/lex.rs", "src/parse.rs"]);
}
