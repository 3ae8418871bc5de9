//! The credential of one request, resolved just before it is sent.

use crate::credentials::{Credential, Env, KeyProvider, aws, azure, env_api_key, google};
use crate::model::{Api, Model};
use crate::options::{ApiKey, StreamOptions};

/// The credential for a call of `model` (see the module docs of
/// [`crate::credentials`] for the order). `fresh` asks every source for a new
/// credential, bypassing caches (after the provider rejected the last one).
/// `Ok(None)`: no credential applies (a local server, or a provider whose
/// missing key is reported by the caller). `Err` says which source failed and
/// what to do, without secrets.
pub(crate) async fn credential(
    model: &Model,
    options: &StreamOptions,
    keys: Option<&dyn KeyProvider>,
    fresh: bool,
) -> Result<Option<Credential>, String> {
    if let Some(key) = &options.api_key {
        return Ok(Some(Credential::ApiKey(key.clone())));
    }
    if let Some(keys) = keys {
        let found = if fresh {
            keys.refresh(&model.provider).await?
        } else {
            keys.api_key(&model.provider).await?
        };
        if let Some(key) = found {
            return Ok(Some(Credential::ApiKey(key)));
        }
    }
    ambient(model, &Env::with(&options.env.0), fresh).await
}

/// The provider's own source: its environment variable or cloud credential
/// chain. A chain that finds nothing is an error (naming what to set), except
/// for a server on this machine (a local proxy may need no credential, like a
/// local model server); a source that fails is always an error.
pub(crate) async fn ambient(
    model: &Model,
    env: &Env<'_>,
    fresh: bool,
) -> Result<Option<Credential>, String> {
    let found = chain(model, env, fresh).await?;
    if found.is_some() || crate::credentials::is_loopback_url(&model.base_url) {
        return Ok(found);
    }
    match model.api {
        Api::BedrockConverseStream => Err(aws::no_credentials_message()),
        Api::GoogleVertex | Api::AnthropicVertex => Err(google::no_credentials_message()),
        _ if model.api == Api::AzureOpenAiResponses || model.provider == "azure" => {
            Err(azure::no_credentials_message())
        }
        _ => Ok(None),
    }
}

async fn chain(model: &Model, env: &Env<'_>, fresh: bool) -> Result<Option<Credential>, String> {
    match model.api {
        Api::BedrockConverseStream => {
            if let Some(token) = env.get("AWS_BEARER_TOKEN_BEDROCK") {
                return Ok(Some(Credential::ApiKey(ApiKey::new(token))));
            }
            if env.get("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1") {
                return Ok(None);
            }
            Ok(aws::credentials(env, fresh).await?.map(Credential::Aws))
        }
        Api::GoogleVertex | Api::AnthropicVertex => {
            if model.api == Api::GoogleVertex
                && let Some(key) = env.get("GOOGLE_CLOUD_API_KEY")
            {
                return Ok(Some(Credential::ApiKey(ApiKey::new(key))));
            }
            Ok(google::access_token(env, fresh)
                .await?
                .map(Credential::Bearer))
        }
        _ if model.api == Api::AzureOpenAiResponses || model.provider == "azure" => {
            azure::credential(env, fresh).await
        }
        _ => Ok(env_api_key(model, None, env).map(Credential::ApiKey)),
    }
}
