//! kitty's graphics protocol with Unicode placeholders (kitty's docs,
//! "graphics-protocol", section "Unicode placeholders"): an image is sent
//! once with a virtual placement of `columns` x `rows` cells, and the
//! conversation holds ordinary text where it shows: each cell is the
//! placeholder character U+10EEEE with two combining marks naming its row
//! and column, in a foreground colour that names the image. The terminal
//! draws the image's part in each such cell, so an image scrolls, is cut by
//! the screen's edges and is redrawn by a frame's changed cells like any
//! other text.

/// The placeholder character.
pub const PLACEHOLDER: char = '\u{10EEEE}';

/// The combining marks that encode a row or a column number (index `i`
/// encodes `i`): kitty's `rowcolumn-diacritics.txt`, 297 entries.
const DIACRITICS: [u32; 297] = [
    0x0305, 0x030D, 0x030E, 0x0310, 0x0312, 0x033D, 0x033E, 0x033F, 0x0346, 0x034A, 0x034B, 0x034C,
    0x0350, 0x0351, 0x0352, 0x0357, 0x035B, 0x0363, 0x0364, 0x0365, 0x0366, 0x0367, 0x0368, 0x0369,
    0x036A, 0x036B, 0x036C, 0x036D, 0x036E, 0x036F, 0x0483, 0x0484, 0x0485, 0x0486, 0x0487, 0x0592,
    0x0593, 0x0594, 0x0595, 0x0597, 0x0598, 0x0599, 0x059C, 0x059D, 0x059E, 0x059F, 0x05A0, 0x05A1,
    0x05A8, 0x05A9, 0x05AB, 0x05AC, 0x05AF, 0x05C4, 0x0610, 0x0611, 0x0612, 0x0613, 0x0614, 0x0615,
    0x0616, 0x0617, 0x0657, 0x0658, 0x0659, 0x065A, 0x065B, 0x065D, 0x065E, 0x06D6, 0x06D7, 0x06D8,
    0x06D9, 0x06DA, 0x06DB, 0x06DC, 0x06DF, 0x06E0, 0x06E1, 0x06E2, 0x06E4, 0x06E7, 0x06E8, 0x06EB,
    0x06EC, 0x0730, 0x0732, 0x0733, 0x0735, 0x0736, 0x073A, 0x073D, 0x073F, 0x0740, 0x0741, 0x0743,
    0x0745, 0x0747, 0x0749, 0x074A, 0x07EB, 0x07EC, 0x07ED, 0x07EE, 0x07EF, 0x07F0, 0x07F1, 0x07F3,
    0x0816, 0x0817, 0x0818, 0x0819, 0x081B, 0x081C, 0x081D, 0x081E, 0x081F, 0x0820, 0x0821, 0x0822,
    0x0823, 0x0825, 0x0826, 0x0827, 0x0829, 0x082A, 0x082B, 0x082C, 0x082D, 0x0951, 0x0953, 0x0954,
    0x0F82, 0x0F83, 0x0F86, 0x0F87, 0x135D, 0x135E, 0x135F, 0x17DD, 0x193A, 0x1A17, 0x1A75, 0x1A76,
    0x1A77, 0x1A78, 0x1A79, 0x1A7A, 0x1A7B, 0x1A7C, 0x1B6B, 0x1B6D, 0x1B6E, 0x1B6F, 0x1B70, 0x1B71,
    0x1B72, 0x1B73, 0x1CD0, 0x1CD1, 0x1CD2, 0x1CDA, 0x1CDB, 0x1CE0, 0x1DC0, 0x1DC1, 0x1DC3, 0x1DC4,
    0x1DC5, 0x1DC6, 0x1DC7, 0x1DC8, 0x1DC9, 0x1DCB, 0x1DCC, 0x1DD1, 0x1DD2, 0x1DD3, 0x1DD4, 0x1DD5,
    0x1DD6, 0x1DD7, 0x1DD8, 0x1DD9, 0x1DDA, 0x1DDB, 0x1DDC, 0x1DDD, 0x1DDE, 0x1DDF, 0x1DE0, 0x1DE1,
    0x1DE2, 0x1DE3, 0x1DE4, 0x1DE5, 0x1DE6, 0x1DFE, 0x20D0, 0x20D1, 0x20D4, 0x20D5, 0x20D6, 0x20D7,
    0x20DB, 0x20DC, 0x20E1, 0x20E7, 0x20E9, 0x20F0, 0x2CEF, 0x2CF0, 0x2CF1, 0x2DE0, 0x2DE1, 0x2DE2,
    0x2DE3, 0x2DE4, 0x2DE5, 0x2DE6, 0x2DE7, 0x2DE8, 0x2DE9, 0x2DEA, 0x2DEB, 0x2DEC, 0x2DED, 0x2DEE,
    0x2DEF, 0x2DF0, 0x2DF1, 0x2DF2, 0x2DF3, 0x2DF4, 0x2DF5, 0x2DF6, 0x2DF7, 0x2DF8, 0x2DF9, 0x2DFA,
    0x2DFB, 0x2DFC, 0x2DFD, 0x2DFE, 0x2DFF, 0xA66F, 0xA67C, 0xA67D, 0xA6F0, 0xA6F1, 0xA8E0, 0xA8E1,
    0xA8E2, 0xA8E3, 0xA8E4, 0xA8E5, 0xA8E6, 0xA8E7, 0xA8E8, 0xA8E9, 0xA8EA, 0xA8EB, 0xA8EC, 0xA8ED,
    0xA8EE, 0xA8EF, 0xA8F0, 0xA8F1, 0xAAB0, 0xAAB2, 0xAAB3, 0xAAB7, 0xAAB8, 0xAABE, 0xAABF, 0xAAC1,
    0xFE20, 0xFE21, 0xFE22, 0xFE23, 0xFE24, 0xFE25, 0xFE26, 0x10A0F, 0x10A38, 0x1D185, 0x1D186,
    0x1D187, 0x1D188, 0x1D189, 0x1D1AA, 0x1D1AB, 0x1D1AC, 0x1D1AD, 0x1D242, 0x1D243, 0x1D244,
];

/// The most rows or columns a placement can have: one mark per number.
pub const MAX_CELLS: u16 = DIACRITICS.len() as u16;

/// Base64 bytes per escape sequence: the protocol's chunk limit.
const CHUNK: usize = 4096;

/// The mark encoding `n` (`n` < [`MAX_CELLS`]; larger numbers take the last).
fn diacritic(n: u16) -> char {
    let code = DIACRITICS[usize::from(n).min(DIACRITICS.len() - 1)];
    char::from_u32(code).unwrap_or('\u{0305}')
}

/// The text of one placeholder row: `columns` cells of row `row`.
pub fn placeholder_row(row: u16, columns: u16) -> String {
    let mut out = String::with_capacity(usize::from(columns) * 8);
    let row_mark = diacritic(row);
    for column in 0..columns {
        out.push(PLACEHOLDER);
        out.push(row_mark);
        out.push(diacritic(column));
    }
    out
}

/// The foreground colour naming image `id` (24 bits: red the high byte).
pub fn id_colour(id: u32) -> (u8, u8, u8) {
    let [_, r, g, b] = id.to_be_bytes();
    (r, g, b)
}

/// The escape sequences that send `png_base64` as image `id` and place it
/// virtually in `columns` x `rows` cells (quietly: the terminal answers
/// nothing), in chunks the protocol accepts. Inside tmux (`tmux`) each is
/// wrapped for tmux to pass on (its `allow-passthrough` option must be on).
pub fn transmission(id: u32, columns: u16, rows: u16, png_base64: &str, tmux: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(png_base64.len() + png_base64.len() / CHUNK * 64 + 128);
    let bytes = png_base64.as_bytes();
    let chunks: Vec<&[u8]> = if bytes.is_empty() {
        vec![&[][..]]
    } else {
        bytes.chunks(CHUNK).collect()
    };
    let last = chunks.len() - 1;
    for (i, chunk) in chunks.into_iter().enumerate() {
        let more = u8::from(i < last);
        let control = if i == 0 {
            format!("a=T,U=1,f=100,t=d,i={id},c={columns},r={rows},q=2,m={more}")
        } else {
            format!("m={more}")
        };
        let mut sequence = Vec::with_capacity(chunk.len() + control.len() + 6);
        sequence.extend_from_slice(b"\x1b_G");
        sequence.extend_from_slice(control.as_bytes());
        sequence.push(b';');
        sequence.extend_from_slice(chunk);
        sequence.extend_from_slice(b"\x1b\\");
        push_sequence(&mut out, &sequence, tmux);
    }
    out
}

/// The escape sequence deleting image `id` and its placements.
pub fn deletion(id: u32, tmux: bool) -> Vec<u8> {
    let mut out = Vec::new();
    push_sequence(
        &mut out,
        format!("\x1b_Ga=d,d=I,i={id},q=2\x1b\\").as_bytes(),
        tmux,
    );
    out
}

/// Appends `sequence`, wrapped in tmux's passthrough (`ESC P tmux; …
/// ESC \`, every ESC inside doubled) when `tmux`.
pub(super) fn push_sequence(out: &mut Vec<u8>, sequence: &[u8], tmux: bool) {
    if !tmux {
        out.extend_from_slice(sequence);
        return;
    }
    out.extend_from_slice(b"\x1bPtmux;");
    for &b in sequence {
        if b == 0x1b {
            out.push(0x1b);
        }
        out.push(b);
    }
    out.extend_from_slice(b"\x1b\\");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_names_its_row_and_each_column() {
        let row = placeholder_row(2, 3);
        let chars: Vec<char> = row.chars().collect();
        assert_eq!(chars.len(), 9);
        assert_eq!(
            chars,
            [
                PLACEHOLDER,
                '\u{030E}',
                '\u{0305}',
                PLACEHOLDER,
                '\u{030E}',
                '\u{030D}',
                PLACEHOLDER,
                '\u{030E}',
                '\u{030E}'
            ]
        );
        assert_eq!(diacritic(296), '\u{1D244}');
        assert_eq!(diacritic(1000), '\u{1D244}');
    }

    #[test]
    fn an_image_goes_in_chunks_of_4096_and_is_wrapped_for_tmux() {
        let data = "A".repeat(CHUNK * 2 + 10);
        let out = String::from_utf8(transmission(0x01_02_03, 40, 12, &data, false)).unwrap();
        let sequences: Vec<&str> = out.split("\x1b\\").filter(|s| !s.is_empty()).collect();
        assert_eq!(sequences.len(), 3);
        assert!(
            sequences[0].starts_with("\x1b_Ga=T,U=1,f=100,t=d,i=66051,c=40,r=12,q=2,m=1;AAAA"),
            "{}",
            &sequences[0][..60]
        );
        assert_eq!(
            sequences[0].len(),
            "\x1b_Ga=T,U=1,f=100,t=d,i=66051,c=40,r=12,q=2,m=1;".len() + CHUNK
        );
        assert!(sequences[1].starts_with("\x1b_Gm=1;"));
        assert_eq!(sequences[2], format!("\x1b_Gm=0;{}", "A".repeat(10)));
        assert_eq!(id_colour(0x01_02_03), (1, 2, 3));

        let wrapped = transmission(7, 1, 1, "QQ==", true);
        assert_eq!(
            wrapped,
            b"\x1bPtmux;\x1b\x1b_Ga=T,U=1,f=100,t=d,i=7,c=1,r=1,q=2,m=0;QQ==\x1b\x1b\\\x1b\\"
                .to_vec()
        );
        assert_eq!(deletion(7, false), b"\x1b_Ga=d,d=I,i=7,q=2\x1b\\".to_vec());
    }
}
