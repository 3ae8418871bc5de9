//! `compat` in `models.json`: makai's own flags (`supportsNamedToolChoice`,
//! `supportsTools`) survive being laid over a model that has compat flags
//! already, as pi's flags do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_ai::models_json::{apply, parse};
use makai_ai::{Api, CompatFlags, Model};

#[test]
fn makai_compat_flags_in_model_overrides_are_kept_over_existing_flags() {
    let mut base = Model::custom(
        Api::OpenAiCompletions,
        "ollama",
        "tiny",
        "http://127.0.0.1:11434/v1",
    );
    base.compat = Some(CompatFlags {
        supports_store: Some(false),
        ..Default::default()
    });
    assert!(base.can_call_tools());
    let mut models = vec![base];
    let file = parse(
        r#"{ "providers": { "ollama": { "modelOverrides": { "tiny": {
            "compat": { "supportsTools": false, "supportsNamedToolChoice": true }
        } } } } }"#,
    )
    .unwrap();
    apply(file, &mut models).unwrap();
    let compat = models[0].compat.clone().unwrap();
    assert_eq!(compat.supports_store, Some(false), "{compat:?}");
    assert_eq!(compat.supports_tools, Some(false), "{compat:?}");
    assert_eq!(compat.supports_named_tool_choice, Some(true), "{compat:?}");
    assert!(!models[0].can_call_tools());
}
