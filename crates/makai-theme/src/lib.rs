//! pi's theme files for a terminal UI (pi 1.5.2's docs/themes.md).
//!
//! - [`Theme::parse`] reads a theme file as strictly as pi: its fields
//!   (`name`, `appearance`, `vars`, `colors`, `export`, `$schema`) and
//!   colour keys only, every required colour present, every variable
//!   resolvable. A colour is `#rgb` / `#rrggbb`, `oklch(L C H)` (brought
//!   into the sRGB gamut by lowering its chroma), `okhsl(H S L)`, a
//!   256-colour index, `""` (the terminal's own) or a variable's name.
//! - [`Role`]: the parts of the interface a theme colours, by pi's names;
//!   the optional ones fall back to another's colour.
//! - [`ThemeSet`]: the built-in `dark` and `light` themes and those of theme
//!   files and directories, and the choice the `theme` setting makes
//!   (`system`, a name, or a `light/dark` pair) for the terminal's
//!   appearance ([`terminal_appearance`]).

mod color;
mod role;
mod set;
mod theme;

pub use color::Color;
pub use role::Role;
pub use set::{ThemeSet, terminal_appearance};
pub use theme::{Appearance, Theme};

/// Why a theme cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    /// The theme's text is not a valid theme.
    #[error("invalid theme: {0}")]
    Invalid(String),
    /// A theme file cannot be read or is invalid.
    #[error("theme file {}: {message}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No theme has the name asked for.
    #[error("no theme is named '{name}' (the themes: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
}
