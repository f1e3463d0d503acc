"""WKdm, byte-exact with Apple XNU's current format (macOS and iOS compressed memory).

Pages are 4096 bytes (x86_64 Macs) or 16384 bytes (Apple arm64). A stream is the normal
form (header, tags, misses, indices, low bits) or the sparse "mostly zero" form.
"""

from ._native import WKDM16K_MAX_COMPRESSED_LEN as MAX_COMPRESSED_LEN_16K
from ._native import WKDM_MAX_COMPRESSED_LEN as MAX_COMPRESSED_LEN
from ._native import DecompressError
from ._native import wkdm_compress as _compress
from ._native import wkdm_decompress as _decompress

__all__ = ["MAX_COMPRESSED_LEN", "MAX_COMPRESSED_LEN_16K", "DecompressError", "compress", "decompress"]


def compress(page: bytes) -> bytes:
    """Compress a 4096- or 16384-byte page into a WKdm stream (every page gets one).

    Raises :class:`ValueError` for any other length.
    """
    return _compress(page)


def decompress(stream: bytes, page_size: int = 4096) -> bytes:
    """Decode a WKdm stream into a page of ``page_size`` bytes (4096 or 16384).

    Raises :class:`DecompressError` (a :class:`ValueError`) with the decoder's reason when
    the stream is truncated, corrupt or followed by extra bytes.
    """
    return _decompress(stream, page_size)
