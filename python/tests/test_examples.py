"""The examples run: the forensics decoder on its sample and on a file, the timing script."""

import subprocess
import sys
from pathlib import Path

from pagecodec import wkdm

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_forensics_decodes_its_sample():
    out = run(str(EXAMPLES / "forensics.py"))
    assert out.returncode == 0, out.stderr
    assert "normal form" in out.stdout
    assert "user=alice token=5f1e2d3c4b5a69788796a5b4" in out.stdout


def test_forensics_finds_a_stream_inside_an_image(tmp_path):
    page = bytearray(4096)
    page[1000:1016] = b"secret-in-a-page"
    stream = wkdm.compress(bytes(page))
    image = tmp_path / "image.bin"
    image.write_bytes(b"\xAA" * 123 + stream + b"\x55" * 77)
    out = run(str(EXAMPLES / "forensics.py"), str(image), "--offset", "123")
    assert out.returncode == 0, out.stderr
    assert "sparse form" in out.stdout and "secret-in-a-page" in out.stdout
    bad = run(str(EXAMPLES / "forensics.py"), str(image), "--offset", "0")
    assert bad.returncode == 1 and "not a WKdm stream" in bad.stderr


def test_boundary_timing_runs():
    out = run(str(EXAMPLES / "boundary.py"), "--pages", "50")
    assert out.returncode == 0, out.stderr
    assert "wkdm" in out.stdout and "lzo-rle" in out.stdout
