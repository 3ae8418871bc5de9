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

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::{Stream, StreamExt};

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
            Ok(Some(Ok(next))) => match with_alt(&next) {
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
            },
            Ok(Some(Err(e))) => {
                if !deliver(event) || !deliver(Err(e)) {
                    return;
                }
            }
        }
    }
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
