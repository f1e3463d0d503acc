//! The userfaultfd interface of Linux (`include/uapi/linux/userfaultfd.h`): the ioctls and
//! structures this crate uses, and thin wrappers that return `io::Error`s.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use pagecodec::PAGE_SIZE;

const UFFDIO: u64 = 0xAA;

/// `_IOC(dir, type, nr, size)` of the kernel's `ioctl.h` (x86_64, aarch64 and most others).
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | (UFFDIO << 8) | nr
}
const WRITE_READ: u64 = 3;
const READ: u64 = 2;

#[repr(C)]
#[derive(Default)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Range {
    start: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioRegister {
    range: Range,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioZeropage {
    range: Range,
    mode: u64,
    zeropage: i64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioWriteprotect {
    range: Range,
    mode: u64,
}

/// One message read from the descriptor (`struct uffd_msg`, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct Message {
    pub(crate) event: u8,
    _reserved1: u8,
    _reserved2: u16,
    _reserved3: u32,
    pub(crate) flags: u64,
    pub(crate) address: u64,
    /// The faulting thread's id (`UFFD_FEATURE_THREAD_ID`).
    pub(crate) thread: u32,
    _reserved4: u32,
}

const _: () = assert!(std::mem::size_of::<Message>() == 32);

const UFFD_API: u64 = 0xAA;
const UFFDIO_API: u64 = ioc(WRITE_READ, 0x3F, std::mem::size_of::<UffdioApi>());
const UFFDIO_REGISTER: u64 = ioc(WRITE_READ, 0x00, std::mem::size_of::<UffdioRegister>());
const UFFDIO_UNREGISTER: u64 = ioc(READ, 0x01, std::mem::size_of::<Range>());
const UFFDIO_WAKE: u64 = ioc(READ, 0x02, std::mem::size_of::<Range>());
const UFFDIO_COPY: u64 = ioc(WRITE_READ, 0x03, std::mem::size_of::<UffdioCopy>());
const UFFDIO_ZEROPAGE: u64 = ioc(WRITE_READ, 0x04, std::mem::size_of::<UffdioZeropage>());
const UFFDIO_WRITEPROTECT: u64 = ioc(WRITE_READ, 0x06, std::mem::size_of::<UffdioWriteprotect>());
/// `USERFAULTFD_IOC_NEW` on `/dev/userfaultfd`: `_IO(0xAA, 0x00)`.
const USERFAULTFD_IOC_NEW: u64 = UFFDIO << 8;

const UFFD_FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
const REGISTER_MODE_MISSING: u64 = 1;
const REGISTER_MODE_WP: u64 = 2;
const WRITEPROTECT_MODE_WP: u64 = 1;

/// `uffd_msg.event` of a page fault.
pub(crate) const EVENT_PAGEFAULT: u8 = 0x12;
/// Page-fault flag: the access was a write.
pub(crate) const FLAG_WRITE: u64 = 1;
/// Page-fault flag: the fault came from write protection.
pub(crate) const FLAG_WP: u64 = 2;

fn ioctl<T>(fd: &OwnedFd, request: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY: `arg` is a live, exclusively borrowed `#[repr(C)]` structure of the size the
    // request encodes, which is what the kernel reads and writes for it.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, std::ptr::from_mut(arg)) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// A new userfaultfd (non-blocking, close-on-exec), through `/dev/userfaultfd` or else the
/// system call, with the write-protect fault flag and the faulting thread's id negotiated.
pub(crate) fn open() -> io::Result<OwnedFd> {
    let flags = (libc::O_CLOEXEC | libc::O_NONBLOCK) as libc::c_ulong;
    let fd = open_device(flags).or_else(|device| {
        // SAFETY: the system call takes one integer of flags and returns a descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        if fd < 0 {
            let syscall = io::Error::last_os_error();
            // The device's error says more when it exists but is forbidden.
            Err(if device.kind() == io::ErrorKind::NotFound { syscall } else { device })
        } else {
            // SAFETY: a descriptor the kernel just returned, owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
        }
    })?;
    let features = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_THREAD_ID;
    let mut api = UffdioApi { api: UFFD_API, features, ioctls: 0 };
    ioctl(&fd, UFFDIO_API, &mut api)?;
    Ok(fd)
}

fn open_device(flags: libc::c_ulong) -> io::Result<OwnedFd> {
    let device = std::fs::OpenOptions::new().read(true).write(true).open("/dev/userfaultfd")?;
    let device = OwnedFd::from(device);
    // SAFETY: the request takes its flags by value and returns a new descriptor or -1.
    let fd = unsafe { libc::ioctl(device.as_raw_fd(), USERFAULTFD_IOC_NEW as _, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Registers `start..start + len` for missing-page and write-protect faults.
pub(crate) fn register(fd: &OwnedFd, start: usize, len: usize) -> io::Result<()> {
    let mut reg = UffdioRegister {
        range: Range { start: start as u64, len: len as u64 },
        mode: REGISTER_MODE_MISSING | REGISTER_MODE_WP,
        ioctls: 0,
    };
    ioctl(fd, UFFDIO_REGISTER, &mut reg)
}

pub(crate) fn unregister(fd: &OwnedFd, start: usize, len: usize) -> io::Result<()> {
    let mut range = Range { start: start as u64, len: len as u64 };
    ioctl(fd, UFFDIO_UNREGISTER, &mut range)
}

/// Maps a copy of `src` (`len` bytes, whole pages) at `dst` and wakes the faulting threads.
/// A page there already (`EEXIST`) counts as done: it is woken and skipped.
pub(crate) fn copy(fd: &OwnedFd, dst: usize, src: *const u8, len: usize) -> io::Result<()> {
    fill(fd, dst, len, |off| {
        let mut copy = UffdioCopy {
            dst: (dst + off) as u64,
            src: src.wrapping_add(off) as u64,
            len: (len - off) as u64,
            mode: 0,
            copy: 0,
        };
        let done = ioctl(fd, UFFDIO_COPY, &mut copy);
        (done, copy.copy)
    })
}

/// Maps the zero page over `dst..dst + len` and wakes the faulting threads (`EEXIST` as
/// for [`copy`]).
pub(crate) fn zeropage(fd: &OwnedFd, dst: usize, len: usize) -> io::Result<()> {
    fill(fd, dst, len, |off| {
        let mut zero = UffdioZeropage {
            range: Range { start: (dst + off) as u64, len: (len - off) as u64 },
            mode: 0,
            zeropage: 0,
        };
        let done = ioctl(fd, UFFDIO_ZEROPAGE, &mut zero);
        (done, zero.zeropage)
    })
}

/// Runs a filling ioctl over `dst..dst + len` until every page is mapped. `attempt(off)`
/// fills from `off` and returns the result and the bytes it mapped. The kernel stops a
/// range at a page that exists (`EEXIST`: woken and skipped) or when the address space is
/// changing (`EAGAIN`: retried, a bounded number of times).
fn fill(
    fd: &OwnedFd,
    dst: usize,
    len: usize,
    mut attempt: impl FnMut(usize) -> (io::Result<()>, i64),
) -> io::Result<()> {
    let mut off = 0;
    let mut retries = 0;
    while off < len {
        let (result, mapped) = attempt(off);
        let Err(e) = result else { return Ok(()) };
        let mapped = usize::try_from(mapped).unwrap_or(0).min(len - off);
        off += mapped;
        match e.raw_os_error() {
            Some(libc::EEXIST) => {
                if off < len {
                    wake(fd, dst + off, PAGE_SIZE)?;
                    off += PAGE_SIZE;
                }
            }
            Some(libc::EAGAIN) if retries < 100 => retries += 1,
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Write-protects (`on`) or unprotects `start..start + len`; unprotecting wakes the threads
/// waiting on it.
pub(crate) fn write_protect(fd: &OwnedFd, start: usize, len: usize, on: bool) -> io::Result<()> {
    let mut wp = UffdioWriteprotect {
        range: Range { start: start as u64, len: len as u64 },
        mode: if on { WRITEPROTECT_MODE_WP } else { 0 },
    };
    ioctl(fd, UFFDIO_WRITEPROTECT, &mut wp)
}

/// Wakes the threads waiting on a fault in `start..start + len`; they retry the access.
pub(crate) fn wake(fd: &OwnedFd, start: usize, len: usize) -> io::Result<()> {
    let mut range = Range { start: start as u64, len: len as u64 };
    ioctl(fd, UFFDIO_WAKE, &mut range)
}

/// Sends `SIGBUS` to thread `thread` of this process, as the kernel does to a thread whose
/// fault it cannot resolve: the thread leaves its wait for the fault and takes the signal.
pub(crate) fn signal_bus(thread: u32) -> io::Result<()> {
    // SAFETY: tgkill takes a process id, a thread id and a signal number; a thread id that
    // is not one of this process's threads is refused (ESRCH), nothing else is touched.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), thread as libc::pid_t, libc::SIGBUS) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Reads one message if there is one (`None` when the descriptor has none pending).
pub(crate) fn read_message(fd: &OwnedFd) -> io::Result<Option<Message>> {
    let mut msg = Message::default();
    // SAFETY: `msg` is 32 writable bytes, the size of one `uffd_msg`.
    let n = unsafe { libc::read(fd.as_raw_fd(), std::ptr::from_mut(&mut msg).cast(), 32) };
    if n == 32 {
        return Ok(Some(msg));
    }
    let e = io::Error::last_os_error();
    if n < 0 && e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) }
}
