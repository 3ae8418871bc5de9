//! pi's `images.blockImages` setting: no image reaches a model. The session's
//! client is wrapped so that every request (runs, compaction, titles,
//! sub-agents) has its images replaced by a note saying why, whatever the
//! model accepts; the session keeps them as they were.

use std::sync::Arc;

use async_trait::async_trait;
use makai_ai::{
    AssistantMessageEventStream, Context, Message, Model, ProtocolClient, StreamOptions,
    UserContent,
};

/// What replaces an image in a request.
pub const BLOCKED_IMAGE_TEXT: &str =
    "(image omitted: images are blocked by the images.blockImages setting)";

/// A client sending no image: each is replaced by [`BLOCKED_IMAGE_TEXT`].
pub struct BlockImagesClient {
    inner: Arc<dyn ProtocolClient>,
}

impl BlockImagesClient {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ProtocolClient>) -> Self {
        BlockImagesClient { inner }
    }
}

fn has_image(content: &[UserContent]) -> bool {
    content.iter().any(|c| matches!(c, UserContent::Image(_)))
}

fn blocked(content: &mut [UserContent]) {
    for c in content.iter_mut() {
        if matches!(c, UserContent::Image(_)) {
            *c = UserContent::text(BLOCKED_IMAGE_TEXT);
        }
    }
}

/// `context` without images, or `None` when it has none (no copy then).
fn without_images(context: &Context) -> Option<Context> {
    let any = context.messages.iter().any(|m| match m {
        Message::User(u) => has_image(&u.content),
        Message::ToolResult(r) => has_image(&r.content),
        _ => false,
    });
    if !any {
        return None;
    }
    let mut copy = context.clone();
    for m in &mut copy.messages {
        match m {
            Message::User(u) => blocked(&mut u.content),
            Message::ToolResult(r) => blocked(&mut r.content),
            _ => {}
        }
    }
    Some(copy)
}

#[async_trait]
impl ProtocolClient for BlockImagesClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        match without_images(context) {
            Some(copy) => self.inner.stream(model, &copy, options).await,
            None => self.inner.stream(model, context, options).await,
        }
    }

    async fn preconnect(&self, model: &Model, options: &StreamOptions) {
        self.inner.preconnect(model, options).await;
    }
}
