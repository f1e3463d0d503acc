//! Status codes, the per-thread last-error message and the panic guard.

use core::ffi::{CStr, c_char};
use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a `pc_` call returns: `PC_OK` (0) or a negative error code.
///
/// The values are part of the ABI and never change meaning; new codes may be added.
// The variants carry the header's names, so that the two read the same.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PcStatus {
    /// Success.
    PC_OK = 0,
    /// A pointer argument that must not be NULL was NULL.
    PC_ERR_NULL_POINTER = -1,
    /// No codec has this name (see `pc_codec_name_at`).
    PC_ERR_UNKNOWN_CODEC = -2,
    /// The page buffer's length is not the codec's page size (4096; 16384 for `wkdm16k`).
    PC_ERR_PAGE_SIZE = -3,
    /// An argument is out of its documented range (a codec the store cannot use, a
    /// configuration value out of range).
    PC_ERR_INVALID_ARGUMENT = -4,
    /// The page's stream does not fit in the output buffer (the budget); store it raw.
    PC_ERR_INCOMPRESSIBLE = -5,
    /// The stream ends before the page, or a field it announced, is complete.
    PC_ERR_TRUNCATED = -6,
    /// The stream is invalid for the codec's format (`pc_last_error` says which check).
    PC_ERR_CORRUPT = -7,
    /// The stream is well formed but does not decode to exactly one page.
    PC_ERR_WRONG_LENGTH = -8,
    /// The page is complete and input bytes are left over.
    PC_ERR_TRAILING_INPUT = -9,
    /// No page is stored under the key.
    PC_ERR_NOT_FOUND = -10,
    /// The store's memory limit is reached; nothing stored changed.
    PC_ERR_FULL = -11,
    /// The store's page source has no memory left; nothing stored changed.
    PC_ERR_OUT_OF_MEMORY = -12,
    /// A Rust panic was caught at the boundary (a bug in the library; please report it).
    PC_ERR_PANIC = -13,
}

impl PcStatus {
    /// Every code, in the order of the header.
    pub const ALL: [PcStatus; 14] = [
        PcStatus::PC_OK,
        PcStatus::PC_ERR_NULL_POINTER,
        PcStatus::PC_ERR_UNKNOWN_CODEC,
        PcStatus::PC_ERR_PAGE_SIZE,
        PcStatus::PC_ERR_INVALID_ARGUMENT,
        PcStatus::PC_ERR_INCOMPRESSIBLE,
        PcStatus::PC_ERR_TRUNCATED,
        PcStatus::PC_ERR_CORRUPT,
        PcStatus::PC_ERR_WRONG_LENGTH,
        PcStatus::PC_ERR_TRAILING_INPUT,
        PcStatus::PC_ERR_NOT_FOUND,
        PcStatus::PC_ERR_FULL,
        PcStatus::PC_ERR_OUT_OF_MEMORY,
        PcStatus::PC_ERR_PANIC,
    ];

    /// The code's fixed description, NUL-terminated.
    fn message(self) -> &'static CStr {
        match self {
            PcStatus::PC_OK => c"success",
            PcStatus::PC_ERR_NULL_POINTER => c"a required pointer argument is NULL",
            PcStatus::PC_ERR_UNKNOWN_CODEC => c"no codec has this name",
            PcStatus::PC_ERR_PAGE_SIZE => c"the page buffer's length is not the codec's page size",
            PcStatus::PC_ERR_INVALID_ARGUMENT => c"an argument is out of its documented range",
            PcStatus::PC_ERR_INCOMPRESSIBLE => c"the page does not fit in the output budget",
            PcStatus::PC_ERR_TRUNCATED => c"the compressed stream is truncated",
            PcStatus::PC_ERR_CORRUPT => c"the compressed stream is corrupt",
            PcStatus::PC_ERR_WRONG_LENGTH => c"the stream does not decode to exactly one page",
            PcStatus::PC_ERR_TRAILING_INPUT => c"input is left over after the page was decoded",
            PcStatus::PC_ERR_NOT_FOUND => c"no page is stored under this key",
            PcStatus::PC_ERR_FULL => c"the page store is full (memory limit reached)",
            PcStatus::PC_ERR_OUT_OF_MEMORY => c"the page store's page source has no memory left",
            PcStatus::PC_ERR_PANIC => c"internal error: a panic was caught at the C boundary",
        }
    }
}

/// A failed call: its code and the message left for `pc_last_error`.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: PcStatus,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: PcStatus, message: impl Into<String>) -> Self {
        Error { status, message: message.into() }
    }

    /// The code with its fixed description as the message.
    pub(crate) fn plain(status: PcStatus) -> Self {
        Error { status, message: status.message().to_string_lossy().into_owned() }
    }

    /// `PC_ERR_NULL_POINTER` naming the argument.
    pub(crate) fn null(argument: &str) -> Self {
        Error::new(PcStatus::PC_ERR_NULL_POINTER, format!("argument `{argument}` is NULL"))
    }
}

/// The family's decoder errors as codes; the message keeps the decoder's reason.
pub(crate) fn decompress_error(e: pagecodec::DecompressError, message: String) -> Error {
    use pagecodec::DecompressError as D;
    let status = match e {
        D::Truncated => PcStatus::PC_ERR_TRUNCATED,
        D::WrongLength => PcStatus::PC_ERR_WRONG_LENGTH,
        D::TrailingInput => PcStatus::PC_ERR_TRAILING_INPUT,
        // `Corrupt` and any variant added later.
        _ => PcStatus::PC_ERR_CORRUPT,
    };
    Error::new(status, message)
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // A message never holds a NUL; should one appear, it is cut there.
    let message = message.split('\0').next().unwrap_or_default();
    let message = CString::new(message).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the code still reports.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = message);
}

/// Runs an entry point's body: a panic becomes `PC_ERR_PANIC`, an error sets the thread's
/// last-error message.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Error>) -> PcStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => PcStatus::PC_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(_) => {
            set_last_error("internal error: a panic was caught at the C boundary");
            PcStatus::PC_ERR_PANIC
        }
    }
}

/// Runs a body that returns a value: a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        set_last_error("internal error: a panic was caught at the C boundary");
        fallback
    })
}

/// A static description of `status` (NUL-terminated, never freed); `"unknown status
/// code"` for a value that is not a `pc_status`.
///
/// Thread-safe. Takes the code as an `int` so that any value is safe to pass.
#[unsafe(no_mangle)]
pub extern "C" fn pc_strerror(status: i32) -> *const c_char {
    guard_value(c"unknown status code".as_ptr(), || {
        PcStatus::ALL
            .iter()
            .find(|s| **s as i32 == status)
            .map_or(c"unknown status code", |s| s.message())
            .as_ptr()
    })
}

/// The message of the last call that failed on the calling thread (`""` if none has):
/// the decoder's reason for a bad stream, the argument for a NULL pointer.
///
/// Thread-safe: each thread has its own message. The pointer stays valid until the next
/// `pc_` call on the same thread; copy the string to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn pc_last_error() -> *const c_char {
    guard_value(c"".as_ptr(), || LAST_ERROR.try_with(|slot| slot.borrow().as_ptr()).unwrap_or(c"".as_ptr()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: `pc_last_error` returns a NUL-terminated string valid until the next call.
        unsafe { CStr::from_ptr(pc_last_error()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, PcStatus::PC_ERR_PANIC);
        assert!(last().contains("panic"));
        assert_eq!(guard_value(7u32, || panic!("boom")), 7);
    }

    #[test]
    fn errors_leave_their_message_and_success_keeps_it() {
        assert_eq!(guard(|| Err(Error::null("page"))), PcStatus::PC_ERR_NULL_POINTER);
        assert_eq!(last(), "argument `page` is NULL");
        assert_eq!(guard(|| Ok(())), PcStatus::PC_OK);
        assert_eq!(last(), "argument `page` is NULL");
        set_last_error("cut\0here");
        assert_eq!(last(), "cut");
    }

    #[test]
    fn every_code_has_a_distinct_description() {
        let mut seen = std::collections::HashSet::new();
        for s in PcStatus::ALL {
            // SAFETY: `pc_strerror` returns a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr(pc_strerror(s as i32)) };
            assert!(seen.insert(text.to_owned()), "{s:?}");
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(pc_strerror(12345)) };
        assert_eq!(unknown, c"unknown status code");
    }
}
