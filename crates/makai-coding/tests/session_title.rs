//! Background title generation against the scripted LLM server and doubles.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use makai_ai::{Api, ApiKey, AssistantMessage, Model, RetryPolicy, StreamOptions, UserMessage};
use makai_coding::session::title::{
    FnTitleModel, ModelTitler, TitleModel, TitleRequest, generate_title, spawn_title,
    spawn_title_with,
};
use makai_coding::session::{JsonlStore, Session, SessionEntry, SharedSession};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

fn reply(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![makai_ai::AssistantContent::Text(makai_ai::TextContent {
            text: text.into(),
            text_signature: None,
        })],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        ..Default::default()
    }
}

fn exchanged(dir: &std::path::Path) -> SharedSession {
    let mut s = Session::create(dir, "/w");
    s.append_message(UserMessage::text(
        "The login form crashes when the password is empty",
    ))
    .unwrap();
    s.append_message(reply("I'll add a check for the empty password."))
        .unwrap();
    SharedSession::new(s)
}

fn titler(server: &MockServer) -> ModelTitler {
    let client = std::sync::Arc::new(makai_ai::InProcessClient::new());
    let mut t = ModelTitler::new(
        client,
        Model::custom(
            Api::AnthropicMessages,
            "mock",
            "title-model",
            server.base_url_v1(),
        ),
    );
    t.options = StreamOptions {
        api_key: Some(ApiKey::new("test-key")),
        retry: RetryPolicy::none(),
        ..Default::default()
    };
    t
}

#[tokio::test]
async fn title_from_a_real_model_call_is_appended_as_session_info() {
    let server = MockServer::start(
        Scenario::new().push(ScriptedResponse::text("\"Fix empty password crash.\"\n")),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = exchanged(dir.path());
    let handle = spawn_title(session.clone(), Arc::new(titler(&server))).unwrap();
    handle.await.unwrap();

    let s = session.lock();
    assert_eq!(s.name(), Some("Fix empty password crash"));
    // Persisted as a pi session_info entry on the current branch.
    let path = s.path().unwrap().to_path_buf();
    let leaf = s.leaf_id().unwrap().to_string();
    drop(s);
    let back = Session::open(&path).unwrap();
    assert!(matches!(
        back.get(&leaf),
        Some(SessionEntry::SessionInfo(_))
    ));
    assert_eq!(back.name(), Some("Fix empty password crash"));
    // What the title call used is recorded (session totals and budgets count it).
    let used: Vec<_> = back
        .entries()
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(used.len(), 1, "{used:?}");
    assert_eq!(used[0].kind, "title");
    assert_eq!(used[0].model, "title-model");
    assert_eq!((used[0].usage.input, used[0].usage.output), (10, 20));
    assert_eq!(
        makai_coding::session::session_spending(&back).output,
        20,
        "the title counts in what the session spent"
    );
    let store = JsonlStore::flat(dir.path());
    assert_eq!(
        store.list("/w").unwrap()[0].title,
        "Fix empty password crash"
    );

    // The conversation went into the user message, wrapped; the system prompt is fixed text.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    let system = body["system"].to_string();
    assert!(!system.contains("login form"), "{system}");
    let user = body["messages"][0].to_string();
    assert!(
        user.contains("untrusted_input") && user.contains("login form crashes"),
        "{user}"
    );
}

#[tokio::test]
async fn a_failing_title_call_leaves_the_session_untitled_and_usable() {
    let server = MockServer::start(
        Scenario::new().push(
            ScriptedResponse::new()
                .with_status(500)
                .with_body(r#"{"error":{"message":"boom"}}"#),
        ),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = exchanged(dir.path());
    let t = titler(&server);
    let err = generate_title(&session, &t).await.unwrap_err();
    assert!(err.contains("boom") || err.contains("500"), "{err}");
    // Through the background path: no panic, nothing appended.
    spawn_title(session.clone(), Arc::new(t))
        .unwrap()
        .await
        .unwrap();
    let mut s = session.lock();
    assert_eq!(s.name(), None);
    assert_eq!(s.entries().len(), 2);
    s.append_message(UserMessage::text("still works")).unwrap();
}

#[tokio::test]
async fn title_generation_never_blocks_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let session = exchanged(dir.path());
    let slow = FnTitleModel(|_req: TitleRequest| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, String>("late".to_string())
    });
    let start = Instant::now();
    let handle =
        spawn_title_with(session.clone(), Arc::new(slow), Duration::from_millis(200)).unwrap();
    // The caller continues at once and can keep appending.
    session
        .lock()
        .append_message(UserMessage::text("next"))
        .unwrap();
    assert!(start.elapsed() < Duration::from_millis(100));
    handle.await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "timed out instead of waiting 30 s"
    );
    assert_eq!(session.lock().name(), None);
}

#[tokio::test]
async fn no_title_call_before_the_first_exchange_or_when_named() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let counting: Arc<dyn TitleModel> = Arc::new(FnTitleModel(move |_req: TitleRequest| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, String>("T".to_string()) }
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create(dir.path(), "/w");
    s.append_message(UserMessage::text("only a question"))
        .unwrap();
    let shared = SharedSession::new(s);
    assert!(spawn_title(shared.clone(), counting.clone()).is_none());

    shared.lock().append_message(reply("answer")).unwrap();
    shared.lock().set_name("Chosen by the user").unwrap();
    assert!(spawn_title(shared.clone(), counting.clone()).is_none());
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(shared.lock().name(), Some("Chosen by the user"));
}

#[test]
fn without_a_runtime_nothing_is_spawned() {
    let dir = tempfile::tempdir().unwrap();
    let session = exchanged(dir.path());
    let model: Arc<dyn TitleModel> = Arc::new(FnTitleModel(|_r: TitleRequest| async {
        Ok::<_, String>("x".to_string())
    }));
    assert!(spawn_title(session, model).is_none());
}
