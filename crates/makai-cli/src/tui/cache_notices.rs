//! pi's `showCacheMissNotices` (off by default): notices for a significant
//! prompt-cache miss, what a compaction's summary cost, and a model call
//! that succeeded after retries.

use makai_agent::AgentEvent;
use makai_ai::Usage;
use makai_coding::cache_warming::warmed_text;

use super::transcript::{Level, Transcript};

/// A prompt shorter than this is not worth a notice.
const MIN_PROMPT_TOKENS: u64 = 1024;

/// What the notices remember between events.
#[derive(Clone, Debug, Default)]
pub struct CacheNotices {
    enabled: bool,
    /// The prompt size of the last call that used the cache.
    last_cached_prompt: Option<u64>,
    /// The transcript item of the last cache-warming notice and the cost it
    /// adds up (consecutive refreshes make one line, as in pi).
    warmed: Option<(usize, f64)>,
}

impl CacheNotices {
    /// Notices as the settings say (`showCacheMissNotices`).
    pub fn new(settings: &makai_coding::Settings) -> Self {
        CacheNotices {
            enabled: settings.extra.get("showCacheMissNotices")
                == Some(&serde_json::Value::Bool(true)),
            last_cached_prompt: None,
            warmed: None,
        }
    }

    /// Turns the notices on or off as the settings now say (`/reload`).
    pub fn configure(&mut self, settings: &makai_coding::Settings) {
        self.enabled = Self::new(settings).enabled;
    }

    /// A cache-warming refresh that cost `cost` was recorded: its notice,
    /// one line for consecutive refreshes (`Cache warmed: $0.045`).
    pub fn on_warmed(&mut self, transcript: &mut Transcript, cost: f64) {
        if !self.enabled {
            return;
        }
        let last = transcript.items().len().checked_sub(1);
        match self.warmed {
            Some((item, total)) if Some(item) == last => {
                let total = total + cost;
                transcript.set_notice(item, warmed_text(total));
                self.warmed = Some((item, total));
            }
            _ => {
                transcript.notice(Level::Info, warmed_text(cost));
                self.warmed = transcript.items().len().checked_sub(1).map(|i| (i, cost));
            }
        }
    }

    /// The notice `ev` calls for, if any.
    pub fn on_event(&mut self, ev: &AgentEvent) -> Option<String> {
        if !self.enabled {
            return None;
        }
        match ev {
            AgentEvent::MessageEnd { message } => {
                let usage = &message.as_assistant()?.usage;
                self.on_usage(usage)
            }
            AgentEvent::CompactionEnd {
                result: Some(info), ..
            } => {
                let u = info.usage.as_ref()?;
                Some(format!(
                    "Compaction used {} tokens in, {} out (${:.4}).",
                    u.input + u.cache_read + u.cache_write,
                    u.output,
                    u.cost.total
                ))
            }
            AgentEvent::AutoRetryEnd {
                success: true,
                attempt,
                ..
            } => Some(format!(
                "The provider recovered after {attempt} {}.",
                if *attempt == 1 { "retry" } else { "retries" }
            )),
            _ => None,
        }
    }

    fn on_usage(&mut self, u: &Usage) -> Option<String> {
        let prompt = u.input + u.cache_read + u.cache_write;
        let before = self.last_cached_prompt;
        if u.cache_read + u.cache_write > 0 {
            self.last_cached_prompt = Some(prompt);
        }
        let before = before?;
        // The cache held at least the last prompt: most of it should be read.
        let expected = before.min(prompt);
        if prompt < MIN_PROMPT_TOKENS || u.cache_read * 2 >= expected {
            return None;
        }
        Some(format!(
            "Cache miss: {} of {prompt} prompt tokens were not read from the cache (${:.4} for them).",
            prompt - u.cache_read,
            u.cost.input + u.cost.cache_write
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input,
            cache_read,
            cache_write,
            ..Default::default()
        }
    }

    #[test]
    fn a_prompt_that_misses_a_warm_cache_is_said() {
        let mut n = CacheNotices {
            enabled: true,
            ..Default::default()
        };
        assert_eq!(n.on_usage(&usage(5_000, 0, 5_000)), None, "cold");
        assert_eq!(n.on_usage(&usage(200, 10_000, 300)), None, "a hit");
        let said = n.on_usage(&usage(10_700, 0, 0)).unwrap();
        assert!(said.starts_with("Cache miss: 10700 of 10700"), "{said}");
        assert_eq!(n.on_usage(&usage(100, 0, 0)), None, "too small to say");
    }
}
