//! Images a user gives (in a prompt, a steering or follow-up message) made
//! fit for a model's request, as pi's `images.autoResize` does (see
//! [`makai_images`]): at most 2000 by 2000 pixels and 4.5 MiB, so a large
//! screenshot is neither refused by the provider nor billed at full size,
//! and the session keeps what was sent.

use base64::Engine;
use makai_ai::ImageContent;

/// Why an image cannot be sent.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The data is not base64.
    #[error("image {index}: its data is not valid base64 ({reason})")]
    NotBase64 {
        /// Its place among the message's images, from 1.
        index: usize,
        /// What the decoder said.
        reason: String,
    },
    /// It cannot be made small enough.
    #[error("image {index}: {error}")]
    TooLarge {
        /// Its place among the message's images, from 1.
        index: usize,
        /// Why.
        error: makai_images::FitError,
    },
}

/// Each of `images` fitted within pi's limits (those within them are kept
/// as they are); the first that cannot be is an error naming it.
pub fn fit_all(images: Vec<ImageContent>) -> Result<Vec<ImageContent>, ImageError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let limits = makai_images::Limits::default();
    images
        .into_iter()
        .enumerate()
        .map(|(i, image)| {
            let index = i + 1;
            let bytes = b64
                .decode(image.data.as_bytes())
                .map_err(|e| ImageError::NotBase64 {
                    index,
                    reason: e.to_string(),
                })?;
            let fitted = makai_images::fit(&bytes, &image.mime_type, &limits)
                .map_err(|error| ImageError::TooLarge { index, error })?;
            Ok(if fitted.resized {
                ImageContent {
                    data: b64.encode(&fitted.data),
                    mime_type: fitted.mime_type,
                }
            } else {
                image
            })
        })
        .collect()
}
