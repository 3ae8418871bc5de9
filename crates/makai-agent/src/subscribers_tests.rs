//! Tests of [`super`] (`subscribers.rs`).

use super::*;
use makai_ai::AssistantMessageEvent;

fn delta(i: usize, d: &str) -> AgentEvent {
    AgentEvent::MessageUpdate {
        message: None,
        assistant_message_event: AssistantMessageEvent::TextDelta {
            content_index: i,
            delta: d.into(),
        },
    }
}

#[test]
fn deltas_merge_only_past_the_threshold_and_only_same_block() {
    let q = EventQueue::new(2);
    q.push(AgentEvent::TurnStart);
    q.push(delta(0, "a"));
    q.push(delta(0, "b")); // len 2 >= 2: merged into "ab"
    q.push(delta(1, "c")); // different block: appended
    q.push(AgentEvent::TurnStart); // lifecycle: appended
    q.push(delta(1, "d")); // back is lifecycle: appended
    let mut texts = Vec::new();
    let mut kinds = Vec::new();
    q.finish();
    let mut batch = VecDeque::new();
    while q.take_blocking(&mut batch) {
        for e in batch.drain(..) {
            kinds.push(e.kind());
            if let Some(t) = e.text_delta() {
                texts.push(t.to_string());
            }
        }
    }
    assert_eq!(texts, ["ab", "c", "d"]);
    assert_eq!(
        kinds,
        [
            "turn_start",
            "message_update",
            "message_update",
            "turn_start",
            "message_update"
        ]
    );
}

/// The sink's copy of the queues follows every subscribe and unsubscribe.
#[test]
fn a_fanout_follows_subscribes_and_unsubscribes() {
    let registry = Registry::new();
    let mut fanout = Fanout::default();
    fanout.send(&registry, delta(0, "before anyone"));
    let first = registry.subscribe_stream(usize::MAX);
    fanout.send(&registry, delta(0, "a"));
    let second = registry.subscribe_stream(usize::MAX);
    fanout.send(&registry, delta(0, "b"));
    assert_eq!(first.reader.len(), 2);
    assert_eq!(second.reader.len(), 1);
    let second_queue = second.reader.queue.clone();
    drop(second);
    fanout.send(&registry, delta(0, "c"));
    assert_eq!(first.reader.len(), 3);
    assert_eq!(second_queue.len(), 0, "closed and left out");
    assert_eq!(fanout.queues.len(), 1);
}

#[test]
fn a_burst_leaves_one_large_buffer_not_two() {
    let q = EventQueue::new(usize::MAX);
    let mut batch = VecDeque::new();
    for round in 0..3 {
        for i in 0..500 {
            q.push(delta(0, &format!("{round}-{i}")));
        }
        assert!(q.take_blocking(&mut batch));
        assert_eq!(batch.len(), 500, "round {round}: nothing lost");
        assert_eq!(
            batch.front().and_then(|e| e.text_delta()),
            Some(&*format!("{round}-0"))
        );
        // The producer's buffer was the consumer's (large, from the last
        // round): trimmed as it changed hands.
        assert!(
            lock(&q.state).events.capacity() <= KEPT_CAPACITY,
            "round {round}"
        );
        batch.clear();
    }
}

#[test]
fn a_waiting_consumer_keeps_a_small_buffer() {
    let q = EventQueue::new(usize::MAX);
    let mut batch = VecDeque::new();
    for i in 0..500 {
        q.push(delta(0, &format!("{i}")));
    }
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    assert_eq!(q.poll_take(&mut cx, &mut batch), Poll::Ready(true));
    assert_eq!(batch.len(), 500);
    batch.clear();
    assert!(batch.capacity() >= 500);
    // Nothing queued: the consumer waits, with a trimmed buffer.
    assert_eq!(q.poll_take(&mut cx, &mut batch), Poll::Pending);
    assert!(batch.capacity() <= KEPT_CAPACITY);
    q.push(delta(0, "next"));
    assert_eq!(q.poll_take(&mut cx, &mut batch), Poll::Ready(true));
    assert_eq!(batch.front().and_then(|e| e.text_delta()), Some("next"));
}

#[test]
fn closed_queue_ignores_pushes() {
    let q = EventQueue::new(10);
    q.close();
    q.push(AgentEvent::TurnStart);
    assert_eq!(q.len(), 0);
    assert!(!q.take_blocking(&mut VecDeque::new()));
}

#[test]
fn panicking_subscriber_keeps_receiving() {
    let reg = Registry::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let _sub = reg
        .subscribe(COALESCE_AFTER, move |e| {
            if matches!(e, AgentEvent::TurnStart) {
                panic!("boom");
            }
            let _ = tx.send(e.kind());
        })
        .unwrap();
    reg.broadcast(&AgentEvent::TurnStart);
    reg.broadcast(&AgentEvent::AgentStart);
    let got = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(got, "agent_start");
}

#[test]
fn dropping_the_subscription_unsubscribes() {
    let reg = Registry::new();
    let sub = reg.subscribe(COALESCE_AFTER, |_| {}).unwrap();
    assert_eq!(lock(&reg.queues).len(), 1);
    drop(sub);
    assert_eq!(lock(&reg.queues).len(), 0);
}
