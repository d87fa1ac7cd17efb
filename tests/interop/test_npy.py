"""bcolzx.interop.npy: carrays and ctables streamed to and from .npy files."""

import importlib
import os

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import CorruptDataError, UnsupportedFormatError
from bcolzx.interop import npy
from bcolzx.interop.npy import from_npy, npy_header, to_npy


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 KiB, so that a few thousand rows take many blocks."""
    monkeypatch.setattr(npy, "BLOCK_BYTES", 4096)


def _version(path):
    with open(path, "rb") as f:
        return np.lib.format.read_magic(f)


@pytest.mark.parametrize("dtype, names, version", [
    ("f8", None, (1, 0)),
    (None, [f"field_{i:04d}_{'x' * 90}" for i in range(700)], (2, 0)),
    (None, ["prix", "価格"], (3, 0)),
])
def test_header_versions_numpy_reads(tmp_path, dtype, names, version):
    dt = np.dtype(dtype) if names is None else np.dtype([(n, "i2") for n in names])
    header = npy_header(dt, (3,))
    assert len(header) % 64 == 0
    path = tmp_path / "h.npy"
    want = np.zeros(3, dt)
    with open(path, "wb") as f:
        f.write(header + want.tobytes())
    assert _version(path) == version
    got = np.load(path, max_header_size=1 << 20)
    assert got.dtype == dt and got.shape == (3,) and got.tobytes() == want.tobytes()
    back = from_npy(path)  # a ctable (in memory) of as many columns, for structured data
    assert getattr(back, "names", None) == (list(names) if names else None)
    assert back[:].tobytes() == want.tobytes()


@pytest.mark.parametrize("data", [
    np.linspace(-1, 1, 10_007),
    np.arange(3 * 2501, dtype="i4").reshape(2501, 3),
    np.array(["2024-01-01T00:00:00"], "M8[s]").repeat(999) + np.arange(999),
    np.array([b"ab", b"cde", b""] * 700, "S3"),
    np.array(["x", "\u00e9\u00e8", "\u4fa1"] * 500, "U2"),
    np.zeros((0, 4), "f4"),
])
def test_carray_round_trip(tmp_path, small_blocks, data):
    ca = bcolzx.carray(data, chunklen=256)
    path = tmp_path / "a.npy"
    seen = []
    to_npy(ca, path, progress=seen.append)
    got = np.load(path)
    assert got.dtype == data.dtype and got.shape == data.shape
    assert got.tobytes() == data.tobytes()
    assert sum(seen) == data.nbytes and (len(seen) > 1 or data.nbytes <= 4096)
    back = from_npy(path, rootdir=str(tmp_path / "back"), chunklen=100)
    assert back.chunklen == 100 and back.shape == data.shape
    assert back[:].tobytes() == data.tobytes()
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "back"]  # no temporary file left


def test_ctable_is_a_structured_array_and_back(tmp_path, small_blocks):
    rng = np.random.default_rng(5)
    ct = bcolzx.ctable([np.arange(5000), rng.random(5000), np.ones((5000, 2), "u1")],
                       names=["i", "f", "pair"])
    path = tmp_path / "t.npy"
    to_npy(ct, path)
    got = np.load(path)
    assert got.dtype == ct.dtype and got.tobytes() == ct[:].tobytes()
    back = from_npy(path, rootdir=str(tmp_path / "t"), cparams={"cname": "zstd"})
    assert isinstance(back, bcolzx.ctable) and back.names == ["i", "f", "pair"]
    assert back.cols["pair"].shape == (5000, 2) and back.cols["f"].cparams.cname == "zstd"
    assert back[:].tobytes() == ct[:].tobytes()
    assert bcolzx.open(str(tmp_path / "t"), mode="r")[:].tobytes() == ct[:].tobytes()


def test_fortran_order_and_memory_map(tmp_path, small_blocks):
    data = np.asfortranarray(np.arange(6000, dtype="i8").reshape(2000, 3))
    np.save(tmp_path / "f.npy", data)
    seen = []
    back = from_npy(tmp_path / "f.npy", progress=seen.append)
    assert np.array_equal(back[:], data) and sum(seen) == data.nbytes and len(seen) > 1


def test_replaces_an_existing_file_atomically(tmp_path, monkeypatch):
    path = tmp_path / "a.npy"
    path.write_bytes(b"old")
    ca = bcolzx.arange(50_000, chunklen=1000)

    def broken(cobj, blen=None):
        yield np.arange(10)
        raise CorruptDataError("damaged chunk", chunk=1)

    with monkeypatch.context() as patch:
        patch.setattr(importlib.import_module("bcolzx.carray"), "iterblocks", broken)
        with pytest.raises(CorruptDataError):
            to_npy(ca, path)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["a.npy"]
    to_npy(ca, path)
    assert np.array_equal(np.load(path), np.arange(50_000))


def test_refusals(tmp_path):
    (tmp_path / "text.npy").write_text("hello")
    with pytest.raises(UnsupportedFormatError, match="not a NumPy .npy file"):
        from_npy(tmp_path / "text.npy")
    np.save(tmp_path / "o.npy", np.array([1, "a"], dtype=object))
    with pytest.raises(UnsupportedFormatError, match="Python objects"):
        from_npy(tmp_path / "o.npy")
    np.save(tmp_path / "s.npy", np.float64(3))
    with pytest.raises(UnsupportedFormatError, match="0-d"):
        from_npy(tmp_path / "s.npy")
    np.save(tmp_path / "r.npy", np.zeros((2, 2), [("a", "i4")]))
    with pytest.raises(UnsupportedFormatError, match="structured"):
        from_npy(tmp_path / "r.npy")
    np.save(tmp_path / "t.npy", np.arange(1000))
    with open(tmp_path / "t.npy", "r+b") as f:
        f.truncate(500)
    with pytest.raises(CorruptDataError, match="t.npy"):
        from_npy(tmp_path / "t.npy")
    with pytest.raises(FileNotFoundError):
        from_npy(tmp_path / "missing.npy")
