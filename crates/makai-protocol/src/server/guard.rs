//! Keeps the server's provider credentials on known endpoints.
//!
//! A client names the model, including its base URL. If the server would
//! attach one of its own API keys to that request, the URL must be the
//! provider's built-in endpoint or one the operator trusts; otherwise any token
//! holder could point the server at their own host and collect the key.

use makai_ai::Model;

fn normalize(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// `Err(reason)` when the request would send a server credential to an untrusted URL.
pub(crate) fn check_credentials(model: &Model, trusted: &[String]) -> Result<(), String> {
    // Cloud providers sign or authorise with the server's ambient credentials
    // (AWS profiles, Google ADC, Entra ID): assume the server holds some.
    let has_key = makai_ai::credentials::resolve_api_key(model, None).is_some()
        || makai_ai::credentials::has_credential_chain(model);
    check(model, trusted, has_key)
}

fn check(model: &Model, trusted: &[String], server_has_key: bool) -> Result<(), String> {
    if !server_has_key {
        return Ok(());
    }
    let url = normalize(&model.base_url);
    let builtin = makai_ai::catalog::builtin_models()
        .iter()
        .any(|m| m.provider == model.provider && normalize(&m.base_url) == url);
    if builtin || trusted.iter().any(|t| normalize(t) == url) {
        return Ok(());
    }
    Err(format!(
        "the server refused the request: it holds a credential for provider '{}' and will not send it to {}, which is not that provider's built-in endpoint; the server operator can add the URL to the trusted base URLs",
        model.provider, model.base_url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use makai_ai::Api;

    fn model(provider: &str, url: &str) -> Model {
        Model::custom(Api::OpenAiCompletions, provider, "m", url)
    }

    #[test]
    fn cloud_credentials_go_only_to_builtin_or_trusted_urls() {
        let evil = Model::custom(
            Api::BedrockConverseStream,
            "amazon-bedrock",
            "m",
            "http://evil.example",
        );
        let err = check_credentials(&evil, &[]).unwrap_err();
        assert!(err.contains("amazon-bedrock"), "{err}");
        let builtin = makai_ai::catalog::builtin_models()
            .iter()
            .find(|m| m.api == Api::BedrockConverseStream)
            .unwrap();
        assert!(check_credentials(builtin, &[]).is_ok());
    }

    #[test]
    fn without_a_server_key_any_url_passes() {
        assert!(check(&model("openai", "http://evil.example/v1"), &[], false).is_ok());
    }

    #[test]
    fn server_key_goes_only_to_builtin_or_trusted_urls() {
        let evil = model("openai", "http://evil.example/v1");
        let err = check(&evil, &[], true).unwrap_err();
        assert!(
            err.contains("evil.example") && err.contains("openai"),
            "{err}"
        );
        assert!(check(&evil, &["http://evil.example/v1/".into()], true).is_ok());
        let builtin = makai_ai::catalog::builtin_models()
            .iter()
            .find(|m| m.provider == "openai")
            .unwrap();
        assert!(check(&model("openai", &builtin.base_url), &[], true).is_ok());
        // Another provider's endpoint does not count.
        assert!(check(&model("groq", &builtin.base_url), &[], true).is_err());
    }
}
