//! The shared AWS config and credentials files (`~/.aws/config`,
//! `~/.aws/credentials`): sections, profiles and the keys of one profile.
//!
//! Follows the AWS CLI's rules: `[default]` and `[profile NAME]` in the config
//! file, `[NAME]` in the credentials file (whose values win for the same
//! profile), `[sso-session NAME]` sections, keys matched case-insensitively,
//! `#` and `;` comment lines, indented sub-properties ignored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::credentials::Env;

/// The keys of one section, names lowercased.
pub(crate) type Section = HashMap<String, String>;

/// Both files, parsed.
#[derive(Debug, Default)]
pub(crate) struct ProfileFiles {
    profiles: HashMap<String, Section>,
    sso_sessions: HashMap<String, Section>,
    /// The files read, for messages.
    pub(crate) sources: Vec<PathBuf>,
}

impl ProfileFiles {
    /// Reads the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`) and the
    /// credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
    /// `~/.aws/credentials`). Missing files are empty.
    pub(crate) fn load(env: &Env) -> Result<Self, String> {
        let mut files = ProfileFiles::default();
        if let Some(path) = env.path_or_home("AWS_CONFIG_FILE", ".aws/config") {
            files.read(&path, true)?;
        }
        if let Some(path) = env.path_or_home("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials") {
            files.read(&path, false)?;
        }
        Ok(files)
    }

    fn read(&mut self, path: &Path, config: bool) -> Result<(), String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        self.sources.push(path.to_path_buf());
        let mut current: Option<&mut Section> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if let Some(header) = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
                let header = header.trim();
                current = section_target(self, header, config);
                continue;
            }
            // Indented lines continue the previous key (sub-properties): ignored.
            if line.starts_with(char::is_whitespace) {
                continue;
            }
            if let (Some(section), Some((k, v))) = (current.as_deref_mut(), trimmed.split_once('='))
            {
                let value = strip_inline_comment(v.trim());
                section.insert(k.trim().to_ascii_lowercase(), value.to_string());
            }
        }
        Ok(())
    }

    /// The keys of profile `name`, if the files define it.
    pub(crate) fn profile(&self, name: &str) -> Option<&Section> {
        self.profiles.get(name)
    }

    /// The keys of `[sso-session name]`.
    pub(crate) fn sso_session(&self, name: &str) -> Option<&Section> {
        self.sso_sessions.get(name)
    }
}

fn section_target<'a>(
    files: &'a mut ProfileFiles,
    header: &str,
    config: bool,
) -> Option<&'a mut Section> {
    if let Some(name) = header.strip_prefix("sso-session") {
        let name = name.trim();
        return (config && !name.is_empty())
            .then(|| files.sso_sessions.entry(name.to_string()).or_default());
    }
    let name = if config {
        if header == "default" {
            "default"
        } else {
            header.strip_prefix("profile")?.trim()
        }
    } else {
        header
    };
    (!name.is_empty()).then(|| files.profiles.entry(name.to_string()).or_default())
}

/// `value ; comment` or `value # comment` (a comment needs a space before it).
fn strip_inline_comment(v: &str) -> &str {
    for marker in [" ;", " #", "\t;", "\t#"] {
        if let Some(i) = v.find(marker) {
            return v[..i].trim_end();
        }
    }
    v
}

/// The profile to use: `AWS_PROFILE`, else `default`.
pub(crate) fn profile_name(env: &Env) -> String {
    env.first(&["AWS_PROFILE", "AWS_DEFAULT_PROFILE"])
        .unwrap_or_else(|| "default".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_profiles_sessions_and_credentials_file_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let creds = dir.path().join("credentials");
        std::fs::write(
            &config,
            "# comment\n[default]\nregion = us-east-1\naws_access_key_id = from_config\n\
             [profile dev]\nREGION = eu-west-1 ; inline\ns3 =\n  max_concurrent_requests = 20\n\
             [sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n",
        )
        .unwrap();
        std::fs::write(&creds, "[default]\naws_access_key_id = from_credentials\n").unwrap();
        let mut o = std::collections::BTreeMap::new();
        o.insert("AWS_CONFIG_FILE".into(), config.display().to_string());
        o.insert(
            "AWS_SHARED_CREDENTIALS_FILE".into(),
            creds.display().to_string(),
        );
        let files = ProfileFiles::load(&Env::with(&o)).unwrap();
        let default = files.profile("default").unwrap();
        assert_eq!(default["aws_access_key_id"], "from_credentials");
        assert_eq!(default["region"], "us-east-1");
        assert_eq!(files.profile("dev").unwrap()["region"], "eu-west-1");
        assert!(
            !files
                .profile("dev")
                .unwrap()
                .contains_key("max_concurrent_requests")
        );
        assert_eq!(
            files.sso_session("corp").unwrap()["sso_start_url"],
            "https://corp.awsapps.com/start"
        );
    }
}
