//! Choosing the model: the catalog (built-in, then pi's
//! `~/.pi/agent/models.json` when present, then `<makai home>/models.json`),
//! `--model provider/id[:thinking]`, `--provider`, ad-hoc `--base-url`/`--api`
//! endpoints, and the friendly message for a user without any key.

use std::path::Path;

use makai_ai::catalog::ModelRegistry;
use makai_ai::{Model, ThinkingLevel};

use crate::error::CliError;
use makai_auth::KeyResolver;

/// Providers offered first when nothing was chosen, in this order.
const PREFERRED_PROVIDERS: [&str; 3] = ["anthropic", "openai", "google"];

/// The catalog: built-in models, pi's `models.json` (a broken one is skipped
/// with a warning: it belongs to another program), then `<home>/models.json`
/// (a broken one is an error), so makai's own file wins.
pub fn load_registry(home: Option<&Path>) -> Result<ModelRegistry, CliError> {
    let mut registry = ModelRegistry::builtin();
    if let Some(pi) = makai_coding::resources::pi_agent_dir() {
        let path = pi.join("models.json");
        if let Err(e) = registry.load_file(&path) {
            tracing::warn!("{e}");
            eprintln!("makai: pi's models.json skipped: {e}");
        }
    }
    if let Some(home) = home {
        registry
            .load_file(&home.join("models.json"))
            .map_err(|e| CliError::config(e.to_string()))?;
    }
    Ok(registry)
}

/// How long the llama.cpp router gets to list its models at start-up.
const LLAMA_CPP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The llama.cpp router `LLAMA_BASE_URL` names (pi's built-in `llama.cpp`
/// provider, [`makai_ai::catalog::llama_cpp`]), asked with the provider's
/// key as every request of its models is: `auth.json`'s (`/login llama.cpp
/// KEY`), else `LLAMA_API_KEY`, else none. `None` without the variable.
pub async fn llama_cpp_router(
    home: Option<&Path>,
) -> Option<Result<makai_ai::catalog::llama_cpp::Router, makai_ai::catalog::llama_cpp::LlamaCppError>>
{
    use makai_ai::catalog::llama_cpp::{BASE_URL_ENV, PROVIDER, Router};
    let url = std::env::var(BASE_URL_ENV).ok()?;
    if url.trim().is_empty() {
        return None;
    }
    let key = KeyResolver::new(home.map(Path::to_path_buf), None, None)
        .resolve(PROVIDER)
        .await
        .ok()
        .flatten()
        .map(|(key, _)| key.expose().to_string());
    Some(Router::new(&url, key.as_deref()))
}

/// Adds the models of the router [`llama_cpp_router`] names that can
/// answer now. Without `LLAMA_BASE_URL` nothing is asked; a router that
/// cannot be asked is a warning (returned), not an error: the other models
/// still run.
pub async fn add_llama_cpp_models(
    registry: &mut ModelRegistry,
    home: Option<&Path>,
) -> Option<String> {
    let listed = match llama_cpp_router(home).await? {
        Ok(router) => router.with_timeout(LLAMA_CPP_TIMEOUT).models().await,
        Err(e) => Err(e),
    };
    match listed {
        Ok(models) => {
            registry.replace_provider(makai_ai::catalog::llama_cpp::PROVIDER, models);
            None
        }
        Err(e) => Some(format!("{e}; its models are not listed")),
    }
}

/// Splits a `:thinking` suffix off a model spec when the suffix is a thinking
/// level (`claude-sonnet-4-5:high`); ids with other colons (`qwen2.5:7b`) are kept.
pub fn split_thinking(spec: &str) -> (String, Option<ThinkingLevel>) {
    if let Some((head, tail)) = spec.rsplit_once(':')
        && let Ok(level) = tail.parse::<ThinkingLevel>()
    {
        return (head.to_string(), Some(level));
    }
    (spec.to_string(), None)
}

/// What the user asked for, from flags, the agent spec, settings and the session.
#[derive(Clone, Debug, Default)]
pub struct ModelRequest {
    /// `--model`.
    pub model: Option<String>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--base-url` and `--api`.
    pub endpoint: Option<(String, makai_ai::Api)>,
    /// The local model's server program, when the endpoint is makai's local model.
    pub local_runtime: Option<makai_local::Runtime>,
    /// The model recorded in a resumed session (`provider`, `id`).
    pub session_model: Option<(String, String)>,
    /// The agent spec's default model.
    pub spec_model: Option<String>,
    /// Settings `defaultProvider` / `defaultModel`.
    pub settings_model: (Option<String>, Option<String>),
}

/// The chosen model and the thinking level its spec carried.
#[derive(Clone, Debug)]
pub struct ChosenModel {
    /// The model.
    pub model: Model,
    /// A `:thinking` suffix of the spec that chose it.
    pub thinking: Option<ThinkingLevel>,
}

fn find(registry: &ModelRegistry, provider: Option<&str>, spec: &str) -> Option<Model> {
    match provider {
        Some(p) => registry
            .find(&format!("{p}/{spec}"))
            .filter(|m| m.provider == p)
            .or_else(|| {
                registry
                    .models()
                    .iter()
                    .find(|m| m.provider == p && m.id == spec)
            })
            .cloned(),
        None => registry.find(spec).cloned(),
    }
}

/// Picks the model (see the module docs for the order).
pub async fn choose(
    request: &ModelRequest,
    registry: &ModelRegistry,
    keys: &KeyResolver,
) -> Result<ChosenModel, CliError> {
    if let Some((url, api)) = &request.endpoint {
        let (id, thinking) = split_thinking(request.model.as_deref().unwrap_or_default());
        let provider = request.provider.clone().unwrap_or_else(|| "custom".into());
        let mut model = find(registry, Some(&provider), &id).unwrap_or_else(|| {
            let mut m = Model::custom(*api, provider.clone(), id.clone(), url.clone());
            if provider == makai_local::PROVIDER {
                // The built-in local model (unless models.json describes it).
                m.context_window = makai_local::CONTEXT_WINDOW;
                m.max_tokens = makai_local::MAX_TOKENS;
            }
            m
        });
        model.api = *api;
        model.base_url = url.clone();
        if let Some(runtime) = request.local_runtime {
            // llama.cpp's server and llama-cpp-python's force a tool call for
            // different `tool_choice` forms; models.json may still say otherwise.
            let compat = model.compat.get_or_insert_default();
            compat.supports_named_tool_choice = compat
                .supports_named_tool_choice
                .or(Some(runtime.honours_named_tool_choice()));
            // The 0.5B model cannot use tools reliably, and their descriptions
            // alone fill most of its 4,096-token window: its runs get none
            // unless --tools names some (or models.json says it can).
            compat.supports_tools = compat.supports_tools.or(Some(false));
        }
        return Ok(ChosenModel { model, thinking });
    }
    if let Some(spec) = &request.model {
        let (id, thinking) = split_thinking(spec);
        if request.provider.is_none()
            && let Some(model) = offered_by_several(registry, keys, spec, &id).await?
        {
            return Ok(ChosenModel { model, thinking });
        }
        return find(registry, request.provider.as_deref(), &id)
            .map(|model| ChosenModel { model, thinking })
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "--model '{spec}' is not a known model{}. Run `makai --list-models` to see them, add it to models.json, \
                     or use --base-url URL --api API --model ID for any other endpoint",
                    request
                        .provider
                        .as_deref()
                        .map(|p| format!(" of provider '{p}'"))
                        .unwrap_or_default()
                ))
            });
    }
    if let Some(p) = &request.provider {
        return registry
            .default_for_provider(p)
            .cloned()
            .map(|model| ChosenModel {
                model,
                thinking: None,
            })
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "--provider '{p}' has no models in the catalog; run `makai --list-models`"
                ))
            });
    }
    let mut candidates: Vec<(Option<String>, String)> = Vec::new();
    if let Some((p, id)) = &request.session_model {
        candidates.push((Some(p.clone()), id.clone()));
    }
    if let Some(spec) = &request.spec_model {
        candidates.push((None, spec.clone()));
    }
    match &request.settings_model {
        (p, Some(id)) => candidates.push((p.clone(), id.clone())),
        (Some(p), None) => {
            if let Some(m) = registry.default_for_provider(p) {
                candidates.push((Some(p.clone()), m.id.clone()));
            }
        }
        _ => {}
    }
    for (provider, spec) in candidates {
        let (id, thinking) = split_thinking(&spec);
        if let Some(model) = find(registry, provider.as_deref(), &id) {
            return Ok(ChosenModel { model, thinking });
        }
    }
    // Nothing chosen: the first provider with a key, else a llama.cpp router's model.
    let mut providers: Vec<&str> = PREFERRED_PROVIDERS.to_vec();
    for m in registry.models() {
        if !providers.contains(&m.provider.as_str()) {
            providers.push(&m.provider);
        }
    }
    for p in providers {
        if keys.source(p).await.ok().flatten().is_some()
            && let Some(model) = registry.default_for_provider(p)
        {
            return Ok(ChosenModel {
                model: model.clone(),
                thinking: None,
            });
        }
    }
    // A llama.cpp router needs no key: its models are in the catalog only
    // when it was asked and answered (`add_llama_cpp_models`).
    if let Some(model) = registry
        .models()
        .iter()
        .find(|m| m.provider == makai_ai::catalog::llama_cpp::PROVIDER)
    {
        return Ok(ChosenModel {
            model: model.clone(),
            thinking: None,
        });
    }
    Err(CliError::NoKey(no_credentials_message()))
}

/// A model id (not `provider/id`) that several providers offer (a Claude
/// model on Anthropic, Bedrock and Vertex): the one of the provider with
/// credentials, the preferred providers first; an error naming them when
/// none has any (pi 1.4's choice). `None` when one provider or none
/// offers it by that exact id.
async fn offered_by_several(
    registry: &ModelRegistry,
    keys: &KeyResolver,
    spec: &str,
    id: &str,
) -> Result<Option<Model>, CliError> {
    if registry.find_exact(id).is_some() {
        return Ok(None);
    }
    let mut offering: Vec<&Model> = registry.models().iter().filter(|m| m.id == id).collect();
    offering.dedup_by(|a, b| a.provider == b.provider);
    if offering.len() < 2 {
        return Ok(None);
    }
    let rank = |m: &&Model| {
        PREFERRED_PROVIDERS
            .iter()
            .position(|p| *p == m.provider)
            .unwrap_or(PREFERRED_PROVIDERS.len())
    };
    offering.sort_by_key(rank);
    for m in &offering {
        if keys.source(&m.provider).await.ok().flatten().is_some() {
            return Ok(Some((*m).clone()));
        }
    }
    let names: Vec<String> = offering
        .iter()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .collect();
    Err(CliError::Usage(format!(
        "--model '{spec}' is offered by {} providers and none has a key or login: name one ({}), or sign in to one",
        names.len(),
        names.join(", ")
    )))
}

/// The message for a user with no model and no key at all.
pub fn no_credentials_message() -> String {
    format!(
        "no model to use: makai found no API key and no login.\n\n\
         Pick one:\n\
         \x20 - put a provider key in the environment, e.g. export ANTHROPIC_API_KEY=... \
         (or OPENAI_API_KEY, GEMINI_API_KEY, GROQ_API_KEY, OPENROUTER_API_KEY, ...)\n\
         \x20 - log in with a Claude Pro/Max subscription: makai auth login anthropic\n\
         \x20 - pass a key for one run: makai --api-key KEY --model anthropic/claude-sonnet-4-5\n\
         \x20 - use a local OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio), no key needed:\n\
         \x20     {LOCAL_HINT}\n\
         \x20 - use a llama.cpp router's models: export LLAMA_BASE_URL=http://127.0.0.1:9931\n\n\
         `makai --list-models` shows the known models."
    )
}

/// How to point makai at a local server.
pub const LOCAL_HINT: &str =
    "makai --base-url http://127.0.0.1:11434/v1 --api openai-completions --model NAME";

/// The message for a chosen model whose provider has no key.
pub fn missing_key_message(model: &Model) -> String {
    let var = makai_ai::credentials::env_var_for_provider(&model.provider);
    let env = var
        .map(|v| format!("set {v} in the environment, "))
        .unwrap_or_default();
    let login = match model.provider.as_str() {
        "anthropic" => "run `makai auth login anthropic` (Claude Pro/Max), ",
        "openai-codex" => "run `makai auth login openai-codex` (ChatGPT Plus/Pro), ",
        "github-copilot" => "run `makai auth login github-copilot`, ",
        _ => "",
    };
    format!(
        "No API key for provider '{}' (model {}): {env}{login}or pass --api-key KEY.\n\
         To use a local OpenAI-compatible server instead (no key needed):\n  {LOCAL_HINT}",
        model.provider, model.id
    )
}

/// Prints the catalog (models matching `pattern`, or all).
pub fn list(registry: &ModelRegistry, pattern: &str) -> String {
    let needle = pattern.to_ascii_lowercase();
    let rows: Vec<&Model> = registry
        .models()
        .iter()
        .filter(|m| {
            needle.is_empty()
                || format!("{}/{} {}", m.provider, m.id, m.name)
                    .to_ascii_lowercase()
                    .contains(&needle)
        })
        .collect();
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str(&format!("No model matches '{pattern}'.\n"));
        return out;
    }
    let w = rows
        .iter()
        .map(|m| m.provider.len() + m.id.len() + 1)
        .max()
        .unwrap_or(10)
        .max(5);
    out.push_str(&format!(
        "{:<w$}  {:>9}  {:>8}  {:<8}  {:<6}  {}\n",
        "MODEL", "CONTEXT", "MAX-OUT", "THINKING", "IMAGES", "PRICE $/M in/out"
    ));
    for m in rows {
        out.push_str(&format!(
            "{:<w$}  {:>9}  {:>8}  {:<8}  {:<6}  {}/{}\n",
            format!("{}/{}", m.provider, m.id),
            m.context_window,
            m.max_tokens,
            if m.reasoning { "yes" } else { "no" },
            if m.accepts_images() { "yes" } else { "no" },
            m.cost.input,
            m.cost.output
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_suffix_only_when_it_is_a_level() {
        assert_eq!(
            split_thinking("anthropic/claude-sonnet-4-5:high"),
            (
                "anthropic/claude-sonnet-4-5".into(),
                Some(ThinkingLevel::High)
            )
        );
        assert_eq!(split_thinking("qwen2.5:7b"), ("qwen2.5:7b".into(), None));
    }

    #[tokio::test]
    async fn explicit_model_and_provider_resolve() {
        let reg = ModelRegistry::builtin();
        let keys = KeyResolver::new(None, None, None);
        let req = ModelRequest {
            model: Some("claude-sonnet-4-5:low".into()),
            provider: Some("anthropic".into()),
            ..Default::default()
        };
        let c = choose(&req, &reg, &keys).await.unwrap();
        assert_eq!(c.model.id, "claude-sonnet-4-5");
        assert_eq!(c.thinking, Some(ThinkingLevel::Low));
        let bad = ModelRequest {
            model: Some("nope-model".into()),
            ..Default::default()
        };
        let e = choose(&bad, &reg, &keys).await.unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--model"));
    }

    #[tokio::test]
    async fn the_local_model_names_its_servers_tool_choice_dialect() {
        let reg = ModelRegistry::builtin();
        let keys = KeyResolver::new(None, None, None);
        for (runtime, named) in [
            (makai_local::Runtime::LlamaCppServer, false),
            (makai_local::Runtime::LlamaCppPython, true),
        ] {
            let req = ModelRequest {
                model: Some("qwen2.5-coder-0.5b-instruct-q4_k_m".into()),
                provider: Some(makai_local::PROVIDER.into()),
                endpoint: Some((
                    "http://127.0.0.1:9/v1".into(),
                    makai_ai::Api::OpenAiCompletions,
                )),
                local_runtime: Some(runtime),
                ..Default::default()
            };
            let c = choose(&req, &reg, &keys).await.unwrap();
            let compat = c.model.compat.unwrap();
            assert_eq!(
                compat.supports_named_tool_choice,
                Some(named),
                "{runtime:?}"
            );
            // Its runs get no tools unless --tools names some.
            assert_eq!(compat.supports_tools, Some(false));
        }
    }

    #[test]
    fn listing_filters() {
        let reg = ModelRegistry::builtin();
        let out = list(&reg, "gpt-5");
        assert!(out.contains("openai/gpt-5"));
        assert!(!out.contains("claude"));
    }
}
