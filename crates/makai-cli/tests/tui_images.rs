//! Images in the conversation under tmux, as pi draws them: with kitty's
//! graphics protocol (forced by `PI_IMAGE_PROTOCOL=kitty`, as tmux hides
//! the terminal behind it) an image a tool returned is sent once, wrapped
//! for tmux to pass on, and drawn as kitty's placeholder cells; it is
//! deleted at exit and the transcript left on the terminal has a note
//! instead. With iTerm2's protocol (`PI_IMAGE_PROTOCOL=iterm2`) it is drawn
//! over blank cells, once while it stays where it is. In regular mode both
//! go into the terminal's scrollback and stay. Without a protocol,
//! or with `terminal.showImages: false`, it is the note "[1 image(s)]".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::*;
use makai_mockllm::{Scenario, ScriptedResponse};
use serde_json::json;

/// The first placeholder cell: row 0, column 0.
const FIRST_CELL: &str = "\u{10EEEE}\u{0305}\u{0305}";
/// An image sent to the terminal through tmux.
const SENT: &str = "\x1bPtmux;\x1b\x1b_Ga=T,U=1,f=100,t=d,i=";
/// An image deleted through tmux.
const DELETED: &str = "\x1bPtmux;\x1b\x1b_Ga=d,d=I,i=";

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb([200, 30, 30]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

/// Has the model read `dot.png` and answer; returns what makai wrote to
/// the terminal and the transcript left after exit.
fn read_an_image(vars: &[(&str, &str)], settings: Option<serde_json::Value>) -> (String, String) {
    read_an_image_in(&[], vars, settings)
}

/// [`read_an_image`] with more arguments for makai.
fn read_an_image_in(
    args: &[&str],
    vars: &[(&str, &str)],
    settings: Option<serde_json::Value>,
) -> (String, String) {
    let mock = Mock::start(
        Scenario::new()
            .push(ScriptedResponse::tool_call(
                "c1",
                "read",
                json!({"path": "dot.png"}).to_string(),
            ))
            .push(ScriptedResponse::text("seen it")),
    );
    let env = Env::new();
    add_image_model(&env, &mock);
    if let Some(settings) = settings {
        env.settings(settings);
    }
    std::fs::write(env.work().join("dot.png"), png(200, 100)).unwrap();
    let raw = env.home.path().join("pane-output.bin");
    let mut all = vec!["--model", "lab/eyes"];
    all.extend(args);
    let pane = Pane::start_with(&env, &s(&all), vars);
    pane.wait_text("Ask anything");
    pane.tmux(&["pipe-pane", "-o", &format!("cat >> {}", raw.display())]);
    pane.type_text("look at it");
    pane.keys(&["Enter"]);
    pane.wait_text("seen it");
    assert_eq!(pane.quit_with_ctrl_c(), 0);
    let after = pane.output_after_exit();
    let out = String::from_utf8_lossy(&std::fs::read(&raw).unwrap()).to_string();
    (out, after)
}

#[test]
fn a_tool_s_image_is_sent_once_and_drawn_in_placeholder_cells() {
    if !tmux_available() {
        return;
    }
    let (out, after) = read_an_image(&[("PI_IMAGE_PROTOCOL", "kitty")], None);
    assert_eq!(out.matches(SENT).count(), 1, "sent once");
    let sent_at = out.find(SENT).unwrap();
    // Placed virtually in as many cells as its 200 x 100 pixels need (the
    // cell size is what the terminal says), and every cell drawn.
    let params = &out[sent_at + SENT.len()..];
    let params = &params[..params.find(';').unwrap()];
    let number = |key: &str| -> usize {
        let at = params.find(key).unwrap() + key.len();
        params[at..].split(',').next().unwrap().parse().unwrap()
    };
    let (columns, rows) = (number(",c="), number(",r="));
    assert!(
        (1..=60).contains(&columns) && rows >= 1 && rows < columns,
        "{params}"
    );
    assert!(params.ends_with(",q=2,m=0"), "{params}");
    assert!(out.matches('\u{10EEEE}').count() >= columns * rows);
    let drawn_at = out.find(FIRST_CELL).expect("placeholder cells drawn");
    assert!(sent_at < drawn_at, "sent before it is drawn");
    // Its colour names the image.
    let id: u32 = params[..params.find(',').unwrap()].parse().unwrap();
    let [_, r, g, b] = id.to_be_bytes();
    let mut start = drawn_at.saturating_sub(40);
    while !out.is_char_boundary(start) {
        start -= 1;
    }
    let before = &out[start..drawn_at];
    assert!(before.contains(&format!("38;2;{r};{g};{b}")), "{before:?}");
    assert!(
        out.contains(&format!("{DELETED}{id},q=2")),
        "deleted at exit"
    );
    assert!(!after.contains('\u{10EEEE}'), "{after}");
    assert!(after.contains("[1 image(s)]"), "{after}");
}

/// An image drawn with iTerm2's protocol, through tmux.
const DRAWN: &str = "\x1bPtmux;\x1b\x1b]1337;File=inline=1;size=";

#[test]
fn with_iterm2_s_protocol_a_tool_s_image_is_drawn_over_blank_cells_once() {
    if !tmux_available() {
        return;
    }
    let (out, after) = read_an_image(&[("PI_IMAGE_PROTOCOL", "iterm2")], None);
    assert!(!out.contains("_Ga="), "nothing of kitty's");
    assert!(!out.contains('\u{10EEEE}'));
    // Drawn once, at the first column of a row (the cursor moved there
    // first): the frames after it (the answer under it) leave it be.
    assert_eq!(out.matches(DRAWN).count(), 1, "drawn once");
    let start = out.find(DRAWN).unwrap();
    let before = &out[..start];
    let moved = &before[before.rfind("\x1b[").unwrap()..];
    assert!(
        moved.ends_with(";1H") && moved[2..moved.len() - 3].parse::<u16>().is_ok(),
        "{moved:?}"
    );
    let at = start + DRAWN.len();
    let params = &out[at..at + out[at..].find(':').unwrap()];
    let png = png(200, 100);
    assert!(
        params.starts_with(&format!("{};width=", png.len())),
        "{params}"
    );
    assert!(params.ends_with(";preserveAspectRatio=1"), "{params}");
    let number = |key: &str| -> usize {
        let from = params.find(key).unwrap() + key.len();
        params[from..].split(';').next().unwrap().parse().unwrap()
    };
    let (columns, rows) = (number("width="), number("height="));
    assert!(
        (1..=60).contains(&columns) && rows >= 1 && rows < columns,
        "{params}"
    );
    // The PNG itself follows, whole, and the sequence ends with BEL.
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let payload_at = at + params.len() + 1;
    assert_eq!(&out[payload_at..payload_at + data.len()], data);
    assert_eq!(
        &out[payload_at + data.len()..payload_at + data.len() + 1],
        "\x07"
    );
    assert!(after.contains("[1 image(s)]"), "{after}");
}

/// Regular mode (`--tui-mode regular`): the conversation goes into the
/// terminal's scrollback with its images, which stay there when makai ends
/// (not deleted, their cells left on the terminal).
#[test]
fn in_regular_mode_images_go_into_the_scrollback_and_stay() {
    if !tmux_available() {
        return;
    }
    let regular = ["--tui-mode", "regular"];
    let (out, after) = read_an_image_in(&regular, &[("PI_IMAGE_PROTOCOL", "kitty")], None);
    assert_eq!(out.matches(SENT).count(), 1, "sent once");
    let sent_at = out.find(SENT).unwrap();
    let drawn_at = out.find(FIRST_CELL).expect("placeholder cells written");
    assert!(sent_at < drawn_at, "sent before its rows");
    assert!(!out.contains(DELETED), "kept at exit");
    assert!(after.contains("seen it"), "{after}");
    assert!(after.contains(FIRST_CELL), "its cells stay: {after}");

    let (out, _) = read_an_image_in(&regular, &[("PI_IMAGE_PROTOCOL", "iterm2")], None);
    assert_eq!(out.matches(DRAWN).count(), 1, "drawn once");
    // Over its rows with the cursor saved before and put back after.
    let at = out.find(DRAWN).unwrap();
    assert!(
        out[..at].ends_with("\r\x1b7"),
        "{:?}",
        &out[at.saturating_sub(20)..at]
    );
    let end = at + out[at..].find('\x07').unwrap();
    assert!(
        out[end..].starts_with("\x07\x1b\\\x1b8"),
        "{:?}",
        &out[end..end + 8]
    );
}

#[test]
fn images_are_notes_without_a_protocol_or_with_show_images_off() {
    if !tmux_available() {
        return;
    }
    // tmux stands between makai and the terminal: nothing is sent unless forced.
    let (out, _) = read_an_image(&[("TERM_PROGRAM", "ghostty")], None);
    assert!(!out.contains("_Ga="), "no image sent");
    let (out, _) = read_an_image(&[("TERM_PROGRAM", "iTerm.app")], None);
    assert!(!out.contains("1337;File="), "no image drawn");
    assert!(!out.contains('\u{10EEEE}'));
    assert!(out.contains("[1 image(s)]"));
    let (out, _) = read_an_image(
        &[("PI_IMAGE_PROTOCOL", "kitty")],
        Some(json!({"terminal": {"showImages": false}})),
    );
    assert!(!out.contains("_Ga="), "no image sent");
    assert!(out.contains("[1 image(s)]"));
}
