//! `extension_ui_response` records, as pi's docs write them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_rpc::{ExtensionUiResponse, Record};

#[test]
fn extension_ui_response_keeps_its_id() {
    for (line, want) in [
        (
            r#"{"type": "extension_ui_response", "id": "uuid-1", "value": "Allow"}"#,
            ExtensionUiResponse {
                id: "uuid-1".into(),
                value: Some("Allow".into()),
                confirmed: None,
                cancelled: None,
            },
        ),
        (
            r#"{"type": "extension_ui_response", "id": "uuid-2", "confirmed": true}"#,
            ExtensionUiResponse {
                id: "uuid-2".into(),
                value: None,
                confirmed: Some(true),
                cancelled: None,
            },
        ),
        (
            r#"{"type": "extension_ui_response", "id": "uuid-3", "cancelled": true}"#,
            ExtensionUiResponse {
                id: "uuid-3".into(),
                value: None,
                confirmed: None,
                cancelled: Some(true),
            },
        ),
    ] {
        match Record::parse(line.as_bytes()) {
            Ok(Record::UiResponse(got)) => assert_eq!(got, want, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn extension_ui_response_without_id_names_the_field() {
    let err = Record::parse(br#"{"type": "extension_ui_response", "value": "x"}"#).unwrap_err();
    assert_eq!(err.command, "extension_ui_response");
    assert!(err.message.contains("id"), "{}", err.message);
}
