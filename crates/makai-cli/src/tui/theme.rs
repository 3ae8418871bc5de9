//! The colours and text styles of the terminal UI, in one place: the
//! active theme's colour of each part ([`makai_theme::Role`], pi's names),
//! chosen at start-up ([`choose`]) from the `theme` setting, `--use-theme`,
//! and the theme files of `themes/` folders and the `themes` setting.
//!
//! The built-in `dark` and `light` themes use the terminal's 16 basic
//! colours and a few 256-colour greys, so the UI follows the terminal's own
//! palette; an sRGB colour of a theme file is sent as such where the
//! terminal says it shows 24-bit colour (`COLORTERM`), else as the nearest
//! of the 256.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use makai_theme::{Role, Theme, ThemeSet};
use ratatui::style::{Color, Modifier, Style};

/// The active theme's colours, by [`Role::index`] order (empty: the
/// built-in dark theme, installed at first use).
static ACTIVE: RwLock<Vec<Color>> = RwLock::new(Vec::new());

/// The name of the active theme.
static ACTIVE_NAME: RwLock<String> = RwLock::new(String::new());

/// Counts the themes activated, so that rows drawn with another theme's
/// colours are drawn again ([`super::render::View::theme`]).
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// The themes read at start-up (or by the last `/reload`), to switch
/// between in `/settings`.
static LOADED: RwLock<Option<Loaded>> = RwLock::new(None);

/// `--use-theme` chose the theme: a `theme` setting changed by `/reload`
/// does not replace it.
static PINNED: AtomicBool = AtomicBool::new(false);

/// The themes read, where they were read from, and whether the terminal
/// shows 24-bit colour.
#[derive(Clone)]
struct Loaded {
    set: ThemeSet,
    sources: Vec<PathBuf>,
    truecolor: bool,
}

/// Which theme is active: changes whenever another one is.
pub fn generation() -> u32 {
    GENERATION.load(Ordering::Relaxed)
}

/// The names of the themes one can switch to (the built-in ones when none
/// were read).
pub fn names() -> Vec<String> {
    let loaded = LOADED.read().unwrap_or_else(|e| e.into_inner());
    match loaded.as_ref() {
        Some(loaded) => loaded.set.names().map(str::to_string).collect(),
        None => ThemeSet::built_in().names().map(str::to_string).collect(),
    }
}

/// Activates the theme named `name` among those read at start-up (for
/// this run: the `theme` setting is left as it is). Returns false when no
/// theme has the name.
pub fn switch_to(name: &str) -> bool {
    let loaded = LOADED.read().unwrap_or_else(|e| e.into_inner());
    let built_in;
    let (set, truecolor) = match loaded.as_ref() {
        Some(loaded) => (&loaded.set, loaded.truecolor),
        None => {
            built_in = ThemeSet::built_in();
            (&built_in, false)
        }
    };
    match set.get(name) {
        Some(theme) => {
            activate(theme, truecolor);
            true
        }
        None => false,
    }
}

/// Makes `theme` the one the UI draws with; `truecolor`: the terminal shows
/// 24-bit colour.
pub fn activate(theme: &Theme, truecolor: bool) {
    let colors = Role::ALL
        .iter()
        .map(|r| terminal_color(theme.color(*r), truecolor))
        .collect();
    *ACTIVE.write().unwrap_or_else(|e| e.into_inner()) = colors;
    *ACTIVE_NAME.write().unwrap_or_else(|e| e.into_inner()) = theme.name().to_string();
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The name of the theme the UI draws with.
pub fn active_name() -> String {
    let name = ACTIVE_NAME
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if name.is_empty() { "dark".into() } else { name }
}

/// The colour of `role` in the active theme.
pub fn color(role: Role) -> Color {
    {
        let active = ACTIVE.read().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = active.get(role as usize) {
            return *c;
        }
    }
    if let Ok(dark) = ThemeSet::built_in().choose(Some("dark"), makai_theme::Appearance::Dark) {
        activate(dark, false);
    }
    ACTIVE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(role as usize)
        .copied()
        .unwrap_or(Color::Reset)
}

/// Where theme files are looked for, in order (the first theme of a name
/// is kept): pi's agent folder's `themes/`, makai's, then, for a trusted
/// project, its `.pi/themes/` and `.makai/themes/`, then the `themes`
/// setting's files and folders.
pub fn sources(
    pi_dir: Option<&Path>,
    home: Option<&Path>,
    project: Option<&Path>,
    setting: &[PathBuf],
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    out.extend(pi_dir.map(|d| d.join("themes")));
    out.extend(home.map(|d| d.join("themes")));
    if let Some(p) = project {
        out.push(p.join(".pi").join("themes"));
        out.push(p.join(".makai").join("themes"));
    }
    out.extend(setting.iter().cloned());
    out
}

/// Reads the themes of `sources`, chooses the one `setting` names for the
/// terminal ([`terminal_appearance`]) and activates it. Returns
/// what the user should hear: invalid theme files, names taken twice, a
/// theme that does not exist (the terminal's built-in theme is used).
/// `truecolor`: the terminal shows 24-bit colour ([`truecolor`]).
pub fn choose(sources: &[PathBuf], setting: Option<&str>, truecolor: bool) -> Vec<String> {
    let set = read_themes(sources);
    let mut said: Vec<String> = set.problems().to_vec();
    // A theme named outright needs nothing of the terminal.
    let named = setting
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "system" && !s.contains('/'))
        .and_then(|name| set.get(name));
    let theme = match named {
        Some(t) => t,
        None => {
            let terminal = terminal_appearance();
            match set.choose(setting, terminal) {
                Ok(t) => t,
                Err(e) => {
                    said.push(format!(
                        "{e}; the {} theme is used",
                        fallback_name(terminal)
                    ));
                    match set.choose(None, terminal) {
                        Ok(t) => t,
                        Err(e) => {
                            said.push(e.to_string());
                            return said;
                        }
                    }
                }
            }
        }
    };
    activate(theme, truecolor);
    *LOADED.write().unwrap_or_else(|e| e.into_inner()) = Some(Loaded {
        set: set.clone(),
        sources: sources.to_vec(),
        truecolor,
    });
    said
}

/// The built-in themes and those of `sources` (folders or files).
fn read_themes(sources: &[PathBuf]) -> ThemeSet {
    let mut set = ThemeSet::built_in();
    for source in sources {
        set.add(source);
    }
    set
}

/// `/reload`: reads the themes again from where they were read at start-up
/// and draws with the active theme as its file now says (pi's `/reload`
/// reloads themes); `setting`: the `theme` setting, when the settings read
/// again changed it, names the theme to draw with instead (unless
/// `--use-theme` chose one). Returns how many themes there are and what
/// the user should hear: invalid theme files, a theme setting that names
/// no theme, and an active theme whose file is gone (its colours stay
/// until another theme is chosen).
pub fn reload(setting: Option<&str>) -> (usize, Vec<String>) {
    let Some(loaded) = LOADED.read().unwrap_or_else(|e| e.into_inner()).clone() else {
        return (ThemeSet::built_in().names().count(), Vec::new());
    };
    let set = read_themes(&loaded.sources);
    let mut said: Vec<String> = set.problems().to_vec();
    let mut active = active_name();
    if let Some(name) = setting.map(str::trim)
        && !PINNED.load(Ordering::Relaxed)
    {
        if set.get(name).is_some() {
            active = name.to_string();
        } else if name == "system" || name.contains('/') {
            // The terminal's colours are asked at start-up only: asking
            // now would read the keys the UI reads.
            said.push(format!(
                "the theme setting \"{name}\" takes effect when makai starts again"
            ));
        } else {
            said.push(format!("the theme setting names no theme: {name}"));
        }
    }
    match set.get(&active) {
        Some(theme) => activate(theme, loaded.truecolor),
        None => said.push(format!(
            "the theme {active} is no longer there; its colours stay until another theme is chosen"
        )),
    }
    let count = set.names().count();
    *LOADED.write().unwrap_or_else(|e| e.into_inner()) = Some(Loaded { set, ..loaded });
    (count, said)
}

/// Chooses the theme of an interactive run and activates it: `--use-theme`
/// or the `theme` setting; the themes of pi's and makai's `themes/`
/// folders, the trusted project's, and the `themes` setting's (none of
/// these with `--no-themes`), then the `--theme` paths. Returns what the
/// user should hear ([`choose`]).
pub fn choose_at_start(app: &crate::app::AppSession, args: &crate::cli::Args) -> Vec<String> {
    let settings = app.settings();
    let mut paths = if args.no_themes {
        Vec::new()
    } else {
        let pi_dir = makai_coding::resources::pi_agent_dir();
        let home = makai_coding::makai_home();
        let project = app.project_trust().trusted.then(|| app.cwd());
        sources(
            pi_dir.as_deref(),
            home.as_deref(),
            project,
            &settings.themes,
        )
    };
    paths.extend(args.theme.iter().map(|p| app.cwd().join(p)));
    PINNED.store(args.use_theme.is_some(), Ordering::Relaxed);
    let setting = args.use_theme.as_deref().or(settings.theme.as_deref());
    let truecolor = truecolor(
        settings
            .extra
            .get("terminal")
            .and_then(|t| t.get("trueColor")),
        std::env::var("PI_TRUE_COLOR").ok().as_deref(),
        |name| std::env::var(name).ok(),
    );
    choose(&paths, setting, truecolor)
}

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

fn fallback_name(terminal: makai_theme::Appearance) -> &'static str {
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
fn terminal_color(c: makai_theme::Color, truecolor: bool) -> Color {
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

/// Accent colour (the logo, selection, borders of dialogs, the prompt marker).
pub fn accent() -> Color {
    color(Role::Accent)
}

/// Borders of dialogs and of the transcript search.
pub fn border_accent() -> Color {
    color(Role::BorderAccent)
}

/// Background of the user's messages.
pub fn user_bg() -> Color {
    color(Role::UserMessageBg)
}

/// Text of the user's messages.
pub fn user_text() -> Color {
    color(Role::UserMessageText)
}

/// Background of collapsed blocks (skills, summaries).
pub fn custom_message_bg() -> Color {
    color(Role::CustomMessageBg)
}

/// Text of collapsed blocks.
pub fn custom_message_text() -> Color {
    color(Role::CustomMessageText)
}

/// The label of collapsed blocks (`[skill]`, `[compaction]`, `[branch]`).
pub fn custom_message_label() -> Color {
    color(Role::CustomMessageLabel)
}

/// The scrollbar's track.
pub fn scrollbar_track() -> Style {
    fg(Role::ScrollbarTrack)
}

/// The scrollbar's thumb.
pub fn scrollbar_thumb() -> Style {
    fg(Role::ScrollbarThumb)
}

/// The style of highlighted code: the syntax role's colour, or `base` for
/// text no role fits.
pub fn syntax(role: Option<Role>, base: Style) -> Style {
    match role {
        Some(role) => fg(role),
        None => base,
    }
}

fn fg(role: Role) -> Style {
    Style::default().fg(color(role))
}

/// Dimmed text (hints, secondary details).
pub fn dim() -> Style {
    fg(Role::Dim)
}

/// Muted but readable text (the footer, notices).
pub fn muted() -> Style {
    fg(Role::Muted)
}

/// A model's thinking, when shown.
pub fn thinking_text() -> Style {
    fg(Role::ThinkingText)
}

/// A tool's output.
pub fn tool_output() -> Style {
    fg(Role::ToolOutput)
}

/// Bold text.
pub fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Errors.
pub fn error() -> Style {
    fg(Role::Error)
}

/// Warnings (aborts, retries).
pub fn warning() -> Style {
    fg(Role::Warning)
}

/// Success (finished tool calls).
pub fn success() -> Style {
    fg(Role::Success)
}

/// Informational notices.
pub fn info() -> Style {
    fg(Role::Accent)
}

/// Inline code.
pub fn code() -> Style {
    fg(Role::MdCode)
}

/// Links.
pub fn link() -> Style {
    fg(Role::MdLink).add_modifier(Modifier::UNDERLINED)
}

/// A link's address shown after its text.
pub fn link_url() -> Style {
    fg(Role::MdLinkUrl)
}

/// Headings of level 1 and 2.
pub fn heading() -> Style {
    fg(Role::MdHeading).add_modifier(Modifier::BOLD)
}

/// The text of a code block.
pub fn code_block() -> Style {
    fg(Role::MdCodeBlock)
}

/// The fences of a code block.
pub fn code_block_border() -> Style {
    fg(Role::MdCodeBlockBorder)
}

/// The text of a block quote.
pub fn quote() -> Style {
    fg(Role::MdQuote)
}

/// The bar of a block quote.
pub fn quote_border() -> Style {
    fg(Role::MdQuoteBorder)
}

/// Horizontal rules and table rules.
pub fn rule() -> Style {
    fg(Role::MdHr)
}

/// List bullets and numbers.
pub fn list_bullet() -> Style {
    fg(Role::MdListBullet)
}

/// An added line of a tool's diff.
pub fn diff_added() -> Style {
    fg(Role::ToolDiffAdded)
}

/// A removed line of a tool's diff.
pub fn diff_removed() -> Style {
    fg(Role::ToolDiffRemoved)
}

/// A context line of a tool's diff.
pub fn diff_context() -> Style {
    fg(Role::ToolDiffContext)
}

/// The border colour of the editor while a `!` shell command is typed.
pub fn bash_mode() -> Color {
    color(Role::BashMode)
}

/// A transcript search match: the match colours (pi's `searchMatchBg` and
/// `searchMatchText`), underlined; the selected match has them reversed,
/// and bold.
pub fn search_match(selected: bool) -> Style {
    let style = Style::default()
        .bg(color(Role::SearchMatchBg))
        .fg(color(Role::SearchMatchText));
    if selected {
        style.add_modifier(Modifier::REVERSED | Modifier::BOLD)
    } else {
        style.add_modifier(Modifier::UNDERLINED)
    }
}

/// The border colour of the editor for a thinking level (pi's
/// `thinkingOff` ... `thinkingMax`).
pub fn thinking_color(level: makai_ai::ThinkingLevel) -> Color {
    use makai_ai::ThinkingLevel as L;
    color(match level {
        L::Off => Role::ThinkingOff,
        L::Minimal => Role::ThinkingMinimal,
        L::Low => Role::ThinkingLow,
        L::Medium => Role::ThinkingMedium,
        L::High => Role::ThinkingHigh,
        L::Xhigh => Role::ThinkingXhigh,
        L::Max => Role::ThinkingMax,
    })
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
