//! A request built before its credential is known, and what the driver needs
//! to authorise it: the credential known without asking anyone, rebuilding the
//! URL and headers for another credential, redaction, and which HTTP errors
//! mean the credential was refused.

use crate::context::Context;
use crate::credentials::Credential;
use crate::endpoint::Target;
use crate::error::{ProviderError, redact};
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::WireRequest;

/// The credential known without asking anyone: the options' key, or (when no
/// key provider is asked first) the provider's environment variable.
pub(super) fn known_credential(
    model: &Model,
    options: &StreamOptions,
    has_keys: bool,
) -> Option<Credential> {
    if let Some(key) = &options.api_key {
        return Some(Credential::ApiKey(key.clone()));
    }
    if has_keys {
        return None;
    }
    crate::credentials::env_api_key(model, None, &crate::credentials::Env::with(&options.env.0))
        .map(Credential::ApiKey)
}

/// What the Copilot headers need from the context (kept so the head can be
/// rebuilt without it).
#[derive(Clone, Copy, Default)]
pub(super) struct CopilotFlags {
    pub(crate) agent: bool,
    pub(crate) images: bool,
}

impl CopilotFlags {
    pub(super) fn of(context: &Context) -> Self {
        use crate::message::{Message, UserContent};
        let image = |c: &UserContent| matches!(c, UserContent::Image(_));
        CopilotFlags {
            agent: context
                .messages
                .last()
                .is_some_and(|m| !matches!(m, Message::User(_))),
            images: context.messages.iter().any(|m| match m {
                Message::User(u) => u.content.iter().any(image),
                Message::ToolResult(r) => r.content.iter().any(image),
                Message::Assistant(_) => false,
            }),
        }
    }

    fn context(self) -> Context {
        use crate::message::{AssistantMessage, ImageContent, UserContent, UserMessage};
        let mut user = UserMessage::text("probe");
        if self.images {
            user.content
                .push(UserContent::Image(ImageContent::default()));
        }
        let mut messages = vec![user.into()];
        if self.agent {
            messages.push(AssistantMessage::default().into());
        }
        Context {
            messages,
            ..Default::default()
        }
    }
}

/// A request built before its credential was resolved.
pub(super) struct Prepared {
    pub(super) wire: WireRequest,
    pub(super) target: Target,
    pub(super) credential: Option<Credential>,
    pub(super) copilot: CopilotFlags,
    /// The provider's own effort value the body carries (pi's
    /// `providerThinkingLevel`), stamped on the answer.
    pub(super) effort: Option<String>,
    /// Every cache breakpoint lasts an hour (`WireApi::caches_for_an_hour`).
    pub(super) one_hour_cache: bool,
}

impl Prepared {
    /// Builds the request for `context` with the credential known so far.
    pub(super) fn new(
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<Credential>,
    ) -> Result<Prepared, ProviderError> {
        let (wire, target) =
            crate::provider::prepare(model, context, options, credential.as_ref())?;
        let api = crate::provider::wire_api(target.model.api);
        Ok(Prepared {
            effort: api.provider_effort(&target.model, context, options),
            one_hour_cache: api.caches_for_an_hour(&target.model, options),
            wire,
            target,
            credential,
            copilot: if model.provider == "github-copilot" {
                CopilotFlags::of(context)
            } else {
                CopilotFlags::default()
            },
        })
    }

    /// Rebuilds the URL and headers for `credential`, keeping the body (the
    /// body never depends on the credential; the URL and headers never depend
    /// on the conversation beyond the Copilot flags).
    pub(super) fn reauthorize(
        &mut self,
        model: &Model,
        options: &StreamOptions,
        credential: Option<Credential>,
    ) -> Result<(), ProviderError> {
        let probe = self.copilot.context();
        let (head, target) = crate::provider::prepare(model, &probe, options, credential.as_ref())?;
        self.wire.url = head.url;
        self.wire.headers = head.headers;
        self.target = target;
        self.credential = credential;
        Ok(())
    }
}

/// Every secret of `credential`, removed from `text`.
pub(super) fn redact_all(text: &str, credential: Option<&Credential>) -> String {
    let mut out = text.to_string();
    if let Some(c) = credential {
        for secret in c.secrets() {
            out = redact(&out, Some(secret));
        }
    }
    out
}

/// The error for a call that has no credential, when one is needed.
pub(super) fn missing_credential(model: &Model) -> Option<String> {
    if crate::credentials::is_loopback_url(&model.base_url) {
        return None;
    }
    if model.api == crate::model::Api::OpenAiCodexResponses {
        return Some(format!(
            "no login for provider '{}': run `makai auth login openai-codex` (a ChatGPT Plus/Pro subscription)",
            model.provider
        ));
    }
    if model.provider == "github-copilot" {
        return Some(
            "no GitHub Copilot login: run `makai auth login github-copilot` or set COPILOT_GITHUB_TOKEN"
                .to_string(),
        );
    }
    if crate::credentials::requires_api_key(model) {
        let var = crate::credentials::env_var_for_provider(&model.provider)
            .unwrap_or("the provider's key variable");
        return Some(
            ProviderError::MissingApiKey {
                provider: model.provider.clone(),
                env_var: var.to_string(),
            }
            .to_string(),
        );
    }
    None
}

/// True when an HTTP error says the credential itself was refused or expired
/// (worth one refresh): 401, or a 403 about an expired or invalid token.
pub(super) fn is_auth_rejection(status: u16, body: &str) -> bool {
    if status == 401 {
        return true;
    }
    if status != 403 {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    [
        "expiredtoken",
        "expired",
        "invalid token",
        "invalidtoken",
        "unrecognizedclient",
        "invalid_token",
    ]
    .iter()
    .any(|m| lower.contains(m))
}
