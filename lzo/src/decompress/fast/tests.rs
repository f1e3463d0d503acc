//! The fast decoder against the reference decoder, and its helpers' edge cases.

extern crate alloc;
use alloc::vec;
use alloc::vec::Vec;

use pagecodec::testing::{PageClass, Rng, generate};

use super::*;
use crate::decompress::reference::decompress_reference;
use crate::{KernelCompressor, max_compressed_len};

/// Every build of the fast loop this CPU can run (the one `decompress` dispatches to is
/// among them), and the reference decoder, on buffers pre-filled differently: same
/// verdict, same bytes.
fn same_as_reference(stream: &[u8], cap: usize) {
    let mut b = vec![0xFF; cap];
    let reference = decompress_reference(stream, &mut b);
    let check = |build: &str, fast: Result<usize, StreamError>, a: &[u8]| {
        assert_eq!(fast, reference, "{build}: stream {:02x?}", &stream[..stream.len().min(24)]);
        if let Ok(n) = fast {
            assert!(a[..n] == b[..n], "{build}: decoded bytes differ");
        }
    };
    let mut a = vec![0x00; cap];
    let run = |s: &[u8], d: &mut [u8], at| fast_phases_with!(s, d, at, Shifts);
    check("baseline", decompress_with(stream, &mut a, run), &a);
    #[cfg(target_arch = "x86_64")]
    if bmi2_available() {
        let mut a = vec![0x00; cap];
        // SAFETY: the CPU has BMI2 (checked just above).
        let run = |s: &[u8], d: &mut [u8], at| unsafe { fast_loop_bmi2(s, d, at) };
        check("bmi2", decompress_with(stream, &mut a, run), &a);
    }
}

fn streams() -> Vec<(Vec<u8>, usize)> {
    let mut c = KernelCompressor::new();
    let mut out = vec![0u8; max_compressed_len(8192)];
    let mut v = Vec::new();
    let seeds = if cfg!(miri) { 1 } else { 3 };
    for class in PageClass::ALL {
        for seed in 0..seeds {
            let page = generate(class, seed);
            let n = c.compress(page.as_bytes(), &mut out).unwrap();
            v.push((out[..n].to_vec(), 4096));
            let n = c.compress_rle(page.as_bytes(), &mut out).unwrap();
            v.push((out[..n].to_vec(), 4096));
        }
    }
    // Matches at short periods and lengths around the block sizes: 1 (fill), 2..=7 (a byte
    // head of 16..=21 bytes, then 16-byte blocks), 8..=15 (8-byte blocks; M2s and M3s
    // byte by byte), 16..=63 (16-byte blocks repeating the pattern; M3s below 32 byte by
    // byte) and 64 on (blocks from the pattern when the match is longer than its period;
    // from 128 for two periods, then from two periods back). (M3 lengths 34..=288 take
    // the one-byte-extension path.)
    let periods: &[usize] = if cfg!(miri) {
        &[1, 2, 7, 8, 16, 17, 40, 90, 130]
    } else {
        &[
            1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 24, 33, 40, 63, 64, 65, 79, 80, 90, 127, 128, 129,
            200,
        ]
    };
    let lens: &[usize] = if cfg!(miri) {
        &[3, 9, 33, 70, 300]
    } else {
        &[3, 7, 8, 9, 15, 16, 17, 31, 33, 34, 35, 48, 63, 64, 65, 80, 100, 287, 288, 289, 1000]
    };
    for &period in periods {
        for &len in lens {
            let mut src: Vec<u8> = (0..period).map(|i| (i * 37 + 1) as u8).collect();
            for i in 0..len {
                src.push(src[i]);
            }
            src.extend_from_slice(b"tail literals that end the stream..");
            let n = c.compress(&src, &mut out).unwrap();
            v.push((out[..n].to_vec(), src.len()));
        }
    }
    // LZO-RLE zero-run tokens of every length class: two blocks, the inline fill, and
    // `memset` (longer than `INLINE_FILL_MAX`), and runs split into several tokens.
    let runs: &[usize] = if cfg!(miri) {
        &[5, 40, 300]
    } else {
        &[4, 5, 31, 32, 33, 100, 255, 256, 257, 258, 300, 2051, 2052, 2060, 3000]
    };
    for &run in runs {
        let mut src: Vec<u8> = (0..30).map(|i| (i * 37 + 1) as u8).collect();
        src.resize(30 + run, 0);
        src.extend_from_slice(b"tail literals that end the stream..");
        let n = c.compress_rle(&src, &mut out).unwrap();
        v.push((out[..n].to_vec(), src.len()));
    }
    // Long matches (general path) ending 20..=40 bytes before the end of the output,
    // where the 32 scratch bytes do not fit and the exact copy runs.
    let tails: &[usize] = if cfg!(miri) { &[20, 31] } else { &[20, 25, 31, 32, 33, 40] };
    for &period in &[1usize, 7, 40] {
        for &len in &[300usize, 2000] {
            for &tail in tails {
                let mut src: Vec<u8> = (0..40).map(|i| (i * 37 + 1) as u8).collect();
                for i in 0..len {
                    src.push(src[40 - period + i % period]);
                }
                src.extend((0..tail).map(|i| (i * 11 + 5) as u8));
                let n = c.compress(&src, &mut out).unwrap();
                v.push((out[..n].to_vec(), src.len()));
            }
        }
    }
    v
}

#[test]
fn fast_equals_reference_on_valid_streams_and_every_output_size() {
    for (stream, len) in streams() {
        let caps = [len, len.saturating_sub(1), len + 40, len + 1, len / 2, 0];
        for &cap in &caps[..if cfg!(miri) { 2 } else { caps.len() }] {
            same_as_reference(&stream, cap);
        }
    }
}

#[test]
fn fast_equals_reference_on_damaged_streams() {
    let step = if cfg!(miri) { 61 } else { 1 };
    for (stream, len) in streams().into_iter().step_by(if cfg!(miri) { 9 } else { 2 }) {
        for cut in (0..stream.len()).step_by(step) {
            same_as_reference(&stream[..cut], len);
        }
        let mut damaged = stream.clone();
        for bit in (0..stream.len() * 8).step_by(step * 3) {
            damaged[bit / 8] ^= 1 << (bit % 8);
            same_as_reference(&damaged, len);
            damaged[bit / 8] ^= 1 << (bit % 8);
        }
    }
}

#[test]
fn fast_equals_reference_on_garbage() {
    let mut rng = Rng::new(3);
    let cases = if cfg!(miri) { 20 } else { 3000 };
    for case in 0..cases {
        let len = rng.below(300) as usize;
        let mut stream = vec![0u8; len];
        rng.fill(&mut stream);
        if case % 3 == 0 {
            for b in stream.iter_mut().step_by(2) {
                *b &= 0x1F;
            }
        }
        if case % 5 == 0 && len > 2 {
            stream[0] = 0x11;
            stream[1] = 1;
        }
        same_as_reference(&stream, rng.below(5000) as usize);
    }
}

/// M2s, M3s and M3s with a one-byte length extension at distances around their block
/// copy's lower bound (16, 32, 64) and around the output written (in range, one past it),
/// in the early phase (a first literal run shorter than `PRIMED_FROM`) and in the primed
/// phase (after a literal run that crosses it).
#[test]
fn block_range_edges_in_both_phases() {
    /// Pushes a match; `min` names the kind (16: M2, 32: M3, 64: M3 with an extension).
    fn push_match(s: &mut Vec<u8>, min: usize, dist: usize, len: usize) {
        match min {
            16 => s.extend([(((len - 1) << 5) | (((dist - 1) & 7) << 2)) as u8, ((dist - 1) >> 3) as u8]),
            32 => s.push(0x20 | (len - 2) as u8),
            _ => s.extend([0x20, (len - 33) as u8]),
        }
        if min > 16 {
            s.extend_from_slice(&(((dist - 1) << 2) as u16).to_le_bytes());
        }
    }
    let firsts: &[usize] = if cfg!(miri) { &[4, 40] } else { &[4, 8, 15, 16, 17, 31, 32, 33, 63] };
    let gaps: &[usize] = if cfg!(miri) { &[4, 30] } else { &[4, 9, 17, 30] };
    for &first in firsts {
        for &gap in gaps {
            for (min, len) in [(16, 6), (32, 20), (64, 40)] {
                // Before the first match `first` bytes are written; before the second,
                // `first + len + gap` (at least PRIMED_FROM in some cases).
                let mut dists = vec![1, 8, min - 1, min, min + 1];
                for written in [first, first + len + gap] {
                    dists.extend([written - 1, written, written + 1]);
                }
                for &d1 in &dists {
                    for &d2 in &dists {
                        let mut s = vec![17 + first as u8];
                        s.extend((0..first).map(|i| (i * 7 + 3) as u8));
                        push_match(&mut s, min, d1.min(first + 1), len);
                        s.push(gap as u8 - 3);
                        s.extend((0..gap).map(|i| (i * 5 + 1) as u8));
                        push_match(&mut s, min, d2, len);
                        // Literals that keep the input margin, then the end marker.
                        s.push(15);
                        s.extend((0..18).map(|i| (i * 3 + 2) as u8));
                        s.extend_from_slice(&[0x11, 0, 0]);
                        same_as_reference(&s, 4096);
                    }
                }
            }
        }
    }
}

/// `Pext` takes the same distance as `Shifts` out of every M2 and M3 field, whatever the
/// bytes around it hold. On a CPU without BMI2 there is no `Pext` to check: the test then
/// checks that the dispatch never picks the BMI2 build.
#[test]
#[cfg(target_arch = "x86_64")]
fn pext_and_shifts_agree_on_every_distance_field() {
    if !bmi2_available() {
        assert!(!bmi2_build_fits(), "the BMI2 build picked on a CPU without BMI2");
        return;
    }
    let mut rng = Rng::new(27);
    for field in 0..=0xFFFF_u64 {
        let around = rng.next_u64();
        let m2 = field | (around << 16);
        // SAFETY: the CPU has BMI2 (checked above).
        let pext = unsafe { Pext::new() };
        assert_eq!(pext.m2(m2), Shifts.m2(m2), "M2 word {m2:#x}");
        let m3 = (around & 0xFF) | (field << 8) | (around << 24);
        assert_eq!(pext.m3(m3), Shifts.m3(m3), "M3 word {m3:#x}");
    }
}

/// Which cores take the BMI2 build: Intel's (no `sse4a`) and AMD's from Zen 3 (`sse4a`
/// and `vaes`), not AMD's before Zen 3 or Hygon's (`sse4a` without `vaes`).
#[test]
#[cfg(target_arch = "x86_64")]
fn pext_in_hardware_by_core() {
    assert!(pext_in_hardware(false, false), "Intel before Ice Lake");
    assert!(pext_in_hardware(false, true), "Intel from Ice Lake");
    assert!(pext_in_hardware(true, true), "AMD from Zen 3");
    assert!(!pext_in_hardware(true, false), "AMD Zen 1 and 2, Hygon");
}

/// A longer soak of the same check (run with `--ignored`, preferably `--release`).
#[test]
#[ignore = "soak: a few million streams"]
fn soak_fast_equals_reference() {
    let mut rng = Rng::new(0x50a4);
    let mut c = KernelCompressor::new();
    let mut out = vec![0u8; max_compressed_len(4096)];
    for case in 0..200_000u64 {
        let page = generate(PageClass::ALL[(case % 12) as usize], case);
        let n = if case % 2 == 0 {
            c.compress(page.as_bytes(), &mut out).unwrap()
        } else {
            c.compress_rle(page.as_bytes(), &mut out).unwrap()
        };
        let mut damaged = out[..n].to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(n as u64) as usize;
            damaged[at] ^= 1 << rng.below(8);
        }
        same_as_reference(&damaged, 4096);
        let cut = rng.below(n as u64 + 1) as usize;
        same_as_reference(&out[..cut], 4096 + rng.below(64) as usize);
        let len = rng.below(64) as usize;
        let mut garbage = vec![0u8; len];
        rng.fill(&mut garbage);
        for b in garbage.iter_mut() {
            if rng.below(3) == 0 {
                *b &= 0x1F;
            }
        }
        same_as_reference(&garbage, rng.below(300) as usize);
    }
}
