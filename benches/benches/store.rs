//! Criterion benches of the allocator (xvmalloc, rlsf) and the page store: alloc+free
//! pairs on a warm pool, and store+load of a page per codec, with byte throughput.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pagebench::alloc::{Allocator, Rlsf, Xv};
use pagecodec::PAGE_SIZE;
use pagecodec::testing::{PageClass, Rng, generate};

/// Object sizes shaped like compressed pages (a spread over 40..3072 bytes).
fn sizes() -> Vec<usize> {
    let mut rng = Rng::new(9);
    (0..4096).map(|_| 40 + rng.below(3032) as usize).collect()
}

fn pairs<A: Allocator>(c: &mut Criterion, name: &str, mut a: A) {
    let sizes = sizes();
    let mut live: Vec<A::Object> = sizes[..1000].iter().map(|&n| a.alloc(n)).collect();
    let mut rng = Rng::new(1);
    let mut next = 0;
    let mut group = c.benchmark_group("alloc");
    group.throughput(Throughput::Elements(1));
    group.bench_function(format!("{name}/free+alloc, 1k live"), |b| {
        b.iter(|| {
            let i = rng.below(live.len() as u64) as usize;
            a.free(live[i]);
            next = (next + 1) % sizes.len();
            live[i] = a.alloc(black_box(sizes[next]));
        })
    });
    group.finish();
}

fn allocators(c: &mut Criterion) {
    pairs(c, "xvmalloc", Xv(xvmalloc::Pool::new(xvmalloc::HeapSource::new())));
    let mut arena = Box::<[u8]>::new_uninit_slice(64 << 20);
    pairs(c, "rlsf", Rlsf::new(&mut arena));
}

fn store(c: &mut Criterion) {
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Bytes(PAGE_SIZE as u64));
    let pages: Vec<_> = PageClass::ALL.iter().map(|&k| generate(k, 3)).collect();
    for name in ["wkdm", "lzo-rle", "hybrid", "lz4"] {
        let mut s = pagebench::storebench::store_for(name, pages.len()).expect("known codec");
        let mut back = pagecodec::Page::zeroed();
        let mut i = 0usize;
        group.bench_function(format!("{name}/store+load, mixed classes"), |b| {
            b.iter(|| {
                i = (i + 1) % pages.len();
                s.store(i as u64, black_box(&pages[i])).expect("store");
                s.load(i as u64, &mut back).expect("load");
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(800))
        .sample_size(20)
}

criterion_group! { name = benches; config = config(); targets = allocators, store }
criterion_main!(benches);
