//! AWS event-stream framing on the AWS SDK's own frame test data (smithy-rs's
//! `aws-smithy-eventstream/test_data`, see `fixtures/SOURCES.md`), through
//! makai's Bedrock decoder: every valid frame is read (and, being no Bedrock
//! event, ignored), every invalid one is a clear framing error, at any split.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use makai_ai::{Api, Model, StopReason, decode_body};

fn model() -> Model {
    Model::custom(
        Api::BedrockConverseStream,
        "amazon-bedrock",
        "m",
        "http://127.0.0.1:1",
    )
}

#[test]
fn valid_frames_decode_and_invalid_ones_are_framing_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eventstream");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        for split in [bytes.len(), 5, 1] {
            let (_, msg) = decode_body(&model(), bytes.chunks(split));
            assert_eq!(msg.stop_reason, StopReason::Error, "{name}");
            let e = msg.error_message.unwrap();
            if name.starts_with("valid") {
                // Framed correctly: the decoder read it and waited for messageStop.
                assert!(
                    e.contains("ended before messageStop"),
                    "{name} (split {split}): {e}"
                );
            } else {
                assert!(
                    e.contains("corrupt AWS event-stream frame")
                        || e.contains("ended inside a frame"),
                    "{name} (split {split}): {e}"
                );
            }
        }
        seen += 1;
    }
    assert_eq!(seen, 11);
}
