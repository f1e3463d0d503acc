//! The C ABI of the page-compression crate family: `libpagecodec.so` and `libpagecodec.a`.
//!
//! Every exported symbol starts with `pc_`; `include/pagecodec.h` declares them (written
//! by hand, checked against this source by `tests/header.rs`). The contracts, error codes,
//! thread-safety and ownership rules are in the header and in `SPEC.md` ("C ABI and
//! Python").
//!
//! Rules every entry point follows:
//!
//! - its body runs inside [`std::panic::catch_unwind`]: no panic crosses the boundary (a
//!   caught panic returns `PC_ERR_PANIC`);
//! - every pointer is checked for NULL before it is used, and every length against what
//!   the call needs: bad arguments are error codes, never crashes;
//! - a failing call leaves a message for its thread ([`pc_last_error`]).

mod codec;
mod error;
mod store;

pub use codec::{
    PcCodec, pc_codec_compress, pc_codec_count, pc_codec_create, pc_codec_decompress, pc_codec_destroy,
    pc_codec_max_compressed_len, pc_codec_name, pc_codec_name_at, pc_codec_page_size,
};
pub use error::{PcStatus, pc_last_error, pc_strerror};
pub use store::{
    PC_TIME_NANOSECONDS, PC_TIME_NONE, PC_TIME_TSC_TICKS, PcCompactReport, PcStore, PcStoreConfig,
    PcStoreStats, PcSummary, pc_store_compact, pc_store_config_default, pc_store_create, pc_store_destroy,
    pc_store_get_stats, pc_store_load, pc_store_remove, pc_store_store,
};

use core::ffi::c_char;

/// The library's version, `major.minor.patch`, as a NUL-terminated string.
static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library's version (`"0.1.0"`): a static NUL-terminated string, never freed.
///
/// Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn pc_version() -> *const c_char {
    VERSION.as_ptr().cast()
}
