//! The ConverseStream request body and URL.

use serde_json::{Value, json};

use crate::context::{Context, ToolDefinition};
use crate::credentials::Credential;
use crate::message::{
    AssistantContent, AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage,
    UserContent, UserMessage,
};
use crate::model::{Api, Model};
use crate::options::{CacheRetention, StreamOptions, ThinkingLevel, ToolChoice};
use crate::provider::WireApi;

fn model() -> Model {
    let mut m = Model::custom(
        Api::BedrockConverseStream,
        "amazon-bedrock",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
    );
    m.reasoning = true;
    m.max_tokens = 64_000;
    m
}

fn build(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    cred: Option<&Credential>,
) -> (String, Vec<(String, String)>, Value) {
    let wire = super::BedrockConverseStream
        .build_request(model, context, options, cred)
        .unwrap();
    (
        wire.url,
        wire.headers,
        serde_json::from_slice(&wire.body).unwrap(),
    )
}

fn conversation(m: &Model) -> Context {
    let call = ToolCall::new(
        "tooluse_1",
        "read",
        json!({"path": "a.txt"}).as_object().unwrap().clone(),
    );
    let assistant = AssistantMessage {
        api: m.api.as_str().into(),
        provider: m.provider.clone(),
        model: m.id.clone(),
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "I should read it.".into(),
                thinking_signature: Some("sig-1".into()),
                redacted: false,
            }),
            AssistantContent::Text(TextContent {
                text: "Reading.".into(),
                text_signature: None,
            }),
            AssistantContent::ToolCall(call),
        ],
        ..Default::default()
    };
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: vec![
            UserMessage::text("Read a.txt").into(),
            assistant.into(),
            ToolResultMessage::text("tooluse_1", "read", "hello", false).into(),
        ],
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

#[test]
fn url_encodes_inference_profile_ids_as_one_segment() {
    let m = model();
    let (url, headers, _) = build(&m, &conversation(&m), &StreamOptions::default(), None);
    assert_eq!(
        url,
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "accept" && v == "application/vnd.amazon.eventstream")
    );
    assert!(
        !headers.iter().any(|(k, _)| k == "authorization"),
        "AWS credentials sign later"
    );
    let mut arn = m.clone();
    arn.id = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc".into();
    let (url, _, _) = build(&arn, &conversation(&m), &StreamOptions::default(), None);
    assert!(url.ends_with("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc/converse-stream"), "{url}");
}

#[test]
fn bedrock_api_keys_are_bearer_tokens() {
    let m = model();
    let key = Credential::ApiKey("bedrock-api-key-1".into());
    let (_, headers, _) = build(&m, &conversation(&m), &StreamOptions::default(), Some(&key));
    assert!(headers.contains(&("authorization".into(), "Bearer bedrock-api-key-1".into())));
}

#[test]
fn turns_tools_reasoning_and_cache_points() {
    let m = model();
    let options = StreamOptions {
        cache_retention: CacheRetention::Long,
        ..Default::default()
    };
    let (_, _, body) = build(&m, &conversation(&m), &options, None);
    assert_eq!(
        body["system"],
        json!([{"text": "Be brief."}, {"cachePoint": {"type": "default", "ttl": "1h"}}])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["content"][0], json!({"text": "Read a.txt"}));
    assert_eq!(
        messages[1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "I should read it.", "signature": "sig-1"}}})
    );
    assert_eq!(
        messages[1]["content"][2],
        json!({"toolUse": {"toolUseId": "tooluse_1", "name": "read", "input": {"path": "a.txt"}}})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "hello"}], "status": "success"}})
    );
    assert_eq!(
        messages[2]["content"][1],
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    );
    let tools = body["toolConfig"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["toolSpec"]["name"], "read");
    assert_eq!(
        tools[0]["toolSpec"]["inputSchema"]["json"]["type"],
        "object"
    );
    assert_eq!(
        tools[1],
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    );
    assert_eq!(body["inferenceConfig"]["maxTokens"], 64_000);
}

#[test]
fn thinking_budget_and_tool_choice() {
    let m = model();
    let options = StreamOptions {
        thinking: ThinkingLevel::Medium,
        temperature: Some(0.5),
        ..Default::default()
    };
    let (_, _, body) = build(&m, &conversation(&m), &options, None);
    let extra = &body["additionalModelRequestFields"];
    assert_eq!(
        extra["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(
        extra["anthropic_beta"],
        json!(["interleaved-thinking-2025-05-14"])
    );
    assert!(
        body["inferenceConfig"].get("temperature").is_none(),
        "no temperature with thinking"
    );

    let forced = StreamOptions {
        tool_choice: Some(ToolChoice::Tool("read".into())),
        thinking: ThinkingLevel::High,
        ..Default::default()
    };
    let (_, _, body) = build(&m, &conversation(&m), &forced, None);
    assert_eq!(
        body["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "read"}})
    );
    assert!(
        body.get("additionalModelRequestFields").is_none(),
        "no thinking with a forced tool"
    );
    let none = StreamOptions {
        tool_choice: Some(ToolChoice::None),
        ..Default::default()
    };
    let (_, _, body) = build(&m, &conversation(&m), &none, None);
    assert!(body.get("toolConfig").is_none());
}

#[test]
fn other_models_get_reasoning_as_text_and_no_cache_points() {
    let mut m = model();
    m.id = "meta.llama3-70b-instruct-v1:0".into();
    let ctx = conversation(&model());
    let (_, _, body) = build(&m, &ctx, &StreamOptions::default(), None);
    let assistant = &body["messages"][1]["content"];
    assert!(assistant.to_string().contains("I should read it."));
    assert!(!assistant.to_string().contains("reasoningContent"));
    assert!(!body.to_string().contains("cachePoint"));
}

#[test]
fn images_become_bytes_blocks() {
    let mut m = model();
    m.input = vec![crate::model::Modality::Text, crate::model::Modality::Image];
    let ctx = Context {
        messages: vec![
            UserMessage {
                content: vec![
                    UserContent::text("look"),
                    UserContent::image("aGVsbG8=", "image/png"),
                ],
                ..UserMessage::text("")
            }
            .into(),
        ],
        ..Default::default()
    };
    let (_, _, body) = build(&m, &ctx, &StreamOptions::default(), None);
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "png", "source": {"bytes": "aGVsbG8="}}})
    );
}

/// pi's #10794: Bedrock refuses images in a failed tool result; they go
/// after the turn's tool results, the result saying so.
#[test]
fn a_failed_tool_results_images_follow_the_turns_tool_results() {
    let mut m = model();
    m.input = vec![crate::model::Modality::Text, crate::model::Modality::Image];
    let mut failed = ToolResultMessage::text("tooluse_1", "render", "render failed", true);
    failed
        .content
        .push(UserContent::image("aGVsbG8=", "image/png"));
    let mut args = serde_json::Map::new();
    args.insert("path".into(), json!("a"));
    let ctx = Context {
        messages: vec![
            UserMessage::text("Render it").into(),
            AssistantMessage {
                content: vec![AssistantContent::ToolCall(ToolCall::new(
                    "tooluse_1",
                    "render",
                    args,
                ))],
                stop_reason: crate::StopReason::ToolUse,
                ..Default::default()
            }
            .into(),
            failed.into(),
        ],
        ..Default::default()
    };
    let (_, _, body) = build(&m, &ctx, &StreamOptions::default(), None);
    // (The prompt cache's point follows them.)
    assert_eq!(
        body["messages"][2]["content"].as_array().unwrap()[..2],
        json!([
            {"toolResult": {"toolUseId": "tooluse_1", "status": "error", "content": [
                {"text": "render failed"},
                {"text": crate::providers::anthropic::IMAGES_AFTER}
            ]}},
            {"image": {"format": "png", "source": {"bytes": "aGVsbG8="}}}
        ])
        .as_array()
        .unwrap()[..]
    );
}
