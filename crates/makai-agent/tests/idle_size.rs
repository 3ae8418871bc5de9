//! An idle Agent stays small: measured with a counting global allocator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use common::*;
use makai_agent::Agent;
use makai_agent::testing::ScriptedClient;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn an_idle_agent_is_under_16_kb() {
    let client = ScriptedClient::new([]);
    let cfg = config(client);
    // Warm up lazily initialized statics (thread locals, etc.).
    drop(Agent::new(cfg.clone()));
    let before = LIVE.load(Ordering::SeqCst);
    let agents: Vec<Agent> = (0..10).map(|_| Agent::new(cfg.clone())).collect();
    let per_agent = (LIVE.load(Ordering::SeqCst) - before) / 10;
    assert!(per_agent > 0);
    assert!(
        per_agent < 16 * 1024,
        "an idle agent takes {per_agent} bytes"
    );
    eprintln!("idle agent: {per_agent} bytes of heap");
    drop(agents);
}
