//! What appended entries change in a session's listing columns
//! (`message_count`, `name`, `first_message`), computed once per append.

use makai_coding::session::SessionEntry;

/// The listing changes of a batch of entries.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Summary {
    /// `message` entries in the batch.
    pub messages: i64,
    /// The last `session_info` of the batch: `Some(None)` clears the name.
    pub name: Option<Option<String>>,
    /// The first user message's text in the batch (empty when none).
    pub first_message: String,
}

impl Summary {
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a SessionEntry>) -> Summary {
        let mut out = Summary::default();
        for entry in entries {
            match entry {
                SessionEntry::SessionInfo(i) => {
                    out.name = Some(
                        i.name
                            .as_deref()
                            .map(str::trim)
                            .filter(|n| !n.is_empty())
                            .map(str::to_string),
                    );
                }
                SessionEntry::Message(m) => {
                    out.messages += 1;
                    if out.first_message.is_empty() && m.message.as_user().is_some() {
                        out.first_message = m.message.text();
                    }
                }
                _ => {}
            }
        }
        out
    }
}
