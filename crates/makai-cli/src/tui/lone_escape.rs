//! A lone Escape and the key after it: pi's `PI_TUI_ESC_TIMEOUT`.
//!
//! A terminal without unambiguous key reports sends Alt+key as ESC and the
//! key's byte. crossterm reads an ESC that arrives alone in a read as the
//! Escape key, so when a slow link (SSH) splits Alt+Enter between two
//! reads, the UI saw Escape (abort) and then Enter (send). As pi does, the
//! UI waits a moment after a lone Escape: a key that comes within the wait
//! is that key with Alt, otherwise the Escape is the Escape key. The wait is
//! `PI_TUI_ESC_TIMEOUT` milliseconds, else 100 ms over SSH and 10 ms
//! otherwise. A terminal that took the unambiguous key reports (the kitty
//! keyboard protocol) sends Escape and Alt+key as sequences of their own,
//! so nothing waits there.
//!
//! The same wait puts back together a key or mouse report split after its
//! ESC ([`super::split_sequence`]): a lone Escape, then `[` or `O` within
//! the wait, is the start of a sequence whose rest may take pi's 50 ms a
//! character to come.

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::{Stream, StreamExt};

use super::split_sequence;

/// The wait locally.
const LOCAL_WAIT: Duration = Duration::from_millis(10);
/// The wait over SSH.
const SSH_WAIT: Duration = Duration::from_millis(100);

/// How long a lone Escape waits for a key to join: `PI_TUI_ESC_TIMEOUT`
/// (milliseconds, a positive number), else 100 ms when `SSH_CONNECTION` or
/// `SSH_TTY` is set, else 10 ms.
pub fn wait(var: impl Fn(&str) -> Option<String>) -> Duration {
    let configured = var("PI_TUI_ESC_TIMEOUT")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms > 0.0);
    if let Some(ms) = configured {
        return Duration::from_secs_f64(ms.min(60_000.0) / 1000.0);
    }
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    if set("SSH_CONNECTION") || set("SSH_TTY") {
        SSH_WAIT
    } else {
        LOCAL_WAIT
    }
}

/// A press of Escape with no modifier: what a lone ESC byte reads as.
fn is_lone_escape(event: &Event) -> bool {
    matches!(
        event,
        Event::Key(KeyEvent {
            code: KeyCode::Esc,
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Press,
            ..
        })
    )
}

/// `next`, read after a lone Escape within the wait, as the key pressed
/// with Alt; `None` when it is taken as itself: another Escape (pi's double
/// Escape), a key with Ctrl (Escape then Ctrl+C, to stop and then exit, is
/// typed quickly; Ctrl+Alt keys are rare), a key already with Alt, a
/// release, a paste, the mouse.
fn with_alt(next: &Event) -> Option<Event> {
    match next {
        Event::Key(key)
            if key.kind == KeyEventKind::Press
                && key.code != KeyCode::Esc
                && !key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::CONTROL) =>
        {
            let mut key = *key;
            key.modifiers |= KeyModifiers::ALT;
            Some(Event::Key(key))
        }
        _ => None,
    }
}

/// Passes `input`'s events to `deliver` until either ends (`deliver`
/// returns false when no one listens any more), joining a lone Escape and a
/// key read within `wait` after it into Alt+key. With no wait, every event
/// goes as it is read.
pub async fn forward<S, E>(
    mut input: S,
    wait: Option<Duration>,
    mut deliver: impl FnMut(Result<Event, E>) -> bool,
) where
    S: Stream<Item = Result<Event, E>> + Unpin,
{
    // An event read after an Escape that it did not join: it is looked at
    // as any event is (another Escape waits in its turn).
    let mut carried = None;
    loop {
        let event = match carried.take() {
            Some(event) => event,
            None => match input.next().await {
                Some(event) => event,
                None => return,
            },
        };
        let escape = matches!(&event, Ok(e) if is_lone_escape(e));
        let Some(wait) = wait.filter(|_| escape) else {
            if !deliver(event) {
                return;
            }
            continue;
        };
        match tokio::time::timeout(wait, input.next()).await {
            // Nothing came: the Escape key.
            Err(_) => {
                if !deliver(event) {
                    return;
                }
            }
            Ok(None) => {
                deliver(event);
                return;
            }
            Ok(Some(Ok(next))) => {
                if let Some(opener) = split_sequence::opener(&next) {
                    let gathered = gather(
                        &mut input,
                        opener,
                        next,
                        wait.max(split_sequence::SEQUENCE_WAIT),
                    )
                    .await;
                    for event in gathered.events() {
                        if !deliver(Ok(event)) {
                            return;
                        }
                    }
                    match gathered.after {
                        None => {}
                        Some(None) => return,
                        Some(Some(after)) => carried = Some(after),
                    }
                    continue;
                }
                match with_alt(&next) {
                    Some(joined) => {
                        if !deliver(Ok(joined)) {
                            return;
                        }
                    }
                    None => {
                        if !deliver(event) {
                            return;
                        }
                        carried = Some(Ok(next));
                    }
                }
            }
            Ok(Some(Err(e))) => {
                if !deliver(event) || !deliver(Err(e)) {
                    return;
                }
            }
        }
    }
}

/// What followed a lone Escape and the `[` or `O` read after it.
struct Gathered<E> {
    /// The characters' key events, the opener's first.
    read: Vec<Event>,
    /// Their characters: the sequence without its ESC, if it is one.
    body: String,
    /// What ended the gathering besides the sequence's end or the wait:
    /// the input's end (`Some(None)`) or an event that is no character of
    /// a sequence (`Some(Some(_))`, looked at next).
    after: Option<Option<E>>,
}

impl<E> Gathered<E> {
    /// What the user pressed: the key or mouse event of a whole sequence
    /// (nothing for one makai does not read), else Alt and the opener and
    /// the characters as typed.
    fn events(&self) -> Vec<Event> {
        if split_sequence::is_complete(&self.body) {
            return split_sequence::decode(&self.body).into_iter().collect();
        }
        let mut events = self.read.clone();
        if let Some(alt) = events.first().and_then(with_alt) {
            events[0] = alt;
        }
        events
    }
}

/// Reads the characters after a lone Escape and `first` (its `opener`
/// character) until they make a whole sequence, each within `wait` of the
/// last, or something else is read.
async fn gather<S, E>(
    input: &mut S,
    opener: char,
    first: Event,
    wait: Duration,
) -> Gathered<Result<Event, E>>
where
    S: Stream<Item = Result<Event, E>> + Unpin,
{
    let mut gathered = Gathered {
        read: vec![first],
        body: String::from(opener),
        after: None,
    };
    while !split_sequence::is_complete(&gathered.body) && !split_sequence::too_long(&gathered.body)
    {
        match tokio::time::timeout(wait, input.next()).await {
            Err(_) => break,
            Ok(None) => {
                gathered.after = Some(None);
                break;
            }
            Ok(Some(Ok(event))) => match split_sequence::typed_char(&event) {
                Some(c) => {
                    gathered.body.push(c);
                    gathered.read.push(event);
                }
                None => {
                    gathered.after = Some(Some(Ok(event)));
                    break;
                }
            },
            Ok(Some(Err(e))) => {
                gathered.after = Some(Some(Err(e)));
                break;
            }
        }
    }
    gathered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::test_vars::vars;
    use crossterm::event::{MouseEvent, MouseEventKind};
    use tokio::sync::mpsc;

    /// `rx` as a stream.
    fn stream<T>(mut rx: mpsc::UnboundedReceiver<T>) -> impl Stream<Item = T> + Unpin {
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
        Event::Key(KeyEvent::new(code, modifiers))
    }

    fn esc() -> Event {
        key(KeyCode::Esc, KeyModifiers::NONE)
    }

    #[test]
    fn the_wait_is_pi_s_ten_ms_locally_a_hundred_over_ssh_or_the_variable_s() {
        assert_eq!(wait(vars(&[])), Duration::from_millis(10));
        assert_eq!(
            wait(vars(&[("SSH_CONNECTION", "10.0.0.1 5 10.0.0.2 22")])),
            Duration::from_millis(100)
        );
        assert_eq!(
            wait(vars(&[("SSH_TTY", "/dev/pts/3")])),
            Duration::from_millis(100)
        );
        assert_eq!(
            wait(vars(&[
                ("SSH_TTY", "/dev/pts/3"),
                ("PI_TUI_ESC_TIMEOUT", "250")
            ])),
            Duration::from_millis(250)
        );
        assert_eq!(
            wait(vars(&[("PI_TUI_ESC_TIMEOUT", "2.5")])),
            Duration::from_micros(2500)
        );
        // Not a positive number: the default stands.
        for bad in ["0", "-5", "soon", "", "NaN", "inf"] {
            assert_eq!(
                wait(vars(&[("PI_TUI_ESC_TIMEOUT", bad)])),
                Duration::from_millis(10),
                "{bad:?}"
            );
        }
        assert_eq!(
            wait(vars(&[("SSH_CONNECTION", "")])),
            Duration::from_millis(10)
        );
    }

    /// Feeds `script` (an event, then how long until the next is read) to
    /// `forward` under tokio's paused clock; returns what it delivered.
    async fn run(script: Vec<(Event, u64)>, wait: Option<Duration>) -> Vec<Event> {
        let (tx, rx) = mpsc::unbounded_channel::<Result<Event, ()>>();
        let feeder = tokio::spawn(async move {
            for (event, after_ms) in script {
                if tx.send(Ok(event)).is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
            }
        });
        let mut out = Vec::new();
        forward(stream(rx), wait, |e| {
            out.extend(e.ok());
            true
        })
        .await;
        let _ = feeder.await;
        out
    }

    #[tokio::test(start_paused = true)]
    async fn an_escape_and_a_key_within_the_wait_are_alt_and_the_key() {
        let wait = Some(Duration::from_millis(100));
        // Alt+Enter split over SSH: ESC, then CR 40 ms later.
        let got = run(
            vec![(esc(), 40), (key(KeyCode::Enter, KeyModifiers::NONE), 0)],
            wait,
        )
        .await;
        assert_eq!(got, vec![key(KeyCode::Enter, KeyModifiers::ALT)]);
        // Alt+Shift+A keeps its Shift.
        let got = run(
            vec![
                (esc(), 1),
                (key(KeyCode::Char('A'), KeyModifiers::SHIFT), 0),
            ],
            wait,
        )
        .await;
        assert_eq!(
            got,
            vec![key(
                KeyCode::Char('A'),
                KeyModifiers::SHIFT | KeyModifiers::ALT
            )]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_escape_with_nothing_after_it_in_the_wait_is_the_escape_key() {
        let wait = Some(Duration::from_millis(10));
        let enter = key(KeyCode::Enter, KeyModifiers::NONE);
        let got = run(vec![(esc(), 300), (enter.clone(), 0)], wait).await;
        assert_eq!(got, vec![esc(), enter]);
        // An Escape as the input's last event is delivered too.
        assert_eq!(run(vec![(esc(), 0)], wait).await, vec![esc()]);
    }

    #[tokio::test(start_paused = true)]
    async fn two_escapes_stay_two_and_what_cannot_take_alt_follows_the_escape() {
        let wait = Some(Duration::from_millis(100));
        // Escape pressed twice quickly (pi's double Escape) is not Alt+Escape.
        assert_eq!(
            run(vec![(esc(), 20), (esc(), 0)], wait).await,
            vec![esc(), esc()]
        );
        // An Escape, then Alt+B split: the second Escape waits in its turn.
        let b = key(KeyCode::Char('b'), KeyModifiers::NONE);
        assert_eq!(
            run(vec![(esc(), 20), (esc(), 5), (b, 0)], wait).await,
            vec![esc(), key(KeyCode::Char('b'), KeyModifiers::ALT)]
        );
        // Escape, then Ctrl+C to exit, typed within the wait.
        let ctrl_c = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(
            run(vec![(esc(), 1), (ctrl_c.clone(), 0)], wait).await,
            vec![esc(), ctrl_c]
        );
        let alt_x = key(KeyCode::Char('x'), KeyModifiers::ALT);
        assert_eq!(
            run(vec![(esc(), 5), (alt_x.clone(), 0)], wait).await,
            vec![esc(), alt_x]
        );
        let mouse = Event::Mouse(MouseEvent {
            kind: MouseEventKind::ScrollUp,
            column: 1,
            row: 1,
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(
            run(vec![(esc(), 5), (mouse.clone(), 0)], wait).await,
            vec![esc(), mouse]
        );
        let paste = Event::Paste("text".into());
        assert_eq!(
            run(vec![(esc(), 5), (paste.clone(), 0)], wait).await,
            vec![esc(), paste]
        );
    }

    /// The key events crossterm reads from `text` arriving after an ESC
    /// that ended a read.
    fn typed(text: &str) -> Vec<Event> {
        text.chars()
            .map(|c| {
                let modifiers = if c.is_ascii_uppercase() {
                    KeyModifiers::SHIFT
                } else {
                    KeyModifiers::NONE
                };
                key(KeyCode::Char(c), modifiers)
            })
            .collect()
    }

    /// An Escape, then `rest` typed `gap_ms` apart (the first `first_ms`
    /// after the Escape), then `after`.
    fn split(first_ms: u64, rest: &str, gap_ms: u64, after: Vec<Event>) -> Vec<(Event, u64)> {
        let mut script = vec![(esc(), first_ms)];
        script.extend(typed(rest).into_iter().map(|e| (e, gap_ms)));
        script.extend(after.into_iter().map(|e| (e, 0)));
        script
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_or_mouse_report_split_after_its_escape_is_read_whole() {
        let wait = Some(Duration::from_millis(10));
        let up = key(KeyCode::Up, KeyModifiers::NONE);
        // The Up arrow over a slow link: ESC, then `[A` 5 ms later.
        assert_eq!(run(split(5, "[A", 0, vec![]), wait).await, vec![up.clone()]);
        // The rest of a sequence may take pi's 50 ms a character, longer
        // than the lone Escape's wait.
        assert_eq!(
            run(split(5, "[1;5C", 40, vec![]), wait).await,
            vec![key(KeyCode::Right, KeyModifiers::CONTROL)]
        );
        assert_eq!(
            run(split(5, "OP", 0, vec![]), wait).await,
            vec![key(KeyCode::F(1), KeyModifiers::NONE)]
        );
        let click = Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(crossterm::event::MouseButton::Left),
            column: 11,
            row: 4,
            modifiers: KeyModifiers::NONE,
        });
        let enter = key(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(
            run(split(2, "[<0;12;5M", 1, vec![enter.clone()]), wait).await,
            vec![click, enter.clone()]
        );
        // A sequence makai does not read is dropped, as crossterm drops it;
        // what follows it is read as usual.
        assert_eq!(
            run(split(2, "[12;40R", 0, vec![enter.clone()]), wait).await,
            vec![enter.clone()]
        );
        // Two in a row.
        let mut script = split(2, "[A", 0, vec![]);
        script.extend(split(2, "[B", 0, vec![]));
        assert_eq!(
            run(script, wait).await,
            vec![up, key(KeyCode::Down, KeyModifiers::NONE)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn what_never_becomes_a_sequence_is_alt_and_the_characters_typed() {
        let wait = Some(Duration::from_millis(10));
        let alt_bracket = key(KeyCode::Char('['), KeyModifiers::ALT);
        // Alt+[ alone: the sequence's wait runs out.
        assert_eq!(
            run(split(2, "[", 0, vec![]), wait).await,
            vec![alt_bracket.clone()]
        );
        // Alt+[ and `1` 200 ms later: two keys.
        let mut want = vec![alt_bracket.clone()];
        want.extend(typed("1"));
        assert_eq!(run(split(2, "[1", 200, vec![]), wait).await, want);
        // A key that is no character of a sequence ends it: Alt+[, `1`,
        // then the Enter.
        let enter = key(KeyCode::Enter, KeyModifiers::NONE);
        let mut want = vec![alt_bracket.clone()];
        want.extend(typed("1"));
        want.push(enter.clone());
        assert_eq!(run(split(2, "[1", 1, vec![enter]), wait).await, want);
        // Past a report's length: what was typed.
        let long = format!("[{}", "1".repeat(40));
        let got = run(split(2, &long, 1, vec![]), wait).await;
        assert_eq!(got.len(), 41);
        assert_eq!(got[0], alt_bracket);
        // Alt+Shift+O alone.
        assert_eq!(
            run(split(2, "O", 0, vec![]), wait).await,
            vec![key(
                KeyCode::Char('O'),
                KeyModifiers::SHIFT | KeyModifiers::ALT
            )]
        );
        // With no wait (the kitty protocol) nothing is gathered.
        let mut want = vec![esc()];
        want.extend(typed("[A"));
        assert_eq!(run(split(2, "[A", 0, vec![]), None).await, want);
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_wait_every_event_goes_as_it_is_read() {
        let b = key(KeyCode::Char('b'), KeyModifiers::NONE);
        assert_eq!(
            run(vec![(esc(), 0), (b.clone(), 0)], None).await,
            vec![esc(), b]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forwarding_stops_when_no_one_listens() {
        let (tx, rx) = mpsc::unbounded_channel::<Result<Event, ()>>();
        for _ in 0..3 {
            tx.send(Ok(key(KeyCode::Char('a'), KeyModifiers::NONE)))
                .ok();
        }
        let mut delivered = 0;
        forward(stream(rx), None, |_| {
            delivered += 1;
            false
        })
        .await;
        assert_eq!(delivered, 1);
    }
}
