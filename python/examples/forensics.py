"""Decode a WKdm-compressed page as a memory-forensics tool does.

    python forensics.py [STREAM_FILE] [--page-size 4096|16384] [--offset N] [--length N]

STREAM_FILE holds a WKdm stream as found in a compressor segment of a macOS memory image
(or anywhere else): the stream starts at --offset (default 0) and its length is --length,
or, by default, read from the stream itself (the normal form's header says it; the sparse
form's length is guessed by trying each whole number of entries). Without a file, a
built-in sample stream is decoded. Prints the stream's form, a hex dump of the page's
non-zero lines, and the printable strings in it.
"""

import argparse
import string
import struct
import sys

from pagecodec import DecompressError, wkdm

SPARSE_MAGIC = 0x4321


def sample_stream() -> bytes:
    """A page as a process heap holds it (pointers, small integers, a string), compressed."""
    page = bytearray(4096)
    for i in range(0, 2048, 16):
        page[i : i + 16] = struct.pack("<QQ", 0x00007F8A_3C00_1000 + 32 * i, i // 16)
    secret = b"user=alice token=5f1e2d3c4b5a69788796a5b4"
    page[2048 : 2048 + len(secret)] = secret
    return wkdm.compress(bytes(page))


def stream_at(data: bytes, offset: int, length: "int | None", page_size: int) -> bytes:
    """The stream starting at `offset`: `length` bytes, or as long as its header says."""
    if length is not None:
        return data[offset : offset + length]
    if len(data) - offset < 4:
        raise DecompressError("fewer than 4 bytes at the offset")
    (word0,) = struct.unpack_from("<I", data, offset)
    if word0 == SPARSE_MAGIC:
        # The sparse form has no length field: the longest whole number of 6-byte entries
        # that decodes is the stream.
        entries = (min(len(data) - offset, 4 + 6 * (page_size // 4)) - 4) // 6
        for n in range(entries, -1, -1):
            candidate = data[offset : offset + 4 + 6 * n]
            try:
                wkdm.decompress(candidate, page_size)
                return candidate
            except DecompressError:
                continue
        raise DecompressError("no sparse-form length decodes")
    if len(data) - offset < 12:
        raise DecompressError("fewer than 12 bytes for a normal-form header")
    words = struct.unpack_from("<III", data, offset)[2]
    return data[offset : offset + 4 * words]


def strings(page: bytes, minimum: int = 6) -> "list[tuple[int, str]]":
    printable = set(string.printable.encode()) - set(b"\t\n\r\x0b\x0c")
    found, start = [], None
    for i, b in enumerate(page + b"\0"):
        if b in printable:
            start = i if start is None else start
        else:
            if start is not None and i - start >= minimum:
                found.append((start, page[start:i].decode("ascii")))
            start = None
    return found


def main(argv: "list[str]") -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", help="a file holding a WKdm stream (default: a built-in sample)")
    parser.add_argument("--page-size", type=int, default=4096, choices=[4096, 16384])
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--length", type=int)
    args = parser.parse_args(argv)

    if args.file:
        with open(args.file, "rb") as f:
            data = f.read()
    else:
        data = sample_stream()
    try:
        stream = stream_at(data, args.offset, args.length, args.page_size)
        page = wkdm.decompress(stream, page_size=args.page_size)
    except DecompressError as e:
        print(f"not a WKdm stream at offset {args.offset}: {e}", file=sys.stderr)
        return 1

    (word0,) = struct.unpack_from("<I", stream)
    form = "sparse" if word0 == SPARSE_MAGIC else "normal"
    print(f"{form} form, {len(stream)} bytes -> {len(page)}-byte page ({len(page) / len(stream):.2f}x)")
    zero_lines = 0
    for at in range(0, len(page), 16):
        line = page[at : at + 16]
        if not any(line):
            zero_lines += 1
            continue
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in line)
        print(f"{at:06x}  {line.hex(' ')}  {text}")
    print(f"({zero_lines} all-zero lines not shown)")
    for at, s in strings(page):
        print(f"string at {at:#06x}: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
