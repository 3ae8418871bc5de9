//! Where one call goes: the provider settings that are not part of a wire
//! format, resolved from the model, the environment and the credential.
//!
//! A wire API builds its request from a [`Model`]; this module first makes that
//! model concrete ([`resolve`]) and afterwards applies what a provider adds to
//! any wire format ([`finish`]):
//! - **Amazon Bedrock**: the region (`AWS_REGION`, `AWS_DEFAULT_REGION`, the
//!   profile's, the base URL's, else `us-east-1`) picks the regional endpoint and
//!   the SigV4 scope; `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` / `AWS_ENDPOINT_URL`
//!   replace the endpoint (VPC endpoints, proxies, tests).
//! - **Google Vertex AI**: `https://{location}-aiplatform.googleapis.com` (or
//!   `aiplatform.googleapis.com` for `global`) plus
//!   `/v1/projects/{project}/locations/{location}` from `GOOGLE_CLOUD_PROJECT`
//!   (or `GCLOUD_PROJECT`) and `GOOGLE_CLOUD_LOCATION`; with an API key, the
//!   project-less express endpoint.
//! - **Azure OpenAI**: the resource (`AZURE_OPENAI_BASE_URL`, else
//!   `AZURE_OPENAI_RESOURCE_NAME`, else the model's base URL), root URLs
//!   normalised to `/openai/v1`; the deployment (`AZURE_OPENAI_DEPLOYMENT_NAME_MAP`,
//!   `model=deployment,...`, else the model id) sent as the model; the
//!   `api-version` query (`AZURE_OPENAI_API_VERSION`, default `v1`); a key in
//!   `api-key`, an Entra ID token as a bearer token.
//! - **GitHub Copilot**: the account's API host from the Copilot token
//!   (`proxy-ep=proxy.X` → `https://api.X`) when the model uses Copilot's default
//!   host; the bearer token on every API; `X-Initiator` (`user` when the last
//!   message is the user's, else `agent`), `Openai-Intent: conversation-edits`,
//!   and `Copilot-Vision-Request: true` when the conversation holds images.

use crate::context::Context;
use crate::credentials::{Credential, Env, aws, azure};
use crate::error::ProviderError;
use crate::message::{Message, UserContent};
use crate::model::{Api, Model};
use crate::provider::WireRequest;
use crate::sigv4::SigningScope;

/// A call's concrete destination.
#[derive(Debug)]
pub(crate) struct Target {
    /// The model as the request builder sees it (concrete base URL; for Azure
    /// the deployment as its id).
    pub(crate) model: Model,
    /// The SigV4 scope, when the request is signed.
    pub(crate) signing: Option<SigningScope>,
    /// A query string added to the URL (Azure's `api-version`).
    pub(crate) query: Option<String>,
}

fn invalid(message: String) -> ProviderError {
    ProviderError::InvalidRequest(message)
}

/// Makes `model` concrete for one call (see the module docs).
pub(crate) fn resolve(
    model: &Model,
    env: &Env,
    credential: Option<&Credential>,
) -> Result<Target, ProviderError> {
    let mut target = Target {
        model: model.clone(),
        signing: None,
        query: None,
    };
    target.model.base_url = substitute_env(&model.base_url, env)?;
    match model.api {
        Api::BedrockConverseStream => bedrock(&mut target, env, credential),
        Api::GoogleVertex | Api::AnthropicVertex => vertex(&mut target, env, credential)?,
        _ => {}
    }
    if model.api == Api::AzureOpenAiResponses || model.provider == "azure" {
        azure_target(&mut target, env)?;
    }
    if model.provider == "github-copilot"
        && let Some(base) = credential
            .and_then(Credential::key)
            .and_then(|k| copilot_base_url(k.expose()))
        && host_of(&model.base_url).is_some_and(|h| h.ends_with("githubcopilot.com"))
        && let Ok(mut url) = url::Url::parse(&model.base_url)
        && let Some(host) = base.strip_prefix("https://")
        && url.set_host(Some(host)).is_ok()
    {
        // The account's host, the model's path (`/v1` for Anthropic Messages).
        target.model.base_url = url.as_str().trim_end_matches('/').to_string();
    }
    Ok(target)
}

/// `{NAME}` placeholders (upper-case environment variable names, as in
/// Cloudflare's `.../accounts/{CLOUDFLARE_ACCOUNT_ID}/...`) replaced by their
/// values; an unset one is an error naming it. Lower-case placeholders (Vertex's
/// `{location}`) are left for their provider.
fn substitute_env(url: &str, env: &Env) -> Result<String, ProviderError> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        out.push_str(&rest[..open]);
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            let value = env.get(name).ok_or_else(|| {
                invalid(format!(
                    "the endpoint {url} needs {name}: set the environment variable {name}"
                ))
            })?;
            out.push_str(&value);
        } else {
            out.push_str(&rest[open..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The host of `url`.
fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
}

fn bedrock(target: &mut Target, env: &Env, credential: Option<&Credential>) {
    let from_url = host_of(&target.model.base_url).and_then(|h| {
        h.strip_prefix("bedrock-runtime.")
            .and_then(|r| r.strip_suffix(".amazonaws.com"))
            .map(str::to_string)
    });
    let configured = aws::region(env);
    let region = configured
        .clone()
        .or(from_url.clone())
        .unwrap_or_else(|| "us-east-1".to_string());
    if let Some(endpoint) = env.first(&["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"]) {
        target.model.base_url = endpoint;
    } else if (from_url.is_some() && from_url.as_deref() != Some(region.as_str()))
        || target.model.base_url.trim().is_empty()
    {
        target.model.base_url = format!("https://bedrock-runtime.{region}.amazonaws.com");
    }
    if matches!(credential, Some(Credential::Aws(_))) {
        target.signing = Some(SigningScope {
            region,
            service: "bedrock".to_string(),
        });
    }
}

fn vertex(
    target: &mut Target,
    env: &Env,
    credential: Option<&Credential>,
) -> Result<(), ProviderError> {
    let base = target
        .model
        .base_url
        .trim()
        .trim_end_matches('/')
        .to_string();
    let express =
        matches!(credential, Some(Credential::ApiKey(_))) && target.model.api == Api::GoogleVertex;
    let location = env.get("GOOGLE_CLOUD_LOCATION");
    let host = if base.contains("{location}") || base.is_empty() {
        let location = match (&location, express) {
            (Some(l), _) => l.clone(),
            (None, true) => "global".to_string(),
            (None, false) => {
                return Err(invalid(
                    "Vertex AI needs a location: set GOOGLE_CLOUD_LOCATION (e.g. us-central1, or global)"
                        .to_string(),
                ));
            }
        };
        if location == "global" {
            "https://aiplatform.googleapis.com".to_string()
        } else {
            format!("https://{location}-aiplatform.googleapis.com")
        }
    } else {
        base
    };
    if host.contains("/projects/") || host.ends_with("/v1") {
        target.model.base_url = host;
        return Ok(());
    }
    if express {
        target.model.base_url = format!("{host}/v1");
        return Ok(());
    }
    let project = env
        .first(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"])
        .ok_or_else(|| {
            invalid(
                "Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT (or GCLOUD_PROJECT)"
                    .to_string(),
            )
        })?;
    let location = location.ok_or_else(|| {
        invalid(
            "Vertex AI needs a location: set GOOGLE_CLOUD_LOCATION (e.g. us-central1, or global)"
                .to_string(),
        )
    })?;
    target.model.base_url = format!("{host}/v1/projects/{project}/locations/{location}");
    Ok(())
}

/// `https://x.openai.azure.com` → `https://x.openai.azure.com/openai/v1`.
pub(crate) fn normalize_azure_base(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    let path = url::Url::parse(trimmed)
        .map(|u| u.path().trim_end_matches('/').to_string())
        .unwrap_or_default();
    if path.is_empty() {
        format!("{trimmed}/openai/v1")
    } else if path.ends_with("/openai") {
        format!("{trimmed}/v1")
    } else {
        trimmed.to_string()
    }
}

fn azure_target(target: &mut Target, env: &Env) -> Result<(), ProviderError> {
    let base = env
        .get("AZURE_OPENAI_BASE_URL")
        .or_else(|| {
            env.get("AZURE_OPENAI_RESOURCE_NAME")
                .map(|n| format!("https://{n}.openai.azure.com"))
        })
        .or_else(|| Some(target.model.base_url.clone()).filter(|b| !b.trim().is_empty()))
        .ok_or_else(|| {
            invalid(
                "Azure OpenAI needs an endpoint: set AZURE_OPENAI_BASE_URL (https://RESOURCE.openai.azure.com) \
                 or AZURE_OPENAI_RESOURCE_NAME"
                    .to_string(),
            )
        })?;
    target.model.base_url = normalize_azure_base(&base);
    if let Some(map) = env.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        && let Some(deployment) = map.split(',').find_map(|pair| {
            let (model, deployment) = pair.split_once('=')?;
            (model.trim() == target.model.id).then(|| deployment.trim().to_string())
        })
    {
        target.model.id = deployment;
    }
    let version = env
        .get("AZURE_OPENAI_API_VERSION")
        .unwrap_or_else(|| azure::DEFAULT_API_VERSION.to_string());
    target.query = Some(
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("api-version", &version)
            .finish(),
    );
    Ok(())
}

/// The API base URL named by a Copilot token (`...;proxy-ep=proxy.X;...`).
pub(crate) fn copilot_base_url(token: &str) -> Option<String> {
    let ep = token
        .split(';')
        .find_map(|field| field.trim().strip_prefix("proxy-ep="))?;
    let host = ep.strip_prefix("proxy.").unwrap_or(ep);
    let host = host.trim_start_matches("https://").trim_end_matches('/');
    (!host.is_empty()).then(|| format!("https://api.{host}"))
}

fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_string(), value));
}

/// Applies what the provider adds to the built request (see the module docs).
pub(crate) fn finish(
    target: &Target,
    wire: &mut WireRequest,
    context: &Context,
    credential: Option<&Credential>,
) {
    if let Some(query) = &target.query {
        let sep = if wire.url.contains('?') { '&' } else { '?' };
        wire.url.push(sep);
        wire.url.push_str(query);
    }
    let model = &target.model;
    if (model.api == Api::AzureOpenAiResponses || model.provider == "azure")
        && let Some(Credential::ApiKey(key)) = credential
    {
        wire.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        set_header(&mut wire.headers, "api-key", key.expose().to_string());
    }
    if model.provider == "github-copilot" {
        if let Some(key) = credential.and_then(Credential::key) {
            wire.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("x-api-key"));
            set_header(
                &mut wire.headers,
                "authorization",
                format!("Bearer {}", key.expose()),
            );
        }
        let agent = context
            .messages
            .last()
            .is_some_and(|m| !matches!(m, Message::User(_)));
        set_header(
            &mut wire.headers,
            "X-Initiator",
            if agent { "agent" } else { "user" }.to_string(),
        );
        set_header(
            &mut wire.headers,
            "Openai-Intent",
            "conversation-edits".to_string(),
        );
        let images = context.messages.iter().any(|m| match m {
            Message::User(u) => u.content.iter().any(|c| matches!(c, UserContent::Image(_))),
            Message::ToolResult(r) => r.content.iter().any(|c| matches!(c, UserContent::Image(_))),
            Message::Assistant(_) => false,
        });
        if images {
            set_header(
                &mut wire.headers,
                "Copilot-Vision-Request",
                "true".to_string(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // Keep the tests independent of the machine's AWS files.
        m.entry("AWS_CONFIG_FILE".into())
            .or_insert_with(|| "/nonexistent/config".into());
        m.entry("AWS_SHARED_CREDENTIALS_FILE".into())
            .or_insert_with(|| "/nonexistent/credentials".into());
        for var in [
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_PROFILE",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_CLOUD_PROJECT",
            "GCLOUD_PROJECT",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
            "AZURE_OPENAI_BASE_URL",
            "AZURE_OPENAI_RESOURCE_NAME",
            "AZURE_OPENAI_API_VERSION",
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
        ] {
            m.entry(var.into()).or_default();
        }
        m
    }

    #[test]
    fn bedrock_region_moves_the_endpoint_and_scopes_the_signature() {
        let m = Model::custom(
            Api::BedrockConverseStream,
            "amazon-bedrock",
            "anthropic.claude",
            "https://bedrock-runtime.us-east-1.amazonaws.com",
        );
        let o = env(&[("AWS_REGION", "eu-central-1")]);
        let aws = Credential::Aws(crate::credentials::AwsCredentials {
            access_key_id: "AKID".into(),
            secret_access_key: "s".into(),
            session_token: None,
            expires: None,
        });
        let t = resolve(&m, &Env::with(&o), Some(&aws)).unwrap();
        assert_eq!(
            t.model.base_url,
            "https://bedrock-runtime.eu-central-1.amazonaws.com"
        );
        assert_eq!(t.signing.unwrap().region, "eu-central-1");
        let o = env(&[]);
        let t = resolve(&m, &Env::with(&o), None).unwrap();
        assert_eq!(t.model.base_url, m.base_url);
        assert!(t.signing.is_none(), "no signing without AWS credentials");
    }

    #[test]
    fn vertex_urls_for_adc_express_and_missing_settings() {
        let m = Model::custom(
            Api::GoogleVertex,
            "google-vertex",
            "gemini-2.5-flash",
            "https://{location}-aiplatform.googleapis.com",
        );
        let bearer = Credential::Bearer("ya29.x".into());
        let o = env(&[
            ("GOOGLE_CLOUD_PROJECT", "p1"),
            ("GOOGLE_CLOUD_LOCATION", "us-central1"),
        ]);
        let t = resolve(&m, &Env::with(&o), Some(&bearer)).unwrap();
        assert_eq!(
            t.model.base_url,
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1"
        );
        let o = env(&[
            ("GOOGLE_CLOUD_PROJECT", "p1"),
            ("GOOGLE_CLOUD_LOCATION", "global"),
        ]);
        let t = resolve(&m, &Env::with(&o), Some(&bearer)).unwrap();
        assert!(
            t.model
                .base_url
                .starts_with("https://aiplatform.googleapis.com/v1/projects/p1/locations/global")
        );
        let key = Credential::ApiKey("AIza".into());
        let t = resolve(&m, &Env::with(&env(&[])), Some(&key)).unwrap();
        assert_eq!(t.model.base_url, "https://aiplatform.googleapis.com/v1");
        let err = resolve(
            &m,
            &Env::with(&env(&[("GOOGLE_CLOUD_LOCATION", "x")])),
            Some(&bearer),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("GOOGLE_CLOUD_PROJECT"), "{err}");
    }

    #[test]
    fn azure_resource_deployment_and_api_version() {
        assert_eq!(
            normalize_azure_base("https://r.openai.azure.com/"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            normalize_azure_base("https://r.services.ai.azure.com/openai"),
            "https://r.services.ai.azure.com/openai/v1"
        );
        let m = Model::custom(Api::AzureOpenAiResponses, "azure", "gpt-5.4", "");
        let o = env(&[
            ("AZURE_OPENAI_RESOURCE_NAME", "corp"),
            (
                "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                "gpt-4o=a, gpt-5.4=prod-gpt",
            ),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
        ]);
        let t = resolve(&m, &Env::with(&o), None).unwrap();
        assert_eq!(t.model.base_url, "https://corp.openai.azure.com/openai/v1");
        assert_eq!(t.model.id, "prod-gpt");
        assert_eq!(t.query.as_deref(), Some("api-version=2025-04-01-preview"));
        let err = resolve(&m, &Env::with(&env(&[])), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("AZURE_OPENAI_BASE_URL"), "{err}");
    }

    #[test]
    fn upper_case_placeholders_come_from_the_environment() {
        let m = Model::custom(
            Api::OpenAiCompletions,
            "cloudflare-workers-ai",
            "@cf/x",
            "https://api.cloudflare.com/client/v4/accounts/{CLOUDFLARE_ACCOUNT_ID}/ai/v1",
        );
        let o = env(&[("CLOUDFLARE_ACCOUNT_ID", "acc-9")]);
        let t = resolve(&m, &Env::with(&o), None).unwrap();
        assert_eq!(
            t.model.base_url,
            "https://api.cloudflare.com/client/v4/accounts/acc-9/ai/v1"
        );
        let mut o = env(&[]);
        o.insert("CLOUDFLARE_ACCOUNT_ID".into(), String::new());
        let err = resolve(&m, &Env::with(&o), None).unwrap_err().to_string();
        assert!(
            err.contains("set the environment variable CLOUDFLARE_ACCOUNT_ID"),
            "{err}"
        );
    }

    #[test]
    fn copilot_keeps_the_models_path_on_the_accounts_host() {
        let m = Model::custom(
            Api::AnthropicMessages,
            "github-copilot",
            "claude-sonnet-4.5",
            "https://api.individual.githubcopilot.com/v1",
        );
        let token =
            Credential::ApiKey("tid=1;proxy-ep=proxy.business.githubcopilot.com;x=y".into());
        let t = resolve(&m, &Env::with(&env(&[])), Some(&token)).unwrap();
        assert_eq!(
            t.model.base_url,
            "https://api.business.githubcopilot.com/v1"
        );
    }

    #[test]
    fn copilot_host_comes_from_the_token() {
        assert_eq!(
            copilot_base_url("tid=1;exp=2;sku=x;proxy-ep=proxy.business.githubcopilot.com;8kp=1"),
            Some("https://api.business.githubcopilot.com".into())
        );
        assert_eq!(copilot_base_url("no-fields"), None);
    }
}
