//! The fast LZO1X compressor behind [`Lzo1xFast`](crate::Lzo1xFast): it looks for a match
//! only at every fourth position.
//!
//! Memory pages are arrays of aligned fields, and their repeats mostly start on field
//! boundaries. Probing one position in four finds those matches with a quarter of the
//! probes. A match that starts between two probed positions is found at the next one and
//! extended backwards over the pending literals without a loop: the count of equal bytes
//! before it comes from one XOR of the 8 bytes before each end. Why it pays: on a page the
//! core has not learnt (a page store sees each page once), every probe's hit-or-miss branch
//! and every match's length test are mispredicted at a rate set by the page's bytes, and
//! those mispredictions bound every LZO1X compressor there, the others included
//! (docs/perf/lzokit.md, "Branches a core has not learnt"). Fewer probes, fewer of them.
//!
//! How it searches:
//!
//! 1. **Probes at multiples of 4.** At each probed position the 4 bytes there are compared
//!    with the 4 bytes one recent distance back (the last match's), then with the 4 at the
//!    table's candidate; the first that agrees is the match.
//! 2. **The table holds positions of every other byte pair.** A probe that misses enters
//!    its own position and the one 2 bytes on (both from the 8 bytes already loaded), so a
//!    later probe finds sources at any even distance, not only multiples of 4 (the
//!    ratio this gains, by corpus, is in docs/perf/lzokit.md). 2048 `u16` entries (4 KiB),
//!    the kernel's multiplicative hash of the 4 bytes, cleared on every call.
//! 3. **Backward and forward extension.** A match reaches back over the pending literals
//!    while the bytes before both ends agree (up to 8), and forward 8 bytes at a time from
//!    its byte 4 (so the first test asks whether it reaches 12 bytes, which fewer matches do
//!    than 8), stopping once its compares reach the last 20 bytes of the page.
//! 4. **Scanning resumes at the first probed position at or after the match end**; the
//!    bytes in between are literals unless the next match reaches back over them.
//!
//! What it gives up: matches shorter than 4 bytes plus the distance to the next probed
//! position, sources at odd distances (unless at the recent distance), and the lazy step of
//! [`Lzo1x`](crate::Lzo1x). Its streams are larger than C liblzo2's `lzo1x_1` on most
//! pages (about C LZ4's sizes) and take a little longer to decode than
//! [`Lzo1x`](crate::Lzo1x)'s (measured by corpus in docs/perf/lzokit.md).
//!
//! The stream is plain LZO1X (liblzo2 and Linux decode it); the output budget contract is
//! the other compressors' (the same `Output` writer): nothing is written past `dst`, and
//! [`CompressError::Incompressible`] comes as soon as the next piece cannot fit.

use pagecodec::{CompressError, PAGE_SIZE};

use super::kernel::{hash_bits, le64};
use super::output::Output;

/// Bytes from one probed position to the next.
const STRIDE: usize = 4;
/// log2 of the table's entry count.
const TABLE_BITS: u32 = 11;
/// No match starts at or after this position (as in the other compressors), which leaves
/// room for every 8- and 16-byte read of the loop.
const IP_END: usize = PAGE_SIZE - 20;
/// The first probed position. A stream's first instruction must be a run of at least 4
/// literals, and a match reaches back at most 8 bytes, so a first match here or later
/// starts at 4 or later.
const FIRST_PROBE: usize = 12;
/// The recent distance before the first match: the probed position before.
const REP_START: usize = STRIDE;
const _: () = assert!(FIRST_PROBE % STRIDE == 0 && FIRST_PROBE >= 4 + 8 && REP_START <= FIRST_PROBE);

/// The fast compressor's working memory: 4 KiB of positions by the hash of their 4 bytes.
#[derive(Clone)]
pub(crate) struct FastCompressor {
    table: [u16; 1 << TABLE_BITS],
}

working_memory_impls!(FastCompressor);

impl FastCompressor {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        FastCompressor { table: [0; 1 << TABLE_BITS] }
    }

    /// Compresses one page as a plain LZO1X stream into `dst` (its length is the budget);
    /// returns the stream's length.
    pub(crate) fn compress(
        &mut self,
        page: &[u8; PAGE_SIZE],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        // Cleared on every call, so every entry is a position of this page below the
        // probed one (0 when never written: a candidate the compare rules in or out).
        // Generation tags instead cost the other page compressors more in sweeps
        // (docs/perf/lzokit.md, "A faster level").
        self.table.fill(0);
        let src: &[u8] = page;
        let mut out = Output::new(dst);
        // The pending literals are `src[lit_start..ip]`.
        let mut lit_start = 0;
        let mut ip = FIRST_PROBE;
        let mut rep = REP_START;
        while ip < IP_END {
            // SAFETY: ip < IP_END, so ip + 8 <= src.len().
            let word = unsafe { le64(src, ip) };
            // A probe compares 4 bytes; a match's length is measured from its byte 4 on
            // (`match_len_and_next`).
            // SAFETY: 1 <= rep <= ip (rep is REP_START <= FIRST_PROBE, or an earlier
            // match's distance, at most its position, which is below ip), and ip + 8 <=
            // src.len() as above.
            let m_pos = if word as u32 == unsafe { le64(src, ip - rep) } as u32 {
                ip - rep
            } else {
                let h = hash_bits(word as u32, TABLE_BITS);
                let cand = usize::from(self.table[h]);
                self.table[h] = ip as u16;
                // SAFETY: every entry is 0 or a position entered by an earlier probe of
                // this call (ip or ip + 2 of a probe before this one), so below ip, and
                // cand + 8 <= ip + 8 <= src.len().
                if word as u32 != unsafe { le64(src, cand) } as u32 {
                    self.table[hash_bits((word >> 16) as u32, TABLE_BITS)] = (ip + 2) as u16;
                    ip += STRIDE;
                    continue;
                }
                cand
            };
            ip = opaque(ip);
            // The bytes before both ends that agree, up to the pending literals and the
            // source's start (at most 8: one XOR of the 8 bytes before each).
            let back_room = (ip - lit_start).min(m_pos);
            let back = if back_room == 0 {
                0
            } else {
                // SAFETY: back_room >= 1, so 1 <= m_pos < ip < src.len().
                let x = unsafe { back_xor(src, ip, m_pos) };
                ((x.leading_zeros() / 8) as usize).min(back_room)
            };
            // SAFETY: m_pos < ip < IP_END, ip is a multiple of STRIDE (every probed position
            // is), and the 4 bytes at ip and at m_pos agree (the probe's compare).
            let (fwd, next) = unsafe { match_len_and_next(src, ip, m_pos) };
            let dist = ip - m_pos;
            // SAFETY: the match ends at or before IP_END + 16 = PAGE_SIZE - 4, back <= 8
            // and ip >= FIRST_PROBE >= 12, so back + fwd <= PAGE_SIZE - 4 + 8 - 12. Told so, the
            // compiler drops the writer's own test of the length on every match, which made
            // the compressor measurably faster (docs/perf/lzokit.md, "A faster level").
            unsafe { core::hint::assert_unchecked(back + fwd <= PAGE_SIZE) };
            // SAFETY: lit_start <= ip - back < IP_END, so ip - back + 16 <= src.len().
            unsafe { out.literals_and_match(src, lit_start, ip - back - lit_start, back + fwd, dist)? };
            rep = dist;
            lit_start = ip + fwd;
            ip = next;
        }
        out.finish(&src[lit_start..], 0)
    }
}

/// The match's length forwards from `ip` and the next probed position, the first multiple
/// of [`STRIDE`] at or after its end. Bytes 0..4 agree (the probe's compare); the others are
/// compared 8 at a time from byte 4 up to the first that differs: the compares from bytes 4
/// and 12 always (they end inside the page), later ones while they start below [`IP_END`].
///
/// Starting at byte 4, not 0, the first compare asks whether the match is shorter than 12
/// bytes, which most are, where one of bytes 0..8 asked whether it was shorter than 8, which
/// about half are: a core that has not learnt the page mispredicts that branch less often,
/// and the loop runs one round fewer for matches of 8..=11 bytes (docs/perf/lzokit.md, "The
/// length measured from byte 4").
///
/// The next position is what the next probe's loads wait for. Computed from the length, it
/// would wait for the match's last compare (two loads, an XOR, a trailing-zero count).
/// Chosen here by branches on that compare's bytes (does it differ in its first byte,
/// within its first five, or later?), it is known as soon as the core predicts them, and the
/// next probe's loads start while the compare completes. Only the length, which the next
/// probe does not need, waits for the count. That made the compressor measurably faster on
/// every corpus back to back and on most in sweeps (docs/perf/lzokit.md, "A faster level").
///
/// # Safety
///
/// `m_pos < ip < IP_END`, `ip` is a multiple of [`STRIDE`], and the 4 bytes at `ip` and at
/// `m_pos` agree.
#[inline(always)]
unsafe fn match_len_and_next(src: &[u8], ip: usize, m_pos: usize) -> (usize, usize) {
    const { assert!(STRIDE == 4) };
    // SAFETY: ip < IP_END, so both 8-byte reads end at or before IP_END + 12 <= src.len();
    // m_pos < ip.
    let v = unsafe { le64(src, ip + 4) ^ le64(src, m_pos + 4) };
    if v != 0 {
        // 4..=11 bytes. The loop's end below, inlined here as branches of their own: the
        // first compare's outcomes are distributed unlike a later one's.
        match_end(ip, 4, v)
    } else {
        let mut m_len = 12;
        loop {
            // SAFETY: ip + m_len < IP_END + 12 (the first round has m_len == 12 and ip <
            // IP_END; later rounds run only while ip + m_len < IP_END), so both 8-byte
            // reads end before IP_END + 20 = src.len(); m_pos < ip.
            let v = unsafe { le64(src, ip + m_len) ^ le64(src, m_pos + m_len) };
            if v != 0 {
                break match_end(ip, m_len, v);
            }
            m_len += 8;
            if ip + m_len >= IP_END {
                break (m_len, ip + m_len);
            }
        }
    }
}

/// The length and next probed position of a match whose bytes agree up to `ip + m_len` and
/// whose compare of the 8 bytes from there, a multiple of 4, XORs to `v != 0`: the match
/// ends at its first differing byte; the next probe is there if that is byte 0 of the
/// compare, 4 on if it is one of bytes 1..=4, 8 on otherwise (branches: see
/// [`match_len_and_next`]).
#[inline(always)]
fn match_end(ip: usize, m_len: usize, v: u64) -> (usize, usize) {
    let end = ip + m_len;
    let len = m_len + (v.trailing_zeros() / 8) as usize;
    if v & 0xFF != 0 {
        keep_branch();
        (m_len, end)
    } else if v & 0xFF_FFFF_FFFF != 0 {
        keep_branch();
        (len, end + 4)
    } else {
        (len, end + 8)
    }
}

/// The XOR of the 8 bytes before `ip` and the 8 before `m_pos`, the byte just before each
/// in the top byte (so `leading_zeros() / 8` counts the equal bytes going backwards); when
/// `m_pos < 8`, only its top `m_pos` bytes mean anything and the rest are set.
///
/// # Safety
///
/// `1 <= m_pos < ip < IP_END`.
#[inline(always)]
unsafe fn back_xor(src: &[u8], ip: usize, m_pos: usize) -> u64 {
    if m_pos >= 8 {
        // SAFETY: 0 <= m_pos - 8 < ip - 8, and both reads end at or before ip.
        unsafe { le64(src, ip - 8) ^ le64(src, m_pos - 8) }
    } else {
        // The source's 8 bytes before it would start before the page: read the page's
        // first 8 bytes and their counterparts ip - m_pos on, and shift the m_pos bytes
        // before the source up into the top bytes.
        let shift = 8 * (8 - m_pos as u32);
        // SAFETY: ip - m_pos + 8 < ip + 8 <= IP_END + 8 <= src.len().
        let x = unsafe { le64(src, ip - m_pos) ^ le64(src, 0) };
        x << shift | (u64::MAX >> (64 - shift))
    }
}

/// Returns `ip` unchanged, hidden from the optimiser. Without it LLVM keeps four values
/// derived from `ip` for the match path (`ip - lit_start` and others) as extra induction
/// variables of the miss loop, four additions per miss, and spills more of the match
/// path's state, which made the compressor measurably slower in both orders
/// (docs/perf/lzokit.md, "A faster level").
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
#[inline(always)]
fn opaque(mut ip: usize) -> usize {
    // SAFETY: an empty assembly block that only names the register holding `ip`: it reads
    // and writes no memory, keeps the stack and the flags, and leaves `ip` as it was.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) ip, options(pure, nomem, nostack, preserves_flags));
    }
    ip
}

/// The identity (no assembly barrier on this target or under Miri).
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
#[inline(always)]
fn opaque(ip: usize) -> usize {
    ip
}

/// Marks the arm it is called in as one the compiler must keep a branch, not fold into a
/// select with its sibling: a select would make the result wait for the condition's data,
/// which is what [`match_len_and_next`] avoids. Nothing on other targets and under Miri,
/// as [`opaque`].
#[inline(always)]
fn keep_branch() {
    // SAFETY: an empty assembly block that reads and writes no memory and keeps the stack
    // and the flags; not `pure`, so the compiler neither moves it out of its arm nor
    // executes it where the arm is not taken.
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
    unsafe {
        core::arch::asm!("", options(nomem, nostack, preserves_flags))
    };
}

#[cfg(test)]
mod tests {
    extern crate alloc;

    use pagecodec::testing::{PageClass, Rng, generate};

    use super::super::page::match_len;
    use super::super::page::tests::{
        check_exact_budgets, check_round_trips_and_history, pages, round_trip_matches_with,
    };
    use super::*;

    /// Compresses `page` with `c`, checks that the stream decodes to it, and returns the
    /// stream's matches (position, length, distance).
    fn round_trip_matches(
        c: &mut FastCompressor,
        page: &[u8; PAGE_SIZE],
    ) -> alloc::vec::Vec<(usize, usize, usize)> {
        round_trip_matches_with(&mut |page, out| c.compress(page, out), page)
    }

    #[test]
    fn round_trips_every_class_and_ignores_history() {
        let mut warm = FastCompressor::new();
        check_round_trips_and_history(
            &mut |page, out| warm.compress(page, out),
            &mut |page, out| FastCompressor::new().compress(page, out),
            1,
        );
    }

    #[test]
    fn a_budget_of_exactly_the_stream_length_suffices() {
        let mut c = FastCompressor::new();
        check_exact_budgets(&mut |page, out| c.compress(page, out));
    }

    #[test]
    fn every_match_reaches_as_far_as_the_scan_allows() {
        // Forwards: up to the first byte that differs (or past IP_END, as the others).
        // Backwards: up to the first byte that differs, unless the previous match's end,
        // the page start or the 8 bytes a probe looks back stop it first.
        let mut c = FastCompressor::new();
        let mut checked = 0;
        for (i, page) in pages().iter().enumerate() {
            let mut prev_end = 0;
            for (pos, len, dist) in round_trip_matches(&mut c, page) {
                assert!(page[pos..pos + len] == page[pos - dist..pos - dist + len], "page {i} at {pos}");
                if pos + len < IP_END {
                    assert_ne!(
                        page[pos + len],
                        page[pos + len - dist],
                        "page {i}: match at {pos} stops early"
                    );
                }
                if pos > prev_end && pos > dist && page[pos - 1] == page[pos - 1 - dist] {
                    // Only the 8-byte reach can have stopped it: the probe was 8 bytes on.
                    assert_eq!((pos + 8) % STRIDE, 0, "page {i}: match at {pos} starts late");
                }
                prev_end = pos + len;
                checked += 1;
            }
        }
        assert!(checked > if cfg!(miri) { 10 } else { 100 }, "{checked}");
    }

    #[test]
    fn the_next_probe_is_the_first_probed_position_at_or_after_the_match_end() {
        // The length is the page compressor's `match_len` for a match that ends before
        // IP_END, and the next probe the end rounded up to the stride: for every length from
        // 4 to 40 (each tail of the first compare and of the extension loop's). A match the
        // scan stops near IP_END (the two compare from different bytes, so they may stop at
        // different points) reaches IP_END and ends at or before IP_END + 16.
        fn check(page: &[u8; PAGE_SIZE], ip: usize, m_pos: usize) -> usize {
            // SAFETY: m_pos < ip < IP_END (the callers'), so both 8-byte reads are in the page.
            let diff = unsafe { le64(page, ip) ^ le64(page, m_pos) };
            assert_eq!(diff as u32, 0, "at {ip}");
            // SAFETY: m_pos < ip < IP_END, ip is a multiple of STRIDE (the callers'), and the
            // 4 bytes at both agree (asserted).
            let (len, next) = unsafe { match_len_and_next(page, ip, m_pos) };
            // SAFETY: as for the call above, with the low 4 bytes of `diff` zero.
            let expected = unsafe { match_len(page, ip, m_pos, diff) };
            if ip + expected < IP_END {
                assert_eq!(len, expected, "at {ip}");
            } else {
                assert!((IP_END..=IP_END + 16).contains(&(ip + len)), "at {ip}: {len}");
                assert_eq!(page[ip..ip + len], page[m_pos..m_pos + len], "at {ip}");
            }
            assert_eq!(next, (ip + len).next_multiple_of(STRIDE), "at {ip}");
            len
        }
        let mut rng = Rng::new(31);
        for len in 4..=40 {
            let mut page = [0u8; PAGE_SIZE];
            rng.fill(&mut page);
            let (ip, m_pos) = (1000, 104);
            let copy: [u8; 40] = page[m_pos..m_pos + 40].try_into().unwrap();
            page[ip..ip + len].copy_from_slice(&copy[..len]);
            page[ip + len] = !page[m_pos + len];
            assert_eq!(check(&page, ip, m_pos), len);
        }
        let zeros = [0u8; PAGE_SIZE];
        for ip in (IP_END - 40..IP_END).step_by(STRIDE) {
            assert!(ip + check(&zeros, ip, ip - 36) >= IP_END, "at {ip}");
        }
    }

    #[test]
    fn a_repeat_between_probed_positions_is_found_whole() {
        // Noise, with its 64 bytes at 103 repeated at 1001 (distance 898, not a multiple of
        // 4). The probe at 104 misses and enters 104 and 106; the probe at 1004 (inside the
        // copy) finds 1004 - 898 = 106 only because probes enter the position 2 bytes on,
        // and the match reaches back over the 3 literals at 1001..1004.
        let mut page = [0u8; PAGE_SIZE];
        let mut rng = Rng::new(17);
        rng.fill(&mut page);
        let copy: [u8; 64] = page[103..167].try_into().unwrap();
        page[1001..1065].copy_from_slice(&copy);
        page[1000] = !page[102];
        page[1065] = !page[167];
        let found = round_trip_matches(&mut FastCompressor::new(), &page);
        assert_eq!(found, [(1001, 64, 898)]);
    }

    #[test]
    fn the_last_match_distance_is_tried_first() {
        // Records of 24 bytes: 8 random bytes, then 16 the same in every record. The first
        // records give matches at distance 24; after that the table would offer older
        // records too, but the recent distance matches first, so every match but the first
        // few is at distance 24.
        let mut page = [0u8; PAGE_SIZE];
        let mut rng = Rng::new(23);
        let mut tail = [0u8; 16];
        rng.fill(&mut tail);
        for rec in page.chunks_mut(24) {
            let k = rec.len().min(8);
            rng.fill(&mut rec[..k]);
            let rest = rec.len() - k;
            rec[k..].copy_from_slice(&tail[..rest]);
        }
        let found = round_trip_matches(&mut FastCompressor::new(), &page);
        assert!(found.len() > 100, "{}", found.len());
        assert!(found[2..].iter().all(|&(_, _, d)| d == 24), "{found:?}");
    }

    #[test]
    fn no_stream_starts_with_fewer_than_four_literals() {
        // A page of one repeated byte: the first probe (at FIRST_PROBE) matches at the
        // recent distance, and reaching back stops 4 bytes in.
        for class in [PageClass::Zero, PageClass::Sparse, PageClass::Pointers] {
            let page = generate(class, 3);
            let found = round_trip_matches(&mut FastCompressor::new(), page.as_bytes());
            assert!(found[0].0 >= 4, "{class:?}: {found:?}");
        }
        let found = round_trip_matches(&mut FastCompressor::new(), &[7u8; PAGE_SIZE]);
        assert_eq!(found[0].0, 4, "{found:?}");
    }
}
