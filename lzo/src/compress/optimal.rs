//! A slow, strong LZO1X compressor for pages: hash-chain match search and a minimum-cost
//! parse, for recompressing pages that stay in memory a long time (LZO1X-999-class ratios,
//! the same decoder). Not liblzo2's `lzo1x_999` bytes: its own search and parse.

use pagecodec::{CompressError, PAGE_SIZE};

use super::output::Output;
use crate::format::{M2_MAX_LEN, M2_MAX_OFFSET, M3_MAX_LEN};

/// Hash buckets of the 3-byte prefixes (12 bits).
const BUCKETS: usize = 1 << 12;
/// Lengths past which a match is taken as found (no longer chain walk) and is carried to
/// the next position instead of searched again.
const NICE_LEN: usize = 64;
/// Shorter lengths of a match the parse considers beside its full length.
const SHORT_LENS: usize = M3_MAX_LEN + 3;
/// No cost yet.
const INF: u16 = u16::MAX;

/// Bytes a length extension takes for `rest >= 1` beyond an opcode's maximum.
const fn ext_len(rest: usize) -> usize {
    (rest - 1) / 255 + 1
}

/// Bytes of a match instruction of `len >= 3` at `dist` (M2 or M3: a page never needs M4).
fn match_cost(len: usize, dist: usize) -> usize {
    if len <= M2_MAX_LEN && dist <= M2_MAX_OFFSET {
        2
    } else if len <= M3_MAX_LEN {
        3
    } else {
        3 + ext_len(len - M3_MAX_LEN)
    }
}

/// Bytes `t >= 1` literals take after a match (1-3 ride in its `S` bits) or, with `start`,
/// at the start of the stream (the `17 + t` form up to 238).
fn literal_cost(t: usize, start: bool) -> usize {
    match (t, start) {
        (_, true) if t <= 238 => t + 1,
        (1..=3, false) => t,
        (4..=18, _) => t + 1,
        _ => t + 1 + ext_len(t.saturating_sub(18).max(1)),
    }
}

fn hash(b: &[u8]) -> usize {
    let v = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> (32 - 12)) as usize
}

/// Length of the common prefix of `src[a..]` and `src[b..]`, at most `max`, 8 bytes at a
/// time.
fn common(src: &[u8], a: usize, b: usize, max: usize) -> usize {
    let (Some(x), Some(y)) = (src.get(a..), src.get(b..)) else { return 0 };
    let max = max.min(x.len()).min(y.len());
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut n = 0;
    while n + 8 <= max {
        let diff = word(x, n) ^ word(y, n);
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while n < max && x[n] == y[n] {
        n += 1;
    }
    n
}

/// Working memory: hash chains and the parse's tables (about 56 KiB).
#[derive(Clone)]
pub(crate) struct OptimalCompressor {
    /// Chain walk depth per position.
    depth: usize,
    /// Last position + 1 per bucket (0: none).
    head: [u16; BUCKETS],
    /// Previous position + 1 with the same bucket (0: none); reused as the parse's stack.
    prev: [u16; PAGE_SIZE],
    /// Cheapest cost of `src[..i]` ending with a match (or `i == 0`).
    after_match: [u16; PAGE_SIZE + 1],
    /// Cheapest cost of `src[..i]` followed by a match or the end, and where its final
    /// literal run starts.
    before_match: [u16; PAGE_SIZE + 1],
    literals_from: [u16; PAGE_SIZE + 1],
    /// The match ending at `i` on the cheapest path to `after_match[i]`: start and distance.
    match_start: [u16; PAGE_SIZE + 1],
    match_dist: [u16; PAGE_SIZE + 1],
}

// The documented working memory.
const _: () = assert!(core::mem::size_of::<OptimalCompressor>() <= 56 * 1024 + 64);

impl OptimalCompressor {
    /// Default chain walk depth.
    pub(crate) const DEFAULT_DEPTH: usize = 16;

    pub(crate) const fn new(depth: usize) -> Self {
        OptimalCompressor {
            depth: if depth == 0 { 1 } else { depth },
            head: [0; BUCKETS],
            prev: [0; PAGE_SIZE],
            after_match: [INF; PAGE_SIZE + 1],
            before_match: [INF; PAGE_SIZE + 1],
            literals_from: [0; PAGE_SIZE + 1],
            match_start: [0; PAGE_SIZE + 1],
            match_dist: [0; PAGE_SIZE + 1],
        }
    }

    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// The longest match at `i` overall and within M2's reach: `((len, dist), (len, dist))`,
    /// lengths 0 when none.
    fn search(&self, src: &[u8], i: usize) -> ((usize, usize), (usize, usize)) {
        let max = src.len() - i;
        let (mut best, mut near) = ((0, 0), (0, 0));
        let mut cand = usize::from(self.head[hash(&src[i..])]);
        let mut steps = 0;
        while cand > 0 && steps < self.depth {
            let c = cand - 1;
            let dist = i - c;
            // Only a candidate that beats the best so far at its last byte is measured.
            if src.get(c + best.0) == src.get(i + best.0) || (dist <= M2_MAX_OFFSET && near.0 < M2_MAX_LEN) {
                let len = common(src, c, i, max);
                if len > best.0 {
                    best = (len, dist);
                }
                if dist <= M2_MAX_OFFSET && len > near.0 {
                    near = (len, dist);
                }
                if len >= NICE_LEN || len == max {
                    break;
                }
            }
            cand = usize::from(self.prev[c]);
            steps += 1;
        }
        (best, near)
    }

    /// Cheapest cost of `src[..k]` followed by a match or the end (literals allowed). Of
    /// equal costs the run found first stays (the stream's start, then the shorter runs, then
    /// the long run), and of long-run starts with equal estimates the earliest is costed.
    fn settle(&mut self, k: usize, long_min: &mut Option<(i64, usize)>) {
        let mut best = (usize::from(INF), 0);
        // A run from the stream's start.
        if k > 0 {
            best = (literal_cost(k, true), 0);
        }
        // Nothing, or a short run, after a match.
        for t in 0..=k.min(18) {
            let j = k - t;
            let g = usize::from(self.after_match[j]);
            if g == usize::from(INF) || (j == 0 && t > 0) {
                continue;
            }
            let cost = g + if t == 0 { 0 } else { literal_cost(t, false) };
            if cost < best.0 {
                best = (cost, j);
            }
        }
        // A long run after a match: `t >= 19` literals cost `t + 2 + (t - 19) / 255` bytes
        // (integer division), within a byte of the same as a real number, which is linear in
        // `t`: `255 * cost = 255 * g[j] - 256 * j + 256 * k + 491`. So the start is picked
        // by a running minimum of `255 * g[j] - 256 * j`, then costed exactly.
        if k >= 19 {
            let j = k - 19;
            let g = self.after_match[j];
            if j > 0 && g != INF {
                let m = 255 * i64::from(g) - 256 * j as i64;
                if long_min.is_none_or(|(best_m, _)| m < best_m) {
                    *long_min = Some((m, j));
                }
            }
            if let Some((_, j)) = *long_min {
                let cost = usize::from(self.after_match[j]) + literal_cost(k - j, false);
                if cost < best.0 {
                    best = (cost, j);
                }
            }
        }
        self.before_match[k] = best.0.min(usize::from(INF) - 1) as u16;
        self.literals_from[k] = best.1 as u16;
    }

    /// A match of `len` at `dist` starting at `k` (after `before_match[k]`).
    fn relax(&mut self, k: usize, len: usize, dist: usize) {
        let cost = usize::from(self.before_match[k]) + match_cost(len, dist);
        let end = k + len;
        if cost < usize::from(self.after_match[end]) {
            self.after_match[end] = cost as u16;
            self.match_start[end] = k as u16;
            self.match_dist[end] = dist as u16;
        }
    }

    /// Compresses one page as a plain LZO1X stream into `dst` (its length is the budget).
    pub(crate) fn compress(
        &mut self,
        page: &[u8; PAGE_SIZE],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let src: &[u8] = page;
        let n = src.len();
        self.head.fill(0);
        self.after_match.fill(INF);
        self.after_match[0] = 0;
        let mut long_min = None;
        let mut carried = (0usize, 0usize);
        for k in 0..=n {
            self.settle(k, &mut long_min);
            if k == 0 || k + 3 > n {
                if k + 3 <= n {
                    self.insert(src, k);
                }
                continue;
            }
            let (best, near) = if carried.0 > NICE_LEN {
                // Inside a long match: the same distance one byte on.
                let m = (carried.0 - 1, carried.1);
                (m, if m.1 <= M2_MAX_OFFSET { m } else { (0, 0) })
            } else {
                self.search(src, k)
            };
            carried = best;
            self.insert(src, k);
            // The longest match may be the M2 one: its lengths are relaxed below.
            if near.1 != best.1 {
                for len in 3..=near.0.min(M2_MAX_LEN) {
                    self.relax(k, len, near.1);
                }
            }
            if best.0 >= 3 {
                for len in 3..=best.0.min(SHORT_LENS) {
                    self.relax(k, len, best.1);
                }
                if best.0 > SHORT_LENS {
                    self.relax(k, best.0, best.1);
                }
            }
        }
        self.emit(src, dst)
    }

    fn insert(&mut self, src: &[u8], k: usize) {
        let h = hash(&src[k..]);
        self.prev[k] = self.head[h];
        self.head[h] = (k + 1) as u16;
    }

    /// Writes the cheapest path: walks it back from the end into `prev` (as a stack of
    /// match ends), then forward.
    fn emit(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
        let n = src.len();
        let mut count = 0;
        let mut pos = n;
        loop {
            let end = usize::from(self.literals_from[pos]);
            if end == 0 {
                break;
            }
            self.prev[count] = end as u16;
            count += 1;
            pos = usize::from(self.match_start[end]);
        }
        let mut out = Output::new(dst);
        for &end in self.prev[..count].iter().rev() {
            let end = usize::from(end);
            let start = usize::from(self.match_start[end]);
            let from = usize::from(self.literals_from[start]);
            let lit = &src[from..start];
            if from == 0 {
                if lit.len() <= 238 {
                    out.put(&[17 + lit.len() as u8])?;
                    out.put(lit)?;
                } else {
                    out.literals(lit)?;
                }
            } else if !lit.is_empty() {
                out.literals(lit)?;
            }
            out.match_(end - start, usize::from(self.match_dist[end]))?;
        }
        let from = usize::from(self.literals_from[n]);
        out.finish(&src[from..], 0)
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    use alloc::boxed::Box;
    use alloc::vec;
    use alloc::vec::Vec;

    use pagecodec::testing::{PageClass, Rng, generate};

    use super::*;
    use crate::format::END_MARKER;

    /// Pages of every class, and pages whose literal runs and matches need length
    /// extensions (random runs of 250..=560 bytes between copies of the page's start).
    fn pages() -> Vec<[u8; PAGE_SIZE]> {
        let seeds = if cfg!(miri) { 1 } else { 4 };
        let mut pages: Vec<[u8; PAGE_SIZE]> = PageClass::ALL
            .iter()
            .flat_map(|&c| (0..seeds).map(move |s| *generate(c, s).as_bytes()))
            .collect();
        let mut rng = Rng::new(5);
        for run in (250..=560).step_by(if cfg!(miri) { 155 } else { 31 }) {
            let mut page = [0u8; PAGE_SIZE];
            rng.fill(&mut page);
            let mut at = run;
            while at + 300 <= PAGE_SIZE {
                page.copy_within(0..300, at);
                at += 300 + run;
            }
            pages.push(page);
        }
        pages
    }

    #[test]
    fn the_parse_costs_instructions_as_the_encoder_writes_them() {
        let top = if cfg!(miri) { 300 } else { 1200 };
        let mut buf = vec![0u8; 2 * top + 64];
        for dist in [1, 2, M2_MAX_OFFSET, M2_MAX_OFFSET + 1, PAGE_SIZE] {
            for len in 3..=top {
                let mut out = Output::new(&mut buf);
                out.match_(len, dist).unwrap();
                assert_eq!(match_cost(len, dist), out.pos, "match of {len} at {dist}");
            }
        }
        let lit = vec![0xABu8; top];
        for t in 1..=top {
            let n = Output::new(&mut buf).finish(&lit[..t], 0).unwrap();
            assert_eq!(literal_cost(t, true), n - END_MARKER.len(), "{t} literals at the start");
            let mut out = Output::new(&mut buf);
            out.match_(4, 1).unwrap();
            let before = out.pos;
            out.literals(&lit[..t]).unwrap();
            assert_eq!(literal_cost(t, false), out.pos - before, "{t} literals after a match");
        }
    }

    #[test]
    fn the_cheapest_path_costs_what_is_written() {
        let mut c = Box::new(OptimalCompressor::new(OptimalCompressor::DEFAULT_DEPTH));
        let mut out = vec![0u8; 2 * PAGE_SIZE];
        for (i, page) in pages().iter().enumerate() {
            let n = c.compress(page, &mut out).unwrap();
            assert_eq!(usize::from(c.before_match[PAGE_SIZE]) + END_MARKER.len(), n, "page {i}");
        }
    }

    #[test]
    fn common_prefixes_are_measured_exactly() {
        let mut rng = Rng::new(11);
        let mut src = vec![0u8; 200];
        rng.fill(&mut src);
        for same in 0..=60 {
            let mut s = src.clone();
            s.copy_within(0..same, 100);
            s[100 + same] = !s[same];
            assert_eq!(common(&s, 0, 100, 90), same.min(90), "{same}");
            assert_eq!(common(&s, 0, 100, same / 2), same / 2, "{same}, capped");
        }
        // Past either end: as much as both have.
        assert_eq!(common(&[1, 2, 3, 1, 2], 0, 3, 10), 2);
        assert_eq!(common(&[1, 2, 3], 0, 7, 10), 0);
    }

    /// `settle` up to `top` with matches ending only at `ends` (position, cost): the cost of
    /// `src[..top]` and where its final literal run starts.
    fn settled(ends: &[(usize, u16)], top: usize) -> (u16, u16) {
        let mut c = Box::new(OptimalCompressor::new(1));
        c.after_match.fill(INF);
        c.after_match[0] = 0;
        for &(j, g) in ends {
            c.after_match[j] = g;
        }
        let mut long_min = None;
        for k in 0..=top {
            c.settle(k, &mut long_min);
        }
        (c.before_match[top], c.literals_from[top])
    }

    #[test]
    fn equal_costs_keep_the_run_found_first() {
        // 300 literals from the stream's start take 303 bytes; after a match ending at 100
        // that cost 101 bytes, the 200 literals take 202: a tie, and the start's run stays.
        assert_eq!(settled(&[(100, 101)], 300), (303, 0));
        assert_eq!(settled(&[(100, 100)], 300), (302, 100));
        // Two long runs with equal estimates (255 * 5 - 256 * 10 = 255 * 261 - 256 * 265):
        // the earlier start is costed (5 + 293 bytes), though the later one would take
        // 261 + 36.
        assert_eq!(settled(&[(10, 5), (265, 261)], 300), (298, 10));
    }

    /// Why the long-run minimum may skip position 0 and unreached positions: a start whose
    /// estimate `255 * g - 256 * j` is not negative never costs less than the stream's own
    /// run, so neither can displace a start that wins.
    #[test]
    fn starts_estimated_at_zero_or_more_never_beat_the_streams_run() {
        let step = if cfg!(miri) { 97 } else { 1 };
        for j in (1..PAGE_SIZE).step_by(step) {
            // The cheapest cost with a non-negative estimate.
            let g = (256 * j).div_ceil(255);
            for k in (j + 19..=PAGE_SIZE).step_by(step) {
                assert!(g + literal_cost(k - j, false) >= literal_cost(k, true), "start {j}, end {k}");
            }
        }
        // Nor does position 0 taken as a match's end (long runs only: 19 literals or more).
        for t in 19..=PAGE_SIZE {
            assert!(literal_cost(t, true) <= literal_cost(t, false), "{t}");
        }
    }

    #[test]
    fn depth_is_at_least_one() {
        assert_eq!(OptimalCompressor::new(0).depth(), 1);
        assert_eq!(OptimalCompressor::new(1).depth(), 1);
        assert_eq!(OptimalCompressor::new(40).depth(), 40);
    }
}
