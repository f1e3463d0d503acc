//! C liblzo2's documented entry points, from miniLZO 2.10 as `minilzo-rs` compiles it (that
//! crate's own API allocates a `Vec` per call). Shared by pagebench (`peers`) and the aarch64
//! instruction-count harness (`benches/aarch64`), which includes this file by path.

use std::os::raw::{c_int, c_uchar, c_uint, c_ulong, c_void};

unsafe extern "C" {
    /// Compresses `src_len` bytes at `src` into `dst` (room for `src_len + src_len / 16 + 64
    /// + 3` bytes), writes the stream's length to `dst_len`; `wrkmem` holds
    /// [`LZO1X_1_MEM_COMPRESS`] bytes. Returns 0 (`LZO_E_OK`).
    pub fn lzo1x_1_compress(
        src: *const c_uchar,
        src_len: c_ulong,
        dst: *mut c_uchar,
        dst_len: *mut c_ulong,
        wrkmem: *mut c_void,
    ) -> c_int;
    /// Decompresses the stream at `src` into `dst`, whose capacity `dst_len` gives on entry and
    /// which holds the output's length on return; never writes past that capacity. `wrkmem`
    /// is unused. Returns 0 (`LZO_E_OK`) or a negative `LZO_E_*` code.
    pub fn lzo1x_decompress_safe(
        src: *const c_uchar,
        src_len: c_ulong,
        dst: *mut c_uchar,
        dst_len: *mut c_ulong,
        wrkmem: *mut c_void,
    ) -> c_int;
    /// The library's version, `0xMmmP` (major, minor, patch) with 4 bits each of M and P.
    pub fn lzo_version() -> c_uint;
}

/// `LZO1X_1_MEM_COMPRESS`: 16384 dictionary entries of a pointer's size.
pub const LZO1X_1_MEM_COMPRESS: usize = 16384 * size_of::<*const u8>();

/// Makes the linker keep `minilzo-rs`'s static library, whose C functions are called only
/// through the declarations above.
pub fn link() {
    let _ = minilzo_rs::adler32(&[]);
}
