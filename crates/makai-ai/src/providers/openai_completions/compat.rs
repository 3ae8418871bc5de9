//! What an OpenAI-compatible server accepts, guessed from its base URL.
//!
//! Servers that speak Chat Completions differ in small ways that make a request
//! fail outright (Mistral rejects every unknown field, llama.cpp answers 500 to
//! `content: null`, DeepSeek wants its reasoning back). [`resolve`] starts from
//! what the host is known to accept and lets every field set explicitly in
//! `model.compat` win.

use crate::model::{CompatFlags, Model, PromptCacheKeyMode};
use crate::transform::ToolCallIdRules;

/// The family of server behind a base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    /// api.openai.com.
    OpenAi,
    /// openrouter.ai.
    OpenRouter,
    /// api.groq.com.
    Groq,
    /// api.deepseek.com.
    DeepSeek,
    /// api.mistral.ai.
    Mistral,
    /// api.x.ai.
    Xai,
    /// api.cerebras.ai.
    Cerebras,
    /// A server on this machine: llama.cpp, Ollama, vLLM, LM Studio.
    Local,
    /// Anything else.
    Other,
}

/// The switches resolved for one model: every question has an answer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compat {
    /// Send `stream_options: {include_usage: true}`.
    pub usage_in_streaming: bool,
    /// `max_completion_tokens` (true) or `max_tokens` (false).
    pub max_completion_tokens: bool,
    /// Use the `developer` role for the system prompt of reasoning models.
    pub developer_role: bool,
    /// Send `reasoning_effort` to reasoning models.
    pub reasoning_effort: bool,
    /// Send `store: false`.
    pub store: bool,
    /// Send `prompt_cache_key` (the session id).
    pub prompt_cache_key: bool,
    /// Add `name` to tool result messages.
    pub tool_result_name: bool,
    /// Insert an assistant turn between a tool result and a user message.
    pub assistant_after_tool_result: bool,
    /// Replay earlier reasoning as plain text.
    pub thinking_as_text: bool,
    /// Replay earlier reasoning in a reasoning field of the assistant message.
    pub reasoning_content: bool,
    /// Send `reasoning_content: ""` on assistant messages that carry no reasoning
    /// (DeepSeek reasoning models reject tool-call turns without it).
    pub empty_reasoning_content: bool,
    /// Rules for tool-call ids.
    pub ids: ToolCallIdRules,
    /// Tool-call ids must be exactly this many ASCII letters and digits (Mistral: 9).
    pub exact_alnum_ids: Option<usize>,
    /// Send a named tool choice as such; when false, as `"required"` with
    /// only that tool offered.
    pub named_tool_choice: bool,
    /// Send `"tools": []` when none is offered but the history has tool calls.
    pub tools_with_tool_history: bool,
    /// `"content": ""` beside tool calls instead of no `content`.
    pub non_null_assistant_content: bool,
}

/// The host part of `base_url`, lower-cased, without port or credentials.
fn host_of(base_url: &str) -> String {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or(v6)
    } else {
        authority.split(':').next().unwrap_or(authority)
    };
    host.to_ascii_lowercase()
}

fn is_or_under(host: &str, domain: &str) -> bool {
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Classifies a model's server by its base URL (the provider name is a fallback
/// for the hosted APIs, so a proxy URL with provider `deepseek` still counts).
pub(crate) fn host_kind(model: &Model) -> Host {
    let host = host_of(&model.base_url);
    let local = host == "localhost"
        || host == "::1"
        || host == "0.0.0.0"
        || host.starts_with("127.")
        || host.ends_with(".localhost")
        || host == "host.docker.internal";
    if host == "api.openai.com" {
        Host::OpenAi
    } else if is_or_under(&host, "openrouter.ai") {
        Host::OpenRouter
    } else if is_or_under(&host, "groq.com") {
        Host::Groq
    } else if is_or_under(&host, "deepseek.com") {
        Host::DeepSeek
    } else if is_or_under(&host, "mistral.ai") {
        Host::Mistral
    } else if is_or_under(&host, "x.ai") {
        Host::Xai
    } else if is_or_under(&host, "cerebras.ai") {
        Host::Cerebras
    } else if local {
        Host::Local
    } else {
        match model.provider.as_str() {
            "openrouter" => Host::OpenRouter,
            "groq" => Host::Groq,
            "deepseek" => Host::DeepSeek,
            "mistral" => Host::Mistral,
            "xai" => Host::Xai,
            "cerebras" => Host::Cerebras,
            _ => Host::Other,
        }
    }
}

/// The defaults for a host, before explicit flags.
fn defaults(host: Host) -> Compat {
    let base = Compat {
        usage_in_streaming: true,
        max_completion_tokens: false,
        developer_role: false,
        reasoning_effort: true,
        store: false,
        prompt_cache_key: false,
        tool_result_name: false,
        assistant_after_tool_result: false,
        thinking_as_text: false,
        reasoning_content: false,
        empty_reasoning_content: false,
        ids: ToolCallIdRules::OPENAI,
        exact_alnum_ids: None,
        named_tool_choice: true,
        tools_with_tool_history: false,
        non_null_assistant_content: false,
    };
    match host {
        Host::OpenAi => Compat {
            max_completion_tokens: true,
            developer_role: true,
            store: true,
            prompt_cache_key: true,
            ..base
        },
        Host::DeepSeek => Compat {
            // DeepSeek selects reasoning by model, not by effort, and wants its
            // reasoning back on the turns of a tool-call loop.
            reasoning_effort: false,
            reasoning_content: true,
            empty_reasoning_content: true,
            ..base
        },
        Host::Mistral => Compat {
            // Mistral rejects unknown fields (stream_options, reasoning_effort),
            // a user turn right after a tool turn, and ids that are not 9
            // letters/digits; its reasoning models stream thinking as text.
            usage_in_streaming: false,
            reasoning_effort: false,
            tool_result_name: true,
            assistant_after_tool_result: true,
            thinking_as_text: true,
            exact_alnum_ids: Some(9),
            ..base
        },
        Host::Xai => Compat {
            // Grok 4 rejects `reasoning_effort`.
            reasoning_effort: false,
            ..base
        },
        Host::Local => Compat {
            // llama.cpp reads `reasoning_content` back into the chat template;
            // Ollama reads `reasoning`. The field streamed is the field replayed.
            reasoning_content: true,
            // llama.cpp's server takes `tool_choice` only as a string: it
            // ignores the named form (with a warning in its log) and lets the
            // model answer in text. "required" with the one tool forces it.
            named_tool_choice: false,
            ..base
        },
        Host::OpenRouter | Host::Groq | Host::Cerebras | Host::Other => base,
    }
}

/// Resolves the switches of `model`: host defaults, then every explicit flag.
pub(crate) fn resolve(model: &Model) -> Compat {
    let mut c = defaults(host_kind(model));
    let Some(f) = &model.compat else {
        return c;
    };
    let CompatFlags {
        supports_usage_in_streaming,
        max_tokens_field_is_completion,
        supports_developer_role,
        supports_reasoning_effort,
        supports_store,
        requires_tool_result_name,
        requires_assistant_after_tool_result,
        requires_thinking_as_text,
        max_tool_call_id_len,
        supports_reasoning_content,
        supports_named_tool_choice,
        // Read by the front end, which runs such a model without tools.
        supports_tools: _,
        requires_tools_with_tool_history,
        requires_non_null_assistant_content,
        prompt_cache_key_mode,
        // Read where the retention is chosen (`Model::cache_retention`).
        supports_long_cache_retention: _,
    } = f;
    let set = |slot: &mut bool, v: &Option<bool>| {
        if let Some(v) = v {
            *slot = *v;
        }
    };
    set(&mut c.usage_in_streaming, supports_usage_in_streaming);
    set(&mut c.max_completion_tokens, max_tokens_field_is_completion);
    set(&mut c.developer_role, supports_developer_role);
    set(&mut c.reasoning_effort, supports_reasoning_effort);
    set(&mut c.store, supports_store);
    set(&mut c.tool_result_name, requires_tool_result_name);
    set(
        &mut c.assistant_after_tool_result,
        requires_assistant_after_tool_result,
    );
    set(&mut c.thinking_as_text, requires_thinking_as_text);
    set(&mut c.reasoning_content, supports_reasoning_content);
    set(&mut c.named_tool_choice, supports_named_tool_choice);
    set(
        &mut c.tools_with_tool_history,
        requires_tools_with_tool_history,
    );
    set(
        &mut c.non_null_assistant_content,
        requires_non_null_assistant_content,
    );
    match prompt_cache_key_mode {
        Some(PromptCacheKeyMode::Enabled) => c.prompt_cache_key = true,
        Some(PromptCacheKeyMode::Disabled) => c.prompt_cache_key = false,
        Some(PromptCacheKeyMode::Auto) | None => {}
    }
    if supports_reasoning_content == &Some(false) {
        c.empty_reasoning_content = false;
    }
    if let Some(len) = max_tool_call_id_len {
        c.ids = ToolCallIdRules {
            max_len: (*len).max(1),
            extra_chars: c.ids.extra_chars,
        };
        if c.exact_alnum_ids.is_some() {
            c.exact_alnum_ids = Some((*len).max(1));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Api;

    fn model(base_url: &str) -> Model {
        Model::custom(Api::OpenAiCompletions, "custom", "m", base_url)
    }

    #[test]
    fn hosts_are_recognised_from_the_url() {
        let cases = [
            ("https://api.openai.com/v1", Host::OpenAi),
            ("https://openrouter.ai/api/v1", Host::OpenRouter),
            ("https://api.groq.com/openai/v1", Host::Groq),
            ("https://api.deepseek.com", Host::DeepSeek),
            ("https://api.mistral.ai/v1", Host::Mistral),
            ("https://api.x.ai/v1", Host::Xai),
            ("https://api.cerebras.ai/v1", Host::Cerebras),
            ("http://localhost:11434/v1", Host::Local),
            ("http://127.0.0.1:8080/v1", Host::Local),
            ("http://[::1]:8000/v1", Host::Local),
            ("https://user:pw@my-proxy.example/v1", Host::Other),
            // A look-alike domain is not the real one.
            ("https://api.openai.com.evil.example/v1", Host::Other),
            ("https://notx.ai/v1", Host::Other),
        ];
        for (url, want) in cases {
            assert_eq!(host_kind(&model(url)), want, "{url}");
        }
    }

    #[test]
    fn provider_name_is_a_fallback_for_proxies() {
        let mut m = model("https://gateway.example/deepseek");
        m.provider = "deepseek".into();
        assert_eq!(host_kind(&m), Host::DeepSeek);
        // A local URL wins over the provider name.
        let mut m = model("http://127.0.0.1:9000/v1");
        m.provider = "mistral".into();
        assert_eq!(host_kind(&m), Host::Local);
    }

    #[test]
    fn openai_defaults_differ_from_compatible_servers() {
        let openai = resolve(&model("https://api.openai.com/v1"));
        assert!(openai.max_completion_tokens && openai.store && openai.prompt_cache_key);
        assert!(openai.developer_role);
        let local = resolve(&model("http://localhost:8080/v1"));
        assert!(!local.max_completion_tokens && !local.store && !local.prompt_cache_key);
        assert!(local.reasoning_content);
        let mistral = resolve(&model("https://api.mistral.ai/v1"));
        assert!(!mistral.usage_in_streaming);
        assert!(mistral.assistant_after_tool_result && mistral.tool_result_name);
        assert_eq!(mistral.exact_alnum_ids, Some(9));
    }

    #[test]
    fn explicit_flags_override_the_guess() {
        let mut m = model("http://localhost:8080/v1");
        m.compat = Some(CompatFlags {
            supports_usage_in_streaming: Some(false),
            max_tokens_field_is_completion: Some(true),
            supports_store: Some(true),
            supports_reasoning_content: Some(false),
            max_tool_call_id_len: Some(24),
            ..Default::default()
        });
        let c = resolve(&m);
        assert!(!c.usage_in_streaming);
        assert!(c.max_completion_tokens);
        assert!(c.store);
        assert!(!c.reasoning_content);
        assert_eq!(c.ids.max_len, 24);
        // Unset flags keep the host default.
        assert!(c.reasoning_effort);
    }
}
