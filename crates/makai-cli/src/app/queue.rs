//! [`AppSession`]'s queue and run control: steering and follow-up
//! messages, their modes and delivery, images fitted for them, abort, and
//! the auto-compaction and auto-retry switches.

use makai_agent::QueueMode;
use makai_ai::ImageContent;

use super::{AppSession, lock, user_message};
use crate::error::CliError;

impl AppSession {
    /// Queues a steering message (delivered after the running tool call or
    /// turn); commands are expanded as for a prompt.
    /// An image that cannot be sent (see [`AppSession::fit_images`]) is an
    /// error and nothing is queued.
    pub fn steer(&self, text: String, images: Vec<ImageContent>) -> Result<(), CliError> {
        let images = self.fit_images(images)?;
        let text = self.expand(text);
        self.inner.agent.steer(user_message(text, images));
        Ok(())
    }

    /// Queues a follow-up message (delivered when the run would end);
    /// commands are expanded as for a prompt, images fitted as for one.
    pub fn follow_up(&self, text: String, images: Vec<ImageContent>) -> Result<(), CliError> {
        let images = self.fit_images(images)?;
        let text = self.expand(text);
        self.inner.agent.follow_up(user_message(text, images));
        Ok(())
    }

    /// [`AppSession::fit_images`] on a blocking thread, so that scaling a
    /// large image does not hold up the session's worker (and a UI on it).
    pub async fn fit_images_aside(
        &self,
        images: Vec<ImageContent>,
    ) -> Result<Vec<ImageContent>, CliError> {
        if images.is_empty() || !self.settings().images.auto_resize {
            return Ok(images);
        }
        let app = self.clone();
        tokio::task::spawn_blocking(move || app.fit_images(images))
            .await
            .map_err(|e| CliError::failed(format!("fitting the images failed: {e}")))?
    }

    /// The images of a message as they are sent and saved: fitted within
    /// 2000 by 2000 pixels and 4.5 MiB unless pi's `images.autoResize` is
    /// off (see [`makai_coding::images`]); one that cannot be is an error.
    pub fn fit_images(&self, images: Vec<ImageContent>) -> Result<Vec<ImageContent>, CliError> {
        if images.is_empty() || !self.settings().images.auto_resize {
            return Ok(images);
        }
        makai_coding::images::fit_all(images).map_err(|e| CliError::failed(e.to_string()))
    }

    /// Aborts the run (and a manual compaction), then waits until idle.
    pub async fn abort(&self) {
        if let Some(c) = lock(&self.inner.state).compaction_cancel.clone() {
            c.cancel();
        }
        self.inner.agent.abort();
        self.inner.agent.wait_for_idle().await;
    }

    /// True once the session's database store failed and a run was stopped
    /// for it (what was stored before stays consistent).
    pub fn store_failed(&self) -> bool {
        lock(&self.inner.state).store_failed
    }

    /// True while a run is going.
    pub fn is_streaming(&self) -> bool {
        self.inner.agent.is_running()
    }

    /// True while compaction (manual or automatic) runs.
    pub fn is_compacting(&self) -> bool {
        lock(&self.inner.state).compacting
            || self.inner.agent.status() == makai_agent::AgentStatus::Compacting
    }

    /// Queued steering plus follow-up messages, as the agent's queues hold
    /// them now (a message queued by the command before is counted, whether
    /// or not the event pump has applied its `queue_update` yet).
    pub fn pending_message_count(&self) -> usize {
        let (steering, follow_up) = self.inner.agent.queued_counts();
        steering + follow_up
    }

    /// Removes the queued messages and returns their text: (steering,
    /// follow-up), oldest first (pi's `clear_queue`).
    pub fn clear_queue(&self) -> (Vec<String>, Vec<String>) {
        let (steering, follow_up) = self.inner.agent.take_queued();
        let texts = |ms: Vec<makai_agent::AgentMessage>| ms.iter().map(|m| m.text()).collect();
        (texts(steering), texts(follow_up))
    }

    /// Sets when steering interrupts tool calls: skipping the calls not
    /// started yet (the default) or after the whole batch (pi 1.x).
    pub fn set_steering_delivery(&self, delivery: makai_agent::SteeringBehavior) {
        self.inner
            .agent
            .update_config(|cfg| cfg.steering = delivery);
    }

    /// Waits (up to `limit`) until every run started so far has ended and
    /// its `agent_settled` went out (also one that started a moment ago and
    /// whose first event the session has not seen yet).
    pub async fn wait_settled(&self, limit: std::time::Duration) {
        let started = self
            .inner
            .runs_started
            .load(std::sync::atomic::Ordering::SeqCst);
        let mut settled = self.inner.settled.subscribe();
        let done = settled.wait_for(|n| *n >= started);
        if tokio::time::timeout(limit, done).await.is_err() {
            tracing::warn!("the session did not settle within {limit:?}");
        }
    }

    // ---- queue modes, switches ----

    /// Sets how steering messages are delivered.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.agent.set_steering_mode(mode);
    }

    /// Sets how follow-up messages are delivered.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.agent.set_follow_up_mode(mode);
    }

    /// Turns automatic compaction on or off.
    pub fn set_auto_compaction(&self, enabled: bool) {
        lock(&self.inner.state).auto_compaction = enabled;
        self.configure_agent();
    }

    /// Whether automatic compaction is on.
    pub fn auto_compaction(&self) -> bool {
        lock(&self.inner.state).auto_compaction
    }

    /// Turns automatic retries of failed model calls on or off.
    pub fn set_auto_retry(&self, enabled: bool) {
        lock(&self.inner.state).auto_retry = enabled;
        self.configure_agent();
    }

    /// Whether failed model calls are retried automatically.
    pub fn auto_retry(&self) -> bool {
        lock(&self.inner.state).auto_retry
    }

    /// How steering and follow-up messages are delivered (steering, follow-up).
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        (
            self.inner.agent.steering_mode(),
            self.inner.agent.follow_up_mode(),
        )
    }

    /// Stops a retry in progress: the run ends (as aborted) instead of retrying.
    pub fn abort_retry(&self) {
        if lock(&self.inner.state).retrying {
            self.inner.agent.abort();
        }
    }
}
