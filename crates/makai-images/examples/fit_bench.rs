//! The time `fit` takes for what users attach: a phone photo (4032 x 3024
//! JPEG), a retina screenshot (3024 x 1964 PNG) and an image already within
//! the limits (checked by its header alone). Prints the size and the median
//! of `RUNS` runs for each.
//!
//! ```text
//! cargo run --release -p makai-images --example fit_bench
//! ```

use std::io::Cursor;
use std::time::Instant;

use image::{ImageFormat, Rgb, RgbImage};
use makai_images::{Limits, fit};

const RUNS: usize = 5;

/// A picture with smooth areas, edges and some grain, as photos and
/// screenshots have.
fn picture(w: u32, h: u32, grain: u8) -> RgbImage {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    RgbImage::from_fn(w, h, |x, y| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let n = (state as u8) % grain.max(1);
        let band = if (x / 97 + y / 61) % 5 == 0 { 60 } else { 0 };
        Rgb([
            ((x * 255 / w) as u8).saturating_add(n),
            ((y * 255 / h) as u8).saturating_add(band),
            (((x + y) % 256) as u8).wrapping_add(n),
        ])
    })
}

fn encoded(img: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    if let Err(e) = img.write_to(&mut out, format) {
        eprintln!("encoding failed: {e}");
        std::process::exit(1);
    }
    out.into_inner()
}

fn main() {
    let cases = [
        (
            "photo 4032x3024 JPEG",
            encoded(&picture(4032, 3024, 24), ImageFormat::Jpeg),
            "image/jpeg",
        ),
        (
            "screenshot 3024x1964 PNG",
            encoded(&picture(3024, 1964, 1), ImageFormat::Png),
            "image/png",
        ),
        (
            "1600x1000 PNG (within the limits)",
            encoded(&picture(1600, 1000, 1), ImageFormat::Png),
            "image/png",
        ),
    ];
    for (what, bytes, mime) in &cases {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..RUNS {
            let started = Instant::now();
            let fitted = fit(bytes, mime, &Limits::default());
            times.push(started.elapsed().as_secs_f64() * 1e3);
            last = Some(fitted);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        match last {
            Some(Ok(f)) => println!(
                "{what}: {} KB -> {:?} {} {} KB, median {:.1} ms",
                bytes.len() / 1024,
                f.size.unwrap_or((0, 0)),
                f.mime_type,
                f.data.len() / 1024,
                times[RUNS / 2]
            ),
            Some(Err(e)) => println!("{what}: {e}"),
            None => {}
        }
    }
}
