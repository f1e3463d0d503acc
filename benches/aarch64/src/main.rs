//! Runs one codec in one direction over a set of 4096-byte pages, `iterations` times, and
//! prints a checksum; nothing else. Run under qemu-user with an instruction-counting plugin
//! once with 0 and once with N iterations: the difference is the instructions of N passes
//! over the pages, with loading, setup and the round-trip check (done in both runs)
//! cancelled out.
//!
//! ```text
//! wkdm-insns <wkdm-scalar|wkdm-neon|lz4> <compress|decompress> <iterations> <file.page>...
//! ```
//!
//! `WKDM_INSNS_MAX_PAGES=N` keeps N evenly spaced pages of the files.

use std::hint::black_box;
use std::os::raw::{c_char, c_int};
use std::process::ExitCode;

use wkdm::{Compressed, Isa, Wkdm};

const PAGE: usize = 4096;
/// Room for any stream of either codec (LZ4's bound for 4096 bytes is 4096 + 4096 / 255 + 16).
const ROOM: usize = 4400;

/// One codec: compress a page into `out` (the stream length, or `None` when the codec keeps
/// no stream), decompress a stream into a page.
enum Codec {
    Wkdm(Box<Wkdm>),
    Lz4,
}

impl Codec {
    fn compress(&mut self, page: &[u8; PAGE], out: &mut [u8; ROOM]) -> Option<usize> {
        match self {
            Codec::Wkdm(codec) => match codec.compress_page(page, out) {
                Ok(Compressed::Stream(n)) => Some(n),
                // Zero and single-value pages, and pages over budget, have no stream.
                _ => None,
            },
            Codec::Lz4 => {
                // SAFETY: `page` is readable for PAGE bytes and `out` writable for ROOM, which
                // is at least LZ4's bound for PAGE bytes.
                let n = unsafe {
                    lz4_sys::LZ4_compress_default(
                        page.as_ptr().cast::<c_char>(),
                        out.as_mut_ptr().cast::<c_char>(),
                        PAGE as c_int,
                        ROOM as c_int,
                    )
                };
                (n > 0).then_some(n as usize)
            }
        }
    }

    fn decompress(&mut self, stream: &[u8], page: &mut [u8; PAGE]) -> bool {
        match self {
            Codec::Wkdm(codec) => codec.decompress_page(stream, page).is_ok(),
            Codec::Lz4 => {
                // SAFETY: `stream` is readable for its length and `page` writable for PAGE
                // bytes; the safe decoder never writes past the capacity it is given.
                let n = unsafe {
                    lz4_sys::LZ4_decompress_safe(
                        stream.as_ptr().cast::<c_char>(),
                        page.as_mut_ptr().cast::<c_char>(),
                        stream.len() as c_int,
                        PAGE as c_int,
                    )
                };
                n == PAGE as c_int
            }
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!(
            "usage: wkdm-insns <wkdm-scalar|wkdm-neon|lz4> <compress|decompress> <iterations> <file.page>..."
        );
        return ExitCode::FAILURE;
    }
    let mut codec = match args[0].as_str() {
        "wkdm-scalar" => Codec::Wkdm(Box::new(Wkdm::new().with_isa(Isa::Scalar).expect("scalar path"))),
        "wkdm-neon" => Codec::Wkdm(Box::new(Wkdm::new().with_isa(Isa::Neon).expect("NEON path"))),
        "lz4" => Codec::Lz4,
        other => {
            eprintln!("unknown codec {other}");
            return ExitCode::FAILURE;
        }
    };
    let compress = match args[1].as_str() {
        "compress" => true,
        "decompress" => false,
        other => {
            eprintln!("unknown direction {other}");
            return ExitCode::FAILURE;
        }
    };
    let iterations: usize = args[2].parse().expect("iterations: a number");
    let mut pages: Vec<[u8; PAGE]> = vec![];
    for path in &args[3..] {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(bytes.len() % PAGE == 0, "{path}: not whole pages");
        pages.extend(bytes.chunks_exact(PAGE).map(|p| <[u8; PAGE]>::try_from(p).unwrap()));
    }
    // An evenly spaced subsample, as pagebench's `--max-pages`, when the environment asks.
    let max_pages: usize =
        std::env::var("WKDM_INSNS_MAX_PAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    if max_pages > 0 && pages.len() > max_pages {
        let all = std::mem::take(&mut pages);
        pages = (0..max_pages).map(|i| all[i * all.len() / max_pages]).collect();
    }
    // Setup, the same in every run: compress each page once and check its round trip.
    let mut out = Box::new([0u8; ROOM]);
    let mut streams: Vec<Vec<u8>> = vec![];
    let mut back = [0u8; PAGE];
    for page in &pages {
        if let Some(n) = codec.compress(page, &mut out) {
            assert!(codec.decompress(&out[..n], &mut back) && back == *page, "round trip");
            streams.push(out[..n].to_vec());
        }
    }
    let mut checksum = 0u64;
    if compress {
        for _ in 0..iterations {
            for page in &pages {
                checksum += codec.compress(black_box(page), &mut out).unwrap_or(0) as u64;
            }
        }
    } else {
        for _ in 0..iterations {
            for stream in &streams {
                checksum += u64::from(codec.decompress(black_box(stream), &mut back));
                checksum += u64::from(black_box(&back)[PAGE - 1]);
            }
        }
    }
    let processed = if compress { pages.len() } else { streams.len() };
    println!("pages {processed} checksum {checksum}");
    ExitCode::SUCCESS
}
