//! What each provider sends, checked on the request the scripted server recorded:
//! system prompt placement, tool schemas, tool results, cache breakpoints,
//! thinking parameters, and the conversation invariants of every API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::contract;

use makai_ai::{
    Api, AssistantContent, AssistantMessage, CacheRetention, CompatFlags, Context, Message, Model,
    StopReason, StreamOptions, TextContent, ThinkingContent, ThinkingLevel, ToolCall, ToolChoice,
    ToolDefinition, ToolResultMessage, UserContent, UserMessage, stream,
};
use makai_mockllm::{MockServer, RecordedRequest, Scenario, ScriptedResponse};
use serde_json::{Value, json};

const SYSTEM: &str = "You are a careful assistant.";

fn model(api: Api, server: &MockServer, provider: &str) -> Model {
    let base = match api {
        Api::GoogleGenerativeAi => format!("{}/v1beta", server.url()),
        Api::GoogleVertex | Api::AnthropicVertex => {
            format!("{}/v1/projects/p/locations/us-east5", server.url())
        }
        Api::BedrockConverseStream | Api::AzureOpenAiResponses => server.url(),
        Api::OpenAiCodexResponses => format!("{}/backend-api", server.url()),
        _ => server.base_url_v1(),
    };
    let mut m = Model::custom(api, provider, "target-model", base);
    m.reasoning = true;
    m.input = vec![makai_ai::Modality::Text, makai_ai::Modality::Image];
    m
}

/// A conversation with a tool round produced by `provider`/`api`, then a follow-up.
fn conversation(api: &str, provider: &str, model_id: &str) -> Context {
    let mut args = serde_json::Map::new();
    args.insert("path".into(), json!("src/lib.rs"));
    let mut first = UserMessage::text("Read the file and look at this picture.");
    first
        .content
        .push(UserContent::image("iVBORw0KGgo=", "image/png"));
    Context {
        system_prompt: Some(SYSTEM.into()),
        messages: vec![
            first.into(),
            Message::Assistant(AssistantMessage {
                content: vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "I should read the file.".into(),
                        thinking_signature: Some("sig-abc".into()),
                        redacted: false,
                    }),
                    AssistantContent::Text(TextContent {
                        text: "Reading it now.".into(),
                        text_signature: None,
                    }),
                    AssistantContent::ToolCall(ToolCall::new("call|with|pipes-0001", "read", args)),
                ],
                api: api.into(),
                provider: provider.into(),
                model: model_id.into(),
                stop_reason: StopReason::ToolUse,
                ..Default::default()
            }),
            ToolResultMessage::text("call|with|pipes-0001", "read", "fn main() {}", false).into(),
            UserMessage::text("Thanks. Summarize.").into(),
        ],
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
    }
}

async fn send(api: Api, context: &Context, options: StreamOptions) -> RecordedRequest {
    send_to(api, context, options, |_| {}).await
}

/// A system prompt and "hi" sent to a model of `api` that `adjust` changes
/// first, answered with `answer`: the finished answer (checked to have
/// stopped normally) and the request the server recorded.
async fn greet(
    api: Api,
    answer: ScriptedResponse,
    options: StreamOptions,
    adjust: impl FnOnce(&mut Model),
) -> (AssistantMessage, RecordedRequest) {
    let server = MockServer::start(Scenario::new().push(answer))
        .await
        .unwrap();
    let mut m = model(api, &server, "mock");
    adjust(&mut m);
    let ctx = Context {
        system_prompt: Some(SYSTEM.into()),
        messages: vec![UserMessage::text("hi").into()],
        tools: Vec::new(),
    };
    let message = contract::finish(stream(&m, &ctx, options)).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{api}: {:?}",
        message.error_message
    );
    (message, server.requests().remove(0))
}

/// [`send`] to a model that `adjust` changes first.
async fn send_to(
    api: Api,
    context: &Context,
    options: StreamOptions,
    adjust: impl FnOnce(&mut Model),
) -> RecordedRequest {
    let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("ok")))
        .await
        .unwrap();
    let mut m = model(api, &server, "mock");
    adjust(&mut m);
    let message = contract::finish(stream(&m, context, options)).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{api}: {:?}",
        message.error_message
    );
    server.assert_request_invariants();
    server.requests().remove(0)
}

#[tokio::test]
async fn anthropic_request_body() {
    let options = StreamOptions {
        thinking: ThinkingLevel::Medium,
        cache_retention: CacheRetention::Short,
        ..Default::default()
    };
    let ctx = conversation("anthropic-messages", "mock", "target-model");
    let body = send(Api::AnthropicMessages, &ctx, options).await.body;
    assert_eq!(body["system"][0]["text"], SYSTEM);
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["path"]["type"],
        "string"
    );
    assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["thinking"]["type"], "enabled");
    assert!(body["thinking"]["budget_tokens"].as_u64().unwrap() >= 1024);
    assert!(body.get("temperature").is_none());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"][1]["type"], "image");
    // Same model: thinking replayed with its signature.
    assert_eq!(messages[1]["content"][0]["type"], "thinking");
    assert_eq!(messages[1]["content"][0]["signature"], "sig-abc");
    let call_id = messages[1]["content"][2]["id"].as_str().unwrap();
    assert!(
        call_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{call_id}"
    );
    // Tool result in a user turn, merged with the follow-up text.
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], call_id);
    let last_block = messages.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last_block["cache_control"]["type"], "ephemeral");
}

#[tokio::test]
async fn openai_completions_request_body() {
    let options = StreamOptions {
        tool_choice: Some(ToolChoice::Tool("read".into())),
        ..Default::default()
    };
    let ctx = conversation("openai-completions", "mock", "target-model");
    // The scripted server is on loopback, where makai assumes llama.cpp (which
    // ignores a named choice); this model says its server honours one.
    let named = |m: &mut Model| {
        m.compat = Some(CompatFlags {
            supports_named_tool_choice: Some(true),
            ..Default::default()
        })
    };
    let body = send_to(Api::OpenAiCompletions, &ctx, options.clone(), named)
        .await
        .body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"], SYSTEM);
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"][0],
        "path"
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "read"}})
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(!assistant["content"].is_null());
    let call_id = assistant["tool_calls"][0]["id"].as_str().unwrap();
    assert!(call_id.len() <= 40 && !call_id.contains('|'), "{call_id}");
    assert_eq!(
        serde_json::from_str::<Value>(
            assistant["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .unwrap()["path"],
        "src/lib.rs"
    );
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], call_id);
    assert_eq!(tool["content"], "fn main() {}");

    // Without the flag, a loopback server gets the same forced call as
    // "required" with that one tool.
    let body = send(Api::OpenAiCompletions, &ctx, options).await.body;
    assert_eq!(body["tool_choice"], "required");
    let tools: Vec<&Value> = body["tools"].as_array().unwrap().iter().collect();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["function"]["name"], "read");
}

#[tokio::test]
async fn openai_responses_request_body() {
    let options = StreamOptions {
        thinking: ThinkingLevel::High,
        session_id: Some("session-42".into()),
        ..Default::default()
    };
    let ctx = conversation("anthropic-messages", "anthropic", "claude");
    let body = send(Api::OpenAiResponses, &ctx, options).await.body;
    assert_eq!(body["instructions"], SYSTEM);
    assert_eq!(body["store"], false);
    assert_eq!(body["reasoning"]["effort"], "high");
    assert_eq!(body["prompt_cache_key"], "session-42");
    assert_eq!(body["tools"][0]["name"], "read");
    let input = body["input"].as_array().unwrap();
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(call["call_id"], output["call_id"]);
    // Thinking from another provider arrives as plain text, never as a reasoning item.
    assert!(!input.iter().any(|i| i["type"] == "reasoning"));
    assert!(body.to_string().contains("I should read the file."));
}

#[tokio::test]
async fn gemini_request_body() {
    let options = StreamOptions {
        thinking: ThinkingLevel::Low,
        api_key: Some("gm-key-123".into()),
        ..Default::default()
    };
    let ctx = conversation("openai-responses", "openai", "gpt");
    let request = send(Api::GoogleGenerativeAi, &ctx, options).await;
    assert!(request.path.ends_with("target-model:streamGenerateContent"));
    assert!(request.has_query_param("alt", "sse"));
    assert!(
        !request
            .query
            .clone()
            .unwrap_or_default()
            .contains("gm-key-123"),
        "the key must never be in the URL"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("gm-key-123"));
    let body = request.body;
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], SYSTEM);
    assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "read");
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["role"], "model");
    assert!(
        contents[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["functionCall"]["name"] == "read")
    );
    assert!(contents[2]["parts"][0]["functionResponse"]["name"] == "read");
}

#[tokio::test]
async fn a_conversation_from_each_provider_replays_to_every_other() {
    let sources = [
        ("anthropic-messages", "anthropic", "claude"),
        ("openai-completions", "openai", "gpt-4o"),
        ("openai-responses", "openai", "gpt-5"),
        ("google-generative-ai", "google", "gemini"),
    ];
    for (api, provider, model_id) in sources {
        for target in Api::ALL {
            let ctx = conversation(api, provider, model_id);
            let server = MockServer::start(Scenario::new().push(ScriptedResponse::text("ok")))
                .await
                .unwrap();
            let mut m = model(target, &server, "other");
            m.input = vec![makai_ai::Modality::Text];
            let message = contract::finish(stream(&m, &ctx, StreamOptions::default())).await;
            assert_eq!(
                message.stop_reason,
                StopReason::Stop,
                "{api} -> {target}: {:?}",
                message.error_message
            );
            server.assert_request_invariants();
            let raw = server.requests()[0].raw_body.clone();
            assert!(
                !raw.contains("sig-abc"),
                "{api} -> {target}: a foreign signature was replayed"
            );
            assert!(
                !raw.contains("iVBORw0KGgo="),
                "{api} -> {target}: an image went to a text-only model"
            );
            assert!(
                raw.contains("image omitted"),
                "{api} -> {target}: the image note is missing"
            );
        }
    }
}

/// pi's `providerThinkingLevel` on an assistant message: the provider's own
/// effort value its request carried, on every API, and none when the request
/// carried a token budget or no reasoning.
#[tokio::test]
async fn the_answer_records_the_provider_effort_its_request_carried() {
    let sent_effort = |api: Api, body: &Value| -> Value {
        match api {
            Api::OpenAiCompletions => body["reasoning_effort"].clone(),
            Api::OpenAiResponses | Api::AzureOpenAiResponses | Api::OpenAiCodexResponses => {
                body["reasoning"]["effort"].clone()
            }
            Api::AnthropicMessages | Api::AnthropicVertex => {
                body["output_config"]["effort"].clone()
            }
            Api::BedrockConverseStream => {
                body["additionalModelRequestFields"]["output_config"]["effort"].clone()
            }
            Api::GoogleGenerativeAi | Api::GoogleVertex => {
                body["generationConfig"]["thinkingConfig"]["thinkingLevel"].clone()
            }
            other => panic!("{other}: a wire API this test does not know"),
        }
    };
    let id_for = |api: Api| match api {
        Api::AnthropicMessages | Api::AnthropicVertex => "claude-opus-4-7",
        Api::BedrockConverseStream => "anthropic.claude-opus-4-7-v1:0",
        Api::GoogleGenerativeAi | Api::GoogleVertex => "gemini-3-pro-preview",
        _ => "gpt-5.2",
    };
    let run = |api: Api, id: &'static str, thinking: ThinkingLevel| async move {
        let options = StreamOptions {
            thinking,
            ..Default::default()
        };
        let (message, request) = greet(api, ScriptedResponse::text("ok"), options, |m| {
            m.id = id.into()
        })
        .await;
        (message, request.body)
    };
    for api in Api::ALL {
        let (message, body) = run(api, id_for(api), ThinkingLevel::Xhigh).await;
        let sent = sent_effort(api, &body);
        assert!(
            sent.is_string(),
            "{api}: the request carries an effort: {body}"
        );
        assert_eq!(
            message.provider_thinking_level.as_deref(),
            sent.as_str(),
            "{api}"
        );
        assert_eq!(
            serde_json::to_value(&message).unwrap()["providerThinkingLevel"],
            sent,
            "{api}"
        );
        let (off, _) = run(api, id_for(api), ThinkingLevel::Off).await;
        assert_eq!(off.provider_thinking_level, None, "{api}: thinking off");
    }
    // A token budget is no effort.
    let (budget, body) = run(
        Api::AnthropicMessages,
        "claude-sonnet-4-5",
        ThinkingLevel::High,
    )
    .await;
    assert!(body["thinking"]["budget_tokens"].is_number(), "{body}");
    assert_eq!(budget.provider_thinking_level, None);
}

/// pi's `thinkingLevel` on an assistant message: the level its request was
/// sent with, as the model takes it, kept through a retry.
#[tokio::test]
async fn the_answer_records_the_thinking_level_its_request_was_sent_with() {
    let answer = |reasoning: bool, level: ThinkingLevel, first_status: Option<u16>| async move {
        let mut scenario = Scenario::new();
        if let Some(status) = first_status {
            scenario = scenario.push(
                ScriptedResponse::new()
                    .with_status(status)
                    .with_body("busy, try again"),
            );
        }
        let server = MockServer::start(scenario.push(ScriptedResponse::text("ok")))
            .await
            .unwrap();
        let mut m = model(Api::OpenAiCompletions, &server, "mock");
        m.reasoning = reasoning;
        let options = StreamOptions {
            thinking: level,
            retry: makai_ai::RetryPolicy {
                max_retries: 2,
                initial_delay: std::time::Duration::from_millis(5),
                max_delay: std::time::Duration::from_millis(50),
            },
            ..Default::default()
        };
        let ctx = conversation("openai-completions", "mock", "target-model");
        let message = contract::finish(stream(&m, &ctx, options)).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{:?}",
            message.error_message
        );
        message
    };
    let high = answer(true, ThinkingLevel::High, None).await;
    assert_eq!(high.thinking_level, Some(ThinkingLevel::High));
    assert_eq!(high.provider_thinking_level.as_deref(), Some("high"));
    assert_eq!(
        serde_json::to_value(&high).unwrap()["thinkingLevel"],
        "high"
    );
    // A model without thinking takes none.
    let plain = answer(false, ThinkingLevel::High, None).await;
    assert_eq!(plain.thinking_level, Some(ThinkingLevel::Off));
    assert_eq!(plain.provider_thinking_level, None, "no effort was sent");
    // The answer after a retry says it too.
    let retried = answer(true, ThinkingLevel::Low, Some(503)).await;
    assert_eq!(retried.thinking_level, Some(ThinkingLevel::Low));
    assert_eq!(retried.provider_thinking_level.as_deref(), Some("low"));
    // Messages of older sessions have none, and read back so.
    let old: AssistantMessage = serde_json::from_value(json!({
        "role": "assistant", "content": [], "api": "openai-completions",
        "provider": "mock", "model": "m", "stopReason": "stop", "timestamp": 1
    }))
    .unwrap();
    assert_eq!(old.thinking_level, None);
    assert!(
        serde_json::to_value(&old)
            .unwrap()
            .get("thinkingLevel")
            .is_none()
    );
}

/// A request whose cache breakpoints all last an hour (long retention on
/// Anthropic's API and Bedrock) writes one-hour entries: cache writes the
/// response reports without a split by lifetime are priced as such (pi's
/// `cacheWrite1h`, twice the input rate), and as five-minute ones otherwise.
#[tokio::test]
async fn cache_writes_of_a_one_hour_request_are_priced_as_one_hour_writes() {
    let priced = |api: Api, retention: CacheRetention| async move {
        let answer = ScriptedResponse::text("ok")
            .usage(makai_mockllm::Usage::new(10, 2).with_cache(100, 3000));
        let options = StreamOptions {
            cache_retention: retention,
            ..Default::default()
        };
        let (message, request) = greet(api, answer, options, |m| {
            m.cost.input = 3.0;
            m.cost.cache_read = 0.3;
            m.cost.cache_write = 3.75;
        })
        .await;
        (*message.usage, request.raw_body)
    };
    for api in [Api::AnthropicMessages, Api::BedrockConverseStream] {
        let (long, body) = priced(api, CacheRetention::Long).await;
        assert!(body.contains("\"ttl\":\"1h\""), "{api}: {body}");
        assert_eq!(long.cache_write, 3000, "{api}");
        assert_eq!(long.cache_write_1h, Some(3000), "{api}");
        assert!(
            (long.cost.cache_write - 3000.0 * 6.0 / 1e6).abs() < 1e-12,
            "{api}: {long:?}"
        );
        let (short, body) = priced(api, CacheRetention::Short).await;
        assert!(!body.contains("\"ttl\":\"1h\""), "{api}: {body}");
        assert_eq!(short.cache_write_1h, None, "{api}");
        assert!(
            (short.cost.cache_write - 3000.0 * 3.75 / 1e6).abs() < 1e-12,
            "{api}: {short:?}"
        );
    }
}

/// pi's #8720: a tool result of only whitespace (a bare `\r\n` from a
/// command) failed the whole request with a 400 on OpenAI's two APIs and
/// Google's; it is sent as `(no output)`.
#[tokio::test]
async fn a_blank_tool_result_is_sent_as_no_output() {
    let outputs = |api: Api, body: &Value| -> Vec<Value> {
        let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
        match api {
            Api::OpenAiCompletions => items("messages")
                .into_iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].clone())
                .collect(),
            Api::OpenAiResponses => items("input")
                .into_iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| i["output"].clone())
                .collect(),
            _ => items("contents")
                .iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p.pointer("/functionResponse/response/output").cloned())
                .collect(),
        }
    };
    for api in [
        Api::OpenAiCompletions,
        Api::OpenAiResponses,
        Api::GoogleGenerativeAi,
    ] {
        let mut ctx = conversation(api.as_str(), "mock", "target-model");
        ctx.messages[2] =
            ToolResultMessage::text("call|with|pipes-0001", "read", " \r\n\t", false).into();
        let body = send(api, &ctx, StreamOptions::default()).await.body;
        assert_eq!(outputs(api, &body), [json!("(no output)")], "{api}: {body}");
    }
}
