//! A llama.cpp router through the real HTTP client: listing, loading,
//! unloading and downloading models, and waiting for them, against the
//! scripted server acting as the router.

use std::time::Duration;

use makai_ai::CancellationToken;
use makai_ai::catalog::llama_cpp::{LlamaCppError, Router, Wait};
use makai_mockllm::{MockServer, Scenario};
use serde_json::json;

async fn router() -> (MockServer, Router) {
    let server = MockServer::start(Scenario::new()).await.unwrap();
    server.act_as_llama_router(
        json!([
            {"id": "warm", "status": {"value": "loaded"}, "meta": {"n_ctx": 8192}},
            {"id": "cold", "status": {"value": "unloaded"}},
            {"id": "broken", "status": {"value": "unloaded"}, "failsToLoad": true}
        ]),
        Some(false),
    );
    let router = Router::new(&server.base_url_v1(), Some("k")).unwrap();
    (server, router)
}

fn status_of(list: &[makai_ai::catalog::llama_cpp::RouterEntry], id: &str) -> String {
    list.iter().find(|e| e.id == id).unwrap().status.clone()
}

#[tokio::test]
async fn a_model_is_loaded_and_unloaded_and_the_models_follow() {
    let (_server, router) = router().await;
    let ids = |models: Vec<makai_ai::Model>| models.into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(router.models().await.unwrap()), ["warm"]);

    router.load("cold").await.unwrap();
    let mut seen = Vec::new();
    router
        .wait("cold", Wait::Loaded, &CancellationToken::new(), |e| {
            seen.push(e.status.clone())
        })
        .await
        .unwrap();
    assert_eq!(seen.last().map(String::as_str), Some("loaded"));
    assert_eq!(ids(router.models().await.unwrap()), ["warm", "cold"]);

    router.unload("warm").await.unwrap();
    router
        .wait("warm", Wait::Unloaded, &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert_eq!(status_of(&router.list().await.unwrap(), "warm"), "unloaded");
    assert_eq!(ids(router.models().await.unwrap()), ["cold"]);
}

#[tokio::test]
async fn a_failed_load_says_how_the_model_exited() {
    let (_server, router) = router().await;
    router.load("broken").await.unwrap();
    let err = router
        .wait("broken", Wait::Loaded, &CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlamaCppError::LoadFailed {
                exit_code: Some(1),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "broken failed to load (exit code 1)");
}

#[tokio::test]
async fn a_download_reports_its_progress_and_ends_as_an_unloaded_model() {
    let (_server, router) = router().await;
    router.download("org/repo-GGUF:Q4_K_M").await.unwrap();
    let mut progress = Vec::new();
    router
        .wait(
            "org/repo-GGUF:Q4_K_M",
            Wait::Downloaded,
            &CancellationToken::new(),
            |e| progress.extend(e.download),
        )
        .await
        .unwrap();
    assert!(
        progress.iter().any(|p| p.done > 0 && p.done < p.total),
        "{progress:?}"
    );
    assert_eq!(
        status_of(&router.list().await.unwrap(), "org/repo-GGUF:Q4_K_M"),
        "unloaded"
    );
}

#[tokio::test]
async fn a_wait_is_cancelled_and_unknown_models_are_the_routers_error() {
    let (_server, router) = router().await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = tokio::time::timeout(
        Duration::from_secs(5),
        router.wait("never-listed", Wait::Loaded, &cancel, |_| {}),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, LlamaCppError::Cancelled), "{err:?}");
    let err = router.load("nope").await.unwrap_err();
    assert!(
        err.to_string()
            .ends_with("answered HTTP 404: model nope not found"),
        "{err}"
    );
}
