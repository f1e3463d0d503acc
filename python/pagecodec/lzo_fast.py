"""LZO1X, the fast level: plain LZO1X streams (any LZO1X decoder reads them, ``lzo``'s
included) written in less time than ``lzo``'s, and larger. It looks for matches only at
every fourth position of the page."""

from ._native import DecompressError
from ._native import lzo_decompress as _decompress
from ._native import lzo_fast_compress as _compress

__all__ = ["DecompressError", "compress", "decompress"]


def compress(page: bytes) -> bytes:
    """Compress a 4096-byte ``page`` as LZO1X with the fast level.

    Raises :class:`ValueError` for any other length.
    """
    return _compress(page)


def decompress(stream: bytes, size: int = 4096) -> bytes:
    """Decode an LZO1X (or LZO-RLE) stream that must give exactly ``size`` bytes.

    Raises :class:`DecompressError` (a :class:`ValueError`) with the decoder's reason and
    liblzo2's error code.
    """
    return _decompress(stream, size)
