//! The fast decoder: the reference decoder's instructions with wide copies.
//!
//! Structure: between two instructions, while at least [`IN_MARGIN`] input and
//! [`OUT_MARGIN`] output bytes remain, an instruction is parsed and, only if every byte it
//! reads and writes is proven in bounds and it is valid (no look-behind overrun, not the
//! end marker), executed with 8/16-byte copies that may write up to 15 bytes of scratch past
//! the exact end (later overwritten, or past the returned length). Any other case breaks
//! out *before* writing anything for that instruction and hands the same position to the
//! reference decoder, which finishes the stream with every access checked and reports
//! errors. So the result (bytes written or error) is always the reference decoder's.

use crate::DecompressError;
use crate::decompress::{MAX_255_COUNT, Position, decode_from, first_literals, read_header};
use crate::format::MIN_ZERO_RUN;

/// Input bytes required at an instruction's start: opcode, two operand bytes, and a 4-byte
/// copy of up to 3 trailing literals, with slack for the zero-run token (4 + 4 bytes).
const IN_MARGIN: usize = 16;
/// Output bytes required at an instruction's start: a short match (up to 8 bytes) with
/// `copy_match`'s 32 scratch bytes, then a 4-byte literal copy.
const OUT_MARGIN: usize = 48;
/// Scratch bytes a wide literal copy may write past its exact end.
const SLACK: usize = 16;
/// Scratch bytes a match copy may write past its exact end (it copies at least 32 bytes
/// when the distance allows).
const MATCH_SLACK: usize = 32;

/// Decompresses `src` into `dst`; same contract and results as
/// [`decompress_reference`](crate::decompress::decompress_reference).
pub(crate) fn decompress_fast(src: &[u8], dst: &mut [u8]) -> Result<usize, DecompressError> {
    let (mut ip, rle) = read_header(src);
    let mut op = 0;
    let mut state = first_literals(src, &mut ip, dst, &mut op)?;
    let in_len = src.len();
    let out_len = dst.len();
    let s = src.as_ptr();
    let d = dst.as_mut_ptr();
    // Invariants at the top of the loop: ip <= in_len, op <= out_len.
    loop {
        if in_len - ip < IN_MARGIN || out_len - op < OUT_MARGIN {
            break;
        }
        // SAFETY: ip + 16 <= in_len, so bytes ip..ip+16 are readable; this holds for every
        // `byte(s, ip + k)` with k < 16 below.
        let t = usize::from(unsafe { byte(s, ip) });
        let (len, dist, next, after);
        if t >= 64 {
            // M2, the most frequent instruction: a short match copied as one 8-byte block
            // when the distance allows, then up to 3 literals.
            // SAFETY: ip + 1 < ip + IN_MARGIN <= in_len.
            let h = usize::from(unsafe { byte(s, ip + 1) });
            let len = (t >> 5) + 1;
            let dist = ((t >> 2) & 7) + (h << 3) + 1;
            let next = t & 3;
            if dist > op {
                break;
            }
            // SAFETY: 1 <= dist <= op; op + 8 + 32 <= op + OUT_MARGIN <= out_len covers the
            // 8-byte block (len <= 8) or `copy_match`'s len + 32 bytes, and the 4-byte
            // literal copy at op + len; ip + 2 + 4 <= in_len for the literals.
            unsafe {
                if dist >= 8 {
                    core::ptr::copy_nonoverlapping(d.add(op - dist), d.add(op), 8);
                } else {
                    copy_match(d, op, dist, len);
                }
                core::ptr::copy_nonoverlapping(s.add(ip + 2), d.add(op + len), 4);
            }
            op += len + next;
            ip += 2 + next;
            state = next;
            continue;
        } else if t >= 32 {
            // M3.
            let mut l = t & 31;
            let mut p = ip + 1;
            if l == 0 {
                let Some(e) = extension(src, &mut p) else { break };
                l = 31 + e;
            }
            if in_len - p < 6 {
                break;
            }
            // SAFETY: p + 6 <= in_len.
            let v = unsafe { le16(s, p) };
            len = l + 2;
            dist = (v >> 2) + 1;
            next = v & 3;
            after = p + 2;
        } else if t >= 16 {
            // M4, the LZO-RLE zero-run token, or the end marker.
            if rle && t >= 0x18 {
                // SAFETY: ip + 3 < ip + IN_MARGIN <= in_len.
                let (b1, b2, b3) = unsafe { (byte(s, ip + 1), byte(s, ip + 2), byte(s, ip + 3)) };
                if b1 & 0xFC == 0xFC && b2 == 0xFF {
                    let run = ((t & 7) | (usize::from(b3) << 3)) + MIN_ZERO_RUN;
                    let next = usize::from(b1 & 3);
                    if out_len - op < run + 4 {
                        break;
                    }
                    // SAFETY: op + run + 4 <= out_len (checked just above) and
                    // ip + 8 <= ip + IN_MARGIN <= in_len: the zeros and the 4-byte literal
                    // copy stay inside `dst` and `src`, which do not overlap.
                    unsafe {
                        core::ptr::write_bytes(d.add(op), 0, run);
                        core::ptr::copy_nonoverlapping(s.add(ip + 4), d.add(op + run), 4);
                    }
                    op += run + next;
                    ip += 4 + next;
                    state = next;
                    continue;
                }
            }
            let mut l = t & 7;
            let mut p = ip + 1;
            if l == 0 {
                let Some(e) = extension(src, &mut p) else { break };
                l = 7 + e;
            }
            if in_len - p < 6 {
                break;
            }
            // SAFETY: p + 6 <= in_len.
            let v = unsafe { le16(s, p) };
            let far = ((t & 8) << 11) + (v >> 2);
            if far == 0 {
                // The end marker: the reference decoder checks what follows it.
                break;
            }
            len = l + 2;
            dist = far + 0x4000;
            next = v & 3;
            after = p + 2;
        } else if state == 0 {
            // Literal run.
            let mut l = t;
            let mut p = ip + 1;
            if l == 0 {
                let Some(e) = extension(src, &mut p) else { break };
                l = 15 + e;
            }
            let n = l + 3;
            if in_len - p < SLACK || n > in_len - p - SLACK || n > out_len - op - SLACK {
                break;
            }
            // SAFETY: p + n + 16 <= in_len and op + n + 16 <= out_len (checked above; the
            // subtractions cannot underflow: in_len - p >= 16 and out_len - op >= 48), which
            // covers the rounded-up 16-byte blocks `copy_wide` moves.
            unsafe { copy_wide(s.add(p), d.add(op), n) };
            ip = p + n;
            op += n;
            state = 4;
            continue;
        } else {
            // M1 (after 1..3 literals) or the 3-byte match after a literal run.
            // SAFETY: ip + 1 < ip + IN_MARGIN <= in_len.
            let h = usize::from(unsafe { byte(s, ip + 1) });
            if state == 4 {
                len = 3;
                dist = (t >> 2) + (h << 2) + 2049;
            } else {
                len = 2;
                dist = (t >> 2) + (h << 2) + 1;
            }
            next = t & 3;
            after = ip + 2;
        }
        // Look-behind overruns and matches too long for the margin go to the reference.
        if dist > op || len > out_len - op - MATCH_SLACK {
            break;
        }
        // SAFETY: 1 <= dist <= op and op + len + 32 <= out_len (checked above), as
        // `copy_match` requires; then op + len + 4 <= out_len and after + 4 <= in_len
        // (after <= ip + 2 when there was no extension, and `in_len - p >= 6` was checked
        // after one) for the 4-byte literal copy from `src` into `dst`.
        unsafe {
            copy_match(d, op, dist, len);
            core::ptr::copy_nonoverlapping(s.add(after), d.add(op + len), 4);
        }
        op += len + next;
        ip = after + next;
        state = next;
    }
    decode_from(src, dst, Position { ip, op, state, rle })
}

/// Reads byte `i` of the input.
///
/// # Safety
///
/// `s + i` is inside the input slice.
#[inline(always)]
unsafe fn byte(s: *const u8, i: usize) -> u8 {
    // SAFETY: the caller guarantees `s + i` is in bounds.
    unsafe { *s.add(i) }
}

/// Reads the little-endian 16-bit field at input byte `i`.
///
/// # Safety
///
/// `s + i` and `s + i + 1` are inside the input slice.
#[inline(always)]
unsafe fn le16(s: *const u8, i: usize) -> usize {
    // SAFETY: the caller guarantees both bytes are in bounds; unaligned reads are fine.
    usize::from(u16::from_le(unsafe { s.add(i).cast::<u16>().read_unaligned() }))
}

/// A length extension (see the reference decoder), or `None` at the end of the input or
/// when it would overflow: the reference decoder then reports the error.
#[inline]
fn extension(src: &[u8], p: &mut usize) -> Option<usize> {
    let start = *p;
    loop {
        match *src.get(*p)? {
            0 => *p += 1,
            b => {
                let zeros = *p - start;
                *p += 1;
                return (zeros <= MAX_255_COUNT).then(|| zeros * 255 + usize::from(b));
            }
        }
    }
}

/// Copies `n` bytes from `from` to `to` in 16-byte blocks (rounded up).
///
/// # Safety
///
/// `from..from + n + 16` is readable, `to..to + n + 16` writable, and they do not overlap.
#[inline(always)]
unsafe fn copy_wide(from: *const u8, to: *mut u8, n: usize) {
    let mut i = 0;
    loop {
        // SAFETY: i < n here (or i == 0), so i + 16 <= n + 16: within both regions.
        unsafe { core::ptr::copy_nonoverlapping(from.add(i), to.add(i), 16) };
        i += 16;
        if i >= n {
            break;
        }
    }
}

/// Copies an LZ77 match of `len` bytes from `dist` bytes back, repeating the pattern when
/// `dist < len`. May write up to 31 scratch bytes past `op + len`.
///
/// # Safety
///
/// `d` is the start of the output, `1 <= dist <= op`, and `op + len + 32` bytes of it are
/// writable (and the first `op` initialised).
#[inline(always)]
unsafe fn copy_match(d: *mut u8, op: usize, dist: usize, len: usize) {
    // SAFETY: every write is below op + len + 32 and every read at least `dist` (or
    // `step >= dist`) bytes before the write it feeds, so inside the output and written.
    unsafe {
        let to = d.add(op);
        let from = to.sub(dist);
        if dist >= 16 {
            // Blocks of 16 never overlap their source. Most matches are at most 32 bytes:
            // copy two blocks without a length test.
            core::ptr::copy_nonoverlapping(from, to, 16);
            core::ptr::copy_nonoverlapping(from.add(16), to.add(16), 16);
            let mut i = 32;
            while i < len {
                core::ptr::copy_nonoverlapping(from.add(i), to.add(i), 16);
                i += 16;
            }
        } else if dist >= 8 {
            let mut i = 0;
            loop {
                core::ptr::copy_nonoverlapping(from.add(i), to.add(i), 8);
                i += 8;
                if i >= len {
                    break;
                }
            }
        } else if dist == 1 {
            core::ptr::write_bytes(to, *from, len);
        } else {
            // Period 2..7: write the first `step` bytes (a multiple of the period, 8..=14)
            // one by one, then copy 8-byte blocks from `step` back: same pattern.
            let step = dist * 8usize.div_ceil(dist);
            let head = len.min(step);
            for i in 0..head {
                *to.add(i) = *from.add(i);
            }
            let mut i = head;
            while i < len {
                core::ptr::copy_nonoverlapping(to.add(i - step), to.add(i), 8);
                i += 8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    use alloc::vec;
    use alloc::vec::Vec;

    use pagecodec::testing::{PageClass, Rng, generate};

    use super::*;
    use crate::decompress::decompress_reference;
    use crate::{Compressor, worst_case_len};

    /// Both decoders, on buffers pre-filled differently: same verdict, same bytes.
    fn same_as_reference(stream: &[u8], cap: usize) {
        let mut a = vec![0x00; cap];
        let mut b = vec![0xFF; cap];
        let fast = decompress_fast(stream, &mut a);
        let reference = decompress_reference(stream, &mut b);
        assert_eq!(fast, reference, "stream {:02x?}", &stream[..stream.len().min(24)]);
        if let Ok(n) = fast {
            assert!(a[..n] == b[..n], "decoded bytes differ");
        }
    }

    fn streams() -> Vec<(Vec<u8>, usize)> {
        let mut c = Compressor::new();
        let mut out = vec![0u8; worst_case_len(8192)];
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
        // Short matches at every period 1..=20 and lengths around the block sizes.
        let periods: &[usize] =
            if cfg!(miri) { &[1, 2, 7, 8, 16, 17] } else { &[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20] };
        let lens: &[usize] =
            if cfg!(miri) { &[3, 9, 33, 100] } else { &[3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000] };
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

    /// A longer soak of the same check (run with `--ignored`, preferably `--release`).
    #[test]
    #[ignore = "soak: a few million streams"]
    fn soak_fast_equals_reference() {
        let mut rng = Rng::new(0x50a4);
        let mut c = Compressor::new();
        let mut out = vec![0u8; worst_case_len(4096)];
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
}
