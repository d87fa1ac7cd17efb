"""Other stores than S3 through the same fsspec path: a plain web server (HTTP, read-only)
and ``gs://`` (gcsfs, reading through the download path of the GCS JSON API, served
locally by tests/remote/webserver.py: a real GCS server cannot be reached from here)."""

import subprocess
import sys

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import BcolzxError, ChecksumError, CorruptDataError, DatasetNotFoundError
from tests.conftest import LEGACY
from tests.remote import webserver
from tests.remote.test_remote import BCOLZX_PARENT, CL, SC

pytest.importorskip("aiohttp")  # fsspec's HTTP filesystem (and gcsfs) need it


@pytest.fixture
def served(tmp_path):
    """``(directory, server)``: a web server over a fresh directory."""
    root = tmp_path / "www"
    root.mkdir()
    server = webserver.start(str(root), cwd=BCOLZX_PARENT)
    try:
        yield root, server
    finally:
        server.stop()


def _datasets(root):
    """A carray of three superchunk files and a ctable, written on disk under `root`."""
    a = np.arange(SC * 2 + 1000, dtype="f8") * 0.25
    bcolzx.carray(a, rootdir=str(root / "a"), chunklen=CL)
    n = 20_000
    cols = [np.arange(n), np.arange(n) % 7 * 1.5]
    bcolzx.ctable(cols, names=["i", "x"], rootdir=str(root / "t"), chunklen=1024)
    return a, cols


def test_http_reads_a_dataset_directory(served, tmp_path):
    root, server = served
    a, cols = _datasets(root)
    r = bcolzx.open(f"{server.url}/a", mode="r")
    assert len(r) == len(a)
    np.testing.assert_array_equal(r[:], a)
    idx = np.random.default_rng(5).integers(0, len(a), 300)
    np.testing.assert_array_equal(r[idx], a[idx])
    t = bcolzx.open(f"{server.url}/t", mode="r")
    assert isinstance(t, bcolzx.ctable) and t.names == ["i", "x"]
    got = t.fetchwhere("(i > 100) & (i < 130) & (x == 3.0)", out_flavor="numpy")["i"]
    want = cols[0][(cols[0] > 100) & (cols[0] < 130) & (cols[1] == 3.0)]
    np.testing.assert_array_equal(got, want)
    # and a conversion from it, to a local directory
    out = bcolzx.convert(f"{server.url}/t", str(tmp_path / "copy"), cparams={"cname": "zstd"})
    np.testing.assert_array_equal(bcolzx.open(out)["x"][:], cols[1])


def test_http_requests_are_ranged(served):
    """A few rows cost the small files and two ranged requests, not the whole object."""
    root, server = served
    a, _ = _datasets(root)
    r = bcolzx.open(f"{server.url}/a", mode="r")
    before = server.requests()
    assert r[SC + 5] == a[SC + 5]
    assert server.requests() - before - 1 <= 2  # the head of __1.bin, then its chunk


def test_http_legacy_directory(served):
    root, server = served
    import shutil

    shutil.copytree(LEGACY / "ca_int32_leftover", root / "legacy")
    local = bcolzx.open(str(LEGACY / "ca_int32_leftover"))
    np.testing.assert_array_equal(bcolzx.open(f"{server.url}/legacy", mode="r")[:], local[:])


def test_http_errors_name_the_url(served):
    root, server = served
    a, _ = _datasets(root)
    with pytest.raises(DatasetNotFoundError) as info:
        bcolzx.open(f"{server.url}/missing", mode="r")
    assert f"{server.url}/missing" in str(info.value)
    path = root / "a" / "data" / "__1.bin"
    data = bytearray(path.read_bytes())
    data[-50] ^= 0xFF  # inside the last chunk
    path.write_bytes(bytes(data))
    r = bcolzx.open(f"{server.url}/a", mode="r")
    np.testing.assert_array_equal(r[:SC], a[:SC])  # the other objects still read
    with pytest.raises((ChecksumError, CorruptDataError)) as info:
        r[SC:]
    assert f"{server.url}/a/data/__1.bin" in str(info.value)
    (root / "a" / "data" / "__0.bin").unlink()
    with pytest.raises(CorruptDataError) as info:
        bcolzx.open(f"{server.url}/a", mode="r")[:10]
    assert f"{server.url}/a/data/__0.bin" in str(info.value)


def test_http_is_read_only(served):
    root, server = served
    a, _ = _datasets(root)
    w = bcolzx.open(f"{server.url}/a", mode="a")
    with pytest.raises(BcolzxError) as info:
        w.append(np.ones(3))
        w.flush()
    assert isinstance(info.value, OSError)
    np.testing.assert_array_equal(bcolzx.open(f"{server.url}/a", mode="r")[:], a)


#: Run in a child process: gcsfs's experimental zonal/HNS layer (on by default since
#: 2025) asks GCS's gRPC control API what a bucket is, which only real GCS answers; it
#: is turned off by an environment variable read when gcsfs is imported, so the child
#: sets it first.  The reading path is gcsfs's ordinary one, as for a standard bucket.
_GS_CHILD = """
import os, sys
os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
import numpy as np, bcolzx, gcsfs
from bcolzx._storage import objects
from bcolzx.errors import ChecksumError, CorruptDataError, DatasetNotFoundError
endpoint, root, sc = sys.argv[1], sys.argv[2], int(sys.argv[3])
so = {"token": "anon", "endpoint_url": endpoint}
where = objects.resolve("gs://bucket-g/a", so)
assert isinstance(where, objects.FsspecObjects) and isinstance(where.fs, gcsfs.GCSFileSystem)
a = bcolzx.open(os.path.join(root, "bucket-g", "a"))[:]
r = bcolzx.open("gs://bucket-g/a", storage_options=so, mode="r")
np.testing.assert_array_equal(r[:], a)
np.testing.assert_array_equal(r[[7, len(a) - 1]], a[[7, len(a) - 1]])
t = bcolzx.open("gs://bucket-g/t", storage_options=so, mode="r")
np.testing.assert_array_equal(t["x"][:], bcolzx.open(os.path.join(root, "bucket-g", "t"))["x"][:])
try:
    bcolzx.open("gs://bucket-g/none", storage_options=so)
    raise AssertionError("no error")
except DatasetNotFoundError as exc:
    assert "gs://bucket-g/none" in str(exc), exc
path = os.path.join(root, "bucket-g", "a", "data", "__0.bin")
data = bytearray(open(path, "rb").read())
data[-50] ^= 0xFF
open(path, "wb").write(bytes(data))
try:
    bcolzx.open("gs://bucket-g/a", storage_options=so, mode="r")[:sc]
    raise AssertionError("no error")
except (ChecksumError, CorruptDataError) as exc:
    assert "gs://bucket-g/a/data/__0.bin" in str(exc), exc
print("ok")
"""


def test_gs_url_goes_through_gcsfs(served):
    """A ``gs://`` URL is read by gcsfs, through the same path as every fsspec store:
    data, a ctable, a missing dataset and a damaged object (errors naming the URL)."""
    pytest.importorskip("gcsfs")
    root, server = served
    _datasets(root / "bucket-g")
    proc = subprocess.run([sys.executable, "-c", _GS_CHILD, server.url, str(root), str(SC)],
                          cwd=BCOLZX_PARENT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
