//! A theme's colour values: the forms pi's theme files write them in, and
//! what a terminal is sent.

use palette::{Clamp, FromColor, IsWithinBounds, Okhsl, Oklch, Srgb};

use crate::ThemeError;

/// A resolved colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Color {
    /// The terminal's own foreground or background (`""`).
    Default,
    /// An entry of the terminal's 256-colour palette (0 to 15: its 16
    /// basic colours, which the terminal's own theme decides).
    Indexed(u8),
    /// An sRGB colour.
    Rgb(u8, u8, u8),
}

impl Color {
    /// Its relative luminance (0 black, 1 white), when it is a known
    /// sRGB colour.
    pub fn luminance(self) -> Option<f32> {
        let Color::Rgb(r, g, b) = self else {
            return None;
        };
        let linear = |c: u8| {
            let c = f32::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        Some(0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b))
    }
}

/// A colour written as a string that is not a variable reference: `""`,
/// `#rgb`, `#rrggbb`, `oklch(L C H)` or `okhsl(H S L)`. `None` for anything
/// else (a variable's name).
pub(crate) fn parse_literal(text: &str) -> Option<Result<Color, String>> {
    let t = text.trim();
    if t.is_empty() {
        return Some(Ok(Color::Default));
    }
    if let Some(hex) = t.strip_prefix('#') {
        return Some(
            parse_hex(hex).ok_or_else(|| format!("'{text}' is not a #rgb or #rrggbb colour")),
        );
    }
    let lower = t.to_ascii_lowercase();
    if let Some(args) = function_args(&lower, "oklch") {
        return Some(parse_oklch(&args).ok_or_else(|| {
            format!("'{text}' is not oklch(L C H): lightness 0 to 1 or 0% to 100%, chroma, hue in degrees")
        }));
    }
    if let Some(args) = function_args(&lower, "okhsl") {
        return Some(parse_okhsl(&args).ok_or_else(|| {
            format!(
                "'{text}' is not okhsl(H S L): hue in degrees, saturation and lightness 0% to 100%"
            )
        }));
    }
    None
}

/// A 256-colour index written as a number.
pub(crate) fn parse_index(n: &serde_json::Number) -> Result<Color, ThemeError> {
    n.as_u64()
        .and_then(|i| u8::try_from(i).ok())
        .map(Color::Indexed)
        .ok_or_else(|| ThemeError::Invalid(format!("{n} is not a 256-colour index (0 to 255)")))
}

fn parse_hex(hex: &str) -> Option<Color> {
    let digits: Vec<u8> = hex
        .chars()
        .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect::<Option<_>>()?;
    match digits[..] {
        [r, g, b] => Some(Color::Rgb(r * 17, g * 17, b * 17)),
        [r1, r2, g1, g2, b1, b2] => Some(Color::Rgb(r1 * 16 + r2, g1 * 16 + g2, b1 * 16 + b2)),
        _ => None,
    }
}

/// The arguments of `name(a b c)` (spaces or commas between them).
fn function_args(text: &str, name: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix(name)?.trim_start().strip_prefix('(')?;
    let inner = inner.strip_suffix(')')?;
    Some(
        inner
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// A number, or a percentage of `full` (`50%` of 1 is 0.5).
fn amount(text: &str, full: f32) -> Option<f32> {
    let v = match text.strip_suffix('%') {
        Some(p) => p.parse::<f32>().ok()? / 100.0 * full,
        None => text.parse::<f32>().ok()?,
    };
    v.is_finite().then_some(v)
}

fn degrees(text: &str) -> Option<f32> {
    let v: f32 = text.strip_suffix("deg").unwrap_or(text).parse().ok()?;
    v.is_finite().then_some(v)
}

fn to_rgb(c: Srgb) -> Color {
    let c: Srgb<u8> = c.clamp().into_format();
    Color::Rgb(c.red, c.green, c.blue)
}

/// OKLCH, brought into the sRGB gamut by lowering its chroma (hue and
/// lightness kept), as CSS maps colours to a display's gamut.
fn parse_oklch(args: &[String]) -> Option<Color> {
    let [l, c, h] = args else { return None };
    let (l, c, h) = (amount(l, 1.0)?, amount(c, 0.4)?, degrees(h)?);
    if !(0.0..=1.0).contains(&l) || c < 0.0 {
        return None;
    }
    let at = |chroma: f32| Srgb::from_color(Oklch::new(l, chroma, h));
    if at(c).is_within_bounds() {
        return Some(to_rgb(at(c)));
    }
    let (mut inside, mut outside) = (0.0_f32, c);
    for _ in 0..24 {
        let mid = (inside + outside) / 2.0;
        if at(mid).is_within_bounds() {
            inside = mid;
        } else {
            outside = mid;
        }
    }
    Some(to_rgb(at(inside)))
}

/// OKHSL: every value is inside the sRGB gamut.
fn parse_okhsl(args: &[String]) -> Option<Color> {
    let [h, s, l] = args else { return None };
    let (h, s, l) = (degrees(h)?, amount(s, 1.0)?, amount(l, 1.0)?);
    if !(0.0..=1.0).contains(&s) || !(0.0..=1.0).contains(&l) {
        return None;
    }
    Some(to_rgb(Srgb::from_color(Okhsl::new(h, s, l))))
}
