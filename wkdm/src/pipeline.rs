//! The compressor of the SIMD paths: a dictionary replay, then a classify kernel.
//!
//! The dictionary is the only sequential state, and it can be replayed without a
//! dependency chain: for each non-zero word [`recurrence`] records the entry the word is
//! compared with (`prev`) and its slot, then stores the word into its slot, so no store
//! depends on a load (the AVX-512 path has its own replay, in registers:
//! `arch::x86_64::avx512::replay`). Zero words are skipped: they leave the dictionary alone
//! and the kernel tags them ZERO without reading their `prev` or slot. Everything else (tags,
//! indices, low bits, misses, counts) is data-parallel and done by a per-instruction-set
//! kernel that left-packs 4, 8 or 16 lanes at a time. The decisions and the stream writer are
//! the scalar compressor's ([`compress::finish`]), so every path writes the same bytes.
//!
//! The AVX2 and SSE4.1 kernels replay the scalar way themselves, two (AVX2) or one (SSE4.1)
//! 16-word groups ahead of the group they classify (`arch::classify` with its `AHEAD`; their
//! path has no replay pass): the core then overlaps the replay's loads and stores with the
//! vector classification, which two passes over the page ran one after the other. The
//! replay stays ahead so that no group is classified right after its `prev` and slots were
//! stored, the AVX2 kernel by two groups, which measured faster than one on AMD Zen 3
//! (docs/perf/wkdm.md). AVX-512 replays in registers in a pass of its own; NEON keeps two
//! passes (no aarch64 hardware has timed the interleaved order).

use pagecodec::CompressError;

use core::ops::Range;

use crate::arch::lanes::Lanes;
use crate::compress::{self, Budget, Counts};
use crate::format::{self, EARLY_ABORT_WORDS, Layout};
use crate::scratch::Scratch;
use crate::{CompressOptions, Compressed};

/// Fills `prev[i]` with the dictionary entry word `i` is compared with and `slots[i]` with
/// the word's slot, for the non-zero words of `groups` (16 words each), continuing from
/// `dict`; 256 entries let any `u8` slot index the table without a bounds check.
///
/// Zero words are skipped, so their `prev` items keep whatever an earlier call left there
/// and their `slots` items are 0 (the slot of 0 where `V` computes the slots in vector
/// code); the kernels never read them. Skipping costs a branch per word, yet it made the
/// AVX2 compressor 20% faster on python pages (39% zero words) and 3% on node pages (11%)
/// than storing zero words into a dummy entry (SPEC.md section 4): the branch follows
/// regular patterns (the zero upper halves of small 64-bit values) and predicts well, and
/// each skipped word saves two stores and a dictionary load.
///
/// Always inlined: the interleaving kernels call it once per group, and as a call it made
/// them slower than two passes.
///
/// # Safety
///
/// The CPU must have the instruction set of `V`, whose [`Lanes::hash_index`] gives each
/// word's hash byte; `page` holds `4 * W` bytes and `groups.end <= W / 16`.
#[inline(always)]
pub(crate) unsafe fn recurrence<const W: usize, V: Lanes>(
    page: &[u8],
    prev: &mut [u32; W],
    slots: &mut [u8; W],
    dict: &mut Dict,
    groups: Range<usize>,
) {
    if V::VECTOR_SLOTS {
        // The slots of each two groups from vector code when the first of them is replayed
        // (a last group without a second, on no page size this crate has, by the scalar
        // lookup), and the replay stores none: fewer instructions and stores per word than
        // the replay packing each four slots, which measured faster on AMD Zen 3
        // (docs/perf/wkdm.md, "Kernel slots in vector code"). The replay still hashes each
        // word itself, so that its dictionary addresses follow the word by a table load.
        for group in groups.clone() {
            if group % 2 != 0 {
                continue;
            }
            if 16 * group + 32 <= W {
                // SAFETY: words 16 * group..16 * group + 32 are in the page (4 * W bytes, the
                // caller guarantees) and in `slots` (W items); the caller guarantees V's
                // instruction set.
                unsafe {
                    V::store_slots_of_32(page.as_ptr().add(64 * group), slots.as_mut_ptr().add(16 * group))
                };
            } else {
                for (k, word) in page[64 * group..64 * group + 64].chunks_exact(4).enumerate() {
                    // SAFETY: the caller guarantees V's instruction set.
                    slots[16 * group + k] = unsafe { V::slot(format::le32(word)) };
                }
            }
        }
    }
    let words = 16 * groups.start..16 * groups.end;
    for ((words, prev), slots) in page[4 * words.start..4 * words.end]
        .chunks_exact(16)
        .zip(prev[words.clone()].chunks_exact_mut(4))
        .zip(slots[words].chunks_exact_mut(4))
    {
        // Each four slots go out as one 4-byte store, not a byte store per word: the
        // kernel reads them 8 at a time, and the AVX2 compressor measured much faster
        // with fewer, wider stores (docs/perf/wkdm.md, "Slots stored four at a time").
        let mut packed = [0u8; 4];
        for k in 0..4 {
            // SAFETY: the caller guarantees V's instruction set.
            packed[k] = unsafe { replay_word::<V>(format::le32(&words[4 * k..]), &mut prev[k], dict) };
        }
        if !V::VECTOR_SLOTS {
            slots.copy_from_slice(&packed);
        }
    }
}

/// Replays one word: a non-zero word's `prev` and dictionary entry are written and its slot
/// returned; a zero word writes nothing and returns 0 (a slot the kernels never read).
///
/// # Safety
///
/// The CPU must have the instruction set of `V`.
#[inline(always)]
unsafe fn replay_word<V: Lanes>(w: u32, prev: &mut u32, dict: &mut Dict) -> u8 {
    if w == 0 {
        return 0;
    }
    // SAFETY: the caller guarantees V's instruction set.
    let slot = dict.slot[unsafe { V::hash_index(w) } & 0xFF];
    *prev = dict.entries[usize::from(slot)];
    dict.entries[usize::from(slot)] = w;
    slot
}

/// The replay's dictionary: 256 entries, so that any `u8` slot indexes them without a
/// bounds check, then a copy of [`format::SLOT`], so that one base register addresses both
/// in the replay's loop (the table's own address cost the AVX2 kernel an instruction per
/// word once the vector code had taken the other registers).
#[repr(C)]
pub(crate) struct Dict {
    /// The entries, slot by slot (entries 16 and above unused).
    pub(crate) entries: [u32; 256],
    /// [`format::SLOT`].
    pub(crate) slot: [u8; 256],
}

impl Dict {
    /// An empty dictionary (preload 0, as XNU's compressor).
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Self { entries: [0; 256], slot: format::SLOT }
    }
}

/// A dictionary replay with [`recurrence`]'s contract: the scalar loop, or a path's own.
pub(crate) type Replay<const W: usize> =
    unsafe fn(&[u8], &mut [u32; W], &mut [u8; W], &mut Dict, Range<usize>);

/// A per-instruction-set classify kernel (`arch::classify`): it may only run where its
/// instruction set is present. The dictionary argument is the replay's, for kernels that
/// replay themselves (a path whose kernel does has no [`Replay`]).
pub(crate) type Kernel<const W: usize> =
    unsafe fn(&[u8], &mut Scratch<W>, &mut Dict, bool, Range<usize>, Counts) -> KernelResult;

/// What a kernel reports for a range of words.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KernelResult {
    /// All words classified; the counts.
    Done(Counts),
    /// The early abort fired at word 104.
    EarlyAbort,
}

/// The compressor around `replay`, which fills `s.prev` and `s.slots` (see
/// [`recurrence`]), and `kernel`, which classifies `s.prev` against the page and writes the
/// packed tags (into `s.tags`), misses, indices and low bits; `replay` does nothing for a
/// kernel that replays itself.
#[inline]
pub(crate) fn compress<const W: usize>(
    page: &[u8],
    s: &mut Scratch<W>,
    out: &mut [u8],
    options: &CompressOptions,
    report_same_value: bool,
    mut replay: impl FnMut(&[u8], &mut [u32; W], &mut [u8; W], &mut Dict, Range<usize>),
    mut kernel: impl FnMut(&[u8], &mut Scratch<W>, &mut Dict, bool, Range<usize>, Counts) -> KernelResult,
) -> Result<Compressed, CompressError> {
    let budget = compress::budget_for::<W>(out, options)?;
    // The groups up to the early-abort point first, so a refused page costs ~1/9 of one.
    let first = EARLY_ABORT_WORDS.div_ceil(16);
    let mut dict = Dict::new();
    let mut counts = Counts::default();
    for groups in [0..first, first..W / 16] {
        replay(page, &mut s.prev, &mut s.slots, &mut dict, groups.clone());
        counts = match kernel(page, s, &mut dict, budget.early_abort, groups, counts) {
            KernelResult::Done(counts) => counts,
            KernelResult::EarlyAbort => return Err(CompressError::Incompressible),
        };
    }
    if budget.exceeded(Layout { words: W }, counts) {
        return Err(CompressError::Incompressible);
    }
    compress::finish(page, s, counts, true, out, &budget, report_same_value)
}

/// XNU's early-abort verdict for counts after 104 words (for kernels).
#[inline(always)]
pub(crate) fn aborts_early(c: Counts) -> bool {
    Budget { room: 0, xnu_limit: None, early_abort: true }.aborts_early(c)
}
