//! iTerm2's inline images (its docs, "Inline Images Protocol"; WezTerm
//! speaks it too): `OSC 1337 ; File=… : base64 BEL` draws an image at the
//! cursor, over a box of cells. Unlike kitty's placeholders the image is no
//! text: the conversation keeps blank cells where it shows, and the screen
//! draws it there once the whole box is on screen (see
//! [`crate::tui::screen`]'s placed images). The terminal moves it with the
//! rows it scrolls, and text written over its cells replaces its parts.

use super::kitty;

/// The sequence drawing the PNG `png_base64` (`png_bytes` long once
/// decoded) at the cursor across `columns` x `rows` cells, its shape kept.
/// Inside tmux (`tmux`) it is wrapped for tmux to pass on.
pub fn sequence(
    columns: u16,
    rows: u16,
    png_base64: &str,
    png_bytes: usize,
    tmux: bool,
) -> Vec<u8> {
    let mut sequence = Vec::with_capacity(png_base64.len() + 96);
    sequence.extend_from_slice(
        format!(
            "\x1b]1337;File=inline=1;size={png_bytes};width={columns};height={rows};preserveAspectRatio=1:"
        )
        .as_bytes(),
    );
    sequence.extend_from_slice(png_base64.as_bytes());
    sequence.push(0x07);
    if !tmux {
        return sequence;
    }
    let mut out = Vec::with_capacity(sequence.len() + 16);
    kitty::push_sequence(&mut out, &sequence, true);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_one_osc_1337_sized_in_cells_and_wrapped_for_tmux() {
        assert_eq!(
            sequence(20, 5, "QUJD", 3, false),
            b"\x1b]1337;File=inline=1;size=3;width=20;height=5;preserveAspectRatio=1:QUJD\x07"
                .to_vec()
        );
        assert_eq!(
            sequence(1, 1, "QQ==", 1, true),
            b"\x1bPtmux;\x1b\x1b]1337;File=inline=1;size=1;width=1;height=1;preserveAspectRatio=1:QQ==\x07\x1b\\"
                .to_vec()
        );
    }
}
