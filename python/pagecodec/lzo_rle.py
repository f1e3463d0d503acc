"""LZO-RLE: zram's default format since Linux 5.1, byte-exact with the kernel's
``lzorle1x_1_compress``. Its decoder also reads plain LZO1X streams."""

from ._native import DecompressError
from ._native import lzo_decompress as _decompress
from ._native import lzo_rle_compress as _compress

__all__ = ["DecompressError", "compress", "decompress"]


def compress(data: bytes) -> bytes:
    """Compress ``data`` (any length) as LZO-RLE, the kernel's exact bytes."""
    return _compress(data)


def decompress(stream: bytes, size: int = 4096) -> bytes:
    """Decode an LZO-RLE (or LZO1X) stream that must give exactly ``size`` bytes.

    Raises :class:`DecompressError` (a :class:`ValueError`) with the decoder's reason.
    """
    return _decompress(stream, size)
