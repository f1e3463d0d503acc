//! The scalar reference decompressor.
//!
//! [`validate`] checks the whole stream before anything is written: header offsets in
//! order and inside the input, section sizes equal to what the tags announce, index and
//! low-bits padding zero. It unpacks indices, low bits and misses into fixed scratch arrays
//! on the way, so the word loop ([`expand`]) runs branch-free over data it can trust.

use pagecodec::DecompressError;

use crate::format::{
    self, EXACT, HEADER_WORDS, LOW_MASK, Layout, MISS, PARTIAL, SPARSE_ENTRY_BYTES, SPARSE_MAGIC, ZERO,
};
use crate::scratch::Scratch;

// The word loops count hits with `tag & 1`.
const _: () = assert!(EXACT & 1 == 1 && PARTIAL & 1 == 1 && MISS & 1 == 0 && ZERO & 1 == 0);

/// A validated normal-form stream, ready to expand.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Validated<'a> {
    /// The packed tags area.
    pub(crate) tags: &'a [u8],
    /// The number of MISS words (unpacked into `Scratch::misses`).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(crate) misses: usize,
    /// The number of ZERO words.
    pub(crate) zeros: usize,
}

/// How [`validate`] counts the tags and unpacks the index and low-bits areas:
/// [`ScalarUnpack`], or a SIMD path's loops (they are most of validation's time).
pub(crate) trait Unpack {
    /// Unpacks the index words of `area` (8 indices each, see [`format::unpack_indices`])
    /// into `out[..2 * area.len()]`.
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set; `area.len()` is a multiple of 4
    /// and `out.len() >= 2 * area.len()`.
    unsafe fn indices(area: &[u8], out: &mut [u8]);

    /// Unpacks the low-bits words of `area` (3 values each, see [`format::unpack_low_bits`])
    /// into `out[..3 * area.len() / 4]`; returns the OR of the words.
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set; `area.len()` is a multiple of 4
    /// and `out.len() >= 3 * area.len() / 4`.
    unsafe fn lows(area: &[u8], out: &mut [u16]) -> u32;

    /// Counts the tags of a tags area: (MISS, EXACT + PARTIAL, PARTIAL).
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set.
    #[inline(always)]
    unsafe fn count_tags(tags: &[u8]) -> (usize, usize, usize) {
        count_tags(tags)
    }

    /// [`validate`] with these loops, inlined into the caller.
    ///
    /// # Safety
    ///
    /// The CPU has the implementation's instruction set.
    #[inline(always)]
    unsafe fn validate<'a, const W: usize>(
        input: &'a [u8],
        s: &mut Scratch<W>,
    ) -> Result<Validated<'a>, DecompressError>
    where
        Self: Sized,
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { validate::<Self, W>(input, s) }
    }
}

/// The portable [`Unpack`] loops, one stream word at a time.
pub(crate) struct ScalarUnpack;

impl Unpack for ScalarUnpack {
    #[inline(always)]
    unsafe fn indices(area: &[u8], out: &mut [u8]) {
        for (dst, src) in out.chunks_exact_mut(8).zip(area.chunks_exact(4)) {
            dst.copy_from_slice(&format::unpack_indices(format::le32(src)).to_le_bytes());
        }
    }

    #[inline(always)]
    unsafe fn lows(area: &[u8], out: &mut [u16]) -> u32 {
        let mut all_words = 0;
        for (dst, src) in out.chunks_exact_mut(3).zip(area.chunks_exact(4)) {
            let word = format::le32(src);
            all_words |= word;
            dst.copy_from_slice(&format::unpack_low_bits(word));
        }
        all_words
    }

    // Out of line: inlined into the scalar decoder, validation made it 5-6% slower on
    // captured pages (python 3614-3692 -> 3848-3952 ticks, node 5304-5330 -> 5512-5590).
    #[inline(never)]
    unsafe fn validate<'a, const W: usize>(
        input: &'a [u8],
        s: &mut Scratch<W>,
    ) -> Result<Validated<'a>, DecompressError> {
        // SAFETY: the scalar loops need no particular instruction set.
        unsafe { validate::<Self, W>(input, s) }
    }
}

/// Counts the tags of a tags area: (MISS, EXACT + PARTIAL, PARTIAL).
#[inline(always)]
pub(crate) fn count_tags(tags: &[u8]) -> (usize, usize, usize) {
    const LOW: u64 = 0x5555_5555_5555_5555;
    let (mut m, mut h, mut p) = (0u32, 0u32, 0u32);
    let mut chunks = tags.chunks_exact(8);
    let mut add = |x: u64| {
        let lo = x & LOW;
        let hi = (x >> 1) & LOW;
        m += (hi & !lo).count_ones();
        h += lo.count_ones();
        p += (lo & !hi).count_ones();
    };
    for chunk in &mut chunks {
        add(u64::from_le_bytes(chunk.try_into().expect("chunks of 8")));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    add(u64::from_le_bytes(tail));
    (m as usize, h as usize, p as usize)
}

/// Validates a normal-form stream (`input.len() >= 12`) and unpacks its indices, low
/// bits and misses into `s` (with `U`'s loops).
///
/// # Safety
///
/// The CPU has the instruction set of `U`.
#[inline(always)]
pub(crate) unsafe fn validate<'a, U: Unpack, const W: usize>(
    input: &'a [u8],
    s: &mut Scratch<W>,
) -> Result<Validated<'a>, DecompressError> {
    let layout = Layout { words: W };
    let header = [format::read_word(input, 0), format::read_word(input, 1), format::read_word(input, 2)];
    let [index_start, low_start, end] = header.map(|w| w as usize);
    let misses_start = layout.misses_start_word();
    if !(misses_start <= index_start && index_start <= low_start && low_start <= end) {
        return Err(DecompressError::corrupt("header offsets out of order"));
    }
    // Compare in u64: `end * 4` may overflow a 32-bit usize.
    let stream_len = u64::from(header[2]) * 4;
    if stream_len > input.len() as u64 {
        return Err(DecompressError::Truncated);
    }
    if stream_len < input.len() as u64 {
        return Err(DecompressError::TrailingInput);
    }
    let tags = &input[4 * HEADER_WORDS..4 * misses_start];
    // SAFETY: the caller guarantees the instruction set.
    let (m, h, p) = unsafe { U::count_tags(tags) };
    if index_start - misses_start != m {
        return Err(DecompressError::corrupt("miss count differs from MISS tags"));
    }
    if low_start - index_start != h.div_ceil(8) {
        return Err(DecompressError::corrupt("index area size differs from EXACT + PARTIAL tags"));
    }
    if end - low_start != p.div_ceil(3) {
        return Err(DecompressError::corrupt("low-bits area size differs from PARTIAL tags"));
    }
    // Misses: counted above, so m <= W.
    for (dst, src) in s.misses[..m].iter_mut().zip(input[4 * misses_start..].chunks_exact(4)) {
        *dst = format::le32(src);
    }
    // Indices: 8 per word; h <= W and W is a multiple of 8, so the padded count fits.
    let index_area = &input[4 * index_start..4 * low_start];
    // SAFETY: the caller guarantees the instruction set; the area is whole words, and
    // 2 * its length = 8 * h.div_ceil(8) <= W = s.indices.len().
    unsafe { U::indices(index_area, &mut s.indices[..]) };
    if s.indices[h..h.div_ceil(8) * 8].iter().any(|&i| i != 0) {
        return Err(DecompressError::corrupt("index padding is not zero"));
    }
    // Low bits: 3 per word, unpacked without a branch (the last word's up to 2 padding
    // values land in the slack), then checked: bits 30-31 clear, padding zero.
    let low_area = &input[4 * low_start..4 * end];
    let lows = s.lows.with_slack_mut();
    // SAFETY: the caller guarantees the instruction set; the area is whole words, and
    // 3 / 4 of its length = 3 * p.div_ceil(3) <= W + 2 < lows.len().
    let all_words = unsafe { U::lows(low_area, lows) };
    if all_words >> 30 != 0 {
        return Err(DecompressError::corrupt("low-bits word has bits 30-31 set"));
    }
    if lows[p..3 * p.div_ceil(3)].iter().any(|&value| value != 0) {
        return Err(DecompressError::corrupt("low-bits padding is not zero"));
    }
    Ok(Validated { tags, misses: m, zeros: W - m - h })
}

/// Expands a validated stream into `page` (`4 * W` bytes), with every dictionary entry
/// starting at `preload`: the scalar reference, branch-free per word, except that with
/// `SKIP` zero words are written with a branch and nothing else (see [`decompress`]).
#[inline]
pub(crate) fn expand<const W: usize, const SKIP: bool>(
    v: Validated<'_>,
    s: &Scratch<W>,
    preload: u32,
    page: &mut [u8],
) {
    debug_assert_eq!(page.len(), 4 * W);
    let mask = W - 1;
    // Entries 16-31 absorb the loads and stores of ZERO words (see below).
    let mut dict = [preload; 32];
    let (mut hi, mut pi, mut mi) = (0usize, 0usize, 0usize);
    for (tag_word, out) in v.tags.chunks_exact(4).zip(page.chunks_exact_mut(64)) {
        let tag_word = format::le32(tag_word);
        if tag_word == 0 {
            // 16 zero words (common in real memory): nothing to read, the dictionary stays.
            out.fill(0);
            continue;
        }
        // Tag k at bits 2k, 2k+1.
        let mut tags = format::sequential_tags(tag_word);
        let mut word = |dst: &mut [u8], tag: u32| {
            if SKIP && tag == u32::from(ZERO) {
                dst.fill(0);
                return;
            }
            let row = &TAG_ROWS[tag as usize];
            // The counters never pass the validated counts, and a counter equal to W is
            // only read (masked to 0) for a tag that does not use it.
            let index = usize::from(s.indices[hi & mask] & 15);
            let low = u32::from(s.lows[pi & mask]);
            let miss = s.misses[mi & mask];
            // Each word loads and stores the same entry: its miss's slot, its index, or (ZERO)
            // a spare entry. An EXACT word stores back what it loaded; that store used to go
            // to a spare entry so as not to chain later loads of the entry to it, but
            // loading and storing one address made this loop 14% faster on python pages
            // (SPEC.md section 4).
            let at = ((format::slot(miss) & row.miss_slot) | (index & row.index_slot) | row.spare) & 31;
            let w = (dict[at] & row.keep) | (low & row.take_low) | (miss & row.take_miss);
            dict[at] = w;
            hi += row.uses_index;
            pi += row.uses_low;
            mi += row.uses_miss;
            dst.copy_from_slice(&w.to_le_bytes());
        };
        // Four words per iteration, written out: the compiler keeps a 16-word loop rolled,
        // and the unrolled one took 7% less time on python pages (SPEC.md section 4).
        for quad in out.chunks_exact_mut(16) {
            let (first, rest) = quad.split_at_mut(4);
            let (second, rest) = rest.split_at_mut(4);
            let (third, fourth) = rest.split_at_mut(4);
            word(first, tags & 3);
            word(second, (tags >> 2) & 3);
            word(third, (tags >> 4) & 3);
            word(fourth, (tags >> 6) & 3);
            tags >>= 8;
        }
    }
}

/// What the word loop of [`expand`] does for one tag, as masks and increments, so that it
/// never branches on the tag (tags are data: a branch on them mispredicts).
struct TagRow {
    /// The bits of the dictionary entry the word keeps.
    keep: u32,
    /// All ones if the word takes the next low bits.
    take_low: u32,
    /// All ones if the word is the next miss.
    take_miss: u32,
    /// All ones (as a slot mask) if the word loads and stores its miss's slot.
    miss_slot: usize,
    /// All ones if the word loads and stores the entry its index names.
    index_slot: usize,
    /// 16 for ZERO words, which leave the dictionary alone: they load and store spare
    /// entry 16 + index.
    spare: usize,
    /// How far the word moves the index, low-bits and miss counters.
    uses_index: usize,
    uses_low: usize,
    uses_miss: usize,
}

/// [`TagRow`]s by tag: ZERO, PARTIAL, MISS, EXACT.
const TAG_ROWS: [TagRow; 4] = {
    const fn row(tag: u8) -> TagRow {
        let all = usize::MAX;
        TagRow {
            keep: KEEP[tag as usize],
            take_low: if tag == PARTIAL { u32::MAX } else { 0 },
            take_miss: if tag == MISS { u32::MAX } else { 0 },
            miss_slot: if tag == MISS { all } else { 0 },
            index_slot: if tag == MISS { 0 } else { all },
            spare: if tag == ZERO { DUMP_ENTRY as usize } else { 0 },
            uses_index: (tag & 1) as usize,
            uses_low: (tag == PARTIAL) as usize,
            uses_miss: (tag == MISS) as usize,
        }
    }
    [row(ZERO), row(PARTIAL), row(MISS), row(EXACT)]
};

/// The scalar decoder's first spare entry: ZERO words load and store entry 16 + index, which
/// no slot uses (the SIMD chain has its own dump entry, `arch::expand::ZERO_ROUTE`).
pub(crate) const DUMP_ENTRY: u8 = 16;

/// Per tag (ZERO, PARTIAL, MISS, EXACT): the bits of the dictionary entry a word keeps.
pub(crate) const KEEP: [u32; 4] = [0, !LOW_MASK, 0, u32::MAX];

/// Decodes the sparse form (word 0 is the magic) into `page`.
#[inline]
pub(crate) fn expand_sparse(input: &[u8], page: &mut [u8]) -> Result<(), DecompressError> {
    let entries = &input[4..];
    if entries.len() % SPARSE_ENTRY_BYTES != 0 {
        return Err(DecompressError::Truncated);
    }
    // Validate every entry before writing anything.
    let mut next_free = 0usize;
    for entry in entries.chunks_exact(SPARSE_ENTRY_BYTES) {
        let offset = usize::from(u16::from_le_bytes([entry[4], entry[5]]));
        if offset % 4 != 0 {
            return Err(DecompressError::corrupt("sparse offset not word aligned"));
        }
        if offset >= page.len() {
            return Err(DecompressError::corrupt("sparse offset outside the page"));
        }
        if offset < next_free {
            return Err(DecompressError::corrupt("sparse offsets not increasing"));
        }
        next_free = offset + 4;
    }
    page.fill(0);
    for entry in entries.chunks_exact(SPARSE_ENTRY_BYTES) {
        let offset = usize::from(u16::from_le_bytes([entry[4], entry[5]]));
        page[offset..offset + 4].copy_from_slice(&entry[..4]);
    }
    Ok(())
}

/// Header, sparse form and validation (with `U`'s loops), shared by every decoder: a
/// sparse-form stream is written into `page` here (`Ok(None)`); a normal-form stream is
/// validated and its areas unpacked into `s` (`Ok(Some(v))`) for the caller to expand.
///
/// Each decoder calls its expand step itself rather than passing it in as a closure: with
/// the compilers of the minimum supported Rust version, a closure does not inherit its
/// enclosing function's target features, and the SIMD intrinsics in it became calls (the
/// AVX2 decoder ran several times slower; docs/perf/wkdm.md).
///
/// # Safety
///
/// The CPU has the instruction set of `U`.
#[inline(always)]
pub(crate) unsafe fn validate_page<'a, U: Unpack, const W: usize>(
    input: &'a [u8],
    s: &mut Scratch<W>,
    page: &mut [u8],
) -> Result<Option<Validated<'a>>, DecompressError> {
    if input.len() < 4 {
        return Err(DecompressError::Truncated);
    }
    if format::read_word(input, 0) == SPARSE_MAGIC {
        return expand_sparse(input, page).map(|()| None);
    }
    if input.len() < 4 * HEADER_WORDS {
        return Err(DecompressError::Truncated);
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { U::validate::<W>(input, s) }.map(Some)
}

/// The whole scalar decompressor.
#[inline]
pub(crate) fn decompress<const W: usize>(
    input: &[u8],
    s: &mut Scratch<W>,
    preload: u32,
    page: &mut [u8],
) -> Result<(), DecompressError> {
    // SAFETY: the scalar loops need no particular instruction set.
    let Some(v) = (unsafe { validate_page::<ScalarUnpack, W>(input, s, page)? }) else {
        return Ok(());
    };
    // On pages with many zero words the branch past them predicts well (they come in
    // regular patterns, such as the upper halves of small 64-bit values) and saves the
    // word's loads and stores; on others it mispredicts more than it saves. Measured
    // (pagebench, 3000 pages each, median ticks): python pages 6110-6214 -> 4316-4446,
    // node pages unchanged; skipping on every page made node pages 6% slower.
    if 4 * v.zeros > W {
        expand::<W, true>(v, s, preload, page)
    } else {
        expand::<W, false>(v, s, preload, page)
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tags_by_kind() {
        // Tags 0,1,2,3 in one byte and a MISS-only byte.
        let tags = [0b11_10_01_00u8, 0b10_10_10_10, 0, 0, 0, 0, 0, 0, 0b01];
        assert_eq!(count_tags(&tags), (1 + 4, 2 + 1, 1 + 1));
    }
}
