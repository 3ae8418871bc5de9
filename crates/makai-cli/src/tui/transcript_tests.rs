//! Tests of [`super::Transcript`]: items built from streamed agent events.

use std::sync::Arc;

use makai_agent::{AgentEvent, AgentMessage, ToolOutput};
use makai_ai::{AssistantContent, AssistantMessage, AssistantMessageEvent as E, StopReason};
use serde_json::json;

use super::*;
use crate::tui::summary;

fn update(ev: E) -> AgentEvent {
    AgentEvent::MessageUpdate {
        message: None,
        assistant_message_event: ev,
    }
}

fn start_assistant() -> AgentEvent {
    AgentEvent::MessageStart {
        message: Arc::new(AssistantMessage::default().into()),
    }
}

fn kinds(t: &Transcript) -> Vec<ItemKind> {
    t.items().iter().map(|i| i.kind.clone()).collect()
}

#[test]
fn streams_text_thinking_and_a_tool_call_in_block_order() {
    let mut t = Transcript::default();
    t.apply(&AgentEvent::MessageStart {
        message: Arc::new(AgentMessage::user("hello")),
    });
    t.apply(&start_assistant());
    t.apply(&update(E::ThinkingStart { content_index: 0 }));
    t.apply(&update(E::ThinkingDelta {
        content_index: 0,
        delta: "hmm".into(),
    }));
    t.apply(&update(E::TextStart { content_index: 1 }));
    for d in ["Hel", "lo"] {
        t.apply(&update(E::TextDelta {
            content_index: 1,
            delta: d.into(),
        }));
    }
    t.apply(&update(E::ToolcallStart {
        content_index: 2,
        id: "c1".into(),
        name: "read".into(),
    }));
    t.apply(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        args: Arc::new(json!({"path": "a.txt"})),
    });
    t.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        result: Arc::new(ToolOutput::text("contents")),
        is_error: false,
        duration_ms: Some(3),
    });
    let k = kinds(&t);
    assert_eq!(k.len(), 4);
    assert_eq!(k[0], ItemKind::User("hello".into()));
    assert_eq!(k[1], ItemKind::Thinking("hmm".into()));
    assert_eq!(k[2], ItemKind::Text("Hello".into()));
    let ItemKind::Tool(tool) = &k[3] else {
        panic!("not a tool: {:?}", k[3]);
    };
    assert_eq!(tool.args, json!({"path": "a.txt"}));
    assert_eq!(tool.result.as_deref(), Some("contents"));
    assert_eq!(tool.state, ToolState::Done);
}

#[test]
fn a_retry_drops_the_void_attempt_and_an_abort_leaves_a_notice() {
    let mut t = Transcript::default();
    t.apply(&start_assistant());
    t.apply(&update(E::TextDelta {
        content_index: 0,
        delta: "partial".into(),
    }));
    t.apply(&update(E::Retry {
        attempt: 1,
        delay_ms: 500,
        error_message: "overloaded".into(),
    }));
    t.apply(&update(E::TextDelta {
        content_index: 0,
        delta: "fresh".into(),
    }));
    let k = kinds(&t);
    assert!(matches!(&k[0], ItemKind::Notice(Level::Warning, m) if m.contains("overloaded")));
    assert_eq!(k[1], ItemKind::Text("fresh".into()));
    assert_eq!(k.len(), 2);

    let mut t = Transcript::default();
    t.apply(&start_assistant());
    t.apply(&update(E::TextStart { content_index: 0 }));
    let aborted = AssistantMessage {
        stop_reason: StopReason::Aborted,
        ..Default::default()
    };
    t.apply(&AgentEvent::MessageEnd {
        message: Arc::new(aborted.into()),
    });
    assert_eq!(
        kinds(&t),
        [ItemKind::Notice(Level::Warning, "Aborted.".into())]
    );
}

/// A block streams open (its markdown may still grow) and is closed, with a
/// new revision so that its rows are drawn again, when its message ends
/// (Mermaid's `"final"` mode draws then).
#[test]
fn a_streamed_block_is_open_until_its_message_ends() {
    let mut t = Transcript::default();
    t.apply(&start_assistant());
    t.apply(&update(E::TextStart { content_index: 0 }));
    t.apply(&update(E::TextDelta {
        content_index: 0,
        delta: "Hello".into(),
    }));
    let (open, rev) = (t.items()[0].open, t.items()[0].rev);
    assert!(open);
    let ended = AssistantMessage {
        content: vec![AssistantContent::Text(makai_ai::TextContent {
            text: "Hello".into(),
            text_signature: None,
        })],
        stop_reason: StopReason::Stop,
        ..Default::default()
    };
    t.apply(&AgentEvent::MessageEnd {
        message: Arc::new(ended.into()),
    });
    assert_eq!(kinds(&t), [ItemKind::Text("Hello".into())]);
    assert!(!t.items()[0].open);
    assert!(t.items()[0].rev > rev);
    // Items rebuilt from a session were never open.
    t.push(ItemKind::Text("saved".into()));
    assert!(!t.items()[1].open);
}

#[test]
fn rebuilds_from_a_transcript_with_results_attached_to_calls() {
    let call: makai_ai::ToolCall = serde_json::from_value(json!({
        "type": "toolCall", "id": "c9", "name": "ls", "arguments": {"path": "src"}
    }))
    .unwrap();
    let assistant = AssistantMessage {
        content: vec![AssistantContent::ToolCall(call)],
        stop_reason: StopReason::ToolUse,
        ..Default::default()
    };
    let result = makai_ai::ToolResultMessage::text("c9", "ls", "main.rs", false);
    let failed = AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some("HTTP 500".into()),
        ..Default::default()
    };
    let mut t = Transcript::default();
    t.rebuild(&[
        AgentMessage::user("list"),
        assistant.into(),
        makai_ai::Message::ToolResult(result).into(),
        failed.into(),
    ]);
    let k = kinds(&t);
    assert_eq!(k.len(), 3);
    let ItemKind::Tool(tool) = &k[1] else {
        panic!("not a tool: {:?}", k[1]);
    };
    assert_eq!(tool.result.as_deref(), Some("main.rs"));
    assert!(matches!(&k[2], ItemKind::Notice(Level::Error, m) if m.contains("HTTP 500")));
}

/// A user message's images are kept for drawing once images are drawn,
/// and made again when the transcript is rebuilt (a session switch).
#[test]
fn a_user_message_s_images_are_kept_when_images_are_drawn() {
    use base64::Engine;
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image::RgbImage::new(30, 10))
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
    let mut user = makai_ai::UserMessage::text("see");
    user.content
        .push(UserContent::Image(makai_ai::ImageContent {
            data,
            mime_type: "image/png".into(),
        }));
    let message = AgentMessage::Llm(Message::User(user));
    let mut notes = Transcript::default();
    notes.apply(&AgentEvent::MessageStart {
        message: Arc::new(message.clone()),
    });
    assert!(notes.items()[0].images.is_empty() && notes.images().is_empty());
    assert_eq!(
        kinds(&notes),
        [ItemKind::User("see\n[1 image(s) attached]".into())]
    );

    let mut t = Transcript::default();
    t.draw_images(crate::tui::images::ImageMaker::new(
        crate::tui::images::Protocol::Kitty,
        60,
        Some((10, 20)),
    ));
    t.apply(&AgentEvent::MessageStart {
        message: Arc::new(message.clone()),
    });
    assert_eq!(t.items()[0].images.len(), 1);
    assert_eq!(t.images().len(), 1);
    let first = t.images()[0].id;
    t.rebuild(&[message]);
    assert_eq!(t.images().len(), 1);
    assert_ne!(t.images()[0].id, first, "a new image for the new items");
}

#[test]
fn a_skill_invocation_is_a_collapsed_block_and_the_text_after_it_the_message() {
    let mut t = Transcript::default();
    let invoked = "<skill name=\"review\" location=\"/s/review/SKILL.md\">\nReferences are relative to /s/review.\n\nCheck it.\n</skill>\n\nthe diff please";
    t.apply(&AgentEvent::MessageStart {
        message: Arc::new(AgentMessage::user(invoked)),
    });
    let skill = ItemKind::Summary(summary::Summary::new(
        summary::SummaryKind::Skill {
            name: "review".into(),
        },
        "References are relative to /s/review.\n\nCheck it.",
    ));
    assert_eq!(
        kinds(&t),
        [skill.clone(), ItemKind::User("the diff please".into())]
    );
    // The same from a session read back; a skill alone is the block alone.
    t.rebuild(&[AgentMessage::user(
        "<skill name=\"review\" location=\"/s/review/SKILL.md\">\nReferences are relative to /s/review.\n\nCheck it.\n</skill>",
    )]);
    assert_eq!(kinds(&t), [skill]);
}

#[test]
fn compaction_and_branch_summaries_are_collapsed_blocks_a_click_toggles() {
    let mut t = Transcript::default();
    t.rebuild(&[
        AgentMessage::CompactionSummary(makai_agent::CompactionSummaryMessage {
            summary: "We fixed the build.".into(),
            tokens_before: 52_000,
            timestamp: Default::default(),
        }),
        AgentMessage::BranchSummary(makai_agent::BranchSummaryMessage {
            summary: "Tried another parser.".into(),
            from_id: None,
            timestamp: Default::default(),
        }),
        AgentMessage::user("go on"),
    ]);
    let k = kinds(&t);
    assert!(matches!(
        &k[0],
        ItemKind::Summary(s) if s.kind == summary::SummaryKind::Compaction { tokens_before: 52_000 }
            && s.body == "We fixed the build." && s.expanded.is_none()
    ));
    assert!(matches!(&k[1], ItemKind::Summary(s) if s.kind == summary::SummaryKind::Branch));
    let rev = t.items()[0].rev;
    assert!(t.toggle_summary(0, false));
    assert!(t.items()[0].rev > rev, "drawn again");
    assert!(matches!(&t.items()[0].kind, ItemKind::Summary(s) if s.expanded == Some(true)));
    // With the tool output expanded, a click collapses it.
    assert!(t.toggle_summary(1, true));
    assert!(matches!(&t.items()[1].kind, ItemKind::Summary(s) if s.expanded == Some(false)));
    assert!(
        !t.toggle_summary(2, false),
        "a user message does not toggle"
    );
}

#[test]
fn ctrl_o_makes_every_block_follow_it_again() {
    let mut t = Transcript::default();
    t.rebuild(&[AgentMessage::BranchSummary(
        makai_agent::BranchSummaryMessage {
            summary: "Tried another parser.".into(),
            from_id: None,
            timestamp: Default::default(),
        },
    )]);
    t.toggle_summary(0, false);
    let rev = t.items()[0].rev;
    t.unset_summary_choices();
    assert!(matches!(&t.items()[0].kind, ItemKind::Summary(s) if s.expanded.is_none()));
    assert!(t.items()[0].rev > rev);
}

#[test]
fn a_shell_command_read_back_shows_as_it_did_when_it_ran() {
    let mut t = Transcript::default();
    t.rebuild(&[AgentMessage::BashExecution(
        makai_agent::BashExecutionMessage {
            command: "make test".into(),
            output: "ok 3 tests\n".into(),
            exit_code: Some(2),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            exclude_from_context: None,
            timestamp: Default::default(),
        },
    )]);
    assert_eq!(
        kinds(&t),
        [
            ItemKind::Notice(Level::Info, "$ make test".into()),
            ItemKind::Notice(Level::Warning, "ok 3 tests\n(exit code 2)".into()),
        ]
    );
}

#[test]
fn a_custom_message_shows_under_its_type_when_it_is_to_be_displayed() {
    let mut t = Transcript::default();
    let mut hidden = makai_agent::CustomMessage::text("bookkeeping", "not for you");
    hidden.display = false;
    t.rebuild(&[
        AgentMessage::Custom(makai_agent::CustomMessage::text(
            "deploy-status",
            "Deployed v2.",
        )),
        AgentMessage::Custom(hidden),
    ]);
    assert_eq!(
        kinds(&t),
        [ItemKind::Summary(summary::Summary::new(
            summary::SummaryKind::Custom {
                custom_type: "deploy-status".into()
            },
            "Deployed v2."
        ))]
    );
    assert!(!t.toggle_summary(0, false), "always shown whole");
}
