//! AWS credential sources that ask someone else: the SSO portal, STS
//! (web identity and role assumption), the container credentials endpoint,
//! and a `credential_process` command.

use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::profile::{ProfileFiles, Section};
use crate::credentials::{AwsCredentials, Env};
use crate::options::ApiKey;

const TIMEOUT: Duration = Duration::from_secs(30);

/// What an SSO profile names.
pub(super) struct SsoProfile {
    /// The cache key: the session name, or the start URL of a legacy profile.
    cache_key: String,
    region: String,
    pub(super) account_id: String,
    pub(super) role_name: String,
    profile: String,
}

impl SsoProfile {
    pub(super) fn from_profile(
        files: &ProfileFiles,
        name: &str,
        section: &Section,
    ) -> Result<Self, String> {
        let need = |key: &str| {
            section
                .get(key)
                .filter(|v| !v.is_empty())
                .cloned()
                .ok_or_else(|| format!("AWS profile '{name}' uses SSO but has no {key}"))
        };
        let account_id = need("sso_account_id")?;
        let role_name = need("sso_role_name")?;
        let (cache_key, region) = match section.get("sso_session") {
            Some(session) => {
                let s = files.sso_session(session).ok_or_else(|| {
                    format!(
                        "AWS profile '{name}' names sso_session '{session}', which is not defined"
                    )
                })?;
                let region = s
                    .get("sso_region")
                    .cloned()
                    .ok_or_else(|| format!("sso-session '{session}' has no sso_region"))?;
                (session.clone(), region)
            }
            None => (need("sso_start_url")?, need("sso_region")?),
        };
        Ok(SsoProfile {
            cache_key,
            region,
            account_id,
            role_name,
            profile: name.to_string(),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SsoToken {
    access_token: String,
    expires_at: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleCredentialsResponse {
    role_credentials: RoleCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    /// Unix milliseconds.
    expiration: Option<i64>,
}

fn sha1_hex(text: &str) -> String {
    let digest = aws_lc_rs::digest::digest(
        &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
        text.as_bytes(),
    );
    hex::encode(digest.as_ref())
}

fn parse_time(text: &str) -> Option<SystemTime> {
    let t = chrono::DateTime::parse_from_rfc3339(text.trim()).ok()?;
    let secs = u64::try_from(t.timestamp()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Role credentials from the SSO portal, with the token `aws sso login` cached.
pub(super) async fn sso(env: &Env<'_>, sso: &SsoProfile) -> Result<AwsCredentials, String> {
    let login = format!("run `aws sso login --profile {}`", sso.profile);
    let path = env
        .home()
        .map(|h| {
            h.join(".aws/sso/cache")
                .join(format!("{}.json", sha1_hex(&sso.cache_key)))
        })
        .ok_or_else(|| "no home folder for the AWS SSO token cache (set HOME)".to_string())?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no AWS SSO token for profile '{}' ({}: {e}); {login}",
            sso.profile,
            path.display()
        )
    })?;
    let token: SsoToken = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the AWS SSO token cache {} is not valid ({e}); {login}",
            path.display()
        )
    })?;
    if parse_time(&token.expires_at).is_none_or(|t| t <= SystemTime::now()) {
        return Err(format!(
            "the AWS SSO token of profile '{}' has expired; {login}",
            sso.profile
        ));
    }
    let base = env
        .get("AWS_ENDPOINT_URL_SSO")
        .unwrap_or_else(|| format!("https://portal.sso.{}.amazonaws.com", sso.region));
    let url = format!("{}/federation/credentials", base.trim_end_matches('/'));
    let query = crate::credentials::form_body(&[
        ("account_id", sso.account_id.as_str()),
        ("role_name", sso.role_name.as_str()),
    ]);
    let response = crate::http_client()
        .get(format!("{url}?{query}"))
        .header("x-amz-sso_bearer_token", &token.access_token)
        .header("accept", "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("could not reach the AWS SSO portal {url}: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "the AWS SSO portal answered HTTP {status} for role {} of account {}: {}; {login}",
            sso.role_name,
            sso.account_id,
            crate::error::error_message_from_body(&body)
        ));
    }
    let parsed: RoleCredentialsResponse = serde_json::from_str(&body)
        .map_err(|e| format!("the AWS SSO portal sent an unexpected answer ({e})"))?;
    let c = parsed.role_credentials;
    Ok(AwsCredentials {
        access_key_id: c.access_key_id,
        secret_access_key: ApiKey::new(c.secret_access_key),
        session_token: c.session_token.map(ApiKey::new),
        expires: c
            .expiration
            .and_then(|ms| u64::try_from(ms).ok())
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms)),
    })
}

fn sts_endpoint(env: &Env, region: &str) -> String {
    env.get("AWS_ENDPOINT_URL_STS")
        .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com/"))
}

/// The text between `<tag>` and `</tag>`.
fn xml_value<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(xml[start..end].trim())
}

fn sts_credentials(
    what: &str,
    status: reqwest::StatusCode,
    xml: &str,
) -> Result<AwsCredentials, String> {
    if !status.is_success() {
        let code = xml_value(xml, "Code").unwrap_or("");
        let message = xml_value(xml, "Message").unwrap_or("(no message)");
        return Err(format!(
            "AWS STS {what} failed: HTTP {status} {code}: {message}"
        ));
    }
    let field = |tag: &str| {
        xml_value(xml, tag)
            .map(str::to_string)
            .ok_or_else(|| format!("AWS STS {what} answered without {tag}"))
    };
    Ok(AwsCredentials {
        access_key_id: field("AccessKeyId")?,
        secret_access_key: ApiKey::new(field("SecretAccessKey")?),
        session_token: Some(ApiKey::new(field("SessionToken")?)),
        expires: xml_value(xml, "Expiration").and_then(parse_time),
    })
}

use crate::credentials::form_body as form;

/// `AssumeRoleWithWebIdentity` with the token in `token_file` (unsigned).
pub(super) async fn web_identity(
    env: &Env<'_>,
    token_file: &str,
    role: &str,
    session: &str,
) -> Result<AwsCredentials, String> {
    let path = crate::credentials::env::expand_home(token_file, env);
    let token = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the web identity token file {}: {e}",
            path.display()
        )
    })?;
    let region = super::region(env).unwrap_or_else(|| "us-east-1".to_string());
    let url = sts_endpoint(env, &region);
    let body = form(&[
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role),
        ("RoleSessionName", session),
        ("WebIdentityToken", token.trim()),
    ]);
    let response = crate::http_client()
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .timeout(TIMEOUT)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("could not reach AWS STS at {url}: {e}"))?;
    let status = response.status();
    let xml = response.text().await.unwrap_or_default();
    sts_credentials("AssumeRoleWithWebIdentity", status, &xml)
}

/// `AssumeRole`, signed with the source profile's credentials.
pub(super) async fn assume_role(
    env: &Env<'_>,
    base: &AwsCredentials,
    role: &str,
    session: &str,
    region: &str,
) -> Result<AwsCredentials, String> {
    let url = sts_endpoint(env, region);
    let body = form(&[
        ("Action", "AssumeRole"),
        ("Version", "2011-06-15"),
        ("RoleArn", role),
        ("RoleSessionName", session),
    ]);
    let mut headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    let scope = crate::sigv4::SigningScope {
        region: region.to_string(),
        service: "sts".to_string(),
    };
    let signed = crate::sigv4::sign(
        "POST",
        &url,
        &headers,
        body.as_bytes(),
        base,
        &scope,
        SystemTime::now(),
    )?;
    headers.extend(signed);
    let mut request = crate::http_client().post(&url).timeout(TIMEOUT);
    for (k, v) in &headers {
        request = request.header(k, v);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| format!("could not reach AWS STS at {url}: {e}"))?;
    let status = response.status();
    let xml = response.text().await.unwrap_or_default();
    sts_credentials("AssumeRole", status, &xml)
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ProcessOrContainer {
    access_key_id: String,
    secret_access_key: String,
    #[serde(alias = "Token")]
    session_token: Option<String>,
    expiration: Option<String>,
}

impl ProcessOrContainer {
    fn into_credentials(self) -> AwsCredentials {
        AwsCredentials {
            access_key_id: self.access_key_id,
            secret_access_key: ApiKey::new(self.secret_access_key),
            session_token: self
                .session_token
                .filter(|t| !t.is_empty())
                .map(ApiKey::new),
            expires: self.expiration.as_deref().and_then(parse_time),
        }
    }
}

/// The container credentials endpoint (ECS task roles, EKS pod identity).
pub(super) async fn container(env: &Env<'_>) -> Result<AwsCredentials, String> {
    let url = match (
        env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(relative), _) => format!("http://169.254.170.2{relative}"),
        (None, Some(full)) => full,
        (None, None) => return Err("no container credentials endpoint is set".to_string()),
    };
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(file) => Some(
            std::fs::read_to_string(&file)
                .map_err(|e| {
                    format!("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {e}")
                })?
                .trim()
                .to_string(),
        ),
        None => env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    };
    let mut request = crate::http_client()
        .get(&url)
        .header("accept", "application/json")
        .timeout(TIMEOUT);
    if let Some(t) = token {
        request = request.header("authorization", t);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("could not reach the container credentials endpoint {url}: {e}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!(
            "the container credentials endpoint {url} answered HTTP {status}: {}",
            crate::error::error_message_from_body(&body)
        ));
    }
    serde_json::from_str::<ProcessOrContainer>(&body)
        .map(ProcessOrContainer::into_credentials)
        .map_err(|e| {
            format!("the container credentials endpoint {url} sent an unexpected answer ({e})")
        })
}

/// Runs a profile's `credential_process` and reads its JSON.
pub(super) async fn process(command: &str) -> Result<AwsCredentials, String> {
    let stdout = crate::shell_command::run_shell_command(command, Some(Duration::from_secs(60)))
        .await
        .map_err(|e| format!("credential_process `{command}` {e}"))?;
    serde_json::from_slice::<ProcessOrContainer>(&stdout)
        .map(ProcessOrContainer::into_credentials)
        .map_err(|e| {
            format!("credential_process `{command}` printed no valid credentials JSON ({e})")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sso_cache_file_names_are_sha1_of_the_key() {
        // From the AWS SDK test data (e2e_fips_and_dual_stack_sso).
        assert_eq!(
            sha1_hex("https://ssotest.awsapps.com/start"),
            "dace00cba5f8355ec9d274ceb2bcebdfbeed0e12"
        );
    }

    #[test]
    fn sts_errors_name_the_code() {
        let xml = "<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized</Message></Error></ErrorResponse>";
        let e = sts_credentials("AssumeRole", reqwest::StatusCode::FORBIDDEN, xml).unwrap_err();
        assert!(
            e.contains("AccessDenied") && e.contains("Not authorized"),
            "{e}"
        );
    }
}
