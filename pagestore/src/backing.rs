//! Backing stores: where written-back pages go.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use pagecodec::PAGE_SIZE;

/// Bytes of one backing-store slot: one page, so a raw page fills it exactly and slots stay
/// aligned for direct I/O.
pub const SLOT_SIZE: usize = PAGE_SIZE;

/// Why a backing store could not read or write a slot, or why a slot read back was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackingError {
    /// The operating system reported an I/O error (its error number when known).
    Io {
        /// `errno`, if the platform gave one.
        code: Option<i32>,
    },
    /// Fewer bytes than a slot were written.
    ShortWrite,
    /// Fewer bytes than a slot were read.
    ShortRead,
    /// The backing store has no free slot left (or its device is full).
    Full,
    /// The slot number is past the store's capacity.
    OutOfRange,
    /// The slot's bytes do not match what was written there (a torn write, a stale or
    /// foreign slot, or corruption): the page is not returned.
    Checksum,
    /// The backing store cannot do what was asked (e.g. direct I/O on this platform).
    Unsupported,
}

impl fmt::Display for BackingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackingError::Io { code: Some(c) } => write!(f, "backing store I/O error (errno {c})"),
            BackingError::Io { code: None } => f.write_str("backing store I/O error"),
            BackingError::ShortWrite => f.write_str("backing store wrote less than a slot"),
            BackingError::ShortRead => f.write_str("backing store read less than a slot"),
            BackingError::Full => f.write_str("backing store is full"),
            BackingError::OutOfRange => f.write_str("slot past the backing store's capacity"),
            BackingError::Checksum => {
                f.write_str("backing slot does not match what was written (torn, stale or corrupt)")
            }
            BackingError::Unsupported => f.write_str("not supported by this backing store"),
        }
    }
}

impl core::error::Error for BackingError {}

/// Storage for written-back pages: fixed-size slots numbered `0..slots()`.
///
/// The store decides which slot holds which page, keeps each slot's length and checksum in
/// its entry and verifies every read, so an implementation only moves bytes; it may fail
/// any call at any time without a page being lost (see [`PageStore::writeback`]).
///
/// [`PageStore::writeback`]: crate::PageStore::writeback
pub trait Backing {
    /// A short name for reports.
    fn name(&self) -> &'static str;

    /// Number of slots.
    fn slots(&self) -> u64;

    /// Writes `data` to `slot`.
    ///
    /// # Errors
    ///
    /// Any [`BackingError`]; the slot's contents are then unspecified.
    fn write(&mut self, slot: u64, data: &[u8; SLOT_SIZE]) -> Result<(), BackingError>;

    /// Reads `slot` into `data`.
    ///
    /// # Errors
    ///
    /// Any [`BackingError`]; `data` is then unspecified.
    fn read(&mut self, slot: u64, data: &mut [u8; SLOT_SIZE]) -> Result<(), BackingError>;

    /// Makes the writes so far durable (a no-op by default). A writeback batch is committed
    /// (its pages dropped from memory) only after this succeeds.
    ///
    /// # Errors
    ///
    /// Any [`BackingError`]: the batch stays in memory.
    fn flush(&mut self) -> Result<(), BackingError> {
        Ok(())
    }
}

impl<B: Backing + ?Sized> Backing for Box<B> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn slots(&self) -> u64 {
        (**self).slots()
    }
    fn write(&mut self, slot: u64, data: &[u8; SLOT_SIZE]) -> Result<(), BackingError> {
        (**self).write(slot, data)
    }
    fn read(&mut self, slot: u64, data: &mut [u8; SLOT_SIZE]) -> Result<(), BackingError> {
        (**self).read(slot, data)
    }
    fn flush(&mut self) -> Result<(), BackingError> {
        (**self).flush()
    }
}

/// A backing store in memory (`slots` pages, allocated as they are first written); for
/// tests and for a second, slower memory tier.
///
/// ```
/// use pagestore::{Backing, MemBacking, SLOT_SIZE};
///
/// let mut mem = MemBacking::new(2);
/// mem.write(1, &[7; SLOT_SIZE])?;
/// let mut back = [0; SLOT_SIZE];
/// mem.read(1, &mut back)?;
/// assert_eq!(back, [7; SLOT_SIZE]);
/// assert!(mem.write(2, &back).is_err());
/// # Ok::<(), pagestore::BackingError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemBacking {
    slots: Vec<Option<Box<[u8; SLOT_SIZE]>>>,
}

impl MemBacking {
    /// A store of `slots` slots.
    pub fn new(slots: usize) -> Self {
        MemBacking { slots: (0..slots).map(|_| None).collect() }
    }
}

impl Backing for MemBacking {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn slots(&self) -> u64 {
        self.slots.len() as u64
    }
    fn write(&mut self, slot: u64, data: &[u8; SLOT_SIZE]) -> Result<(), BackingError> {
        let cell =
            usize::try_from(slot).ok().and_then(|s| self.slots.get_mut(s)).ok_or(BackingError::OutOfRange)?;
        match cell {
            Some(bytes) => **bytes = *data,
            None => *cell = Some(Box::new(*data)),
        }
        Ok(())
    }
    fn read(&mut self, slot: u64, data: &mut [u8; SLOT_SIZE]) -> Result<(), BackingError> {
        let cell =
            usize::try_from(slot).ok().and_then(|s| self.slots.get(s)).ok_or(BackingError::OutOfRange)?;
        match cell {
            Some(bytes) => *data = **bytes,
            None => data.fill(0),
        }
        Ok(())
    }
}

/// A fault to inject into writes (see [`FaultyBacking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteFault {
    /// Nothing written, [`BackingError::Io`] returned.
    Io,
    /// Half the slot written, [`BackingError::ShortWrite`] returned.
    Short,
    /// Half the slot written, success returned: a silent torn write.
    Torn,
    /// Nothing written, [`BackingError::Full`] returned.
    Full,
}

/// A fault to inject into reads (see [`FaultyBacking`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadFault {
    /// [`BackingError::Io`] returned.
    Io,
    /// One bit of the data flipped, success returned: silent corruption.
    Corrupt,
}

/// Wraps a backing store and fails its calls on a schedule: call `n` of a kind fails when
/// bit `n % 64` of that kind's pattern is set. For testing that nothing is lost.
///
/// ```
/// use pagestore::{Backing, BackingError, FaultyBacking, MemBacking, WriteFault, SLOT_SIZE};
///
/// // Every other write fails with an I/O error, starting with the first.
/// let mut b = FaultyBacking::new(MemBacking::new(4)).fail_writes(0x5555_5555_5555_5555, WriteFault::Io);
/// assert_eq!(b.write(0, &[1; SLOT_SIZE]), Err(BackingError::Io { code: None }));
/// assert_eq!(b.write(0, &[1; SLOT_SIZE]), Ok(()));
/// ```
#[derive(Debug)]
pub struct FaultyBacking<B> {
    inner: B,
    writes: u64,
    write_pattern: u64,
    write_fault: WriteFault,
    reads: u64,
    read_pattern: u64,
    read_fault: ReadFault,
    flushes: u64,
    flush_pattern: u64,
}

impl<B: Backing> FaultyBacking<B> {
    /// `inner` with no fault scheduled.
    pub fn new(inner: B) -> Self {
        FaultyBacking {
            inner,
            writes: 0,
            write_pattern: 0,
            write_fault: WriteFault::Io,
            reads: 0,
            read_pattern: 0,
            read_fault: ReadFault::Io,
            flushes: 0,
            flush_pattern: 0,
        }
    }

    /// Fails the writes whose bit in `pattern` is set with `fault`.
    pub fn fail_writes(mut self, pattern: u64, fault: WriteFault) -> Self {
        self.write_pattern = pattern;
        self.write_fault = fault;
        self
    }

    /// Fails the reads whose bit in `pattern` is set with `fault`.
    pub fn fail_reads(mut self, pattern: u64, fault: ReadFault) -> Self {
        self.read_pattern = pattern;
        self.read_fault = fault;
        self
    }

    /// Fails the flushes whose bit in `pattern` is set with an I/O error.
    pub fn fail_flushes(mut self, pattern: u64) -> Self {
        self.flush_pattern = pattern;
        self
    }

    /// The wrapped store.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    fn due(pattern: u64, count: &mut u64) -> bool {
        let due = pattern >> (*count % 64) & 1 == 1;
        *count += 1;
        due
    }
}

impl<B: Backing> Backing for FaultyBacking<B> {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn slots(&self) -> u64 {
        self.inner.slots()
    }
    fn write(&mut self, slot: u64, data: &[u8; SLOT_SIZE]) -> Result<(), BackingError> {
        if !Self::due(self.write_pattern, &mut self.writes) {
            return self.inner.write(slot, data);
        }
        let torn = |inner: &mut B| {
            let mut half = [0u8; SLOT_SIZE];
            // What was there before survives in the second half (zeros if unknown).
            let _ = inner.read(slot, &mut half);
            half[..SLOT_SIZE / 2].copy_from_slice(&data[..SLOT_SIZE / 2]);
            inner.write(slot, &half)
        };
        match self.write_fault {
            WriteFault::Io => Err(BackingError::Io { code: None }),
            WriteFault::Full => Err(BackingError::Full),
            WriteFault::Short => torn(&mut self.inner).and(Err(BackingError::ShortWrite)),
            WriteFault::Torn => torn(&mut self.inner),
        }
    }
    fn read(&mut self, slot: u64, data: &mut [u8; SLOT_SIZE]) -> Result<(), BackingError> {
        if !Self::due(self.read_pattern, &mut self.reads) {
            return self.inner.read(slot, data);
        }
        match self.read_fault {
            ReadFault::Io => Err(BackingError::Io { code: None }),
            ReadFault::Corrupt => {
                self.inner.read(slot, data)?;
                data[(slot.wrapping_mul(7).wrapping_add(self.reads) % SLOT_SIZE as u64) as usize] ^= 0x10;
                Ok(())
            }
        }
    }
    fn flush(&mut self) -> Result<(), BackingError> {
        if Self::due(self.flush_pattern, &mut self.flushes) {
            return Err(BackingError::Io { code: None });
        }
        self.inner.flush()
    }
}

/// The checksum of a slot's used bytes, seeded with the key and slot so that a slot written
/// for another key or another slot does not match: a 64-bit multiply-rotate mix over u64
/// words, folded to 32 bits.
pub(crate) fn checksum(key: u64, slot: u64, bytes: &[u8]) -> u32 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (key ^ slot.rotate_left(32) ^ bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^= h >> 32;
    h = h.wrapping_mul(K);
    (h >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_sees_keys_slots_and_every_half() {
        let data = [0x5Au8; 4096];
        let base = checksum(1, 2, &data);
        assert_ne!(base, checksum(2, 2, &data));
        assert_ne!(base, checksum(1, 3, &data));
        assert_ne!(base, checksum(1, 2, &data[..4095]));
        let mut torn = data;
        torn[3000] = 0;
        assert_ne!(base, checksum(1, 2, &torn));
    }

    #[test]
    fn checksum_sees_every_bit_and_overlapping_seeds() {
        // 67 bytes: eight words and a remainder of three bytes, each mixed on its own.
        let zeros = [0u8; 67];
        let base = checksum(7, 3, &zeros);
        for bit in 0..zeros.len() * 8 {
            let mut one = zeros;
            one[bit / 8] = 1 << (bit % 8);
            assert_ne!(base, checksum(7, 3, &one), "bit {bit}");
        }
        // Seeds whose bits overlap: the slot rotated onto the key's high half, the length
        // onto the key's low bits.
        assert_ne!(checksum(1 << 32, 1, &zeros), checksum(1 << 32, 0, &zeros));
        assert_ne!(checksum(64, 0, &zeros), checksum(0, 0, &zeros));
    }

    #[test]
    fn names_errors_and_fault_patterns() {
        assert_eq!(
            (MemBacking::new(1).name(), FaultyBacking::new(MemBacking::new(1)).name()),
            ("memory", "faulty")
        );
        let all = [
            BackingError::Io { code: Some(5) },
            BackingError::Io { code: None },
            BackingError::ShortWrite,
            BackingError::ShortRead,
            BackingError::Full,
            BackingError::OutOfRange,
            BackingError::Checksum,
            BackingError::Unsupported,
        ];
        let texts: alloc::vec::Vec<_> = all.iter().map(alloc::string::ToString::to_string).collect();
        assert!(texts[0].contains("errno 5"), "{texts:?}");
        for (i, t) in texts.iter().enumerate() {
            assert!(!t.is_empty() && !texts[..i].contains(t), "{texts:?}");
        }
        // Pattern bits in order: the second write fails, the first and third do not.
        let mut b = FaultyBacking::new(MemBacking::new(1)).fail_writes(0b010, WriteFault::Io);
        let writes: alloc::vec::Vec<_> = (0..3).map(|_| b.write(0, &[1; SLOT_SIZE]).is_ok()).collect();
        assert_eq!(writes, [true, false, true]);
        // A corrupted read flips one bit of one byte, another byte each time.
        let mut b = FaultyBacking::new(MemBacking::new(1)).fail_reads(u64::MAX, ReadFault::Corrupt);
        b.write(0, &[0xFF; SLOT_SIZE]).unwrap();
        let mut flipped = alloc::vec::Vec::new();
        for _ in 0..2 {
            let mut back = [0; SLOT_SIZE];
            b.read(0, &mut back).unwrap();
            let changed: alloc::vec::Vec<_> = (0..SLOT_SIZE).filter(|&i| back[i] != 0xFF).collect();
            assert_eq!(changed.len(), 1);
            assert_eq!(back[changed[0]], 0xFF ^ 0x10);
            flipped.push(changed[0]);
        }
        assert_ne!(flipped[0], flipped[1]);
        // A boxed backing store forwards flushes.
        let mut boxed = alloc::boxed::Box::new(FaultyBacking::new(MemBacking::new(1)).fail_flushes(1));
        assert!(Backing::flush(&mut boxed).is_err());
    }

    #[test]
    fn faulty_short_write_leaves_half() {
        let mut b = FaultyBacking::new(MemBacking::new(1)).fail_writes(1, WriteFault::Short);
        assert_eq!(b.write(0, &[9; SLOT_SIZE]), Err(BackingError::ShortWrite));
        let mut back = [0; SLOT_SIZE];
        b.read(0, &mut back).unwrap();
        assert_eq!((back[0], back[SLOT_SIZE - 1]), (9, 0));
        assert_eq!(b.read(1, &mut back), Err(BackingError::OutOfRange));
        let mut b = FaultyBacking::new(MemBacking::new(1)).fail_reads(1, ReadFault::Corrupt).fail_flushes(1);
        b.write(0, &[0; SLOT_SIZE]).unwrap();
        b.read(0, &mut back).unwrap();
        assert!(back.iter().any(|&x| x != 0));
        assert!(b.flush().is_err() && b.flush().is_ok());
    }
}
