//! Test codecs, pages and sources shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use pagecodec::testing::{PageClass, generate};
use pagecodec::{CompressError, DecompressError, PAGE_SIZE, Page, PageCodec};
use xvmalloc::{HeapSource, PageSource};

/// Stream = the page up to its last non-zero byte (the rest is zeros).
#[derive(Clone, Copy, Debug, Default)]
pub struct TrimTrailing;

impl TrimTrailing {
    pub fn stream_len(page: &Page) -> usize {
        page.as_bytes().iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
    }
}

impl PageCodec for TrimTrailing {
    fn name(&self) -> &'static str {
        "trim-trailing"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let n = Self::stream_len(page);
        let out = out.get_mut(..n).ok_or(CompressError::Incompressible)?;
        out.copy_from_slice(&page.as_bytes()[..n]);
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        if input.len() > PAGE_SIZE {
            return Err(DecompressError::TrailingInput);
        }
        let bytes = page.as_bytes_mut();
        bytes[..input.len()].copy_from_slice(input);
        bytes[input.len()..].fill(0);
        Ok(())
    }
}

/// Stream = the page from its first non-zero byte (what precedes is zeros).
#[derive(Clone, Copy, Debug, Default)]
pub struct TrimLeading;

impl TrimLeading {
    pub fn stream_len(page: &Page) -> usize {
        page.as_bytes().iter().position(|&b| b != 0).map_or(0, |i| PAGE_SIZE - i)
    }
}

impl PageCodec for TrimLeading {
    fn name(&self) -> &'static str {
        "trim-leading"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let n = Self::stream_len(page);
        let out = out.get_mut(..n).ok_or(CompressError::Incompressible)?;
        out.copy_from_slice(&page.as_bytes()[PAGE_SIZE - n..]);
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        if input.len() > PAGE_SIZE {
            return Err(DecompressError::TrailingInput);
        }
        let bytes = page.as_bytes_mut();
        let zeros = PAGE_SIZE - input.len();
        bytes[..zeros].fill(0);
        bytes[zeros..].copy_from_slice(input);
        Ok(())
    }
}

/// Stream = a u16 offset and the page from its first to its last non-zero byte.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrimBoth;

impl PageCodec for TrimBoth {
    fn name(&self) -> &'static str {
        "trim-both"
    }
    fn max_compressed_len(&self) -> usize {
        PAGE_SIZE + 2
    }
    fn compress(&mut self, page: &Page, out: &mut [u8]) -> Result<usize, CompressError> {
        let b = page.as_bytes();
        let first = b.iter().position(|&x| x != 0).unwrap_or(0);
        let last = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1).max(first);
        let n = 2 + last - first;
        let out = out.get_mut(..n).ok_or(CompressError::Incompressible)?;
        out[..2].copy_from_slice(&(first as u16).to_le_bytes());
        out[2..].copy_from_slice(&b[first..last]);
        Ok(n)
    }
    fn decompress(&mut self, input: &[u8], page: &mut Page) -> Result<(), DecompressError> {
        let (head, body) = input.split_at_checked(2).ok_or(DecompressError::corrupt("short"))?;
        let first = usize::from(u16::from_le_bytes([head[0], head[1]]));
        let end = first
            .checked_add(body.len())
            .filter(|&e| e <= PAGE_SIZE)
            .ok_or(DecompressError::TrailingInput)?;
        let bytes = page.as_bytes_mut();
        bytes.fill(0);
        bytes[first..end].copy_from_slice(body);
        Ok(())
    }
}

/// A page of one of several shapes: same-filled, mostly zero at the end or start (so the
/// trim codecs give every size), random (huge), and the pagecodec generator classes.
pub fn mixed_page(kind: u8, seed: u64) -> Page {
    let mut rng = pagecodec::testing::Rng::new(seed);
    let mut page = Page::zeroed();
    match kind % 6 {
        // Same-filled with a repeated byte, a repeated u32, or any u64: the key table keeps
        // the first two in the entry and the last beside it.
        0 => {
            let value = match seed % 5 {
                0..=2 => (seed % 3) * 0x5555_5555_5555_5555,
                3 => (rng.next_u64() & 0xFFFF_FFFF) * 0x1_0000_0001,
                _ => rng.next_u64(),
            };
            for word in page.as_bytes_mut().chunks_exact_mut(8) {
                word.copy_from_slice(&value.to_le_bytes());
            }
        }
        1 => {
            let n = rng.below(PAGE_SIZE as u64) as usize + 1;
            rng.fill(&mut page.as_bytes_mut()[..n]);
            page.as_bytes_mut()[0] |= 1;
        }
        2 => {
            let n = rng.below(PAGE_SIZE as u64) as usize + 1;
            rng.fill(&mut page.as_bytes_mut()[PAGE_SIZE - n..]);
            page.as_bytes_mut()[PAGE_SIZE - 1] |= 1;
        }
        3 => rng.fill(page.as_bytes_mut()),
        _ => {
            let class = PageClass::ALL[(seed % PageClass::ALL.len() as u64) as usize];
            page = generate(class, seed);
        }
    }
    page
}

/// Fails `acquire` whenever the next bit of `pattern` is set.
pub struct Flaky {
    pub inner: HeapSource,
    pub pattern: u64,
    pub calls: u32,
}

impl Flaky {
    pub fn new(pattern: u64) -> Self {
        Flaky { inner: HeapSource::new(), pattern, calls: 0 }
    }
}

impl PageSource for Flaky {
    type Chunk = Box<[u8]>;
    fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
        let fail = self.pattern >> (self.calls % 64) & 1 == 1;
        self.calls += 1;
        if fail { None } else { self.inner.acquire(size) }
    }
    fn release(&mut self, chunk: Box<[u8]>) {
        self.inner.release(chunk)
    }
}
