"""Page codecs of the pagecodec family on ``bytes``: WKdm (Apple XNU's format), LZO1X (with a
fast level) and LZO-RLE (the Linux kernel's, zram's default), in Rust, safe on any input.

>>> from pagecodec import wkdm
>>> page = bytes(range(256)) * 16
>>> wkdm.decompress(wkdm.compress(page)) == page
True

Every decoder raises :class:`DecompressError` (a :class:`ValueError`) carrying the
decoder's reason when a stream does not decode; no input crashes the interpreter.
"""

from . import lzo, lzo_fast, lzo_rle, wkdm
from ._native import DecompressError, __version__

__all__ = ["DecompressError", "__version__", "lzo", "lzo_fast", "lzo_rle", "wkdm"]
