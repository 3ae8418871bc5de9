//! Images fitted as pi's `images.autoResize` does, through the public API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;

use image::{ImageEncoder, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use makai_images::{FitError, Limits, fit};

fn png_of(img: &image::DynamicImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

fn solid(w: u32, h: u32) -> Vec<u8> {
    png_of(&RgbImage::from_pixel(w, h, Rgb([10, 120, 200])).into())
}

/// Pixels no encoder can shrink much (a fixed pseudo-random sequence).
fn noise(w: u32, h: u32) -> RgbImage {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    RgbImage::from_fn(w, h, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let b = state.to_le_bytes();
        Rgb([b[0], b[1], b[2]])
    })
}

fn size_of(data: &[u8]) -> (u32, u32) {
    let img = image::load_from_memory(data).unwrap();
    (img.width(), img.height())
}

#[test]
fn an_image_within_the_limits_is_kept_byte_for_byte() {
    let png = solid(1200, 800);
    let fitted = fit(&png, "image/png", &Limits::default()).unwrap();
    assert_eq!(fitted.data, png);
    assert_eq!(fitted.mime_type, "image/png");
    assert_eq!(fitted.size, Some((1200, 800)));
    assert!(!fitted.resized);
    assert_eq!(fitted.dimension_note(), None);
}

#[test]
fn a_wide_or_tall_image_is_scaled_to_2000_pixels_keeping_its_proportions() {
    for ((w, h), want) in [
        ((3000, 1500), (2000, 1000)),
        ((1000, 4000), (500, 2000)),
        ((5000, 5000), (2000, 2000)),
    ] {
        let fitted = fit(&solid(w, h), "image/png", &Limits::default()).unwrap();
        assert_eq!(fitted.size, Some(want), "{w}x{h}");
        assert_eq!(size_of(&fitted.data), want, "{w}x{h}");
        assert_eq!(fitted.original, Some((w, h)));
        assert!(fitted.resized);
        assert!(fitted.data.len() <= Limits::default().max_bytes);
    }
    let fitted = fit(&solid(3000, 1500), "image/png", &Limits::default()).unwrap();
    assert_eq!(
        fitted.dimension_note().unwrap(),
        "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"
    );
}

#[test]
fn an_image_over_the_byte_limit_is_encoded_smaller_as_jpeg_then_smaller_in_size() {
    // 1800x1800 of noise: a PNG of about 9.7 MB, within the pixel limits.
    let png = png_of(&noise(1800, 1800).into());
    assert!(png.len() > Limits::default().max_bytes);
    let fitted = fit(&png, "image/png", &Limits::default()).unwrap();
    assert_eq!(fitted.mime_type, "image/jpeg");
    assert!(fitted.data.len() <= Limits::default().max_bytes);
    assert_eq!(fitted.size, Some(size_of(&fitted.data)));
    // A tighter limit: no quality is enough at full size, so it shrinks.
    let tight = Limits {
        max_bytes: 300_000,
        ..Limits::default()
    };
    let fitted = fit(&png, "image/png", &tight).unwrap();
    assert!(fitted.data.len() <= 300_000, "{}", fitted.data.len());
    let (w, h) = fitted.size.unwrap();
    assert!(w < 1800 && w == h && w >= 100, "{w}x{h}");
}

#[test]
fn an_image_that_cannot_be_made_small_enough_is_an_error_not_a_loss() {
    let png = png_of(&noise(400, 400).into());
    let limits = Limits {
        max_bytes: 1_000,
        ..Limits::default()
    };
    match fit(&png, "image/png", &limits) {
        Err(FitError::TooLarge { smallest, limit }) => {
            assert_eq!(limit, 1_000);
            assert!(smallest > 1_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_image_is_kept_when_small_and_refused_when_large() {
    let junk = b"\x89PNG\r\n\x1a\nnot really a png".to_vec();
    let fitted = fit(&junk, "image/png", &Limits::default()).unwrap();
    assert_eq!(fitted.data, junk);
    assert_eq!(fitted.size, None);
    assert!(!fitted.resized);
    let limits = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    let err = fit(&junk, "image/png", &limits).unwrap_err();
    assert!(
        matches!(
            err,
            FitError::Unreadable {
                bytes: 24,
                limit: 10,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("cannot be read"), "{err}");
}

#[test]
fn a_photo_turned_by_its_exif_orientation_is_sent_upright() {
    // 2400x1200 as stored, EXIF orientation 6 (turn 90° clockwise to view):
    // upright it is 1200x2400, fitted to 1000x2000.
    let stored = RgbImage::from_pixel(2400, 1200, Rgb([90, 90, 90]));
    // A TIFF block (big-endian) with one entry: Orientation (0x0112) = 6.
    let exif: Vec<u8> = [
        &b"MM\0\x2a"[..],
        &[0, 0, 0, 8],
        &[0, 1],
        &[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0],
        &[0, 0, 0, 0],
    ]
    .concat();
    let mut jpeg = Vec::new();
    let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90);
    encoder.set_exif_metadata(exif).unwrap();
    encoder
        .write_image(stored.as_raw(), 2400, 1200, image::ExtendedColorType::Rgb8)
        .unwrap();
    let fitted = fit(&jpeg, "image/jpeg", &Limits::default()).unwrap();
    assert_eq!(fitted.original, Some((1200, 2400)));
    assert_eq!(fitted.size, Some((1000, 2000)));
    assert_eq!(size_of(&fitted.data), (1000, 2000));
}

#[test]
fn transparency_becomes_white_in_a_jpeg() {
    // Noise with a transparent half: the JPEG (smaller than the PNG) shows
    // white where nothing was.
    let base = noise(2400, 600);
    let img = RgbaImage::from_fn(2400, 600, |x, y| {
        let p = base.get_pixel(x, y);
        if x < 1200 {
            Rgba([0, 0, 0, 0])
        } else {
            Rgba([p[0], p[1], p[2], 255])
        }
    });
    let fitted = fit(&png_of(&img.into()), "image/png", &Limits::default()).unwrap();
    assert_eq!(fitted.mime_type, "image/jpeg");
    let out = image::load_from_memory(&fitted.data).unwrap().to_rgb8();
    let p = out.get_pixel(100, 100);
    assert!(p.0.iter().all(|c| *c > 240), "{p:?}");
}
