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

/// Where the fast loop, started at `start`, hands over on `src` with a `cap`-byte output, by
/// its rules: before the first instruction after the start at which fewer than `IN_MARGIN`
/// input or `OUT_MARGIN` output bytes remain (the early build: or `PRIMED_FROM` bytes are
/// written), or at one it leaves to the reference decoder: the end marker, a length
/// extension ending fewer than 6 bytes before the input's end, a literal run or a long match
/// without room for its scratch bytes. For streams the reference decoder reads without
/// error up to their end marker (which holds no look-behind overrun).
fn expected_stop(src: &[u8], cap: usize, start: Position, early: bool) -> Position {
    use crate::decompress::reference::{Instruction, read_instruction};
    let Position { mut ip, mut op, mut state, rle } = start;
    let stop_before = |ip: usize, op: usize| {
        src.len() - ip < IN_MARGIN || cap - op < OUT_MARGIN || (early && op >= PRIMED_FROM)
    };
    let mut first = true;
    loop {
        if !first && stop_before(ip, op) {
            break;
        }
        first = false;
        let (t, b1) = (src[ip], src[ip + 1]);
        let mut after = ip;
        let instruction = read_instruction(src, &mut after, state, rle).expect("a valid stream");
        // `after` is past the opcode and operands; for a literal run, past its length.
        let room = cap - op;
        let taken = match instruction {
            Instruction::End => false,
            Instruction::Literals(n) => {
                let in_room = src.len() - after;
                (t != 0 && src.len() - ip > 32)
                    || (in_room >= SLACK && n <= in_room - SLACK && n <= room - SLACK)
            }
            Instruction::ZeroRun { run, .. } => run + SLACK <= room,
            // M2s and M3s without a length extension: always (no look-behind overrun).
            Instruction::Match { .. } if t > 32 => true,
            Instruction::Match { len, .. } if t == 32 && b1 != 0 => len <= room - MATCH_SLACK,
            // M3s with a longer extension, M4s and M1s; after an extension, the distance field
            // (the last two bytes read) needs 6 bytes of input.
            Instruction::Match { len, .. } => {
                let extended = t == 32 || (16..32).contains(&t) && t & 7 == 0;
                len <= room - 4 && !(extended && src.len() - (after - 2) < 6)
            }
        };
        if !taken {
            break;
        }
        ip = after;
        match instruction {
            Instruction::Literals(n) => (ip, op, state) = (ip + n, op + n, 4),
            Instruction::Match { len, next, .. } => (ip, op, state) = (ip + next, op + len + next, next),
            Instruction::ZeroRun { run, next } => (ip, op, state) = (ip + next, op + run + next, next),
            Instruction::End => unreachable!(),
        }
    }
    Position { ip, op, state, rle }
}

/// A valid stream of random instructions and its decoded length: a first literal run, then
/// literal runs, M1s, M2s, M3s (with no, a one-byte and a longer length extension) and,
/// once 16 KiB are written, M4s (with and without one), at distances up to the output
/// written, each with 0..=3 trailing literals, and the end marker. `rle`: an LZO-RLE stream,
/// with zero runs too. `long`: the instructions start after 17,000 bytes of copies of the
/// first literals.
fn random_stream(rng: &mut Rng, rle: bool, long: bool) -> (Vec<u8>, usize) {
    let mut pick = |lo: usize, hi: usize| lo + rng.below((hi - lo + 1) as u64) as usize;
    let mut s = if rle { vec![17, 1] } else { vec![] };
    let first = pick(4, 80);
    s.push(17 + first as u8);
    s.extend((0..first).map(|i| (i * 29 + 7) as u8));
    let (mut out, mut state) = (first, 4);
    while long && out < 17_000 {
        // M3s of 543 bytes, 1 back, no trailing literals.
        s.extend([0x20, 0, 0xFF, 0, 0]);
        (out, state) = (out + 543, 0);
    }
    for _ in 0..pick(0, 40) {
        let next = pick(0, 3);
        let kind = pick(0, 6);
        if kind == 0 && state == 0 {
            // A literal run (only after an instruction with no trailing literals).
            let n = pick(4, 40);
            s.extend(if n <= 18 { vec![(n - 3) as u8] } else { vec![0, (n - 18) as u8] });
            s.extend((0..n).map(|i| (i * 13 + 1) as u8));
            (out, state) = (out + n, 4);
            continue;
        }
        match kind {
            0 | 1 if (1..=3).contains(&state) => {
                // M1: two bytes at most 1024 back.
                let dist = pick(1, out.min(1024));
                s.extend([(((dist - 1) & 3) << 2 | next) as u8, ((dist - 1) >> 2) as u8]);
                out += 2;
            }
            5 if rle => {
                // A zero run of 4..=2051 bytes.
                let run = pick(4, 2051) - 4;
                s.extend([0x18 | (run & 7) as u8, 0xFC | next as u8, 0xFF, (run >> 3) as u8]);
                out += run + 4;
            }
            6 if out > 0x4000 => {
                // M4, 16385..=49151 back: 3..=9 bytes, or a length extension of `zeros` zero
                // bytes and a last byte (below 0xFC: not an LZO-RLE zero run's form).
                let (d, zeros, last) =
                    (pick(1, (out - 0x4000).min(0x7FFF)), pick(0, 12).max(pick(0, 12)), pick(1, 0xFB));
                let d = if d & 0x3FFF == 0x3FFF { d - 1 } else { d };
                let h = ((d >> 11) & 8) as u8;
                let len = if pick(0, 1) == 0 {
                    let len = pick(3, 9);
                    s.push(0x10 | h | (len - 2) as u8);
                    len
                } else {
                    s.push(0x10 | h);
                    s.extend(core::iter::repeat_n(0, zeros));
                    s.push(last as u8);
                    9 + 255 * zeros + last
                };
                s.extend((((d & 0x3FFF) << 2 | next) as u16).to_le_bytes());
                out += len;
            }
            0 | 1 | 5 | 6 => {
                // M2: 3..=8 bytes at most 2048 back.
                let (len, dist) = (pick(3, 8), pick(1, out.min(2048)));
                s.extend([((len - 1) << 5 | ((dist - 1) & 7) << 2 | next) as u8, ((dist - 1) >> 3) as u8]);
                out += len;
            }
            _ => {
                // M3: 3..=33 bytes, 34..=288 (one extension byte) or longer (a length
                // extension of `zeros` zero bytes and a last byte).
                let (zeros, last) = (pick(1, 12), pick(1, 255));
                let len = [pick(3, 33), pick(34, 288), 33 + 255 * zeros + last][kind - 2];
                match len {
                    3..=33 => s.push(0x20 | (len - 2) as u8),
                    34..=288 => s.extend([0x20, (len - 33) as u8]),
                    _ => {
                        s.push(0x20);
                        s.extend(core::iter::repeat_n(0, zeros));
                        s.push(last as u8);
                    }
                }
                let dist = pick(1, out.min(16384));
                s.extend((((dist - 1) << 2 | next) as u16).to_le_bytes());
                out += len;
            }
        }
        s.extend((0..next).map(|i| (i * 3 + 2) as u8));
        (out, state) = (out + next, next);
    }
    s.extend_from_slice(&[0x11, 0, 0]);
    (s, out)
}

/// The fast loop decodes as far as its rules allow ([`expected_stop`]), in each build and
/// phase: every margin and guard stops it at the exact instruction, neither one early (the
/// reference decoder would finish correctly, only slower) nor one late (past the margins its
/// copies would leave the buffers). Output capacities and trailing bytes after the end marker
/// move the margins across every instruction boundary.
#[test]
fn fast_loop_stops_exactly_where_its_rules_say() {
    // Random instruction sequences: unlike a compressor's streams, they can end in a match,
    // which the fast loop decodes when enough bytes follow the end marker.
    let mut rng = Rng::new(0x5709);
    let random = (0..if cfg!(miri) { 2 } else { 200 })
        .map(|i| (random_stream(&mut rng, i % 2 == 1, i % 3 == 2), true));
    let every = if cfg!(miri) { 20 } else { 1 };
    let all = streams().into_iter().step_by(every).map(|s| (s, false)).chain(random);
    let mut checked = [0usize; 2];
    for (i, ((stream, len), random)) in all.enumerate() {
        assert_eq!(decompress_reference(&stream, &mut vec![0; len]), Ok(len), "stream {i}");
        let pads = if cfg!(miri) {
            0..=0
        } else if random {
            0..=16
        } else {
            0..=1
        };
        for pad in pads {
            let mut src = stream.clone();
            src.resize(stream.len() + pad, 0x55);
            let extras: &[usize] =
                if cfg!(miri) { &[0, 32, 48] } else { &[0, 1, 16, 31, 32, 33, 47, 48, 100] };
            for cap in extras.iter().map(|extra| len + extra) {
                let mut dst = vec![0u8; cap];
                let (mut ip, rle) = read_header(&src);
                let mut op = 0;
                let state = first_literals(&src, &mut ip, &mut dst, &mut op).unwrap();
                let start = Position { ip, op, state, rle };
                if !within_margins(&src, &dst, start) {
                    continue;
                }
                let show = |p: Position| (p.ip, p.op, p.state);
                let whole = expected_stop(&src, cap, start, false);
                let both = |s: &[u8], d: &mut [u8], a| fast_phases_with!(s, d, a, Shifts);
                assert_eq!(show(both(&src, &mut dst, start)), show(whole), "stream {i} + {pad}, cap {cap}");
                #[cfg(target_arch = "x86_64")]
                if bmi2_available() {
                    // SAFETY: the CPU has BMI2 (checked just above).
                    let at = unsafe { fast_loop_bmi2(&src, &mut dst, start) };
                    assert_eq!(show(at), show(whole), "BMI2: stream {i} + {pad}, cap {cap}");
                }
                if start.op < PRIMED_FROM {
                    let early = fast_loop::<false>(&src, &mut dst, start, Shifts);
                    let expected = expected_stop(&src, cap, start, true);
                    assert_eq!(show(early), show(expected), "early: stream {i} + {pad}, cap {cap}");
                    checked[0] += 1;
                }
                checked[1] += 1;
            }
        }
    }
    let least = if cfg!(miri) { 10 } else { 1000 };
    assert!(checked[0] > 0 && checked[1] >= least, "{checked:?}");
}

/// Both forms of `in_block_range` against its definition, `min <= back + 1 <= written` (the
/// primed one where it applies, `written >= min`).
#[test]
fn in_block_range_is_its_definition() {
    for min in [16, 32, 64] {
        let (writtens, backs) = if cfg!(miri) { (0..80, 0..90) } else { (0..300, 0..320) };
        for written in writtens {
            for back in backs.clone() {
                let inside = min <= back + 1 && back < written;
                assert_eq!(in_block_range::<false>(back, written, min), inside, "{back} {written} {min}");
                if written >= min {
                    assert_eq!(in_block_range::<true>(back, written, min), inside, "{back} {written} {min}");
                }
            }
        }
    }
}

/// `within_margins` at its edges: exactly `IN_MARGIN` input and `OUT_MARGIN` output bytes
/// left are enough, one fewer of either is not.
#[test]
fn within_margins_at_its_edges() {
    let (src, dst) = ([0u8; 100], [0u8; 200]);
    let at = |ip, op| Position { ip, op, state: 0, rle: false };
    assert!(within_margins(&src, &dst, at(100 - IN_MARGIN, 200 - OUT_MARGIN)));
    assert!(within_margins(&src, &dst, at(0, 0)));
    assert!(!within_margins(&src, &dst, at(101 - IN_MARGIN, 200 - OUT_MARGIN)));
    assert!(!within_margins(&src, &dst, at(100 - IN_MARGIN, 201 - OUT_MARGIN)));
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

/// The dispatch takes the BMI2 build exactly where the CPU, as the family's feature checks
/// report it, has BMI2 and runs `pext` in hardware.
#[test]
#[cfg(target_arch = "x86_64")]
fn bmi2_build_exactly_where_it_fits() {
    let expected = x86_has(X86Feature::Bmi2) && (!x86_has(X86Feature::Sse4a) || x86_has(X86Feature::Vaes));
    assert_eq!(bmi2_build_fits(), expected);
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
