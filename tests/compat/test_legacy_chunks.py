"""Every chunk of every dataset written by legacy bcolz decodes to the right bytes.

The fixtures (tests/data/legacy_bcolz, provenance in its README) were written
by bcolz 1.2 over C-Blosc 1.21; each ``data/__N.blp`` is a 16-byte ``blpk``
header and one Blosc 1.x chunk.  The MANIFEST holds a SHA-256 of the
decompressed content.
"""

import hashlib
import json
import pickle
import struct
from math import ceil

import pytest

from bcolzx._ext import codec

from ..conftest import LEGACY

BLPK_HEADER = 16


def _carrays(manifest):
    for ds in manifest["datasets"]:
        if ds["kind"] == "carray":
            yield ds
        else:
            yield from ds["columns"].values()


MANIFEST = json.loads((LEGACY / "MANIFEST.json").read_text())
CARRAYS = {ds["path"]: ds for ds in _carrays(MANIFEST)}


def _read_chunk(path):
    raw = path.read_bytes()
    magic, version = raw[:4], raw[4]
    assert magic == b"blpk" and version == 1
    (nchunks,) = struct.unpack_from("<q", raw, 8)
    assert nchunks == 1
    return memoryview(raw)[BLPK_HEADER:]


@pytest.mark.parametrize("path", [p for p, ds in CARRAYS.items() if ds["dtype"] != "object"])
def test_legacy_chunks_decode_to_manifest_content(path):
    ds = CARRAYS[path]
    nchunks = ceil(ds["len"] / ds["chunklen"]) if ds["len"] else 0
    assert nchunks == ds["nchunks_full"] + (1 if ds["leftover_elements"] else 0)
    dec = codec.Decompressor()
    # Count chunks from the metadata, never from the directory listing:
    # ca_int32_trimmed_stale holds a stale __2.blp.
    data = b"".join(
        dec.decompress(_read_chunk(LEGACY / path / "data" / f"__{i}.blp")) for i in range(nchunks)
    )
    nbytes = ds["meta_sizes"]["nbytes"]
    assert nbytes == ds["content"]["nbytes"]
    assert len(data) == nbytes
    assert hashlib.sha256(data[:nbytes]).hexdigest() == ds["content"]["sha256"]


@pytest.mark.parametrize("path", [p for p, ds in CARRAYS.items() if ds["dtype"] != "object"])
def test_legacy_chunk_sizes_and_getitem(path):
    ds = CARRAYS[path]
    if ds["len"] == 0:
        assert not any((LEGACY / path / "data").glob("*.blp"))
        return
    chunk = _read_chunk(LEGACY / path / "data" / "__0.blp")
    hdr = ds["chunk0_headers"]["blosc"]
    nbytes, cbytes, blocksize = codec.chunk_sizes(chunk)
    assert (nbytes, cbytes, blocksize) == (hdr["nbytes"], hdr["ctbytes"], hdr["blocksize"])
    info = codec.chunk_info(chunk)
    assert info["typesize"] == hdr["typesize"] and info["memcpyed"] == hdr["memcpyed"]
    dec = codec.Decompressor()
    whole = dec.decompress(chunk)
    ts = hdr["typesize"]
    nitems = nbytes // ts
    for start, n in [(0, 1), (nitems - 1, 1), (nitems // 3, min(7, nitems - nitems // 3))]:
        assert dec.getitem(chunk, start, n) == whole[start * ts:(start + n) * ts]


def test_legacy_object_chunks_unpickle():
    ds = CARRAYS["ca_object_optional"]
    dec = codec.Decompressor()
    values = [
        pickle.loads(dec.decompress(_read_chunk(LEGACY / ds["path"] / "data" / f"__{i}.blp")))
        for i in range(ds["len"])
    ]
    assert [repr(v) for v in values] == ds["content"]["values_repr"]


def test_every_fixture_dataset_is_covered(legacy_manifest):
    paths = {ds["path"] for ds in _carrays(legacy_manifest)}
    assert len(legacy_manifest["datasets"]) == 22
    assert paths == set(CARRAYS)
