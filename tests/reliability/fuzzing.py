"""Fuzz targets: every parser of stored bytes, fed arbitrary input.

Each target takes ``bytes`` and runs one parser the way bcolzx runs it on
what it reads from disk.  The contract: it returns, or raises an exception
of bcolzx's hierarchy (:class:`bcolzx.BcolzxError`); anything else (another
exception, a crash of the interpreter, a hang) is a bug.  The targets are
driven by hypothesis in ``test_fuzz.py`` (a few thousand inputs per run) and
by atheris in ``benchmarks/fuzz_formats.py`` (millions).

Targets:

``header``       the 32-byte superchunk header (``decode_header``);
``index``        an index copy, then the choice between two copies (``select``);
``superchunk``   a whole superchunk file opened and every chunk read through it;
``chunk``        a C-Blosc2 or C-Blosc 1.x chunk checked and decoded as the
                 engine does (header sizes, then decompression, then getitem);
``blp``          a legacy bcolz ``.blp`` chunk file;
``json``         each JSON metadata file (``meta/storage``, ``meta/sizes``,
                 ``meta/zonemap``, ``__attrs__``, ``__rootdirs__``, legacy
                 ``meta/storage`` and ``meta/sizes``), sealed or not.

Inputs are arbitrary bytes; each target also derives a *seed* input from a
valid file, so that mutations of it reach the deeper checks.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile

import numpy as np

from bcolzx._ext import codec
from bcolzx._ext import index as _index
from bcolzx._format import jsonfile, layout, legacy, zonemap
from bcolzx._format.meta import Storage, read_sizes, read_storage
from bcolzx._format.superchunk import Geometry, SuperchunkFile
from bcolzx.errors import BcolzxError

#: Geometry of the superchunk files the targets build and parse.
K, CHUNKLEN, TYPESIZE = 4, 64, 8
GEOMETRY = Geometry(K, CHUNKLEN * TYPESIZE, TYPESIZE, _index.CHECKSUM_CRC32C)
ISIZE = _index.index_size(K)


class Workspace:
    """A private directory for the targets that parse files (one per process)."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="bcolzx-fuzz-")
        atexit.register(shutil.rmtree, self.root, True)
        self.superchunk = os.path.join(self.root, "__0.bin")
        self.dataset = os.path.join(self.root, "ds")
        os.makedirs(os.path.join(self.dataset, "meta"))
        os.makedirs(os.path.join(self.dataset, "data"))

    def write(self, path: str, data: bytes) -> str:
        with open(path, "wb") as f:
            f.write(data)
        return path


_ws: Workspace | None = None


def workspace() -> Workspace:
    global _ws
    if _ws is None:
        _ws = Workspace()
    return _ws


# -- the targets ---------------------------------------------------------------------------


def fuzz_header(data: bytes) -> None:
    _index.decode_header(data)


def fuzz_index(data: bytes) -> None:
    """Two index copies from the input; the file size and typesize from its first bytes."""
    if len(data) < 2:
        return
    file_size = _index.data_start(K) + data[0] * 64
    typesize = data[1]
    body = data[2:]
    a, b = body[:ISIZE].ljust(ISIZE, b"\0"), body[ISIZE:2 * ISIZE].ljust(ISIZE, b"\0")
    for copy in (a, b):
        try:
            _index.Index.decode(copy, K, file_size, 4, typesize, chunk_size=CHUNKLEN * 8)
        except BcolzxError:
            pass
    _index.select(a, b, K, file_size, 4, typesize, chunk_size=CHUNKLEN * 8)


def _decode_as_engine(entry, rows: int) -> None:
    """What ChunkedArray does with a stored chunk of `rows` rows of int64."""
    nbytes = codec.chunk_sizes(entry)[0]
    if nbytes < rows * TYPESIZE or nbytes > CHUNKLEN * TYPESIZE or nbytes % TYPESIZE:
        return  # the engine raises CorruptDataError here
    out = np.empty(nbytes // TYPESIZE, dtype="<i8")
    dec = codec.Decompressor(1)
    dec.decompress(entry, out)
    if rows:
        dec.getitem(entry, rows // 2, 1, out[:1].view(np.uint8))


def fuzz_superchunk(data: bytes) -> None:
    """The input as a superchunk file of geometry GEOMETRY; every chunk it holds read."""
    ws = workspace()
    path = ws.write(ws.superchunk, data)
    generation = int.from_bytes(data[32:40].ljust(8, b"\0"), "little") if len(data) > 40 else 1
    for gen in (None, generation):
        try:
            sc = SuperchunkFile.load(path, 0, GEOMETRY, gen)
        except BcolzxError:
            continue
        for slot in range(sc.index.nchunks):
            try:
                entry = sc.read_one(slot)
                if not hasattr(entry, "kind"):
                    _decode_as_engine(entry, sc.chunk_size_of(slot) // TYPESIZE)
            except BcolzxError:
                pass


def fuzz_chunk(data: bytes) -> None:
    """The input as one stored chunk of int64 rows (no checksum: legacy datasets, or
    bcolzx datasets written with ``checksum='none'``)."""
    _decode_as_engine(data, CHUNKLEN if len(data) % 2 else CHUNKLEN // 2)


def fuzz_blp(data: bytes) -> None:
    """The input as a legacy ``data/__0.blp`` chunk file, then decoded."""
    entry = legacy.unpack_chunk(data, "__0.blp", 0)
    _decode_as_engine(entry, 0)


_JSON_FILES = [
    ("storage", lambda d: read_storage(d)),
    ("sizes", lambda d: read_sizes(d)),
    ("zonemap", lambda d: zonemap.read(d, np.dtype("<f8"))),
    ("__attrs__", lambda d: jsonfile.read_json(os.path.join(d, layout.ATTRS_FILE))),
    ("__rootdirs__", lambda d: layout.column_names(
        jsonfile.read_json(os.path.join(d, layout.ROOTDIRS_FILE)))),
    ("legacy", lambda d: legacy.read(d)),
]


def fuzz_json(data: bytes) -> None:
    """The input as each JSON metadata file in turn (its first byte picks which)."""
    if not data:
        return
    ws = workspace()
    name, parse = _JSON_FILES[data[0] % len(_JSON_FILES)]
    body = data[1:]
    d = ws.dataset
    if name in ("storage", "sizes", "zonemap", "legacy"):
        meta = os.path.join(d, "meta")
        if name == "legacy":  # the input is meta/storage, a valid meta/sizes beside it
            ws.write(os.path.join(meta, "storage"), body)
            ws.write(os.path.join(meta, "sizes"), b'{"shape": [10], "nbytes": 80, '
                                                   b'"cbytes": 0}')
        else:
            ws.write(os.path.join(meta, name), body)
    else:
        ws.write(os.path.join(d, name), body)
    if name == "storage":  # a storage that parses makes a usable (empty) dataset, or refuses
        ws.write(os.path.join(d, "meta", "sizes"), b'{"shape": [0], "nbytes": 0, "cbytes": 0}')
        from bcolzx._storage import ChunkedArray, DirectoryStore

        ChunkedArray(DirectoryStore.open(d, readonly=True))
        return
    parse(d)


TARGETS = {
    "header": fuzz_header,
    "index": fuzz_index,
    "superchunk": fuzz_superchunk,
    "chunk": fuzz_chunk,
    "blp": fuzz_blp,
    "json": fuzz_json,
}

#: Exceptions a target may raise: bcolzx's own, and the few plain builtins the
#: targets' callers document for argument errors that the target's own
#: argument derivation can produce (none for stored bytes).
ALLOWED = (BcolzxError,)


def run(target: str, data: bytes) -> None:
    """Run one target on `data`; raise AssertionError for any exception outside the
    hierarchy (with the input, for the report)."""
    try:
        TARGETS[target](data)
    except ALLOWED:
        pass
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the finding
        raise AssertionError(f"{target}: {type(exc).__name__}: {exc} "
                             f"(input {data[:200]!r}, {len(data)} bytes)") from exc


# -- seeds: valid inputs to mutate ---------------------------------------------------------------


def seeds() -> dict[str, list[bytes]]:
    """Valid inputs for each target, built with bcolzx itself."""
    ws = workspace()
    root = tempfile.mkdtemp(dir=ws.root)
    from bcolzx._storage import ChunkedArray, DirectoryStore

    path = os.path.join(root, "a")
    storage = Storage(dtype="<i8", chunklen=CHUNKLEN, chunks_per_superchunk=K)
    arr = ChunkedArray(DirectoryStore.create(path, storage))
    values = np.arange(3 * CHUNKLEN + 5, dtype="<i8") ** 2
    values[CHUNKLEN:2 * CHUNKLEN] = 0
    arr.append(values)
    arr.flush()
    arr.write(3, values[:10])
    arr.flush()
    arr.close()
    with open(layout.data_path(path, 0), "rb") as f:
        sc = f.read()
    header, copies = sc[:32], sc[32:32 + 2 * ISIZE]
    chunk = codec.Compressor("lz4", 5, codec.SHUFFLE, 8).compress(values[:CHUNKLEN])
    meta = {}
    for name in ("storage", "sizes", "zonemap"):
        with open(layout.meta_path(path, name), "rb") as f:
            meta[name] = f.read()
    with open(os.path.join(path, layout.ATTRS_FILE), "rb") as f:
        attrs = f.read()
    legacy_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                              "legacy_bcolz", "ca_int32_leftover")
    with open(os.path.join(legacy_dir, "data", "__0.blp"), "rb") as f:
        blp = f.read()
    with open(os.path.join(legacy_dir, "meta", "storage"), "rb") as f:
        legacy_storage = f.read()
    sealed = [meta["storage"], meta["sizes"], meta["zonemap"], attrs,
              json.dumps({"names": ["a", "b"], "__crc32c__": 0}).encode(), legacy_storage]
    plain = [json.dumps({k: v for k, v in json.loads(f).items() if not k.startswith("__")}
                        ).encode() for f in sealed]
    return {
        "header": [header],
        "index": [bytes([len(sc) // 64 % 256, 8]) + copies],
        "superchunk": [sc],
        "chunk": [chunk, chunk + b"\0"],
        "blp": [blp],
        "json": [bytes([i]) + f for files in (sealed, plain) for i, f in enumerate(files)],
    }


def mutate(seed: bytes, rng: np.random.Generator) -> bytes:
    """`seed` with a few random bytes flipped, inserted, deleted or the tail cut."""
    data = bytearray(seed)
    for _ in range(int(rng.integers(1, 5))):
        op = rng.random()
        if not data:
            data.append(int(rng.integers(0, 256)))
        elif op < 0.6:
            i = int(rng.integers(0, len(data)))
            data[i] ^= int(rng.integers(1, 256))
        elif op < 0.75:
            data.insert(int(rng.integers(0, len(data) + 1)), int(rng.integers(0, 256)))
        elif op < 0.9:
            del data[int(rng.integers(0, len(data)))]
        else:
            del data[int(rng.integers(0, len(data))):]
    return bytes(data)


__all__ = ["TARGETS", "run", "seeds", "mutate"]
