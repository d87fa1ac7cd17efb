"""Datasets read over HTTPS (issue 25): a local web server with a self-signed certificate
made at test time, trusted by fsspec's HTTP filesystem through ``storage_options``
(``{"ssl": an SSL context}``, which fsspec hands to aiohttp).  Reads, a damaged object,
a missing one, a server answering 500 and one dropping the connection: each error is
ours and names the URL."""

import ssl

import numpy as np
import pytest

import bcolzx
from bcolzx.errors import (
    ChecksumError,
    CorruptDataError,
    DatasetNotFoundError,
    RemoteError,
    TruncatedDataError,
)
from tests.remote import webserver
from tests.remote.test_remote import BCOLZX_PARENT, SC
from tests.remote.test_stores import _datasets

pytest.importorskip("aiohttp")  # fsspec's HTTP filesystem needs it


def _certificate(tmp_path, tool=None):
    try:
        return webserver.self_signed(str(tmp_path), tool)
    except RuntimeError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def https(tmp_path):
    """``(directory, server, storage_options trusting its certificate)``."""
    from fsspec.implementations.http import HTTPFileSystem

    root = tmp_path / "www"
    root.mkdir()
    cert, key = _certificate(tmp_path)
    # A new server may get the port of an earlier test's: no filesystem instance (its
    # session, its pooled connections) is shared with another server (a CI run read an
    # earlier dataset at this URL instead of failing on the untrusted certificate).
    HTTPFileSystem.clear_instance_cache()
    server = webserver.start(str(root), cwd=BCOLZX_PARENT, tls=(cert, key))
    try:
        yield root, server, {"ssl": ssl.create_default_context(cafile=cert)}
    finally:
        server.stop()
        HTTPFileSystem.clear_instance_cache()


def test_https_reads(https):
    root, server, so = https
    assert server.url.startswith("https://")
    a, cols = _datasets(root)
    r = bcolzx.open(f"{server.url}/a", storage_options=so, mode="r")
    np.testing.assert_array_equal(r[:], a)
    idx = np.random.default_rng(3).integers(0, len(a), 200)
    np.testing.assert_array_equal(r[idx], a[idx])
    t = bcolzx.open(f"{server.url}/t", storage_options=so, mode="r")
    got = t.fetchwhere("(i < 100) & (x == 3.0)", out_flavor="numpy")["i"]
    np.testing.assert_array_equal(got, cols[0][(cols[0] < 100) & (cols[1] == 3.0)])


def test_https_certificate_is_checked(https):
    """Without the certificate trusted, nothing is read: the TLS failure is a
    RemoteError naming the URL (so the tests above did go through TLS)."""
    root, server, _so = https
    _datasets(root)
    with pytest.raises(RemoteError) as info:
        bcolzx.open(f"{server.url}/a", mode="r")
    assert f"{server.url}/a" in str(info.value)
    assert "certificate" in str(info.value).lower()


def test_https_damaged_and_missing_objects(https):
    root, server, so = https
    a, _ = _datasets(root)
    with pytest.raises(DatasetNotFoundError) as info:
        bcolzx.open(f"{server.url}/none", storage_options=so, mode="r")
    assert f"{server.url}/none" in str(info.value)
    path = root / "a" / "data" / "__1.bin"
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF  # inside the last chunk of the object
    path.write_bytes(bytes(data))
    r = bcolzx.open(f"{server.url}/a", storage_options=so, mode="r")
    np.testing.assert_array_equal(r[:SC], a[:SC])
    with pytest.raises((ChecksumError, CorruptDataError)) as info:
        r[SC:]
    assert f"{server.url}/a/data/__1.bin" in str(info.value)
    (root / "a" / "data" / "__2.bin").unlink()
    with pytest.raises(TruncatedDataError) as info:
        bcolzx.open(f"{server.url}/a", storage_options=so, mode="r")[-5:]
    assert f"{server.url}/a/data/__2.bin" in str(info.value)


@pytest.mark.parametrize("how", ["500", "drop"])
def test_https_failing_server(https, how):
    """A server answering 500, or dropping the connection without answering: a
    RemoteError naming the URL, on opening and on reading data; served again, the
    same handle reads."""
    root, server, so = https
    a, _ = _datasets(root)
    r = bcolzx.open(f"{server.url}/a", storage_options=so, mode="r")
    server.fail(how)
    with pytest.raises(RemoteError) as info:
        r[SC:SC + 10]
    assert f"{server.url}/a/data/__1.bin" in str(info.value)
    with pytest.raises(RemoteError) as info:
        bcolzx.open(f"{server.url}/t", storage_options=so, mode="r")
    assert f"{server.url}/t" in str(info.value)
    server.fail(None)
    np.testing.assert_array_equal(r[SC:SC + 10], a[SC:SC + 10])


def test_certificate_made_with_openssl(tmp_path):
    """The other way to make the certificate, used where cryptography is missing."""
    root = tmp_path / "www"
    root.mkdir()
    cert, key = _certificate(tmp_path, "openssl")
    (root / "hello").write_bytes(b"hello over TLS")
    server = webserver.start(str(root), cwd=BCOLZX_PARENT, tls=(cert, key))
    try:
        import urllib.request

        with urllib.request.urlopen(f"{server.url}/hello", timeout=30,
                                    context=server.context) as f:
            assert f.read() == b"hello over TLS"
    finally:
        server.stop()
