//! The AWS credential chain and region, as the AWS SDKs resolve them.
//!
//! Credentials, first found wins:
//! 1. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//! 2. the profile (`AWS_PROFILE`, else `default`) of the shared files
//!    ([`profile`]): static keys, `role_arn` with `web_identity_token_file` or
//!    `source_profile` (STS), `sso_session`/`sso_start_url` (the SSO token cache
//!    that `aws sso login` fills), `credential_process`;
//! 3. `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` (STS, as on EKS);
//! 4. container credentials (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` on ECS,
//!    `AWS_CONTAINER_CREDENTIALS_FULL_URI` with its authorization token).
//!
//! The instance metadata service (EC2 roles) is not asked; the error for an
//! empty chain says so. Credentials fetched over the network or from a process
//! are cached until 5 minutes before they expire.
//!
//! Hand-written rather than `aws-config`: that crate brings the SSO, SSO-OIDC
//! and STS SDK clients and a second HTTP stack; the subset here is a few
//! hundred lines over the HTTP client makai already has, and its endpoints can
//! be pointed at loopback test servers (`AWS_ENDPOINT_URL_STS`,
//! `AWS_ENDPOINT_URL_SSO`). See ARCHITECTURE.md.

pub(crate) mod profile;
mod remote;

use std::sync::OnceLock;

use crate::credentials::cache::{self, Cache};
use crate::credentials::{AwsCredentials, Env};
use crate::options::ApiKey;

use profile::{ProfileFiles, Section, profile_name};

/// How deep `source_profile` chains may go.
const MAX_PROFILE_DEPTH: usize = 4;

static CACHE: OnceLock<Cache<AwsCredentials>> = OnceLock::new();

/// The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile's `region`.
pub fn region(env: &Env) -> Option<String> {
    if let Some(r) = env.first(&["AWS_REGION", "AWS_DEFAULT_REGION"]) {
        return Some(r);
    }
    let files = ProfileFiles::load(env).ok()?;
    files
        .profile(&profile_name(env))
        .and_then(|p| p.get("region"))
        .filter(|r| !r.is_empty())
        .cloned()
}

/// Resolves credentials through the chain (see the module docs). `fresh`
/// bypasses the cache (after the service rejected cached credentials).
/// `Ok(None)`: no source is configured. `Err`: a configured source failed; the
/// text says which and what to do.
pub async fn credentials(env: &Env<'_>, fresh: bool) -> Result<Option<AwsCredentials>, String> {
    if let Some(c) = from_env(env) {
        return Ok(Some(c));
    }
    let files = ProfileFiles::load(env)?;
    let name = profile_name(env);
    if let Some(section) = files.profile(&name) {
        if let Some(c) = from_profile(env, &files, &name, section, fresh, 0).await? {
            return Ok(Some(c));
        }
    } else if env.get("AWS_PROFILE").is_some() {
        return Err(format!(
            "AWS profile '{name}' (AWS_PROFILE) is not defined in {}; add it or unset AWS_PROFILE",
            describe_sources(&files)
        ));
    }
    if let (Some(token_file), Some(role)) = (
        env.get("AWS_WEB_IDENTITY_TOKEN_FILE"),
        env.get("AWS_ROLE_ARN"),
    ) {
        let session = env
            .get("AWS_ROLE_SESSION_NAME")
            .unwrap_or_else(|| "makai".to_string());
        let key = format!("web-identity:{token_file}:{role}");
        let c = cached(&key, fresh, || {
            remote::web_identity(env, &token_file, &role, &session)
        })
        .await?;
        return Ok(Some(c));
    }
    if env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
    {
        let c = cached("container", fresh, || remote::container(env)).await?;
        return Ok(Some(c));
    }
    Ok(None)
}

/// The message for an empty chain.
pub fn no_credentials_message() -> String {
    "no AWS credentials found: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), \
     AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile in \
     ~/.aws/config (run `aws sso login` for SSO profiles); instance-profile (EC2 \
     metadata) credentials are not supported"
        .to_string()
}

fn describe_sources(files: &ProfileFiles) -> String {
    if files.sources.is_empty() {
        "the AWS config files (none exist: ~/.aws/config, ~/.aws/credentials)".to_string()
    } else {
        files
            .sources
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

fn from_env(env: &Env) -> Option<AwsCredentials> {
    let id = env.get("AWS_ACCESS_KEY_ID")?;
    let secret = env.get("AWS_SECRET_ACCESS_KEY")?;
    Some(AwsCredentials {
        access_key_id: id,
        secret_access_key: ApiKey::new(secret),
        session_token: env.get("AWS_SESSION_TOKEN").map(ApiKey::new),
        expires: None,
    })
}

fn static_keys(section: &Section) -> Option<AwsCredentials> {
    let id = section.get("aws_access_key_id").filter(|v| !v.is_empty())?;
    let secret = section
        .get("aws_secret_access_key")
        .filter(|v| !v.is_empty())?;
    Some(AwsCredentials {
        access_key_id: id.clone(),
        secret_access_key: ApiKey::new(secret.clone()),
        session_token: section
            .get("aws_session_token")
            .filter(|v| !v.is_empty())
            .map(|t| ApiKey::new(t.clone())),
        expires: None,
    })
}

async fn cached<F, Fut>(key: &str, fresh: bool, fetch: F) -> Result<AwsCredentials, String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<AwsCredentials, String>>,
{
    cache::global(&CACHE)
        .get_or_fetch(key, fresh, || async {
            let c = fetch().await?;
            let expires = c.expires;
            Ok((c, expires))
        })
        .await
}

/// The credentials of one profile (boxed: `source_profile` recurses).
fn from_profile<'a>(
    env: &'a Env<'a>,
    files: &'a ProfileFiles,
    name: &'a str,
    section: &'a Section,
    fresh: bool,
    depth: usize,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Option<AwsCredentials>, String>> + Send + 'a>,
> {
    Box::pin(async move {
        if depth > MAX_PROFILE_DEPTH {
            return Err(format!(
                "AWS profile '{name}': source_profile chain is longer than {MAX_PROFILE_DEPTH} (a loop?)"
            ));
        }
        let role = section.get("role_arn").filter(|r| !r.is_empty());
        if let Some(role) = role {
            let session = section
                .get("role_session_name")
                .cloned()
                .unwrap_or_else(|| "makai".to_string());
            if let Some(token_file) = section.get("web_identity_token_file") {
                let key = format!("web-identity:{token_file}:{role}");
                return cached(&key, fresh, || {
                    remote::web_identity(env, token_file, role, &session)
                })
                .await
                .map(Some);
            }
            if let Some(source) = section.get("source_profile") {
                let source_section = files.profile(source).ok_or_else(|| {
                    format!(
                        "AWS profile '{name}' names source_profile '{source}', which is not defined"
                    )
                })?;
                // A profile that is its own source uses its static keys.
                let base = if source == name {
                    static_keys(source_section)
                } else {
                    from_profile(env, files, source, source_section, fresh, depth + 1).await?
                };
                let base = base.ok_or_else(|| {
                    format!(
                        "AWS profile '{source}' (the source_profile of '{name}') has no credentials"
                    )
                })?;
                let region = section
                    .get("region")
                    .cloned()
                    .or_else(|| region(env))
                    .unwrap_or_else(|| "us-east-1".to_string());
                let key = format!("assume-role:{name}:{role}:{}", base.access_key_id);
                return cached(&key, fresh, || {
                    remote::assume_role(env, &base, role, &session, &region)
                })
                .await
                .map(Some);
            }
            if section.contains_key("credential_source") {
                return Err(format!(
                    "AWS profile '{name}' uses credential_source, which makai does not support; \
                     use source_profile or static keys"
                ));
            }
        }
        if let Some(c) = static_keys(section) {
            return Ok(Some(c));
        }
        if section.contains_key("sso_session") || section.contains_key("sso_start_url") {
            let sso = remote::SsoProfile::from_profile(files, name, section)?;
            let key = format!("sso:{name}:{}:{}", sso.account_id, sso.role_name);
            return cached(&key, fresh, || remote::sso(env, &sso))
                .await
                .map(Some);
        }
        if let Some(command) = section.get("credential_process") {
            let key = format!("process:{command}");
            return cached(&key, fresh, || remote::process(command))
                .await
                .map(Some);
        }
        Ok(None)
    })
}
