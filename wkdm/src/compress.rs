//! The scalar reference compressor.
//!
//! Two passes: [`classify`] walks the page once, keeping the 16-word dictionary and writing
//! each word's tag, index, low bits and miss into fixed scratch arrays (no branch on the
//! tag: every candidate is stored and a counter advances only when it is kept; zero words
//! are skipped with a branch that predicts well); [`finish`] then
//! applies XNU's decisions (zero / single value, sparse or normal form, budget) and packs
//! the stream. SIMD paths replace `classify` and the packing but share [`finish`]'s rules.

use pagecodec::CompressError;

use crate::format::{
    self, EARLY_ABORT_LIMIT, EARLY_ABORT_WORDS, HEADER_WORDS, LOW_BITS, LOW_MASK, Layout, MISS, PARTIAL,
    SPARSE_MAGIC, ZERO,
};
use crate::scratch::Scratch;
use crate::{CompressOptions, Compressed};

/// How many words of each kind a page holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// MISS words (`m`).
    pub(crate) misses: usize,
    /// EXACT + PARTIAL words (`h`).
    pub(crate) hits: usize,
    /// PARTIAL words (`p`).
    pub(crate) partials: usize,
}

/// The budget rules in force for one call, resolved to integers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// `out.len()`: the stream must fit.
    pub(crate) room: usize,
    /// XNU's byte limit, when its exact rules are emulated.
    pub(crate) xnu_limit: Option<usize>,
    /// Give up after 104 words when XNU's estimate says the page will not shrink enough.
    pub(crate) early_abort: bool,
}

impl Budget {
    pub(crate) fn new(room: usize, options: &CompressOptions) -> Self {
        Budget { room, xnu_limit: options.xnu_limit, early_abort: options.early_abort }
    }

    /// Whether the page is already known to be refused with `c` counted so far. Both
    /// conditions only grow with more words, so checking every few words gives the same
    /// verdict as XNU's check at every miss.
    #[inline(always)]
    pub(crate) fn exceeded(&self, layout: Layout, c: Counts) -> bool {
        let normal_floor = layout.misses_start() + 4 * c.misses;
        // XNU: `left = limit - header - 4m` must stay > 0 after every miss.
        let xnu = matches!(self.xnu_limit, Some(limit) if normal_floor >= limit);
        // Fit: neither the normal form (at least header + misses) nor the sparse form
        // (4 + 6 per non-zero word) can fit any more.
        let fit = normal_floor > self.room && Layout::sparse_len(c.misses + c.hits) > self.room;
        xnu || fit
    }

    /// XNU's early-abort verdict after the first 104 words.
    #[inline]
    pub(crate) fn aborts_early(&self, c: Counts) -> bool {
        self.early_abort
            && (2 * c.partials * 1365) / 2048 + 4 * c.misses + c.hits / 2 + 26 > EARLY_ABORT_LIMIT
    }
}

/// Classifies every word of `page` (`4 * W` bytes) into `s`, returning the counts, or
/// `Incompressible` as soon as the budget or the early abort refuses the page.
#[inline]
pub(crate) fn classify<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    budget: &Budget,
) -> Result<Counts, CompressError> {
    const { assert!(W.is_power_of_two() && W >= 128) };
    let layout = Layout { words: W };
    debug_assert_eq!(page.len(), 4 * W);
    let mask = W - 1;
    let mut dict = [0u32; 16];
    let (mut m, mut h, mut p) = (0usize, 0usize, 0usize);
    // Groups of 8 words: 104 (the early-abort point) is a multiple of 8.
    for (group, bytes) in page.chunks_exact(32).enumerate() {
        for (k, chunk) in bytes.chunks_exact(4).enumerate() {
            let i = 8 * group + k;
            let w = format::le32(chunk);
            if w == 0 {
                // A branch, not a select: zero words come in regular patterns (the upper
                // halves of small 64-bit values) that predict well, and skipping their
                // stores made this loop 32% faster on python pages (SPEC.md section 4).
                s.tags[i & mask] = ZERO;
                continue;
            }
            let slot = format::slot(w);
            let d = dict[slot];
            let exact = w == d;
            let partial = (w ^ d) >> 10 == 0;
            // exact implies partial: MISS = 2, PARTIAL = 2 - 1, EXACT = 2 - 1 + 2.
            let tag = 2 - u8::from(partial) + 2 * u8::from(exact);
            // Counters are <= i < W, so the masks never change an index; they let the
            // compiler drop the bounds checks.
            s.tags[i & mask] = tag;
            s.indices[h & mask] = slot as u8;
            s.lows[p & mask] = (w & LOW_MASK) as u16;
            s.misses[m & mask] = w;
            h += usize::from(tag & 1);
            p += usize::from(tag == PARTIAL);
            m += usize::from(tag == MISS);
            dict[slot] = w;
        }
        let counts = Counts { misses: m, hits: h, partials: p };
        if budget.exceeded(layout, counts) {
            return Err(CompressError::Incompressible);
        }
        if 8 * (group + 1) == EARLY_ABORT_WORDS && budget.aborts_early(counts) {
            return Err(CompressError::Incompressible);
        }
    }
    Ok(Counts { misses: m, hits: h, partials: p })
}

/// Which stream form XNU writes for a classified page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Header, tags, misses, indices, low bits.
    Normal,
    /// Magic + (value, offset) per non-zero word.
    Sparse,
}

/// Applies XNU's decisions after classification: zero / single-value report, sparse or
/// normal form, and the budget. `first_word` is the page's word 0 and `first_tag` its tag.
#[inline]
pub(crate) fn decide(
    layout: Layout,
    c: Counts,
    first_word: u32,
    first_tag: u8,
    budget: &Budget,
    report_same_value: bool,
) -> Result<Result<Form, Compressed>, CompressError> {
    let words = layout.words;
    if report_same_value {
        if c.misses == 0 && c.hits == 0 {
            return Ok(Err(Compressed::Zero));
        }
        let single = (c.partials == 0 && c.hits == words - 1 && c.misses == 1 && first_tag == MISS)
            || (c.partials == 1 && c.hits == words && first_tag == PARTIAL);
        if single {
            return Ok(Err(Compressed::SingleValue(first_word)));
        }
    }
    let sparse = Layout::sparse_len(c.misses + c.hits);
    if layout.normal_estimate(c.misses, c.hits, c.partials) >= sparse {
        let fits = sparse <= budget.room && budget.xnu_limit.is_none_or(|limit| sparse <= limit);
        return if fits { Ok(Ok(Form::Sparse)) } else { Err(CompressError::Incompressible) };
    }
    if layout.normal_len(c.misses, c.hits, c.partials) > budget.room {
        return Err(CompressError::Incompressible);
    }
    if let Some(limit) = budget.xnu_limit {
        // `left` after the misses is > 0 (checked during classification); then the index
        // area may bring it to exactly 0, but every low-bits word must leave it > 0.
        // In unsigned terms, so that any limit up to `usize::MAX` means "no tighter than
        // the room": `left = limit - used` must be >= 0 and, with low bits, `left - low > 0`.
        let used = layout.misses_start() + 4 * c.misses + 4 * c.hits.div_ceil(8);
        let low = 4 * c.partials.div_ceil(3);
        if limit < used || (low > 0 && limit - used <= low) {
            return Err(CompressError::Incompressible);
        }
    }
    Ok(Ok(Form::Normal))
}

/// Writes the normal form from classified scratch data; `out` holds at least
/// `layout.normal_len(c)` bytes (checked by [`decide`]). `s.tags` holds one tag per word,
/// or, when `tags_packed`, the packed tags area already. Returns the stream length.
#[inline]
pub(crate) fn write_normal<const W: usize>(
    s: &mut Scratch<W>,
    c: Counts,
    tags_packed: bool,
    out: &mut [u8],
) -> usize {
    let layout = Layout { words: W };
    let len = layout.normal_len(c.misses, c.hits, c.partials);
    let out = &mut out[..len];
    let index_start = layout.misses_start_word() + c.misses;
    let low_start = index_start + c.hits.div_ceil(8);
    let end = low_start + c.partials.div_ceil(3);
    let header = [index_start as u32, low_start as u32, end as u32];
    for (dst, v) in out[..4 * HEADER_WORDS].chunks_exact_mut(4).zip(header) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    let (tags_out, rest) = out[4 * HEADER_WORDS..].split_at_mut(layout.tag_bytes());
    if tags_packed {
        tags_out.copy_from_slice(&s.tags[..layout.tag_bytes()]);
    } else {
        for (dst, tags) in tags_out.chunks_exact_mut(4).zip(s.tags.chunks_exact(16)) {
            let tags: &[u8; 16] = tags.try_into().expect("chunks of 16");
            dst.copy_from_slice(&format::pack_tags(tags).to_le_bytes());
        }
    }
    let (miss_out, rest) = rest.split_at_mut(4 * c.misses);
    for (dst, &w) in miss_out.chunks_exact_mut(4).zip(&s.misses[..c.misses]) {
        dst.copy_from_slice(&w.to_le_bytes());
    }
    // Zero the index padding (W is a multiple of 8, so the padded count still fits).
    let padded = c.hits.div_ceil(8) * 8;
    s.indices[c.hits..padded].fill(0);
    let (index_out, low_out) = rest.split_at_mut(4 * c.hits.div_ceil(8));
    for (dst, idx) in index_out.chunks_exact_mut(4).zip(s.indices[..padded].chunks_exact(8)) {
        let idx: &[u8; 8] = idx.try_into().expect("chunks of 8");
        dst.copy_from_slice(&format::pack_indices(idx).to_le_bytes());
    }
    // Whole groups of 3, then the last word, whose values past `p` are zero padding (and
    // may lie past the end of `lows`, since p can be W).
    let whole = c.partials / 3;
    let (low_full, low_tail) = low_out.split_at_mut(4 * whole);
    for (dst, v) in low_full.chunks_exact_mut(4).zip(s.lows.chunks_exact(3)) {
        dst.copy_from_slice(&format::pack_low_bits([v[0], v[1], v[2]]).to_le_bytes());
    }
    if !low_tail.is_empty() {
        let value = |k: usize| if k < c.partials { s.lows[k] } else { 0 };
        let packed = format::pack_low_bits([value(3 * whole), value(3 * whole + 1), 0]);
        low_tail.copy_from_slice(&packed.to_le_bytes());
    }
    len
}

/// The tag XNU gives word 0 (the dictionary holds zeros, so it is never EXACT).
#[inline]
pub(crate) fn first_tag(w: u32) -> u8 {
    if w == 0 {
        ZERO
    } else if w >> LOW_BITS == 0 {
        PARTIAL
    } else {
        MISS
    }
}

/// Writes the sparse form: the magic, then (value, byte offset) of each non-zero word.
/// `out` holds at least `4 + 6 * nonzero` bytes (checked by [`decide`]).
#[inline]
pub(crate) fn write_sparse(page: &[u8], out: &mut [u8]) -> usize {
    out[..4].copy_from_slice(&SPARSE_MAGIC.to_le_bytes());
    let mut at = 4;
    for (i, word) in page.chunks_exact(4).enumerate() {
        if word != [0; 4] {
            out[at..at + 4].copy_from_slice(word);
            out[at + 4..at + 6].copy_from_slice(&((4 * i) as u16).to_le_bytes());
            at += 6;
        }
    }
    at
}

/// Applies [`decide`] to classified counts and writes the chosen form.
#[inline]
pub(crate) fn finish<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    counts: Counts,
    tags_packed: bool,
    out: &mut [u8],
    budget: &Budget,
    report_same_value: bool,
) -> Result<Compressed, CompressError> {
    let layout = Layout { words: W };
    let first_word = format::read_word(page, 0);
    match decide(layout, counts, first_word, first_tag(first_word), budget, report_same_value)? {
        Err(same) => Ok(same),
        Ok(Form::Sparse) => Ok(Compressed::Stream(write_sparse(page, out))),
        Ok(Form::Normal) => Ok(Compressed::Stream(write_normal(s, counts, tags_packed, out))),
    }
}

/// The budget for one call, or `Incompressible` when the XNU limit cannot even hold the
/// header and tags.
#[inline]
pub(crate) fn budget_for<const W: usize>(
    out: &[u8],
    options: &CompressOptions,
) -> Result<Budget, CompressError> {
    let budget = Budget::new(out.len(), options);
    if budget.xnu_limit.is_some_and(|limit| limit <= Layout { words: W }.misses_start()) {
        return Err(CompressError::Incompressible);
    }
    Ok(budget)
}

/// The whole scalar compressor: classify, decide, write.
#[inline]
pub(crate) fn compress<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    out: &mut [u8],
    options: &CompressOptions,
    report_same_value: bool,
) -> Result<Compressed, CompressError> {
    let budget = budget_for::<W>(out, options)?;
    let counts = classify::<W>(page, s, &budget)?;
    finish(page, s, counts, false, out, &budget, report_same_value)
}
