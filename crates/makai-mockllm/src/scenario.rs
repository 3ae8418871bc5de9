//! [`Scenario`]: the ordered script of responses a server hands out, plus an
//! optional dynamic [`Responder`] used once the queue is empty.

use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::MockError;
use crate::record::RecordedRequest;
use crate::script::ScriptedResponse;

/// Computes a response from the request; used when the scripted queue is empty.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync>;

/// The text the [`Scenario::friendly`] scenario always answers.
pub const FRIENDLY_TEXT: &str =
    "Hello from makai-mockllm! This is a scripted reply from a local mock LLM server.";

/// An ordered queue of [`ScriptedResponse`]s, consumed one per LLM request
/// (on any route), plus an optional [`Responder`] for when the queue is empty.
/// With neither, a request gets a 500 `script exhausted` error.
#[derive(Clone, Default)]
pub struct Scenario {
    pub(crate) queue: VecDeque<ScriptedResponse>,
    pub(crate) responder: Option<Responder>,
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("queue", &self.queue)
            .field("responder", &self.responder.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

/// The object form of a JSON scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    responses: Vec<ScriptedResponse>,
    #[serde(default)]
    fallback: Option<ScriptedResponse>,
}

impl Scenario {
    /// An empty scenario (every request gets the exhaustion error until
    /// responses are pushed).
    pub fn new() -> Self {
        Self::default()
    }

    /// A scenario whose every request is answered by `responder`.
    pub fn from_responder(responder: Responder) -> Self {
        Self::new().with_responder(responder)
    }

    /// The default scenario of the binary: every request gets [`FRIENDLY_TEXT`].
    pub fn friendly() -> Self {
        Self::new().with_fallback(ScriptedResponse::text(FRIENDLY_TEXT))
    }

    /// Appends a response to the queue.
    pub fn push(mut self, response: ScriptedResponse) -> Self {
        self.queue.push_back(response);
        self
    }

    /// Appends several responses to the queue.
    pub fn extend(mut self, responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        self.queue.extend(responses);
        self
    }

    /// Sets the responder used once the queue is empty.
    pub fn with_responder(mut self, responder: Responder) -> Self {
        self.responder = Some(responder);
        self
    }

    /// Answers every request after the queue is exhausted with a clone of `response`.
    pub fn with_fallback(self, response: ScriptedResponse) -> Self {
        self.with_responder(Arc::new(move |_req: &RecordedRequest| response.clone()))
    }

    /// Number of queued responses.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Parses a scenario from JSON text (see the crate docs for the format).
    pub fn from_json_str(json: &str) -> Result<Self, MockError> {
        Ok(Self::from_parts(parse(json)?))
    }

    /// Reads and parses a JSON scenario file. Relative `replay_file` paths in
    /// it are taken relative to the file's directory.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, MockError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| MockError::ScenarioFile {
            path: path.to_path_buf(),
            source,
        })?;
        let mut file = parse(&text)?;
        if let Some(dir) = path.parent() {
            for resp in file.responses.iter_mut().chain(file.fallback.as_mut()) {
                if let Some(replay) = resp.replay_file.as_mut().filter(|f| f.is_relative()) {
                    *replay = dir.join(&*replay);
                }
            }
        }
        Ok(Self::from_parts(file))
    }

    fn from_parts(file: ScenarioFile) -> Self {
        let scenario = Self::new().extend(file.responses);
        match file.fallback {
            Some(fallback) => scenario.with_fallback(fallback),
            None => scenario,
        }
    }
}

/// Parses either JSON form of a scenario file.
fn parse(json: &str) -> Result<ScenarioFile, MockError> {
    if json.trim_start().starts_with('[') {
        let responses = serde_json::from_str(json).map_err(MockError::ScenarioJson)?;
        return Ok(ScenarioFile {
            responses,
            fallback: None,
        });
    }
    serde_json::from_str(json).map_err(MockError::ScenarioJson)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::script::{ErrorKind, Item, StopKind};
    use std::time::Duration;

    #[test]
    fn parses_full_file() {
        let json = r#"{
            "responses": [
                {"items": [{"text": "Hi"}, {"thinking": {"text": "hmm", "signature": "sig"}}]},
                {"items": [{"tool_call": {"id": "c1", "name": "read", "arguments": {"path": "a"}}}],
                 "delay_per_event": 5, "error_event_after": [2, "overloaded"], "stop": "tool_use"},
                {"status": 429, "headers": [["retry-after", "2"]], "body_override": "{}"}
            ],
            "fallback": {"items": [{"text": "again"}]}
        }"#;
        let s = Scenario::from_json_str(json).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s.queue[0].items,
            vec![Item::text("Hi"), Item::thinking_signed("hmm", "sig")]
        );
        let r1 = &s.queue[1];
        assert_eq!(
            r1.items,
            vec![Item::tool_call("c1", "read", r#"{"path":"a"}"#)]
        );
        assert_eq!(r1.delay_per_event, Some(Duration::from_millis(5)));
        assert_eq!(r1.error_event_after, Some((2, ErrorKind::Overloaded)));
        assert_eq!(r1.stop, Some(StopKind::ToolUse));
        assert_eq!(s.queue[2].status, 429);
        assert!(s.responder.is_some());
    }

    #[test]
    fn parses_list_and_rejects_typos() {
        let s = Scenario::from_json_str(r#"[{"items":[{"text":"a"}]}, {}]"#).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.queue[1].status, 200);
        assert!(Scenario::from_json_str(r#"[{"itemz": []}]"#).is_err());
    }

    #[test]
    fn file_replay_paths_are_relative_to_the_file() {
        let dir = std::env::temp_dir().join(format!("mockllm-scn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.json");
        std::fs::write(
            &file,
            r#"{"responses": [{"replay_file": "a.sse"}, {"replay_file": "/abs.sse"}]}"#,
        )
        .unwrap();
        let s = Scenario::from_file(&file).unwrap();
        assert_eq!(
            s.queue[0].replay_file.as_deref(),
            Some(dir.join("a.sse").as_path())
        );
        assert_eq!(
            s.queue[1].replay_file.as_deref(),
            Some(Path::new("/abs.sse"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            Scenario::from_file(dir.join("missing.json")),
            Err(MockError::ScenarioFile { .. })
        ));
    }

    #[test]
    fn round_trips_through_serde() {
        let r = ScriptedResponse::text("x")
            .delay(7)
            .error_after(1, ErrorKind::RateLimit);
        let text = serde_json::to_string(&r).unwrap();
        let back: ScriptedResponse = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
