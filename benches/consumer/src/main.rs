//! Compress and decompress times of every codec, per page, as a user's crate gets them.
//!
//! Build and run twice, with cargo's default release profile and with the workspace's
//! profile, then compare (`run.sh` does both and prints the ratios):
//!
//! ```sh
//! cargo run --release --manifest-path benches/consumer/Cargo.toml
//! cargo run --profile workspace-like --manifest-path benches/consumer/Cargo.toml
//! ```
//!
//! Pages: the 6 real process pages (python, node, rustc) of `lzo/tests/data`, each measured
//! back to back; the figure per codec is the median over pages of each page's minimum over
//! repetitions, in nanoseconds.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use pagecodec::{Page, PageCodec};

const REPS: usize = 2000;

fn pages() -> Vec<Page> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lzo/tests/data");
    let mut pages = Vec::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    let mut files: Vec<_> = entries
        .map(|e| e.expect("listing the page folder").path())
        .filter(|p| p.extension().is_some_and(|e| e == "page"))
        // The real process pages; the edge cases are mostly trivial pages.
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("edge_")))
        .collect();
    files.sort();
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let bytes: [u8; 4096] =
            bytes.try_into().unwrap_or_else(|_| panic!("{}: not 4096 bytes", file.display()));
        pages.push(Page::from(bytes));
    }
    assert!(!pages.is_empty(), "no pages in {}", dir.display());
    pages
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median over pages of each page's fastest compress and decompress, in ns.
fn measure(codec: &mut dyn PageCodec, pages: &[Page]) -> (f64, f64) {
    let mut out = vec![0u8; codec.max_compressed_len()];
    let mut back = Page::zeroed();
    let (mut comp, mut dec) = (Vec::new(), Vec::new());
    for page in pages {
        let (mut best_c, mut best_d) = (f64::MAX, f64::MAX);
        for _ in 0..REPS {
            let t = Instant::now();
            let n = codec.compress(black_box(page), &mut out);
            best_c = best_c.min(t.elapsed().as_nanos() as f64);
            let Ok(n) = n else { continue };
            let t = Instant::now();
            let r = codec.decompress(black_box(&out[..n]), &mut back);
            best_d = best_d.min(t.elapsed().as_nanos() as f64);
            assert!(r.is_ok() && back == *page, "{}: round trip failed", codec.name());
        }
        comp.push(best_c);
        if best_d < f64::MAX {
            dec.push(best_d);
        }
    }
    (median(comp), median(dec))
}

fn main() {
    let pages = pages();
    let profile =
        if cfg!(debug_assertions) { "debug" } else { option_env!("CONSUMER_PROFILE").unwrap_or("release") };
    println!(
        "profile {profile}: {} pages, minimum of {REPS} runs per page, median over pages (ns/page)",
        pages.len()
    );
    println!("{:<12} {:>10} {:>10}", "codec", "compress", "decompress");
    // WKdm on every instruction set this CPU has (each has its own code path), then LZO.
    let mut codecs: Vec<(String, Box<dyn PageCodec>)> = wkdm::Isa::available()
        .map(|isa| {
            let codec = wkdm::Wkdm::new().with_isa(isa).expect("listed as available");
            (format!("wkdm-{isa}"), Box::new(codec) as Box<dyn PageCodec>)
        })
        .collect();
    codecs.push(("lzo".into(), Box::new(lzokit::Lzo1x::default())));
    codecs.push(("lzo-fast".into(), Box::new(lzokit::Lzo1xFast::default())));
    codecs.push(("lzo-rle".into(), Box::new(lzokit::LzoRle::default())));
    codecs.push(("lzo-kernel".into(), Box::new(lzokit::Lzo1xKernel::default())));
    codecs.push(("lzo-999".into(), Box::new(lzokit::Lzo1x999::default())));
    for (name, codec) in &mut codecs {
        let (c, d) = measure(codec.as_mut(), &pages);
        println!("{name:<12} {c:>10.0} {d:>10.0}");
    }
}
