//! The agent's steering and follow-up queues: what a run takes between
//! turns ([`crate::hooks::MessageQueues`], in `state.rs`), filled and
//! emptied here.

use crate::config::SteeringBehavior;
use crate::message::AgentMessage;
use crate::types::QueueMode;

use super::Agent;

impl Agent {
    fn enqueue(&self, message: AgentMessage, steering: bool) {
        let mut core = self.inner.lock();
        if steering {
            core.steering.push_back(message);
        } else {
            core.follow_up.push_back(message);
        }
        let event = core.queue_event();
        self.inner.registry.broadcast(&event);
        drop(core);
        self.inner.registry.deliver_inline();
    }

    /// Queues a message that interrupts the run: delivered after the running tool
    /// call completes (remaining calls are skipped) or after the turn.
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        self.enqueue(message.into(), true);
    }

    /// Queues a message delivered when the run would otherwise end.
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        self.enqueue(message.into(), false);
    }

    /// Sets how many steering messages are delivered at a time.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.lock().steering_mode = mode;
    }

    /// Sets how many follow-up messages are delivered at a time.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.lock().follow_up_mode = mode;
    }

    /// The steering queue mode.
    pub fn steering_mode(&self) -> QueueMode {
        self.inner.lock().steering_mode
    }

    /// The follow-up queue mode.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.inner.lock().follow_up_mode
    }

    /// When steering messages reach the model in future runs
    /// ([`crate::AgentLoopConfig::steering`]).
    pub fn steering_behavior(&self) -> SteeringBehavior {
        self.inner.lock().config.steering
    }

    fn clear_queues(&self, steering: bool, follow_up: bool) {
        let mut core = self.inner.lock();
        if steering {
            core.steering.clear();
        }
        if follow_up {
            core.follow_up.clear();
        }
        let event = core.queue_event();
        self.inner.registry.broadcast(&event);
        drop(core);
        self.inner.registry.deliver_inline();
    }

    /// Drops queued steering messages.
    pub fn clear_steering_queue(&self) {
        self.clear_queues(true, false);
    }

    /// Drops queued follow-up messages.
    pub fn clear_follow_up_queue(&self) {
        self.clear_queues(false, true);
    }

    /// Drops every queued message.
    pub fn clear_all_queues(&self) {
        self.clear_queues(true, true);
    }

    /// Removes every queued message and returns them: (steering, follow-up),
    /// oldest first.
    pub fn take_queued(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        let mut core = self.inner.lock();
        let steering: Vec<AgentMessage> = core.steering.drain(..).collect();
        let follow_up: Vec<AgentMessage> = core.follow_up.drain(..).collect();
        let event = core.queue_event();
        self.inner.registry.broadcast(&event);
        drop(core);
        self.inner.registry.deliver_inline();
        (steering, follow_up)
    }

    /// How many messages are queued now: (steering, follow-up). Counted at
    /// the queues themselves, so a message queued a moment ago is in it even
    /// before any subscriber saw its `queue_update` event.
    pub fn queued_counts(&self) -> (usize, usize) {
        let core = self.inner.lock();
        (core.steering.len(), core.follow_up.len())
    }

    /// True when a steering or follow-up message is queued.
    pub fn has_queued_messages(&self) -> bool {
        let core = self.inner.lock();
        !core.steering.is_empty() || !core.follow_up.is_empty()
    }
}
