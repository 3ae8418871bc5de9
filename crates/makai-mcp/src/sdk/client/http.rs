//! The streamable HTTP transport of a server, its headers and address with
//! their `${VAR}`s expanded.

use std::collections::HashMap;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::load::expand_vars;

pub(super) fn warn_missing(server: &str, missing: &[String]) {
    for var in missing {
        tracing::warn!(
            server,
            "MCP server config refers to ${{{var}}}, which is not set; it was replaced by an empty string"
        );
    }
}

pub(super) fn http_transport(
    name: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    from_commands: &std::collections::BTreeMap<String, String>,
    parent_env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut map = HashMap::new();
    for (k, v) in headers {
        // A `!command` header is its command's output, taken as it is.
        let value = match from_commands.get(k) {
            Some(value) => value.clone(),
            None => {
                let (value, missing) = expand_vars(v, parent_env);
                warn_missing(name, &missing);
                value
            }
        };
        let hn = HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("header name {k:?} is invalid: {e}"))?;
        let hv = HeaderValue::from_str(&value)
            .map_err(|e| format!("the value of header {k:?} is invalid: {e}"))?;
        map.insert(hn, hv);
    }
    let (url, missing) = expand_vars(url, parent_env);
    warn_missing(name, &missing);
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    Ok(StreamableHttpClientTransport::from_config(config))
}
