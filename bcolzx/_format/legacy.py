"""The legacy bcolz on-disk format, "DISK_FORMAT_v1" (docs/format/legacy-v1.md).

A v1 dataset directory holds ``__attrs__``, ``meta/sizes``,
``meta/storage`` (JSON without a ``"format"`` key) and ``data/__N.blp``:
chunk ``N`` as a 16-byte *bloscpack* header followed by one C-Blosc 1.x
chunk.  The partial last chunk (the leftover) is its own, shorter chunk
file.  The number of chunks comes from the metadata, never from the
directory listing: ``trim`` leaves stale files behind.

This module parses and produces the metadata and the chunk files; the
:class:`~bcolzx._storage.legacy.LegacyStore` does the I/O.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from bcolzx._format import layout
from bcolzx._format.jsonfile import read_json
from bcolzx._format.meta import CParams, Sizes, Storage, dflt_from_json, dtype_to_json
from bcolzx.errors import CorruptDataError, TruncatedDataError, UnsupportedFormatError

#: The bloscpack header legacy bcolz writes before each chunk: magic, format
#: version, three reserved bytes and the number of chunks in the file (1).
BLPK_HEADER = struct.Struct("<4sB3sq")
BLPK_MAGIC = b"blpk"
BLPK_VERSION = 1
#: Bytes of a C-Blosc 1.x chunk header.
BLOSC1_HEADER = 16
#: C-Blosc 1.x header flags used for chunks stored without compression.
BLOSC1_MEMCPYED = 0x02
BLOSC1_NOSPLIT = 0x10
#: Codecs C-Blosc 1.x (hence legacy bcolz) knows.
BLOSC1_CODECS = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")

_CHUNK_PREFIX, _CHUNK_SUFFIX = "__", ".blp"


def is_legacy(rootdir: str | os.PathLike) -> bool:
    """Whether `rootdir` holds a v1 (legacy bcolz) dataset: a ``meta/storage``
    that is a JSON object without the ``"format"`` key."""
    path = layout.meta_path(rootdir, layout.STORAGE_FILE)
    try:
        obj = read_json(path)
    except (FileNotFoundError, NotADirectoryError, CorruptDataError):
        return False
    return "format" not in obj


def chunk_path(rootdir: str, number: int) -> str:
    """Path of chunk file ``data/__<number>.blp``."""
    return os.path.join(rootdir, layout.DATA_DIR, f"{_CHUNK_PREFIX}{number}{_CHUNK_SUFFIX}")


def chunk_number(name: str) -> int | None:
    """The number in a chunk file name, or None for any other name."""
    if name.startswith(_CHUNK_PREFIX) and name.endswith(_CHUNK_SUFFIX):
        digits = name[len(_CHUNK_PREFIX):-len(_CHUNK_SUFFIX)]
        if digits.isdigit() and (digits == "0" or not digits.startswith("0")):
            return int(digits)
    return None


def storage_from_json(obj: dict, path: str | None = None) -> Storage:
    """A :class:`Storage` from a v1 ``meta/storage`` object.

    Quirks of files written by old versions: no ``cname`` means blosclz, a
    boolean ``shuffle`` means byte shuffle or none, no ``quantize`` means 0.

    Object dtype: legacy bcolz pickled each object into its own chunk file,
    whatever ``chunklen`` says; the storage then has ``vlen="pickle"`` and a
    chunklen of 1 (one row per chunk).  Nothing is unpickled here.

    Raises
    ------
    UnsupportedFormatError
        For a structured dtype holding objects (legacy bcolz never wrote
        one).
    CorruptDataError
        For missing or invalid keys.
    """
    missing = [k for k in ("dtype", "chunklen") if k not in obj]
    if missing:
        raise CorruptDataError(f"missing keys {missing}", path=path)
    try:
        dtype = np.dtype(obj["dtype"])
    except (TypeError, ValueError) as exc:
        raise CorruptDataError(f"invalid dtype {obj['dtype']!r}: {exc}", path=path) from None
    vlen = None
    if dtype.hasobject:
        if dtype != np.dtype(object):
            raise UnsupportedFormatError(
                f"{path}: dtype {dtype} holds objects inside a structured dtype, which "
                "legacy bcolz did not write and bcolzx does not read")
        vlen = "pickle"
    cparams = CParams.from_json(obj.get("cparams", {}), path)
    if cparams.cname not in BLOSC1_CODECS or cparams.shuffle not in (0, 1, 2) \
            or not 0 <= cparams.clevel <= 9:
        raise CorruptDataError(f"invalid cparams {obj.get('cparams')!r}", path=path)
    chunklen, expectedlen = obj["chunklen"], obj.get("expectedlen", 0)
    if isinstance(chunklen, bool) or not isinstance(chunklen, int) or chunklen < 1 \
            or isinstance(expectedlen, bool) or not isinstance(expectedlen, int):
        raise CorruptDataError(f"invalid chunklen {chunklen!r} or expectedlen "
                               f"{expectedlen!r}", path=path)
    dflt = obj.get("dflt")
    try:
        dflt = dflt_from_json(dflt, dtype, path) if dflt is not None or vlen else None
    except CorruptDataError:
        # Legacy bcolz wrote some defaults it could not read back (dates,
        # complex numbers): such a dataset has the zero default.
        dflt = None
    if vlen:
        chunklen = 1
    return Storage(dtype=dtype, chunklen=chunklen, cparams=cparams, expectedlen=expectedlen,
                   dflt=dflt, chunks_per_superchunk=1, checksum="none", blocksize=0,
                   bytedelta="off", vlen=vlen, uid=None, sealed=False)


def storage_to_json(storage: Storage) -> dict:
    """The v1 ``meta/storage`` object legacy bcolz writes for `storage`.

    Raises
    ------
    UnsupportedFormatError
        For a default value legacy bcolz cannot read back.
    """
    dflt = storage.dflt
    if storage.vlen:
        # Legacy bcolz reads the JSON value as the default of its object carray.
        return {"dtype": "object", "cparams": storage.cparams.to_json(),
                "chunklen": storage.chunklen, "expectedlen": storage.expectedlen,
                "dflt": dflt.item()}
    if dflt.dtype.kind in "Mm":
        value = int(dflt.view(np.int64))
    elif dflt.dtype.kind == "S":
        value = dflt.item().decode("latin-1")
    elif dflt.dtype.kind == "c":
        value = 0 if dflt == 0 else None
    else:
        value = dflt.item()
    if value is None:
        raise UnsupportedFormatError(f"a default of {dflt!r} cannot be written in the legacy "
                                     "format")
    return {"dtype": dtype_to_json(storage.dtype), "cparams": storage.cparams.to_json(),
            "chunklen": storage.chunklen, "expectedlen": storage.expectedlen, "dflt": value}


def sizes_from_json(obj: dict, path: str | None = None) -> Sizes:
    """A :class:`Sizes` from a v1 ``meta/sizes`` object (``shape``, ``nbytes``, ``cbytes``)."""
    if "generations" in obj:
        raise CorruptDataError("a legacy dataset's sizes name superchunk generations",
                               path=path)
    return Sizes.from_json(obj, path)


def read(rootdir: str, storage_json: dict | None = None) -> tuple[Storage, Sizes]:
    """The storage and sizes metadata of the v1 dataset at `rootdir` (its
    ``meta/storage`` object when already read).

    Raises
    ------
    FileNotFoundError
        If a metadata file is missing.
    CorruptDataError, UnsupportedFormatError
        If it is invalid or describes data bcolzx cannot hold.
    """
    spath = layout.meta_path(rootdir, layout.STORAGE_FILE)
    zpath = layout.meta_path(rootdir, layout.SIZES_FILE)
    obj = read_json(spath) if storage_json is None else storage_json
    return storage_from_json(obj, spath), sizes_from_json(read_json(zpath), zpath)


def legacy_cbytes(chunks_cbytes: int, chunk_bytes: int) -> int:
    """The ``cbytes`` legacy bcolz records: compressed bytes of the full
    chunks plus one uncompressed chunk (its in-memory leftover buffer)."""
    return chunks_cbytes + chunk_bytes


def pack_chunk(chunk: bytes | memoryview) -> bytes:
    """The contents of a ``.blp`` file holding one C-Blosc 1.x `chunk`."""
    return BLPK_HEADER.pack(BLPK_MAGIC, BLPK_VERSION, b"\0\0\0", 1) + bytes(chunk)


def unpack_chunk(data: bytes, path: str | None = None, chunk: int | None = None) -> memoryview:
    """The C-Blosc chunk inside the contents of a ``.blp`` file.

    Raises
    ------
    TruncatedDataError
        If the file is shorter than its headers say.
    CorruptDataError
        If a header is invalid or bytes follow the chunk.
    """
    where = {"path": path, "chunk": chunk}
    if len(data) < BLPK_HEADER.size + BLOSC1_HEADER:
        raise TruncatedDataError(f"a chunk file of {len(data)} bytes", **where)
    magic, version, _, nchunks = BLPK_HEADER.unpack_from(data)
    if magic != BLPK_MAGIC or version != BLPK_VERSION or nchunks != 1:
        raise CorruptDataError(f"bad bloscpack header (magic {magic!r}, version {version}, "
                               f"{nchunks} chunks)", **where)
    body = memoryview(data)[BLPK_HEADER.size:]
    cbytes = int.from_bytes(body[12:16], "little")
    if cbytes > len(body):
        raise TruncatedDataError(f"chunk of {cbytes} bytes, the file holds {len(body)}",
                                 **where)
    if cbytes < BLOSC1_HEADER or cbytes != len(body):
        raise CorruptDataError(f"chunk of {cbytes} bytes in a file holding {len(body)}",
                               **where)
    # A memcpyed chunk holds its bytes as they are: C-Blosc's getitem would copy
    # whatever follows the header, so a damaged flag would give wrong values
    # where a full decompression raises.  Check it here, for every read path.
    nbytes = int.from_bytes(body[4:8], "little")
    if body[2] & BLOSC1_MEMCPYED and cbytes != nbytes + BLOSC1_HEADER:
        raise CorruptDataError(f"memcpyed chunk of {nbytes} bytes stored in {cbytes}",
                               **where)
    return body


def memcpyed_chunk(raw: bytes | memoryview, typesize: int) -> bytes:
    """A C-Blosc 1.x chunk holding `raw` uncompressed (what Blosc writes at
    clevel 0): readable by every C-Blosc version."""
    n = len(raw)
    if not 0 < n <= 2**31 - 1 - BLOSC1_HEADER:
        raise ValueError(f"cannot store {n} bytes in one chunk")
    header = struct.pack("<BBBBiii", 2, 1, BLOSC1_MEMCPYED | BLOSC1_NOSPLIT,
                         max(1, min(typesize, 255)), n, n, n + BLOSC1_HEADER)
    return header + bytes(raw)


def blosc1_typesize(dtype: np.dtype) -> int:
    """The typesize legacy bcolz gives C-Blosc for items of `dtype`: the
    character size for strings, 1 for pickled objects, else the item size (at
    most 255)."""
    base = dtype.base
    if base.hasobject:
        return 1
    if base.kind == "S":
        return 1
    if base.kind == "U":
        return 4
    return max(1, min(base.itemsize, 255))
