//! Large pastes as pi's editor shows them: a paste of more than
//! [`MARKER_LINES`] lines or [`MARKER_CHARS`] characters goes into the
//! editor as one marker, `[paste #N +L lines]` or `[paste #N C chars]`; the
//! editor keeps the text, sends it in the marker's place, and moves over
//! and deletes a marker as one character.

/// A paste of more lines than this is shown as a marker.
pub const MARKER_LINES: usize = 10;
/// A paste of more characters than this is shown as a marker.
pub const MARKER_CHARS: usize = 1000;

/// What every marker starts with.
const PREFIX: &str = "[paste #";

/// The texts of the large pastes, the marker `[paste #N …]` naming the Nth.
#[derive(Debug, Clone, Default)]
pub struct Pastes {
    texts: Vec<String>,
}

impl Pastes {
    /// For a large `text` (its line breaks LF), keeps it and returns its
    /// marker; `None` for a small one, which goes in as typed.
    pub fn collapse(&mut self, text: &str) -> Option<String> {
        let lines = text.split('\n').count();
        let chars = text.chars().count();
        if lines <= MARKER_LINES && chars <= MARKER_CHARS {
            return None;
        }
        self.texts.push(text.to_string());
        Some(marker(self.texts.len(), text))
    }

    /// `text` with each marker of a kept paste replaced by the paste; any
    /// other text (a marker typed by hand, one half deleted) as it is.
    pub fn expand(&self, text: &str) -> String {
        if self.texts.is_empty() || !text.contains(PREFIX) {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(PREFIX) {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            match self.marker_at_start(rest) {
                Some((len, n)) => {
                    out.push_str(&self.texts[n - 1]);
                    rest = &rest[len..];
                }
                None => {
                    out.push('[');
                    rest = &rest[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The length in characters of the marker `before` (a line's text up
    /// to the cursor) ends with.
    pub fn ending(&self, before: &str) -> Option<usize> {
        if !before.ends_with(']') {
            return None;
        }
        let at = before.rfind(PREFIX)?;
        let candidate = &before[at..];
        self.marker_at_start(candidate)
            .filter(|(len, _)| *len == candidate.len())
            .map(|_| candidate.chars().count())
    }

    /// The length in characters of the marker `after` (a line's text from
    /// the cursor) starts with.
    pub fn starting(&self, after: &str) -> Option<usize> {
        self.marker_at_start(after)
            .map(|(len, _)| after[..len].chars().count())
    }

    /// The byte length and paste number of the kept paste's marker `text`
    /// starts with.
    fn marker_at_start(&self, text: &str) -> Option<(usize, usize)> {
        let digits = text.strip_prefix(PREFIX)?;
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        let n: usize = digits[..end].parse().ok()?;
        let kept = self.texts.get(n.checked_sub(1)?)?;
        let m = marker(n, kept);
        text.starts_with(&m).then_some((m.len(), n))
    }
}

/// The marker of paste `n` holding `text`.
fn marker(n: usize, text: &str) -> String {
    let lines = text.split('\n').count();
    if lines > MARKER_LINES {
        format!("{PREFIX}{n} +{lines} lines]")
    } else {
        format!("{PREFIX}{n} {} chars]", text.chars().count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (1..=n)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn large_pastes_become_markers_and_small_ones_stay_text() {
        let mut p = Pastes::default();
        assert_eq!(p.collapse(&lines(10)), None);
        assert_eq!(p.collapse(&"x".repeat(1000)), None);
        assert_eq!(p.collapse(&lines(11)).unwrap(), "[paste #1 +11 lines]");
        assert_eq!(
            p.collapse(&"é".repeat(1001)).unwrap(),
            "[paste #2 1001 chars]"
        );
    }

    #[test]
    fn markers_expand_to_their_pastes_and_nothing_else_does() {
        let mut p = Pastes::default();
        let first = p.collapse(&lines(12)).unwrap();
        // Paste #12 and #1 must not be confused (pi's #11923).
        for _ in 2..=12 {
            p.collapse(&lines(20)).unwrap();
        }
        let twelfth = "[paste #12 +20 lines]";
        let text = format!(
            "see {first} and {twelfth}; [paste #1 +3 lines] [paste #99 +1 lines] [paste #1"
        );
        assert_eq!(
            p.expand(&text),
            format!(
                "see {} and {}; [paste #1 +3 lines] [paste #99 +1 lines] [paste #1",
                lines(12),
                lines(20)
            )
        );
        assert_eq!(p.ending(&format!("a {first}")), Some(first.chars().count()));
        assert_eq!(p.ending("a [paste #1 +3 lines]"), None);
        assert_eq!(p.ending(&format!("{first} x")), None);
        assert_eq!(p.starting(&format!("{twelfth} tail")), Some(twelfth.len()));
        assert_eq!(p.starting("[paste #12 +2 lines]"), None);
        assert_eq!(Pastes::default().expand(&first), first);
    }
}
