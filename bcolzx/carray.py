"""``carray``: a compressed, chunked, optionally persistent NumPy array (bcolz 1.2 API).

The class is thin: it validates arguments and translates NumPy-style keys into
row ranges; the chunked-array engine (:mod:`bcolzx._storage`) does the work
over a memory or directory store.  Here: creating and opening, the public
properties, writing, copies and views, the Python protocols.  Its other
methods come from mixins, one concern each: values to rows and back
(:mod:`bcolzx._values`), keys (:mod:`bcolzx._keys`), iteration
(:mod:`bcolzx._iteration`), other formats (:mod:`bcolzx._exchange`) and
reductions (:mod:`bcolzx._analytics.methods`).
"""

from __future__ import annotations

import math
import os
import shutil
from typing import Any

import numpy as np

from bcolzx import attrs as _attrs
from bcolzx._analytics.methods import Reductions
from bcolzx._exchange import ArrayExchange
from bcolzx._format import layout, pickles, strings
from bcolzx._format.meta import CParams, Storage, check_item_kind
from bcolzx._iteration import Chunks, Iteration, iterblocks
from bcolzx._keys import Keys
from bcolzx._storage import DirectoryStore, MemoryStore, engine_for, writer
from bcolzx._storage.encoding import quantize as quantize  # importable from here, as before
from bcolzx._storage.legacy import LegacyStore
from bcolzx._storage.lock import WriterLock
from bcolzx._storage.objects import Objects, resolve
from bcolzx._storage.opening import open_store, seal_of
from bcolzx._values import Values, item_size
from bcolzx.defaults import defaults
from bcolzx.errors import LegacyFormatError, ReadOnlyError
from bcolzx.params import cparams as _cparams

# iterblocks is bcolzx.iterblocks (legacy bcolz.iterblocks): imported from here too.
__all__ = ["carray", "iterblocks"]

_MODES = ("r", "a", "w")
#: The codec of strings and bytes carrays created without `cparams`.
STRINGS_CODEC = "zstd"
#: Their C-Blosc2 block: a whole chunk (writers size one to about 512 KiB,
#: docs/format/strings.md), which zstd compresses about 1.4 times faster
#: than in the automatic blocks, and a little smaller.
STRINGS_BLOCKSIZE = 1 << 20


def _as_cparams(value) -> _cparams:
    if value is None:
        return _cparams()
    if isinstance(value, _cparams):
        return value
    if isinstance(value, dict):
        return _cparams(**value)
    raise TypeError(f"cparams must be a bcolzx.cparams or a dict, not {type(value).__name__}")


class carray(Values, Keys, Iteration, ArrayExchange, Reductions):
    """A compressed and chunked array, in memory or on disk (bcolz 1.2 ``carray``).

    Parameters
    ----------
    array : array_like, optional
        Initial data; a scalar becomes one element.
    cparams : cparams or dict, optional
        Compression parameters (default: ``bcolzx.defaults.cparams``; for
        strings and bytes, its level with the zstd codec and blocks of a
        whole chunk).
    dtype : numpy.dtype, optional
        Force this dtype (default: the data's, or float64 when empty).
    dflt : scalar, optional
        Value of the rows added by :meth:`resize` (default zero).
    expectedlen : int, optional
        Expected final length: picks the chunk length when `chunklen` is not given.
    chunklen : int, optional
        Rows per chunk.
    rootdir : str, optional
        Directory to persist to; None keeps the data in memory.  A URL
        (``s3://bucket/key``, ``gs://...``, ``https://...``, any fsspec URL)
        puts it on object storage: see docs/remote.md (a ``file://`` URL is
        the local directory).
    safe : bool
        Check and convert the dtype of data appended (legacy; always on here,
        kept for compatibility).
    mode : {'r', 'a', 'w'}
        With `rootdir`: read-only, append (open existing or create) or write
        (replace).
    lock_timeout : float, optional
        Seconds to wait when another writer holds the dataset (default
        ``bcolzx.defaults.lock_timeout``, 0: raise at once; ``math.inf``
        waits for ever).  In modes 'a' and 'w' the dataset's write lock is
        taken at the first change (creating counts) and kept until
        :meth:`close`; readers never take it (docs/reliability-concurrency.md).
    allow_pickle : bool, optional
        Allow object dtype: each value is stored with :mod:`pickle`, and
        reading unpickles, which runs whatever code the data names.  None
        (default) follows ``bcolzx.defaults.allow_pickle`` (False unless
        set) at each operation.  Without it an object carray can be opened
        (its length, dtype and attributes read, and it can be trimmed), but
        its values cannot be read or written.  Object carrays are
        one-dimensional: a list of lists gives one list per row.
    storage_options : dict, optional
        With a URL `rootdir`: options of its fsspec filesystem (endpoint,
        credentials, timeouts), e.g. ``{"endpoint_url": "http://127.0.0.1:9000"}``
        for s3fs.
    filesystem : fsspec.AbstractFileSystem, optional
        The filesystem `rootdir` (then a path in it) is on.

    Raises
    ------
    PickleNotAllowedError
        (a ``TypeError`` and a ``ValueError``) when creating a carray of
        object dtype, or reading or writing its values, without
        `allow_pickle`; nothing is pickled or unpickled then.
    ValueError
        For a bad mode or parameter.
    LockedError
        (an ``IOError``) when creating or replacing a dataset another writer
        holds; later, at the first change, when another writer holds it.
    TypeError
        For data that cannot be converted to the dtype, or a structured dtype
        holding objects.
    FileExistsError
        (an ``IOError``) when creating over an existing `rootdir` in mode 'a'.
    FileNotFoundError
        When opening a `rootdir` that does not exist in mode 'r'.
    ReadOnlyError
        When writing data in mode 'r'.
    AppendOnlyError
        (a ReadOnlyError) On object storage, for a rewrite of stored rows or a
        truncation.
    RemoteError
        (an ``OSError``) On object storage, when the store fails a request.
    """

    #: Set by the constructor while it appends a new dataset's rows on disk.
    _first_rows = False

    def __init__(self, array=None, cparams=None, dtype=None, dflt=None, expectedlen=None,
                 chunklen=None, rootdir=None, safe=True, mode="a", *, lock_timeout=None,
                 allow_pickle=None, storage_options=None, filesystem=None, _v1=False,
                 _fetched=None, _publish=True):
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, not {mode!r}")
        self._mode = mode
        self._allow_pickle = defaults.resolve_allow_pickle(allow_pickle)
        self._lock_timeout = defaults.resolve_lock_timeout(lock_timeout)
        self._safe = bool(safe)
        where = resolve(rootdir, storage_options, filesystem) if rootdir is not None else None
        self._remote = where if isinstance(where, Objects) else None
        self._rootdir = where.url if isinstance(where, Objects) else where
        if self._rootdir is not None and array is None and mode != "w":
            self._open(self._rootdir, mode, _fetched)
            return
        if mode == "w" and array is None and dtype is None and self._rootdir is not None \
                and self._exists():
            # Legacy: mode 'w' over an existing carray empties it, keeping its kind.
            old = carray(rootdir=self._remote or self._rootdir, mode="r")
            array = np.empty((0, *old.shape[1:]), dtype=old.dtype)
            cparams = old.cparams if cparams is None else cparams
            dflt = old.dflt if dflt is None else dflt
            chunklen = old.chunklen if chunklen is None else chunklen
            del old
        if mode == "r":
            raise ReadOnlyError("cannot create a carray in mode 'r'")
        if array is None:
            data = np.empty(0, dtype=np.dtype(dtype) if dtype is not None else np.float64)
        else:
            data = self._convert(array, dtype)
        if data.ndim == 0:
            data = data.reshape(1)
        # Variable-length items: pickles (object dtype), strings (StringDType)
        # or bytes (object declared as bytes), docs/format/strings.md.
        kind = strings.item_kind(data.dtype)
        objects = kind == "pickle"
        if data.dtype.hasobject:
            check_item_kind(data.dtype, kind)  # TypeError for objects in a structured dtype
        if kind in ("utf8", "bytes"):
            if data.ndim != 1:
                raise ValueError(f"a carray of {data.dtype} is one-dimensional, not of shape "
                                 f"{data.shape}")
            if _v1:
                raise LegacyFormatError(
                    f"a legacy bcolz (v1) directory cannot hold variable-length "
                    f"{'strings' if kind == 'utf8' else 'bytes'} ({data.dtype}): store them "
                    "fixed-width (dtype 'U' or 'S'), or in a bcolzx-format table")
        if objects:
            # Before anything is written or pickled.
            pickles.require(self._pickle_ok(), "creating a carray of object dtype",
                            self._rootdir)
        cp = _as_cparams(cparams)
        if cparams is None and kind in ("utf8", "bytes"):
            # Text and bytes: an entropy coder stores short, repetitive items (tickers,
            # codes) 1.5-2x smaller than lz4, and more so with blocks as large as the
            # chunk, which is always decoded whole (benchmarks/bench_strings.py).
            cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=STRINGS_CODEC,
                          quantize=0, blocksize=STRINGS_BLOCKSIZE, bytedelta="off")
        rowshape = data.shape[1:]
        rowbytes = data.dtype.itemsize * math.prod(rowshape)
        if rowbytes == 0:
            raise ValueError(f"rows of dtype {data.dtype} and shape {rowshape} hold no bytes")
        if expectedlen is not None and (not isinstance(expectedlen, (int, np.integer))
                                        or expectedlen < 0):
            raise ValueError(f"expectedlen must be an int >= 0, not {expectedlen!r}")
        if chunklen is None:
            chunklen = layout.vlen_chunklen(item_size(data, kind), kind) if kind and not _v1 else \
                layout.default_chunklen(rowbytes, int(expectedlen or len(data)) or None)
        elif not isinstance(chunklen, (int, np.integer)) or chunklen < 1:
            raise ValueError(f"chunklen must be a positive int, not {chunklen!r}")
        elif not kind and chunklen * rowbytes >= layout.MAX_CHUNK_BYTES:  # before any write
            raise ValueError(f"chunklen {chunklen} makes chunks of {chunklen * rowbytes} bytes; "
                             f"a chunk holds less than {layout.MAX_CHUNK_BYTES} bytes (chunklen "
                             f"< {layout.MAX_CHUNK_BYTES // rowbytes} for rows of {rowbytes} "
                             "bytes)")
        dflt_arr = self._dflt(dflt, data.dtype)
        if objects and _v1:
            chunklen = 1  # legacy bcolz: one object per chunk file
        storage = Storage(dtype=data.dtype, chunklen=int(chunklen),
                          cparams=CParams(cp.clevel, cp.shuffle, cp.cname, cp.quantize),
                          expectedlen=int(expectedlen or len(data)), dflt=dflt_arr,
                          blocksize=cp.blocksize,
                          bytedelta="off" if kind else cp.bytedelta, vlen=kind)
        if self._rootdir is None:
            store = MemoryStore(storage, rowshape)
            self._attrs: _attrs.attrs | None = _attrs.attrs(None)
        elif self._remote is not None:
            store = self._create_remote(storage, rowshape, mode, _v1)
        else:
            if os.path.exists(self._rootdir) and mode == "a":
                raise FileExistsError(
                    f"{self._rootdir} exists; open it with carray(rootdir=...) or use "
                    "mode='w' to replace it")
            # _v1: a new column of a legacy (v1) ctable is itself v1.  The write
            # lock comes first: a dataset another writer holds is never replaced.
            if _v1:
                store = writer.create(
                    self._rootdir, lambda: LegacyStore.create(self._rootdir, storage, rowshape),
                    replace=(mode == "w"), timeout=self._lock_timeout)
            else:
                # Nothing fsynced until the first commit (the flush below, or the
                # caller's: _publish), which makes it all durable at once.
                unsynced: list = []
                store = writer.create(
                    self._rootdir, lambda: DirectoryStore.create(self._rootdir, storage, rowshape,
                                                                 unsynced=unsynced),
                    replace=(mode == "w"), timeout=self._lock_timeout, unsynced=unsynced)
            self._attrs = _attrs.attrs(self._rootdir, mode)
        self._engine = engine_for(store, nthreads=defaults.nthreads)
        if kind:  # as stored (no byte-delta for variable-length items), so as reopened
            cp = _cparams(clevel=cp.clevel, shuffle=cp.shuffle, cname=cp.cname,
                          quantize=cp.quantize, blocksize=cp.blocksize, bytedelta="off")
        self._cp: _cparams | None = cp
        try:
            if len(data):
                # The flush follows: on disk, the last short chunk is encoded with
                # the full ones (append reads this).
                self._first_rows = self._rootdir is not None and not kind and not _v1
                try:
                    self.append(data)
                finally:
                    self._first_rows = False
            # On object storage a caller that fills the dataset next (fromiter, copy)
            # publishes it with its own flush: readers never see it empty meanwhile.
            if self._rootdir is not None and (_publish or len(data)):
                self.flush()
        except BaseException:
            if self._remote is not None and store.unpublished:
                self._discard_remote()  # nothing was published: leave nothing behind
            raise

    def _exists(self) -> bool:
        """Whether a carray is stored at this carray's rootdir (one small read)."""
        if self._remote is not None:
            from bcolzx._storage import remote

            return self._remote.exists(remote.STORAGE)
        return self._rootdir is not None and \
            os.path.isfile(layout.meta_path(self._rootdir, layout.STORAGE_FILE))

    def _create_remote(self, storage: Storage, rowshape: tuple, mode: str, v1: bool):
        """The store of a new dataset on object storage, published by its first flush."""
        from bcolzx._format.seal import Seal
        from bcolzx._storage import remote

        objects = self._remote
        assert objects is not None
        if v1:
            raise ValueError("legacy bcolz (v1) datasets are not written to object storage")
        kind, _ = remote.probe_published(objects)
        if kind is not None and mode == "a":
            raise FileExistsError(f"{self._rootdir} holds a {kind}; open it with "
                                  "bcolzx.open() or use mode='w' to replace it")
        if mode == "w":  # objects left by a replaced or failed write go first
            objects.remove_all()
        store = remote.ObjectStore.create(objects, storage, rowshape)
        self._attrs = _attrs.attrs(None, mode, _new=True, _seal=Seal(storage.sealed,
                                                                      storage.uid),
                                   _io=remote.AttrsIO(objects, None, store))
        return store

    def _discard_remote(self) -> None:
        """Remove what a failed creation uploaded (best effort: the store may be down)."""
        try:
            if self._remote is not None:
                self._remote.remove_all()
        except Exception:  # noqa: BLE001 - unpublished objects are invisible to readers anyway
            pass

    def _open(self, rootdir: str, mode: str, fetched: dict | None = None) -> None:
        if self._remote is not None:
            from bcolzx._storage import remote

            store = remote.open_store(self._remote, readonly=(mode == "r"), fetched=fetched)
            io = remote.AttrsIO(self._remote, store._fetched.get(remote.ATTRS),  # type: ignore[attr-defined]
                                store if isinstance(store, remote.ObjectStore) else None)
        else:
            store = open_store(rootdir, readonly=(mode == "r"))  # meta/storage read once
            if mode != "r":  # taken at the first change (_storage/writer.py)
                store.lock = WriterLock(rootdir, self._lock_timeout)
            io = None
        self._engine = engine_for(store, nthreads=defaults.nthreads)
        self._cp = None  # the stored cparams, made on first use (most readers never ask)
        if io is not None:  # object storage: __attrs__ came with the batch that opened it
            self._attrs = _attrs.attrs(None, mode, _seal=seal_of(store), _io=io)
        elif mode == "r":  # read on first use (with the seal): most readers never look
            self._attrs = None
        else:  # a missing legacy __attrs__ is written at opening, as legacy does
            self._attrs = _attrs.attrs(rootdir, mode, _seal=seal_of(store))

    # -- properties ----------------------------------------------------------------

    @property
    def _objects(self) -> bool:
        """Whether this carray holds Python objects (object dtype, pickled)."""
        return self._engine.store.storage.vlen == "pickle"

    @property
    def _texts(self) -> bool:
        """Whether this carray holds strings or bytes (StringDType, bytes), never pickled."""
        return self._engine.store.storage.vlen in ("utf8", "bytes")

    @property
    def engine(self):
        """The low-level handle: this carray's :class:`bcolzx._storage.ChunkedArray`.

        As h5py's ``Dataset.id``: the one object through which bcolzx's other
        modules (queries, interop, verify, compact) reach the rows and chunks
        of a carray.  Its documented methods (docs/architecture.md) are the
        interface; its private attributes are not.
        """
        return self._engine

    @property
    def attrs(self) -> _attrs.attrs:
        """User attributes (persisted in ``__attrs__`` on disk)."""
        if self._attrs is None:
            self._attrs = _attrs.attrs(self._rootdir, "r", _seal=seal_of(self._engine.store))
        return self._attrs

    @property
    def chunklen(self) -> int:
        """Rows per chunk."""
        return self._engine.chunklen

    @property
    def cparams(self) -> _cparams:
        """The compression parameters (:class:`~bcolzx.cparams`)."""
        return self._cparams

    @property
    def _cparams(self) -> _cparams:
        cp = self._cp
        if cp is None:  # opened: as meta/storage records them
            st = self._engine.store.storage
            cp = self._cp = _cparams(clevel=st.cparams.clevel, shuffle=st.cparams.shuffle,
                                     cname=st.cparams.cname, quantize=st.cparams.quantize,
                                     blocksize=st.blocksize, bytedelta=st.bytedelta)
        return cp

    @property
    def dflt(self) -> Any:
        """The value of the rows :meth:`resize` adds, as a 0-d array of the dtype."""
        return self._engine.store.storage.dflt

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the items."""
        return self._engine.dtype

    @property
    def itemsize(self) -> int:
        """Bytes of one item of the dtype."""
        return self._engine.dtype.itemsize

    @property
    def atomsize(self) -> int:
        """Bytes of one row (item size times the trailing dimensions)."""
        return self.itemsize * math.prod(self._engine.rowshape)

    @property
    def len(self) -> int:
        """Number of rows (as ``len(c)``)."""
        return len(self._engine)

    def __len__(self) -> int:
        return len(self._engine)

    @property
    def shape(self) -> tuple:
        """Rows, then the trailing dimensions of a row."""
        return (len(self._engine), *self._engine.rowshape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return 1 + len(self._engine.rowshape)

    @property
    def size(self) -> int:
        """Number of items, as a Python int."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes."""
        return self._engine.nbytes

    @property
    def cbytes(self) -> int:
        """Compressed bytes: the stored chunks, plus the leftover rows not
        stored yet as they will be once compressed (the same before and after
        :meth:`flush`)."""
        eng = self._engine
        return eng.cbytes + eng.leftover_cbytes()

    @property
    def nchunks(self) -> int:
        """Full chunks (the leftover rows are not counted)."""
        return self._engine.nfull

    @property
    def nleftover(self) -> int:
        """Rows in the partial last chunk (the *leftover*)."""
        return self._engine.nleft

    @property
    def leftover_array(self) -> np.ndarray:
        """The leftover rows, as a NumPy array (a copy: the buffer behind it is
        reused, by this array or another, once a later append fills it)."""
        return self._out(self._engine.leftover.copy())

    @property
    def leftover_bytes(self) -> int:
        """Bytes of the leftover rows (uncompressed)."""
        return self._engine.nleft * self._engine.rowbytes

    @property
    def leftover_elements(self) -> int:
        """Number of leftover rows (as :attr:`nleftover`)."""
        return self._engine.nleft

    @property
    def leftover_ptr(self) -> int:
        """Address of the first leftover row in memory (legacy bcolz's raw pointer).

        Valid only until the next change of this carray (an append may hand
        the buffer on and start another); read it with ``ctypes`` at once,
        never keep it.  :attr:`leftover_array` is the safe way.
        """
        return self._engine.leftover.ctypes.data

    @property
    def partitions(self) -> list[tuple[int, int]]:
        """``(start, stop)`` rows of each chunk, the leftover included."""
        cl, n = self.chunklen, len(self)
        return [(s, min(s + cl, n)) for s in range(0, n, cl)]

    @property
    def chunks(self) -> Chunks:
        """The full chunks, as a sequence of decompressed NumPy arrays."""
        return Chunks(self)

    @property
    def mode(self) -> str:
        """The mode: ``'r'``, ``'a'`` or ``'w'``."""
        return self._mode

    @property
    def rootdir(self) -> str | None:
        """The directory of a persistent carray; None in memory."""
        return self._rootdir

    @property
    def safe(self) -> bool:
        """The `safe` argument (appended data are checked whatever its value)."""
        return self._safe

    @property
    def expectedlen(self) -> int:
        """The expected length given at creation (it chose the chunk length)."""
        return self._engine.store.storage.expectedlen

    # -- writing -------------------------------------------------------------------

    def _sync_threads(self) -> None:
        """Follow ``set_nthreads``/``defaults.nthreads`` changed after opening."""
        nthreads = defaults.nthreads
        if nthreads != self._engine.nthreads:
            self._engine.set_nthreads(nthreads)

    def _check_writable(self) -> None:
        if self._mode == "r":
            raise ReadOnlyError(f"{self._rootdir} is opened in mode 'r'")

    def _check_rewritable(self, what: str) -> None:
        """Refuse `what` (a rewrite, a truncation) on a store that takes appends only."""
        if self._engine.store.append_only:
            from bcolzx._storage.remote import append_only

            raise append_only(what, self._rootdir)

    def append(self, array) -> None:
        """Append rows at the end.

        Parameters
        ----------
        array : array_like
            One row or several (shape ``(n, *shape[1:])``).  For object
            dtype: a list, tuple, array or carray appends one row per
            element, anything else one row (append ``[x]`` to store a list
            ``x`` as one row).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        TypeError, ValueError
            If the data cannot be converted to the dtype or rows.
        PickleNotAllowedError
            For object dtype without ``allow_pickle``.
        """
        self._check_writable()
        self._sync_threads()
        if isinstance(array, carray):
            for block in iterblocks(array):
                self._engine.append(self._rows(block))
            return
        if self._first_rows:  # the constructor's (or its table's), a commit follows
            self._engine.append(self._rows(array), last=True)
            return
        self._engine.append(self._rows(array))

    def _append_first(self, array) -> None:
        """Append the rows of a new, empty array whose commit follows at once (a new
        ctable's column): the last short chunk is encoded with the full ones, in the
        same parallel pass, as the constructor does on disk."""
        self._first_rows = not (self._objects or self._texts) and self._engine.store.native
        try:
            self.append(array)
        finally:
            self._first_rows = False

    def trim(self, nitems: int) -> None:
        """Remove the last `nitems` rows (a negative `nitems` enlarges by
        ``-nitems`` rows of ``dflt``, as legacy bcolz).

        Raises
        ------
        ValueError
            If `nitems` is larger than the length.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        nitems = int(nitems)
        if nitems < 0:
            self.resize(len(self) - nitems)
            return
        if nitems > len(self):
            raise ValueError(f"cannot trim {nitems} rows from {len(self)} (at most {len(self)})")
        if nitems:
            self._check_rewritable("trim")
        self._engine.resize(len(self) - nitems)  # shrinking pickles nothing

    def resize(self, nitems: int) -> None:
        """Grow (with ``dflt``) or shrink to `nitems` rows.

        Raises
        ------
        ValueError
            If `nitems` is negative.
        ReadOnlyError
            In mode 'r'.
        PickleNotAllowedError
            When enlarging an object carray without ``allow_pickle``.
        """
        self._check_writable()
        nitems = int(nitems)
        if nitems < 0:
            raise ValueError(f"nitems must be >= 0, not {nitems}")
        if nitems < len(self):
            self._check_rewritable("shorten")
        self._engine.resize(nitems, self._fill_value(nitems > len(self)))

    def delete(self, indices) -> int:
        """Delete the rows at `indices`, durably, as one commit.

        Only the chunks from the first deleted row on are rewritten (see
        :meth:`bcolzx._storage.ChunkedArray.delete`): a crash at any instant
        leaves the old rows or the new ones.

        Parameters
        ----------
        indices : int, array of ints or boolean mask
            The rows (negative from the end; repeats count once).

        Returns
        -------
        int
            Rows deleted.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        AppendOnlyError
            (a ReadOnlyError) On object storage, whose objects are never
            rewritten.
        IndexError
            For an index out of range.
        ValueError
            For a legacy bcolz (v1) dataset, which cannot delete atomically.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> c = bcolzx.carray(np.arange(8))
        >>> c.delete([0, -1]), c[:]
        (2, array([1, 2, 3, 4, 5, 6]))
        """
        from bcolzx._analytics.delete import positions_of

        self._check_writable()
        self._check_rewritable("delete rows of")
        pos = positions_of(len(self), indices)
        self._engine.delete(pos)
        return len(pos)

    def flush(self) -> None:
        """Make appended and changed data durable (on disk; no-op in memory).

        Raises
        ------
        OSError
            If the file system refuses.
        """
        if self._mode != "r":
            self._engine.flush(journal=True)

    def compact(self) -> int:
        """Flush, then reclaim the space rewrites left in the files (see :func:`bcolzx.compact`).

        Returns
        -------
        int
            Bytes reclaimed (0 in memory).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        UnsupportedFormatError
            For a legacy bcolz (v1) directory, which has no dead space.
        """
        from bcolzx.compact import compact_carray

        return compact_carray(self)

    def purge(self) -> None:
        """Delete the data on disk (a persistent carray is unusable afterwards).

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        LockedError
            If another writer holds the dataset (nothing is deleted).
        """
        self._check_writable()
        if self._remote is not None:
            try:
                self._remote.remove_all()
            finally:
                self._engine.close(flush=False)
            return
        if self._rootdir is not None:
            lock = self._engine.store.lock
            if lock is not None:
                lock.acquire()  # never delete a dataset another writer holds
            try:
                shutil.rmtree(self._rootdir)
            finally:
                self._engine.close(flush=False)
                if lock is not None:
                    lock.release()

    def close(self) -> None:
        """Flush, then give up the dataset's write lock (no-op in memory and in mode 'r').

        Unlike a file, a closed carray stays usable: reads go on, and a later
        change takes the lock again, re-reading the dataset first (another
        writer may have changed it meanwhile).  The end of a ``with`` block
        closes; so does garbage collection.

        Raises
        ------
        OSError
            If the flush fails (the lock is given up all the same).
        """
        if self._rootdir is not None and self._mode != "r":  # mode 'r': no lock, no change
            writer.release_engine(self._engine)

    def free_cachemem(self) -> None:
        """Release cached decompressed and compressed data."""
        self._engine.free_cache()

    def reshape(self, newshape) -> "carray":
        """A new carray with the same data in a new shape (chunked along the first axis).

        Raises
        ------
        ValueError
            If the total size changes.
        """
        newshape = (newshape,) if isinstance(newshape, (int, np.integer)) else tuple(newshape)
        if (self._objects or self._texts) and newshape not in ((len(self),), (-1,)):
            raise ValueError(f"object, string and bytes carrays are one-dimensional: cannot "
                             f"reshape {self.shape} into {newshape}")
        if -1 in newshape:
            known = math.prod(x for x in newshape if x != -1)
            newshape = tuple(self.size // known if x == -1 else x for x in newshape)
        if math.prod(newshape) != self.size:
            raise ValueError(f"cannot reshape {self.shape} into {newshape}")
        if self._objects or self._texts:
            return self.copy(chunklen=None, expectedlen=None)
        return carray(self[:].reshape(newshape), cparams=self._cparams, dflt=self.dflt)

    def copy(self, **kwargs) -> "carray":
        """A copy, in memory or (with ``rootdir=``) on disk; kwargs as the constructor's.

        As in legacy bcolz, the copy is compressed with the current defaults
        (``bcolzx.defaults.cparams``) unless `cparams` is given, and its chunk
        length follows from `expectedlen` (default: this length) unless
        `chunklen` is given.  Unlike legacy bcolz, ``dflt`` is kept.  An object
        carray's copy takes its ``allow_pickle`` (unless given) and its pickles
        as they are: nothing is unpickled.

        Raises
        ------
        ValueError, TypeError, FileExistsError
            As the constructor.
        PickleNotAllowedError
            For object dtype without ``allow_pickle``.
        """
        kwargs.setdefault("dflt", self.dflt)
        kwargs.setdefault("expectedlen", len(self))
        if self._objects:
            kwargs.setdefault("allow_pickle", self._allow_pickle)
        out = carray(np.empty((0, *self.shape[1:]), self.dtype), _publish=False, **kwargs)
        if self._objects:  # the pickles themselves (any protocol reads back)
            blen = max(out.chunklen, 1024)
            for lo in range(0, len(self), blen):
                out._engine.append(self._engine.read(lo, min(len(self), lo + blen)))
            if out.rootdir is not None:
                out.flush()
            return out
        for block in iterblocks(self):
            out._engine.append(out._rows(block))
        if out.rootdir is not None:
            out.flush()
        return out

    def view(self) -> "carray":
        """A new carray sharing this one's data, with a length of its own.

        As in legacy bcolz, what is appended to or changed through the view
        stays in the view: it keeps its changes in memory (copy on write)
        and shares this carray's chunks as they were stored when it was
        made.  A view of a persistent carray is an in-memory carray.

        Returns
        -------
        carray
        """
        new = object.__new__(carray)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_cursor", None)  # a view starts no iteration of its own
        new.__dict__.pop("_is_iterator", None)
        new._engine = self._engine.view()
        new._rootdir, new._mode = None, "a"
        new._attrs = _attrs.attrs(None)
        for name, value in self.attrs.getall().items():
            new._attrs[name] = value
        return new

    def _alias(self) -> "carray":
        """Another carray object over this one's data (iterators are such)."""
        new = object.__new__(carray)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_cursor", None)
        new.__dict__.pop("_is_iterator", None)
        return new

    # -- reductions (the others: bcolzx._analytics.methods.Reductions) -------------

    def sum(self, dtype=None, axis=None, *, where=None, user_dict=None, vm=None):
        """Sum of the items (``numpy.sum``: integers widen to the platform
        integer), as a NumPy scalar (an array for an `axis` that leaves some).

        Parameters
        ----------
        dtype : numpy.dtype, optional
            The accumulator and result dtype (legacy bcolz's first argument).
        axis : None, int or tuple of ints
            As NumPy.
        where : str or boolean array/carray, optional
            Only the rows where this holds (a condition's names are looked
            up in `user_dict`, then the caller's variables).

        Raises
        ------
        TypeError
            If the dtype cannot be summed.

        Examples
        --------
        >>> import numpy as np, bcolzx
        >>> c = bcolzx.carray(np.arange(10, dtype=np.int8))
        >>> c.sum(), c.sum(where="c % 2 == 1")
        (np.int64(45), np.int64(25))
        """
        if self._objects:  # Python's +, as NumPy sums object arrays
            if axis is not None or where is not None:
                raise TypeError("sum of an object carray takes neither axis nor where")
            total = None
            for block in iterblocks(self):
                if len(block):
                    part = np.sum(block, dtype=dtype)
                    total = part if total is None else total + part
            return 0 if total is None else total
        return self._reduce("sum", axis=axis, dtype=dtype, where=where, user_dict=user_dict,
                            vm=vm)

    def _check_reducible(self) -> None:
        """Reductions compute on fixed-size values: not on pickles."""
        if self._objects:
            raise TypeError("reductions other than sum() need values of a fixed-size dtype, "
                            "not Python objects (reduce c[:] with NumPy)")
        self._sync_threads()

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    # -- protocol ------------------------------------------------------------------

    def __reduce__(self):
        # On disk: pending writes are flushed and the copy reopens the files
        # read-only (a worker process never becomes a second writer).
        if self._rootdir is not None:
            self.flush()
            where = self._remote or self._rootdir  # object storage: its filesystem travels
            if self._allow_pickle is not None:  # the switch travels with the copy
                return (_reopen, (where, "r", self._allow_pickle))
            return (_reopen, (where, "r"))
        if self._objects:
            # The values travel unpickled by the receiver's own pickle.loads: its consent.
            return (_rebuild, (self[:], self._cparams.to_dict(), self.chunklen, self.dflt[()],
                               self.expectedlen, True))
        return (_rebuild, (self[:], self._cparams.to_dict(), self.chunklen, self.dflt[()],
                           self.expectedlen))

    def __enter__(self) -> "carray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __sizeof__(self) -> int:
        # Legacy bcolz: the compressed size (sys.getsizeof(c) < c.nbytes
        # tells that the data compress).
        return self.cbytes

    def __repr__(self) -> str:
        nb, cb = self.nbytes, self.cbytes
        ratio = nb / cb if cb else (math.nan if not nb else 0)
        lines = [f"carray({self.shape}, {self.dtype})",
                 f"  nbytes := {_human(nb)}; cbytes := {_human(cb)}; ratio: {ratio:.2f}",
                 f"  cparams := {self._cparams!r}",
                 f"  chunklen := {self.chunklen}; chunksize: {self.chunklen * self.atomsize}; "
                 f"blocksize: {self._engine.store.storage.blocksize}"]
        if self._rootdir is not None:
            lines.append(f"  rootdir := {self._rootdir!r}")
            lines.append(f"  mode    := {self._mode!r}")
        return "\n".join(lines) + "\n" + str(self)

    def __str__(self) -> str:
        n = len(self)
        if self._objects and not self._pickle_ok():  # printing must not raise nor unpickle
            return f"[{n} pickled objects, not read: allow_pickle is off]"
        if n > 1000:
            return _summary(self[:3], self[n - 3:])
        return np.array2string(self[:])


def _summary(head: np.ndarray, tail: np.ndarray) -> str:
    h = np.array2string(head)[:-1]
    t = np.array2string(tail)[1:]
    return f"{h} ... {t}"


def _human(nbytes: int) -> str:
    n = float(nbytes)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{nbytes}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def _reopen(rootdir: str, mode: str, allow_pickle: bool | None = None) -> carray:
    return carray(rootdir=rootdir, mode=mode, allow_pickle=allow_pickle)


def _rebuild(data, cparams, chunklen, dflt, expectedlen, allow_pickle=None) -> carray:
    return carray(data, cparams=cparams, chunklen=chunklen, dflt=dflt, expectedlen=expectedlen,
                  allow_pickle=allow_pickle)

