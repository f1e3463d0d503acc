//! Beyond RAM: idle selection, recompression and writeback types, and the backing tier.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::backing::{Backing, BackingError, SLOT_SIZE, checksum};
use crate::table::{Entry, Kind, TIME_MASK};
use crate::{BdStat, EntryCodec};

/// Which stored pages a [`recompress`](crate::PageStore::recompress) or
/// [`writeback`](crate::PageStore::writeback) considers (zram's `type=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Selection {
    /// Pages marked by [`mark_idle`](crate::PageStore::mark_idle) and not stored or loaded
    /// since.
    Idle,
    /// Pages not stored or loaded for at least this long on the configured
    /// [`Clock`](crate::Clock) (none without a clock).
    IdleFor(u64),
    /// Pages kept raw in memory (their stream was over the huge threshold).
    Huge,
    /// Pages a secondary codec could not shrink (zram's `incompressible`).
    Incompressible,
    /// The page under this key only.
    Key(u64),
    /// Every page.
    All,
}

impl Selection {
    /// Whether `entry` under `key` is selected at time `now`.
    pub(crate) fn matches(self, key: u64, entry: Entry, now: Option<u64>) -> bool {
        match self {
            Selection::Idle => entry.idle(),
            Selection::IdleFor(age) => {
                now.is_some_and(|now| now.wrapping_sub(entry.time()) & TIME_MASK >= age)
            }
            Selection::Huge => entry.kind() == Some(Kind::Huge),
            Selection::Incompressible => entry.incompressible(),
            Selection::Key(k) => k == key,
            Selection::All => true,
        }
    }

    /// The only key this selection can match, if it names one.
    pub(crate) fn key(self) -> Option<u64> {
        match self {
            Selection::Key(k) => Some(k),
            _ => None,
        }
    }
}

/// Why a tier operation could not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TierError {
    /// Codec slots are 1, 2 and 3 (0 is the primary codec, set at construction).
    BadSlot(u8),
    /// The slot has no codec.
    NoCodec(u8),
    /// The slot (or the backing store) is already set; it cannot be replaced, since stored
    /// pages may depend on it.
    InUse(u8),
    /// No backing store is attached.
    NoBacking,
}

impl fmt::Display for TierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TierError::BadSlot(s) => write!(f, "codec slot {s} is not a secondary slot (1-3)"),
            TierError::NoCodec(s) => write!(f, "codec slot {s} has no codec"),
            TierError::InUse(s) => write!(f, "codec slot {s} (or the backing store) is already set"),
            TierError::NoBacking => f.write_str("no backing store attached"),
        }
    }
}

impl core::error::Error for TierError {}

/// What a [`recompress`](crate::PageStore::recompress) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecompressReport {
    /// Pages handed to the secondary codec.
    pub attempted: u64,
    /// Pages whose smaller stream replaced the old one.
    pub recompressed: u64,
    /// Of those, pages that were huge before.
    pub left_huge: u64,
    /// Stream bytes of the replaced pages before.
    pub bytes_before: u64,
    /// Their stream bytes after.
    pub bytes_after: u64,
    /// Pages left as they were because their old stream did not decode or the new one
    /// could not be allocated.
    pub failed: u64,
    /// Time spent (decode + compress of every attempt), in the store's time unit.
    pub time: u64,
}

impl RecompressReport {
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn add(&mut self, o: &RecompressReport) {
        self.attempted += o.attempted;
        self.recompressed += o.recompressed;
        self.left_huge += o.left_huge;
        self.bytes_before += o.bytes_before;
        self.bytes_after += o.bytes_after;
        self.failed += o.failed;
        self.time += o.time;
    }
}

/// What a [`writeback`](crate::PageStore::writeback) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WritebackReport {
    /// Pages now on the backing store (their memory freed).
    pub written: u64,
    /// Batches committed (one flush each).
    pub batches: u64,
    /// Pages whose write, flush or verification failed: still in memory, intact.
    pub failed: u64,
    /// The error that stopped the writeback, if one did.
    pub error: Option<BackingError>,
}

/// How pages are written back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BackingConfig {
    /// Write the decompressed page instead of the compressed stream (loads then need no
    /// decompression; zram's choice). Default: the stream.
    pub pages: bool,
    /// Read every slot of a batch back and check it before committing the batch, so a
    /// silently torn write leaves the page in memory. Default: off.
    pub verify: bool,
}

impl BackingConfig {
    /// Sets [`pages`](Self::pages).
    pub const fn with_pages(mut self, on: bool) -> Self {
        self.pages = on;
        self
    }
    /// Sets [`verify`](Self::verify).
    pub const fn with_verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }
}

/// A boxed backing store that can move between threads.
pub type SendBacking = Box<dyn Backing + Send>;

/// A slot-sized buffer aligned for direct I/O.
#[repr(C, align(4096))]
pub(crate) struct Block(pub(crate) [u8; SLOT_SIZE]);

/// A backing store with its slot allocator, buffer and counters.
pub(crate) struct Tier {
    backing: SendBacking,
    pub(crate) config: BackingConfig,
    capacity: u64,
    next: u64,
    free: Vec<u32>,
    /// The checksum of what each slot holds, by slot (kept here rather than in the entries,
    /// which are 8 bytes).
    sums: Vec<u32>,
    buf: Box<Block>,
    pub(crate) stat: BdStat,
}

impl Tier {
    pub(crate) fn new(backing: SendBacking, config: BackingConfig) -> Self {
        // Slot numbers are kept in 32 bits of the entry.
        let capacity = backing.slots().min(u64::from(u32::MAX) + 1);
        Tier {
            backing,
            config,
            capacity,
            next: 0,
            free: Vec::new(),
            sums: Vec::new(),
            buf: Box::new(Block([0; SLOT_SIZE])),
            stat: BdStat { capacity, ..BdStat::default() },
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        self.backing.name()
    }

    /// A free slot: the most recently freed one, else the next never used.
    pub(crate) fn alloc_slot(&mut self) -> Result<u32, BackingError> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None if self.next < self.capacity => {
                self.next += 1;
                (self.next - 1) as u32
            }
            None => return Err(BackingError::Full),
        };
        self.stat.slots_used += 1;
        Ok(slot)
    }

    pub(crate) fn release(&mut self, slot: u32) {
        self.free.push(slot);
        self.stat.slots_used -= 1;
    }

    /// Writes `bytes` (at most a slot) to `slot` for `key`, keeping their checksum.
    pub(crate) fn write(&mut self, key: u64, slot: u32, bytes: &[u8]) -> Result<(), BackingError> {
        let len = bytes.len().min(SLOT_SIZE);
        self.buf.0[..len].copy_from_slice(&bytes[..len]);
        self.buf.0[len..].fill(0);
        let sum = checksum(key, u64::from(slot), &self.buf.0[..len]);
        match self.backing.write(u64::from(slot), &self.buf.0) {
            Ok(()) => {
                self.stat.writes += 1;
                self.stat.slots_high = self.stat.slots_high.max(u64::from(slot) + 1);
                let i = slot as usize;
                if i >= self.sums.len() {
                    self.sums.resize(i + 1, 0);
                }
                self.sums[i] = sum;
                Ok(())
            }
            Err(e) => {
                self.stat.write_failures += 1;
                Err(e)
            }
        }
    }

    pub(crate) fn flush(&mut self) -> Result<(), BackingError> {
        self.backing.flush().inspect_err(|_| self.stat.write_failures += 1)
    }

    /// Reads `slot` for `key` and checks its first `len` bytes against the checksum kept
    /// when it was written.
    pub(crate) fn read(&mut self, key: u64, slot: u32, len: usize) -> Result<&[u8], BackingError> {
        let sum = self.sums.get(slot as usize).copied().unwrap_or(0);
        if let Err(e) = self.backing.read(u64::from(slot), &mut self.buf.0) {
            self.stat.read_failures += 1;
            return Err(e);
        }
        let len = len.min(SLOT_SIZE);
        if checksum(key, u64::from(slot), &self.buf.0[..len]) != sum {
            self.stat.checksum_failures += 1;
            return Err(BackingError::Checksum);
        }
        self.stat.reads += 1;
        Ok(&self.buf.0[..len])
    }

    pub(crate) fn stat(&self) -> BdStat {
        self.stat
    }
}

/// The codecs an operation may need, by slot (0 = primary).
pub(crate) trait Codecs {
    fn codec(&mut self, slot: u8) -> Option<&mut dyn EntryCodec>;
}
