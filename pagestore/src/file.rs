//! A backing store in a file (feature `std`).

extern crate std;

use alloc::boxed::Box;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use crate::backing::{Backing, BackingError, SLOT_SIZE};
use crate::tier::Block;

/// `O_DIRECT` on Linux, by architecture (the flag's value differs).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "x86", target_arch = "riscv64")))]
const O_DIRECT: Option<i32> = Some(0o40000);
#[cfg(all(target_os = "linux", any(target_arch = "aarch64", target_arch = "arm")))]
const O_DIRECT: Option<i32> = Some(0o200000);
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "riscv64",
        target_arch = "aarch64",
        target_arch = "arm"
    )
)))]
const O_DIRECT: Option<i32> = None;

/// Written-back pages in a file: slot `n` at byte `n * 4096`. A file rather than a
/// partition, optionally with `O_DIRECT` (no page cache; Linux), optionally synced on
/// every flush so a committed batch is on the device.
///
/// ```no_run
/// use pagecodec::{Page, Raw};
/// use pagestore::{BackingConfig, FileBacking, PageStore, Selection};
///
/// let mut store = PageStore::new(Raw);
/// let file = FileBacking::create("pages.swap", 1 << 18)?; // up to 1 GiB
/// store.set_backing(Box::new(file), BackingConfig::default())?;
/// store.store(1, &Page::filled(3))?;
/// store.writeback(Selection::All, u64::MAX, 64)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileBacking {
    file: File,
    slots: u64,
    direct: bool,
    sync: bool,
    buf: Box<Block>,
}

impl core::fmt::Debug for Block {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Block")
    }
}

impl FileBacking {
    /// Creates (or truncates) the file at `path` for up to `slots` pages; the file grows as
    /// slots are written.
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn create(path: impl AsRef<Path>, slots: u64) -> io::Result<Self> {
        Self::open(path.as_ref(), slots, false)
    }

    /// As [`create`](Self::create), with `O_DIRECT` (reads and writes bypass the page
    /// cache; Linux).
    ///
    /// # Errors
    ///
    /// The file cannot be created, `ErrorKind::Unsupported` off Linux, or the file system
    /// refuses direct I/O.
    pub fn create_direct(path: impl AsRef<Path>, slots: u64) -> io::Result<Self> {
        Self::open(path.as_ref(), slots, true)
    }

    fn open(path: &Path, slots: u64, direct: bool) -> io::Result<Self> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(true);
        if direct {
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                let flag = O_DIRECT.ok_or_else(|| io::Error::from(io::ErrorKind::Unsupported))?;
                options.custom_flags(flag);
            }
            #[cfg(not(unix))]
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        }
        let file = options.open(path)?;
        Ok(FileBacking { file, slots, direct, sync: false, buf: Box::new(Block([0; SLOT_SIZE])) })
    }

    /// Syncs the file's data on every [`flush`](Backing::flush) (one per writeback batch).
    pub fn with_sync(mut self, on: bool) -> Self {
        self.sync = on;
        self
    }

    /// Whether the file was opened with `O_DIRECT`.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    fn offset(&self, slot: u64) -> Result<u64, BackingError> {
        if slot >= self.slots {
            return Err(BackingError::OutOfRange);
        }
        slot.checked_mul(SLOT_SIZE as u64).ok_or(BackingError::OutOfRange)
    }
}

fn error(e: &io::Error, short: BackingError) -> BackingError {
    match e.kind() {
        io::ErrorKind::WriteZero | io::ErrorKind::UnexpectedEof => short,
        io::ErrorKind::StorageFull => BackingError::Full,
        io::ErrorKind::Unsupported => BackingError::Unsupported,
        _ if e.raw_os_error() == Some(28) => BackingError::Full, // ENOSPC
        _ => BackingError::Io { code: e.raw_os_error() },
    }
}

fn aligned(bytes: &[u8]) -> bool {
    bytes.as_ptr() as usize % SLOT_SIZE == 0
}

#[cfg(unix)]
impl Backing for FileBacking {
    fn name(&self) -> &'static str {
        if self.direct { "file-direct" } else { "file" }
    }

    fn slots(&self) -> u64 {
        self.slots
    }

    fn write(&mut self, slot: u64, data: &[u8; SLOT_SIZE]) -> Result<(), BackingError> {
        use std::os::unix::fs::FileExt;
        let offset = self.offset(slot)?;
        let data: &[u8] = if self.direct && !aligned(data) {
            self.buf.0 = *data;
            &self.buf.0
        } else {
            data
        };
        self.file.write_all_at(data, offset).map_err(|e| error(&e, BackingError::ShortWrite))
    }

    fn read(&mut self, slot: u64, data: &mut [u8; SLOT_SIZE]) -> Result<(), BackingError> {
        use std::os::unix::fs::FileExt;
        let offset = self.offset(slot)?;
        if self.direct && !aligned(data) {
            self.file
                .read_exact_at(&mut self.buf.0, offset)
                .map_err(|e| error(&e, BackingError::ShortRead))?;
            *data = self.buf.0;
            return Ok(());
        }
        self.file.read_exact_at(data, offset).map_err(|e| error(&e, BackingError::ShortRead))
    }

    fn flush(&mut self) -> Result<(), BackingError> {
        if self.sync {
            self.file.sync_data().map_err(|e| error(&e, BackingError::Io { code: None }))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_backing_errors() {
        let kind = |k: io::ErrorKind| error(&io::Error::from(k), BackingError::ShortRead);
        assert_eq!(kind(io::ErrorKind::WriteZero), BackingError::ShortRead);
        assert_eq!(kind(io::ErrorKind::UnexpectedEof), BackingError::ShortRead);
        assert_eq!(kind(io::ErrorKind::StorageFull), BackingError::Full);
        assert_eq!(kind(io::ErrorKind::Unsupported), BackingError::Unsupported);
        let os = |code: i32| error(&io::Error::from_raw_os_error(code), BackingError::ShortWrite);
        assert_eq!(os(28), BackingError::Full, "ENOSPC");
        assert_eq!(os(5), BackingError::Io { code: Some(5) }, "EIO");
        assert_eq!(kind(io::ErrorKind::Other), BackingError::Io { code: None });
    }

    #[test]
    fn slot_buffers_are_aligned_for_direct_io() {
        let block = Box::new(Block([0; SLOT_SIZE]));
        assert!(aligned(&block.0));
        assert!(!aligned(&block.0[1..]));
        assert_eq!(std::format!("{block:?}"), "Block");
    }

    #[test]
    fn slots_round_trip_through_a_file() {
        let path = std::env::temp_dir().join(std::format!("pagestore-file-{}.slots", std::process::id()));
        let mut f = FileBacking::create(&path, 4).unwrap().with_sync(true);
        f.write(3, &[0xAB; SLOT_SIZE]).unwrap();
        f.write(1, &[0xCD; SLOT_SIZE]).unwrap();
        f.flush().unwrap();
        let mut back = [0; SLOT_SIZE];
        f.read(3, &mut back).unwrap();
        assert_eq!(back, [0xAB; SLOT_SIZE]);
        f.read(1, &mut back).unwrap();
        assert_eq!(back, [0xCD; SLOT_SIZE]);
        assert_eq!(f.write(4, &back), Err(BackingError::OutOfRange));
        assert_eq!((f.name(), f.slots(), f.is_direct()), ("file", 4, false));
        drop(f);
        std::fs::remove_file(&path).unwrap();
    }

    /// A file that cannot be synced: Linux's `fdatasync` refuses a character device with
    /// `EINVAL`, which `flush` reports only when syncing is on.
    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(miri, ignore = "Miri does not run fdatasync on a device")]
    fn a_failing_sync_fails_the_flush() {
        let mut f = FileBacking::create("/dev/null", 4).unwrap();
        assert_eq!(f.flush(), Ok(()), "syncing is off by default");
        let mut f = f.with_sync(true);
        assert_eq!(f.flush(), Err(BackingError::Io { code: Some(22) }));
    }
}
