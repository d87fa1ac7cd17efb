"""bcolzx.interop.b2frame: carray <-> Blosc2 contiguous frames, chunks copied as they are."""

import doctest
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

blosc2 = pytest.importorskip("blosc2", reason="Blosc2 frames need python-blosc2: "
                                              "pip install 'bcolzx[blosc2]'")

import bcolzx  # noqa: E402
from bcolzx import carray  # noqa: E402
from bcolzx.errors import ChecksumError, UnsupportedFormatError  # noqa: E402
from bcolzx.interop import b2frame  # noqa: E402
from bcolzx.interop.b2frame import special_kind  # noqa: E402

from .recorder import Recorder, small_blocks  # noqa: E402

LEGACY = Path(__file__).parents[1] / "data" / "legacy_bcolz"


@pytest.fixture(params=["memory", "disk"])
def where(request, tmp_path):
    """Constructor keywords for the carray read back: in memory or on disk."""
    return {} if request.param == "memory" else {"rootdir": str(tmp_path / "back")}


def _same(got: carray, want) -> None:
    want = want[:] if isinstance(want, carray) else np.asarray(want)
    got = got[:]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # bytewise: NaN and NaT too


def _stored(ca: carray) -> list:
    eng = ca._engine
    return eng.store.get(0, eng.store.nchunks)


def _mixed(n=1000):
    """Floats with a zero, a NaN and a constant chunk (chunklen 100) and a leftover."""
    x = np.random.default_rng(0).random(n)
    x[100:200] = 0
    x[200:300] = np.nan
    x[300:400] = 2.5
    return x


# -- writing -----------------------------------------------------------------------------


def test_frame_opens_in_python_blosc2_as_an_ndarray_with_the_same_content(tmp_path):
    ca = carray(_mixed(), chunklen=100, dflt=-1.0)
    ca.attrs["unit"] = "m"
    ca.attrs["calib"] = {"gain": [1, 2]}
    path = tmp_path / "a.b2frame"
    ca.to_b2frame(path)
    arr = blosc2.open(str(path))
    assert isinstance(arr, blosc2.NDArray)
    assert arr.dtype == ca.dtype and arr.shape == ca.shape and arr.chunks == (100,)
    assert arr[:].tobytes() == ca[:].tobytes()
    assert arr[437] == ca[437] and arr[995:].tobytes() == ca[995:].tobytes()
    assert arr.vlmeta["unit"] == "m" and arr.vlmeta["calib"] == {"gain": [1, 2]}


def test_stored_chunks_go_into_the_frame_unchanged(tmp_path):
    ca = carray(_mixed(), chunklen=100, rootdir=str(tmp_path / "src"))
    ca.to_b2frame(tmp_path / "a.b2frame")
    arr = blosc2.open(str(tmp_path / "a.b2frame"))  # (its schunk lives as long as it)
    schunk = arr.schunk
    stored = _stored(ca)
    data = [i for i, e in enumerate(stored[:ca.nchunks]) if isinstance(e, (bytes, memoryview))]
    assert len(data) == ca.nchunks - 3
    for i in data:
        assert schunk.get_chunk(i) == bytes(stored[i])
    # The zero, NaN and constant chunks become the frame's special chunks.
    assert [special_kind(schunk.get_chunk(i)) for i in (1, 2, 3)] == [1, 2, 3]


def test_multidimensional_rows_fitting_the_blocks_make_an_ndarray(tmp_path):
    ca = carray(np.arange(3000, dtype="i4").reshape(750, 4), chunklen=128)
    ca.to_b2frame(tmp_path / "a.b2frame")
    arr = blosc2.open(str(tmp_path / "a.b2frame"))
    assert isinstance(arr, blosc2.NDArray) and arr.shape == (750, 4)
    assert arr.chunks == (128, 4) and arr.blocks[1:] == (4,)
    assert arr[:].tobytes() == ca[:].tobytes()
    assert arr[700:705, 2].tolist() == ca[700:705, 2].tolist()


def test_rows_not_fitting_the_blocks_make_an_schunk_unless_asked(tmp_path):
    # 24-byte rows in 32 KiB blocks: the stored chunks cannot be NDArray chunks.
    ca = carray(np.arange(30000.0).reshape(10000, 3), chunklen=4000)
    ca.to_b2frame(tmp_path / "s.b2frame")
    sch = blosc2.open(str(tmp_path / "s.b2frame"))
    assert isinstance(sch, blosc2.SChunk)
    assert sch.vlmeta["bcolzx"]["shape"] == [10000, 3]
    assert np.frombuffer(sch[:], dtype="f8").tobytes() == ca[:].tobytes()
    ca.to_b2frame(tmp_path / "n.b2frame", layout="ndarray")
    arr = blosc2.open(str(tmp_path / "n.b2frame"))
    assert isinstance(arr, blosc2.NDArray) and arr.chunks == (4000, 3)
    assert arr[:].tobytes() == ca[:].tobytes()
    for name in ("s", "n"):
        _same(bcolzx.from_b2frame(tmp_path / f"{name}.b2frame"), ca)


def test_legacy_bcolz_chunks_are_encoded_again(tmp_path):
    ca = bcolzx.open(str(LEGACY / "ca_float64_attrs"), mode="r")
    ca.to_b2frame(tmp_path / "a.b2frame")
    assert blosc2.open(str(tmp_path / "a.b2frame"))[:].tobytes() == ca[:].tobytes()
    back = bcolzx.from_b2frame(tmp_path / "a.b2frame")
    _same(back, ca)
    assert back.attrs.getall() == ca.attrs.getall()


def test_frame_is_replaced_whole_and_mode_x_refuses(tmp_path):
    path = tmp_path / "a.b2frame"
    carray(np.arange(10)).to_b2frame(path)
    carray(np.arange(5.0)).to_b2frame(path)
    assert blosc2.open(str(path))[:].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(FileExistsError):
        carray(np.arange(3)).to_b2frame(path, mode="x")
    assert sorted(os.listdir(tmp_path)) == ["a.b2frame"]


# -- round trips -------------------------------------------------------------------------


CASES = {
    "f8-mixed": (_mixed(), 100),
    "i1": (np.arange(1000, dtype="i1"), 256),
    "bool": (np.arange(777) % 3 == 0, 100),
    "M8-NaT": (np.r_[np.arange(500), [-2**63]].astype("M8[ns]"), 128),
    "U5": (np.array(["", "é", "z€\x00zz", "abcde"] * 100), 64),
    "S3": (np.array([b"", b"ab", b"x\x00y"] * 100), 50),
    "struct": (np.array([(i, i / 2) for i in range(300)], dtype=[("a", "i4"), ("b", "f8")]),
               64),
    "2d": (np.arange(6000, dtype="u2").reshape(1000, 2, 3), 200),
    "big-endian": (np.arange(1000, dtype=">i8"), 128),
    "whole-chunks": (np.arange(1024.0), 256),
    "leftover-only": (np.arange(10.0), 100),
    "empty": (np.empty((0, 3), "f4"), 64),
}


@pytest.mark.parametrize("layout,disk", [("auto", False), ("auto", True), ("ndarray", False),
                                         ("schunk", True)])
@pytest.mark.parametrize("case", list(CASES))
def test_roundtrip_is_exact(tmp_path, case, layout, disk):
    data, chunklen = CASES[case]
    where = {"rootdir": str(tmp_path / "back")} if disk else {}
    ca = carray(data, chunklen=chunklen, dflt=np.zeros((), data.dtype),
                cparams=bcolzx.cparams(clevel=7, cname="zstd"))
    ca.attrs["case"] = case
    path = tmp_path / "a.b2frame"
    ca.to_b2frame(path, layout=layout)
    if layout != "schunk":
        opened = blosc2.open(str(path))
        assert isinstance(opened, blosc2.NDArray) or layout == "auto"
        if isinstance(opened, blosc2.NDArray):
            assert opened.shape == data.shape and opened[:].tobytes() == data.tobytes()
    back = bcolzx.from_b2frame(path, **where)
    _same(back, data)
    assert back.chunklen == chunklen and back.cparams == ca.cparams
    assert back.attrs["case"] == case
    if where:
        _same(carray(rootdir=where["rootdir"], mode="r"), data)
        assert bcolzx.verify(where["rootdir"]).ok


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 700), chunklen=st.integers(1, 160),
       dtype=st.sampled_from(["u1", "i2", "f4", "f8", "c16", "S3", "M8[s]"]),
       runs=st.lists(st.tuples(st.integers(0, 700), st.integers(1, 300)), max_size=3),
       layout=st.sampled_from(["auto", "ndarray", "schunk"]))
def test_any_geometry_roundtrips_through_python_blosc2(tmp_path, n, chunklen, dtype, runs,
                                                       layout):
    data = (np.arange(n) * 7919 % 251).astype("u1").astype(dtype)
    for start, length in runs:  # constant runs make special chunks
        data[start:start + length] = data[start] if start < n else data[:0]
    ca = carray(data, chunklen=chunklen)
    path = tmp_path / f"h-{n}-{chunklen}-{layout}.b2frame"
    ca.to_b2frame(path, layout=layout)
    opened = blosc2.open(str(path))
    got = opened[:] if isinstance(opened, blosc2.NDArray) else \
        np.frombuffer(opened[:], dtype=data.dtype)
    assert got.tobytes() == data.tobytes()
    _same(bcolzx.from_b2frame(path), data)


def test_dflt_survives(tmp_path):
    ca = carray(np.arange(5.0), dflt=np.nan)
    ca.to_b2frame(tmp_path / "a.b2frame")
    back = bcolzx.from_b2frame(tmp_path / "a.b2frame")
    back.resize(7)
    assert np.isnan(back[5:]).all()


# -- reading -----------------------------------------------------------------------------


def test_import_keeps_the_chunks_and_checksums_them(tmp_path):
    ca = carray(_mixed(), chunklen=100)
    ca.to_b2frame(tmp_path / "a.b2frame")
    arr = blosc2.open(str(tmp_path / "a.b2frame"))
    frame = arr.schunk
    rootdir = str(tmp_path / "back")
    back = bcolzx.from_b2frame(tmp_path / "a.b2frame", rootdir=rootdir)
    stored = _stored(back)
    for i in (0, 4, 9):  # data chunks: the frame's bytes, not compressed again
        assert bytes(stored[i]) == frame.get_chunk(i)
    assert [type(stored[i]).__name__ for i in (1, 2, 3)] == ["Special"] * 3
    assert bcolzx.verify(rootdir).ok
    data = Path(rootdir) / "data" / "__0.bin"
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 0xFF  # the checksum of the last chunk written
    data.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError):
        carray(rootdir=rootdir, mode="r")[:]


def test_python_blosc2_ndarray_imports_taking_its_chunks(tmp_path):
    x = np.linspace(0, 1, 100_000)
    path = str(tmp_path / "x.b2nd")
    arr = blosc2.asarray(x, urlpath=path, mode="w", chunks=(20_000,), blocks=(4_000,))
    arr.vlmeta["source"] = "sensor"
    back = bcolzx.from_b2frame(path)
    _same(back, x)
    assert back.chunklen == 20_000 and back.attrs["source"] == "sensor"
    stored = _stored(back)
    assert all(bytes(stored[i]) == arr.schunk.get_chunk(i) for i in range(5))


@pytest.mark.parametrize("shape,chunks,blocks", [
    ((1000,), (300,), (100,)),          # padded last chunk: its rows are encoded again
    ((1000,), (300,), (70,)),           # blocks do not divide chunks
    ((500, 6), (64, 6), (16, 6)),       # rows in order
    ((500, 6), (64, 3), (16, 3)),       # chunked on both axes: read by python-blosc2
    ((40, 5, 7), (8, 5, 7), (8, 5, 7)),
])
def test_python_blosc2_ndarrays_of_any_geometry_import(tmp_path, where, shape, chunks, blocks):
    x = np.arange(np.prod(shape), dtype="i4").reshape(shape)
    path = str(tmp_path / "x.b2nd")
    blosc2.asarray(x, urlpath=path, mode="w", chunks=chunks, blocks=blocks)
    _same(bcolzx.from_b2frame(path, **where), x)


def test_python_blosc2_special_and_uninitialized_chunks_import(tmp_path):
    path = str(tmp_path / "z.b2nd")
    blosc2.zeros((1000,), dtype="f4", chunks=(100,), blocks=(50,), urlpath=path, mode="w")
    back = bcolzx.from_b2frame(path)
    _same(back, np.zeros(1000, "f4"))
    assert all(type(e).__name__ == "Special" for e in _stored(back))
    arr = blosc2.empty((1000,), dtype="i8", chunks=(100,), blocks=(50,),
                       urlpath=str(tmp_path / "e.b2nd"), mode="w")
    arr[200:300] = np.arange(100)
    want = np.zeros(1000, "i8")
    want[200:300] = np.arange(100)
    _same(bcolzx.from_b2frame(str(tmp_path / "e.b2nd")), want)


def test_python_blosc2_schunk_imports_with_a_dtype(tmp_path):
    x = np.arange(25_000, dtype="i4")
    path = str(tmp_path / "s.b2frame")
    blosc2.SChunk(chunksize=40_000, data=x, cparams={"typesize": 4}, urlpath=path,
                  contiguous=True, mode="w")
    with pytest.raises(ValueError, match="dtype="):
        bcolzx.from_b2frame(path)
    back = bcolzx.from_b2frame(path, dtype="i4")
    _same(back, x)
    assert back.chunklen == 10_000
    # Chunks that split items are read by python-blosc2 and encoded again.
    path2 = str(tmp_path / "odd.b2frame")
    blosc2.SChunk(chunksize=1002, data=x, cparams={"typesize": 1}, urlpath=path2,
                  contiguous=True, mode="w")
    _same(bcolzx.from_b2frame(path2, dtype="i4"), x)
    # A typesize that is not the item size: encoded again, same values.
    _same(bcolzx.from_b2frame(path, dtype="i2"), x.view("i2"))


def test_recompress_and_other_cparams_encode_again(tmp_path):
    ca = carray(_mixed(), chunklen=100)
    ca.to_b2frame(tmp_path / "a.b2frame")
    for kw in ({"recompress": True}, {"chunklen": 64},
               {"cparams": bcolzx.cparams(cname="zlib", quantize=3)}):
        back = bcolzx.from_b2frame(tmp_path / "a.b2frame", **kw)
        if "cparams" in kw:
            np.testing.assert_allclose(back[:], ca[:], atol=1e-3)
        else:
            _same(back, ca)


@pytest.mark.parametrize("layout", ["ndarray", "schunk"])
@pytest.mark.parametrize("recompress", [False, True])
def test_progress_counts_every_chunk_both_ways(tmp_path, monkeypatch, layout, recompress):
    small_blocks(monkeypatch, b2frame)  # the rows copied again: several blocks too
    ca = carray(np.linspace(0, 1, 10_500), chunklen=1000)
    path = tmp_path / "a.b2frame"
    out = Recorder()
    ca.to_b2frame(path, layout=layout, progress=out)
    out.check(ca.nbytes)
    assert out.calls == [8000] * 10 + [4000]  # 10 chunks, then the leftover
    back_progress = Recorder()
    back = bcolzx.from_b2frame(path, rootdir=str(tmp_path / "back"), recompress=recompress,
                               progress=back_progress)
    back_progress.check(ca.nbytes)
    _same(back, ca)


def test_progress_of_a_python_blosc2_frame_and_of_plain_callbacks(tmp_path):
    x = np.arange(30_000, dtype="i2").reshape(10_000, 3)
    path = str(tmp_path / "x.b2nd")
    blosc2.asarray(x, urlpath=path, mode="w", chunks=(3_000, 3), blocks=(500, 3))
    seen = []
    back = bcolzx.from_b2frame(path, progress=seen.append)  # no set_total: not needed
    _same(back, x)
    assert seen == [18_000] * 3 + [6_000]


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        bcolzx.from_b2frame(tmp_path / "missing.b2frame")
    (tmp_path / "junk").write_bytes(b"not a frame at all" * 10)
    with pytest.raises(UnsupportedFormatError):
        bcolzx.from_b2frame(tmp_path / "junk")
    carray(np.arange(3)).to_b2frame(tmp_path / "a.b2frame")
    with pytest.raises(ValueError, match="dtype"):
        bcolzx.from_b2frame(tmp_path / "a.b2frame", dtype="f8")
    blosc2.asarray(np.array(5.0), urlpath=str(tmp_path / "0d.b2nd"), mode="w")
    with pytest.raises(ValueError, match="0-d"):
        bcolzx.from_b2frame(tmp_path / "0d.b2nd")
    ca = carray(np.arange(3))
    with pytest.raises(ValueError, match="layout"):
        ca.to_b2frame(tmp_path / "b.b2frame", layout="tiles")
    with pytest.raises(ValueError, match="mode"):
        ca.to_b2frame(tmp_path / "b.b2frame", mode="a")
    ca.attrs["bcolzx"] = 1
    with pytest.raises(ValueError, match="reserved"):
        ca.to_b2frame(tmp_path / "b.b2frame")
    assert not (tmp_path / "b.b2frame").exists()
    with pytest.raises(FileExistsError):
        bcolzx.from_b2frame(tmp_path / "a.b2frame", rootdir=str(tmp_path))


def test_docstring_examples_run():
    result = doctest.testmod(b2frame, verbose=False)
    assert result.attempted > 0 and result.failed == 0
