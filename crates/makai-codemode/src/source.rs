//! A script's source: the optional options line, then the code.

use std::time::Duration;

use serde::Deserialize;

/// The default of `max_output_tokens`.
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 10_000;

/// What the options line sets (pi's `// @options: {...}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptOptions {
    /// The output's limit in estimated tokens (characters / 4); a longer
    /// output keeps its start and end and the whole goes to a file.
    pub max_output_tokens: usize,
    /// A hard deadline for the whole script, the wait for a worker included.
    /// None by default.
    pub timeout: Option<Duration>,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions {
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            timeout: None,
        }
    }
}

/// A script ready to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The code: the body of an async function.
    pub code: String,
    /// Its options.
    pub options: ScriptOptions,
}

/// A source that cannot run: the call fails before the script starts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceError {
    /// An options line that is not the first line.
    #[error(
        "the options line must be the script's first line (found on line {line}); move it to the top"
    )]
    OptionsNotFirst {
        /// Its line number, from 1.
        line: usize,
    },
    /// The options are not a JSON object of the known options.
    #[error(
        "invalid options line: {reason}. Write it as // @options: {{\"max_output_tokens\": 2000, \"timeout_ms\": 60000}}"
    )]
    InvalidOptions {
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsLine {
    max_output_tokens: Option<u64>,
    timeout_ms: Option<u64>,
    /// The form of pi's earlier versions: seconds.
    timeout: Option<f64>,
}

const MARKER: &str = "@options";

/// The JSON of an options line, when `line` is one: `// @options: {...}`
/// (the colon may be left out).
fn options_json(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("//")?.trim_start();
    let rest = rest.strip_prefix(MARKER)?;
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    Some(rest.trim())
}

impl Script {
    /// Reads a source: an options line may only be the first line.
    pub fn parse(source: &str) -> Result<Script, SourceError> {
        let mut lines = source.split('\n');
        let first = lines.next().unwrap_or("");
        if let Some(line) = lines
            .enumerate()
            .find(|(_, l)| options_json(l).is_some())
            .map(|(i, _)| i + 2)
        {
            return Err(SourceError::OptionsNotFirst { line });
        }
        let Some(json) = options_json(first) else {
            return Ok(Script {
                code: source.to_string(),
                options: ScriptOptions::default(),
            });
        };
        let read: OptionsLine =
            serde_json::from_str(json).map_err(|e| SourceError::InvalidOptions {
                reason: e.to_string(),
            })?;
        let mut options = ScriptOptions::default();
        if let Some(tokens) = read.max_output_tokens {
            if tokens == 0 {
                return Err(SourceError::InvalidOptions {
                    reason: "max_output_tokens must be at least 1".into(),
                });
            }
            options.max_output_tokens = usize::try_from(tokens).unwrap_or(usize::MAX);
        }
        options.timeout = match (read.timeout_ms, read.timeout) {
            (Some(0), _) => {
                return Err(SourceError::InvalidOptions {
                    reason: "timeout_ms must be at least 1".into(),
                });
            }
            (Some(ms), _) => Some(Duration::from_millis(ms)),
            (None, Some(s)) if s.is_finite() && s > 0.0 && s < 2_147_483.0 => {
                Some(Duration::from_secs_f64(s))
            }
            (None, Some(_)) => {
                return Err(SourceError::InvalidOptions {
                    reason: "timeout must be a positive number of seconds".into(),
                });
            }
            (None, None) => None,
        };
        // The options line stays as a comment, so line numbers in errors
        // match the source.
        Ok(Script {
            code: source.to_string(),
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_line_sets_tokens_and_timeout() {
        let s = Script::parse(
            "// @options: {\"max_output_tokens\": 2000, \"timeout_ms\": 60000}\nreturn 1",
        )
        .unwrap();
        assert_eq!(s.options.max_output_tokens, 2000);
        assert_eq!(s.options.timeout, Some(Duration::from_secs(60)));
        let s = Script::parse("// @options {\"timeout\": 30}\nreturn 1").unwrap();
        assert_eq!(s.options.timeout, Some(Duration::from_secs(30)));
    }

    #[test]
    fn options_line_elsewhere_fails() {
        assert_eq!(
            Script::parse("return 1\n// @options: {}"),
            Err(SourceError::OptionsNotFirst { line: 2 })
        );
        assert!(matches!(
            Script::parse("// @options: {\"colour\": 1}"),
            Err(SourceError::InvalidOptions { .. })
        ));
        assert_eq!(
            Script::parse("return 2").unwrap().options,
            ScriptOptions::default()
        );
    }
}
