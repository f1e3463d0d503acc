"""Reference streams of XNU, the Linux kernel and liblzo2: decoded, rewritten byte for byte,
and every prefix and single-bit flip of them decoded or refused with DecompressError."""

from pathlib import Path

import pytest

from pagecodec import DecompressError, lzo, lzo_rle, wkdm

DATA = Path(__file__).resolve().parent / "data"
CASES = ["python_001503", "node_001547"]
STREAMS = [(".xnu-wkdm", wkdm.decompress), (".lzo1x", lzo.decompress), (".lzo-rle", lzo_rle.decompress), (".lzo999", lzo.decompress)]


def test_every_case_is_here():
    found = sorted(p.stem for p in DATA.glob("*.page"))
    assert found == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_reference_streams_decode_and_are_rewritten(case):
    page = (DATA / f"{case}.page").read_bytes()
    for ext, decompress in STREAMS:
        assert decompress((DATA / f"{case}{ext}").read_bytes()) == page, ext
    assert wkdm.compress(page) == (DATA / f"{case}.xnu-wkdm").read_bytes()
    assert lzo_rle.compress(page) == (DATA / f"{case}.lzo-rle").read_bytes()
    assert lzo.decompress((DATA / f"{case}.lzo-rle").read_bytes()) == page


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("ext, decompress", STREAMS, ids=[s[0] for s in STREAMS])
def test_every_prefix_and_bit_flip_decodes_or_raises(case, ext, decompress):
    stream = (DATA / f"{case}{ext}").read_bytes()
    tried = 0
    for cut in range(len(stream)):
        try:
            decompress(stream[:cut])
        except DecompressError:
            pass
        tried += 1
    buf = bytearray(stream)
    for bit in range(8 * len(stream)):
        buf[bit // 8] ^= 1 << (bit % 8)
        try:
            assert len(decompress(bytes(buf))) == 4096
        except DecompressError:
            pass
        buf[bit // 8] ^= 1 << (bit % 8)
        tried += 1
    assert tried == 9 * len(stream)
