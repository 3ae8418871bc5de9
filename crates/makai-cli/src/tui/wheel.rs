//! How far a mouse-wheel event scrolls the conversation (pi's
//! `fullscreenWheelScrollLines`): a number of rows per event (1 to 100), or
//! `"auto"` (the default): makai's 3 rows, sped up to 6 while the wheel spins
//! fast. Alt+wheel moves five times as far.

use std::time::{Duration, Instant};

/// Rows per event in `"auto"` mode.
const AUTO_ROWS: usize = 3;
/// The most rows per event a fast spin reaches in `"auto"` mode.
const AUTO_MAX_ROWS: usize = 6;
/// Events closer than this count as one fast spin.
const FAST_SPIN: Duration = Duration::from_millis(40);
/// How much further Alt+wheel moves.
const ALT_FACTOR: usize = 5;

/// The wheel's setting and its recent events.
#[derive(Clone, Debug, Default)]
pub struct Wheel {
    /// Rows per event; `None`: `"auto"`.
    fixed: Option<usize>,
    last: Option<Instant>,
    step: usize,
}

impl Wheel {
    /// The wheel as the settings say (`fullscreenWheelScrollLines`).
    pub fn new(settings: &makai_coding::Settings) -> Self {
        let fixed = settings
            .extra
            .get("fullscreenWheelScrollLines")
            .and_then(serde_json::Value::as_u64)
            .map(|n| n.clamp(1, 100) as usize);
        Wheel {
            fixed,
            last: None,
            step: AUTO_ROWS,
        }
    }

    /// Rows one wheel event at `now` scrolls (`alt`: Alt held).
    pub fn rows(&mut self, now: Instant, alt: bool) -> usize {
        let fast = self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < FAST_SPIN);
        self.last = Some(now);
        let rows = match self.fixed {
            Some(n) => n,
            None => {
                self.step = if fast {
                    (self.step + 1).min(AUTO_MAX_ROWS)
                } else {
                    AUTO_ROWS
                };
                self.step
            }
        };
        if alt { rows * ALT_FACTOR } else { rows }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_speeds_up_fast_spins_and_a_number_is_fixed() {
        let mut auto = Wheel {
            fixed: None,
            last: None,
            step: AUTO_ROWS,
        };
        let t = Instant::now();
        assert_eq!(auto.rows(t, false), 3);
        let fast: Vec<usize> = (1..6)
            .map(|i| auto.rows(t + Duration::from_millis(10 * i), false))
            .collect();
        assert_eq!(fast, [4, 5, 6, 6, 6]);
        assert_eq!(auto.rows(t + Duration::from_secs(1), false), 3);
        assert_eq!(auto.rows(t + Duration::from_secs(2), true), 15);
        let mut fixed = Wheel {
            fixed: Some(1),
            ..auto
        };
        assert_eq!(fixed.rows(t + Duration::from_secs(3), false), 1);
        assert_eq!(fixed.rows(t + Duration::from_millis(3001), true), 5);
    }
}
