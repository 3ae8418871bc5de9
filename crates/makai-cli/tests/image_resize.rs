//! pi's `images.autoResize` (on by default): an image given with a prompt,
//! a steering or a follow-up message is sent, and saved, at most 2000 by
//! 2000 pixels and 4.5 MiB; one that cannot be made to fit is refused with
//! an error that names it, and nothing is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine;
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::{Value, json};

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// An environment with an image-capable model `lab/eyes` on the mock.
fn eyes(mock: &Mock) -> Env {
    let env = Env::new();
    add_image_model(&env, mock);
    env
}

fn wide_png() -> Vec<u8> {
    let img = image::RgbImage::from_fn(3000, 1000, |x, _| image::Rgb([(x % 256) as u8, 40, 90]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// The bytes of each image of an OpenAI chat request's messages.
fn sent_images(body: &Value) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for part in m["content"].as_array().into_iter().flatten() {
            if let Some(url) = part["image_url"]["url"].as_str() {
                let data = url.split_once(";base64,").unwrap().1;
                out.push(b64().decode(data).unwrap());
            }
        }
    }
    out
}

fn dimensions(bytes: &[u8]) -> (u32, u32) {
    let img = image::load_from_memory(bytes).unwrap();
    (img.width(), img.height())
}

#[test]
fn an_attached_image_is_sent_and_saved_fitted_unless_auto_resize_is_off() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("seen")));
    let env = eyes(&mock);
    let png = wide_png();
    std::fs::write(env.work().join("wide.png"), &png).unwrap();
    let run = |env: &Env| {
        let out = env.run(
            &s(&["--model", "lab/eyes", "-p", "@wide.png", "describe"]),
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        sent_images(&mock.requests().last().unwrap().body)
    };

    let sent = run(&env);
    assert_eq!(sent.len(), 1);
    assert_eq!(dimensions(&sent[0]), (2000, 667));
    // The session keeps what was sent, not the original.
    let session = std::fs::read_to_string(env.session_files().last().unwrap()).unwrap();
    assert!(
        session.contains(&b64().encode(&sent[0])),
        "the fitted image is saved"
    );
    assert!(
        !session.contains(&b64().encode(&png)),
        "the original is not saved"
    );

    env.settings(json!({"images": {"autoResize": false}}));
    let sent = run(&env);
    assert_eq!(sent, vec![png]);
}

#[test]
fn an_image_that_cannot_be_fitted_fails_the_rpc_prompt_and_steer_and_sends_nothing() {
    let mock = Mock::start(Scenario::new().with_fallback(ScriptedResponse::text("seen")));
    let env = eyes(&mock);
    // 5 MB that calls itself a PNG: unreadable, and over the 4.5 MiB limit.
    let mut junk = b"\x89PNG\r\n\x1a\n".to_vec();
    junk.resize(5_000_000, 7);
    let image = json!({"type": "image", "data": b64().encode(&junk), "mimeType": "image/png"});
    let mut rpc = Rpc::start(&env, &s(&["--model", "lab/eyes"]));
    let r = rpc.call(json!({"type": "prompt", "message": "look", "images": [image.clone()]}));
    assert_eq!(r["success"], false, "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("image 1") && error.contains("cannot be read") && error.contains("limit"),
        "{error}"
    );
    for kind in ["steer", "follow_up"] {
        let r = rpc.call(json!({"type": kind, "message": "look", "images": [image.clone()]}));
        assert_eq!(r["success"], false, "{kind}: {r}");
    }
    // A fitting image in the same session goes through.
    let small = json!({"type": "image", "data": b64().encode(wide_png()), "mimeType": "image/png"});
    let r = rpc.call(json!({"type": "prompt", "message": "look again", "images": [small]}));
    assert_eq!(r["success"], true, "{r}");
    rpc.wait_event("agent_end");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "only the fitting prompt was sent");
    let sent = sent_images(&requests[0].body);
    assert_eq!(sent.len(), 1);
    assert_eq!(dimensions(&sent[0]), (2000, 667));
    assert!(
        !request_text(&requests[0]).contains("\"look\""),
        "the refused prompt is not in the history"
    );
}
