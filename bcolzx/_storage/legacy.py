"""Chunks in a legacy bcolz (format v1) directory, read and modified in place.

Reading needs nothing beyond C-Blosc2, which decodes C-Blosc 1.x chunks.
Writing must produce chunks that legacy bcolz (C-Blosc 1.x) can decode,
which C-Blosc2 cannot make: new chunks are compressed by the ``blosc``
package (python-blosc 1.x, the ``legacy`` extra) when it is installed, and
are otherwise stored uncompressed as C-Blosc 1.x "memcpyed" chunks, which
every C-Blosc reads (docs/format/legacy-v1.md, "Writing").
"""

from __future__ import annotations

import os
from math import ceil

import numpy as np

from bcolzx._format import files as _files
from bcolzx._format import layout
from bcolzx._format import legacy as v1
from bcolzx._format.jsonfile import fsync_dir, make_dirs, write_atomic, write_json
from bcolzx._format.meta import Sizes, Storage
from bcolzx._storage import snapshot
from bcolzx._storage.base import ChunkStore, Special
from bcolzx.errors import CorruptDataError, ReadOnlyError

try:  # the optional ``legacy`` extra
    import blosc as _blosc
except ImportError:  # pragma: no cover - depends on the environment
    _blosc = None


def blosc1_available() -> bool:
    """Whether new legacy chunks are compressed (python-blosc 1.x is installed)."""
    return _blosc is not None


class Blosc1Encoder:
    """Compresses rows into C-Blosc 1.x chunks with a dataset's cparams.

    Parameters
    ----------
    storage : Storage
        The dataset's storage (codec, level, shuffle; dtype for the typesize).
    nthreads : int
        Compression threads (python-blosc's setting is process-wide).
    compress : bool or None
        Force compression on or off; None (default) compresses when
        python-blosc is installed and knows the codec.
    """

    def __init__(self, storage: Storage, nthreads: int = 1, compress: bool | None = None):
        cp = storage.cparams
        self.typesize = v1.blosc1_typesize(storage.dtype)
        self.cname, self.clevel, self.shuffle = cp.cname, cp.clevel, cp.shuffle
        usable = _blosc is not None and cp.cname in _blosc.cnames
        self.compressing = usable if compress is None else bool(compress) and usable
        if compress and not usable:
            raise ImportError("compressing legacy chunks needs python-blosc 1.x: "
                              "pip install 'bcolzx[legacy]'")
        self.nthreads = nthreads

    def compress(self, rows: np.ndarray) -> bytes:
        """One C-Blosc 1.x chunk holding `rows`."""
        raw = np.ascontiguousarray(rows).reshape(-1).view(np.uint8)
        if not self.compressing or self.clevel == 0:
            return v1.memcpyed_chunk(raw.data, self.typesize)
        if _blosc.nthreads != self.nthreads:
            _blosc.set_nthreads(self.nthreads)
        return _blosc.compress(raw.data, typesize=self.typesize, clevel=self.clevel,
                               shuffle=self.shuffle, cname=self.cname)


class LegacyStore(ChunkStore):
    """A :class:`ChunkStore` over a legacy bcolz (v1) dataset directory.

    Chunk ``i`` is the file ``data/__i.blp``.  Writes replace whole chunk
    files atomically; :meth:`commit` makes them durable, then rewrites
    ``meta/sizes``, the commit point legacy readers also use.  Nothing but
    v1 files is written, so legacy bcolz keeps reading the dataset.

    Parameters
    ----------
    rootdir : str
        The dataset directory.
    storage : Storage
        Its storage metadata, from :func:`bcolzx._format.legacy.read`.
    sizes : Sizes
        Its ``meta/sizes``.
    readonly : bool
        Refuse every write with :class:`ReadOnlyError`.
    """

    native = False

    def __init__(self, rootdir: str, storage: Storage, sizes: Sizes, readonly: bool):
        self.rootdir = os.fspath(rootdir)
        self.storage = storage
        self.rowshape = tuple(sizes.shape[1:])
        # Bytes per chunk; for pickled objects (one per chunk file), 1 row.
        self.chunk_bytes = storage.chunklen * storage.row_unit(self.rowshape)
        if not 0 < self.chunk_bytes < 2**31 - 64:
            raise CorruptDataError(f"chunks of {self.chunk_bytes} bytes are not supported "
                                   "(1 byte to 2 GiB)", path=self.rootdir)
        self.length = sizes.shape[0]
        self.nchunks = ceil(self.length / storage.chunklen)
        self._nfull = self.length // storage.chunklen
        # Compressed bytes of the full chunks.  Legacy sizes count those plus
        # one whole uncompressed chunk (bcolz's in-memory leftover buffer),
        # except for objects, whose count is the chunk files' alone.
        self._buffer_bytes = 0 if storage.vlen else self.chunk_bytes
        self._full_cbytes = max(0, sizes.cbytes - self._buffer_bytes)
        # ...and those of the partial last chunk's file, which legacy sizes leave out
        # (``cbytes`` counts it, as a bcolzx store counts its stored last chunk).
        self._part_cbytes = self._stored_cbytes(self._nfull) \
            if self.nchunks > self._nfull else 0
        self._count()
        self._readonly = readonly
        self._pending: set[str] = set()

    @classmethod
    def open(cls, rootdir: str, readonly: bool = False, storage_json: dict | None = None
             ) -> "LegacyStore":
        """Open the v1 dataset at `rootdir` (its ``meta/storage`` object when already read).

        Raises
        ------
        FileNotFoundError
            If `rootdir`, its metadata or its ``data/`` directory is missing.
        CorruptDataError, UnsupportedFormatError
            If its metadata is damaged or describes unsupported data.
        """
        rootdir = os.fspath(rootdir)
        if not os.path.isdir(os.path.join(rootdir, layout.DATA_DIR)):
            raise FileNotFoundError(f"no data directory in {rootdir}")
        storage, sizes = v1.read(rootdir, storage_json)
        return cls(rootdir, storage, sizes, readonly)

    @classmethod
    def create(cls, rootdir: str, storage: Storage, rowshape: tuple = (),
               attrs: dict | None = None) -> "LegacyStore":
        """Create an empty v1 dataset directory (``meta/sizes`` last).

        Raises
        ------
        FileExistsError
            If `rootdir` exists and is not empty.
        UnsupportedFormatError
            If `storage` cannot be expressed in the legacy format.
        """
        rootdir = os.fspath(rootdir)
        if os.path.exists(rootdir) and set(os.listdir(rootdir)) - {layout.LOCK_FILE}:
            raise FileExistsError(f"{rootdir} exists and is not empty")
        meta = v1.storage_to_json(storage)
        if storage.cparams.cname not in v1.BLOSC1_CODECS:
            raise ValueError(f"codec {storage.cparams.cname!r} does not exist in the legacy "
                             f"format (one of {v1.BLOSC1_CODECS})")
        make_dirs(rootdir)  # its name made durable in its parent (meta/, data/: below)
        os.makedirs(os.path.join(rootdir, layout.META_DIR), exist_ok=True)
        os.makedirs(os.path.join(rootdir, layout.DATA_DIR), exist_ok=True)
        # Never sealed (docs/format/README.md §2c): legacy bcolz rewrites these files.
        write_json(layout.meta_path(rootdir, layout.STORAGE_FILE), meta, seal=False)
        write_json(os.path.join(rootdir, layout.ATTRS_FILE), attrs or {}, seal=False)
        chunk_bytes = 0 if storage.vlen else storage.chunklen * storage.row_unit(rowshape)
        sizes = Sizes((0, *rowshape), 0, v1.legacy_cbytes(0, chunk_bytes))
        write_json(layout.meta_path(rootdir, layout.SIZES_FILE), sizes.to_json(), seal=False)
        fsync_dir(rootdir)
        storage = v1.storage_from_json(meta)
        return cls(rootdir, storage, sizes, readonly=False)

    @property
    def readonly(self) -> bool:
        return self._readonly

    def encoder(self, nthreads: int) -> Blosc1Encoder:
        """What compresses this dataset's new chunks."""
        return Blosc1Encoder(self.storage, nthreads)

    def _check_writable(self) -> None:
        if self._readonly:
            raise ReadOnlyError(f"{self.rootdir} is opened read-only (mode 'r')")
        if self.lock is not None:
            self.lock.check()

    # -- the interface ---------------------------------------------------------

    def _read(self, i: int):
        path = v1.chunk_path(self.rootdir, i)
        try:
            data = _files.read_regular(path)[0]
        except FileNotFoundError:
            raise snapshot.legacy_missing(self, i, path) from None
        return v1.unpack_chunk(data, path, i)

    def _count(self) -> None:
        """``cbytes``: the compressed bytes of the full chunks and of the partial last one."""
        self.cbytes = self._full_cbytes + self._part_cbytes

    def get(self, first: int, stop: int) -> list:
        if not 0 <= first <= stop <= self.nchunks:
            raise IndexError(f"chunks {first}..{stop} outside 0..{self.nchunks}")
        return [self._read(i) for i in range(first, stop)]

    def present_chunks(self) -> int:
        """One more than the highest chunk number with a file in ``data/`` (for
        :meth:`ChunkReader.verify`: the chunks that can exist at all).

        Raises
        ------
        OSError
            If ``data/`` cannot be listed.
        """
        numbers = (v1.chunk_number(n) for n in os.listdir(os.path.join(self.rootdir,
                                                                         layout.DATA_DIR)))
        return max((n + 1 for n in numbers if n is not None), default=0)

    def _stored_cbytes(self, i: int) -> int:
        try:
            return max(0, os.path.getsize(v1.chunk_path(self.rootdir, i)) - v1.BLPK_HEADER.size)
        except FileNotFoundError:
            return 0

    def put(self, items: list[tuple[int, object, int]]) -> None:
        self._check_writable()
        for i, entry, size in items:
            if not 0 <= i <= self.nchunks:
                raise IndexError(f"chunk {i} would leave a gap after {self.nchunks}")
            if isinstance(entry, Special):
                raise TypeError("legacy datasets store no special-value chunks")
            full, was_nfull = size == self.chunk_bytes, self._nfull
            if full and i < self._nfull:
                self._full_cbytes -= self._stored_cbytes(i)
            path = v1.chunk_path(self.rootdir, i)
            # The bytes are fsynced before the rename: renamed over a committed
            # chunk, unsynced bytes could reach the disk after the new name
            # does, and a power cut would leave that chunk empty.  The
            # directory is fsynced once, by the commit (_sync).
            write_atomic(path, v1.pack_chunk(entry), sync_dir=False)
            self._pending.add(path)
            self.nchunks = max(self.nchunks, i + 1)
            if full:
                self._full_cbytes += len(entry)
                self._nfull = max(self._nfull, i + 1)
            if not full:  # the partial last chunk
                self._part_cbytes = len(entry)
            elif i >= was_nfull:  # the partial last chunk, now full
                self._part_cbytes = 0
            self._count()

    def _sync(self) -> None:
        """Make the chunk files written since the last commit durable (their bytes
        already are: put): their names, by an fsync of ``data/``."""
        if self._pending:
            fsync_dir(os.path.join(self.rootdir, layout.DATA_DIR))
        self._pending.clear()

    def _record(self, sizes: Sizes) -> None:
        legacy = Sizes(sizes.shape, sizes.nbytes,
                       v1.legacy_cbytes(self._full_cbytes, self._buffer_bytes))
        write_json(layout.meta_path(self.rootdir, layout.SIZES_FILE), legacy.to_json(),
                   seal=False)
        self.length = sizes.shape[0]

    def commit(self, sizes: Sizes) -> None:
        self._check_writable()
        self._sync()
        self._record(sizes)

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        self._check_writable()
        if nchunks > self.nchunks:
            raise IndexError(f"cannot truncate {self.nchunks} chunks to {nchunks}")
        self._sync()
        nfull = sizes.shape[0] // self.storage.chunklen
        for i in range(nfull, self._nfull):
            self._full_cbytes -= self._stored_cbytes(i)
        old, self.nchunks, self._nfull = self.nchunks, nchunks, min(self._nfull, nfull)
        self._part_cbytes = self._stored_cbytes(self._nfull) if nchunks > self._nfull else 0
        self._count()
        # Metadata first: from here on the dataset is the shorter one; then
        # the chunk files it no longer counts go (legacy bcolz leaves them).
        self._record(sizes)
        for i in range(nchunks, old):
            try:
                os.unlink(v1.chunk_path(self.rootdir, i))
            except FileNotFoundError:
                pass
        fsync_dir(os.path.join(self.rootdir, layout.DATA_DIR))

    def close(self) -> None:
        self._pending.clear()
