//! Criterion benches: compress and decompress per codec per page class, and on real pages.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pagecodec::testing::{PageClass, generate};
use pagecodec::{PAGE_SIZE, Page};
use std::hint::black_box;

fn per_class(c: &mut Criterion) {
    for mut codec in pagebench::codecs::all() {
        let mut group = c.benchmark_group(codec.name());
        group.throughput(Throughput::Bytes(PAGE_SIZE as u64));
        let mut out = vec![0u8; codec.max_compressed_len()];
        for class in PageClass::ALL {
            let page = generate(class, 1);
            group.bench_function(format!("compress/{}", class.name()), |b| {
                b.iter(|| codec.compress(black_box(&page), &mut out))
            });
            let Ok(n) = codec.compress(&page, &mut out) else { continue };
            let stream = out[..n].to_vec();
            let mut back = Page::zeroed();
            group.bench_function(format!("decompress/{}", class.name()), |b| {
                b.iter(|| codec.decompress(black_box(&stream), &mut back))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, per_class);
criterion_main!(benches);
