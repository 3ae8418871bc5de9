//! pi's `images.blockImages` setting: an image attached to a prompt reaches
//! an image-capable model, and with the setting it does not (a note says
//! why), while the session keeps the image.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

#[test]
fn block_images_keeps_attached_images_from_the_model_but_not_from_the_session() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("seen")));
    let env = Env::new();
    add_image_model(&env, &mock);
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
    std::fs::write(env.work().join("pic.png"), png).unwrap();
    let run = |env: &Env| {
        let out = env.run(
            &s(&["--model", "lab/eyes", "-p", "@pic.png", "describe"]),
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        mock.requests().last().unwrap().raw_body.clone()
    };

    let body = run(&env);
    assert!(
        body.contains("image_url") && body.contains("data:image/png;base64,"),
        "{body}"
    );

    env.settings(json!({"images": {"blockImages": true, "autoResize": true}}));
    let body = run(&env);
    assert!(
        !body.contains("image_url") && !body.contains("base64"),
        "{body}"
    );
    assert!(
        body.contains("(image omitted: images are blocked by the images.blockImages setting)"),
        "{body}"
    );
    assert!(body.contains("describe"), "{body}");
    // The session file still has the image.
    let files = env.session_files();
    let last = std::fs::read_to_string(files.last().unwrap()).unwrap();
    assert!(last.contains("\"type\":\"image\""), "{last}");
}
