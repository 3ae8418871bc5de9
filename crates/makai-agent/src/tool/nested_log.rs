//! The bounded record of the nested calls one tool call makes (pi's
//! `nestedCalls`): what was called with what, how it ended and how long it
//! took, never its result. The loop puts it on the calling tool's result
//! message, where sessions keep it and compaction's file lists read it.
//!
//! pi's bounds: a call's arguments over 8 KiB are left out (their size
//! kept), as are any once the kept arguments reach 32 KiB; at most 256 calls
//! are kept; a record that lost anything says it is not complete.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use makai_ai::{NestedCallStatus, NestedToolCall, NestedToolCalls};
use serde_json::{Map, Value};

/// Arguments larger than this (compact JSON) are left out of a record.
pub const MAX_CALL_ARGUMENT_BYTES: usize = 8 * 1024;
/// The kept arguments of one tool call's record stay under this.
pub const MAX_RECORD_ARGUMENT_BYTES: usize = 32 * 1024;
/// At most this many nested calls are recorded per tool call.
pub const MAX_RECORDED_CALLS: usize = 256;
/// A failed call's error text is cut to this many characters.
const MAX_ERROR_CHARS: usize = 1_000;

/// The nested calls of one tool call, recorded as they start and end.
#[derive(Debug, Default)]
pub(crate) struct NestedLog {
    state: Mutex<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    /// Calls started, recorded or not: the next call's number.
    started: usize,
    argument_bytes: usize,
    record: NestedToolCalls,
    lost: bool,
}

/// Where a started call's record is, when it was kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot(Option<usize>);

impl NestedLog {
    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Numbers a call of the tool call `parent_id` (its id is
    /// `<parent_id>/<n>`, `n` counting from 1) and records it as started
    /// (`unfinished` until [`NestedLog::end`]).
    pub(crate) fn start(&self, parent_id: &str, name: &str, args: &Value) -> (String, Slot) {
        let mut s = self.lock();
        s.started += 1;
        let id = format!("{parent_id}/{}", s.started);
        if s.record.calls.len() >= MAX_RECORDED_CALLS {
            s.lost = true;
            return (id, Slot(None));
        }
        let (arguments, arguments_bytes) = match args {
            Value::Object(map) => {
                let bytes = serde_json::to_vec(map).map(|v| v.len()).unwrap_or(0);
                if bytes > MAX_CALL_ARGUMENT_BYTES
                    || s.argument_bytes + bytes > MAX_RECORD_ARGUMENT_BYTES
                {
                    s.lost = true;
                    (None, Some(bytes as u64))
                } else {
                    s.argument_bytes += bytes;
                    (Some(map.clone()), None)
                }
            }
            _ => (Some(Map::new()), None),
        };
        s.record.calls.push(NestedToolCall {
            id: id.clone(),
            name: name.to_string(),
            arguments,
            arguments_bytes,
            status: NestedCallStatus::Unfinished,
            duration_ms: None,
            error: None,
        });
        let slot = Slot(Some(s.record.calls.len() - 1));
        (id, slot)
    }

    /// Records how a started call ended: its error text when it failed.
    pub(crate) fn end(&self, slot: Slot, took: Duration, error: Option<String>) {
        let Some(i) = slot.0 else { return };
        let mut s = self.lock();
        let mut lost = false;
        if let Some(call) = s.record.calls.get_mut(i) {
            call.duration_ms = Some(took.as_millis() as u64);
            call.status = match error {
                None => NestedCallStatus::Ok,
                Some(_) => NestedCallStatus::Error,
            };
            call.error = error.map(|text| {
                if text.chars().count() <= MAX_ERROR_CHARS {
                    return text;
                }
                lost = true;
                text.chars().take(MAX_ERROR_CHARS).collect()
            });
        }
        s.lost |= lost;
    }

    /// The record, when any call was made.
    pub(crate) fn take(&self) -> Option<NestedToolCalls> {
        let mut s = self.lock();
        if s.started == 0 {
            return None;
        }
        let mut record = std::mem::take(&mut s.record);
        record.complete = !s.lost;
        Some(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_are_recorded_within_pi_bounds() {
        let log = NestedLog::default();
        assert!(log.take().is_none(), "no call, no record");
        let (id, small) = log.start("c", "read", &json!({"path": "a.txt"}));
        assert_eq!(id, "c/1");
        let (_, big) = log.start("c", "write", &json!({"content": "x".repeat(9_000)}));
        let (id, _open) = log.start("c", "bash", &json!({"command": "sleep 9"}));
        assert_eq!(id, "c/3");
        log.end(small, Duration::from_millis(3), None);
        log.end(big, Duration::from_millis(5), Some("disk full".into()));
        let record = log.take().unwrap_or_default();
        assert!(!record.complete, "the big arguments were left out");
        assert_eq!(record.calls.len(), 3);
        assert_eq!(
            record.calls[0].arguments,
            json!({"path": "a.txt"}).as_object().cloned()
        );
        assert_eq!(record.calls[0].status, NestedCallStatus::Ok);
        assert_eq!(record.calls[0].duration_ms, Some(3));
        assert!(record.calls[1].arguments.is_none());
        assert!(record.calls[1].arguments_bytes.unwrap_or(0) > 9_000);
        assert_eq!(record.calls[1].error.as_deref(), Some("disk full"));
        assert_eq!(record.calls[2].status, NestedCallStatus::Unfinished);
    }

    #[test]
    fn the_record_keeps_at_most_256_calls_and_32_kib_of_arguments() {
        let log = NestedLog::default();
        let args = json!({"text": "y".repeat(4_000)});
        for _ in 0..300 {
            let (_, slot) = log.start("c", "t", &args);
            log.end(slot, Duration::ZERO, None);
        }
        let record = log.take().unwrap_or_default();
        assert_eq!(record.calls.len(), MAX_RECORDED_CALLS);
        assert!(!record.complete);
        let kept: usize = record
            .calls
            .iter()
            .filter_map(|c| c.arguments.as_ref())
            .map(|a| serde_json::to_vec(a).map(|v| v.len()).unwrap_or(0))
            .sum();
        assert!(kept <= MAX_RECORD_ARGUMENT_BYTES, "{kept}");
        assert!(
            record.calls[8].arguments.is_none(),
            "past 32 KiB: sizes only"
        );
    }

    #[test]
    fn a_record_that_lost_nothing_is_complete() {
        let log = NestedLog::default();
        let (_, slot) = log.start("c", "ls", &json!({}));
        log.end(slot, Duration::from_millis(1), None);
        assert!(log.take().is_some_and(|r| r.complete));
    }
}
