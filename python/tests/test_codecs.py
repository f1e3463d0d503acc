"""Round trips, errors with the decoder's reason, and hostile input through the bindings."""

import random
import struct

import pytest

import pagecodec
from pagecodec import DecompressError, lzo, lzo_fast, lzo_rle, wkdm

PAGE = 4096


def page_classes(rng: random.Random, size: int = PAGE) -> list[bytes]:
    """Pages as memory holds them: zero, uniform, ramp, sparse, pointers, small integers,
    text, random, and mixes of runs of these."""
    words = size // 8
    base = 0x7F3A_0000_0000 | rng.getrandbits(16) << 16
    pointers = b"".join(
        struct.pack("<Q", rng.choice([0, rng.randrange(100), base + rng.getrandbits(12) * 8])) for _ in range(words)
    )
    sparse = bytearray(size)
    for _ in range(rng.randrange(1, 17)):
        at = rng.randrange(size // 4) * 4
        sparse[at : at + 4] = struct.pack("<I", rng.getrandbits(32) | 1)
    text = (b"compressed memory pages of the swap device " * (size // 40 + 1))[:size]
    pages = [
        bytes(size),
        struct.pack("<Q", rng.getrandbits(64)) * words,
        struct.pack("<I", rng.getrandbits(32)) * (size // 4),
        bytes(range(256)) * (size // 256),
        bytes([rng.randrange(200)]) * size,
        bytes(sparse),
        pointers,
        b"".join(struct.pack("<I", rng.randrange(1000)) for _ in range(size // 4)),
        text,
        rng.randbytes(size),
    ]
    mix = bytearray()
    while len(mix) < size:
        mix += rng.choice(pages)[: 64 * rng.randrange(1, 17)]
    pages.append(bytes(mix[:size]))
    return pages


CODECS = [
    pytest.param(wkdm.compress, wkdm.decompress, id="wkdm"),
    pytest.param(lzo.compress, lzo.decompress, id="lzo"),
    pytest.param(lzo_rle.compress, lzo_rle.decompress, id="lzo-rle"),
    pytest.param(lzo_fast.compress, lzo_fast.decompress, id="lzo-fast"),
]


@pytest.mark.parametrize("compress, decompress", CODECS)
def test_every_page_class_round_trips(compress, decompress):
    rng = random.Random(1)
    for _ in range(8):
        for page in page_classes(rng):
            stream = compress(page)
            assert isinstance(stream, bytes)
            assert decompress(stream) == page


@pytest.mark.parametrize("value", [0, 1, 5, 0x3FF, 0x400, 0xDEADBEEF, 0xFFFFFFFF, 0x7F002C00])
def test_wkdm_16k_pages_round_trip_uniform_ones_too(value):
    rng = random.Random(value)
    pages = page_classes(rng, 16384) + [struct.pack("<I", value) * 4096]
    for page in pages:
        stream = wkdm.compress(page)
        assert len(stream) <= wkdm.MAX_COMPRESSED_LEN_16K
        assert wkdm.decompress(stream, page_size=16384) == page


def test_wkdm_writes_xnus_bytes():
    # The zero page is XNU's empty sparse form; a single word is one (value, offset) entry.
    assert wkdm.compress(bytes(PAGE)) == b"\x21\x43\x00\x00"
    page = bytearray(PAGE)
    page[100:104] = struct.pack("<I", 0xDEADBEEF)
    assert wkdm.compress(bytes(page)) == b"\x21\x43\x00\x00" + struct.pack("<IH", 0xDEADBEEF, 100)


def test_lzo_codecs_read_each_others_streams_and_any_length():
    rng = random.Random(2)
    for page in page_classes(rng):
        assert lzo.decompress(lzo_rle.compress(page)) == page
        assert lzo_rle.decompress(lzo.compress(page)) == page
    for size in [0, 1, 100, 4095, 4097, 65536]:
        data = (b"kernel bytes " * (size // 13 + 1))[:size]
        assert lzo.decompress(lzo.compress(data), size) == data
        assert lzo_rle.decompress(lzo_rle.compress(data), size) == data


def test_the_fast_level_writes_plain_lzo1x_pages_only():
    rng = random.Random(3)
    for page in page_classes(rng):
        assert lzo.decompress(lzo_fast.compress(page)) == page
        assert lzo_rle.decompress(lzo_fast.compress(page)) == page
    with pytest.raises(ValueError, match="a page is 4096 bytes, not 100"):
        lzo_fast.compress(bytes(100))


def test_errors_carry_the_decoders_reason():
    with pytest.raises(DecompressError, match="truncated"):
        wkdm.decompress(b"\x21\x43")
    with pytest.raises(ValueError, match="header offsets out of order"):
        wkdm.decompress(struct.pack("<III", 1, 0, 0))
    with pytest.raises(DecompressError, match="left over"):
        wkdm.decompress(wkdm.compress(bytes(range(256)) * 16) + b"\0")
    with pytest.raises(DecompressError, match="liblzo2 code -4"):
        lzo.decompress(b"\x11\x00")
    with pytest.raises(DecompressError, match="decodes to 1 bytes, not 4096"):
        lzo.decompress(b"\x12A\x11\x00\x00")
    with pytest.raises(DecompressError, match="code -8"):
        lzo_rle.decompress(lzo_rle.compress(bytes(PAGE)) + b"x")
    assert issubclass(DecompressError, ValueError)


def test_bad_arguments_are_value_or_type_errors():
    with pytest.raises(ValueError, match="4096 or 16384"):
        wkdm.compress(bytes(100))
    with pytest.raises(ValueError, match="page_size"):
        wkdm.decompress(b"\x21\x43\x00\x00", page_size=8192)
    with pytest.raises(ValueError, match="limit"):
        lzo.decompress(b"\x11\x00\x00", size=1 << 40)
    with pytest.raises(TypeError):
        wkdm.compress("not bytes")  # type: ignore[arg-type]
    with pytest.raises((TypeError, OverflowError)):
        lzo.decompress(b"", size=-1)


@pytest.mark.parametrize(
    "decompress",
    [
        pytest.param(lambda s: wkdm.decompress(s), id="wkdm"),
        pytest.param(lambda s: wkdm.decompress(s, page_size=16384), id="wkdm16k"),
        pytest.param(lambda s: lzo.decompress(s), id="lzo"),
        pytest.param(lambda s: lzo_rle.decompress(s), id="lzo-rle"),
    ],
)
def test_thousands_of_hostile_streams_raise_or_decode(decompress):
    """Random bytes, header-like bytes and mutations of valid streams: a page or a
    DecompressError, never a crash or another exception."""
    rng = random.Random(3)
    valid = [c(p) for p in page_classes(rng) for c in (wkdm.compress, lzo.compress, lzo_rle.compress)]
    outcomes = {"ok": 0, "error": 0}
    for i in range(HOSTILE_PER_DECODER):
        kind = i % 4
        if kind == 0:
            stream = rng.randbytes(rng.randrange(0, 5000))
        elif kind == 1:
            stream = bytes(rng.randrange(24) for _ in range(rng.randrange(0, 200)))
        else:
            stream = bytearray(rng.choice(valid))
            for _ in range(rng.randrange(1, 5)):
                op = rng.randrange(4)
                if op == 0 and stream:
                    stream[rng.randrange(len(stream))] ^= 1 << rng.randrange(8)
                elif op == 1 and stream:
                    stream[rng.randrange(len(stream))] = rng.randrange(256)
                elif op == 2 and stream:
                    del stream[rng.randrange(len(stream)) :]
                else:
                    stream += rng.randbytes(rng.randrange(1, 16))
            stream = bytes(stream)
        try:
            page = decompress(stream)
        except DecompressError as e:
            assert str(e), "an error says why"
            outcomes["error"] += 1
        else:
            assert len(page) in (4096, 16384)
            outcomes["ok"] += 1
    assert sum(outcomes.values()) == HOSTILE_PER_DECODER
    assert outcomes["error"] > HOSTILE_PER_DECODER // 2


HOSTILE_PER_DECODER = 3000


def test_version():
    assert pagecodec.__version__ == "0.1.0"
