//! Criterion benches of every codec: compress and decompress per page class, and on real
//! pages (the page file named by `PAGEBENCH_CORPUS`, as written by `pagebench capture`; the
//! real-page group is left out without it), with byte throughput.
//!
//! `cargo bench -p pagebench --bench codecs -- 'lz4/'` runs a subset. The tool itself
//! (`cargo run --release -p pagebench`) gives the cycle-accurate, interleaved comparison;
//! these benches are for tracking one codec's speed over time.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pagecodec::testing::{PageClass, generate};
use pagecodec::{PAGE_SIZE, Page};

/// A few hundred real pages, evenly spaced through the corpus file, if one is available.
fn real_pages() -> Option<Vec<Page>> {
    let path = std::path::PathBuf::from(std::env::var_os("PAGEBENCH_CORPUS")?);
    let mut corpus = pagebench::corpus::read_corpus(&path)
        .unwrap_or_else(|e| panic!("PAGEBENCH_CORPUS={}: {e}", path.display()));
    corpus.subsample(256);
    (!corpus.pages.is_empty()).then_some(corpus.pages)
}

fn per_class(c: &mut Criterion) {
    for mut codec in pagebench::codecs::all() {
        let mut group = c.benchmark_group(codec.name());
        group.throughput(Throughput::Bytes(PAGE_SIZE as u64));
        let mut out = vec![0u8; codec.max_compressed_len()];
        let mut back = Page::zeroed();
        for class in PageClass::ALL {
            let page = generate(class, 1);
            group.bench_function(format!("compress/{}", class.name()), |b| {
                b.iter(|| codec.compress(black_box(&page), &mut out))
            });
            let Ok(n) = codec.compress(&page, &mut out) else { continue };
            let stream = out[..n].to_vec();
            group.bench_function(format!("decompress/{}", class.name()), |b| {
                b.iter(|| codec.decompress(black_box(&stream), &mut back))
            });
        }
        group.finish();
    }
}

fn real(c: &mut Criterion) {
    let Some(pages) = real_pages() else {
        eprintln!("no real pages (set PAGEBENCH_CORPUS=FILE.pages): skipping the real-page benches");
        return;
    };
    let mut group = c.benchmark_group("real");
    group.throughput(Throughput::Bytes((pages.len() * PAGE_SIZE) as u64));
    for mut codec in pagebench::codecs::all() {
        let mut out = vec![0u8; codec.max_compressed_len()];
        group.bench_function(format!("{}/compress", codec.name()), |b| {
            b.iter(|| {
                for p in &pages {
                    let _ = codec.compress(black_box(p), &mut out);
                }
            })
        });
        // The hybrid adapter decodes the stream of its latest compress: keep that pairing.
        if codec.name() == "hybrid" {
            continue;
        }
        let streams: Vec<Vec<u8>> = pages
            .iter()
            .filter_map(|p| codec.compress(p, &mut out).ok().map(|n| out[..n].to_vec()))
            .collect();
        let mut back = Page::zeroed();
        group.bench_function(format!("{}/decompress", codec.name()), |b| {
            b.iter(|| {
                for s in &streams {
                    let _ = codec.decompress(black_box(s), &mut back);
                }
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    // Hundreds of benchmarks: keep each short so the whole suite stays in minutes.
    Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(600))
        .sample_size(20)
}

criterion_group! { name = benches; config = config(); targets = per_class, real }
criterion_main!(benches);
