//! Bytes in memory to final message: the SSE parser, each provider's decoder and
//! the message builder, without I/O (`makai_ai::decode_body`).
//!
//! For every wire API: a 10,000-event text stream and a `write` call whose ~1 MB
//! `content` argument arrives in 2,000 deltas, each body delivered in 16 KB
//! chunks. Throughput is reported in SSE events per second.
//!
//! ```text
//! cargo bench -p makai-ai --bench decode
//! ```

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use makai_ai::decode_body;

mod workloads;

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for w in workloads::all() {
        if let Err(e) = w.verify() {
            panic!("workload does not decode correctly: {e}");
        }
        let model = w.model();
        let chunks = w.chunks();
        group.throughput(Throughput::Elements(w.events));
        group.bench_function(w.name.as_str(), |b| {
            b.iter(|| decode_body(black_box(&model), chunks.iter().copied()))
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
