"""LZO1X: liblzo2's and the Linux kernel's format (zram's ``lzo``).

The decoder reads every LZO1X instruction form and LZO-RLE streams too.
"""

from ._native import DecompressError
from ._native import lzo_compress as _compress
from ._native import lzo_decompress as _decompress

__all__ = ["DecompressError", "compress", "decompress"]


def compress(data: bytes) -> bytes:
    """Compress ``data`` as LZO1X: a 4096-byte page with the page-tuned compressor, any
    other length with the kernel's ``lzo1x_1_compress`` (its exact bytes)."""
    return _compress(data)


def decompress(stream: bytes, size: int = 4096) -> bytes:
    """Decode an LZO1X (or LZO-RLE) stream that must give exactly ``size`` bytes.

    Raises :class:`DecompressError` (a :class:`ValueError`) with the decoder's reason and
    liblzo2's error code.
    """
    return _decompress(stream, size)
