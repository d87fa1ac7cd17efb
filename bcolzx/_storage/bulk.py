"""Bulk writes of a new dataset by independent tasks: one whole superchunk file per task.

For writers that fill a new dataset from many workers at once (Dask's
``from_dask``): task ``k`` compresses the rows of superchunk ``k`` (the same
encoding as any append: special values, the byte-delta policy, zone-map
bounds) into a file of its own, written under a unique name, committed
(fsynced) and renamed into place; it returns what the commit needs and no
data.  Tasks share nothing and take no lock: nobody else can see the hidden
directory they write into.  When every task has succeeded, :func:`commit`
writes the zone map, then ``meta/sizes`` (the commit point) once.  The only
writer of superchunk files is ``_storage``: this module, and the stores.
Datasets of strings and bytes (``storage.vlen``) are written the same way,
each task encoding its chunks through a
:class:`~bcolzx._storage.vlen.VlenArray` (pickles are not: only the public
classes make them).

On object storage (:func:`prepare_objects`) task ``k`` uploads its
superchunk as one whole object ``data/__k.bin`` (the bytes of
:func:`bcolzx._format.parts.encode`); :func:`commit` then uploads
``meta/storage`` and the zone map together, and ``meta/sizes`` last: until
then there is no dataset for a reader (docs/format/README.md §5).
"""

from __future__ import annotations

import operator
import os
import uuid
from dataclasses import dataclass
from math import ceil, prod
from typing import Any

import numpy as np

from bcolzx._format import jsonfile, layout, parts, zonemap
from bcolzx._format.meta import Sizes, Storage, write_sizes, write_storage
from bcolzx._format.superchunk import SPECIAL_CBYTES, SuperchunkFile
from bcolzx._storage.base import ChunkStore, Special
from bcolzx._storage.directory import geometry_of
from bcolzx._storage.encoding import quantize
from bcolzx._storage.zones import bounds

__all__ = ["Target", "Written", "prepare", "prepare_objects", "write_superchunk", "commit"]


# -- one task: one superchunk file ------------------------------------------------


class _SuperchunkSink(ChunkStore):
    """The chunks of one superchunk file of a dataset being written, for one task.

    A :class:`~bcolzx._storage.engine.ChunkedArray` over it sees a dataset
    whose first ``number * K`` chunks are stored already; what it appends
    goes into this file.  Nothing is read back; :meth:`commit` commits the
    file's index.
    """

    def __init__(self, path: str, number: int, storage: Storage, rowshape: tuple):
        k = storage.chunks_per_superchunk
        self.storage, self.rowshape = storage, tuple(rowshape)
        self.first = number * k
        self.length = self.first * storage.chunklen
        self.nchunks = self.first
        self.cbytes = 0
        geometry, _ = geometry_of(storage, self.rowshape, path)
        self.file = SuperchunkFile.create(path, number, geometry)

    def get(self, first: int, stop: int) -> list:
        raise IndexError("a superchunk being written is not read back")

    def put(self, items: list[tuple[int, object, int]]) -> None:
        group = []
        for i, entry, size in items:
            slot = i - self.first
            if not 0 <= slot < self.storage.chunks_per_superchunk:
                raise IndexError(f"chunk {i} is not in superchunk {self.file.number}")
            self.cbytes += SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)
            group.append((slot, entry, size))
        self.file.write(group)
        self.nchunks = self.first + self.file.index.nchunks

    def truncate(self, nchunks: int, last_size: int, sizes: Sizes) -> None:
        raise ValueError("a superchunk being written is not truncated")

    def commit(self, sizes: Sizes) -> None:
        self.file.commit()


class _ObjectSink(_SuperchunkSink):
    """The chunks of one superchunk object of a dataset being written on object
    storage: gathered in memory, uploaded whole by :meth:`commit`."""

    def __init__(self, objects, number: int, storage: Storage, rowshape: tuple):
        k = storage.chunks_per_superchunk
        self.storage, self.rowshape = storage, tuple(rowshape)
        self.objects, self.number = objects, number
        self.first = number * k
        self.length = self.first * storage.chunklen
        self.nchunks = self.first
        self.cbytes = 0
        self.geometry, _ = geometry_of(storage, self.rowshape, objects.url)
        self.items: list[tuple[int, object, int]] = []
        self.generation = 0

    def put(self, items: list[tuple[int, object, int]]) -> None:
        for i, entry, size in items:
            slot = i - self.first
            if not 0 <= slot < self.storage.chunks_per_superchunk:
                raise IndexError(f"chunk {i} is not in superchunk {self.number}")
            self.cbytes += SPECIAL_CBYTES if isinstance(entry, Special) else len(entry)
            self.items.append((slot, entry, size))
        self.nchunks = self.first + len(self.items)

    def commit(self, sizes: Sizes) -> None:
        body, idx = parts.encode(self.number, self.geometry, self.items)
        self.objects.put({parts.base_key(self.number): b"".join(body)})
        self.generation = idx.generation


@dataclass(frozen=True)
class Target:
    """A dataset being written: its hidden directory (or, on object storage, its
    URL and objects) and how its chunks are made."""

    rootdir: str
    storage: Storage
    rowshape: tuple
    #: On object storage, the dataset's :class:`~bcolzx._storage.objects.Objects`.
    objects: Any = None

    @property
    def rows_per_file(self) -> int:
        return self.storage.chunklen * self.storage.chunks_per_superchunk

    @property
    def rowbytes(self) -> int:
        """What a row counts in ``meta/sizes``'s nbytes (§2d for variable-length items)."""
        if self.storage.vlen:
            return layout.VLEN_ROW_NBYTES
        return self.storage.dtype.itemsize * prod(self.rowshape)

    @property
    def zoned(self) -> bool:
        return self.rowshape == () and zonemap.has_zonemap(self.storage.dtype)


@dataclass(frozen=True)
class Written:
    """What task `number` reports: enough for the commit, no data."""

    number: int
    generation: int
    nchunks: int
    cbytes: int
    zones: Any  # per-chunk (min, max, nan) records, or None


def _chunk_bounds(block: np.ndarray, chunklen: int, dtype: np.dtype) -> np.ndarray:
    """The zone map records of the chunks of `block` (as the engine notes them)."""
    out = [bounds(block[a:a + chunklen]) for a in range(0, len(block), chunklen)]
    return np.array(out, dtype=zonemap.stats_dtype(dtype))


def prepare(rootdir: str, storage: Storage, rowshape: tuple, per_file: int) -> Target:
    """The bulk write into `rootdir`, a new empty dataset of `storage`: its
    superchunks hold `per_file` chunks (``meta/storage`` is rewritten so)."""
    storage = storage.replace(chunks_per_superchunk=int(per_file))
    write_storage(rootdir, storage)
    return Target(rootdir, storage, tuple(rowshape))


def prepare_objects(objects, storage: Storage, rowshape: tuple, per_file: int) -> Target:
    """The bulk write of a new dataset of `storage` at `objects` (object storage):
    nothing is uploaded before the tasks' superchunks."""
    storage = storage.replace(chunks_per_superchunk=int(per_file))
    return Target(objects.url, storage, tuple(rowshape), objects)


def write_superchunk(block: np.ndarray, target: Target, number: int,
                     nrows: int) -> Written:
    """Task `number`: compress `block` (the `nrows` rows of superchunk `number`) into
    its file."""
    from bcolzx._storage import engine_for  # the engines import nothing from here

    st = target.storage
    if st.vlen == "pickle":
        raise TypeError("pickled objects are not written in bulk (only the public classes "
                        "pickle, after checking allow_pickle)")
    rows = np.ascontiguousarray(block, dtype=st.dtype)
    if st.cparams.quantize and st.dtype.kind == "f":
        rows = np.ascontiguousarray(quantize(rows, st.cparams.quantize).astype(st.dtype))
    if rows.shape != (nrows, *target.rowshape):
        raise ValueError(f"block {number} has shape {rows.shape}, superchunk {number} needs "
                         f"{(nrows, *target.rowshape)}")
    if target.objects is not None:
        osink = _ObjectSink(target.objects, number, st, target.rowshape)
        engine = engine_for(osink, nthreads=1)
        engine.append(rows)
        engine.flush()  # the short last chunk, then the whole object uploaded
        return Written(number, osink.generation, len(osink.items), osink.cbytes,
                       _chunk_bounds(rows, st.chunklen, st.dtype) if target.zoned else None)
    final = layout.data_path(target.rootdir, number)
    part = f"{final}.{uuid.uuid4().hex}.part"
    try:
        sink = _SuperchunkSink(part, number, st, target.rowshape)
        engine = engine_for(sink, nthreads=1)
        engine.append(rows)
        engine.flush()  # the short last chunk, then the index (generation 2), fsynced
        os.replace(part, final)
    except BaseException:
        _remove(part)
        raise
    zones = _chunk_bounds(rows, st.chunklen, st.dtype) if target.zoned else None
    return Written(number, sink.file.index.generation, sink.file.index.nchunks, sink.cbytes,
                    zones)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def commit(target: Target, length: int, written: list[Written]) -> None:
    """Write the zone map, then ``meta/sizes``: the dataset now holds `length` rows."""
    st = target.storage
    nfiles = ceil(ceil(length / st.chunklen) / st.chunks_per_superchunk)
    written = sorted(written, key=operator.attrgetter("number"))
    if [w.number for w in written] != list(range(nfiles)):
        raise RuntimeError(f"{nfiles} superchunks expected, tasks wrote "
                           f"{[w.number for w in written]}")
    sizes = Sizes((length, *target.rowshape), length * target.rowbytes,
                  sum(w.cbytes for w in written), tuple(w.generation for w in written))
    if target.objects is not None:  # meta/storage and the zone map, then meta/sizes
        small = {f"{layout.META_DIR}/{layout.STORAGE_FILE}": jsonfile.dumps(
            st.to_json(), layout.STORAGE_FILE, seal=st.sealed, uid=st.uid),
            layout.ATTRS_FILE: jsonfile.dumps({}, layout.ATTRS_FILE, seal=st.sealed,
                                              uid=st.uid)}
        if target.zoned and written:
            small[f"{layout.META_DIR}/{layout.ZONEMAP_FILE}"] = jsonfile.dumps(
                zonemap.to_json(np.concatenate([w.zones for w in written])),
                layout.ZONEMAP_FILE, seal=st.sealed, uid=st.uid)
        target.objects.put(small)
        target.objects.put({f"{layout.META_DIR}/{layout.SIZES_FILE}": jsonfile.dumps(
            sizes.to_json(), layout.SIZES_FILE, seal=st.sealed, uid=st.uid)})
        return
    jsonfile.fsync_dir(os.path.join(target.rootdir, layout.DATA_DIR))
    if target.zoned and written:
        zonemap.write(target.rootdir, np.concatenate([w.zones for w in written]))
    write_sizes(target.rootdir, sizes)
