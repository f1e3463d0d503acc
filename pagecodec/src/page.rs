//! The [`Page`] type.

use core::fmt;

/// Bytes in a page: 4 KiB, the page size of x86_64, most arm64 Linux and zram.
pub const PAGE_SIZE: usize = 4096;

/// 32-bit words in a page (the unit WKdm works on).
pub const PAGE_WORDS: usize = PAGE_SIZE / 4;

/// One 4096-byte page, aligned to 64 bytes (a cache line, and enough for any SIMD load).
///
/// The alignment lets codecs view the page as 32-bit or 64-bit words without copying.
/// Word views are *native-endian* reinterpretations of the bytes. Every codec in this
/// family defines its format in terms of little-endian words, so on a little-endian host
/// `words()[i] == u32::from_le_bytes(bytes[4i..4i + 4])`; portable code that must also
/// run on big-endian hosts converts with [`u32::from_le`] (or uses [`Page::word_le`]).
///
/// ```
/// use pagecodec::{Page, PAGE_SIZE};
///
/// let mut page = Page::zeroed();
/// page.as_bytes_mut()[..4].copy_from_slice(&0x1234_5678u32.to_le_bytes());
/// assert_eq!(page.word_le(0), 0x1234_5678);
/// assert_eq!(page.as_bytes().len(), PAGE_SIZE);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
#[repr(C, align(64))]
pub struct Page([u8; PAGE_SIZE]);

// The word views below rely on these two facts.
const _: () = assert!(core::mem::align_of::<Page>() >= 64);
const _: () = assert!(core::mem::size_of::<Page>() == PAGE_SIZE);

impl Page {
    /// A page of zero bytes.
    #[inline]
    pub const fn zeroed() -> Self {
        Page([0; PAGE_SIZE])
    }

    /// A page whose every byte is `byte`.
    #[inline]
    pub const fn filled(byte: u8) -> Self {
        Page([byte; PAGE_SIZE])
    }

    /// The page's bytes.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8; PAGE_SIZE] {
        &self.0
    }

    /// The page's bytes, writable.
    #[inline]
    pub fn as_bytes_mut(&mut self) -> &mut [u8; PAGE_SIZE] {
        &mut self.0
    }

    /// The page as 1024 native-endian 32-bit words (see the type docs on endianness).
    #[inline]
    pub fn words(&self) -> &[u32; PAGE_WORDS] {
        // SAFETY: `Page` is `repr(C)`, 4096 bytes long and 64-byte aligned (checked at
        // compile time above), so it is a valid, suitably aligned `[u32; 1024]`; every bit
        // pattern is a valid `u32`, and the borrow ties the view's lifetime to `self`.
        unsafe { &*(self as *const Page).cast::<[u32; PAGE_WORDS]>() }
    }

    /// The page as 1024 native-endian 32-bit words, writable.
    #[inline]
    pub fn words_mut(&mut self) -> &mut [u32; PAGE_WORDS] {
        // SAFETY: as in `words`; the exclusive borrow of `self` makes the view unique, and
        // any `u32` written is a valid byte pattern for the page.
        unsafe { &mut *(self as *mut Page).cast::<[u32; PAGE_WORDS]>() }
    }

    /// The page as 512 native-endian 64-bit words.
    #[inline]
    pub fn words64(&self) -> &[u64; PAGE_SIZE / 8] {
        // SAFETY: as in `words`: size 4096 and alignment 64 >= 8 make the page a valid
        // `[u64; 512]`, and every bit pattern is a valid `u64`.
        unsafe { &*(self as *const Page).cast::<[u64; PAGE_SIZE / 8]>() }
    }

    /// Word `index` (0..1024) read as little-endian on every host.
    ///
    /// # Panics
    ///
    /// If `index >= 1024`.
    #[inline]
    pub fn word_le(&self, index: usize) -> u32 {
        u32::from_le(self.words()[index])
    }
}

impl Default for Page {
    fn default() -> Self {
        Page::zeroed()
    }
}

impl From<[u8; PAGE_SIZE]> for Page {
    fn from(bytes: [u8; PAGE_SIZE]) -> Self {
        Page(bytes)
    }
}

impl From<&[u8; PAGE_SIZE]> for Page {
    fn from(bytes: &[u8; PAGE_SIZE]) -> Self {
        Page(*bytes)
    }
}

impl AsRef<[u8]> for Page {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl AsMut<[u8]> for Page {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl fmt::Debug for Page {
    /// Prints a summary (first bytes and a checksum) rather than 4096 bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let checksum = self
            .0
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        write!(f, "Page({:02x?}.., fnv1a={checksum:016x})", &self.0[..16])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats `page` with its `Debug` impl into a fixed buffer (no allocation needed).
    fn debug(page: &Page) -> ([u8; 128], usize) {
        struct Buf([u8; 128], usize);
        impl fmt::Write for Buf {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let end = self.1 + s.len();
                self.0.get_mut(self.1..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
                self.1 = end;
                Ok(())
            }
        }
        let mut buf = Buf([0; 128], 0);
        fmt::write(&mut buf, format_args!("{page:?}")).unwrap();
        (buf.0, buf.1)
    }

    #[test]
    fn debug_shows_the_first_bytes_and_an_fnv1a_checksum() {
        // FNV-1a 64 of the whole page: 4096 zero bytes, and the ramp 0, 1, 2, ... 255, 0, ...
        let (text, n) = debug(&Page::zeroed());
        assert_eq!(
            &text[..n],
            b"Page([00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00, 00].., fnv1a=b93a0c83ce3b6325)"
        );
        let mut ramp = Page::zeroed();
        for (i, b) in ramp.as_bytes_mut().iter_mut().enumerate() {
            *b = i as u8;
        }
        let (text, n) = debug(&ramp);
        assert_eq!(
            &text[..n],
            b"Page([00, 01, 02, 03, 04, 05, 06, 07, 08, 09, 0a, 0b, 0c, 0d, 0e, 0f].., fnv1a=88d6ce5789d35325)"
        );
    }

    #[test]
    fn layout_and_views_agree() {
        let mut page = Page::zeroed();
        for (i, b) in page.as_bytes_mut().iter_mut().enumerate() {
            *b = i as u8;
        }
        assert_eq!(page.word_le(0), 0x0302_0100);
        assert_eq!(page.word_le(1023), u32::from_le_bytes([252, 253, 254, 255]));
        assert_eq!(u64::from_le(page.words64()[1]), 0x0f0e_0d0c_0b0a_0908);
        page.words_mut()[2] = 0xdead_beefu32.to_le();
        assert_eq!(&page.as_bytes()[8..12], &0xdead_beefu32.to_le_bytes());
        assert_eq!(page.as_bytes().as_ptr() as usize % 64, 0);
    }

    #[test]
    fn constructors() {
        assert_eq!(Page::default(), Page::zeroed());
        assert_eq!(Page::from([9u8; PAGE_SIZE]), Page::filled(9));
        assert_eq!(Page::from(&[9u8; PAGE_SIZE]).as_ref(), &[9u8; PAGE_SIZE][..]);
        assert_ne!(Page::filled(1), Page::filled(2));
    }
}
