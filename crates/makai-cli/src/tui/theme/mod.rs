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

mod terminal;
use ratatui::style::{Color, Modifier, Style};
pub use terminal::{BASIC, terminal_appearance, truecolor};
use terminal::{fallback_name, terminal_color};

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
    /// Where among `sources` the `themes` setting's paths are (`/reload`
    /// puts the setting's new paths there); `None` when it gave none a place.
    setting_paths: Option<std::ops::Range<usize>>,
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
        setting_paths: None,
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
/// until another theme is chosen). `paths`: the `themes` setting's files
/// and folders, when the settings read again changed them.
pub fn reload(setting: Option<&str>, paths: Option<&[PathBuf]>) -> (usize, Vec<String>) {
    let Some(mut loaded) = LOADED.read().unwrap_or_else(|e| e.into_inner()).clone() else {
        return (ThemeSet::built_in().names().count(), Vec::new());
    };
    if let (Some(paths), Some(range)) = (paths, loaded.setting_paths.clone()) {
        loaded.sources.splice(range.clone(), paths.iter().cloned());
        loaded.setting_paths = Some(range.start..range.start + paths.len());
    }
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
    let (mut paths, setting_paths) = if args.no_themes {
        (Vec::new(), None)
    } else {
        let pi_dir = makai_coding::resources::pi_agent_dir();
        let home = makai_coding::makai_home();
        let project = app.project_trust().trusted.then(|| app.cwd());
        let paths = sources(
            pi_dir.as_deref(),
            home.as_deref(),
            project,
            &settings.themes,
        );
        let from = paths.len() - settings.themes.len();
        let range = from..paths.len();
        (paths, Some(range))
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
    let said = choose(&paths, setting, truecolor);
    if let Some(loaded) = LOADED.write().unwrap_or_else(|e| e.into_inner()).as_mut() {
        loaded.setting_paths = setting_paths;
    }
    said
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
