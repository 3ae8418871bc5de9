//! Fits an image for a model's request, as pi's `images.autoResize` does:
//! at most 2000 by 2000 pixels and 4.5 MiB (under Anthropic's 5 MB per
//! image), turned upright by its EXIF orientation when it has to be
//! re-encoded.
//!
//! An image within the limits is kept byte for byte. A larger one is scaled
//! down (Lanczos3) to fit the pixel limits and encoded as PNG and as JPEG,
//! the smaller kept; while that is still over the byte limit, lower JPEG
//! qualities are tried, then smaller sizes (down to 100 pixels a side).
//! An image that cannot be read is kept when it is within the byte limit
//! (the provider may still read it); one that cannot be brought under the
//! limit is an error that says so, never a silent loss.
//!
//! ```
//! let png = {
//!     let img = image::RgbImage::from_pixel(3000, 1500, image::Rgb([200, 30, 30]));
//!     let mut out = std::io::Cursor::new(Vec::new());
//!     img.write_to(&mut out, image::ImageFormat::Png).unwrap();
//!     out.into_inner()
//! };
//! let fitted = makai_images::fit(&png, "image/png", &makai_images::Limits::default()).unwrap();
//! assert_eq!(fitted.size, Some((2000, 1000)));
//! assert!(fitted.resized);
//! ```

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageReader};

/// pi's limits: 2000 by 2000 pixels, 4.5 MiB, JPEG quality 80 first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Widest image kept, in pixels.
    pub max_width: u32,
    /// Tallest image kept, in pixels.
    pub max_height: u32,
    /// Largest encoded image kept, in bytes.
    pub max_bytes: usize,
    /// JPEG quality of the first attempt.
    pub jpeg_quality: u8,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_width: 2000,
            max_height: 2000,
            max_bytes: 4_718_592,
            jpeg_quality: 80,
        }
    }
}

/// JPEG qualities tried when the first attempt is still too large.
const QUALITY_STEPS: [u8; 4] = [85, 70, 55, 40];
/// Sizes tried (of the size that fits the pixel limits) after the qualities.
const SCALE_STEPS: [f64; 5] = [1.0, 0.75, 0.5, 0.35, 0.25];
/// No side is made smaller than this.
const MIN_SIDE: u32 = 100;

/// An image ready for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fitted {
    /// The encoded image.
    pub data: Vec<u8>,
    /// Its media type (`image/png`, `image/jpeg`, or the input's).
    pub mime_type: String,
    /// Its size in pixels (`None`: it could not be read and is kept as given).
    pub size: Option<(u32, u32)>,
    /// The size of the image given, upright (`None`: it could not be read).
    pub original: Option<(u32, u32)>,
    /// True when it was re-encoded.
    pub resized: bool,
}

impl Fitted {
    /// pi's note for a model about a scaled image, so coordinates it gives
    /// can be mapped back; `None` when the size did not change.
    pub fn dimension_note(&self) -> Option<String> {
        let ((ow, oh), (w, h)) = (self.original?, self.size?);
        if !self.resized || (ow, oh) == (w, h) || w == 0 {
            return None;
        }
        let scale = f64::from(ow) / f64::from(w);
        Some(format!(
            "[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by {scale:.2} to map to original image.]"
        ))
    }
}

/// Why an image cannot be sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FitError {
    /// The image could not be read, and is larger than the limit as it is.
    #[error(
        "the image ({bytes} bytes) cannot be read ({reason}) and is larger than the {limit}-byte limit for images"
    )]
    Unreadable {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
        /// What the decoder said.
        reason: String,
    },
    /// Even the smallest size tried is over the limit.
    #[error(
        "the image could not be made smaller than {smallest} bytes, over the {limit}-byte limit for images"
    )]
    TooLarge {
        /// The smallest encoding reached.
        smallest: usize,
        /// The limit.
        limit: usize,
    },
}

/// Fits `bytes` (an image of media type `mime_type`) within `limits`.
pub fn fit(bytes: &[u8], mime_type: &str, limits: &Limits) -> Result<Fitted, FitError> {
    let as_given = |size: Option<(u32, u32)>| Fitted {
        data: bytes.to_vec(),
        mime_type: mime_type.to_string(),
        size,
        original: size,
        resized: false,
    };
    // Most images are within the limits: their header says so, and they
    // are not decoded at all.
    if bytes.len() <= limits.max_bytes
        && let Some((w, h)) = header_size(bytes)
        && w.max(h) <= limits.max_width.min(limits.max_height)
    {
        return Ok(as_given(Some((w, h))));
    }
    let image = match decode(bytes) {
        Ok(image) => image,
        // Not readable here, but perhaps by the provider.
        Err(_) if bytes.len() <= limits.max_bytes => return Ok(as_given(None)),
        Err(reason) => {
            return Err(FitError::Unreadable {
                bytes: bytes.len(),
                limit: limits.max_bytes,
                reason,
            });
        }
    };
    let original = (image.width(), image.height());
    if original.0 <= limits.max_width
        && original.1 <= limits.max_height
        && bytes.len() <= limits.max_bytes
    {
        return Ok(as_given(Some(original)));
    }
    let target = within(original, limits.max_width, limits.max_height);
    let mut smallest = usize::MAX;
    let mut attempt = |size: (u32, u32), qualities: &[u8]| -> Option<Fitted> {
        let scaled = scale(&image, size);
        let png = encode_png(&scaled);
        for &quality in qualities {
            let jpeg = encode_jpeg(&scaled, quality);
            let best = [(&png, "image/png"), (&jpeg, "image/jpeg")]
                .into_iter()
                .filter_map(|(data, mime)| data.as_ref().map(|d| (d, mime)))
                .min_by_key(|(data, _)| data.len());
            let Some((data, mime)) = best else { continue };
            smallest = smallest.min(data.len());
            if data.len() <= limits.max_bytes {
                return Some(Fitted {
                    data: data.clone(),
                    mime_type: mime.to_string(),
                    size: Some(size),
                    original: Some(original),
                    resized: true,
                });
            }
        }
        None
    };
    let mut qualities = vec![limits.jpeg_quality];
    qualities.extend(QUALITY_STEPS);
    if let Some(fitted) = attempt(target, &qualities) {
        return Ok(fitted);
    }
    for factor in SCALE_STEPS.iter().skip(1) {
        let size = (
            (f64::from(target.0) * factor).round() as u32,
            (f64::from(target.1) * factor).round() as u32,
        );
        if size.0 < MIN_SIDE || size.1 < MIN_SIDE {
            break;
        }
        if let Some(fitted) = attempt(size, &QUALITY_STEPS) {
            return Ok(fitted);
        }
    }
    Err(FitError::TooLarge {
        smallest,
        limit: limits.max_bytes,
    })
}

/// The width and height an image's header gives (as stored: a photo's
/// EXIF orientation may turn it).
fn header_size(bytes: &[u8]) -> Option<(u32, u32)> {
    ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

/// The image, turned upright by its EXIF orientation.
fn decode(bytes: &[u8]) -> Result<DynamicImage, String> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    let mut decoder = reader.into_decoder().map_err(|e| e.to_string())?;
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).map_err(|e| e.to_string())?;
    if let Some(orientation) = orientation {
        image.apply_orientation(orientation);
    }
    Ok(image)
}

/// `size` scaled down, keeping its proportions, to fit `max_width` by
/// `max_height` (at least a pixel a side).
fn within(size: (u32, u32), max_width: u32, max_height: u32) -> (u32, u32) {
    let (mut w, mut h) = (f64::from(size.0), f64::from(size.1));
    if w > f64::from(max_width) {
        h = (h * f64::from(max_width) / w).round();
        w = f64::from(max_width);
    }
    if h > f64::from(max_height) {
        w = (w * f64::from(max_height) / h).round();
        h = f64::from(max_height);
    }
    ((w as u32).max(1), (h as u32).max(1))
}

fn scale(image: &DynamicImage, size: (u32, u32)) -> DynamicImage {
    if (image.width(), image.height()) == size {
        image.clone()
    } else {
        image.resize_exact(size.0, size.1, FilterType::Lanczos3)
    }
}

fn encode_png(image: &DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    image.write_with_encoder(PngEncoder::new(&mut out)).ok()?;
    Some(out)
}

/// JPEG has no transparency: a transparent image is laid on white first.
fn encode_jpeg(image: &DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let rgb = if image.color().has_alpha() {
        let rgba = image.to_rgba8();
        let mut rgb = image::RgbImage::new(rgba.width(), rgba.height());
        for (to, from) in rgb.pixels_mut().zip(rgba.pixels()) {
            let a = u16::from(from[3]);
            let over_white = |c: u8| ((u16::from(c) * a + 255 * (255 - a)) / 255) as u8;
            *to = image::Rgb([
                over_white(from[0]),
                over_white(from[1]),
                over_white(from[2]),
            ]);
        }
        rgb
    } else {
        image.to_rgb8()
    };
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&rgb)
        .ok()?;
    Some(out)
}
