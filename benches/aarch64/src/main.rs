//! Runs one codec in one direction over a set of 4096-byte pages, `iterations` times, and
//! prints a checksum; nothing else. Run under qemu-user with an instruction-counting plugin
//! once with 0 and once with N iterations: the difference is the instructions of N passes
//! over the pages, with loading, setup and the round-trip check (done in both runs)
//! cancelled out.
//!
//! ```text
//! wkdm-insns <codec> <compress|decompress> <iterations> <file.page>...
//! codec: wkdm-scalar | wkdm-neon | lzo | lzo-fast | lzo-rle | lz4 | liblzo2
//! ```
//!
//! `WKDM_INSNS_MAX_PAGES=N` keeps N evenly spaced pages of the files.

use std::hint::black_box;
use std::os::raw::{c_char, c_int, c_ulong, c_void};
use std::process::ExitCode;

use pagecodec::{Page, PageCodec};
use wkdm::{Compressed, Isa, Wkdm};

const PAGE: usize = 4096;
/// Room for any stream of every codec (LZ4's bound for 4096 bytes is 4096 + 4096 / 255 + 16,
/// LZO1X's 4096 + 4096 / 16 + 64 + 3).
const ROOM: usize = 4500;

#[path = "../../src/liblzo2_ffi.rs"]
#[allow(dead_code, reason = "the harness does not print the library's version")]
mod liblzo2_ffi;
use liblzo2_ffi::{LZO1X_1_MEM_COMPRESS, lzo1x_1_compress, lzo1x_decompress_safe};

/// One codec: compress a page into `out` (the stream length, or `None` when the codec keeps
/// no stream), decompress a stream into a page.
enum Codec {
    Wkdm(Box<Wkdm>),
    /// A codec of this family through its `PageCodec` interface (`lzokit`'s).
    Family(Box<dyn PageCodec>),
    Lz4,
    /// C liblzo2 and its work memory (8-byte aligned).
    LibLzo(Box<[u64]>),
}

impl Codec {
    fn compress(&mut self, page: &Page, out: &mut [u8; ROOM]) -> Option<usize> {
        let bytes = page.as_bytes();
        match self {
            Codec::Wkdm(codec) => match codec.compress_page(bytes, out) {
                Ok(Compressed::Stream(n)) => Some(n),
                // Zero and single-value pages, and pages over budget, have no stream.
                _ => None,
            },
            Codec::Family(codec) => codec.compress(page, out).ok(),
            Codec::LibLzo(wrkmem) => {
                let mut n: c_ulong = 0;
                // SAFETY: `bytes` is readable for PAGE bytes, `out` writable for ROOM, more
                // than LZO1X's bound for PAGE bytes; `wrkmem` has LZO1X_1_MEM_COMPRESS bytes.
                let r = unsafe {
                    lzo1x_1_compress(
                        bytes.as_ptr(),
                        PAGE as c_ulong,
                        out.as_mut_ptr(),
                        &mut n,
                        wrkmem.as_mut_ptr().cast::<c_void>(),
                    )
                };
                (r == 0).then_some(n as usize)
            }
            Codec::Lz4 => {
                // SAFETY: `page` is readable for PAGE bytes and `out` writable for ROOM, which
                // is at least LZ4's bound for PAGE bytes.
                let n = unsafe {
                    lz4_sys::LZ4_compress_default(
                        bytes.as_ptr().cast::<c_char>(),
                        out.as_mut_ptr().cast::<c_char>(),
                        PAGE as c_int,
                        ROOM as c_int,
                    )
                };
                (n > 0).then_some(n as usize)
            }
        }
    }

    fn decompress(&mut self, stream: &[u8], page: &mut Page) -> bool {
        match self {
            Codec::Wkdm(codec) => codec.decompress_page(stream, page.as_bytes_mut()).is_ok(),
            Codec::Family(codec) => codec.decompress(stream, page).is_ok(),
            Codec::LibLzo(_) => {
                let mut n = PAGE as c_ulong;
                // SAFETY: `stream` is readable for its length and `page` writable for PAGE
                // bytes, the capacity given; the safe decoder needs no work memory.
                let r = unsafe {
                    lzo1x_decompress_safe(
                        stream.as_ptr(),
                        stream.len() as c_ulong,
                        page.as_bytes_mut().as_mut_ptr(),
                        &mut n,
                        std::ptr::null_mut(),
                    )
                };
                r == 0 && n == PAGE as c_ulong
            }
            Codec::Lz4 => {
                // SAFETY: `stream` is readable for its length and `page` writable for PAGE
                // bytes; the safe decoder never writes past the capacity it is given.
                let n = unsafe {
                    lz4_sys::LZ4_decompress_safe(
                        stream.as_ptr().cast::<c_char>(),
                        page.as_bytes_mut().as_mut_ptr().cast::<c_char>(),
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
            "usage: wkdm-insns <wkdm-scalar|wkdm-neon|lzo|lzo-fast|lzo-rle|lz4|liblzo2> <compress|decompress> <iterations> <file.page>..."
        );
        return ExitCode::FAILURE;
    }
    let mut codec = match args[0].as_str() {
        "wkdm-scalar" => Codec::Wkdm(Box::new(Wkdm::new().with_isa(Isa::Scalar).expect("scalar path"))),
        "wkdm-neon" => Codec::Wkdm(Box::new(Wkdm::new().with_isa(Isa::Neon).expect("NEON path"))),
        "lzo" => Codec::Family(Box::new(lzokit::Lzo1x::default())),
        "lzo-fast" => Codec::Family(Box::new(lzokit::Lzo1xFast::default())),
        "lzo-rle" => Codec::Family(Box::new(lzokit::LzoRle::default())),
        "lz4" => Codec::Lz4,
        "liblzo2" => {
            liblzo2_ffi::link();
            Codec::LibLzo(vec![0u64; LZO1X_1_MEM_COMPRESS / 8].into_boxed_slice())
        }
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
    let mut pages: Vec<Page> = vec![];
    for path in &args[3..] {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(bytes.len() % PAGE == 0, "{path}: not whole pages");
        pages.extend(bytes.chunks_exact(PAGE).map(|p| Page::from(<&[u8; PAGE]>::try_from(p).unwrap())));
    }
    // An evenly spaced subsample, as pagebench's `--max-pages`, when the environment asks.
    let max_pages: usize =
        std::env::var("WKDM_INSNS_MAX_PAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    if max_pages > 0 && pages.len() > max_pages {
        let all = std::mem::take(&mut pages);
        pages = (0..max_pages).map(|i| all[i * all.len() / max_pages].clone()).collect();
    }
    // Setup, the same in every run: compress each page once and check its round trip.
    let mut out = Box::new([0u8; ROOM]);
    let mut streams: Vec<Vec<u8>> = vec![];
    let mut back = Box::new(Page::zeroed());
    for page in &pages {
        if let Some(n) = codec.compress(page, &mut out) {
            assert!(codec.decompress(&out[..n], &mut back) && *back == *page, "round trip");
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
                checksum += u64::from(black_box(&back).as_bytes()[PAGE - 1]);
            }
        }
    }
    let processed = if compress { pages.len() } else { streams.len() };
    println!("pages {processed} checksum {checksum}");
    ExitCode::SUCCESS
}
