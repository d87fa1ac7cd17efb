"""Dask arrays and dataframes over bcolzx datasets, and parallel evaluation.

Reading
    :func:`to_dask_array` (``carray.to_dask()``) makes a :class:`dask.array.Array`
    whose blocks follow the carray's chunks and superchunks; for an on-disk
    carray each task opens the dataset read-only by its directory and reads
    its rows straight from the superchunk files, so the graph holds paths and
    metadata, never data, and readers share no lock.  :func:`to_dask_dataframe`
    (``ctable.to_dask()``) does the same for a ctable with
    :func:`dask.dataframe.from_map`: one partition per block of rows, column
    projection pushed into the reads, ``divisions`` known when the index is
    the row number or a sorted column.

Snapshots
    A graph reads the dataset as it was committed when the graph was made:
    each task opens it as a reader that opened it then would (its rows, its
    ``meta/sizes`` generations; see :mod:`bcolzx._storage.snapshot`).  Rows a
    writer appends later are not seen; if a writer shrinks the dataset under
    the graph, a task raises :class:`~bcolzx.errors.ConcurrentModificationError`:
    make the graph again.

Tokens
    :func:`tokenize` gives Dask a cheap token: for an on-disk dataset its
    absolute path and committed state (shape, index generations, byte counts
    and the stat of ``meta/sizes``), never its data; in memory, a hash of the
    compressed chunks.

Writing
    :func:`from_dask` (also ``bcolzx.from_dask`` and ``bcolzx.to_bcolzx``)
    writes a Dask array or dataframe in parallel; see
    :mod:`bcolzx.interop._dask_write`.

Parallel evaluation
    :func:`evaluate_blocks` and :func:`evaluate` evaluate an expression block
    by block, each block a Dask task: ``bcolzx.eval(..., vm='dask')`` and
    ``ctable.where(..., vm='dask')``.

Dask is imported only when one of these functions is called.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from math import ceil
from typing import TYPE_CHECKING, Any

import numpy as np

from bcolzx._format import layout
from bcolzx._format.meta import Sizes, Storage
from bcolzx.interop._common import import_optional, refuse_objects
from bcolzx.interop._dask_write import from_dask

if TYPE_CHECKING:  # pragma: no cover - typing only
    import dask.array
    import dask.dataframe

    from bcolzx._storage.engine import ChunkedArray
    from bcolzx.carray import carray
    from bcolzx.ctable import ctable

__all__ = ["to_dask_array", "to_dask_dataframe", "tokenize", "from_dask", "to_bcolzx",
           "evaluate_blocks", "evaluate", "local_vm"]

_EXTRA = "dask"
#: Bytes a read task aims at (whole chunks): small enough that NumPy reuses the
#: memory of freed blocks instead of mapping, and faulting in, fresh pages for
#: each one, and that the tasks balance over the workers; large enough that
#: task overheads stay small.  Measured best between 4 and 32 MiB
#: (benchmarks/bench_dask.py); Dask's ``array.chunk-size`` caps it.
READ_BLOCK_BYTES = 16 << 20


def _import(module: str, what: str):
    return import_optional(module, _EXTRA, what)


def _target_bytes(most: int | None = None) -> int:
    """Bytes per block: Dask's ``array.chunk-size`` setting, at most `most`."""
    dask = _import("dask", "Dask interop")
    from dask.utils import parse_bytes

    size = parse_bytes(dask.config.get("array.chunk-size"))
    return size if most is None else min(size, most)


# -- tokens ----------------------------------------------------------------------------


def _digest(*parts: Any) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def _stat_marker(path: str) -> tuple:
    """What changes when a file is replaced: inode, size and times (None if missing)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return (None,)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _committed(ca: carray) -> None:
    """Flush a writable on-disk carray, so that its files hold what the object holds."""
    if ca.rootdir is not None and ca.mode != "r":
        ca.flush()


def tokenize(obj: carray | ctable) -> str:
    """A token that identifies the contents of a carray or ctable, without reading them.

    On disk: the absolute path, the committed state (shape, index
    generations, byte counts) and the inode, size and times of
    ``meta/sizes``, which every commit replaces; a writable object is flushed
    first.  In memory: a hash of the compressed chunks and the leftover rows.
    A ctable adds its column names and attributes.

    Parameters
    ----------
    obj : carray or ctable

    Returns
    -------
    str

    Raises
    ------
    OSError
        If a writable on-disk object cannot be flushed.
    """
    from bcolzx.carray import carray

    if not isinstance(obj, carray):
        where = obj.rootdir
        return _digest("bcolzx.ctable", where and (where if "://" in where else
                                                    os.path.abspath(where)),
                       obj.names, sorted(obj.attrs.getall().items()),
                       [tokenize(obj.cols[n]) for n in obj.names])
    _committed(obj)
    if obj.rootdir is None:
        return _memory_token(obj)
    store = obj.engine.store
    if _remote(store):  # objects never change: the URL and the commit identify the data
        sizes = getattr(store, "sizes", None)
        return _digest("bcolzx.carray", store.objects, obj.shape, str(obj.dtype), store.cbytes,
                       sizes and (sizes.generations, sizes.parts),
                       getattr(store.storage, "uid", None))
    rootdir = os.path.abspath(obj.rootdir)
    return _digest("bcolzx.carray", rootdir, obj.shape, str(obj.dtype), store.cbytes,
                   getattr(store, "generations", None),
                   _stat_marker(layout.meta_path(rootdir, layout.SIZES_FILE)),
                   _stat_marker(layout.meta_path(rootdir, layout.STORAGE_FILE)))


def _remote(store) -> bool:
    """Whether `store` is on object storage (its objects then travel in the graph)."""
    return getattr(store, "objects", None) is not None


def _memory_token(ca: carray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(("bcolzx.carray", ca.shape, str(ca.dtype), ca.chunklen)).encode())
    for entry in ca.engine.store.get(0, ca.nchunks):
        h.update(entry if isinstance(entry, (bytes, bytearray, memoryview))
                 else repr(entry).encode())
    left = ca.leftover_array
    if left.dtype.hasobject:  # strings or bytes: their encoded chunk
        from bcolzx._format import strings

        h.update(strings.encode_rows(left, strings.item_kind(left.dtype) or "pickle"))
    else:
        h.update(np.ascontiguousarray(left).view(np.uint8).tobytes())
    return h.hexdigest()


# -- what a task reads ---------------------------------------------------------------


@dataclass(frozen=True)
class ArraySource:
    """Where a task finds the rows of an on-disk carray, and the state to read.

    Small and picklable: a Dask graph holds these, never data.

    Attributes
    ----------
    rootdir : str
        The dataset directory (absolute), or its URL on object storage.
    token : str
        The carray's :func:`tokenize` token.
    storage : Storage or None
        Its ``meta/storage``; None for a legacy bcolz (v1) directory, which is
        read as it is when the task runs.
    sizes : Sizes or None
        The committed ``meta/sizes`` the graph was made from.
    objects : Objects or None
        On object storage, where the dataset's objects are (a URL and the
        filesystem's options, which pickle small): the task reads each
        object's index and its chunks by ranged requests, straight from the
        store.
    """

    rootdir: str
    token: str
    storage: Storage | None = None
    sizes: Sizes | None = None
    objects: Any = None

    def __dask_tokenize__(self) -> str:
        return self.token

    def open(self, stop: int) -> ChunkedArray:
        """A private read-only engine holding at least the rows before `stop`.

        Only the rows up to the end of `stop`'s chunk are opened, so the
        dataset's partial last chunk is decoded only by the task that reads it.

        Raises
        ------
        CorruptDataError, UnsupportedFormatError
            If the metadata is damaged.
        """
        from bcolzx._storage import DirectoryStore, engine_for
        from bcolzx._storage.legacy import LegacyStore

        if self.objects is not None:
            from bcolzx._storage import remote

            if self.storage is None:  # legacy: its small files read again by the task
                ostore = remote.open_store(self.objects, readonly=True)
            else:  # the commit recorded: no metadata read, chunks of later appends unseen
                assert self.sizes is not None
                ostore = remote.ObjectStore(self.objects, self.storage, self.sizes,
                                            readonly=True)
            return engine_for(ostore, nthreads=1)
        if self.storage is None:
            return engine_for(LegacyStore.open(self.rootdir, readonly=True), nthreads=1)
        cl, k = self.storage.chunklen, self.storage.chunks_per_superchunk
        rows = min(self.sizes.shape[0], -(-stop // cl) * cl)
        nfiles = ceil(ceil(rows / cl) / k)
        sizes = replace(self.sizes, shape=(rows, *self.sizes.shape[1:]),
                        generations=self.sizes.generations[:nfiles])
        store = DirectoryStore(self.rootdir, self.storage, sizes, readonly=True)
        return engine_for(store, nthreads=1)  # a VlenArray for strings and bytes

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start .. stop-1`` of the recorded state.

        Raises
        ------
        ConcurrentModificationError
            If a writer has shrunk the dataset since.
        CorruptDataError, ChecksumError
            If the data is damaged.
        """
        engine = self.open(stop)
        try:
            return engine.read(start, stop)
        finally:
            engine.close(flush=False)


def source_of(ca: carray) -> ArraySource:
    """The :class:`ArraySource` of an on-disk carray, at its committed state.

    A writable carray is flushed first.

    Raises
    ------
    ValueError
        If `ca` is in memory.
    """
    if ca.rootdir is None:
        raise ValueError("an in-memory carray has no files to read from")
    _committed(ca)
    store = ca.engine.store
    if _remote(store):
        if not store.native:
            return ArraySource(ca.rootdir, tokenize(ca), objects=store.objects)
        return ArraySource(ca.rootdir, tokenize(ca), store.storage, store.sizes,
                           objects=store.objects)
    rootdir = os.path.abspath(ca.rootdir)
    if not store.native:
        return ArraySource(rootdir, tokenize(ca))
    sizes = Sizes(ca.shape, ca.nbytes, store.cbytes, store.generations)
    return ArraySource(rootdir, tokenize(ca), store.storage, sizes)


# -- carray -> dask.array --------------------------------------------------------------


def _aligned_rows(chunklen: int, rowbytes: int, per_superchunk: int | None,
                  target: int) -> int:
    """Rows per block: whole chunks, about `target` bytes, never across a superchunk."""
    m = max(1, target // max(1, chunklen * rowbytes))
    if per_superchunk:
        m = max(d for d in range(1, min(m, per_superchunk) + 1) if per_superchunk % d == 0)
    return chunklen * m


def _superchunk_chunks(ca: carray) -> int | None:
    store = ca.engine.store
    return store.storage.chunks_per_superchunk if store.native else None


def _check_rows(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what} must be a positive number of rows, not {value!r}")
    return int(value)


def _bounds(length: int, rows: int) -> list[int]:
    """Block starts, then `length`: ``[0, rows, 2*rows, ..., length]``."""
    return [*range(0, length, rows), length] if length else [0, 0]


def _read_block(source: ArraySource, block_info=None) -> np.ndarray:
    (start, stop), *_ = block_info[None]["array-location"]
    return source.read(start, stop)


def to_dask_array(ca: carray, chunks: int | None = None) -> dask.array.Array:
    """A Dask array over a carray (``carray.to_dask()``).

    Parameters
    ----------
    ca : carray
    chunks : int, optional
        Rows per Dask block.  Default: whole chunks of the carray, about
        :data:`READ_BLOCK_BYTES` (16 MiB; less if Dask's ``array.chunk-size``
        is smaller) per block, never across a superchunk, so each task reads
        whole chunks of one file.

    Returns
    -------
    dask.array.Array
        Blocks along the first axis only.  On disk, every task opens the
        dataset read-only by its path and reads its rows; the graph holds no
        data and readers take no lock.  In memory, the carray itself is the
        graph's one data item, shared by the tasks.

    Raises
    ------
    ImportError
        If Dask is not installed.
    ValueError
        For a non-positive `chunks`.

    Examples
    --------
    >>> import bcolzx
    >>> x = bcolzx.arange(10, chunklen=4).to_dask(chunks=4)
    >>> x.chunks, int(x.sum().compute())
    (((4, 4, 2),), 45)
    """
    refuse_objects(ca, "a Dask array read by bcolzx's tasks", vlen_ok=True)
    da = _import("dask.array", "carray.to_dask()")
    rowbytes = ca.atomsize
    rows = _aligned_rows(ca.chunklen, rowbytes, _superchunk_chunks(ca),
                         _target_bytes(READ_BLOCK_BYTES)) \
        if chunks is None else _check_rows(chunks, "chunks")
    bounds = _bounds(len(ca), rows)
    blocks = (tuple(b - a for a, b in zip(bounds, bounds[1:])),
              *((d,) for d in ca.shape[1:]))
    meta = np.empty((0,) * ca.ndim, dtype=ca.dtype)
    token = tokenize(ca)
    name = f"bcolzx-carray-{_digest(token, blocks)}"
    if ca.rootdir is None:
        return da.from_array(ca, chunks=blocks, lock=False, asarray=True, name=name, meta=meta)
    return da.map_blocks(_read_block, source_of(ca), chunks=blocks, dtype=ca.dtype, meta=meta,
                         name=name)


# -- ctable -> dask.dataframe ----------------------------------------------------------


class _Attrs:
    """What :func:`bcolzx.interop.pandas.to_dataframe` reads of ``ctable.attrs``."""

    def __init__(self, values: dict):
        self._values = values

    def getall(self) -> dict:
        return dict(self._values)


class _Rows:
    """Some rows of a table, shaped as ``to_dataframe`` reads a ctable."""

    def __init__(self, arrays: dict[str, np.ndarray], attrs: dict, length: int):
        self.cols = arrays
        self.names = list(arrays)
        self.attrs = _Attrs(attrs)
        self._length = length

    def __len__(self) -> int:
        return self._length


@dataclass(frozen=True)
class TableSpec:
    """How every partition of a ctable's dataframe is built (small, picklable).

    Attributes
    ----------
    columns : tuple of str
        The dataframe's columns, in order.
    index : tuple of str
        The columns that make the index (empty: the row number).
    attrs : dict
        The pandas metadata of the ctable's attrs, with the index keys
        describing `index`.
    dtypes : dict
        NumPy dtype and row shape of every column read.
    token : str
        The ctable's token.
    """

    columns: tuple
    index: tuple
    attrs: dict
    dtypes: dict
    token: str

    def __dask_tokenize__(self) -> str:
        return _digest(self.token, self.columns, self.index, sorted(self.attrs.items()))


@dataclass(frozen=True)
class DiskPart:
    """Rows ``start .. stop-1`` of on-disk columns, read by the task."""

    sources: dict
    start: int
    stop: int
    token: str

    def __dask_tokenize__(self) -> str:
        return _digest(self.token, self.start, self.stop)

    def read(self, names: list[str], spec: TableSpec) -> dict[str, np.ndarray]:
        return {n: self.sources[n].read(self.start, self.stop) for n in names}


class MemoryPart:
    """Rows ``start .. stop-1`` of an in-memory ctable.

    In one process the tasks read the shared table; pickled (to another
    process) it carries only its own rows.
    """

    def __init__(self, table, start: int, stop: int, token: str, arrays=None):
        self.table, self.start, self.stop, self.token = table, start, stop, token
        self._arrays = arrays

    def __dask_tokenize__(self) -> str:
        return _digest(self.token, self.start, self.stop)

    def __reduce__(self):
        arrays = self._arrays if self._arrays is not None else \
            self.read(list(self.table.names), None)
        return (MemoryPart, (None, self.start, self.stop, self.token, arrays))

    def read(self, names: list[str], spec: TableSpec | None) -> dict[str, np.ndarray]:
        if self._arrays is not None:
            return {n: self._arrays[n] for n in names}
        return {n: self.table.cols[n][self.start:self.stop] for n in names}


class EmptyPart:
    """No rows: what a partition looks like, for the dataframe's ``meta``."""

    start = stop = 0

    def read(self, names: list[str], spec: TableSpec) -> dict[str, np.ndarray]:
        return {n: np.empty((0, *spec.dtypes[n][1]), spec.dtypes[n][0]) for n in names}


def read_partition(part, spec: TableSpec, columns: list[str] | None = None):
    """One partition: a pandas DataFrame as ``ctable.todataframe()`` would give those rows.

    The index is the row number (a RangeIndex from ``part.start``) or the
    spec's index column(s).

    Raises
    ------
    KeyError
        For a column in `columns` that the table does not have.
    ConcurrentModificationError, CorruptDataError
        As :meth:`ArraySource.read`.
    """
    pd = _import("pandas", "ctable.to_dask()")
    from bcolzx.interop.pandas import to_dataframe

    wanted = list(spec.columns) if columns is None else list(columns)
    for name in wanted:
        if name not in spec.dtypes:
            raise KeyError(f"no column {name!r}; columns are {list(spec.columns)}")
    arrays = part.read(list(dict.fromkeys([*spec.index, *wanted])), spec)
    df = to_dataframe(_Rows(arrays, spec.attrs, part.stop - part.start), columns=wanted)
    if not spec.index:
        df.index = pd.RangeIndex(part.start, part.stop)
    return df


def _partition_rows(ct: ctable, names: list[str], rows: int | None) -> int:
    if rows is not None:
        return _check_rows(rows, "partition_rows")
    cols = [ct.cols[n] for n in names] or list(ct.cols.values())
    unit = max(c.chunklen for c in cols)
    rowbytes = sum(c.atomsize for c in cols)
    return unit * max(1, _target_bytes(READ_BLOCK_BYTES) // max(1, rowbytes * unit))


def _is_sorted(col: carray) -> bool:
    """Whether a 1-D column never decreases (NaN and NaT make it unsorted)."""
    from bcolzx.carray import iterblocks

    prev = None
    for block in iterblocks(col):
        if not len(block):
            continue
        if prev is not None and not block[0] >= prev:
            return False
        if not np.all(block[1:] >= block[:-1]):
            return False
        prev = block[-1]
    return True


def _first_greater(col: carray, start: int, value) -> int:
    """The first row from `start` holding more than `value` (a sorted column)."""
    n, cl = len(col), col.chunklen
    while start < n:
        block = col[start:min(n, (start // cl + 1) * cl)]
        i = int(np.searchsorted(block, value, side="right"))
        if i < len(block):
            return start + i
        start += len(block)
    return n


def _sorted_starts(col: carray, starts: list[int]) -> list[int]:
    """Partition starts moved forward so that no value spans two partitions."""
    n = len(col)
    out = [0]
    for b in starts[1:]:
        if b <= out[-1]:
            continue
        b = _first_greater(col, b, col[b - 1:b][0])  # a NumPy scalar, not .item()
        if b < n:
            out.append(b)
    return out


def _index_divisions(ct: ctable, spec: TableSpec, starts: list[int]) -> tuple:
    """The index values at the partition starts and at the last row."""
    from bcolzx.interop.pandas import INDEX_FREQ_KEY

    name = spec.index[0]
    rows = np.array([*starts, len(ct) - 1])
    arrays = {name: ct.cols[name][rows]}
    spec = replace(spec, attrs={k: v for k, v in spec.attrs.items() if k != INDEX_FREQ_KEY})
    df = read_partition(MemoryPart(None, 0, len(rows), "", arrays), spec, columns=[])
    values = tuple(df.index)
    if any(not a < b for a, b in zip(values[:-2], values[1:-1])) or values[-1] < values[-2]:
        raise ValueError(f"column {name!r} is not sorted, as sorted=True claimed")
    return values


def to_dask_dataframe(ct: ctable, columns=None, index=None, sorted: bool | None = None,
                      partition_rows: int | None = None) -> dask.dataframe.DataFrame:
    """A Dask DataFrame over a ctable (``ctable.to_dask()``), built with ``dd.from_map``.

    Each partition is what ``ct.todataframe()`` gives for its rows (the
    pandas dtypes, categories and time zones recorded by ``fromdataframe``
    included).  Column selections on the result are pushed into the reads:
    only the columns used are read.  On disk, every task opens the columns
    read-only by their paths; the graph holds no data.

    Parameters
    ----------
    ct : ctable
    columns : sequence of str or str, optional
        The columns (default: all, but those of the index).
    index : str, False or None
        A column to make the index; False for the row number; None (default)
        for the index ``fromdataframe`` stored, if it has one level, else the
        row number.
    sorted : bool, optional
        Whether the index column never decreases.  None (default) checks it
        by reading that column once; True trusts it; False gives unknown
        divisions.  With the row number as the index, divisions are always
        known.
    partition_rows : int, optional
        Rows per partition.  Default: whole chunks of the columns, about
        :data:`READ_BLOCK_BYTES` (16 MiB) of the columns read per partition.
        With a sorted index, partition starts move forward to the next new
        index value, so that equal values stay in one partition.

    Returns
    -------
    dask.dataframe.DataFrame

    Raises
    ------
    ImportError
        If Dask or pandas is not installed.
    KeyError
        For an unknown column.
    ValueError
        For a non-positive `partition_rows`, an index column that
        ``sorted=True`` wrongly called sorted, or a column whose rows are
        not scalars.

    Examples
    --------
    >>> import numpy as np, bcolzx
    >>> ct = bcolzx.ctable([np.arange(6), np.arange(6) % 2], names=["t", "g"])
    >>> ddf = ct.to_dask(index="t", partition_rows=4)
    >>> ddf.divisions
    (0, 4, 5)
    >>> ddf.groupby("g").size().compute().to_dict()
    {0: 3, 1: 3}
    """
    dd = _import("dask.dataframe", "ctable.to_dask()")
    from bcolzx.interop.pandas import (
        CATEGORIES_KEY,
        INDEX_COLUMNS_KEY,
        INDEX_FREQ_KEY,
        INDEX_NAMES_KEY,
    )

    attrs = ct.attrs.getall()
    stored = list(attrs.get(INDEX_COLUMNS_KEY) or [])
    plain = {k: v for k, v in attrs.items()
             if k not in (INDEX_COLUMNS_KEY, INDEX_NAMES_KEY, INDEX_FREQ_KEY)}
    if index is None and len(stored) == 1:
        index_cols, spec_attrs = stored, attrs
    elif index is None or index is False:
        index_cols, spec_attrs = [], plain
    else:
        if not isinstance(index, str) or index not in ct.cols:
            raise KeyError(f"no column {index!r} to make the index; columns are {ct.names}")
        index_cols = [index]
        spec_attrs = {**plain, INDEX_COLUMNS_KEY: [index], INDEX_NAMES_KEY: [index]}
    if columns is None:
        names = [n for n in ct.names if n not in index_cols]
    else:
        names = [c.strip() for c in columns.split(",") if c.strip()] \
            if isinstance(columns, str) else list(columns)
        for name in names:
            ct.cols[name]  # noqa: B018 - KeyError for an unknown column
    refuse_objects(ct, "a Dask dataframe read by bcolzx's tasks", [*index_cols, *names],
                   vlen_ok=True)
    used = list(dict.fromkeys([*index_cols, *ct.names]))
    token = tokenize(ct)
    spec = TableSpec(tuple(names), tuple(index_cols), spec_attrs,
                     {n: (ct.cols[n].dtype, ct.cols[n].shape[1:]) for n in used}, token)
    n = len(ct)
    starts = _bounds(n, _partition_rows(ct, [*index_cols, *names], partition_rows))[:-1]
    divisions = None
    if not index_cols:
        divisions = (*starts, n - 1) if n else None
    elif len(index_cols) == 1 and n and sorted is not False \
            and CATEGORIES_KEY + index_cols[0] not in attrs:
        col = ct.cols[index_cols[0]]
        if col.ndim == 1 and (sorted or _is_sorted(col)):
            starts = _sorted_starts(col, starts)
            divisions = _index_divisions(ct, spec, starts)
    stops = [*starts[1:], n]
    if ct.rootdir is None:
        parts = [MemoryPart(ct, a, b, token) for a, b in zip(starts, stops)]
    else:
        sources = {name: source_of(ct.cols[name]) for name in used}
        parts = [DiskPart(sources, a, b, token) for a, b in zip(starts, stops)]
    meta = read_partition(EmptyPart(), spec)
    return dd.from_map(read_partition, parts, args=(spec,), meta=meta, divisions=divisions,
                       label="bcolzx-ctable", enforce_metadata=False)


# -- vm='dask': expressions evaluated block by block as Dask tasks --------------------


def local_vm() -> str:
    """The virtual machine each Dask task evaluates its block with: numexpr when usable."""
    from bcolzx.defaults import _numexpr_usable

    return "numexpr" if _numexpr_usable() else "python"


def _evaluate_block(text: str, vm: str, operands: dict, scalars: dict) -> np.ndarray:
    from bcolzx._query.expr import compile_expression

    return compile_expression(text).evaluate({**operands, **scalars}, vm)


def _parallelism() -> int:
    """Threads that run tasks: those of the current distributed client, else the cores."""
    try:
        from distributed import Client

        return max(1, sum(Client.current(allow_global=True).nthreads().values()))
    except (ImportError, ValueError):
        return os.cpu_count() or 1


def _operand_blocks(col, ranges: list[tuple[int, int]]) -> list:
    """Per range, what a task gets for one operand: a Dask block that reads it from the
    files (on-disk carrays), else the rows themselves, read when asked for."""
    from bcolzx.carray import carray

    if isinstance(col, carray) and col.rootdir is not None:
        blen = ranges[0][1] - ranges[0][0] if ranges else 1
        return list(to_dask_array(col, chunks=blen).to_delayed().ravel())
    return [None] * len(ranges)


def evaluate_blocks(expr, columns: Mapping[str, Any], scalars: Mapping[str, Any] | None = None,
                    blen: int | None = None, vm: str | None = None,
                    skip_block=None, **_ignored) -> Iterator[tuple[int, np.ndarray]]:
    """As :func:`bcolzx._query.blocks.evaluate_blocks`, each block evaluated by a Dask task.

    Blocks are computed a few at a time (twice the threads of the current
    Dask client, or of the machine) with Dask's current scheduler, and
    yielded in order; blocks that `skip_block` rules out are never read.
    Blocks of on-disk carrays are read by the tasks from the files; other
    operands are sliced here and handed to the tasks.

    Parameters
    ----------
    expr : Expression or str
    columns, scalars, blen, skip_block
        As :func:`bcolzx._query.blocks.evaluate_blocks`.
    vm : {'python', 'numexpr'}, optional
        What each task evaluates its block with (default :func:`local_vm`).

    Yields
    ------
    tuple of (int, numpy.ndarray)

    Raises
    ------
    ImportError
        If Dask is not installed.
    ExpressionError, ValueError
        As :func:`bcolzx._query.blocks.evaluate_blocks`.
    """
    dask = _import("dask", "vm='dask'")
    from bcolzx._query import blocks as _blocks

    expr, names, values, n, blen = _blocks.operands(expr, columns, scalars, blen)
    vm = local_vm() if vm is None else vm
    if not names:
        yield 0, expr.evaluate(values, vm)
        return
    ranges = [(a, min(a + blen, n)) for a in range(0, n, blen)]
    operands = {name: _operand_blocks(columns[name], ranges) for name in names}
    todo = [i for i, (a, b) in enumerate(ranges) if skip_block is None or not skip_block(a, b)]
    batch = 2 * _parallelism()
    task = dask.delayed(_evaluate_block, pure=True)
    for first in range(0, len(todo), batch):
        group = todo[first:first + batch]
        tasks = []
        for i in group:
            a, b = ranges[i]
            ops = {name: blocks[i] if blocks[i] is not None else np.asarray(columns[name][a:b])
                   for name, blocks in operands.items()}
            tasks.append(task(expr.text, vm, ops, values))
        for i, result in zip(group, dask.compute(*tasks)):
            yield ranges[i][0], result


def evaluate(expr, columns: Mapping[str, Any], scalars: Mapping[str, Any] | None = None,
             blen: int | None = None, vm: str | None = None) -> np.ndarray:
    """As :func:`bcolzx._query.blocks.evaluate`, each block evaluated by a Dask task.

    Raises
    ------
    ImportError
        If Dask is not installed.
    ExpressionError, ValueError
        As :func:`bcolzx._query.blocks.evaluate`.
    """
    from bcolzx._query import blocks as _blocks

    expr, names, _, n, _ = _blocks.operands(expr, columns, scalars, blen)
    if not n:  # no rows (or no columns): nothing to spread over tasks
        return _blocks.evaluate(expr, columns, scalars, blen=blen, vm=vm or local_vm())
    out = None
    for first, block in evaluate_blocks(expr, columns, scalars, blen=blen, vm=vm):
        if out is None:
            out = np.empty((n, *block.shape[1:]), block.dtype)
        out[first:first + len(block)] = block
    return out


#: ``to_bcolzx(x, rootdir, ...)``: the same as :func:`from_dask` (named as Dask's
#: ``to_zarr``).
to_bcolzx = from_dask
