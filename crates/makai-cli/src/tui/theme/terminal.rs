//! What the terminal is asked and sent: whether it shows 24-bit colour,
//! whether its background is light or dark, and a theme's colours as it
//! is sent them (its 16 basic colours by name, sRGB as such or as the
//! nearest of the 256).

use ratatui::style::Color;

/// Whether the terminal shows 24-bit colour, as pi decides it: pi's
/// `terminal.trueColor` setting (`true`, `false`; `"auto"` or unset:
/// detect), else `PI_TRUE_COLOR` (`1`, `0`; `auto` or unset: detect), else
/// what the terminal says of itself (`var` reads its environment):
/// `COLORTERM=truecolor` or `24bit`, or a terminal known to have it
/// (iTerm2, WezTerm, Ghostty, kitty, VS Code's, Windows Terminal).
pub fn truecolor(
    setting: Option<&serde_json::Value>,
    env: Option<&str>,
    var: impl Fn(&str) -> Option<String>,
) -> bool {
    if let Some(forced) = setting.and_then(serde_json::Value::as_bool) {
        return forced;
    }
    match env.map(str::trim) {
        Some("1" | "true") => return true,
        Some("0" | "false") => return false,
        _ => {}
    }
    if var("COLORTERM").is_some_and(|v| matches!(v.as_str(), "truecolor" | "24bit")) {
        return true;
    }
    let known = ["iTerm.app", "WezTerm", "ghostty", "vscode"];
    var("TERM_PROGRAM").is_some_and(|p| known.contains(&p.as_str()))
        || var("TERM").is_some_and(|t| t == "xterm-kitty" || t == "xterm-ghostty")
        || var("WT_SESSION").is_some()
}

/// How long the terminal may take to say its colours (pi waits as long).
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the terminal's background is light or dark, as pi decides it:
/// the colours the terminal reports (asked with `OSC 10` and `OSC 11`; a
/// terminal that cannot say is known at once by its answer to the device
/// attributes query sent after them, so it costs no wait), else its
/// `COLORFGBG` variable, else dark.
pub fn terminal_appearance() -> makai_theme::Appearance {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        let mut options = terminal_colorsaurus::QueryOptions::default();
        options.timeout = QUERY_TIMEOUT;
        match terminal_colorsaurus::theme_mode(options) {
            Ok(terminal_colorsaurus::ThemeMode::Dark) => return makai_theme::Appearance::Dark,
            Ok(terminal_colorsaurus::ThemeMode::Light) => return makai_theme::Appearance::Light,
            Err(e) => tracing::debug!(error = %e, "the terminal did not say its colours"),
        }
    }
    makai_theme::terminal_appearance(std::env::var("COLORFGBG").ok().as_deref())
}

pub(super) fn fallback_name(terminal: makai_theme::Appearance) -> &'static str {
    match terminal {
        makai_theme::Appearance::Dark => "dark",
        makai_theme::Appearance::Light => "light",
    }
}

/// The terminal's 16 basic colours by their index (0 to 15): sent as
/// named colours, which the terminal's own palette decides.
pub const BASIC: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];

/// A theme colour as the terminal is sent it.
pub(super) fn terminal_color(c: makai_theme::Color, truecolor: bool) -> Color {
    match c {
        makai_theme::Color::Default => Color::Reset,
        makai_theme::Color::Indexed(i) => BASIC
            .get(usize::from(i))
            .copied()
            .unwrap_or(Color::Indexed(i)),
        makai_theme::Color::Rgb(r, g, b) if truecolor => Color::Rgb(r, g, b),
        makai_theme::Color::Rgb(r, g, b) => Color::Indexed(nearest_256(r, g, b)),
    }
}

/// The entry of the 256-colour palette's colour cube or grey ramp nearest
/// to an sRGB colour (the 16 basic colours are left out: the terminal's
/// theme decides them).
fn nearest_256(r: u8, g: u8, b: u8) -> u8 {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let level = |c: u8| {
        LEVELS
            .iter()
            .enumerate()
            .min_by_key(|(_, l)| (i32::from(**l) - i32::from(c)).abs())
            .map_or(0, |(i, _)| i as u8)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (
        LEVELS[usize::from(ri)],
        LEVELS[usize::from(gi)],
        LEVELS[usize::from(bi)],
    );
    let average = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
    let grey_step = (average.saturating_sub(3) / 10).min(23) as u8;
    let grey = 8 + 10 * grey_step;
    let distance = |(x, y, z): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    if distance((grey, grey, grey)) < distance(cube) {
        232 + grey_step
    } else {
        16 + 36 * ri + 6 * gi + bi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truecolor_is_the_setting_then_pi_s_variable_then_the_terminal_s_word() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let none = vars(&[]);
        assert!(!truecolor(None, None, none));
        assert!(truecolor(None, Some("1"), none));
        assert!(truecolor(None, None, vars(&[("TERM_PROGRAM", "WezTerm")])));
        assert!(truecolor(None, None, vars(&[("TERM", "xterm-kitty")])));
        assert!(!truecolor(None, None, vars(&[("TERM_PROGRAM", "tmux")])));
        let on = serde_json::json!(true);
        let off = serde_json::json!(false);
        let auto = serde_json::json!("auto");
        assert!(truecolor(Some(&on), Some("0"), none));
        assert!(!truecolor(
            Some(&off),
            Some("1"),
            vars(&[("COLORTERM", "24bit")])
        ));
        assert!(truecolor(
            Some(&auto),
            Some("auto"),
            vars(&[("COLORTERM", "24bit")])
        ));
        assert!(!truecolor(
            Some(&auto),
            Some("0"),
            vars(&[("COLORTERM", "24bit")])
        ));
    }

    #[test]
    fn an_srgb_colour_without_truecolor_is_the_nearest_of_the_256() {
        assert_eq!(nearest_256(0, 0, 0), 16);
        assert_eq!(nearest_256(255, 255, 255), 231);
        assert_eq!(nearest_256(255, 0, 0), 196);
        assert_eq!(nearest_256(0, 175, 255), 39);
        assert_eq!(nearest_256(128, 128, 128), 244);
        assert_eq!(nearest_256(238, 238, 238), 255);
    }
}
