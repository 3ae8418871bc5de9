//! pi's `/llama` in the interactive UI, driven under tmux against the
//! scripted server acting as a llama.cpp router: the list, loading next to
//! a loaded model, `/model` afterwards, unloading after a yes, a load that
//! fails, a download by name, and `/llama` without a router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, editor_text, tmux_available};
use common::{Env, Mock};
use makai_mockllm::Scenario;
use serde_json::json;

/// Types `/llama`, then `filter` into the list, and Enter on the first row.
fn choose_in_llama(pane: &Pane, filter: &str) {
    pane.type_text("/llama");
    pane.keys(&["Enter"]);
    pane.wait_text("llama.cpp models");
    pane.type_text(filter);
    pane.keys(&["Enter"]);
}

/// Esc on the open `/llama` list, once it is gone from the screen.
fn close_list(pane: &Pane) {
    pane.wait_text("llama.cpp models");
    pane.keys(&["Escape"]);
    pane.wait_for("the list closed", |s| !s.contains("llama.cpp models"));
}

#[test]
fn llama_loads_unloads_and_downloads_a_routers_models() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    mock.server.act_as_llama_router(
        json!([
            {"id": "qwen-warm", "status": {"value": "loaded"}, "meta": {"n_ctx": 32768}},
            {"id": "gemma-cold", "status": {"value": "unloaded"}},
            {"id": "broken-one", "status": {"value": "unloaded"}, "failsToLoad": true}
        ]),
        Some(false),
    );
    let url = mock.v1();
    let env = Env::new();
    let args: Vec<String> = ["--model", "llama.cpp/qwen-warm", "--no-session"]
        .map(String::from)
        .to_vec();
    let pane = Pane::start_with(&env, &args, &[("LLAMA_BASE_URL", url.as_str())]);
    pane.wait_text("Ask anything");

    // The list: loaded first, with its context, then the rest by name.
    pane.type_text("/llama");
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("Download model…");
    let warm = screen.find("qwen-warm").expect("qwen-warm listed");
    let cold = screen.find("gemma-cold").expect("gemma-cold listed");
    assert!(warm < cold, "{screen}");
    assert!(screen.contains("loaded · 33k context"), "{screen}");
    close_list(&pane);

    // Loading next to a loaded model asks first; "Keep loaded" loads it.
    choose_in_llama(&pane, "gemma");
    pane.wait_text("1 model is loaded");
    pane.keys(&["Down", "Enter"]);
    pane.wait_text("Loaded gemma-cold: /model selects it");
    close_list(&pane);
    // /model offers it now.
    pane.type_text("/model gemma");
    pane.keys(&["Enter"]);
    pane.wait_for("gemma-cold in /model", |s| {
        s.lines()
            .any(|l| l.contains("gemma-cold") && l.contains("llama.cpp"))
    });
    pane.keys(&["Escape"]);
    pane.wait_for("/model closed", |s| !s.contains("llama.cpp · "));

    // Unloading asks for a yes.
    choose_in_llama(&pane, "qwen");
    pane.wait_text("Unload qwen-warm?");
    pane.keys(&["Enter"]);
    pane.wait_text("Unloaded qwen-warm");
    close_list(&pane);

    // A load that fails says how the model's server exited.
    choose_in_llama(&pane, "broken");
    pane.wait_text("1 model is loaded");
    pane.keys(&["Down", "Enter"]);
    pane.wait_text("broken-one failed to load (exit code 1)");
    close_list(&pane);

    // "Download model…" puts the command in the editor for a name.
    choose_in_llama(&pane, "Download");
    pane.wait_for("the download command in the editor", |s| {
        editor_text(s) == "/llama download"
    });
    pane.type_text("ggml-org/tiny-GGUF:Q4_K_M");
    pane.keys(&["Enter"]);
    pane.wait_text("Downloaded ggml-org/tiny-GGUF:Q4_K_M");
    let screen = pane.wait_text("llama.cpp models");
    assert!(screen.contains("ggml-org/tiny-GGUF:Q4_K_M"), "{screen}");
    close_list(&pane);

    // What the router was asked, in order.
    let asked: Vec<(String, String)> = mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| {
            (
                r.path.clone(),
                r.body["model"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let pairs: Vec<(&str, &str)> = asked
        .iter()
        .map(|(p, m)| (p.as_str(), m.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("/models/load", "gemma-cold"),
            ("/models/unload", "qwen-warm"),
            ("/models/load", "broken-one"),
            ("/models", "ggml-org/tiny-GGUF:Q4_K_M"),
        ]
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn llama_replaces_the_loaded_models_and_a_stopped_load_brings_them_back() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    mock.server.act_as_llama_router(
        json!([
            {"id": "a-warm", "status": {"value": "loaded"}},
            {"id": "b-cold", "status": {"value": "unloaded"}},
            {"id": "c-slow", "status": {"value": "unloaded"}, "neverLoads": true}
        ]),
        Some(false),
    );
    let url = mock.v1();
    let env = Env::new();
    let args: Vec<String> = ["--model", "llama.cpp/a-warm", "--no-session"]
        .map(String::from)
        .to_vec();
    let pane = Pane::start_with(&env, &args, &[("LLAMA_BASE_URL", url.as_str())]);
    pane.wait_text("Ask anything");

    // "Unload all and load" unloads a-warm first.
    choose_in_llama(&pane, "b-cold");
    pane.wait_text("1 model is loaded");
    pane.keys(&["Enter"]);
    pane.wait_text("Loaded b-cold: /model selects it");
    close_list(&pane);

    // Nothing else loaded: a plain "Load?".
    choose_in_llama(&pane, "b-cold");
    pane.wait_text("Unload b-cold?");
    pane.keys(&["Enter"]);
    pane.wait_text("Unloaded b-cold");
    close_list(&pane);
    choose_in_llama(&pane, "a-warm");
    pane.wait_text("Load a-warm?");
    pane.keys(&["Enter"]);
    pane.wait_text("Loaded a-warm: /model selects it");
    close_list(&pane);

    // A load that does not end: /llama offers to stop it, and the model
    // unloaded for it is loaded again.
    choose_in_llama(&pane, "c-slow");
    pane.wait_text("1 model is loaded");
    pane.keys(&["Enter"]);
    pane.wait_text("Loading c-slow… (/llama stops it)");
    pane.type_text("/llama");
    pane.keys(&["Enter"]);
    pane.wait_text("Stop loading");
    pane.keys(&["Enter"]);
    pane.wait_text("Stopped loading c-slow");
    close_list(&pane);

    let asked: Vec<String> = mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| format!("{} {}", r.path, r.body["model"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        asked,
        [
            "/models/unload a-warm",
            "/models/load b-cold",
            "/models/unload b-cold",
            "/models/load a-warm",
            "/models/unload a-warm",
            "/models/load c-slow",
            "/models/unload c-slow",
            "/models/load a-warm",
        ]
    );
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}

#[test]
fn llama_without_a_router_says_how_to_name_one() {
    if !tmux_available() {
        return;
    }
    let mock = Mock::start(Scenario::new());
    let env = Env::new();
    let pane = Pane::start(&env, &mock.args());
    pane.wait_text("Ask anything");
    pane.type_text("/llama");
    pane.keys(&["Enter"]);
    pane.wait_text("set LLAMA_BASE_URL to it");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
}
