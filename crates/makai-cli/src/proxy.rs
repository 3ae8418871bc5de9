//! pi's `httpProxy` setting: a proxy URL applied as `HTTP_PROXY` and
//! `HTTPS_PROXY` for the whole process (the model connections, logins, MCP
//! servers over HTTP, and the commands makai runs), read from the user's
//! settings only (makai's `settings.json` over pi's `~/.pi/agent` one): a
//! project cannot send the user's traffic through a proxy of its choosing.
//!
//! Loopback stays direct: makai's model connections never take a proxy to
//! it (`makai_ai::http`), and `NO_PROXY`, when the user has not set it, is
//! set to loopback for the rest (logins, MCP servers over HTTP, the commands
//! makai runs), so local servers keep working.
//! `main` applies it before any thread starts, as the environment may only
//! be changed then.

use std::path::Path;

/// The `httpProxy` of the user settings files: makai's own (`home`) before
/// pi's (`pi_agent_dir`); `None` when neither sets a non-empty string. A file
/// that cannot be read is passed over here: the run reports it when it loads
/// its settings.
pub fn from_user_settings(home: Option<&Path>, pi_agent_dir: Option<&Path>) -> Option<String> {
    let read = |dir: &Path| {
        let file = makai_coding::settings::Settings::user_file(dir);
        makai_coding::settings::read_settings_file(&file)
            .ok()
            .flatten()?
            .get("httpProxy")?
            .as_str()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
    };
    home.and_then(read).or_else(|| pi_agent_dir.and_then(read))
}

/// The variables [`from_user_settings`]'s proxy is applied as.
pub const PROXY_VARS: [&str; 2] = ["HTTP_PROXY", "HTTPS_PROXY"];

/// Applies the user settings' `httpProxy` to this process's environment.
///
/// # Safety
///
/// No other thread may exist (see [`std::env::set_var`]).
pub unsafe fn apply_from_user_settings() {
    let proxy = from_user_settings(
        makai_coding::makai_home().as_deref(),
        makai_coding::resources::pi_agent_dir().as_deref(),
    );
    if let Some(proxy) = proxy {
        for var in PROXY_VARS {
            // SAFETY: the caller guarantees no other thread exists.
            unsafe { std::env::set_var(var, &proxy) };
        }
        // A local server (the built-in model, Ollama) is not reached through
        // the proxy, unless the user's own NO_PROXY says otherwise.
        if ["NO_PROXY", "no_proxy"]
            .iter()
            .all(|v| std::env::var_os(v).is_none())
        {
            // SAFETY: as above.
            unsafe { std::env::set_var("NO_PROXY", LOOPBACK) };
        }
    }
}

/// What `NO_PROXY` becomes when `httpProxy` applies and it was unset.
pub const LOOPBACK: &str = "localhost,127.0.0.1,::1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makai_s_file_wins_over_pi_s_and_an_empty_value_is_none() {
        let makai = tempfile::tempdir().unwrap();
        let pi = tempfile::tempdir().unwrap();
        let write = |dir: &Path, v: serde_json::Value| {
            std::fs::write(dir.join("settings.json"), v.to_string()).unwrap()
        };
        assert_eq!(
            from_user_settings(Some(makai.path()), Some(pi.path())),
            None
        );
        write(
            pi.path(),
            serde_json::json!({"httpProxy": "http://pi:3128"}),
        );
        assert_eq!(
            from_user_settings(Some(makai.path()), Some(pi.path())).as_deref(),
            Some("http://pi:3128")
        );
        write(
            makai.path(),
            serde_json::json!({"httpProxy": " http://makai:8080 "}),
        );
        assert_eq!(
            from_user_settings(Some(makai.path()), Some(pi.path())).as_deref(),
            Some("http://makai:8080")
        );
        write(makai.path(), serde_json::json!({"httpProxy": ""}));
        assert_eq!(
            from_user_settings(Some(makai.path()), Some(pi.path())).as_deref(),
            Some("http://pi:3128")
        );
    }
}
