//! The server's bearer token: generated at first start, stored with mode 0600.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;

/// Why the token could not be loaded or created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Neither `MAKAI_HOME` nor `HOME` is set.
    #[error(
        "cannot find the token file: neither MAKAI_HOME nor HOME is set; set MAKAI_HOME or give the token path explicitly"
    )]
    NoHome,
    /// Reading, creating or writing the file failed.
    #[error("cannot {action} the token file {path}: {source}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is readable or writable by other users.
    #[error(
        "the token file {path} has mode {mode:o}, so other users can read it; run `chmod 600 {path}` (or delete it to get a new token)"
    )]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file exists but holds no usable token.
    #[error(
        "the token file {path} is empty or not a token; delete it and start again to generate a new one"
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The system random number generator failed.
    #[error("cannot generate a token: the system random generator failed: {0}")]
    Random(String),
}

/// The server's token, and whether it was just created.
#[derive(Clone)]
pub struct ServeToken {
    secret: String,
    path: PathBuf,
    created: bool,
}

impl fmt::Debug for ServeToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeToken")
            .field("secret", &"<redacted>")
            .field("path", &self.path)
            .field("created", &self.created)
            .finish()
    }
}

impl ServeToken {
    /// `${MAKAI_HOME:-~/.makai}/serve-token`.
    pub fn default_path() -> Result<PathBuf, TokenError> {
        let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(home) = non_empty("MAKAI_HOME") {
            return Ok(PathBuf::from(home).join("serve-token"));
        }
        let home = non_empty("HOME").ok_or(TokenError::NoHome)?;
        Ok(PathBuf::from(home).join(".makai").join("serve-token"))
    }

    /// Loads the token from `path`, or generates one and stores it there with
    /// mode 0600 (creating the directory with mode 0700). Check
    /// [`ServeToken::was_created`] to print a new token once.
    pub fn load_or_create(path: &Path) -> Result<ServeToken, TokenError> {
        match std::fs::read_to_string(path) {
            Ok(text) => return Self::from_existing(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(TokenError::Io {
                    action: "read",
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        let secret = generate_token()?;
        let io = |action| {
            move |source| TokenError::Io {
                action,
                path: path.to_path_buf(),
                source,
            }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(dir).map_err(io("create the directory of"))?;
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut file = match opts.open(path) {
            Ok(f) => f,
            // Another process created it meanwhile: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(path).map_err(io("read"))?;
                return Self::from_existing(path, &text);
            }
            Err(e) => return Err(io("create")(e)),
        };
        file.write_all(format!("{secret}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io("write"))?;
        Ok(ServeToken {
            secret,
            path: path.to_path_buf(),
            created: true,
        })
    }

    fn from_existing(path: &Path, text: &str) -> Result<ServeToken, TokenError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(path).map_err(|source| TokenError::Io {
                action: "inspect",
                path: path.to_path_buf(),
                source,
            })?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(TokenError::TooOpen {
                    path: path.to_path_buf(),
                    mode,
                });
            }
        }
        let secret = text.trim();
        if secret.len() < 16 || secret.chars().any(char::is_whitespace) {
            return Err(TokenError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(ServeToken {
            secret: secret.to_string(),
            path: path.to_path_buf(),
            created: false,
        })
    }

    /// The token itself (give it to clients; never log it).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// True when this call generated the token (print it once).
    pub fn was_created(&self) -> bool {
        self.created
    }

    /// Where the token is stored.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A fresh random token: `mk_` and 43 URL-safe base64 characters (256 bits from the OS generator).
pub fn generate_token() -> Result<String, TokenError> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| TokenError::Random(e.to_string()))?;
    Ok(format!(
        "mk_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    ))
}

/// Compares two secrets in time independent of where they differ.
pub fn tokens_match(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_loaded_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("serve-token");
        let first = ServeToken::load_or_create(&path).unwrap();
        assert!(first.was_created());
        assert!(first.secret().starts_with("mk_") && first.secret().len() == 46);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let second = ServeToken::load_or_create(&path).unwrap();
        assert!(!second.was_created());
        assert_eq!(second.secret(), first.secret());
        assert!(!format!("{second:?}").contains(first.secret()));
    }

    #[cfg(unix)]
    #[test]
    fn world_readable_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve-token");
        std::fs::write(&path, "mk_0123456789abcdefghij\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ServeToken::load_or_create(&path).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[test]
    fn empty_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve-token");
        let ok = ServeToken::load_or_create(&path).unwrap();
        std::fs::write(&path, "\n").unwrap();
        let err = ServeToken::load_or_create(&path).unwrap_err();
        assert!(err.to_string().contains("delete it"), "{err} {ok:?}");
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abd", "abc"));
        assert!(!tokens_match("abc", "abcd"));
        assert!(!tokens_match("", "abc"));
        assert!(!tokens_match(
            &generate_token().unwrap(),
            &generate_token().unwrap()
        ));
    }
}
